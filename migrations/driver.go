package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	nurl "net/url"
	"strings"
	"sync/atomic"

	"github.com/golang-migrate/migrate/v4/database"
)

// DriverName is the URL scheme and database/sql driver name the DuckDB migration driver
// registers and opens ("duckdb://path/to/file.duckdb"). The database/sql driver itself is
// registered by github.com/duckdb/duckdb-go/v2, which the importing program must link.
const DriverName = "duckdb"

// DefaultMigrationsTable is the table, inside Config.SchemaName, that records the applied
// version and the dirty flag, as every golang-migrate driver does.
const DefaultMigrationsTable = "schema_migrations"

// DefaultSchemaName is the DuckDB schema that holds the migrations table when
// Config.SchemaName is empty.
const DefaultSchemaName = "main"

// Errors returned by WithInstance.
var (
	// ErrNilConfig is returned by WithInstance when config is nil.
	ErrNilConfig = errors.New("duckdb migration driver: nil config")
)

func init() {
	database.Register(DriverName, &Driver{})
}

// Config configures the DuckDB migration driver.
type Config struct {
	// SchemaName is the DuckDB schema of the migrations table; created when missing.
	// Empty means DefaultSchemaName.
	SchemaName string
	// MigrationsTable is the unqualified name of the version table. Empty means
	// DefaultMigrationsTable.
	MigrationsTable string
}

// Driver is a golang-migrate database.Driver for DuckDB, which upstream golang-migrate does
// not ship. It runs each migration in one DuckDB transaction, keeps one (version, dirty,
// error) row in the migrations table, and locks in process only: a DuckDB file is opened
// read-write by one process at a time, so that process is the only possible migrator.
// It passes github.com/golang-migrate/migrate/v4/database/testing.Test.
//
// golang-migrate marks a version dirty, runs its migration, then marks it clean, in three
// steps. This driver also writes the clean version inside the migration's own
// transaction, so a version left dirty by a crash (kill -9 mid-migration) was never
// applied, and a failing migration records its error: Interrupted tells the two apart.
type Driver struct {
	db       *sql.DB
	ownsDB   bool
	config   Config
	isLocked atomic.Bool
	// pending is the version golang-migrate marked dirty before the next Run.
	pending    int
	hasPending bool
}

var _ database.Driver = (*Driver)(nil)

// WithInstance returns a driver that migrates db, an open DuckDB database/sql handle.
// It creates the schema and the migrations table when missing. Close does not close db.
// Errors: ErrNilConfig, or the DuckDB error of the ping or the DDL.
func WithInstance(db *sql.DB, config *Config) (*Driver, error) {
	if config == nil {
		return nil, ErrNilConfig
	}
	d := &Driver{db: db, config: *config}
	if d.config.SchemaName == "" {
		d.config.SchemaName = DefaultSchemaName
	}
	if d.config.MigrationsTable == "" {
		d.config.MigrationsTable = DefaultMigrationsTable
	}
	if err := db.Ping(); err != nil {
		return nil, err
	}
	if err := d.ensureVersionTable(); err != nil {
		return nil, err
	}
	return d, nil
}

// Open implements database.Driver. The URL is "duckdb://<path>" with the optional query
// parameters x-migrations-table and x-schema-name; other query parameters are passed to
// DuckDB as configuration options, as in a duckdb-go DSN.
func (*Driver) Open(url string) (database.Driver, error) {
	u, err := nurl.Parse(url)
	if err != nil {
		return nil, fmt.Errorf("duckdb migration driver: parse url: %w", err)
	}
	q := u.Query()
	config := &Config{SchemaName: q.Get("x-schema-name"), MigrationsTable: q.Get("x-migrations-table")}
	for k := range q {
		if strings.HasPrefix(k, "x-") {
			q.Del(k)
		}
	}
	dsn := strings.TrimPrefix(url, DriverName+"://")
	if i := strings.IndexByte(dsn, '?'); i >= 0 {
		dsn = dsn[:i]
	}
	if enc := q.Encode(); enc != "" {
		dsn += "?" + enc
	}
	db, err := sql.Open(DriverName, dsn)
	if err != nil {
		return nil, err
	}
	d, err := WithInstance(db, config)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	d.ownsDB = true
	return d, nil
}

// Close implements database.Driver; it closes the database only when Open opened it.
func (d *Driver) Close() error {
	if d.ownsDB {
		return d.db.Close()
	}
	return nil
}

// Lock implements database.Driver. It returns database.ErrLocked when already locked.
func (d *Driver) Lock() error {
	if !d.isLocked.CompareAndSwap(false, true) {
		return database.ErrLocked
	}
	return nil
}

// Unlock implements database.Driver. It returns database.ErrNotLocked when not locked.
func (d *Driver) Unlock() error {
	if !d.isLocked.CompareAndSwap(true, false) {
		return database.ErrNotLocked
	}
	return nil
}

