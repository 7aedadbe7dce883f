package stream_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// fixture is a real store in t.TempDir() whose publisher is a real hub.
type fixture struct {
	db  *store.DB
	hub *stream.Hub
	tok store.Token
}

func newFixture(tb testing.TB, tune func(*stream.Hub)) *fixture {
	tb.Helper()
	db := store.NewDB(filepath.Join(tb.TempDir(), "ducktail.duckdb"))
	hub := stream.NewHub(stream.Local{DB: db})
	hub.Shaper = db
	db.Publisher = hub
	if tune != nil {
		tune(hub)
	}
	if err := db.Open(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if err := hub.Open(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		hub.Close()
		db.Close()
	})
	tok, _, err := db.CreateToken(context.Background(), store.PurposeStream, "", 0)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := db.CreateTable(context.Background(), "t", []store.ColumnSpec{{Name: "n", Type: "BIGINT"}, {Name: "s", Type: "VARCHAR"}}); err != nil {
		tb.Fatal(err)
	}
	return &fixture{db: db, hub: hub, tok: tok}
}

// ingest commits rows n = first..first+count-1 to table t.
func (f *fixture) ingest(tb testing.TB, first, count int) store.Commit {
	tb.Helper()
	info, err := f.db.Table("t")
	if err != nil {
		tb.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, info.Schema.Arrow())
	for i := first; i < first+count; i++ {
		for j, c := range info.Schema.Columns {
			switch c.Type {
			case store.TypeBigint:
				b.Field(j).(*array.Int64Builder).Append(int64(i))
			case store.TypeDouble:
				b.Field(j).(*array.Float64Builder).Append(float64(i))
			default:
				b.Field(j).(*array.StringBuilder).Append(fmt.Sprintf("row %d", i))
			}
		}
	}
	c, err := f.db.Append(context.Background(), store.Batch{Table: "t", SchemaVersion: info.Schema.Version, Record: b.NewRecordBatch()})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func (f *fixture) subscribe(tb testing.TB, framing stream.Framing, enc stream.Encoding, cursor string) *stream.Session {
	tb.Helper()
	s, err := f.hub.Subscribe(stream.SubscribeRequest{Table: "t", Token: f.tok, Framing: framing, Encoding: enc, Cursor: cursor})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// sseEvent is one parsed SSE event of a single frame.
type sseEvent struct{ event, id, data, retry string }

// parseFrame parses one SSE-framed event (the stream package writes one event per frame).
func parseFrame(tb testing.TB, b []byte) sseEvent {
	tb.Helper()
	var e sseEvent
	s := string(b)
	if !strings.HasSuffix(s, "\n\n") {
		tb.Fatalf("frame %q does not end with a blank line", s)
	}
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n\n"), "\n") {
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "event":
			e.event = value
		case "id":
			e.id = value
		case "data":
			e.data = value
		case "retry":
			e.retry = value
		default:
			tb.Fatalf("unexpected field %q in %q", name, s)
		}
	}
	return e
}

// next returns the next frame within 10 seconds.
func next(tb testing.TB, s *stream.Session) stream.Frame {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := s.Next(ctx)
	if err != nil {
		tb.Fatalf("Next: %v", err)
	}
	return f
}

// decodeIPC decodes a base64 Arrow IPC stream payload on its own and returns its schema
// and the n column values.
func decodeIPC(tb testing.TB, data string) (*arrow.Schema, []int64) {
	tb.Helper()
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := ipc.NewReader(bytes.NewReader(raw))
	if err != nil {
		tb.Fatalf("payload is not an Arrow IPC stream: %v", err)
	}
	defer r.Release()
	var ns []int64
	for r.Next() {
		col := r.RecordBatch().Column(0).(*array.Int64)
		ns = append(ns, col.Int64Values()...)
	}
	if err := r.Err(); err != nil && err != io.EOF {
		tb.Fatal(err)
	}
	return r.Schema(), ns
}

