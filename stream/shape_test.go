package stream_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

func newShapeReader(tb testing.TB, db *store.DB) *snapshot.Reader {
	tb.Helper()
	r := snapshot.NewReader(db)
	r.Cursor = db.Cursors().Encode
	r.Logger = slog.New(slog.DiscardHandler)
	if err := r.Open(); err != nil {
		tb.Fatal(err)
	}
	return r
}

// ingestRandom commits count rows of random n (0…99, some NULL) and s (one of a few
// strings, some NULL) to table t.
func (f *fixture) ingestRandom(tb testing.TB, rnd *rand.Rand, count int) store.Commit {
	tb.Helper()
	info, err := f.db.Table("t")
	if err != nil {
		tb.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, info.Schema.Arrow())
	defer b.Release()
	words := []string{"row 1", "Row 12", "other", "ROW", "x"}
	for range count {
		if rnd.IntN(10) == 0 {
			b.Field(0).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(rnd.Int64N(100))
		}
		if rnd.IntN(10) == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(words[rnd.IntN(len(words))])
		}
	}
	c, err := f.db.Append(context.Background(), store.Batch{Table: "t", SchemaVersion: info.Schema.Version, Record: b.NewRecordBatch()})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// shapedSnapshot reads table t through spec as rows of JSON values in the shape's column
// order, with the snapshot's cursor.
func shapedSnapshot(tb testing.TB, r *snapshot.Reader, db *store.DB, spec snapshot.ShapeSpec) ([]string, string) {
	tb.Helper()
	var buf bytes.Buffer
	var cursor string
	err := r.ShapedTable(context.Background(), "t", spec, store.TokenPolicy{}, snapshot.FormatNDJSON, &buf, func(p store.Position, tag store.ShapeTag) {
		cursor = db.Cursors().EncodeShaped(p, tag)
	})
	if err != nil {
		tb.Fatal(err)
	}
	cols := spec.Columns
	if cols == nil {
		cols = []string{"n", "s"}
	}
	var rows []string
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			tb.Fatal(err)
		}
		vals := make([]string, len(cols))
		for i, c := range cols {
			vals[i] = string(obj[c])
		}
		rows = append(rows, strings.Join(vals, "|"))
	}
	return rows, cursor
}

// shapedBatchRows returns the rows of a JSON-encoded batch frame's payload.
func shapedBatchRows(tb testing.TB, e sseEvent) []string {
	tb.Helper()
	var p struct{ Rows [][]json.RawMessage }
	if err := json.Unmarshal([]byte(e.data), &p); err != nil {
		tb.Fatalf("batch payload %q: %v", e.data, err)
	}
	var rows []string
	for _, r := range p.Rows {
		vals := make([]string, len(r))
		for i, v := range r {
			vals[i] = string(v)
		}
		rows = append(rows, strings.Join(vals, "|"))
	}
	return rows
}

// readUntil reads s's frames until it delivered the commit of seq, and returns the rows of
// its batches and every frame's event.
func readUntil(tb testing.TB, s *stream.Session, seq int64) (rows []string, events []sseEvent) {
	tb.Helper()
	for {
		fr := next(tb, s)
		e := parseFrame(tb, fr.Bytes)
		events = append(events, e)
		switch e.event {
		case stream.EventBatch:
			rows = append(rows, shapedBatchRows(tb, e)...)
			if fr.Commit.Position.Seq >= seq {
				return rows, events
			}
		case stream.EventSchema, stream.EventHeartbeat:
		default:
			tb.Fatalf("unexpected %s: %s", e.event, e.data)
		}
	}
}

