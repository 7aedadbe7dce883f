package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/store"
)

// BenchmarkShapeRecords measures one commit of 100 rows through one shape in the shape
// engine (register the Arrow view, evaluate the predicate, keep the rows, drop the view):
// the cost a commit adds per distinct shape in use.
func BenchmarkShapeRecords(b *testing.B) {
	db := store.NewDB(filepath.Join(b.TempDir(), "ducktail.duckdb"))
	if err := db.Open(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	schema := &store.Schema{Columns: []store.Column{{ID: 1, Name: "n", Type: "BIGINT"}, {ID: 2, Name: "s", Type: "VARCHAR"}}}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema.Arrow())
	for i := range 100 {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.StringBuilder).Append("row")
	}
	recs := []arrow.RecordBatch{bld.NewRecordBatch()}
	shape := &store.Shape{Where: "((n >= 50) AND (s <> 'x'))", Refs: schema.Columns, Columns: schema.Columns[:1]}
	b.ResetTimer()
	for range b.N {
		out, err := db.ShapeRecords(context.Background(), schema, recs, shape)
		if err != nil || len(out) != 1 || out[0].NumRows() != 50 {
			b.Fatalf("%v %v", out, err)
		}
		out[0].Release()
	}
}
