package store

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func int64Batch(tb testing.TB, from, n int) arrow.RecordBatch {
	tb.Helper()
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range n {
		b.Append(int64(from + i))
	}
	col := b.NewArray()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, int64(n))
}

// TestCoalesceSmallJoinsRunsOfSmallBatches checks that small batches are joined into runs
// of at most vectorRows rows in order, that a batch of vectorRows rows or more is passed
// on as it is, and that batches array.Concatenate cannot join (unions) are passed on.
func TestCoalesceSmallJoinsRunsOfSmallBatches(t *testing.T) {
	var recs []arrow.RecordBatch
	next := 0
	for _, n := range []int{1, 1, 1000, 1047, 1, vectorRows, 3, 2} {
		recs = append(recs, int64Batch(t, next, n))
		next += n
	}
	big := recs[5]
	out := coalesceSmall(recs)
	var sizes []int64
	var values []int64
	for _, rec := range out {
		sizes = append(sizes, rec.NumRows())
		values = append(values, rec.Column(0).(*array.Int64).Int64Values()...)
	}
	if want := []int64{1002, 1048, vectorRows, 5}; !slices.Equal(sizes, want) {
		t.Fatalf("batch sizes = %v, want %v", sizes, want)
	}
	if out[2] != big {
		t.Fatal("a batch of vectorRows rows was copied")
	}
	for i, v := range values {
		if v != int64(i) {
			t.Fatalf("row %d = %d: rows out of order", i, v)
		}
	}

	union := arrow.SparseUnionOf([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, []arrow.UnionTypeCode{0})
	schema := arrow.NewSchema([]arrow.Field{{Name: "u", Type: union, Nullable: true}}, nil)
	var unions []arrow.RecordBatch
	for range 2 {
		rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(`[{"u": [0, 1]}]`))
		if err != nil {
			t.Fatal(err)
		}
		unions = append(unions, rec)
	}
	if out := coalesceSmall(unions); len(out) != 2 || out[0] != unions[0] || out[1] != unions[1] {
		t.Fatalf("union batches = %v, want them passed on", out)
	}
}