func TestNewSubscriptionStartsAfterBaseline(t *testing.T) {
	f := newFixture(t, nil)
	f.ingest(t, 0, 3)
	base := f.ingest(t, 3, 2)
	s := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, "")
	schema := parseFrame(t, next(t, s).Bytes)
	if schema.event != "schema" || schema.id != f.db.Cursors().Encode(base.Position) {
		t.Fatalf("first event = %+v, want schema with the baseline cursor", schema)
	}
	sc, rows := decodeIPC(t, schema.data)
	if len(rows) != 0 || sc.NumFields() != 2 || sc.Field(1).Name != "s" {
		t.Fatalf("schema payload: %s, %d rows", sc, len(rows))
	}
	c := f.ingest(t, 5, 4)
	batch := parseFrame(t, next(t, s).Bytes)
	if batch.event != "batch" || batch.id != f.db.Cursors().Encode(c.Position) {
		t.Fatalf("batch = %+v, want id of seq %d", batch, c.Position.Seq)
	}
	if _, ns := decodeIPC(t, batch.data); fmt.Sprint(ns) != "[5 6 7 8]" {
		t.Fatalf("batch rows = %v", ns)
	}
	empty := f.ingest(t, 0, 0)
	e := parseFrame(t, next(t, s).Bytes)
	if _, ns := decodeIPC(t, e.data); e.id != f.db.Cursors().Encode(empty.Position) || len(ns) != 0 {
		t.Fatalf("empty commit = %+v", e)
	}
}

func TestIdleTableGetsSchemaWithSeqZeroCursor(t *testing.T) {
	f := newFixture(t, nil)
	s := f.subscribe(t, stream.FramingNDJSON, stream.EncodingJSON, "")
	var ev struct {
		Event string
		ID    string
		Data  struct {
			Columns []struct{ Name, Type string }
		}
	}
	b := next(t, s).Bytes
	if err := json.Unmarshal(b, &ev); err != nil || b[len(b)-1] != '\n' || bytes.Count(b, []byte("\n")) != 1 {
		t.Fatalf("ndjson frame %q: %v", b, err)
	}
	pos, err := f.db.Cursors().Decode(ev.ID)
	if ev.Event != "schema" || err != nil || pos.Seq != 0 || len(ev.Data.Columns) != 2 || ev.Data.Columns[0].Type != "BIGINT" {
		t.Fatalf("schema event = %+v (%v)", ev, err)
	}
	f.ingest(t, 1<<53-1, 2)
	b = next(t, s).Bytes
	if !bytes.Contains(b, []byte(`"rows":[[9007199254740991,"row 9007199254740991"],["9007199254740992","row 9007199254740992"]]`)) {
		t.Fatalf("json batch = %s", b)
	}
}

func TestResumeReplaysFromTheTableThenGoesLive(t *testing.T) {
	f := newFixture(t, nil)
	var commits []store.Commit
	for i := 0; i < 10; i++ {
		commits = append(commits, f.ingest(t, i*10, 10))
	}
	cursor := f.db.Cursors().Encode(commits[3].Position)
	s := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, cursor)
	if e := parseFrame(t, next(t, s).Bytes); e.event != "schema" || e.id != cursor {
		t.Fatalf("first = %+v, want schema with the resume cursor", e)
	}
	live := f.ingest(t, 100, 1)
	for i := 4; i <= 10; i++ {
		e := parseFrame(t, next(t, s).Bytes)
		want := live.Position
		if i < 10 {
			want = commits[i].Position
		}
		if e.event != "batch" || e.id != f.db.Cursors().Encode(want) {
			t.Fatalf("event %d = %s %s, want batch seq %d", i, e.event, e.id, want.Seq)
		}
		_, ns := decodeIPC(t, e.data)
		if len(ns) == 0 || ns[0] != int64(i*10) {
			t.Fatalf("seq %d rows = %v", want.Seq, ns)
		}
	}
}

