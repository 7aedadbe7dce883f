// Package migrations holds the ducktail catalog schema as numbered golang-migrate SQL files,
// embedded in the binary, and the DuckDB database.Driver that applies them (upstream
// golang-migrate has none). See docs/design.md, "Storage model".
//
// This package does not import the DuckDB driver: it opens DuckDB through database/sql by
// the driver name that github.com/duckdb/duckdb-go/v2 registers, and the store package,
// the only importer of DuckDB, passes it an open *sql.DB.
package migrations

import (
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

// files holds the numbered catalog migrations, NNNN_name.up.sql and NNNN_name.down.sql.
//
//go:embed *.sql
var files embed.FS

// SchemaName is the DuckDB schema holding the migrations table of the ducktail catalog. It
// is outside the catalog schema so that a down migration of the catalog cannot drop it.
const SchemaName = "ducktail_migrations"

// ErrDirty is returned by Up when a previous migration failed: the server must not
// start. Errors wrapping it name the version and the recorded error. A migration that
// was interrupted (the process died) is not an error: it did not apply, and Up runs it
// again.
var ErrDirty = errors.New("catalog schema is dirty")

// Up applies every catalog migration newer than the recorded version to db, each in its
// own transaction. It returns nil when the catalog is already current. A failing
// migration returns an error naming its version and leaves that version marked dirty;
// Up on a dirty catalog returns an error wrapping ErrDirty without running anything.
func Up(db *sql.DB) error {
	return up(db, files)
}

func up(db *sql.DB, fsys fs.FS) error {
	src, err := iofs.New(fsys, ".")
	if err != nil {
		return fmt.Errorf("read catalog migrations: %w", err)
	}
	drv, err := WithInstance(db, &Config{SchemaName: SchemaName})
	if err != nil {
		return fmt.Errorf("open catalog migrations table: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, DriverName, drv)
	if err != nil {
		return fmt.Errorf("prepare catalog migrations: %w", err)
	}
	defer m.Close()

	version, dirty, err := drv.Version()
	if err != nil {
		return fmt.Errorf("read catalog version: %w", err)
	}
	if dirty {
		interrupted, failure, err := drv.Interrupted()
		if err != nil {
			return fmt.Errorf("read catalog version: %w", err)
		}
		if !interrupted {
			return fmt.Errorf("%w at version %d: migration %d failed (%s); restore the data directory from a backup (or fix the catalog by hand and clear the dirty flag in %s.%s)",
				ErrDirty, version, version, failure, SchemaName, DefaultMigrationsTable)
		}
		// The process died during migration version: it was not applied (Driver), so
		// go back to the version before it and migrate again.
		prev := database.NilVersion
		if p, err := src.Prev(uint(version)); err == nil {
			prev = int(p)
		}
		if err := m.Force(prev); err != nil {
			return fmt.Errorf("recover from interrupted migration %d: %w", version, err)
		}
	}
	err = m.Up()
	if err == nil || errors.Is(err, migrate.ErrNoChange) {
		return nil
	}
	failed, _, verr := drv.Version()
	if verr != nil {
		return fmt.Errorf("catalog migration failed: %w", errors.Join(err, verr))
	}
	return fmt.Errorf("catalog migration %d failed, catalog left dirty at version %d: %w", failed, failed, err)
}
