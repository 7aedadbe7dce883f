package jetstream_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ducktail/ducktail/internal/natstest"
	"github.com/ducktail/ducktail/jetstream"
)

// TestClusterR3SurvivesANodeRestart publishes to an R3 stream on a 3-node JetStream
// cluster on loopback, stops one node mid-ingest and starts it again: the stream holds
// every acknowledged commit exactly once, in seq order, read by a client of each node.
func TestClusterR3SurvivesANodeRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node NATS cluster")
	}
	routes := []int{natstest.FreePort(t), natstest.FreePort(t), natstest.FreePort(t)}
	nodes := make([]*natstest.Server, 3)
	urls := make([]string, 3)
	for i := range nodes {
		nodes[i] = natstest.New(t, fmt.Sprintf("n%d", i+1), routes[i], routes...)
		urls[i] = nodes[i].URL()
	}
	for _, n := range nodes {
		n.Start()
	}
	nc := connect(t, strings.Join(urls, ","))
	w := openWriter(t, filepath.Join(t.TempDir(), "ducktail.duckdb"), nc, 0, 3, nil, func(p *jetstream.Publisher) {
		p.Retry, p.PublishTimeout = 50*time.Millisecond, time.Second
	})
	c := w.http
	c.must(201, "POST", "/v1/tables", "application/json", `{"name":"t","columns":[{"name":"n","type":"BIGINT"}]}`)
	subject := jetstream.TableSubject(jetstream.DefaultSubjectPrefix, 1)
	const total = 30
	for n := 1; n <= total; n++ {
		c.must(201, "POST", "/v1/tables/t/rows", "application/x-ndjson", fmt.Sprintf(`{"n":%d}`, n))
		switch n {
		case 10:
			readStream(t, nc, subject, jetstream.HeaderSeq, "10")
			nodes[0].Stop()
		case 20:
			nodes[0].Start()
		}
	}
	for _, u := range urls {
		msgs := readStream(t, connect(t, u), subject, jetstream.HeaderSeq, strconv.Itoa(total))
		if len(msgs) != 1+total {
			t.Fatalf("via %s: %d messages, want the schema and %d commits", u, len(msgs), total)
		}
		for i, m := range msgs[1:] {
			if m.get(jetstream.HeaderSeq) != strconv.Itoa(i+1) {
				t.Fatalf("via %s: message %d is %v", u, i+1, m.header)
			}
			if rows := column(t, m.data, "n"); len(rows) != 1 || rows[0] != int64(i+1) {
				t.Fatalf("via %s: commit %d rows %v", u, i+1, rows)
			}
		}
	}
}
