package api_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// stalledStream opens GET path with Last-Event-ID on a connection whose receive buffer is
// 4 KiB, and never reads: a consumer that stopped reading mid-replay.
func stalledStream(t *testing.T, addr, path, cursor string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nLast-Event-ID: %s\r\n\r\n", path, addr, cursor)
	return conn
}

// TestStalledReplaysHoldBoundedMemory: 60 resumed streams that stop reading mid-replay of
// a table of 1 MB commits hold a bounded amount of server memory in all: each stream holds
// at most one replay chunk, and the frames are shared by the streams replaying the same
// commits (before the replay cache, each stream pinned about 16 MiB of its own).
func TestStalledReplaysHoldBoundedMemory(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "big")
	pad := strings.Repeat("x", 1000)
	var first string
	for c := range 24 {
		var b bytes.Buffer
		for i := range 1000 {
			fmt.Fprintf(&b, "{\"n\":%d,\"s\":\"%s\"}\n", c*1000+i, pad)
		}
		var ack struct{ Cursor string }
		e.ingest(t, "big", "application/x-ndjson", b.Bytes(), http.StatusCreated).json(t, &ack)
		if c == 0 {
			first = ack.Cursor
		}
	}
	token := e.token(t, store.PurposeStream, "big")
	before := liveHeap()
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	const streams = 60
	var conns []net.Conn
	for range streams {
		conns = append(conns, stalledStream(t, addr, "/stream/"+token, first))
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	deadline := time.Now().Add(time.Minute)
	for e.hub.ReplayStats().Active < streams {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d streams are replaying", e.hub.ReplayStats().Active, streams)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Each stream now blocks writing its first replayed frame; sample the heap while the
	// streams settle.
	const bound = 64 << 20
	var grown uint64
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		if h := liveHeap(); h > before {
			grown = max(grown, h-before)
		}
	}
	t.Logf("%d stalled replays: heap grew by %.1f MiB", streams, float64(grown)/(1<<20))
	if grown > bound {
		t.Fatalf("%d stalled replays grew the heap by %d MiB; want under %d MiB", streams, grown>>20, bound>>20)
	}
	if st := e.hub.ReplayStats(); st.Bytes > stream.DefaultMaxReplayBytes {
		t.Fatalf("the replay cache holds %d bytes, over its budget", st.Bytes)
	}
}

// TestConcurrentFullReplaysAreExactAndShared: 300 streams replay a table from its
// beginning at once while commits keep landing; each gets every commit exactly once, in
// order, then the live ones, and the table is read far fewer times than once per stream.
func TestConcurrentFullReplaysAreExactAndShared(t *testing.T) {
	e := newEnv(t, options{hub: func(h *stream.Hub) { h.MaxStreamsPerToken = 1000 }})
	e.createNumbers(t, "t")
	_, start := e.tableNs(t, "t")
	const before, during, streams = 200, 50, 300
	for i := 1; i <= before; i++ {
		e.ingestNumbers(t, "t", i, 1)
	}
	var wg sync.WaitGroup
	ingested := make(chan struct{})
	go func() {
		defer close(ingested)
		for i := before + 1; i <= before+during; i++ {
			e.ingestNumbers(t, "t", i, 1)
		}
	}()
	for k := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := e.sse(t, "/v1/tables/t/stream?cursor="+start, e.admin)
			defer s.resp.Body.Close()
			var got []int64
			for len(got) < before+during {
				ev := s.next()
				if ev.Event != stream.EventBatch {
					continue
				}
				_, recs := decodePayload(t, ev.Data)
				got = append(got, nValues(recs)...)
			}
			for i, n := range got {
				if n != int64(i+1) {
					t.Errorf("stream %d: value %d is %d; want 1..%d in order", k, i, n, before+during)
					return
				}
			}
		}()
	}
	wg.Wait()
	<-ingested
	read := e.hub.ReplayStats().Read
	t.Logf("%d streams replaying %d commits read %d commits from the table", streams, before, read)
	if read >= streams*before/4 {
		t.Fatalf("%d streams replaying %d commits read %d commits from the table; want them shared", streams, before, read)
	}
}
