package migrations

import (
	"database/sql"
	"path/filepath"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
	dt "github.com/golang-migrate/migrate/v4/database/testing"
)

// TestDriverConformance runs golang-migrate's own driver test suite against a DuckDB file.
func TestDriverConformance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conformance.duckdb")
	d, err := (&Driver{}).Open(DriverName + "://" + path + "?x-schema-name=meta")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dt.Test(t, d, []byte("CREATE TABLE t (a BIGINT); INSERT INTO t VALUES (1); CREATE VIEW v AS SELECT * FROM t"))
}

func TestDriverWithInstanceLeavesDBOpen(t *testing.T) {
	db := openDB(t)
	d, err := WithInstance(db, &Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(); err != nil {
		t.Fatalf("db closed by driver Close: %v", err)
	}
	if _, err := WithInstance(db, nil); err != ErrNilConfig {
		t.Fatalf("WithInstance(nil config) = %v, want ErrNilConfig", err)
	}
}

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open(DriverName, filepath.Join(t.TempDir(), "catalog.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
