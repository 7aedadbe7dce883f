package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/ducktail/ducktail/store"
)

func TestCreateAppendRead(t *testing.T) {
	db, rec := openDB(t, "")
	ctx := context.Background()
	info, err := db.CreateTable(ctx, "weather", weatherColumns)
	if err != nil {
		t.Fatal(err)
	}
	if info.Head.Seq != 0 || info.Schema.Version != 1 || info.ID == 0 {
		t.Fatalf("new table info = %+v", info)
	}
	c1 := appendRows(t, db, "weather", 3, 10)
	c2 := appendRows(t, db, "weather", 2, 20)
	if c1.Position.Seq != 1 || c2.Position.Seq != 2 {
		t.Fatalf("seqs = %d, %d, want 1, 2", c1.Position.Seq, c2.Position.Seq)
	}
	if c1.Position.Activation != info.Head.Activation {
		t.Fatal("commit activation differs from table activation")
	}
	got := readColumn(t, db, `SELECT temp_max FROM weather`)
	want := []float64{10, 11, 12, 20, 21}
	if len(got) != len(want) {
		t.Fatalf("rows = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rows = %v, want %v", got, want)
		}
	}
	evs := rec.all()
	if len(evs) != 3 {
		t.Fatalf("events = %+v", evs)
	}
	if st, ok := evs[0].(store.ActivationStarted); !ok || st.Position != info.Head || st.Schema.Version != 1 || st.TableName != "weather" {
		t.Fatalf("first event = %+v, want the activation's start", evs[0])
	}
	e0, ok0 := evs[1].(store.CommitEvent)
	e1, ok1 := evs[2].(store.CommitEvent)
	if !ok0 || !ok1 || e0.Position.Seq != 1 || e1.Position.Seq != 2 {
		t.Fatalf("events = %+v", evs)
	}
	if e0.Record.NumRows() != 3 {
		t.Fatalf("published record has %d rows, want 3", e0.Record.NumRows())
	}
	info, _ = db.Table("WEATHER")
	if info.Head.Seq != 2 || info.Rows != 5 {
		t.Fatalf("head = %d rows = %d, want 2 and 5", info.Head.Seq, info.Rows)
	}
}

func TestCreateTableRejectsBadInput(t *testing.T) {
	db, _ := openDB(t, "")
	ctx := context.Background()
	cases := []struct {
		name string
		cols []store.ColumnSpec
	}{
		{"1abc", weatherColumns},
		{"a-b", weatherColumns},
		{"__ducktail_x", weatherColumns},
		{"main", weatherColumns},
		{"ok", nil},
		{"ok", []store.ColumnSpec{{Name: "a", Type: "BIGINT"}, {Name: "A", Type: "BIGINT"}}},
		{"ok", []store.ColumnSpec{{Name: "a", Type: "GEOMETRY"}}},
		{"ok", []store.ColumnSpec{{Name: "a\nb", Type: "BIGINT"}}},
		{"ok", []store.ColumnSpec{{Name: "__DUCKTAIL_seq", Type: "BIGINT"}}},
	}
	for _, c := range cases {
		_, err := db.CreateTable(ctx, c.name, c.cols)
		if store.ErrorCode(err) != store.CodeInvalid {
			t.Errorf("CreateTable(%q, %v) = %v, want CodeInvalid", c.name, c.cols, err)
		}
	}
	if _, err := db.CreateTable(ctx, "weather", weatherColumns); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(ctx, "Weather", weatherColumns); store.ErrorCode(err) != store.CodeConflict {
		t.Fatalf("duplicate table: %v, want CodeConflict", err)
	}
	// Quoting: names with quotes and spaces work end to end.
	odd := []store.ColumnSpec{{Name: `Cost "Total" $`, Type: "bigint"}, {Name: "it's", Type: "text"}}
	if _, err := db.CreateTable(ctx, "odd_names", odd); err != nil {
		t.Fatal(err)
	}
}