func TestUnusableCursorsGetRefreshRequired(t *testing.T) {
	f := newFixture(t, func(h *stream.Hub) { h.MaxReplayCommits = 3 })
	c1 := f.ingest(t, 0, 1)
	for i := 0; i < 5; i++ {
		f.ingest(t, 0, 1)
	}
	other, err := f.db.CreateTable(context.Background(), "u", []store.ColumnSpec{{Name: "n", Type: "BIGINT"}})
	if err != nil {
		t.Fatal(err)
	}
	ahead := c1.Position
	ahead.Seq = 99
	tampered := []byte(f.db.Cursors().Encode(c1.Position))
	tampered[5] = 'A' + (tampered[5]-'A'+1)%26
	cases := map[string]string{
		"12":                               store.ReasonNumericCursor,
		"garbage":                          store.ReasonInvalidCursor,
		string(tampered):                   store.ReasonTamperedCursor,
		f.db.Cursors().Encode(other.Head):  stream.ReasonForeignCursor,
		f.db.Cursors().Encode(ahead):       stream.ReasonCursorAhead,
		f.db.Cursors().Encode(c1.Position): stream.ReasonReplayLimit,
	}
	for cursor, reason := range cases {
		s := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, cursor)
		fr := next(t, s)
		e := parseFrame(t, fr.Bytes)
		if e.event != "refresh-required" || e.id != "" || e.data != `{"reason":"`+reason+`"}` || !fr.Terminal {
			t.Errorf("cursor %q: got %+v, want refresh-required %s", cursor, e, reason)
		}
		if _, err := s.Next(context.Background()); err != io.EOF {
			t.Errorf("after terminal: %v, want io.EOF", err)
		}
	}
	old := f.db.Cursors().Encode(f.ingest(t, 0, 1).Position)
	if _, err := f.db.ResetTable(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	s := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, old)
	if e := parseFrame(t, next(t, s).Bytes); e.data != `{"reason":"table_reset"}` {
		t.Fatalf("cursor of reset activation: %+v", e)
	}
}

func TestLiveResetAndDropEndTheStream(t *testing.T) {
	f := newFixture(t, nil)
	s := f.subscribe(t, stream.FramingJSONSeq, stream.EncodingArrow, "")
	if b := next(t, s).Bytes; b[0] != 0x1e || b[len(b)-1] != '\n' {
		t.Fatalf("json-seq frame %q", b)
	}
	if _, err := f.db.ResetTable(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	fr := next(t, s)
	if want := "\x1e{\"event\":\"refresh-required\",\"data\":{\"reason\":\"table_reset\"}}\n"; string(fr.Bytes) != want {
		t.Fatalf("got %q, want %q", fr.Bytes, want)
	}
}

func TestSchemaChangeSendsSchemaBeforeFirstBatchInNewSchema(t *testing.T) {
	f := newFixture(t, nil)
	s := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, "")
	next(t, s)
	c := f.ingest(t, 1, 1)
	next(t, s)
	if _, err := f.db.AddColumn(context.Background(), "t", store.ColumnSpec{Name: "extra", Type: "DOUBLE"}); err != nil {
		t.Fatal(err)
	}
	f.ingest(t, 2, 1)
	e := parseFrame(t, next(t, s).Bytes)
	sc, _ := decodeIPC(t, e.data)
	if e.event != "schema" || e.id != f.db.Cursors().Encode(c.Position) || sc.NumFields() != 3 || sc.Field(2).Name != "extra" {
		t.Fatalf("after add column: %+v %s", e, sc)
	}
	e = parseFrame(t, next(t, s).Bytes)
	sc, _ = decodeIPC(t, e.data)
	if e.event != "batch" || sc.NumFields() != 3 {
		t.Fatalf("batch after change: %+v %s", e, sc)
	}
}