// Run implements database.Driver: it executes the whole migration, which may hold several
// statements, in one transaction. A failure rolls back and returns a database.Error that
// carries the query text.
func (d *Driver) Run(migration io.Reader) error {
	body, err := io.ReadAll(migration)
	if err != nil {
		return err
	}
	query := string(body)
	if strings.TrimSpace(query) == "" {
		return nil
	}
	pending, hasPending := d.pending, d.hasPending
	d.hasPending = false
	err = d.inTx(func(tx *sql.Tx) error {
		if _, err := tx.Exec(query); err != nil {
			return database.Error{OrigErr: err, Err: "migration failed", Query: body}
		}
		if hasPending {
			return d.writeVersion(tx, pending, false)
		}
		return nil
	})
	if err != nil && hasPending {
		// Leave the version dirty, with the reason, for the next start to report.
		rec := "UPDATE " + d.table() + " SET error = ?"
		if _, rerr := d.db.Exec(rec, err.Error()); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	return err
}

// Interrupted reports whether the dirty version was left by a migration that never ran
// to its end (the process died) rather than one that failed, which recorded its error.
// Because a migration and its clean version commit together, an interrupted migration
// was not applied and may simply be run again. failure is the recorded error, if any.
func (d *Driver) Interrupted() (interrupted bool, failure string, err error) {
	query := "SELECT dirty, coalesce(error, '') FROM " + d.table() + " LIMIT 1"
	var dirty bool
	err = d.db.QueryRow(query).Scan(&dirty, &failure)
	if errors.Is(err, sql.ErrNoRows) {
		return false, "", nil
	}
	if err != nil {
		return false, "", database.Error{OrigErr: err, Query: []byte(query)}
	}
	return dirty && failure == "", failure, nil
}

// SetVersion implements database.Driver: it replaces the version row in one transaction.
// As the other golang-migrate drivers do, a dirty NilVersion is recorded too.
func (d *Driver) SetVersion(version int, dirty bool) error {
	d.pending, d.hasPending = version, dirty
	return d.inTx(func(tx *sql.Tx) error { return d.writeVersion(tx, version, dirty) })
}

// writeVersion replaces the version row inside tx.
func (d *Driver) writeVersion(tx *sql.Tx, version int, dirty bool) error {
	del := "DELETE FROM " + d.table()
	if _, err := tx.Exec(del); err != nil {
		return database.Error{OrigErr: err, Query: []byte(del)}
	}
	if version >= 0 || (version == database.NilVersion && dirty) {
		ins := "INSERT INTO " + d.table() + " (version, dirty) VALUES (?, ?)"
		if _, err := tx.Exec(ins, int64(version), dirty); err != nil {
			return database.Error{OrigErr: err, Query: []byte(ins)}
		}
	}
	return nil
}

// Version implements database.Driver. It returns database.NilVersion and false when no
// version row exists.
func (d *Driver) Version() (version int, dirty bool, err error) {
	query := "SELECT version, dirty FROM " + d.table() + " LIMIT 1"
	var v int64
	err = d.db.QueryRow(query).Scan(&v, &dirty)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return database.NilVersion, false, nil
	case err != nil:
		return 0, false, database.Error{OrigErr: err, Query: []byte(query)}
	}
	return int(v), dirty, nil
}

// Drop implements database.Driver: it drops every user schema (with its tables, views and
// sequences) and every table, view and sequence of the main schema, including the
// migrations table. DuckDB's internal catalogs are left alone.
func (d *Driver) Drop() error {
	ctx := context.Background()
	type object struct{ kind, schema, name string }
	var objects []object
	query := `
		SELECT 'VIEW', schema_name, view_name FROM duckdb_views() WHERE NOT internal AND database_name = current_database()
		UNION ALL
		SELECT 'TABLE', schema_name, table_name FROM duckdb_tables() WHERE NOT internal AND database_name = current_database()
		UNION ALL
		SELECT 'SEQUENCE', schema_name, sequence_name FROM duckdb_sequences() WHERE NOT temporary AND database_name = current_database()
		UNION ALL
		SELECT 'SCHEMA', schema_name, schema_name FROM duckdb_schemas() WHERE NOT internal AND database_name = current_database() AND schema_name <> 'main'`
	rows, err := d.db.QueryContext(ctx, query)
	if err != nil {
		return database.Error{OrigErr: err, Query: []byte(query)}
	}
	for rows.Next() {
		var o object
		if err := rows.Scan(&o.kind, &o.schema, &o.name); err != nil {
			return errors.Join(err, rows.Close())
		}
		objects = append(objects, o)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	return d.inTx(func(tx *sql.Tx) error {
		for _, o := range objects {
			stmt := "DROP " + o.kind + " IF EXISTS " + quoteIdent(o.schema) + "." + quoteIdent(o.name) + " CASCADE"
			if o.kind == "SCHEMA" {
				stmt = "DROP SCHEMA IF EXISTS " + quoteIdent(o.name) + " CASCADE"
			}
			if _, err := tx.Exec(stmt); err != nil {
				return database.Error{OrigErr: err, Query: []byte(stmt)}
			}
		}
		return nil
	})
}

func (d *Driver) ensureVersionTable() error {
	stmt := "CREATE SCHEMA IF NOT EXISTS " + quoteIdent(d.config.SchemaName) + ";" +
		"CREATE TABLE IF NOT EXISTS " + d.table() + " (version BIGINT NOT NULL, dirty BOOLEAN NOT NULL, error VARCHAR)"
	if _, err := d.db.Exec(stmt); err != nil {
		return database.Error{OrigErr: err, Err: "create migrations table", Query: []byte(stmt)}
	}
	return nil
}

func (d *Driver) table() string {
	return quoteIdent(d.config.SchemaName) + "." + quoteIdent(d.config.MigrationsTable)
}

func (d *Driver) inTx(fn func(*sql.Tx) error) error {
	tx, err := d.db.Begin()
	if err != nil {
		return database.Error{OrigErr: err, Err: "transaction start failed"}
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	if err := tx.Commit(); err != nil {
		return database.Error{OrigErr: err, Err: "transaction commit failed"}
	}
	return nil
}

// quoteIdent quotes a DuckDB identifier, doubling embedded quotes.
func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
