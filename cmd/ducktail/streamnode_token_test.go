package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestNodesRevokedToken revokes, on the writer, a stream token (created through a
// stream node, which proxies token requests to the writer) while subscribers of the
// writer and of both stream nodes read with it: each stream receives every acknowledged
// commit exactly once, then ends with the writer's terminal event, failure
// token_revoked; a new request with the token gets 401 from every server, by path and
// by bearer. How long after the revocation was sent each stream ended is logged (issue
// 15 asks for within 1 s on every node).
func TestNodesRevokedToken(t *testing.T) {
	tp := startTopology(t, topologyConfig{})
	w := tp.client(tp.writer)
	servers := append([]*serveProcess{tp.writer}, tp.nodes...)
	start := w.createTable(t, "t")
	id, token := tp.streamToken(t, tp.client(tp.nodes[1]), "t")
	subs := subscribe(t, spread(12, "sub", "t", token, start, false, servers...)...)
	waitStarted(t, subs)
	l := newLedger()
	if err := produce(l, []apiClient{w}, "t", 2, 3, 0); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, subs, l.last())
	revoked := time.Now()
	w.must(t, http.StatusNoContent, "DELETE", "/v1/tokens/"+id, "", "")
	waitEnded(t, subs)
	checkAll(t, subs, l.all(t))
	checkSameEnd(t, subs, tp.writer.URL)
	var end struct{ Code string }
	if err := json.Unmarshal([]byte(subs[0].terminal.Data), &end); err != nil || subs[0].terminal.Event != "failure" || end.Code != "token_revoked" {
		t.Errorf("the writer's streams ended with %s %s, want failure token_revoked", subs[0].terminal.Event, subs[0].terminal.Data)
	}
	slowest := map[string]time.Duration{}
	for _, s := range subs {
		slowest[s.servers[0]] = max(slowest[s.servers[0]], s.endedAt.Sub(revoked))
	}
	for _, p := range servers {
		t.Logf("%s: the last stream ended %s after the revocation was sent", p.name, slowest[p.URL].Round(time.Millisecond))
		for _, byPath := range []bool{true, false} {
			s := &subscriber{name: p.name + " after revocation", servers: []string{p.URL}, table: "t", token: token, byPath: byPath}
			subscribe(t, s)
			waitEnded(t, []*subscriber{s})
			if s.status != http.StatusUnauthorized {
				t.Errorf("%s, by path %v: status %d, want 401 (%s)", p.name, byPath, s.status, s)
			}
		}
	}
}

// TestNodesNewTokenIsValidAtOnce creates stream tokens on the writer and opens a stream
// with each on a stream node right after the writer's 201: the writer has given the
// token out, so every node must accept it (read your writes), not answer 401 because its
// copy of the catalog lags.
func TestNodesNewTokenIsValidAtOnce(t *testing.T) {
	tp := startTopology(t, topologyConfig{})
	w := tp.client(tp.writer)
	w.createTable(t, "t")
	tp.streamToken(t, w, "t")
	var refused []string
	const tokens = 10
	for i := range tokens {
		_, token := w.streamToken(t, "t")
		node := tp.nodes[i%2]
		if status := streamStatus(node.URL, "t", token); status != http.StatusOK {
			refused = append(refused, fmt.Sprintf("%s: %d", node.name, status))
		}
	}
	if len(refused) > 0 {
		t.Errorf("%d of %d tokens refused by a stream node right after the writer created them: %v", len(refused), tokens, refused)
	}
}