func TestSlowConsumerIsEvictedOthersCarryOn(t *testing.T) {
	f := newFixture(t, func(h *stream.Hub) { h.MaxBufferedBatches = 2 })
	slow := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, "")
	fast := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, "")
	next(t, slow)
	next(t, fast)
	for i := 0; i < 5; i++ {
		f.ingest(t, i, 1)
		if e := parseFrame(t, next(t, fast).Bytes); e.event != "batch" {
			t.Fatalf("fast consumer got %+v", e)
		}
	}
	fr := next(t, slow)
	e := parseFrame(t, fr.Bytes)
	var data struct {
		Reason  string
		RetryMS int64 `json:"retry_ms"`
	}
	if err := json.Unmarshal([]byte(e.data), &data); err != nil || e.event != "reconnect" || data.Reason != "slow_consumer" || data.RetryMS <= 0 || e.retry != fmt.Sprint(data.RetryMS) {
		t.Fatalf("slow consumer got %+v", e)
	}
}

// TestLogStatsShowTheLag: a session that reads nothing shows as the lag of the table's
// log; once it reads, the lag is gone.
func TestLogStatsShowTheLag(t *testing.T) {
	f := newFixture(t, nil)
	s := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, "")
	next(t, s)
	for i := 0; i < 3; i++ {
		f.ingest(t, i, 1)
	}
	if st := f.hub.LogStats(); st.MaxLag != 3 || st.Bytes <= 0 {
		t.Fatalf("LogStats = %+v, want a lag of 3 commits and their bytes", st)
	}
	for i := 0; i < 3; i++ {
		if e := parseFrame(t, next(t, s).Bytes); e.event != "batch" {
			t.Fatalf("got %+v", e)
		}
	}
	if st := f.hub.LogStats(); st.MaxLag != 0 {
		t.Fatalf("LogStats after reading = %+v, want no lag", st)
	}
}

// TestSlowConsumerPastTheBytesBoundIsEvicted: the log's bytes bound evicts a session too,
// while one that keeps reading gets every commit in order. A bound of one byte keeps
// only the newest commit.
func TestSlowConsumerPastTheBytesBoundIsEvicted(t *testing.T) {
	f := newFixture(t, func(h *stream.Hub) { h.MaxBufferedBytes = 1 })
	slow := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, "")
	fast := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, "")
	next(t, slow)
	next(t, fast)
	var last store.Commit
	for i := 0; i < 10; i++ {
		last = f.ingest(t, 100*i, 20)
		if e := parseFrame(t, next(t, fast).Bytes); e.event != "batch" || e.id != f.db.Cursors().Encode(last.Position) {
			t.Fatalf("fast consumer got %+v, want the batch of seq %d", e, last.Position.Seq)
		}
	}
	if fr := next(t, slow); fr.Event != stream.EventReconnect || fr.Reason != "slow_consumer" {
		t.Fatalf("slow consumer got %s %s, want reconnect slow_consumer", fr.Event, fr.Reason)
	}
}

func TestDrainAndRevocation(t *testing.T) {
	f := newFixture(t, nil)
	s := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, "")
	next(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.db.RevokeToken(ctx, f.tok.ID); err != nil {
		t.Fatal(err)
	}
	if e := parseFrame(t, next(t, s).Bytes); e.event != "failure" || !strings.Contains(e.data, `"code":"token_revoked"`) {
		t.Fatalf("after revoke: %+v", e)
	}
	// A token revoked after it was authenticated cannot open a stream.
	if _, err := f.hub.Subscribe(stream.SubscribeRequest{Table: "t", Token: f.tok}); !errors.Is(err, store.ErrTokenRevoked) {
		t.Fatalf("Subscribe with a revoked token: %v", err)
	}

	f.tok, _, _ = f.db.CreateToken(ctx, store.PurposeStream, "", 0)
	s2 := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, "")
	next(t, s2)
	done := make(chan error, 1)
	go func() { done <- f.hub.Drain(ctx, time.Second) }()
	e := parseFrame(t, next(t, s2).Bytes)
	if e.event != "reconnect" || !strings.Contains(e.data, `"reason":"server_draining"`) {
		t.Fatalf("drain: %+v", e)
	}
	s.Close()
	s2.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := f.hub.Subscribe(stream.SubscribeRequest{Table: "t", Token: f.tok}); !errors.Is(err, stream.ErrDraining) {
		t.Fatalf("Subscribe while draining: %v", err)
	}
}

