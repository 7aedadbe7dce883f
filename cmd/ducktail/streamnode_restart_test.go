package main

import (
	"slices"
	"testing"
)

// TestNodesKill9StreamNode kills one stream node with SIGKILL while producers commit:
// its subscribers resume on the other node with the cursor of the last event they read
// (Last-Event-ID), and every subscriber of either node receives every acknowledged
// commit exactly once, in seq order, with its rows, and nothing else.
func TestNodesKill9StreamNode(t *testing.T) {
	tp := startTopology(t, topologyConfig{})
	w := tp.client(tp.writer)
	start := w.createTable(t, "t")
	_, token := tp.streamToken(t, w, "t")
	subs := subscribe(t, spread(40, "sub", "t", token, start, true, tp.nodes...)...)
	waitStarted(t, subs)
	l := newLedger()
	produced := make(chan error, 1)
	go func() { produced <- produce(l, []apiClient{w}, "t", 2, 30, 0) }()
	waitDelivered(t, subs, 10)
	tp.nodes[0].kill()
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	if err := produce(l, []apiClient{w}, "t", 2, 10, 1_000_000); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, subs, l.last())
	checkAll(t, subs, l.all(t))
	for _, s := range subs {
		if s.servers[0] != tp.nodes[0].URL {
			continue
		}
		if !slices.ContainsFunc(s.connections, func(c connection) bool { return c.server == tp.nodes[1].URL && c.resumedFrom != "" }) {
			t.Errorf("%s: did not resume on %s: %+v", s.name, tp.nodes[1].name, s.connections)
		}
	}
}

// TestNodesGracefulRestart stops one stream node with SIGTERM while producers commit
// (its streams get reconnect, server_draining), commits while it is down, and starts it
// again on the same address: its subscribers, which stay with it, resume there with
// their cursors, and every subscriber of either node receives every acknowledged commit
// exactly once, in seq order, with its rows, and nothing else.
func TestNodesGracefulRestart(t *testing.T) {
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
	tp.nodes[0].stop()
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	if err := produce(l, []apiClient{w}, "t", 2, 5, 1_000_000); err != nil {
		t.Fatal(err)
	}
	tp.nodes[0].start()
	if err := produce(l, []apiClient{w}, "t", 2, 5, 2_000_000); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, subs, l.last())
	checkAll(t, subs, l.all(t))
	for _, s := range subs {
		if s.servers[0] != tp.nodes[0].URL {
			continue
		}
		if !slices.Contains(s.reconnects, "server_draining") || len(s.connections) < 2 {
			t.Errorf("%s: no reconnect server_draining then resume: %s", s.name, s)
		}
	}
}