// TestShapedSnapshotPlusStreamIsTheShapedHead is the shape property (docs/design.md,
// "Shapes and policies"): for random commits and a set of shapes, a shaped snapshot at any
// cursor, followed by the stream of the same shape from that cursor (replayed, then
// live), holds exactly the rows of the shaped snapshot at the head, in order. DuckDB
// evaluates every part.
func TestShapedSnapshotPlusStreamIsTheShapedHead(t *testing.T) {
	f := newFixture(t, nil)
	r := newShapeReader(t, f.db)
	rnd := rand.New(rand.NewPCG(16, 2))
	specs := []snapshot.ShapeSpec{
		{Where: "n % 3 = 0"},
		{Where: "s ILIKE 'row%' AND n IS NOT NULL", Columns: []string{"s"}},
		{Where: "n BETWEEN 20 AND 40 OR s IN ('x', 'other')", Columns: []string{"s", "n"}},
		{Columns: []string{"n"}},
		{Where: "CASE WHEN s IS NULL THEN n > 90 ELSE length(s) = 1 END"},
		{Where: "n = 1000"},
	}
	type start struct {
		spec   snapshot.ShapeSpec
		rows   []string
		cursor string
	}
	var starts []start
	var live []*stream.Session
	for _, spec := range specs {
		shape, err := r.Shape(context.Background(), "t", spec, store.TokenPolicy{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.hub.Subscribe(stream.SubscribeRequest{Table: "t", Token: f.tok, Framing: stream.FramingSSE, Encoding: stream.EncodingJSON, Shape: shape})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		if e := parseFrame(t, next(t, s).Bytes); e.event != stream.EventSchema {
			t.Fatalf("first frame %+v", e)
		}
		live = append(live, s)
	}
	var last store.Commit
	for i := range 30 {
		last = f.ingestRandom(t, rnd, rnd.IntN(20))
		if i%4 == 0 {
			for _, spec := range specs {
				rows, cursor := shapedSnapshot(t, r, f.db, spec)
				starts = append(starts, start{spec, rows, cursor})
			}
		}
	}
	var resumed []*stream.Session
	for _, st := range starts {
		shape, err := r.Shape(context.Background(), "t", st.spec, store.TokenPolicy{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.hub.Subscribe(stream.SubscribeRequest{Table: "t", Token: f.tok, Framing: stream.FramingSSE, Encoding: stream.EncodingJSON, Cursor: st.cursor, Shape: shape})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		resumed = append(resumed, s)
	}
	for range 10 {
		last = f.ingestRandom(t, rnd, rnd.IntN(20))
	}
	for i, spec := range specs {
		head, _ := shapedSnapshot(t, r, f.db, spec)
		got, _ := readUntil(t, live[i], last.Position.Seq)
		if strings.Join(got, "\n") != strings.Join(head, "\n") {
			t.Errorf("%+v live from the start: %d rows, the shaped head %d", spec, len(got), len(head))
		}
	}
	for i, st := range starts {
		head, _ := shapedSnapshot(t, r, f.db, st.spec)
		got, events := readUntil(t, resumed[i], last.Position.Seq)
		if events[0].event != stream.EventSchema || events[0].id != st.cursor {
			t.Errorf("%+v: first frame %+v, want a schema event with the snapshot's cursor", st.spec, events[0])
		}
		if all := append(append([]string{}, st.rows...), got...); strings.Join(all, "\n") != strings.Join(head, "\n") {
			t.Errorf("%+v: snapshot %d rows + stream %d rows, the shaped head %d", st.spec, len(st.rows), len(got), len(head))
		}
	}
}

// TestShapedCommitsAreSharedAndEmptyOnesStillMove: two sessions of one shape get the same
// frame bytes; a commit none of whose rows match is an empty batch with its own cursor,
// so that the subscriber's cursor moves on with every commit.
func TestShapedCommitsAreSharedAndEmptyOnesStillMove(t *testing.T) {
	f := newFixture(t, nil)
	r := newShapeReader(t, f.db)
	a, _ := r.Shape(context.Background(), "t", snapshot.ShapeSpec{Where: "n > 5", Columns: []string{"n"}}, store.TokenPolicy{})
	b, _ := r.Shape(context.Background(), "t", snapshot.ShapeSpec{Where: "(n > 5)", Columns: []string{"N"}}, store.TokenPolicy{})
	var sessions []*stream.Session
	for _, shape := range []*store.Shape{a, b} {
		s, err := f.hub.Subscribe(stream.SubscribeRequest{Table: "t", Token: f.tok, Framing: stream.FramingSSE, Encoding: stream.EncodingArrow, Shape: shape})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		if e := parseFrame(t, next(t, s).Bytes); e.event != stream.EventSchema {
			t.Fatalf("first frame %+v", e)
		}
		sessions = append(sessions, s)
	}
	empty := f.ingest(t, 0, 3)
	full := f.ingest(t, 4, 4)
	var frames [2][]stream.Frame
	for i, s := range sessions {
		frames[i] = []stream.Frame{next(t, s), next(t, s)}
	}
	e := parseFrame(t, frames[0][0].Bytes)
	sc, ns := decodeIPC(t, e.data)
	if e.event != stream.EventBatch || e.id != f.db.Cursors().EncodeShaped(empty.Position, a.Tag()) || len(ns) != 0 || sc.NumFields() != 1 {
		t.Errorf("commit without matching rows: %+v, %d rows, schema %s", e, len(ns), sc)
	}
	if _, ns := decodeIPC(t, parseFrame(t, frames[0][1].Bytes).data); fmt.Sprint(ns) != "[6 7]" {
		t.Errorf("rows %v, want [6 7]", ns)
	}
	if &frames[0][1].Bytes[0] != &frames[1][1].Bytes[0] {
		t.Error("two sessions of one shape got their own copies of a commit's frame")
	}
	if frames[0][1].Commit.Position != full.Position || frames[0][1].Commit.Rows != 2 {
		t.Errorf("commit meta %+v", frames[0][1].Commit)
	}
}

// TestShapeBindsItsCursor: resuming with another shape than the cursor's, or with a shape
// from a cursor read without one (and the reverse), is refresh-required, reason
// shape_mismatch; the same shape resumes.
func TestShapeBindsItsCursor(t *testing.T) {
	f := newFixture(t, nil)
	r := newShapeReader(t, f.db)
	f.ingest(t, 0, 10)
	specA := snapshot.ShapeSpec{Where: "n > 5"}
	_, cursorA := shapedSnapshot(t, r, f.db, specA)
	_, plain := shapedSnapshot(t, r, f.db, snapshot.ShapeSpec{})
	a, _ := r.Shape(context.Background(), "t", specA, store.TokenPolicy{})
	b, _ := r.Shape(context.Background(), "t", snapshot.ShapeSpec{Where: "n > 6"}, store.TokenPolicy{})
	for _, c := range []struct {
		name   string
		cursor string
		shape  *store.Shape
		want   string
	}{
		{"another shape", cursorA, b, stream.EventRefreshRequired},
		{"no shape", cursorA, nil, stream.EventRefreshRequired},
		{"a shape from a plain cursor", plain, a, stream.EventRefreshRequired},
		{"the same shape", cursorA, a, stream.EventSchema},
	} {
		s, err := f.hub.Subscribe(stream.SubscribeRequest{Table: "t", Token: f.tok, Framing: stream.FramingSSE, Encoding: stream.EncodingJSON, Cursor: c.cursor, Shape: c.shape})
		if err != nil {
			t.Fatal(err)
		}
		e := parseFrame(t, next(t, s).Bytes)
		if e.event != c.want || (c.want == stream.EventRefreshRequired && !strings.Contains(e.data, stream.ReasonShapeMismatch)) {
			t.Errorf("%s: %+v", c.name, e)
		}
		s.Close()
	}
}

// TestShapeColumnChanges: dropping or renaming a column a live shape names ends its
// stream with refresh-required naming the column; adding a column does not, and a shape
// that projects columns keeps its columns.
func TestShapeColumnChanges(t *testing.T) {
	f := newFixture(t, nil)
	r := newShapeReader(t, f.db)
	ctx := context.Background()
	subscribe := func(spec snapshot.ShapeSpec) *stream.Session {
		shape, err := r.Shape(ctx, "t", spec, store.TokenPolicy{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.hub.Subscribe(stream.SubscribeRequest{Table: "t", Token: f.tok, Framing: stream.FramingSSE, Encoding: stream.EncodingJSON, Shape: shape})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		next(t, s)
		return s
	}
	byWhere := subscribe(snapshot.ShapeSpec{Where: "s IS NOT NULL"})
	byColumn := subscribe(snapshot.ShapeSpec{Columns: []string{"n"}})
	if _, err := f.db.AddColumn(ctx, "t", store.ColumnSpec{Name: "extra", Type: "DOUBLE"}); err != nil {
		t.Fatal(err)
	}
	c := f.ingest(t, 1, 1)
	for _, s := range []*stream.Session{byWhere, byColumn} {
		if _, events := readUntil(t, s, c.Position.Seq); events[0].event != stream.EventSchema {
			t.Fatalf("after adding a column: %+v", events)
		}
	}
	if _, err := f.db.RenameColumn(ctx, "t", "s", "label"); err != nil {
		t.Fatal(err)
	}
	e := parseFrame(t, next(t, byWhere).Bytes)
	if e.event != stream.EventRefreshRequired || e.data != `{"reason":"shape_column_renamed","column":"s"}` {
		t.Errorf("rename: %+v", e)
	}
	if _, err := f.db.DropColumn(ctx, "t", "n"); err != nil {
		t.Fatal(err)
	}
	for {
		e := parseFrame(t, next(t, byColumn).Bytes)
		if e.event == stream.EventSchema {
			continue // the rename of another column
		}
		if e.event != stream.EventRefreshRequired || e.data != `{"reason":"shape_column_dropped","column":"n"}` {
			t.Errorf("drop: %+v", e)
		}
		break
	}
}

// TestManyShapesReadConcurrently: sessions of several shapes reading the same commits at
// once each get exactly their shape's rows (the commit is filtered through all shapes in
// use by whichever session comes first).
func TestManyShapesReadConcurrently(t *testing.T) {
	f := newFixture(t, nil)
	r := newShapeReader(t, f.db)
	const shapes, perShape, commits = 6, 3, 12
	type sub struct {
		s    *stream.Session
		spec snapshot.ShapeSpec
	}
	var subs []sub
	for i := range shapes * perShape {
		spec := snapshot.ShapeSpec{Where: fmt.Sprintf("n %% %d = 0", i%shapes+1)}
		shape, err := r.Shape(context.Background(), "t", spec, store.TokenPolicy{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.hub.Subscribe(stream.SubscribeRequest{Table: "t", Token: f.tok, Framing: stream.FramingSSE, Encoding: stream.EncodingJSON, Shape: shape})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		next(t, s)
		subs = append(subs, sub{s, spec})
	}
	var last store.Commit
	for i := range commits {
		last = f.ingest(t, i*10, 10)
	}
	got := make([][]string, len(subs))
	errs := make([]error, len(subs))
	var wg sync.WaitGroup
	for i, sb := range subs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for {
				fr, err := sb.s.Next(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				if fr.Event != stream.EventBatch {
					continue
				}
				var p struct{ Rows [][]json.RawMessage }
				if err := json.Unmarshal(bytes.TrimSpace(bytes.TrimPrefix(fr.Bytes[bytes.Index(fr.Bytes, []byte("data: ")):], []byte("data: "))), &p); err != nil {
					errs[i] = err
					return
				}
				for _, r := range p.Rows {
					vals := make([]string, len(r))
					for k, v := range r {
						vals[k] = string(v)
					}
					got[i] = append(got[i], strings.Join(vals, "|"))
				}
				if fr.Commit.Position.Seq >= last.Position.Seq {
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
	}
	for i, sb := range subs {
		if want, _ := shapedSnapshot(t, r, f.db, sb.spec); strings.Join(got[i], "\n") != strings.Join(want, "\n") {
			t.Errorf("%+v: %d rows, want %d", sb.spec, len(got[i]), len(want))
		}
	}
}
