package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/ducktail/ducktail/jetstream"
)

// commitTimes is the committed-at of every commit of one table, read from the JetStream
// stream (Ducktail-Committed-At), by seq.
type commitTimes struct {
	mu sync.Mutex
	at map[int64]time.Time
}

// watchCommits reads the commits of table id tableID from the writer's JetStream stream
// with an ordered consumer until the benchmark ends.
func watchCommits(b *testing.B, js njs.JetStream, tableID int64) *commitTimes {
	b.Helper()
	ct := &commitTimes{at: map[int64]time.Time{}}
	ctx := context.Background()
	s, err := js.Stream(ctx, jetstream.DefaultStream)
	if err != nil {
		b.Fatal(err)
	}
	c, err := s.OrderedConsumer(ctx, njs.OrderedConsumerConfig{FilterSubjects: []string{jetstream.TableSubject(jetstream.DefaultSubjectPrefix, tableID)}})
	if err != nil {
		b.Fatal(err)
	}
	cc, err := c.Consume(func(m njs.Msg) {
		h := m.Headers()
		if h.Get(jetstream.HeaderEvent) != jetstream.EventCommit {
			return
		}
		seq, err1 := strconv.ParseInt(h.Get(jetstream.HeaderSeq), 10, 64)
		at, err2 := time.Parse(time.RFC3339Nano, h.Get(jetstream.HeaderCommittedAt))
		if err1 == nil && err2 == nil {
			ct.mu.Lock()
			ct.at[seq] = at
			ct.mu.Unlock()
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cc.Stop)
	return ct
}

// get returns the committed-at of seq, waiting for it to arrive.
func (ct *commitTimes) get(b *testing.B, seq int64) time.Time {
	b.Helper()
	var at time.Time
	waitUntil(b, time.Minute, fmt.Sprintf("commit %d in JetStream", seq), func() bool {
		ct.mu.Lock()
		defer ct.mu.Unlock()
		var ok bool
		at, ok = ct.at[seq]
		return ok
	})
	return at
}

// waitAll waits until every subscriber has received seq, polling every 100 µs so that the
// loop of one commit at a time adds little to each iteration.
func waitAll(b *testing.B, subs []*subscriber, seq int64) {
	deadline := time.Now().Add(time.Minute)
	for _, s := range subs {
		for {
			last, ended := s.lastSeq()
			if last >= seq {
				break
			}
			if ended || time.Now().After(deadline) {
				b.Fatalf("seq %d did not reach %s", seq, s)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// percentile returns the p-th percentile (0 < p < 1) of sorted durations, in ms.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[min(len(sorted)-1, int(p*float64(len(sorted))))].Microseconds()) / 1000
}

// BenchmarkNodeDeliveryLatency measures commit-to-delivery latency through a stream node
// and directly from the writer in the same run: 100 subscribers on the writer and 100 on
// a stream node (Arrow IPC, in this process) read the same commits, against a 3-node NATS
// cluster and an R3 stream; one 1-row commit at a time, the next once every subscriber
// has the previous one. Latency is the arrival of the batch event at a subscriber minus
// the commit's committed-at (stamped by the writer before DuckDB's COMMIT, read from the
// JetStream message; one wall clock on one machine); p50/p99 over every (commit,
// subscriber) pair of each side. added-p50-ms is the node's p50 minus the writer's
// (issue 15: at most 2 ms). node-cpu-us/delivery is the node process's CPU time
// (/proc/PID/stat) over the loop divided by its deliveries: its JetStream consumer and
// fan-out.
func BenchmarkNodeDeliveryLatency(b *testing.B) {
	const subscribers = 100
	tp := startTopology(b, topologyConfig{nodes: 1})
	w := tp.client(tp.writer)
	start := w.createTable(b, "t")
	_, token := tp.streamToken(b, w, "t")
	times := watchCommits(b, tp.js, cursorTableID(start))
	node := tp.nodes[0]
	direct := spread(subscribers, "writer", "t", token, "", false, tp.writer)
	viaNode := spread(subscribers, "node", "t", token, "", false, node)
	subs := append(direct, viaNode...)
	for _, s := range subs {
		s.json = false
	}
	subscribe(b, subs...)
	waitStarted(b, subs)
	var n int64
	commitOne := func() int64 {
		cm, err := w.ingest("t", 0, []int64{n})
		if err != nil {
			b.Fatal(err)
		}
		n++
		waitAll(b, subs, cm.seq)
		return cm.seq
	}
	first := commitOne() + 1
	cpu := node.cpuTime()
	b.ResetTimer()
	for range b.N {
		commitOne()
	}
	b.StopTimer()
	cpu = node.cpuTime() - cpu
	p50 := map[bool]float64{}
	for _, onNode := range []bool{false, true} {
		group, name := direct, "writer"
		if onNode {
			group, name = viaNode, "node"
		}
		var lat []time.Duration
		for _, s := range group {
			s.mu.Lock()
			for _, d := range s.batches {
				if d.seq >= first {
					lat = append(lat, d.at.Sub(times.get(b, d.seq)))
				}
			}
			s.mu.Unlock()
		}
		slices.Sort(lat)
		p50[onNode] = percentile(lat, 0.50)
		b.ReportMetric(p50[onNode], name+"-p50-ms")
		b.ReportMetric(percentile(lat, 0.99), name+"-p99-ms")
		if onNode {
			b.ReportMetric(float64(cpu.Microseconds())/float64(len(lat)), "node-cpu-us/delivery")
		}
	}
	b.ReportMetric(p50[true]-p50[false], "added-p50-ms")
}

// BenchmarkNodePublishCost measures the writer's CPU per commit with and without
// JetStream publishing, in the same loop: two writer processes, `serve` and `serve
// --nats-url … --nats-replicas 3` against a new 3-node cluster, each with one DuckDB
// thread, take 1-row commits over HTTP in turn, one at a time, b.N each, so that whatever
// else the machine does lands on both alike. {without-nats,jetstream-r3}-cpu-us/commit is
// each one's CPU time (/proc/PID/stat) over the loop, until JetStream has the last
// commit, divided by b.N; publish-cpu-us/commit is the difference.
func BenchmarkNodePublishCost(b *testing.B) {
	// One DuckDB thread: with two on two busy cores, DuckDB's threads spin on each small
	// commit's tasks, and that CPU would hide the publisher's.
	plainDir, natsDir := b.TempDir(), b.TempDir()
	cluster := startNATSCluster(b)
	js := cluster.jetStream()
	plain := startServe(b, "without-nats", nil, append([]string{"--data-dir", plainDir, "--threads", "1"}, serverFlags...)...)
	publishing := startServe(b, "jetstream-r3", nil, append([]string{"--data-dir", natsDir, "--threads", "1",
		"--nats-url", cluster.urls(), "--nats-replicas", "3"}, serverFlags...)...)
	writers := []apiClient{writerClient(b, plain, plainDir), writerClient(b, publishing, natsDir)}
	start := writers[1].createTable(b, "t")
	writers[0].createTable(b, "t")
	var warm commit
	for i := range 20 {
		for _, w := range writers {
			var err error
			if warm, err = w.ingest("t", 0, []int64{int64(i)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The stream is created and caught up with before the clock starts.
	waitUntil(b, time.Minute, "the warm-up commits in JetStream", func() bool {
		return lastPublishedSeq(b, js, cursorTableID(start)) >= warm.seq
	})
	cpu := []time.Duration{plain.cpuTime(), publishing.cpuTime()}
	b.ResetTimer()
	for i := range b.N {
		for _, w := range writers {
			var err error
			if warm, err = w.ingest("t", 0, []int64{int64(i)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	for lastPublishedSeq(b, js, cursorTableID(start)) < warm.seq {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	without := float64((plain.cpuTime() - cpu[0]).Microseconds()) / float64(b.N)
	with := float64((publishing.cpuTime() - cpu[1]).Microseconds()) / float64(b.N)
	b.ReportMetric(without, "without-nats-cpu-us/commit")
	b.ReportMetric(with, "jetstream-r3-cpu-us/commit")
	b.ReportMetric(with-without, "publish-cpu-us/commit")
	plain.stop()
	publishing.stop()
}

// writerClient returns a client of a writer process started with --data-dir dir, with
// the admin token it wrote there.
func writerClient(b *testing.B, writer *serveProcess, dir string) apiClient {
	admin, err := os.ReadFile(filepath.Join(dir, adminTokenFile))
	if err != nil {
		b.Fatal(err)
	}
	return apiClient{base: writer.URL, token: strings.TrimSpace(string(admin))}
}

// batchCounter is a light SSE reader for benchmarks: it counts the batch events of one
// stream (lines "event: batch") without decoding them.
type batchCounter struct {
	mu      sync.Mutex
	batches int64
	started bool
	err     error
}

// count reads the stream of table t on server from cursor until ctx ends.
func (c *batchCounter) count(ctx context.Context, server, token, cursor string) {
	req, _ := http.NewRequestWithContext(ctx, "GET", server+"/stream/"+token+"?cursor="+cursor, nil)
	resp, err := nodesHTTP.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	if err != nil {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		c.mu.Lock()
		c.started = true
		if sc.Text() == "event: batch" {
			c.batches++
		}
		c.mu.Unlock()
	}
}

func (c *batchCounter) state() (int64, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.batches, c.started, c.err
}

// BenchmarkNodeSaturation measures a stream node's fan-out under load: 8 producers (in
// this process) post b.N 1-row JSON commits in all to the writer as fast as they are
// acknowledged, while 100 or 1,000 SSE streams of the node (light readers in this
// process that count batch events) read every commit. deliveries/s is batch events
// received ÷ wall time until the last arrived; cpu-us/delivery is the node process's CPU
// time (/proc/PID/stat) over that time ÷ deliveries; commits/s the writer's rate.
func BenchmarkNodeSaturation(b *testing.B) {
	tp := startTopology(b, topologyConfig{nodes: 1})
	w := tp.client(tp.writer)
	w.createTable(b, "t")
	_, token := tp.streamToken(b, w, "t")
	node := tp.nodes[0]
	var base int64
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			from := w.snapshotCursor(b, "t")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			counters := make([]*batchCounter, n)
			for i := range counters {
				counters[i] = &batchCounter{}
				go counters[i].count(ctx, node.URL, token, from)
			}
			waitUntil(b, 3*time.Minute, "every stream to start", func() bool {
				for _, c := range counters {
					if _, started, err := c.state(); err != nil {
						b.Fatal(err)
					} else if !started {
						return false
					}
				}
				return true
			})
			cpu := node.cpuTime()
			began := time.Now()
			b.ResetTimer()
			l := newLedger()
			producers := min(8, b.N)
			if err := produceN(l, w, producers, b.N, base); err != nil {
				b.Fatal(err)
			}
			committed := time.Since(began)
			base += int64(b.N) * 10
			waitUntil(b, 3*time.Minute, "every commit at every stream", func() bool {
				for _, c := range counters {
					if got, _, _ := c.state(); got < int64(b.N) {
						return false
					}
				}
				return true
			})
			b.StopTimer()
			elapsed := time.Since(began)
			cpu = node.cpuTime() - cpu
			deliveries := float64(b.N) * float64(n)
			b.ReportMetric(deliveries/elapsed.Seconds(), "deliveries/s")
			b.ReportMetric(float64(cpu.Microseconds())/deliveries, "cpu-us/delivery")
			b.ReportMetric(float64(b.N)/committed.Seconds(), "commits/s")
		})
	}
}

// produceN commits total 1-row commits into table t from producers goroutines, as fast
// as they are acknowledged.
func produceN(l *ledger, w apiClient, producers, total int, base int64) error {
	errs := make(chan error, producers)
	var wg sync.WaitGroup
	for i := range producers {
		wg.Go(func() {
			for j := i; j < total; j += producers {
				cm, err := w.ingest("t", i, []int64{base + int64(j)})
				if err == nil {
					err = l.add(cm)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
