package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/store"
)

// replayed is one commit as ReadCommits returned it.
type replayed struct {
	seq     int64
	version int
	names   string
	rows    int64
	values  string
}

func replayAll(t *testing.T, db *store.DB, table string, after int64) []replayed {
	t.Helper()
	ctx := context.Background()
	var out []replayed
	err := db.Read(ctx, func(tx *store.ReadTx) error {
		info, err := tx.Table(ctx, table)
		if err != nil {
			return err
		}
		a, err := tx.Activation(ctx, info.ID, info.Head.Activation)
		if err != nil {
			return err
		}
		commits, err := tx.Commits(ctx, a, after, a.Head)
		if err != nil {
			return err
		}
		schemas, err := tx.Schemas(ctx, a)
		if err != nil {
			return err
		}
		return tx.ReadCommits(ctx, a, schemas, commits, func(c store.CommitInfo, s *store.Schema, recs []arrow.RecordBatch) error {
			r := replayed{seq: c.Seq, version: s.Version}
			var names []string
			for _, f := range s.Arrow().Fields() {
				names = append(names, f.Name)
			}
			r.names = strings.Join(names, ",")
			var vals []string
			for _, rec := range recs {
				if !rec.Schema().Equal(s.Arrow()) {
					return fmt.Errorf("seq %d: record schema %s, want %s", c.Seq, rec.Schema(), s.Arrow())
				}
				r.rows += rec.NumRows()
				for i := 0; i < int(rec.NumRows()); i++ {
					var row []string
					for j := range rec.Columns() {
						row = append(row, rec.Column(j).ValueStr(i))
					}
					vals = append(vals, strings.Join(row, "|"))
				}
			}
			r.values = strings.Join(vals, ";")
			if r.rows != c.Rows {
				return fmt.Errorf("seq %d: %d rows read, log says %d", c.Seq, r.rows, c.Rows)
			}
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReadCommitsProjectsEachCommitWithItsOwnSchema(t *testing.T) {
	db, rec := openDB(t, "")
	ctx := context.Background()
	cols := []store.ColumnSpec{{Name: "a", Type: "BIGINT"}, {Name: "b", Type: "BIGINT"}}
	if _, err := db.CreateTable(ctx, "t", cols); err != nil {
		t.Fatal(err)
	}
	appendRows(t, db, "t", 2, 10) // seq 1: a,b
	appendRows(t, db, "t", 0, 0)  // seq 2: empty commit
	if _, err := db.AddColumn(ctx, "t", store.ColumnSpec{Name: "c", Type: "BIGINT"}); err != nil {
		t.Fatal(err)
	}
	appendRows(t, db, "t", 1, 20) // seq 3: a,b,c
	if _, err := db.DropColumn(ctx, "t", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddColumn(ctx, "t", store.ColumnSpec{Name: "b", Type: "BIGINT"}); err != nil {
		t.Fatal(err)
	}
	appendRows(t, db, "t", 1, 30) // seq 4: a,c,b(new)
	if _, err := db.RenameColumn(ctx, "t", "a", "z"); err != nil {
		t.Fatal(err)
	}
	appendRows(t, db, "t", 1, 40) // seq 5: z,c,b

	got := replayAll(t, db, "t", 0)
	want := []replayed{
		{seq: 1, version: 1, names: "a,b", rows: 2, values: "10|10;11|11"},
		{seq: 2, version: 1, names: "a,b", rows: 0},
		{seq: 3, version: 2, names: "a,b,c", rows: 1, values: "20|20|20"},
		{seq: 4, version: 4, names: "a,c,b", rows: 1, values: "30|30|30"},
		{seq: 5, version: 5, names: "z,c,b", rows: 1, values: "40|40|40"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("replay:\n got %v\nwant %v", got, want)
	}
	if tail := replayAll(t, db, "t", 3); len(tail) != 2 || tail[0].seq != 4 {
		t.Fatalf("replay after 3 = %v", tail)
	}
	// The old b's values were never relabelled: the current view shows NULL for b in old rows.
	var kinds []string
	for _, e := range rec.all() {
		kinds = append(kinds, fmt.Sprintf("%T", e))
	}
	const a, c, s = "store.ActivationStarted", "store.CommitEvent", "store.SchemaEvent"
	wantKinds := fmt.Sprint([]string{a, c, c, s, c, s, s, c, s, c})
	if fmt.Sprint(kinds) != wantKinds {
		t.Fatalf("event kinds = %v, want %v", kinds, wantKinds)
	}
}

func TestSchemaChangeErrors(t *testing.T) {
	db, _ := openDB(t, "")
	ctx := context.Background()
	if _, err := db.CreateTable(ctx, "t", []store.ColumnSpec{{Name: "a", Type: "BIGINT"}}); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		err  error
		code store.Code
	}{
		{second(db.AddColumn(ctx, "t", store.ColumnSpec{Name: "A", Type: "BIGINT"})), store.CodeConflict},
		{second(db.AddColumn(ctx, "t", store.ColumnSpec{Name: "x", Type: "nope"})), store.CodeInvalid},
		{second(db.AddColumn(ctx, "nope", store.ColumnSpec{Name: "x", Type: "BIGINT"})), store.CodeNotFound},
		{second(db.DropColumn(ctx, "t", "a")), store.CodeInvalid},
		{second(db.DropColumn(ctx, "t", "zz")), store.CodeNotFound},
		{second(db.RenameColumn(ctx, "t", "zz", "y")), store.CodeNotFound},
		{second(db.RenameColumn(ctx, "t", "a", "")), store.CodeInvalid},
	}
	for i, c := range checks {
		if store.ErrorCode(c.err) != c.code {
			t.Errorf("check %d: %v, want %s", i, c.err, c.code)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestScanTableReadsEveryRowInOrderInChunks scans a table of several chunks (tiny chunks
// here) and an empty one.
func TestScanTableReadsEveryRowInOrderInChunks(t *testing.T) {
	db, _ := openDB(t, "")
	ctx := context.Background()
	if _, err := db.CreateTable(ctx, "t", []store.ColumnSpec{{Name: "a", Type: "BIGINT"}, {Name: "b", Type: "BIGINT"}}); err != nil {
		t.Fatal(err)
	}
	scan := func() []string {
		var got []string
		err := db.Read(ctx, func(tx *store.ReadTx) error {
			info, err := tx.Table(ctx, "t")
			if err != nil {
				return err
			}
			return tx.ScanTable(ctx, info, 7, func(rr array.RecordReader) error {
				if rr.Schema().NumFields() != 2 || rr.Schema().Field(1).Name != "b" {
					return fmt.Errorf("schema %s", rr.Schema())
				}
				for rr.Next() {
					rec := rr.RecordBatch()
					for i := 0; i < int(rec.NumRows()); i++ {
						got = append(got, rec.Column(0).ValueStr(i))
					}
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := scan(); len(got) != 0 {
		t.Fatalf("empty table scanned %v", got)
	}
	for i := 0; i < 5; i++ {
		appendRows(t, db, "t", 9, float64(i*9))
	}
	got := scan()
	if len(got) != 45 {
		t.Fatalf("scanned %d rows, want 45", len(got))
	}
	for i, v := range got {
		if v != fmt.Sprint(i) {
			t.Fatalf("row %d = %s: %v", i, v, got)
		}
	}
}
