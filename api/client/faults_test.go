package client_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ducktail/ducktail/api/client"
	"github.com/ducktail/ducktail/stream"
)

// heartbeat is the server's heartbeat interval in these tests; the client's watchdog
// allows it plus the collector's margin.
const heartbeat = 20 * time.Millisecond

func fastHeartbeat(h *stream.Hub) { h.HeartbeatInterval = heartbeat }

// ingestSome commits count commits of 1 to 3 rows, numbering rows from *next on.
func ingestSome(e *env, table string, next *int, count int) {
	for i := range count {
		rows := 1 + (*next+i)%3
		e.ingestNumbers(table, *next, rows, 0)
		*next += rows
	}
}

// checkResumes fails unless every stream request after the first resumed (Last-Event-ID
// set) from a position no earlier than the previous request's, in the table's current
// activation or a later one: the client resends the last cursor it processed and never
// goes back.
func checkResumes(t testing.TB, e *env, reqs []proxied) {
	t.Helper()
	var last int64
	for i, r := range reqs {
		if r.lastEventID == "" {
			t.Fatalf("stream request %d carries no Last-Event-ID", i)
		}
		pos, err := e.db.Cursors().Decode(r.lastEventID)
		if err != nil {
			t.Fatalf("stream request %d: Last-Event-ID %q: %v", i, r.lastEventID, err)
		}
		if pos.Seq < last {
			t.Fatalf("stream request %d resumed from seq %d, after seq %d", i, pos.Seq, last)
		}
		last = pos.Seq
	}
}

// TestRandomCutsInEveryFraming puts a proxy between a LiveQuery and a real server taking
// commits that cuts every stream within its first 4000 bytes and half the snapshots
// within their first 1000, at a random byte, splits bodies into random pieces and
// rewrites line ends: in every framing the client ends with exactly the table's rows,
// and every reconnect resumes from the last processed cursor.
func TestRandomCutsInEveryFraming(t *testing.T) {
	cases := []struct {
		framing client.Framing
		lineEnd string
	}{
		{client.FramingSSE, "\r\n"},
		{client.FramingSSE, "\r"},
		{client.FramingNDJSON, "\r\n"},
		{client.FramingJSONSeq, "\r\n"},
	}
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%s %q", tc.framing, tc.lineEnd), func(t *testing.T) {
			e := newEnv(t, envOptions{hub: fastHeartbeat})
			e.createNumbers("t")
			next := 1
			ingestSome(e, "t", &next, 5)
			p := newFaultProxy(t, e.URL(), uint64(i+1), func(_ int, r *http.Request, rng *rand.Rand) fault {
				f := none
				f.chunked = true
				switch {
				case strings.Contains(r.URL.Path, "/stream"):
					f.lineEnd = tc.lineEnd
					f.cutAfter = rng.IntN(4000)
				case rng.IntN(2) == 0:
					f.cutAfter = rng.IntN(1000)
				}
				return f
			})
			c := &collector{}
			r := run(t, func(ctx context.Context) error {
				return client.LiveQuery(ctx, p.URL(), e.admin, c.live("t", tc.framing, heartbeat))
			})
			for range 30 {
				ingestSome(e, "t", &next, 2)
				time.Sleep(10 * time.Millisecond)
			}
			catchUp(t, e, c, "t")
			if err := r.stop(); !errors.Is(err, context.Canceled) {
				t.Fatalf("LiveQuery returned %v, want context.Canceled", err)
			}
			checkExact(t, e, c, "t")
			cuts := 0
			for _, req := range p.requests() {
				if req.cut {
					cuts++
				}
			}
			t.Logf("%d rows, %d requests, %d cut, %d errors reported", len(e.tableNs("t")), len(p.requests()), cuts, len(c.errs))
			if cuts < 10 || c.countErrors(func(err error) bool { return errors.Is(err, client.ErrAbruptClose) }) == 0 {
				t.Fatalf("%d responses cut, abrupt closes reported: %v; the test must cut streams", cuts, c.errs)
			}
			checkResumes(t, e, p.streams())
			for _, req := range p.streams() {
				if req.contentType != string(tc.framing) {
					t.Fatalf("a stream answered %q, want %q", req.contentType, tc.framing)
				}
			}
		})
	}
}

