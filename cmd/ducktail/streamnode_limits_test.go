package main

import (
	"net/http"
	"testing"
)

// TestNodesLimits runs the writer and a stream node with the same stream limits
// (--max-replay-commits 5, --max-streams-per-token 2): a resume that would replay 8
// commits ends on the node as on the writer (refresh-required, replay_limit), and a
// third open stream of one token is refused on the node as on the writer (429).
func TestNodesLimits(t *testing.T) {
	limits := []string{"--max-replay-commits", "5", "--max-streams-per-token", "2"}
	tp := startTopology(t, topologyConfig{nodes: 1, writerFlags: limits, nodeFlags: limits})
	w := tp.client(tp.writer)
	servers := []*serveProcess{tp.writer, tp.nodes[0]}
	start := w.createTable(t, "t")
	_, token := tp.streamToken(t, w, "t")
	// A node serves a resume from the commits it has received: the probe holds the test
	// until the node has all ten, or the node would replay fewer and stream the rest live.
	probe := subscribe(t, spread(1, "probe", "t", token, start, false, tp.nodes[0])...)
	waitStarted(t, probe)
	l := newLedger()
	for n := range int64(10) {
		w.mustIngest(t, l, "t", 0, n)
	}
	waitDelivered(t, probe, l.last())
	probe[0].stop()
	from := l.all(t)[1].cursor
	replays := spread(2, "replay", "t", token, "", false, servers...)
	for _, s := range replays {
		s.resume = from
	}
	subscribe(t, replays...)
	waitEnded(t, replays)
	checkSameEnd(t, replays, tp.writer.URL)
	if replays[0].terminal.Event != "refresh-required" || len(replays[1].batches) != 0 {
		t.Errorf("a replay of 8 commits past --max-replay-commits 5: %s; %s", replays[0], replays[1])
	}

	for _, p := range servers {
		// Not tp.streamToken: its probe would count against the limit until the
		// server notices it closed.
		_, other := w.streamToken(t, "t")
		open := spread(2, p.name+"-open", "t", other, "", false, p)
		subscribe(t, open...)
		waitStarted(t, open)
		for _, s := range open {
			if s.isEnded() {
				t.Fatalf("%s: one of two streams of a token limited to 2 was refused: %s", p.name, s)
			}
		}
		if status := streamStatus(p.URL, "t", other); status != http.StatusTooManyRequests {
			t.Errorf("%s: a third stream of a token limited to 2: status %d, want 429", p.name, status)
		}
	}
}
