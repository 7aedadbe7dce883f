package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ducktail/ducktail/jetstream"
)

// TestNodesCursorBeyondRetention runs the writer with a 4 s JetStream retention
// (--nats-max-age): once the stream has dropped a table's first commits, a resume on a
// stream node with the cursor of the first commit ends with refresh-required,
// beyond_retention, without a batch (the writer itself replays it from DuckDB), while a
// stream of the node opened before they expired carries on with the next commits
// exactly.
func TestNodesCursorBeyondRetention(t *testing.T) {
	tp := startTopology(t, topologyConfig{nodes: 1, writerFlags: []string{"--nats-max-age", "4s", "--nats-duplicate-window", "1s"}})
	w := tp.client(tp.writer)
	node := tp.nodes[0]
	w.createTable(t, "t")
	_, token := tp.streamToken(t, w, "t")
	l := newLedger()
	first := w.mustIngest(t, l, "t", 0, 1)
	w.mustIngest(t, l, "t", 0, 2)
	third := w.mustIngest(t, l, "t", 0, 3)
	live := &subscriber{name: "live-on-node", servers: []string{node.URL}, table: "t", token: token, json: true, resume: third.cursor}
	subscribe(t, live)
	waitStarted(t, []*subscriber{live})
	waitUntil(t, 3*time.Minute, "JetStream to drop the expired messages", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := tp.js.Stream(ctx, jetstream.DefaultStream)
		if err != nil {
			return false
		}
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
	w.mustIngest(t, l, "t", 0, 4)

	old := &subscriber{name: "old-on-node", servers: []string{node.URL}, table: "t", token: token, resume: first.cursor}
	oldOnWriter := &subscriber{name: "old-on-writer", servers: []string{tp.writer.URL}, table: "t", token: token, resume: first.cursor}
	subscribe(t, old, oldOnWriter)
	waitEnded(t, []*subscriber{old})
	var end struct{ Reason string }
	if err := json.Unmarshal([]byte(old.terminal.Data), &end); err != nil || old.terminal.Event != "refresh-required" || end.Reason != "beyond_retention" {
		t.Errorf("a cursor older than the retention ended with %q %s (%s), want refresh-required beyond_retention", old.terminal.Event, old.terminal.Data, old)
	}
	if len(old.batches) != 0 {
		t.Errorf("a cursor older than the retention got batches: %s", old)
	}
	w.mustIngest(t, l, "t", 0, 5)
	waitDelivered(t, []*subscriber{live, oldOnWriter}, l.last())
	checkAll(t, []*subscriber{live, oldOnWriter}, l.all(t))
}
