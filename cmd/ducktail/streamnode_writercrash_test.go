package main

import (
	"testing"
)

// TestNodesKill9WriterBeforePublish cuts the writer off from NATS (its proxies refuse
// connections; the stream nodes still reach the cluster), commits while it cannot
// publish, so that those commits are acknowledged to their producers and delivered by
// the writer itself but are not in JetStream, then kills the writer with SIGKILL, lets
// it reach NATS again and restarts it: the subscribers of both stream nodes, and those of
// the writer, which resume on it after the restart, receive every acknowledged commit
// exactly once, in seq order, with its rows, and nothing else. Then the same after three
// kills the moment 8 concurrent producers have their acknowledgements, NATS reachable.
func TestNodesKill9WriterBeforePublish(t *testing.T) {
	tp := startTopology(t, topologyConfig{})
	w := tp.client(tp.writer)
	start := w.createTable(t, "t")
	tableID := cursorTableID(start)
	_, token := tp.streamToken(t, w, "t")
	onNodes := spread(20, "node-sub", "t", token, start, true, tp.nodes...)
	onWriter := spread(4, "writer-sub", "t", token, start, false, tp.writer)
	subs := subscribe(t, append(onNodes, onWriter...)...)
	waitStarted(t, subs)
	l := newLedger()
	if err := produce(l, []apiClient{w}, "t", 2, 10, 0); err != nil {
		t.Fatal(err)
	}
	published := l.last()
	waitDelivered(t, subs, published)

	for _, p := range tp.proxies {
		p.cut()
	}
	if err := produce(l, []apiClient{w}, "t", 2, 10, 1_000_000); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, onWriter, l.last())
	if seq := lastPublishedSeq(t, tp.js, tableID); seq != published {
		t.Fatalf("JetStream has the table through seq %d with the writer cut off after seq %d", seq, published)
	}
	for _, s := range onNodes {
		if seq, _ := s.lastSeq(); seq != published {
			t.Fatalf("%s has seq %d, which JetStream does not have", s.name, seq)
		}
	}
	tp.writer.kill()
	for _, p := range tp.proxies {
		p.restore()
	}
	tp.writer.start()
	if err := produce(l, []apiClient{w}, "t", 2, 5, 2_000_000); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, subs, l.last())
	checkAll(t, subs, l.all(t))

	// Then, reaching NATS, killed the moment 8 producers have their acknowledgements,
	// with what the publisher still had queued, three times.
	for round := range 3 {
		if err := produce(l, []apiClient{w}, "t", 8, 5, int64(round+3)*1_000_000); err != nil {
			t.Fatal(err)
		}
		tp.writer.kill()
		t.Logf("killed with JetStream through seq %d of %d acknowledged", lastPublishedSeq(t, tp.js, tableID), l.last())
		tp.writer.start()
	}
	if err := produce(l, []apiClient{w}, "t", 2, 5, 9_000_000); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, subs, l.last())
	checkAll(t, subs, l.all(t))
}