// TestStallTripsTheHeartbeatWatchdog stalls the first streams after a random number of
// bytes, keeping their connections open and silent: the watchdog must take each for dead
// and reconnect, and the client still ends with exactly the table's rows.
func TestStallTripsTheHeartbeatWatchdog(t *testing.T) {
	e := newEnv(t, envOptions{hub: fastHeartbeat})
	e.createNumbers("t")
	next := 1
	ingestSome(e, "t", &next, 3)
	stream := 0
	p := newFaultProxy(t, e.URL(), 7, func(_ int, r *http.Request, rng *rand.Rand) fault {
		f := none
		if strings.Contains(r.URL.Path, "/stream") {
			if stream++; stream <= 3 {
				f.stallAfter = rng.IntN(1500)
			}
		}
		return f
	})
	c := &collector{}
	r := run(t, func(ctx context.Context) error {
		return client.LiveQuery(ctx, p.URL(), e.admin, c.live("t", client.FramingSSE, heartbeat))
	})
	for range 6 {
		ingestSome(e, "t", &next, 4)
		time.Sleep(20 * time.Millisecond)
	}
	catchUp(t, e, c, "t")
	stalled := func() int {
		n := 0
		for _, req := range p.streams() {
			if req.stalled {
				n++
			}
		}
		return n
	}
	silences := func() int {
		return c.countErrors(func(err error) bool { return errors.Is(err, client.ErrSilence) })
	}
	// A stall only the watchdog can end: every one must be reported, however late.
	eventually(t, "a silence for every stall", func() bool { return silences() >= stalled() })
	r.stop()
	checkExact(t, e, c, "t")
	t.Logf("%d stream requests, %d stalled, %d silences", len(p.streams()), stalled(), silences())
	if stalled() == 0 {
		t.Fatal("no stream stalled: the test proved nothing")
	}
	checkResumes(t, e, p.streams())
}

// TestDelayedHeaders holds the first stream's headers back longer than the watchdog
// allows (it must give up and reconnect) and the second's for less (it must wait).
func TestDelayedHeaders(t *testing.T) {
	e := newEnv(t, envOptions{hub: fastHeartbeat})
	e.createNumbers("t")
	next := 1
	ingestSome(e, "t", &next, 3)
	stream := 0
	p := newFaultProxy(t, e.URL(), 3, func(_ int, r *http.Request, _ *rand.Rand) fault {
		f := none
		if strings.Contains(r.URL.Path, "/stream") {
			switch stream++; stream {
			case 1:
				f.headerDelay = 3 * (heartbeat + 400*time.Millisecond)
			case 2:
				f.headerDelay = 50 * time.Millisecond
			}
		}
		return f
	})
	c := &collector{}
	r := run(t, func(ctx context.Context) error {
		return client.LiveQuery(ctx, p.URL(), e.admin, c.live("t", client.FramingSSE, heartbeat))
	})
	ingestSome(e, "t", &next, 5)
	catchUp(t, e, c, "t")
	r.stop()
	checkExact(t, e, c, "t")
	if n := c.countErrors(func(err error) bool { return errors.Is(err, client.ErrSilence) }); n == 0 {
		t.Fatalf("no silence reported for headers held past the limit: %v", c.errs)
	}
	if got := len(p.streams()); got < 2 {
		t.Fatalf("%d stream requests, want a second one after the watchdog gave up", got)
	}
}

// TestServerRestartMidStream restarts the server on the same DuckDB file and the same
// address twice while commits flow: once cutting every stream, once draining (reconnect,
// server_draining). The client resumes from its cursor each time, without a snapshot.
func TestServerRestartMidStream(t *testing.T) {
	e := newEnv(t, envOptions{hub: fastHeartbeat})
	e.createNumbers("t")
	next := 1
	ingestSome(e, "t", &next, 3)
	c := &collector{}
	r := run(t, func(ctx context.Context) error {
		return client.LiveQuery(ctx, e.URL(), e.admin, c.live("t", client.FramingSSE, heartbeat))
	})
	eventually(t, "the client to be live", func() bool {
		_, _, statuses, _ := c.state()
		return slices.Contains(statuses, client.Live)
	})
	ingestSome(e, "t", &next, 10)
	e.restart(false)
	ingestSome(e, "t", &next, 10)
	catchUp(t, e, c, "t")
	ingestSome(e, "t", &next, 5)
	e.restart(true)
	ingestSome(e, "t", &next, 10)
	catchUp(t, e, c, "t")
	if err := r.stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("LiveQuery returned %v", err)
	}
	checkExact(t, e, c, "t")
	_, _, _, snapshots := c.state()
	if !slices.Equal(snapshots, []string{""}) {
		t.Fatalf("snapshots %q: a restart must not need a refresh", snapshots)
	}
	drained := c.countErrors(func(err error) bool {
		var re *client.ReconnectError
		return errors.As(err, &re) && re.Reason == "server_draining"
	})
	abrupt := c.countErrors(func(err error) bool { return errors.Is(err, client.ErrAbruptClose) })
	t.Logf("errors reported: %v", c.errs)
	if drained == 0 || abrupt == 0 {
		t.Fatalf("errors %v: want a server_draining reconnect and an abrupt close", c.errs)
	}
}

