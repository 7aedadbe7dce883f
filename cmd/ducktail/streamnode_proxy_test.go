package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ducktail/ducktail/internal/ssetest"
)

// TestNodesProxy sends to a stream node what only the writer answers: table listing, a
// query, an ingest and a snapshot are proxied (the writer's answers, the ingest committed
// once and delivered on the other node); a shaped stream and a stream of a token with a
// policy are served with shaped cursors; /metrics is the node's own, with its JetStream
// metrics.
func TestNodesProxy(t *testing.T) {
	tp := startTopology(t, topologyConfig{})
	w, node := tp.client(tp.writer), tp.client(tp.nodes[0])
	start := w.createTable(t, "t")
	_, token := tp.streamToken(t, w, "t")
	sub := subscribe(t, &subscriber{name: "on-" + tp.nodes[1].name, servers: []string{tp.nodes[1].URL}, table: "t", token: token, start: start})
	waitStarted(t, sub)

	l := newLedger()
	node.mustIngest(t, l, "t", 0, 1, 2)
	b, _ := node.must(t, http.StatusOK, "GET", "/v1/tables", "", "")
	if !strings.Contains(string(b), `"t"`) {
		t.Errorf("GET /v1/tables via the node: %s", b)
	}
	b, _ = node.must(t, http.StatusOK, "POST", "/v1/query", "application/json", `{"sql":"SELECT sum(n) AS s FROM t"}`)
	if !strings.Contains(string(b), "3") {
		t.Errorf("POST /v1/query via the node: %s", b)
	}
	if cur := node.snapshotCursor(t, "t"); cursorSeq(cur) != 1 {
		t.Errorf("snapshot via the node: cursor at seq %d, want 1", cursorSeq(cur))
	}
	waitDelivered(t, sub, l.last())
	checkAll(t, sub, l.all(t))

	b, _ = w.must(t, http.StatusCreated, "POST", "/v1/tokens", "application/json", `{"purpose":"stream","table":"t","where":"n > 1"}`)
	var policy struct{ Token string }
	if err := json.Unmarshal(b, &policy); err != nil || policy.Token == "" {
		t.Fatalf("policy token: %s", b)
	}
	for _, c := range []struct{ name, path, token string }{
		{"shaped by bearer", "/v1/tables/t/stream?columns=n&where=" + url.QueryEscape("n > 1"), token},
		{"shaped by path", "/stream/" + token + "?columns=n", token},
		{"policy by bearer", "/v1/tables/t/stream", policy.Token},
		{"policy by path", "/stream/" + policy.Token, policy.Token},
	} {
		var status int
		var first ssetest.Event
		waitUntil(t, 2*time.Minute, c.name+" answered by "+tp.nodes[0].name, func() bool {
			req, _ := http.NewRequest("GET", tp.nodes[0].URL+c.path, nil)
			req.Header.Set("Authorization", "Bearer "+c.token)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := nodesHTTP.Do(req)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			status = resp.StatusCode
			if status == http.StatusOK {
				first, _ = ssetest.NewParser(resp.Body).Next()
			}
			return status != http.StatusUnauthorized
		})
		// A shaped stream's cursors are "r2." (the shape's tag under the MAC).
		if status != http.StatusOK || first.Event != "schema" || !strings.HasPrefix(first.ID, "r2.") {
			t.Errorf("%s: status %d, first event %q id %q; want a shaped stream", c.name, status, first.Event, first.ID)
		}
	}

	b, _ = node.must(t, http.StatusOK, "GET", "/metrics", "", "")
	for _, name := range []string{"ducktail_jetstream_node_messages_total", "ducktail_jetstream_node_pending_messages"} {
		if !strings.Contains(string(b), "\n"+name) {
			t.Errorf("the node's /metrics has no %s", name)
		}
	}
	if strings.Contains(string(b), "ducktail_jetstream_published_total") {
		t.Error("the node's /metrics has the writer's ducktail_jetstream_published_total: proxied?")
	}
}

// TestNodesWriterOverTLS serves the writer with TLS and its self-signed certificate and
// has the stream nodes trust it with --writer-ca (the second node by DUCKTAIL_WRITER_CA):
// a table, a token and commits made through the nodes (proxied to the writer over TLS)
// are streamed by both exactly.
func TestNodesWriterOverTLS(t *testing.T) {
	tp := startTopology(t, topologyConfig{writerTLS: true})
	if !strings.HasPrefix(tp.writer.URL, "https://") {
		t.Fatalf("the writer serves %s, want https", tp.writer.URL)
	}
	via := []apiClient{tp.client(tp.nodes[1]), tp.client(tp.nodes[0])}
	start := via[0].createTable(t, "t")
	_, token := tp.streamToken(t, via[0], "t")
	subs := subscribe(t, spread(4, "sub", "t", token, start, false, tp.nodes...)...)
	waitStarted(t, subs)
	l := newLedger()
	if err := produce(l, via, "t", 2, 5, 0); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, subs, l.last())
	checkAll(t, subs, l.all(t))
}
