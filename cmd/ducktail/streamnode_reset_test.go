package main

import (
	"net/http"
	"testing"
)

// TestNodesResetAndDrop resets a table, then drops it, each while subscribers of the
// writer and of both stream nodes read it: every subscriber receives every acknowledged
// commit of the activation exactly once, in order, and then the same terminal event
// (event and data) as the writer's subscribers; a resume with a cursor of the ended
// activation ends on each node as it does on the writer.
func TestNodesResetAndDrop(t *testing.T) {
	tp := startTopology(t, topologyConfig{})
	w := tp.client(tp.writer)
	servers := append([]*serveProcess{tp.writer}, tp.nodes...)
	start := w.createTable(t, "t")
	_, token := tp.streamToken(t, w, "t")

	first := subscribe(t, spread(12, "first", "t", token, start, false, servers...)...)
	waitStarted(t, first)
	l := newLedger()
	if err := produce(l, []apiClient{w, tp.client(tp.nodes[0])}, "t", 2, 5, 0); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, first, l.last())
	old := l.all(t)
	w.must(t, http.StatusOK, "POST", "/v1/tables/t/reset", "", "")
	waitEnded(t, first)
	checkAll(t, first, old)
	checkSameEnd(t, first, tp.writer.URL)

	resumed := spread(6, "resumed", "t", token, "", false, servers...)
	for _, s := range resumed {
		s.resume = old[3].cursor
	}
	subscribe(t, resumed...)
	waitEnded(t, resumed)
	checkSameEnd(t, resumed, tp.writer.URL)

	second := subscribe(t, spread(12, "second", "t", token, w.snapshotCursor(t, "t"), false, servers...)...)
	waitStarted(t, second)
	l = newLedger()
	if err := produce(l, []apiClient{w, tp.client(tp.nodes[1])}, "t", 2, 3, 0); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, second, l.last())
	w.must(t, http.StatusNoContent, "DELETE", "/v1/tables/t", "", "")
	waitEnded(t, second)
	checkAll(t, second, l.all(t))
	checkSameEnd(t, second, tp.writer.URL)
}

// checkSameEnd fails the test unless every subscriber ended with a terminal event equal
// (event and data) to that of the subscribers of reference, logging it.
func checkSameEnd(t testing.TB, subs []*subscriber, reference string) {
	t.Helper()
	var want *subscriber
	for _, s := range subs {
		if s.servers[0] == reference {
			want = s
			break
		}
	}
	if want == nil || want.terminal.Event == "" {
		t.Fatalf("no terminal event at the reference %s", reference)
	}
	t.Logf("terminal event at %s: %s %s", reference, want.terminal.Event, want.terminal.Data)
	for _, s := range subs {
		if s.terminal.Event != want.terminal.Event || s.terminal.Data != want.terminal.Data {
			t.Errorf("%s (%s) ended with %q %s (status %d), the writer's with %q %s", s.name, s.servers[0], s.terminal.Event, s.terminal.Data, s.status, want.terminal.Event, want.terminal.Data)
		}
	}
}