// TestCommitBeforeAResetDoesNotEndALaterStream: a commit of the old activation still in
// the queue of a stream whose baseline is already the new activation is skipped, not
// taken for a reset of the stream's own activation.
func TestCommitBeforeAResetDoesNotEndALaterStream(t *testing.T) {
	f := newFixture(t, nil)
	s := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, "")
	f.ingest(t, 1, 1)
	if _, err := f.db.ResetTable(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	if e := parseFrame(t, next(t, s).Bytes); e.event != "schema" {
		t.Fatalf("first: %+v", e)
	}
	c := f.ingest(t, 2, 1)
	if e := parseFrame(t, next(t, s).Bytes); e.event != "batch" || e.id != f.db.Cursors().Encode(c.Position) {
		t.Fatalf("after the reset: %+v, want the new activation's first batch", e)
	}
}

// TestHubOpenNeedsOpenStore: a Hub without its store, or with one not opened yet (so no
// cursor codec), fails Open instead of failing at the first frame.
func TestHubOpenNeedsOpenStore(t *testing.T) {
	if err := stream.NewHub(nil).Open(); err == nil {
		t.Fatal("Open without DB succeeded")
	}
	db := store.NewDB(filepath.Join(t.TempDir(), "ducktail.duckdb"))
	if err := stream.NewHub(stream.Local{DB: db}).Open(); err == nil {
		t.Fatal("Open with an unopened DB succeeded")
	}
}

// TestReplayPastItsMemoryBudgetEndsWithReconnect: a resumed stream whose next replayed
// frame does not fit MaxReplayBytes, with the frames other streams hold pinned, ends with
// reconnect (reason replay_capacity) instead of growing; once they are released, the
// same cursor replays.
func TestReplayPastItsMemoryBudgetEndsWithReconnect(t *testing.T) {
	// Two replayed frames of 20 rows (about 1.1 KB each) fit; a third does not.
	f := newFixture(t, func(h *stream.Hub) { h.MaxReplayBytes = 3000 })
	first := f.ingest(t, 0, 20)
	f.ingest(t, 20, 20)
	f.ingest(t, 40, 20)
	cursor := f.db.Cursors().Encode(first.Position)
	holder := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, cursor)
	next(t, holder) // schema
	// The holder's first replayed frame is pinned while it is being written.
	if e := parseFrame(t, next(t, holder).Bytes); e.event != "batch" {
		t.Fatalf("holder: %s, want its first replayed batch", e.event)
	}
	other := f.subscribe(t, stream.FramingNDJSON, stream.EncodingArrow, cursor)
	next(t, other) // schema
	end := next(t, other)
	if end.Event != stream.EventReconnect || end.Reason != "replay_capacity" {
		t.Fatalf("over budget: %s %s, want reconnect replay_capacity", end.Event, end.Reason)
	}
	holder.Close()
	again := f.subscribe(t, stream.FramingNDJSON, stream.EncodingArrow, cursor)
	next(t, again) // schema
	if got := next(t, again); got.Event != stream.EventBatch {
		t.Fatalf("after the holder left: %s %s, want a replayed batch", got.Event, got.Reason)
	}
}

// TestReplayOfAFrameLargerThanTheBudgetIsRefreshRequired: a commit whose replayed frame
// is larger than all of MaxReplayBytes can never be replayed, so the stream ends with
// refresh-required (reason replay_limit) rather than reconnect again and again.
func TestReplayOfAFrameLargerThanTheBudgetIsRefreshRequired(t *testing.T) {
	f := newFixture(t, func(h *stream.Hub) { h.MaxReplayBytes = 500 })
	first := f.ingest(t, 0, 1)
	f.ingest(t, 1, 50)
	s := f.subscribe(t, stream.FramingSSE, stream.EncodingArrow, f.db.Cursors().Encode(first.Position))
	next(t, s) // schema
	if end := next(t, s); end.Event != stream.EventRefreshRequired || end.Reason != stream.ReasonReplayLimit {
		t.Fatalf("%s %s, want refresh-required replay_limit", end.Event, end.Reason)
	}
}
