package main

import "testing"

// TestNodesFanOut opens 200 subscribers spread over both stream nodes (half by
// /stream/{token}, half with the token in Authorization, half Arrow IPC, half JSON rows,
// half from the cursor of the empty table's snapshot and half new), then four producers
// commit 30 commits each, two of them into the writer and two through the stream nodes,
// which proxy ingest to it: every subscriber receives every acknowledged commit exactly
// once, in seq order, with its cursor and rows, and nothing else.
func TestNodesFanOut(t *testing.T) {
	tp := startTopology(t, topologyConfig{})
	w := tp.client(tp.writer)
	start := w.createTable(t, "t")
	_, token := tp.streamToken(t, w, "t")
	subs := subscribe(t, spread(200, "sub", "t", token, start, false, tp.nodes...)...)
	waitStarted(t, subs)
	for _, s := range subs {
		if seq := s.startSeq(); seq != 0 {
			t.Fatalf("opened before any commit, its stream starts at seq %d: %s", seq, s)
		}
	}
	l := newLedger()
	producers := []apiClient{w, tp.client(tp.nodes[0]), w, tp.client(tp.nodes[1])}
	if err := produce(l, producers, "t", 4, 30, 0); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, subs, l.last())
	checkAll(t, subs, l.all(t))
}