// TestTableResetMidStream resets the table while a LiveQuery follows it: refresh-required
// arrives, the client takes a new snapshot and continues from its cursor, ending with
// exactly the rows of the new activation.
func TestTableResetMidStream(t *testing.T) {
	e := newEnv(t, envOptions{hub: fastHeartbeat})
	e.createNumbers("t")
	next := 1
	ingestSome(e, "t", &next, 3)
	c := &collector{}
	r := run(t, func(ctx context.Context) error {
		return client.LiveQuery(ctx, e.URL(), e.admin, c.live("t", client.FramingNDJSON, heartbeat))
	})
	ingestSome(e, "t", &next, 5)
	if status, b := e.do("POST", "/v1/tables/t/reset", nil); status != http.StatusOK {
		t.Fatalf("reset: %d %s", status, b)
	}
	ingestSome(e, "t", &next, 5)
	catchUp(t, e, c, "t")
	r.stop()
	checkExact(t, e, c, "t")
	if _, _, _, snapshots := c.state(); !slices.Equal(snapshots, []string{"", "table_reset"}) {
		t.Fatalf("snapshots %q, want the first and one after table_reset", snapshots)
	}
}

// TestReplayLimitRefreshes resumes from a cursor too far behind for the server's replay
// bound: LiveQuery rebuilds from a snapshot instead of retrying that cursor.
func TestReplayLimitRefreshes(t *testing.T) {
	e := newEnv(t, envOptions{hub: func(h *stream.Hub) { fastHeartbeat(h); h.MaxReplayCommits = 3 }})
	e.createNumbers("t")
	next := 1
	ingestSome(e, "t", &next, 1)
	old := e.head("t")
	ingestSome(e, "t", &next, 10)
	c := &collector{}
	o := c.live("t", client.FramingJSONSeq, heartbeat)
	o.StartWithSnapshot, o.Cursor = false, old
	r := run(t, func(ctx context.Context) error { return client.LiveQuery(ctx, e.URL(), e.admin, o) })
	catchUp(t, e, c, "t")
	ingestSome(e, "t", &next, 2)
	catchUp(t, e, c, "t")
	r.stop()
	checkExact(t, e, c, "t")
	if _, _, _, snapshots := c.state(); !slices.Equal(snapshots, []string{"replay_limit"}) {
		t.Fatalf("snapshots %q, want one after replay_limit", snapshots)
	}
}

// smallBuffer is the socket buffer size set on the server's side (SO_SNDBUF) and the
// client's (SO_RCVBUF) of a connection, so that a consumer that stops reading blocks the
// server's writes after a few hundred KiB instead of tens of MiB.
const smallBuffer = 32 << 10

type smallSendListener struct{ net.Listener }

func (l smallSendListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetWriteBuffer(smallBuffer)
	}
	return conn, err
}

func smallReceiveClient() *http.Client {
	d := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, smallBuffer)
		})
		return serr
	}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// TestSlowConsumerEvicted stops the consumer inside its first batch while commits of
// 64 KiB land, far more than the socket buffers and the server's queue of two batches
// hold: the server evicts it (reconnect, slow_consumer), and once it goes on it resumes
// from the last batch it processed and ends with exactly the table's rows.
func TestSlowConsumerEvicted(t *testing.T) {
	e := newEnv(t, envOptions{
		hub:      func(h *stream.Hub) { fastHeartbeat(h); h.MaxBufferedBatches = 2 },
		listener: func(l net.Listener) net.Listener { return smallSendListener{l} },
	})
	e.createNumbers("t")
	next := 1
	ingestSome(e, "t", &next, 2)
	release := make(chan struct{})
	blocked := make(chan struct{})
	c := &collector{}
	c.onBatch = func(client.Batch) error {
		select {
		case <-release:
		default:
			close(blocked)
			<-release
		}
		return nil
	}
	o := c.live("t", client.FramingSSE, heartbeat)
	o.HTTPClient = smallReceiveClient()
	r := run(t, func(ctx context.Context) error { return client.LiveQuery(ctx, e.URL(), e.admin, o) })
	eventually(t, "the client to be live", func() bool {
		_, _, statuses, _ := c.state()
		return slices.Contains(statuses, client.Live)
	})
	e.ingestNumbers("t", next, 1, 0)
	next++
	<-blocked
	// 40 commits of 64 KiB (about 3.4 MiB as base64) against a few hundred KiB of socket
	// buffers and a queue of 2.
	for i := range 40 {
		e.ingestNumbers("t", next+i, 1, 64<<10)
	}
	next += 40
	close(release)
	catchUp(t, e, c, "t")
	r.stop()
	checkExact(t, e, c, "t")
	evicted := c.countErrors(func(err error) bool {
		var re *client.ReconnectError
		return errors.As(err, &re) && re.Reason == "slow_consumer"
	})
	t.Logf("errors reported: %v", c.errs)
	if evicted == 0 {
		t.Fatalf("errors %v: want a slow_consumer eviction", c.errs)
	}
}
