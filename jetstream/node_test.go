package jetstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/ducktail/ducktail/api"
	"github.com/ducktail/ducktail/internal/natstest"
	"github.com/ducktail/ducktail/internal/ssetest"
	"github.com/ducktail/ducktail/jetstream"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// node is a stream node in this process: a Source over the writer's stream and catalog,
// a Hub over it, and the node's HTTP API on loopback.
type node struct {
	src  *jetstream.Source
	hub  *stream.Hub
	base string
}

func openNode(t testing.TB, natsURL, writerURL string) *node {
	t.Helper()
	src := jetstream.NewSource()
	src.Logger = quiet
	shapes := store.NewShapeEngine()
	hub := stream.NewHub(src)
	hub.Logger, hub.Shaper = quiet, shapes
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := src.Start(ctx, connect(t, natsURL), hub); err != nil {
		t.Fatal(err)
	}
	if err := hub.Open(); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(writerURL)
	srv := httptest.NewServer(api.NewStreamNode(api.NodeConfig{Config: api.Config{RateLimit: -1, Logger: quiet}, Writer: u, Shapes: shapes}, src, hub))
	t.Cleanup(func() {
		srv.Close()
		hub.Close()
		src.Close()
		shapes.Close()
	})
	return &node{src: src, hub: hub, base: srv.URL}
}

// sub is one SSE subscriber, reading the wire bytes with the WHATWG parser.
type sub struct {
	t    testing.TB
	resp *http.Response
	p    *ssetest.Parser
}

