package api_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// The benchmarks report their own metrics (rows/s, commits/s, latency percentiles in
// ms, bytes per subscriber); `make bench` runs them and writes docs/benchmarks.md.

func benchEnv(b *testing.B, o options) *env {
	e := newEnv(b, o)
	e.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	return e
}

func (e *env) createFlights(b *testing.B, table string) {
	b.Helper()
	if _, err := e.db.CreateTable(context.Background(), table, flightColumns); err != nil {
		b.Fatal(err)
	}
}

// post sends one ingest request and fails unless it is acknowledged.
func (e *env) post(b testing.TB, table, contentType string, body []byte) {
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/tables/"+table+"/rows", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.admin)
	req.Header.Set("Content-Type", contentType)
	resp, err := e.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b.Fatalf("ingest: status %d", resp.StatusCode)
	}
}

func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[min(len(ds)-1, int(float64(len(ds))*p))].Microseconds()) / 1000
}

// BenchmarkIngestHTTP measures ingest over loopback HTTP of 100k-row, 10-column commits
// of real BTS flights rows, per body format, and the in-process store.Append path (Arrow
// view insert in 122,880-row batches) on the same rows.
func BenchmarkIngestHTTP(b *testing.B) {
	rec := loadFlights(b, 100_000)
	bodies := []struct {
		name, contentType string
		body              []byte
	}{
		{"arrow", "application/vnd.apache.arrow.stream", arrowBody(b, rec)},
		{"csv", "text/csv", csvBody(rec)},
		{"json", "application/json", jsonBody(rec, false)},
		{"ndjson", "application/x-ndjson", jsonBody(rec, true)},
	}
	for _, c := range bodies {
		b.Run(c.name, func(b *testing.B) {
			e := benchEnv(b, options{})
			e.createFlights(b, "flights")
			b.SetBytes(int64(len(c.body)))
			b.ResetTimer()
			for range b.N {
				e.post(b, "flights", c.contentType, c.body)
			}
			b.ReportMetric(float64(rec.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
	b.Run("in-process", func(b *testing.B) {
		big := loadFlights(b, 122_880)
		e := benchEnv(b, options{})
		e.createFlights(b, "flights")
		info, _ := e.db.Table("flights")
		b.ResetTimer()
		for range b.N {
			if _, err := e.db.Append(context.Background(), store.Batch{Table: "flights", SchemaVersion: info.Schema.Version, Record: big}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(big.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}

// BenchmarkSmallCommits measures 100-row JSON commits from 1 and from 16 concurrent
// clients: commits/s and the latency of each acknowledged ingest request.
func BenchmarkSmallCommits(b *testing.B) {
	rec := loadFlights(b, 100)
	body := jsonBody(rec, false)
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			e := benchEnv(b, options{})
			e.createFlights(b, "flights")
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						start := time.Now()
						e.post(b, "flights", "application/json", body)
						lat[i] = time.Since(start)
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
			b.ReportMetric(percentile(lat, 0.50), "p50-ms")
			b.ReportMetric(percentile(lat, 0.99), "p99-ms")
		})
	}
}

// benchSubscriber reads an SSE stream over a raw connection and reports the arrival
// time of each batch, by seq.
type benchSubscriber struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialStream(b testing.TB, addr, token, table string) *benchSubscriber {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /v1/tables/%s/stream HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", table, token)
	s := &benchSubscriber{conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}
	// Headers, then the schema event.
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		if strings.HasPrefix(line, "event: schema") {
			break
		}
	}
	return s
}

// readBatches calls fn(seq, arrival) for each batch event until fn returns false or the
// connection ends. Batches arrive in seq order, the first being seq first; the client
// counts them rather than decoding cursors, so that the benchmark measures the server.
func (s *benchSubscriber) readBatches(first int64, fn func(seq int64, at time.Time) bool) {
	seq := first
	for {
		line, err := s.r.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
		if bytes.HasPrefix(line, []byte("event: batch")) {
			if !fn(seq, time.Now()) {
				return
			}
			seq++
		}
	}
}

// publishClock is a store.Publisher in front of the hub that notes when each commit was
// published, that is when DuckDB's commit returned.
type publishClock struct {
	next store.Publisher
	mu   sync.Mutex
	at   map[int64]time.Time
}

func (c *publishClock) Publish(e store.Event) {
	if e, ok := e.(store.CommitEvent); ok {
		c.mu.Lock()
		c.at[e.Position.Seq] = time.Now()
		c.mu.Unlock()
	}
	c.next.Publish(e)
}

func (c *publishClock) published(seq int64) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at[seq]
}

// BenchmarkFanOut measures commit-to-delivery latency over loopback HTTP with 1, 100 and
// 1,000 subscribers: from the moment DuckDB's commit of a 100-row commit returned to the
// arrival of its batch event at each subscriber (read off the wire by a raw client); the
// next commit is ingested when every subscriber has the previous one. The subscribers run
// in a child process (TestFanOutClientsChild), as consumers do: sharing the server's Go
// scheduler would queue every reader woken by the network behind all runnable writers.
// Both processes share the machine's cores, so the clients' reads still cost the server.
func BenchmarkFanOut(b *testing.B) {
	rec := loadFlights(b, 100)
	body := jsonBody(rec, false)
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			clock := &publishClock{at: map[int64]time.Time{}}
			e := benchEnv(b, options{
				db:  func(db *store.DB) { db.Publisher = clock },
				hub: func(h *stream.Hub) { h.MaxStreamsPerToken = 20000; clock.next = h },
			})
			e.createFlights(b, "flights")
			cmd := exec.Command(os.Args[0], "-test.run=^TestFanOutClientsChild$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d|%s|%d", fanOutClientsEnv, e.srv.Listener.Addr(), n, e.admin, b.N))
			out, _ := cmd.StdoutPipe()
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			defer cmd.Wait()
			lines := bufio.NewScanner(out)
			lines.Buffer(nil, 1<<20)
			expect := func(want string) {
				b.Helper()
				if !lines.Scan() || lines.Text() != want {
					b.Fatalf("client process: got %q, want %q (%v)", lines.Text(), want, lines.Err())
				}
			}
			expect("READY")
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				e.post(b, "flights", "application/json", body)
				expect(strconv.Itoa(i))
			}
			b.StopTimer()
			lat := make([]time.Duration, 0, n*b.N)
			for lines.Scan() && lines.Text() != "END" {
				seq, at, _ := strings.Cut(lines.Text(), " ")
				s, err1 := strconv.ParseInt(seq, 10, 64)
				ns, err2 := strconv.ParseInt(at, 10, 64)
				if err1 != nil || err2 != nil {
					b.Fatalf("client process: %q", lines.Text())
				}
				lat = append(lat, time.Unix(0, ns).Sub(clock.published(s)))
			}
			if len(lat) != n*b.N {
				b.Fatalf("client process reported %d deliveries, want %d", len(lat), n*b.N)
			}
			b.ReportMetric(percentile(lat, 0.50), "p50-ms")
			b.ReportMetric(percentile(lat, 0.99), "p99-ms")
		})
	}
}

