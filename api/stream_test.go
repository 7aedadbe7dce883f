package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/ducktail/ducktail/api"
	"github.com/ducktail/ducktail/internal/ssetest"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// openStream opens a stream and returns the response; the caller closes its body.
func (e *env) openStream(t testing.TB, path, token string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// sseStream is an open SSE response read with the WHATWG parser. A watchdog closes the
// response when no event arrives for streamSilence, so a test waiting for an event that
// never comes fails instead of hanging.
type sseStream struct {
	t        testing.TB
	resp     *http.Response
	p        *ssetest.Parser
	watchdog *time.Timer
}

const streamSilence = 30 * time.Second

func (e *env) sse(t testing.TB, path, token string, headers ...string) *sseStream {
	t.Helper()
	resp := e.openStream(t, path, token, headers...)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream %s: status %d: %s", path, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	return &sseStream{t: t, resp: resp, p: ssetest.NewParser(resp.Body), watchdog: time.AfterFunc(streamSilence, func() { resp.Body.Close() })}
}

// next returns the next event that is not a heartbeat.
func (s *sseStream) next() ssetest.Event {
	s.t.Helper()
	for {
		s.watchdog.Reset(streamSilence)
		ev, err := s.p.Next()
		if err != nil {
			s.t.Fatalf("stream ended: %v", err)
		}
		if ev.Event != stream.EventHeartbeat {
			return ev
		}
	}
}

// decodePayload decodes a base64 Arrow IPC stream payload with Arrow Go alone.
func decodePayload(t testing.TB, data string) (*arrow.Schema, []arrow.RecordBatch) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.Fatalf("payload is not base64: %v", err)
	}
	r, err := ipc.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("payload is not an Arrow IPC stream: %v", err)
	}
	var recs []arrow.RecordBatch
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := r.Err(); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return r.Schema(), recs
}

// nValues returns the int64 column "n" of the records.
func nValues(recs []arrow.RecordBatch) []int64 {
	var out []int64
	for _, r := range recs {
		out = append(out, r.Column(0).(*array.Int64).Int64Values()...)
	}
	return out
}

