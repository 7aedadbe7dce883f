package main

import "testing"

// TestNodesNATSServerRestart stops a NATS server while producers commit, commits while
// it is down, and starts it again on the same store and ports: first the server that
// leads the JetStream stream, then, unless that one also served a stream node's
// connection, a server that does. Every subscriber of both stream nodes receives every
// acknowledged commit exactly once, in seq order, with its rows, and nothing else.
func TestNodesNATSServerRestart(t *testing.T) {
	tp := startTopology(t, topologyConfig{})
	w := tp.client(tp.writer)
	start := w.createTable(t, "t")
	_, token := tp.streamToken(t, w, "t")
	subs := subscribe(t, spread(40, "sub", "t", token, start, false, tp.nodes...)...)
	waitStarted(t, subs)
	l := newLedger()
	restart := func(i int, why string) {
		t.Helper()
		n := tp.nats.servers[i]
		produced := make(chan error, 1)
		go func() { produced <- produce(l, []apiClient{w}, "t", 2, 20, l.last()*1_000_000) }()
		waitDelivered(t, subs, l.last()+5)
		t.Logf("stopping %s, %s", n.Opts.ServerName, why)
		n.Stop()
		if err := <-produced; err != nil {
			t.Fatal(err)
		}
		if err := produce(l, []apiClient{w}, "t", 2, 10, l.last()*1_000_000); err != nil {
			t.Fatal(err)
		}
		waitDelivered(t, subs, l.last())
		n.Start()
		if err := produce(l, []apiClient{w}, "t", 2, 5, l.last()*1_000_000); err != nil {
			t.Fatal(err)
		}
		waitDelivered(t, subs, l.last())
	}
	leader := tp.nats.streamLeader(tp.js)
	servedNode := tp.nats.clientsNamed(leader, streamNodeClient) > 0
	restart(leader, "the stream's leader")
	if !servedNode {
		for i := range tp.nats.servers {
			if tp.nats.clientsNamed(i, streamNodeClient) > 0 {
				restart(i, "which serves a stream node")
				break
			}
		}
	}
	checkAll(t, subs, l.all(t))
}
