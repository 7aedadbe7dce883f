package store_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/store"
)

// TestLargeAppendKeepsOrder commits one batch of several row groups, which the writer
// stages as several Arrow batches that DuckDB reads on several threads, and reads it back
// in insertion order, every row once.
func TestLargeAppendKeepsOrder(t *testing.T) {
	db, _ := openDB(t, "")
	ctx := context.Background()
	if _, err := db.CreateTable(ctx, "weather", weatherColumns); err != nil {
		t.Fatal(err)
	}
	const n = 3*store.DefaultScanChunkRows + 1000
	appendRows(t, db, "weather", 10, -10)
	appendRows(t, db, "weather", n, 0)
	info, err := db.Table("weather")
	if err != nil {
		t.Fatal(err)
	}
	next := -10.0
	err = db.Read(ctx, func(tx *store.ReadTx) error {
		return tx.ScanTable(ctx, info, store.DefaultScanChunkRows, func(rr array.RecordReader) error {
			for rr.Next() {
				col := rr.RecordBatch().Column(1).(*array.Float64)
				for i := 0; i < col.Len(); i++ {
					if col.Value(i) != next {
						t.Fatalf("row %d holds temp_max %v, want %v", int(next)+10, col.Value(i), next)
					}
					next++
				}
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if next != n {
		t.Fatalf("read %d rows, want %d", int(next)+10, n+10)
	}
}
