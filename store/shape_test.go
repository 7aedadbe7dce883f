package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"

	"github.com/ducktail/ducktail/store"
)

// TestShapeRecordsFiltersInDuckDB: the shape engine keeps exactly the rows the predicate
// matches, comparisons DuckDB would push into the Arrow scan included, with the shape's
// columns, in Go memory.
func TestShapeRecordsFiltersInDuckDB(t *testing.T) {
	db := store.NewDB(filepath.Join(t.TempDir(), "ducktail.duckdb"))
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := &store.Schema{Columns: []store.Column{{ID: 1, Name: "n", Type: "BIGINT"}, {ID: 2, Name: "s", Type: "VARCHAR"}, {ID: 3, Name: "at", Type: "TIMESTAMPTZ"}}}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema.Arrow())
	for i := range 10 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append([]string{"a", "b"}[i%2])
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(time.Date(2026, 1, 1, i, 0, 0, 0, time.UTC).UnixMicro()))
	}
	rec := b.NewRecordBatch()
	n, s, at := schema.Columns[0], schema.Columns[1], schema.Columns[2]
	for _, c := range []struct {
		shape store.Shape
		rows  int64
		cols  int
	}{
		{store.Shape{Where: "(n > 5)", Refs: []store.Column{n}}, 4, 3},
		{store.Shape{Where: "(s = 'z')", Refs: []store.Column{s}}, 0, 3},
		{store.Shape{Where: "((n > 5) AND (s = 'a'))", Refs: []store.Column{n, s}, Columns: []store.Column{s}}, 2, 1},
		{store.Shape{Where: "(\"at\" >= '2026-01-01 08:00:00+00')", Refs: []store.Column{at}, Columns: []store.Column{at, n}}, 2, 2},
		{store.Shape{Columns: []store.Column{s}}, 10, 1},
		{store.Shape{Where: "(s = 'b')", Refs: []store.Column{s}, Columns: []store.Column{s}}, 5, 1},
	} {
		out, err := db.ShapeRecords(context.Background(), schema, []arrow.RecordBatch{rec}, &c.shape)
		if err != nil {
			t.Fatalf("%+v: %v", c.shape, err)
		}
		var rows int64
		for _, r := range out {
			rows += r.NumRows()
			if int(r.NumCols()) != c.cols || !r.Schema().Equal(c.shape.Project(schema).Arrow()) {
				t.Errorf("%+v: schema %s", c.shape, r.Schema())
			}
		}
		if rows != c.rows {
			t.Errorf("%+v: %d rows, want %d", c.shape, rows, c.rows)
		}
	}
}

// TestShapeRecordsEach: several shapes of one commit are evaluated together; a predicate
// that fails on a value fails its own shape only.
func TestShapeRecordsEach(t *testing.T) {
	db := store.NewDB(filepath.Join(t.TempDir(), "ducktail.duckdb"))
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := &store.Schema{Columns: []store.Column{{ID: 1, Name: "n", Type: "BIGINT"}, {ID: 2, Name: "s", Type: "VARCHAR"}}}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema.Arrow())
	for i := range 10 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append([]string{"a", "b"}[i%2])
	}
	recs := []arrow.RecordBatch{b.NewRecordBatch()}
	n, s := schema.Columns[0], schema.Columns[1]
	shapes := []*store.Shape{
		{Where: "(n > 5)", Refs: []store.Column{n}},
		{Where: "(CAST(s AS INTEGER) > 1)", Refs: []store.Column{s}},
		{Where: "(s = 'b')", Refs: []store.Column{s}, Columns: []store.Column{s}},
		{Columns: []store.Column{s}},
		nil,
	}
	for _, all := range []bool{true, false} {
		use := shapes
		if !all {
			use = []*store.Shape{shapes[0], shapes[2]}
		}
		out, errs := db.ShapeRecordsEach(context.Background(), schema, recs, use)
		for i, shape := range use {
			want := map[*store.Shape]int64{shapes[0]: 4, shapes[2]: 5, shapes[3]: 10, nil: 10}[shape]
			var rows int64
			for _, r := range out[i] {
				rows += r.NumRows()
			}
			if (shape == shapes[1]) != (errs[i] != nil) || (errs[i] == nil && rows != want) {
				t.Errorf("%v: shape %d: %d rows, err %v; want %d", all, i, rows, errs[i], want)
			}
		}
	}
}

// TestShapeKeysTagsAndChecks: a shape's key and tag follow its predicate and columns; a
// dropped or renamed column fails Check, an added one does not.
func TestShapeKeysTagsAndChecks(t *testing.T) {
	n, s := store.Column{ID: 1, Name: "n", Type: "BIGINT"}, store.Column{ID: 2, Name: "s", Type: "VARCHAR"}
	a := &store.Shape{Where: "(n > 1)", Refs: []store.Column{n}}
	b := &store.Shape{Where: "(n > 1)", Refs: []store.Column{n}, Columns: []store.Column{n}}
	if a.Key() == b.Key() || a.Tag() == b.Tag() || a.Tag() == (store.ShapeTag{}) || (*store.Shape)(nil).Tag() != (store.ShapeTag{}) || (&store.Shape{}).Key() != "" {
		t.Error("keys or tags do not tell shapes apart")
	}
	schema := &store.Schema{Columns: []store.Column{n, s}}
	if r, _ := a.Check(&store.Schema{Columns: []store.Column{n, s, {ID: 3, Name: "x", Type: "DOUBLE"}}}); r != "" {
		t.Errorf("added column: %s", r)
	}
	if r, c := a.Check(&store.Schema{Columns: []store.Column{s}}); r != store.ReasonShapeColumnDropped || c != "n" {
		t.Errorf("dropped: %s %s", r, c)
	}
	if r, c := b.Check(&store.Schema{Columns: []store.Column{{ID: 1, Name: "m", Type: "BIGINT"}, s}}); r != store.ReasonShapeColumnRenamed || c != "n" {
		t.Errorf("renamed: %s %s", r, c)
	}
	if p := b.Project(schema); len(p.Columns) != 1 || p.Columns[0] != n {
		t.Errorf("project: %+v", p)
	}
}

// TestShapedCursors: a cursor read through a shape carries its tag under the MAC; one
// without a shape is the version 1 cursor.
func TestShapedCursors(t *testing.T) {
	c := store.NewCursors([]byte("key"))
	p := store.Position{TableID: 3, Activation: uuid.New(), Seq: 9}
	tag := (&store.Shape{Where: "(n > 1)"}).Tag()
	shaped := c.EncodeShaped(p, tag)
	if shaped[:3] != store.ShapedCursorPrefix || c.EncodeShaped(p, store.ShapeTag{}) != c.Encode(p) {
		t.Fatalf("cursors %s, %s", shaped, c.Encode(p))
	}
	got, gotTag, err := c.DecodeShaped(shaped)
	if err != nil || got != p || gotTag != tag {
		t.Fatalf("decode: %v %v %v", got, gotTag, err)
	}
	if _, gotTag, err := c.DecodeShaped(c.Encode(p)); err != nil || gotTag != (store.ShapeTag{}) {
		t.Fatalf("version 1: %v %v", gotTag, err)
	}
	forged := []byte(shaped)
	forged[len(forged)-30] ^= 1
	if _, _, err := c.DecodeShaped(string(forged)); err == nil {
		t.Fatal("a changed tag decoded")
	}
}
