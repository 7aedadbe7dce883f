package main

import "testing"

// TestNodesNATSServerRestart stops the NATS server that leads the JetStream stream while
// producers commit, commits while it is down, and starts it again on the same store and
// ports: every subscriber of both stream nodes receives every acknowledged commit
// exactly once, in seq order, with its rows, and nothing else.
func TestNodesNATSServerRestart(t *testing.T) {
	tp := startTopology(t, topologyConfig{})
	w := tp.client(tp.writer)
	start := w.createTable(t, "t")
	_, token := tp.streamToken(t, w, "t")
	subs := subscribe(t, spread(40, "sub", "t", token, start, false, tp.nodes...)...)
	waitStarted(t, subs)
	l := newLedger()
	produced := make(chan error, 1)
	go func() { produced <- produce(l, []apiClient{w}, "t", 2, 30, 0) }()
	waitDelivered(t, subs, 10)
	leader := tp.nats.servers[tp.nats.streamLeader(tp.js)]
	t.Logf("stopping %s, the stream's leader", leader.opts.ServerName)
	leader.stop()
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	if err := produce(l, []apiClient{w}, "t", 2, 10, 1_000_000); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, subs, l.last())
	leader.start()
	if err := produce(l, []apiClient{w}, "t", 2, 10, 2_000_000); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, subs, l.last())
	checkAll(t, subs, l.all(t))
}