// childSpec returns the "|"-separated fields of the environment variable env that makes
// the test binary the client process of a benchmark, and skips the test when it is unset.
func childSpec(t *testing.T, env, benchmark string) []string {
	spec := os.Getenv(env)
	if spec == "" {
		t.Skip("run by " + benchmark)
	}
	return strings.Split(spec, "|")
}

// fanOutClientsEnv makes the test binary the client process of BenchmarkFanOut:
// "<address>|<subscribers>|<token>|<commits>".
const fanOutClientsEnv = "DUCKTAIL_BENCH_FANOUT_CLIENTS"

// TestFanOutClientsChild is the client process of BenchmarkFanOut. It opens the
// subscribers, prints READY, prints each sequence once every subscriber has its batch
// event, and after the last commit prints "<seq> <arrival, Unix ns>" per delivery, then
// END: the wall clock is the one clock the two processes share.
func TestFanOutClientsChild(t *testing.T) {
	parts := childSpec(t, fanOutClientsEnv, "BenchmarkFanOut")
	n, _ := strconv.Atoi(parts[1])
	commits, _ := strconv.Atoi(parts[3])
	subs := make([]*benchSubscriber, n)
	for i := range subs {
		subs[i] = dialStream(t, parts[0], parts[2], "flights")
	}
	readFanOut(t, subs, commits)
}

// readFanOut is the protocol of a fan-out client process: it prints READY, then the seq
// of each of the first commits commits once every subscriber in subs received it, then
// every arrival as "<seq> <unix-nanoseconds>" lines and END.
func readFanOut(t *testing.T, subs []*benchSubscriber, commits int) {
	n := len(subs)
	fmt.Println("READY")
	arrivals := make([][]int64, n)
	got := make([]atomic.Int64, commits+1)
	done := make(chan int64, commits)
	var wg sync.WaitGroup
	for i, s := range subs {
		arrivals[i] = make([]int64, 0, commits)
		wg.Go(func() {
			s.readBatches(1, func(seq int64, at time.Time) bool {
				arrivals[i] = append(arrivals[i], at.UnixNano())
				if got[seq].Add(1) == int64(n) {
					done <- seq
				}
				return seq < int64(commits)
			})
		})
	}
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	for range commits {
		select {
		case seq := <-done:
			fmt.Println(seq)
		case <-ended:
			if len(done) == 0 {
				t.Fatal("a stream ended before the last commit")
			}
			fmt.Println(<-done)
		}
	}
	w := bufio.NewWriter(os.Stdout)
	for _, a := range arrivals {
		for j, at := range a {
			fmt.Fprintf(w, "%d %d\n", j+1, at)
		}
	}
	fmt.Fprintln(w, "END")
	w.Flush()
}