func TestIdempotencyKey(t *testing.T) {
	db, rec := openDB(t, "")
	ctx := context.Background()
	info, _ := db.CreateTable(ctx, "weather", weatherColumns)
	b := store.Batch{Table: "weather", SchemaVersion: 1, Record: weatherBatch(info.Schema, 2, 1), IdempotencyKey: "k1", RequestHash: []byte("h1")}
	first, err := db.Append(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := db.Append(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Duplicate || again.Position != first.Position || again.Rows != 2 {
		t.Fatalf("retry = %+v, want duplicate of %+v", again, first)
	}
	b.RequestHash = []byte("other")
	if _, err := db.Append(ctx, b); store.ErrorCode(err) != store.CodeConflict {
		t.Fatalf("reused key with other body: %v, want CodeConflict", err)
	}
	if n := len(readColumn(t, db, "SELECT temp_max FROM weather")); n != 2 {
		t.Fatalf("rows = %d, want 2", n)
	}
	if evs := rec.all(); len(evs) != 2 {
		t.Fatalf("published %d events, want the table's start and one commit", len(evs))
	}
}

func TestConcurrentAppendsGetContiguousSeqsPublishedInOrder(t *testing.T) {
	db, rec := openDB(t, "")
	ctx := context.Background()
	if _, err := db.CreateTable(ctx, "weather", weatherColumns); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTable(ctx, "other", weatherColumns); err != nil {
		t.Fatal(err)
	}
	const clients, each = 16, 20
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			table := "weather"
			if c%4 == 0 {
				table = "other"
			}
			for i := 0; i < each; i++ {
				appendRows(t, db, table, 5, float64(c*1000+i))
			}
		}(c)
	}
	wg.Wait()
	next := map[string]int64{"weather": 1, "other": 1}
	evs := rec.all()
	for _, ev := range evs[:2] {
		if _, ok := ev.(store.ActivationStarted); !ok {
			t.Fatalf("event %+v, want the tables' starts first", ev)
		}
	}
	for _, ev := range evs[2:] {
		e, ok := ev.(store.CommitEvent)
		if !ok {
			t.Fatalf("event %+v, want only commits", ev)
		}
		if e.Position.Seq != next[e.TableName] {
			t.Fatalf("%s: published seq %d, want %d", e.TableName, e.Position.Seq, next[e.TableName])
		}
		next[e.TableName]++
	}
	if next["weather"]-1 != 12*each || next["other"]-1 != 4*each {
		t.Fatalf("commits = %v", next)
	}
	if n := len(readColumn(t, db, "SELECT temp_max FROM weather")); n != 12*each*5 {
		t.Fatalf("rows = %d", n)
	}
}

func TestResetAndDropEndActivation(t *testing.T) {
	db, rec := openDB(t, "")
	ctx := context.Background()
	before, _ := db.CreateTable(ctx, "weather", weatherColumns)
	appendRows(t, db, "weather", 3, 1)
	after, err := db.ResetTable(ctx, "weather")
	if err != nil {
		t.Fatal(err)
	}
	if after.Head.Activation == before.Head.Activation || after.Head.Seq != 0 || after.ID != before.ID {
		t.Fatalf("after reset: %+v", after)
	}
	if n := len(readColumn(t, db, "SELECT temp_max FROM weather")); n != 0 {
		t.Fatalf("rows after reset = %d", n)
	}
	if c := appendRows(t, db, "weather", 1, 1); c.Position.Seq != 1 {
		t.Fatalf("first seq after reset = %d, want 1", c.Position.Seq)
	}
	evs := rec.all()
	ended, ok := evs[2].(store.ActivationEnded)
	if !ok || ended.Reason != store.ReasonTableReset || ended.Position.Activation != before.Head.Activation || ended.Position.Seq != 1 {
		t.Fatalf("reset event = %+v", ended)
	}
	if st, ok := evs[3].(store.ActivationStarted); !ok || st.Position != after.Head || ended.NewActivation != after.Head.Activation {
		t.Fatalf("after the reset's end = %+v, want the new activation's start", evs[3])
	}
	if err := db.DropTable(ctx, "weather"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Table("weather"); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("Table after drop: %v", err)
	}
	evs = rec.all()
	if last, ok := evs[len(evs)-1].(store.ActivationEnded); !ok || last.Reason != store.ReasonTableDropped {
		t.Fatalf("drop event = %+v", last)
	}
	again, err := db.CreateTable(ctx, "weather", weatherColumns)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID == before.ID {
		t.Fatal("recreated table reused the old id")
	}
	if err := db.DropTable(ctx, "nope"); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("drop unknown: %v", err)
	}
}

func TestAppendRejectsStaleSchemaAndUnknownTable(t *testing.T) {
	db, _ := openDB(t, "")
	ctx := context.Background()
	info, _ := db.CreateTable(ctx, "weather", weatherColumns)
	rec := weatherBatch(info.Schema, 1, 1)
	if _, err := db.AddColumn(ctx, "weather", store.ColumnSpec{Name: "wind", Type: "DOUBLE"}); err != nil {
		t.Fatal(err)
	}
	_, err := db.Append(ctx, store.Batch{Table: "weather", SchemaVersion: 1, Record: rec})
	if !errors.Is(err, store.ErrSchemaChanged) || store.ErrorCode(err) != store.CodeConflict {
		t.Fatalf("stale append: %v", err)
	}
	_, err = db.Append(ctx, store.Batch{Table: "nope", SchemaVersion: 1, Record: rec})
	if !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("unknown table: %v", err)
	}
	_, err = db.Append(ctx, store.Batch{Table: "weather", SchemaVersion: 2, Record: rec})
	if store.ErrorCode(err) != store.CodeInvalid {
		t.Fatalf("mismatched record: %v", err)
	}
}