func (e *env) createNumbers(t testing.TB, table string) {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"columns":[{"name":"n","type":"BIGINT"},{"name":"s","type":"VARCHAR"}]}`, table)
	if r := e.do(t, "POST", "/v1/tables", e.admin, []byte(body)); r.status != http.StatusCreated {
		t.Fatalf("create %s: %d %s", table, r.status, r.body)
	}
}

// ingestNumbers commits rows n = first..first+count-1 and returns the commit's cursor.
func (e *env) ingestNumbers(t testing.TB, table string, first, count int) string {
	t.Helper()
	var b bytes.Buffer
	for i := first; i < first+count; i++ {
		fmt.Fprintf(&b, "{\"n\":%d,\"s\":\"row %d\"}\n", i, i)
	}
	var ack struct{ Cursor string }
	e.ingest(t, table, "application/x-ndjson", b.Bytes(), http.StatusCreated).json(t, &ack)
	return ack.Cursor
}

func TestStreamEventsOverTheWire(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "t")
	base := e.ingestNumbers(t, "t", 0, 3)
	tok := e.token(t, store.PurposeStream, "t")
	s := e.sse(t, "/stream/"+tok, "")
	if s.resp.Header.Get("X-Accel-Buffering") != "no" || s.resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("headers %v", s.resp.Header)
	}
	ev := s.next()
	if ev.Event != "schema" || ev.ID != base || ev.Retry <= 0 {
		t.Fatalf("first event %+v, want schema with id %s and a retry field", ev, base)
	}
	if sc, recs := decodePayload(t, ev.Data); sc.NumFields() != 2 || len(recs) != 0 {
		t.Fatalf("schema payload %s with %d batches", sc, len(recs))
	}
	for i := 0; i < 3; i++ {
		cursor := e.ingestNumbers(t, "t", 10*i, i+1)
		ev := s.next()
		if ev.Event != "batch" || ev.ID != cursor {
			t.Fatalf("event %+v, want batch %s", ev, cursor)
		}
		_, recs := decodePayload(t, ev.Data)
		if got := nValues(recs); len(got) != i+1 || got[0] != int64(10*i) {
			t.Fatalf("batch rows %v", got)
		}
	}
	// A schema change: schema event first, then the batch in the new schema.
	if r := e.do(t, "POST", "/v1/tables/t/columns", e.admin, []byte(`{"name":"x","type":"DOUBLE"}`)); r.status != http.StatusCreated {
		t.Fatalf("add column: %d %s", r.status, r.body)
	}
	e.ingest(t, "t", "application/x-ndjson", []byte(`{"n":99,"x":1.5}`), http.StatusCreated)
	if ev := s.next(); ev.Event != "schema" {
		t.Fatalf("after add column: %+v", ev)
	} else if sc, _ := decodePayload(t, ev.Data); sc.NumFields() != 3 {
		t.Fatalf("new schema %s", sc)
	}
	if ev := s.next(); ev.Event != "batch" {
		t.Fatalf("after schema: %+v", ev)
	} else if sc, recs := decodePayload(t, ev.Data); sc.NumFields() != 3 || recs[0].Column(2).(*array.Float64).Value(0) != 1.5 {
		t.Fatalf("batch in new schema: %s", sc)
	}
	// Reset ends the stream with refresh-required, without an id.
	e.do(t, "POST", "/v1/tables/t/reset", e.admin, nil)
	if ev := s.next(); ev.Event != "refresh-required" || ev.Data != `{"reason":"table_reset"}` {
		t.Fatalf("after reset: %+v", ev)
	}
	if _, err := s.p.Next(); err != io.EOF {
		t.Fatalf("after a terminal event the response must end: %v", err)
	}
}

func TestStreamFramings(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "t")
	for _, c := range []struct {
		accept, contentType string
		rs                  bool
	}{
		{"application/x-ndjson", "application/x-ndjson", false},
		{"application/json-seq", "application/json-seq", true},
		{"application/json-seq;q=0.5, application/x-ndjson;q=0.9", "application/x-ndjson", false},
	} {
		resp := e.openStream(t, "/v1/tables/t/stream?encoding=json", e.admin, "Accept: "+c.accept)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != c.contentType {
			t.Fatalf("%s: %d %s", c.accept, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		r := bufio.NewReader(resp.Body)
		readRecord := func() map[string]json.RawMessage {
			t.Helper()
			line, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatal(err)
			}
			if c.rs {
				if line[0] != 0x1e {
					t.Fatalf("json-seq record %q does not start with RS", line)
				}
				line = line[1:]
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("record %q: %v", line, err)
			}
			return m
		}
		if m := readRecord(); string(m["event"]) != `"schema"` || !bytes.Contains(m["data"], []byte(`{"name":"n","type":"BIGINT"}`)) {
			t.Fatalf("schema record %v", m)
		}
		e.ingest(t, "t", "application/x-ndjson", []byte("{\"n\":9007199254740993,\"s\":\"a\\r\\nb\\u0000\"}"), http.StatusCreated)
		m := readRecord()
		if string(m["event"]) != `"batch"` || string(m["data"]) != `{"rows":[["9007199254740993","a\r\nb\u0000"]]}` {
			t.Fatalf("batch record %v", m)
		}
		resp.Body.Close()
	}
}

func TestStreamStatusCodesBeforeTheStream(t *testing.T) {
	e := newEnv(t, options{
		hub: func(h *stream.Hub) { h.MaxStreamsPerToken = 1; h.MaxStreams = 2 },
		api: func(c *api.Config) { c.CORSOrigins = []string{"https://dash.example"} },
	})
	e.createNumbers(t, "t")
	e.createNumbers(t, "u")
	stream1 := e.token(t, store.PurposeStream, "t")
	ingest := e.token(t, store.PurposeIngest, "t")
	_, expiredSecret, _ := e.db.CreateToken(context.Background(), store.PurposeStream, "t", time.Nanosecond)
	time.Sleep(time.Millisecond)
	cases := []struct {
		name, path, token string
		headers           []string
		status            int
	}{
		{"malformed token in path", "/stream/not-a-token", "", nil, 400},
		{"malformed bearer", "/v1/tables/t/stream", "garbage", nil, 400},
		{"no token", "/v1/tables/t/stream", "", nil, 401},
		{"unknown token", "/stream/dt_0123456789abcdef_" + strings.Repeat("a", 52), "", nil, 401},
		{"expired token", "/stream/" + expiredSecret, "", nil, 401},
		{"wrong purpose", "/stream/" + ingest, "", nil, 403},
		{"wrong table", "/v1/tables/u/stream", stream1, nil, 404},
		{"origin not allowed", "/stream/" + stream1, "", []string{"Origin: https://evil.example"}, 403},
		{"Last-Event-ID too long", "/stream/" + stream1, "", []string{"Last-Event-ID: " + strings.Repeat("r", 513)}, 400},
		{"bad encoding", "/stream/" + stream1 + "?encoding=xml", "", nil, 400},
		{"unknown table", "/v1/tables/nope/stream", e.admin, nil, 404},
	}
	for _, c := range cases {
		resp := e.openStream(t, c.path, c.token, c.headers...)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s, want %d problem+json", c.name, resp.StatusCode, body, c.status)
		}
	}
	// Allowed origin, then the per-token limit (429), then admission (503 + Retry-After).
	first := e.openStream(t, "/stream/"+stream1, "", "Origin: https://dash.example")
	if first.StatusCode != 200 || first.Header.Get("Access-Control-Allow-Origin") != "https://dash.example" {
		t.Fatalf("allowed origin: %d %v", first.StatusCode, first.Header)
	}
	if r := e.openStream(t, "/stream/"+stream1, ""); r.StatusCode != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("second stream of one token: %d", r.StatusCode)
	}
	if r := e.openStream(t, "/v1/tables/t/stream", e.admin); r.StatusCode != 200 {
		t.Fatalf("admin stream: %d", r.StatusCode)
	}
	other := e.token(t, store.PurposeStream, "")
	if r := e.openStream(t, "/v1/tables/u/stream", other); r.StatusCode != 503 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("past admission: %d", r.StatusCode)
	}
}

// TestFiftySubscribersDuringIngestSeeEveryLaterCommitExactlyOnce opens 50 subscriptions
// while commits land, and checks that each subscriber sees every commit after its
// baseline exactly once, in order, and nothing at or before it.
func TestFiftySubscribersDuringIngestSeeEveryLaterCommitExactlyOnce(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "t")
	const commits = 120
	cursors := make([]string, commits+1) // cursors[seq]
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= commits; i++ {
			c := e.ingestNumbers(t, "t", i, 1)
			mu.Lock()
			cursors[i] = c
			mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}()
	type result struct {
		baseline string
		ids      []string
		ns       []int64
	}
	results := make([]result, 50)
	var wg sync.WaitGroup
	for i := range results {
		time.Sleep(2 * time.Millisecond)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := e.sse(t, "/v1/tables/t/stream", e.admin)
			results[i].baseline = s.next().ID
			for {
				ev := s.next()
				results[i].ids = append(results[i].ids, ev.ID)
				_, recs := decodePayload(t, ev.Data)
				results[i].ns = append(results[i].ns, nValues(recs)...)
				if ns := results[i].ns; ns[len(ns)-1] == commits {
					return
				}
			}
		}(i)
	}
	<-done
	wg.Wait()
	for i, r := range results {
		base, err := e.db.Cursors().Decode(r.baseline)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.ids) != commits-int(base.Seq) {
			t.Fatalf("subscriber %d (baseline %d) got %d batches, want %d", i, base.Seq, len(r.ids), commits-int(base.Seq))
		}
		for j, id := range r.ids {
			seq := int(base.Seq) + 1 + j
			if id != cursors[seq] || r.ns[j] != int64(seq) {
				t.Fatalf("subscriber %d batch %d: id %s n %d, want seq %d", i, j, id, r.ns[j], seq)
			}
		}
	}
}

func TestServerWriteTimeoutDoesNotCutStreams(t *testing.T) {
	e := newEnv(t, options{
		hub:  func(h *stream.Hub) { h.HeartbeatInterval = 100 * time.Millisecond },
		http: func(s *http.Server) { s.WriteTimeout = 300 * time.Millisecond },
	})
	e.createNumbers(t, "t")
	s := e.sse(t, "/v1/tables/t/stream", e.admin)
	s.next()
	time.Sleep(time.Second)
	cursor := e.ingestNumbers(t, "t", 1, 1)
	if ev := s.next(); ev.ID != cursor {
		t.Fatalf("after the server WriteTimeout: %+v", ev)
	}
}

func TestSlowConsumerEvictedOverTheWire(t *testing.T) {
	// The write deadline is long so that the slow consumer is evicted by its queue bound,
	// not cut by a write that misses its deadline.
	e := newEnv(t, options{
		hub: func(h *stream.Hub) { h.MaxBufferedBatches = 2 },
		api: func(c *api.Config) { c.StreamWriteTimeout = 5 * time.Minute },
	})
	e.createNumbers(t, "t")
	slow := e.sse(t, "/v1/tables/t/stream", e.admin)
	fast := e.sse(t, "/v1/tables/t/stream", e.admin)
	slow.next()
	fast.next()
	// The slow consumer reads nothing while the commits are ingested, which takes longer
	// than streamSilence on a loaded machine: its watchdog waits until it reads again.
	slow.watchdog.Stop()
	big := strings.Repeat("x", 64<<10)
	// 48 commits of 1 MiB each: more than loopback socket buffers hold, so the server's
	// writes to the slow consumer block and its queue passes the bound.
	for i := 0; i < 48; i++ {
		var b bytes.Buffer
		for j := 0; j < 16; j++ {
			fmt.Fprintf(&b, "{\"n\":%d,\"s\":%q}\n", i, big)
		}
		e.ingest(t, "t", "application/x-ndjson", b.Bytes(), http.StatusCreated)
		if ev := fast.next(); ev.Event != "batch" {
			t.Fatalf("fast consumer: %+v", ev)
		}
	}
	// The slow consumer reads now: batches, then reconnect slow_consumer.
	for {
		ev := slow.next()
		if ev.Event == "batch" {
			continue
		}
		if ev.Event != "reconnect" || !strings.Contains(ev.Data, `"reason":"slow_consumer"`) {
			t.Fatalf("slow consumer ended with %+v", ev)
		}
		break
	}
}

func TestDrainSendsReconnect(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "t")
	s := e.sse(t, "/v1/tables/t/stream", e.admin)
	schema := s.next()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go e.hub.Drain(ctx, 500*time.Millisecond)
	ev := s.next()
	var d struct {
		Reason  string
		RetryMS int `json:"retry_ms"`
	}
	json.Unmarshal([]byte(ev.Data), &d)
	// A terminal event carries no id: the last event id stays the schema's.
	if ev.Event != "reconnect" || d.Reason != "server_draining" || d.RetryMS <= 0 || ev.ID != schema.ID {
		t.Fatalf("drain: %+v", ev)
	}
	if r := e.openStream(t, "/v1/tables/t/stream", e.admin); r.StatusCode != 503 {
		t.Fatalf("new stream while draining: %d", r.StatusCode)
	}
	if r := e.do(t, "GET", "/readyz", "", nil); r.status != 503 {
		t.Fatalf("readyz while draining: %d", r.status)
	}
}

func TestMetricsCountStreams(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "t")
	s := e.sse(t, "/v1/tables/t/stream", e.admin)
	s.next()
	e.ingestNumbers(t, "t", 1, 1)
	s.next()
	// The server counts a frame right after writing it, so the client may see the frame
	// first: wait for the counters.
	want := []string{
		"ducktail_streams_active 1",
		`ducktail_stream_frames_total{event="batch"} 1`,
		`ducktail_stream_frames_total{event="schema"} 1`,
		"ducktail_stream_commit_to_write_seconds_count 1",
		"ducktail_ingest_commits_total 1",
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := string(e.do(t, "GET", "/metrics", "", nil).body)
		missing := slices.DeleteFunc(slices.Clone(want), func(w string) bool { return strings.Contains(m, w) })
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %q", missing)
		}
		time.Sleep(10 * time.Millisecond)
	}
	tok := e.token(t, store.PurposeStream, "t")
	e.sse(t, "/stream/"+tok, "").next()
	if m := string(e.do(t, "GET", "/metrics", "", nil).body); strings.Contains(m, tok) {
		t.Fatal("a stream token leaked into /metrics")
	}
}