// BenchmarkDeliveries measures deliveries per second to 1,000 subscribers while four
// clients ingest 100-row commits back to back (frames that queue up for a subscriber go
// out in one write, as under any sustained load).
func BenchmarkDeliveries(b *testing.B) {
	const n = 1000
	rec := loadFlights(b, 100)
	body := jsonBody(rec, false)
	e := benchEnv(b, options{hub: func(h *stream.Hub) { h.MaxStreamsPerToken = 20000 }})
	e.createFlights(b, "flights")
	subs := make([]*benchSubscriber, n)
	for i := range subs {
		subs[i] = dialStream(b, e.srv.Listener.Addr().String(), e.admin, "flights")
	}
	var delivered atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.readBatches(1, func(seq int64, _ time.Time) bool {
				delivered.Add(1)
				return seq < int64(b.N)
			})
		}()
	}
	var next atomic.Int64
	var ingest sync.WaitGroup
	for range 4 {
		ingest.Add(1)
		go func() {
			defer ingest.Done()
			for next.Add(1) <= int64(b.N) {
				e.post(b, "flights", "application/json", body)
			}
		}()
	}
	ingest.Wait()
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(delivered.Load())/b.Elapsed().Seconds(), "deliveries/s")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	if got := delivered.Load(); got != int64(n*b.N) {
		b.Fatalf("delivered %d, want %d", got, n*b.N)
	}
}

// idleClientsEnv makes the test binary a client process holding N idle streams open:
// "<address>|<N>|<token>".
const idleClientsEnv = "DUCKTAIL_BENCH_IDLE_CLIENTS"

// TestIdleClientsChild is the client process of BenchmarkIdleSubscriberHeap. It lives in
// its own process so that its sockets and memory are not counted as the server's.
func TestIdleClientsChild(t *testing.T) {
	parts := childSpec(t, idleClientsEnv, "BenchmarkIdleSubscriberHeap")
	n, _ := strconv.Atoi(parts[1])
	conns := make([]net.Conn, 0, n)
	buf := make([]byte, 4096)
	for range n {
		conn, err := net.Dial("tcp", parts[0])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET /v1/tables/flights/stream HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n\r\n", parts[2])
		got := ""
		for !strings.Contains(got, "event: schema") {
			k, err := conn.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got += string(buf[:k])
		}
		conns = append(conns, conn)
	}
	fmt.Println("READY")
	io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
}

// BenchmarkIdleSubscriberHeap measures the server's heap per idle subscriber with 10,000
// open streams (the clients run in a child process).
func BenchmarkIdleSubscriberHeap(b *testing.B) {
	const n = 10_000
	for range b.N {
		e := benchEnv(b, options{hub: func(h *stream.Hub) { h.MaxStreamsPerToken = 2 * n; h.MaxStreams = 2 * n }})
		e.createFlights(b, "flights")
		before := heapAlloc()
		cmd := exec.Command(os.Args[0], "-test.run=^TestIdleClientsChild$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d|%s", idleClientsEnv, e.srv.Listener.Addr(), n, e.admin))
		stdin, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.HasPrefix(line, "READY") {
			b.Fatalf("client process: %q %v", line, err)
		}
		for e.hub.Streams() < n {
			time.Sleep(10 * time.Millisecond)
		}
		after := heapAlloc()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(after-before)/n, "heap-B/subscriber")
		b.ReportMetric(float64(ms.StackInuse)/n, "stack-B/subscriber")
		stdin.Close()
		cmd.Wait()
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkReplay measures the catch-up of a resumed stream over a 1M-row table (1,000
// commits of 1,000 rows): rows/s and commits/s from the request to the last replayed
// batch, and the time from the request to the first replayed batch.
func BenchmarkReplay(b *testing.B) {
	rec := loadFlights(b, 1000)
	e := benchEnv(b, options{hub: func(h *stream.Hub) { h.MaxReplayCommits = 1 << 20; h.MaxReplayRows = 1 << 30 }})
	e.createFlights(b, "flights")
	info, _ := e.db.Table("flights")
	start := e.db.Cursors().Encode(info.Head)
	const commits = 1000
	for range commits {
		if _, err := e.db.Append(context.Background(), store.Batch{Table: "flights", SchemaVersion: 1, Record: rec}); err != nil {
			b.Fatal(err)
		}
	}
	var first []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(conn, "GET /v1/tables/flights/stream HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\nLast-Event-ID: %s\r\n\r\n", e.admin, start)
		s := &benchSubscriber{conn: conn, r: bufio.NewReaderSize(conn, 1<<20)}
		got := false
		s.readBatches(1, func(seq int64, at time.Time) bool {
			if !got {
				first = append(first, at.Sub(t0))
				got = true
			}
			return seq < commits
		})
		conn.Close()
	}
	b.StopTimer()
	b.ReportMetric(float64(commits*rec.NumRows())*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(commits*b.N)/b.Elapsed().Seconds(), "commits/s")
	b.ReportMetric(percentile(first, 0.5), "first-batch-ms")
}
