package api_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ducktail/ducktail/stream"
)

// BenchmarkIngestDuringReplays measures ingest latency while a replay storm runs: 300
// streams resume from the first commit of a table of 500 commits of 100 real flights rows,
// each reading its replay through and starting again, while one client commits 100-row
// JSON commits back to back (300 per iteration); replays=0 is the same ingest with no
// stream, in the same run. Reports the ingest p50/p99 and the MiB/s of replayed frames
// the streams received. The readers count batch events in the raw bytes, so that the
// benchmark's own clients cost little CPU on the shared cores; replays share their frames
// (stream/replaycache.go).
func BenchmarkIngestDuringReplays(b *testing.B) {
	for _, streams := range []int{0, 300} {
		b.Run(fmt.Sprintf("replays=%d", streams), func(b *testing.B) { benchIngestDuringReplays(b, streams) })
	}
}

func benchIngestDuringReplays(b *testing.B, streams int) {
	const commits = 500
	e := benchEnv(b, options{hub: func(h *stream.Hub) { h.MaxStreamsPerToken = 2 * max(streams, 1) }})
	e.createFlights(b, "flights")
	body := jsonBody(loadFlights(b, 100), false)
	var first struct{ Cursor string }
	e.ingest(b, "flights", "application/json", body, http.StatusCreated).json(b, &first)
	for range commits - 1 {
		e.post(b, "flights", "application/json", body)
	}
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	stop := make(chan struct{})
	var received atomic.Int64
	var wg sync.WaitGroup
	for range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for replayOnce(addr, e.admin, first.Cursor, commits-1, stop, &received) {
			}
		}()
	}
	if streams > 0 {
		// Let the storm start before measuring.
		time.Sleep(time.Second)
	}
	// Each iteration is 300 commits, so that the percentiles have samples to stand on
	// however few iterations the benchmark time allows.
	const ingests = 300
	lat := make([]time.Duration, 0, b.N*ingests)
	b.ResetTimer()
	for range b.N * ingests {
		start := time.Now()
		e.post(b, "flights", "application/json", body)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	elapsed := b.Elapsed()
	got := received.Load()
	close(stop)
	wg.Wait()
	b.ReportMetric(percentile(lat, 0.50), "p50-ms")
	b.ReportMetric(percentile(lat, 0.99), "p99-ms")
	b.ReportMetric(float64(got)/(1<<20)/elapsed.Seconds(), "replay-MiB/s")
}

// batchMarker starts every batch event of the SSE framing.
var batchMarker = []byte("event: batch\n")

// replayOnce resumes a stream from cursor and reads until n batch events arrived, adding
// the bytes it read to received; false when stop closed or the connection failed first.
func replayOnce(addr, token, cursor string, n int, stop <-chan struct{}, received *atomic.Int64) bool {
	select {
	case <-stop:
		return false
	default:
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-stop:
		case <-done:
		}
		conn.Close()
	}()
	fmt.Fprintf(conn, "GET /v1/tables/flights/stream HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\nLast-Event-ID: %s\r\n\r\n", token, cursor)
	buf := make([]byte, 64<<10)
	carry := 0 // bytes kept from the previous read: a marker may span two reads
	for got := 0; got < n; {
		m, err := conn.Read(buf[carry:])
		if err != nil {
			return false
		}
		received.Add(int64(m))
		window := buf[:carry+m]
		got += bytes.Count(window, batchMarker)
		carry = min(len(batchMarker)-1, len(window))
		copy(buf, window[len(window)-carry:])
	}
	return true
}
