package api_test

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// shapeBenchSubscribers is the number of subscribers of BenchmarkShapedFanOut.
const shapeBenchSubscribers = 1000

// shapeBenchQuery is the shape of subscriber i among shapes distinct shapes (none when
// shapes is 0): a predicate on the distance and four of the ten columns, each shape
// matching some of a commit's rows.
func shapeBenchQuery(i, shapes int) string {
	if shapes == 0 {
		return ""
	}
	q := url.Values{}
	q.Set("where", fmt.Sprintf("distance >= %d AND origin <> 'none'", (i%shapes)*150))
	q.Set("columns", "date,origin,destination,distance")
	return "?" + q.Encode()
}

// BenchmarkShapedFanOut compares 1,000 subscribers spread over 10 distinct shapes with
// 1,000 unshaped subscribers (docs/design.md, "Shapes and policies": cost grows with
// shapes, not subscribers), with the clients in a child process as in BenchmarkFanOut:
// commit-to-delivery latency of 100-row commits (p50, p99) and the server process's CPU
// time per commit (user + system, getrusage), the ingest request included. The next commit
// is ingested when every subscriber has the previous one.
func BenchmarkShapedFanOut(b *testing.B) {
	rec := loadFlights(b, 100)
	body := jsonBody(rec, false)
	for _, shapes := range []int{0, 10} {
		b.Run(fmt.Sprintf("subscribers=%d/shapes=%d", shapeBenchSubscribers, shapes), func(b *testing.B) {
			clock := &publishClock{at: map[int64]time.Time{}}
			e := benchEnv(b, options{
				db:  func(db *store.DB) { db.Publisher = clock },
				hub: func(h *stream.Hub) { h.MaxStreamsPerToken = 20000; clock.next = h },
			})
			e.createFlights(b, "flights")
			cmd := exec.Command(os.Args[0], "-test.run=^TestShapedFanOutClientsChild$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d|%s|%d|%d", shapedFanOutEnv, e.srv.Listener.Addr(), shapeBenchSubscribers, e.admin, b.N, shapes))
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
			cpu := processCPU()
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				e.post(b, "flights", "application/json", body)
				expect(strconv.Itoa(i))
			}
			b.StopTimer()
			cpu = processCPU() - cpu
			lat := make([]time.Duration, 0, shapeBenchSubscribers*b.N)
			for lines.Scan() && lines.Text() != "END" {
				seq, at, _ := strings.Cut(lines.Text(), " ")
				s, err1 := strconv.ParseInt(seq, 10, 64)
				ns, err2 := strconv.ParseInt(at, 10, 64)
				if err1 != nil || err2 != nil {
					b.Fatalf("client process: %q", lines.Text())
				}
				lat = append(lat, time.Unix(0, ns).Sub(clock.published(s)))
			}
			if len(lat) != shapeBenchSubscribers*b.N {
				b.Fatalf("client process reported %d deliveries, want %d", len(lat), shapeBenchSubscribers*b.N)
			}
			b.ReportMetric(percentile(lat, 0.50), "p50-ms")
			b.ReportMetric(percentile(lat, 0.99), "p99-ms")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/commit")
		})
	}
}

// shapedFanOutEnv makes the test binary the client process of BenchmarkShapedFanOut:
// "<address>|<subscribers>|<token>|<commits>|<shapes>".
const shapedFanOutEnv = "DUCKTAIL_BENCH_SHAPED_FANOUT_CLIENTS"

// TestShapedFanOutClientsChild is the client process of BenchmarkShapedFanOut, as
// TestFanOutClientsChild is BenchmarkFanOut's: subscriber i streams through shape i mod
// shapes.
func TestShapedFanOutClientsChild(t *testing.T) {
	parts := childSpec(t, shapedFanOutEnv, "BenchmarkShapedFanOut")
	n, _ := strconv.Atoi(parts[1])
	commits, _ := strconv.Atoi(parts[3])
	shapes, _ := strconv.Atoi(parts[4])
	subs := make([]*benchSubscriber, n)
	for i := range subs {
		subs[i] = dialShapedStream(t, parts[0], parts[2], "/v1/tables/flights/stream"+shapeBenchQuery(i, shapes))
	}
	readFanOut(t, subs, commits)
}

// dialShapedStream opens the stream at path (with its query) over a raw connection and
// reads up to its schema event.
func dialShapedStream(t testing.TB, addr, token, path string) *benchSubscriber {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", path, token)
	s := &benchSubscriber{conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "HTTP/1.1 ") && !strings.HasPrefix(line, "HTTP/1.1 200") {
			t.Fatalf("stream %s: %s", path, line)
		}
		if strings.HasPrefix(line, "event: schema") {
			return s
		}
	}
}
