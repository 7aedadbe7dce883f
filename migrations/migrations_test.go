package migrations

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

func TestUpCreatesCatalog(t *testing.T) {
	db := openDB(t)
	if err := Up(db); err != nil {
		t.Fatal(err)
	}
	if err := Up(db); err != nil {
		t.Fatalf("second Up: %v", err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'ducktail_catalog'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Fatalf("catalog tables = %d, want 6", n)
	}
}

func TestFailedMigrationNamesVersionAndBlocksStart(t *testing.T) {
	db := openDB(t)
	bad := fstest.MapFS{
		"0001_ok.up.sql":    {Data: []byte("CREATE TABLE a (x BIGINT);")},
		"0001_ok.down.sql":  {Data: []byte("DROP TABLE a;")},
		"0002_bad.up.sql":   {Data: []byte("CREATE TABLE b (x BIGINT); SELECT * FROM no_such_table;")},
		"0002_bad.down.sql": {Data: []byte("DROP TABLE b;")},
	}
	err := up(db, bad)
	if err == nil || !strings.Contains(err.Error(), "migration 2 failed") {
		t.Fatalf("up(bad) = %v, want an error naming migration 2", err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM duckdb_tables() WHERE table_name = 'b'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatal("failed migration was not rolled back: table b exists")
	}
	err = up(db, bad)
	if !errors.Is(err, ErrDirty) || !strings.Contains(err.Error(), "version 2") || !strings.Contains(err.Error(), "no_such_table") {
		t.Fatalf("up on dirty catalog = %v, want ErrDirty at version 2 with the recorded error", err)
	}
}

// TestInterruptedMigrationIsRunAgain leaves a version dirty as a process killed during
// its migration would (marked dirty, migration never committed), then migrates again.
func TestInterruptedMigrationIsRunAgain(t *testing.T) {
	db := openDB(t)
	drv, err := WithInstance(db, &Config{SchemaName: SchemaName})
	if err != nil {
		t.Fatal(err)
	}
	if err := drv.SetVersion(1, true); err != nil {
		t.Fatal(err)
	}
	if err := Up(db); err != nil {
		t.Fatalf("Up after an interrupted first migration: %v", err)
	}
	ups, _ := fs.Glob(files, "*.up.sql")
	version, dirty, err := drv.Version()
	if err != nil || dirty || version != len(ups) {
		t.Fatalf("version %d dirty %v err %v, want %d clean", version, dirty, err, len(ups))
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'ducktail_catalog'`).Scan(&n); err != nil || n != 6 {
		t.Fatalf("catalog tables = %d (%v), want 6", n, err)
	}
}