func subscribe(t testing.TB, base, path, token, cursor string) *sub {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if cursor != "" {
		req.Header.Set("Last-Event-ID", cursor)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	s := &sub{t: t, resp: resp, p: ssetest.NewParser(resp.Body)}
	t.Cleanup(func() { resp.Body.Close() })
	return s
}

// next returns the next event that is not a heartbeat.
func (s *sub) next() ssetest.Event {
	s.t.Helper()
	for {
		ev, err := s.p.Next()
		if err != nil {
			s.t.Fatalf("stream ended: %v", err)
		}
		if ev.Event != "heartbeat" {
			return ev
		}
	}
}

// batches reads n batch events and returns the values of their first column, in order.
func (s *sub) batches(n int) []string {
	s.t.Helper()
	var got []string
	for len(got) < n {
		ev := s.next()
		if ev.Event != "batch" {
			s.t.Fatalf("event %q %s, want batch", ev.Event, ev.Data)
		}
		var b struct {
			Rows [][]any `json:"rows"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &b); err != nil {
			s.t.Fatalf("batch %s: %v", ev.Data, err)
		}
		for _, r := range b.Rows {
			got = append(got, fmt.Sprint(r[0]))
		}
	}
	return got
}

func nums(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

// TestStreamNodeServesTheWritersStream runs a writer publishing to JetStream and a stream
// node reading it, in one process: a subscriber on the node gets every commit after its
// baseline once, in order; a cursor of the node resumes on the node, and a snapshot's
// cursor from the writer (through the node's proxy) hands off exactly; a shaped stream is
// proxied to the writer; a revocation on the writer ends the node's stream; a reset
// reaches the node's subscriber as on the writer.
func TestStreamNodeServesTheWritersStream(t *testing.T) {
	ns := natstest.New(t, "n1", 0)
	ns.Start()
	w := openWriter(t, filepath.Join(t.TempDir(), "ducktail.duckdb"), connect(t, ns.URL()), 0, 1, nil)
	c := w.http
	c.must(201, "POST", "/v1/tables", "application/json", `{"name":"t","columns":[{"name":"n","type":"BIGINT"}]}`)
	ingest := func(from, to int) {
		for i := from; i <= to; i++ {
			c.must(201, "POST", "/v1/tables/t/rows", "application/x-ndjson", fmt.Sprintf(`{"n":%d}`, i))
		}
	}
	ingest(1, 3)
	// The publisher sends each commit after its acknowledgement: wait for seq 3 in
	// JetStream, so that the node's baseline below is 3.
	readStream(t, connect(t, ns.URL()), jetstream.TableSubject(jetstream.DefaultSubjectPrefix, 1), jetstream.HeaderSeq, "3")
	_, secret, err := w.stack.Store.CreateToken(context.Background(), store.PurposeStream, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	n := openNode(t, ns.URL(), c.base)
	codec := w.stack.Store.Cursors()

	live := subscribe(t, n.base, "/v1/tables/t/stream?encoding=json", secret, "")
	schema := live.next()
	if schema.Event != "schema" {
		t.Fatalf("first event %q, want schema", schema.Event)
	}
	if p, err := codec.Decode(schema.ID); err != nil || p.Seq < 3 {
		t.Fatalf("baseline cursor %q: %+v %v, want seq >= 3 in the writer's codec", schema.ID, p, err)
	}
	base, _ := codec.Decode(schema.ID)
	ingest(4, 8)
	if got := live.batches(8 - int(base.Seq)); strings.Join(got, ",") != strings.Join(nums(int(base.Seq)+1, 8), ",") {
		t.Fatalf("live on the node: %v", got)
	}

	// A resume on the node from seq 5 replays 6..8 from JetStream, then goes live.
	at5 := codec.Encode(store.Position{TableID: base.TableID, Activation: base.Activation, Seq: 5})
	resumed := subscribe(t, n.base, "/v1/tables/t/stream?encoding=json", secret, at5)
	if ev := resumed.next(); ev.Event != "schema" {
		t.Fatalf("resume: first event %q", ev.Event)
	}
	ingest(9, 9)
	if got := resumed.batches(4); strings.Join(got, ",") != "6,7,8,9" {
		t.Fatalf("resumed on the node: %v", got)
	}

	// Snapshot through the node (proxied to the writer), then stream on the node from its
	// cursor.
	req, _ := http.NewRequest("GET", n.base+"/v1/tables/t/snapshot", nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("snapshot through the node: %v %v", resp, err)
	}
	resp.Body.Close()
	cursor := resp.Header.Get(api.CursorHeader)
	ingest(10, 11)
	handoff := subscribe(t, n.base, "/v1/tables/t/stream?encoding=json", secret, cursor)
	handoff.next() // schema
	if got := handoff.batches(2); strings.Join(got, ",") != "10,11" {
		t.Fatalf("hand-off from the writer's snapshot: %v", got)
	}

	// A shaped stream is the node's own, filtered by its shape engine: rows of n > 12
	// only, with the writer's shaped ("r2.") cursors.
	shaped := subscribe(t, n.base, "/v1/tables/t/stream?encoding=json&where=n%3E12", secret, "")
	if ev := shaped.next(); ev.Event != "schema" || !strings.HasPrefix(ev.ID, "r2.") {
		t.Fatalf("shaped stream on the node: %q %q, want a shaped schema event", ev.Event, ev.ID)
	}
	ingest(12, 14)
	if got := shaped.batches(2); strings.Join(got, ",") != "13,14" {
		t.Fatalf("shaped stream on the node: %v, want [13 14]", got)
	}
	// The writer's shaped snapshot cursor resumes on the node under the same shape: the
	// node compiles it to the same tag.
	req, _ = http.NewRequest("GET", c.base+"/v1/tables/t/snapshot?where=n%3E12", nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/x-ndjson")
	if resp, err = http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("shaped snapshot: %v %v", resp, err)
	}
	resp.Body.Close()
	shapedResume := subscribe(t, n.base, "/v1/tables/t/stream?encoding=json&where=n%3E12", secret, resp.Header.Get(api.CursorHeader))
	if ev := shapedResume.next(); ev.Event != "schema" {
		t.Fatalf("a shaped snapshot's cursor on the node: %q %s", ev.Event, ev.Data)
	}
	ingest(15, 15)
	if got := shapedResume.batches(1); strings.Join(got, ",") != "15" {
		t.Fatalf("shaped hand-off on the node: %v, want [15]", got)
	}

	// A reset on the writer reaches the node's subscriber.
	c.must(200, "POST", "/v1/tables/t/reset", "", "")
	for _, s := range []*sub{live, resumed, handoff} {
		ev := s.next()
		for ev.Event == "batch" {
			ev = s.next()
		}
		if ev.Event != "refresh-required" || !strings.Contains(ev.Data, store.ReasonTableReset) {
			t.Fatalf("after the reset: %q %s", ev.Event, ev.Data)
		}
	}

	// A revocation on the writer ends the node's stream, and the node refuses the token.
	again := subscribe(t, n.base, "/v1/tables/t/stream?encoding=json", secret, "")
	again.next() // schema
	tok, _ := w.stack.Store.Authenticate(secret)
	c.must(204, "DELETE", "/v1/tokens/"+tok.ID, "", "")
	if ev := again.next(); ev.Event != "failure" || !strings.Contains(ev.Data, "token_revoked") {
		t.Fatalf("after the revocation: %q %s", ev.Event, ev.Data)
	}
	req, _ = http.NewRequest("GET", n.base+"/v1/tables/t/stream", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a revoked token on the node: %d", resp.StatusCode)
	}
}

// TestStreamNodeCursorBeyondRetention purges the oldest messages of the stream, as its
// retention would: a cursor whose next commit is gone gets refresh-required
// beyond_retention on the node, one whose next commit is still there resumes exactly, and
// a table with no message left is proxied to the writer; a drop on the writer ends the
// node's stream with table_dropped.
func TestStreamNodeCursorBeyondRetention(t *testing.T) {
	ns := natstest.New(t, "n1", 0)
	ns.Start()
	nc := connect(t, ns.URL())
	w := openWriter(t, filepath.Join(t.TempDir(), "ducktail.duckdb"), nc, 0, 1, nil)
	c := w.http
	c.must(201, "POST", "/v1/tables", "application/json", `{"name":"t","columns":[{"name":"n","type":"BIGINT"}]}`)
	for i := 1; i <= 10; i++ {
		c.must(201, "POST", "/v1/tables/t/rows", "application/x-ndjson", fmt.Sprintf(`{"n":%d}`, i))
	}
	info, _ := w.stack.Store.Table("t")
	subject := jetstream.TableSubject(jetstream.DefaultSubjectPrefix, info.ID)
	readStream(t, nc, subject, jetstream.HeaderSeq, "10")

	// Purge everything before commit 6's message.
	js, _ := njs.New(nc)
	ctx := context.Background()
	s, err := js.Stream(ctx, jetstream.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	var at6 uint64
	for seq := uint64(1); at6 == 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject == subject && m.Header.Get(jetstream.HeaderEvent) == jetstream.EventCommit && m.Header.Get(jetstream.HeaderSeq) == "6" {
			at6 = m.Sequence
		}
	}
	if err := s.Purge(ctx, njs.WithPurgeSequence(at6)); err != nil {
		t.Fatal(err)
	}

	n := openNode(t, ns.URL(), c.base)
	codec := w.stack.Store.Cursors()
	cursor := func(seq int64) string {
		return codec.Encode(store.Position{TableID: info.ID, Activation: info.Head.Activation, Seq: seq})
	}
	old := subscribe(t, n.base, "/v1/tables/t/stream?encoding=json", c.token, cursor(4))
	if ev := old.next(); ev.Event != "refresh-required" || !strings.Contains(ev.Data, jetstream.ReasonBeyondRetention) {
		t.Fatalf("a cursor before the retention: %q %s", ev.Event, ev.Data)
	}
	kept := subscribe(t, n.base, "/v1/tables/t/stream?encoding=json", c.token, cursor(5))
	kept.next() // schema
	if got := kept.batches(5); strings.Join(got, ",") != "6,7,8,9,10" {
		t.Fatalf("a cursor within the retention: %v", got)
	}
	// A table whose every message left the stream is the writer's to serve.
	c.must(201, "POST", "/v1/tables", "application/json", `{"name":"idle","columns":[{"name":"n","type":"BIGINT"}]}`)
	c.must(201, "POST", "/v1/tables/idle/rows", "application/x-ndjson", `{"n":1}`)
	idle, _ := w.stack.Store.Table("idle")
	readStream(t, nc, jetstream.TableSubject(jetstream.DefaultSubjectPrefix, idle.ID), jetstream.HeaderSeq, "1")
	if err := s.Purge(ctx, njs.WithPurgeSubject(jetstream.TableSubject(jetstream.DefaultSubjectPrefix, idle.ID))); err != nil {
		t.Fatal(err)
	}
	proxied := subscribe(t, n.base, "/v1/tables/idle/stream", c.token, "")
	if ev := proxied.next(); ev.Event != "schema" {
		t.Fatalf("a table with no message left in the stream: %q, want the writer's schema event", ev.Event)
	} else if p, err := codec.Decode(ev.ID); err != nil || p.Seq != 1 || p.TableID != idle.ID {
		t.Fatalf("a table with no message left in the stream: baseline %+v %v, want the writer's head", p, err)
	}

	c.must(204, "DELETE", "/v1/tables/t", "", "")
	if ev := kept.next(); ev.Event != "refresh-required" || !strings.Contains(ev.Data, store.ReasonTableDropped) {
		t.Fatalf("after the drop: %q %s", ev.Event, ev.Data)
	}
	if st, _ := (&client{t: t, base: n.base, token: c.token}).do("GET", "/v1/tables/t/stream", "", ""); st != http.StatusNotFound {
		t.Fatalf("a dropped table on the node: %d", st)
	}
}

// TestStreamNodeMetrics scrapes a stream node's /metrics: its own JetStream path and
// stream metrics, and no store metrics (it has no store).
func TestStreamNodeMetrics(t *testing.T) {
	ns := natstest.New(t, "n1", 0)
	ns.Start()
	w := openWriter(t, filepath.Join(t.TempDir(), "ducktail.duckdb"), connect(t, ns.URL()), 0, 1, nil)
	n := openNode(t, ns.URL(), w.http.base)
	resp, err := http.Get(n.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "ducktail_stream_") || strings.Contains(string(body), "ducktail_store_") {
		t.Fatalf("a stream node's /metrics: %d\n%s", resp.StatusCode, body)
	}
}

// TestStreamNodeRevocationDoesNotWaitForCommits blocks the writer's ordered queue of
// table events with a commit larger than the NATS server's max_payload (retried without
// end), then revokes a token: the revocation still reaches the stream node, which ends the
// token's stream, because tokens reach the catalog bucket apart from the table events.
func TestStreamNodeRevocationDoesNotWaitForCommits(t *testing.T) {
	ns := natstest.New(t, "n1", 0)
	ns.Opts.MaxPayload = 16 << 10
	ns.Start()
	w := openWriter(t, filepath.Join(t.TempDir(), "ducktail.duckdb"), connect(t, ns.URL()), 0, 1, nil, func(p *jetstream.Publisher) {
		p.Retry = 20 * time.Millisecond
	})
	c := w.http
	c.must(201, "POST", "/v1/tables", "application/json", `{"name":"t","columns":[{"name":"s","type":"VARCHAR"}]}`)
	_, secret, err := w.stack.Store.CreateToken(context.Background(), store.PurposeStream, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	n := openNode(t, ns.URL(), c.base)
	s := subscribe(t, n.base, "/v1/tables/t/stream?encoding=json", secret, "")
	if ev := s.next(); ev.Event != "schema" {
		t.Fatalf("first event %q", ev.Event)
	}
	big := strings.Repeat("x", 64<<10)
	c.must(201, "POST", "/v1/tables/t/rows", "application/x-ndjson", `{"s":"`+big+`"}`)
	waitFor(t, "the publisher to fail on the large commit", func() bool { return w.pub.Stats().Failures > 0 })

	tok, _ := w.stack.Store.Authenticate(secret)
	c.must(204, "DELETE", "/v1/tokens/"+tok.ID, "", "")
	got := make(chan ssetest.Event, 1)
	go func() { got <- s.next() }()
	select {
	case ev := <-got:
		if ev.Event != "failure" || !strings.Contains(ev.Data, "token_revoked") {
			t.Fatalf("after the revocation: %q %s", ev.Event, ev.Data)
		}
	case <-time.After(time.Minute):
		t.Fatal("the revocation did not reach the stream node while the table events were blocked")
	}
}
