package api_test

import (
	"bufio"
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/ducktail/ducktail/api"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// processCPU returns the CPU time (user + system) this process has used: the server's,
// since the load comes from a child process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processRSS returns this process's resident set size in MiB (VmRSS of /proc/self/status).
func processRSS() float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// loadEnv makes the test binary the load process of BenchmarkCommitRate and
// BenchmarkSaturation: "<address>|<token>|<body file>|<publishers>|<commits>|<subscribers>|<stalled>".
const loadEnv = "DUCKTAIL_BENCH_LOAD"

// loadRun is a load process started by a benchmark: it has opened its subscribers and
// waits for start.
type loadRun struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// startLoad starts the load process against e, posting commits JSON bodies (body) from
// publishers clients to table flights, with subscribers streams open, the first stalled of
// which read nothing until the last commit is acknowledged; it returns once the streams
// are open.
func startLoad(b *testing.B, e *env, body []byte, publishers, commits, subscribers, stalled int) *loadRun {
	path := filepath.Join(b.TempDir(), "body.json")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadChild$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%s|%d|%d|%d|%d", loadEnv, e.srv.Listener.Addr(), e.admin, path, publishers, commits, subscribers, stalled))
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	l := &loadRun{cmd: cmd, stdin: stdin, out: bufio.NewScanner(out)}
	l.out.Buffer(nil, 1<<20)
	if !l.out.Scan() || l.out.Text() != "READY" {
		b.Fatalf("load process: %q %v", l.out.Text(), l.out.Err())
	}
	return l
}

// loadResult is what the load process reports.
type loadResult struct {
	latency   []time.Duration // of each acknowledged commit
	delivered int64           // batch events all subscribers received
	evicted   int             // subscribers told to reconnect
	bytes     int64           // bytes all subscribers read
	arrivals  map[int64][]int64
	cpu       time.Duration // the load process's CPU time (user + system), set-up included
}

// run starts the load and waits for its end; the caller times it.
func (l *loadRun) run(b *testing.B) loadResult {
	fmt.Fprintln(l.stdin, "GO")
	r := loadResult{arrivals: map[int64][]int64{}}
	for l.out.Scan() && l.out.Text() != "END" {
		f := strings.Fields(l.out.Text())
		n := func(i int) int64 { v, _ := strconv.ParseInt(f[i], 10, 64); return v }
		switch f[0] {
		case "lat":
			r.latency = append(r.latency, time.Duration(n(1)))
		case "sub":
			r.delivered += n(1)
			r.bytes += n(3)
			switch f[2] {
			case "evicted":
				r.evicted++
			case "short":
				b.Fatalf("load process: a stream ended after %s of the batches, untold", f[1])
			}
		case "arr":
			r.arrivals[n(1)] = append(r.arrivals[n(1)], n(2))
		case "fail":
			b.Fatalf("load process: %s", l.out.Text())
		}
	}
	l.stdin.Close()
	l.cmd.Wait()
	r.cpu = l.cmd.ProcessState.UserTime() + l.cmd.ProcessState.SystemTime()
	return r
}

// TestLoadChild is the load process of BenchmarkCommitRate and BenchmarkSaturation. It
// opens the subscribers, prints READY, waits for GO, then posts the commits from the
// publishers while the subscribers read until the last commit or a reconnect event (the
// stalled ones only once the last commit is acknowledged). It
// prints "lat <ns>" per commit, "sub <batches> kept|evicted|short <bytes read>" per
// subscriber, "arr <seq> <Unix ns>" for every 16th batch of each subscriber that was
// neither stalled nor evicted, and END.
func TestLoadChild(t *testing.T) {
	parts := childSpec(t, loadEnv, "BenchmarkCommitRate")
	addr, token := parts[0], parts[1]
	body, err := os.ReadFile(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	publishers, _ := strconv.Atoi(parts[3])
	commits, _ := strconv.Atoi(parts[4])
	n, _ := strconv.Atoi(parts[5])
	stalled, _ := strconv.Atoi(parts[6])
	published := make(chan struct{})
	subs := make([]*benchSubscriber, n)
	for i := range subs {
		subs[i] = dialStream(t, addr, token, "flights")
	}
	fmt.Println("READY")
	if line, _ := bufio.NewReader(os.Stdin).ReadString('\n'); line != "GO\n" {
		t.Fatalf("load process: %q, want GO", line)
	}
	w := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var subsDone sync.WaitGroup
	for i, s := range subs {
		subsDone.Go(func() {
			if i < stalled {
				<-published
			}
			got, evicted, read := s.readUntil(int64(commits))
			mu.Lock()
			defer mu.Unlock()
			state := "kept"
			switch {
			case evicted:
				state = "evicted"
			case len(got) < commits:
				state = "short" // the stream ended without a terminal event
			}
			fmt.Fprintf(w, "sub %d %s %d\n", len(got), state, read)
			if state != "kept" || i < stalled {
				return // the latency of the subscribers that kept up reading
			}
			for i := 15; i < len(got); i += 16 {
				fmt.Fprintf(w, "arr %d %d\n", i+1, got[i])
			}
		})
	}
	var next atomic.Int64
	lat := make([]time.Duration, commits)
	for range publishers {
		wg.Go(func() {
			p, err := dialPublisher(addr, token, body)
			if err != nil {
				mu.Lock()
				fmt.Fprintf(w, "fail %v\n", err)
				mu.Unlock()
				return
			}
			defer p.conn.Close()
			for i := next.Add(1) - 1; i < int64(commits); i = next.Add(1) - 1 {
				start := time.Now()
				status, err := p.post()
				lat[i] = time.Since(start)
				if err != nil || status != http.StatusCreated {
					mu.Lock()
					fmt.Fprintf(w, "fail status %d %v\n", status, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	close(published)
	subsDone.Wait()
	for _, d := range lat {
		fmt.Fprintf(w, "lat %d\n", d)
	}
	fmt.Fprintln(w, "END")
	w.Flush()
}

// benchPublisher posts one request body over and over on one keep-alive HTTP/1.1
// connection: the request's bytes are built once and each response is read with
// http.ReadResponse, so that the load process spends its CPU on the protocol rather than
// on an http.Client's connection pool and goroutines (about 40 µs per request on the
// project's 2-core machine, taken from the cores the server runs on).
type benchPublisher struct {
	conn net.Conn
	r    *bufio.Reader
	req  []byte
}

// dialPublisher connects a benchPublisher of body (JSON rows for table flights) to addr.
func dialPublisher(addr, token string, body []byte) (*benchPublisher, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("POST /v1/tables/flights/rows HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", token, len(body))
	return &benchPublisher{conn: conn, r: bufio.NewReader(conn), req: append([]byte(head), body...)}, nil
}

// post sends the request and reads its response through, returning its status code.
func (p *benchPublisher) post() (int, error) {
	if _, err := p.conn.Write(p.req); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(p.r, nil)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, err
}

// readUntil reads batch events until the one of seq last, a reconnect event or the end of
// the connection, returning the arrival time (Unix ns) of each batch, whether the server
// told the stream to reconnect, and the bytes read.
func (s *benchSubscriber) readUntil(last int64) (arrivals []int64, evicted bool, read int64) {
	for int64(len(arrivals)) < last {
		line, err := s.r.ReadSlice('\n')
		read += int64(len(line))
		if err != nil && err != bufio.ErrBufferFull {
			return arrivals, false, read
		}
		switch {
		case bytes.HasPrefix(line, []byte("event: batch")):
			arrivals = append(arrivals, time.Now().UnixNano())
		case bytes.HasPrefix(line, []byte("event: reconnect")):
			return arrivals, true, read
		}
	}
	return arrivals, false, read
}

// BenchmarkCommitRate measures 1-row JSON commits acknowledged per second from 1 and from
// 64 concurrent clients (in a child process, so that the server's own CPU time is the
// process's), each its own commit, seq and batch event; the server CPU per commit; and, in
// the same run, the same rows as autocommit INSERTs into an in-process DuckDB file from as
// many goroutines (what one would do without ducktail), with the ratio. The threads=1 cases
// run DuckDB with one thread (--threads 1): on this 2-core machine DuckDB's executor
// otherwise spins waiting for its worker thread on every small statement.
func BenchmarkCommitRate(b *testing.B) {
	rec := loadFlights(b, 1)
	body := jsonBody(rec, false)
	for _, c := range []struct{ clients, threads int }{{1, 0}, {1, 1}, {64, 0}, {64, 1}} {
		name := fmt.Sprintf("clients=%d", c.clients)
		if c.threads > 0 {
			name += fmt.Sprintf("/threads=%d", c.threads)
		}
		clients := c.clients
		b.Run(name, func(b *testing.B) {
			e := benchEnv(b, options{db: func(db *store.DB) { db.Threads = c.threads }})
			e.createFlights(b, "flights")
			load := startLoad(b, e, body, clients, b.N, 0, 0)
			cpu := processCPU()
			b.ResetTimer()
			r := load.run(b)
			b.StopTimer()
			elapsed := b.Elapsed()
			cpu = processCPU() - cpu
			rate := float64(b.N) / elapsed.Seconds()
			duck := duckdbInsertRate(b, rec, clients, b.N)
			b.ReportMetric(rate, "commits/s")
			b.ReportMetric(percentile(r.latency, 0.50), "p50-ms")
			b.ReportMetric(percentile(r.latency, 0.99), "p99-ms")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/commit")
			b.ReportMetric(float64(r.cpu.Microseconds())/float64(b.N), "client-cpu-us/commit")
			b.ReportMetric(duck, "duckdb-inserts/s")
			st := e.db.Stats()
			b.ReportMetric(float64(st.Commits)/float64(st.CommitTransactions), "commits/transaction")
			b.ReportMetric(rate/duck, "ratio")
		})
	}
}

// duckdbInsertRate inserts rec's first row n times as autocommit INSERTs (a prepared
// statement) into a table of a new DuckDB file from clients goroutines, and returns the
// inserts per second.
func duckdbInsertRate(b *testing.B, rec arrow.RecordBatch, clients, n int) float64 {
	db, err := sql.Open("duckdb", filepath.Join(b.TempDir(), "plain.duckdb"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(clients)
	var cols, marks []string
	for _, c := range flightColumns {
		cols = append(cols, store.QuoteIdent(c.Name)+" "+c.Type)
		marks = append(marks, "?")
	}
	if _, err := db.Exec("CREATE TABLE flights (" + strings.Join(cols, ", ") + ")"); err != nil {
		b.Fatal(err)
	}
	stmt, err := db.Prepare("INSERT INTO flights VALUES (" + strings.Join(marks, ", ") + ")")
	if err != nil {
		b.Fatal(err)
	}
	defer stmt.Close()
	args := rowArgs(rec, 0)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := stmt.Exec(args...); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}

// rowArgs returns row i of rec as database/sql arguments.
func rowArgs(rec arrow.RecordBatch, i int) []any {
	args := make([]any, rec.NumCols())
	for c, col := range rec.Columns() {
		switch a := col.(type) {
		case *array.Timestamp:
			args[c] = a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit)
		case *array.Date32:
			args[c] = a.Value(i).ToTime()
		case *array.Int64:
			args[c] = a.Value(i)
		case *array.Float64:
			args[c] = a.Value(i)
		case *array.String:
			args[c] = a.Value(i)
		case *array.Boolean:
			args[c] = a.Value(i)
		default:
			args[c] = col.ValueStr(i)
		}
	}
	return args
}

// BenchmarkSaturation measures fan-out under saturation: 8 clients (in the load process)
// post JSON commits as fast as they are acknowledged while 100 or 1,000 subscribers (in
// the same process) read every batch event. It reports deliveries/s, commits/s, the
// server's CPU per delivery (all of it, ingest included, ÷ deliveries; and fanout-cpu,
// the same less the CPU of the same commits posted with no subscriber, measured after),
// its RSS before and after, the subscribers told to reconnect (evicted: they fell out of
// the table's live log), and the commit-to-delivery latency of those that kept up (every
// 16th batch of each). The overload case posts 100-row commits (about 11 KB frames) to
// 1,000 subscribers, 100 of which read nothing until the last commit is acknowledged:
// more than the sockets hold, so those fall out of the log and are told to reconnect.
func BenchmarkSaturation(b *testing.B) {
	cases := []struct {
		name                string
		rows, subs, stalled int
		minCommits          int // the overload needs more bytes than the sockets hold
	}{
		{"subscribers=100", 1, 100, 0, 0},
		{"subscribers=1000", 1, 1000, 0, 0},
		{"overload", 100, 1000, 100, 3000},
	}
	for _, c := range cases {
		body := jsonBody(loadFlights(b, c.rows), false)
		b.Run(c.name, func(b *testing.B) {
			clock := &publishClock{at: map[int64]time.Time{}}
			e := benchEnv(b, options{
				db:  func(db *store.DB) { db.Publisher = clock },
				hub: func(h *stream.Hub) { h.MaxStreamsPerToken = 20000; clock.next = h },
				// A stalled subscriber is told it lags once it reads again, unless its stall
				// outlasts the write timeout: then it is cut instead.
				api: func(c *api.Config) { c.StreamWriteTimeout = 10 * time.Minute },
			})
			e.createFlights(b, "flights")
			commits := max(b.N, c.minCommits)
			load := startLoad(b, e, body, 8, commits, c.subs, c.stalled)
			for e.hub.Streams() < c.subs {
				time.Sleep(10 * time.Millisecond)
			}
			rssBefore := processRSS()
			cpu := processCPU()
			b.ResetTimer()
			r := load.run(b)
			b.StopTimer()
			elapsed := b.Elapsed()
			cpu = processCPU() - cpu
			rssAfter := processRSS()
			st := e.db.Stats()
			alone := benchEnv(b, options{})
			alone.createFlights(b, "flights")
			load = startLoad(b, alone, body, 8, commits, 0, 0)
			ingestCPU := processCPU()
			load.run(b)
			ingestCPU = processCPU() - ingestCPU
			var lat []time.Duration
			for seq, ats := range r.arrivals {
				for _, at := range ats {
					lat = append(lat, time.Unix(0, at).Sub(clock.published(seq)))
				}
			}
			deliveries := float64(max(r.delivered, 1))
			b.ReportMetric(float64(r.delivered)/elapsed.Seconds(), "deliveries/s")
			b.ReportMetric(float64(commits)/elapsed.Seconds(), "commits/s")
			b.ReportMetric(float64(st.Commits)/float64(st.CommitTransactions), "commits/transaction")
			b.ReportMetric(float64(r.cpu.Microseconds())/deliveries, "client-cpu-us/delivery")
			b.ReportMetric(float64(cpu.Microseconds())/deliveries, "cpu-us/delivery")
			b.ReportMetric(float64((cpu-ingestCPU).Microseconds())/deliveries, "fanout-cpu-us/delivery")
			b.ReportMetric(float64(r.bytes)/deliveries, "B/delivery")
			b.ReportMetric(rssBefore, "rss-before-MiB")
			b.ReportMetric(rssAfter, "rss-after-MiB")
			b.ReportMetric(float64(r.evicted), "evicted")
			b.ReportMetric(percentile(lat, 0.50), "p50-ms")
			b.ReportMetric(percentile(lat, 0.99), "p99-ms")
		})
	}
}

// BenchmarkDeliveryCPU measures the server CPU of live fan-out alone: 100 or 1,000
// subscribers (in the load process) read every batch event while 1-row commits are
// published straight into the hub, without ingest or DuckDB, in bursts of 4 (as group
// commit publishes them) every 4 ms. cpu-us/delivery = the server process's CPU time ÷
// deliveries; every subscriber must keep up.
func BenchmarkDeliveryCPU(b *testing.B) {
	rec := loadFlights(b, 1)
	for _, subs := range []int{100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", subs), func(b *testing.B) {
			e := benchEnv(b, options{hub: func(h *stream.Hub) { h.MaxStreamsPerToken = 20000 }})
			e.createFlights(b, "flights")
			info, err := e.db.Table("flights")
			if err != nil {
				b.Fatal(err)
			}
			commits := max(b.N, 400)
			load := startLoad(b, e, nil, 0, commits, subs, 0)
			for e.hub.Streams() < subs {
				time.Sleep(10 * time.Millisecond)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				pos := info.Head
				for i := 0; i < commits; i++ {
					if i%4 == 0 {
						time.Sleep(4 * time.Millisecond)
					}
					pos.Seq++
					e.hub.Publish(store.CommitEvent{TableName: "flights", Position: pos, Schema: &info.Schema,
						Record: rec, Rows: rec.NumRows(), CommittedAt: time.Now()})
				}
			}()
			cpu := processCPU()
			b.ResetTimer()
			r := load.run(b)
			b.StopTimer()
			<-done
			cpu = processCPU() - cpu
			if r.evicted > 0 {
				b.Fatalf("%d subscribers fell behind", r.evicted)
			}
			b.ReportMetric(float64(r.delivered)/b.Elapsed().Seconds(), "deliveries/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(max(r.delivered, 1)), "cpu-us/delivery")
			b.ReportMetric(float64(r.bytes)/float64(max(r.delivered, 1)), "B/delivery")
		})
	}
}
