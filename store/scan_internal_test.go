package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestScanBoundSurvivesARolledBackAppend checks what ScanShaped's count(*) bound rests on
// (scan.go): an append to a physical table that rolls back, here past a whole row group,
// leaves no rowid behind, so after it, more commits, a column added and a checkpoint the
// rowids are still 0 to count(*)-1, and a scan in chunks of 7 rows reads every row once,
// in order.
func TestScanBoundSurvivesARolledBackAppend(t *testing.T) {
	ctx := context.Background()
	db := NewDB(filepath.Join(t.TempDir(), "ducktail.duckdb"))
	if err := db.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CreateTable(ctx, "t", []ColumnSpec{{Name: "a", Type: "BIGINT"}}); err != nil {
		t.Fatal(err)
	}
	next := int64(0)
	appendTen := func() {
		t.Helper()
		info, err := db.Table("t")
		if err != nil {
			t.Fatal(err)
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, info.Schema.Arrow())
		defer b.Release()
		for range 10 {
			b.Field(0).(*array.Int64Builder).Append(next)
			for j := 1; j < b.Schema().NumFields(); j++ {
				b.Field(j).AppendNull()
			}
			next++
		}
		if _, err := db.Append(ctx, Batch{Table: "t", SchemaVersion: info.Schema.Version, Record: b.NewRecordBatch()}); err != nil {
			t.Fatal(err)
		}
	}
	db.mu.RLock()
	physical := "ducktail_data." + QuoteIdent(db.tables["t"].physical)
	db.mu.RUnlock()

	appendTen()
	conn, err := db.sqlDB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{"BEGIN",
		"INSERT INTO " + physical + " SELECT -1, range FROM range(130000)",
		"ROLLBACK"} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	conn.Close()
	appendTen()
	if _, err := db.AddColumn(ctx, "t", ColumnSpec{Name: "b", Type: "VARCHAR"}); err != nil {
		t.Fatal(err)
	}
	appendTen()
	if _, err := db.sqlDB.ExecContext(ctx, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	appendTen()

	var got []int64
	err = db.Read(ctx, func(tx *ReadTx) error {
		var maxRowid, count int64
		if err := tx.conn.QueryRowContext(ctx, "SELECT max(rowid), count(*) FROM "+physical).Scan(&maxRowid, &count); err != nil {
			return err
		}
		if maxRowid != count-1 || count != next {
			t.Errorf("max(rowid) %d, count(*) %d, want %d and %d", maxRowid, count, next-1, next)
		}
		info, err := tx.Table(ctx, "t")
		if err != nil {
			return err
		}
		return tx.ScanTable(ctx, info, 7, func(rr array.RecordReader) error {
			for rr.Next() {
				col := rr.RecordBatch().Column(0).(*array.Int64)
				got = append(got, col.Int64Values()...)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(got)) != next {
		t.Fatalf("scanned %d rows, want %d", len(got), next)
	}
	for i, v := range got {
		if v != int64(i) {
			t.Fatalf("row %d holds %d: %v", i, v, got)
		}
	}
}
