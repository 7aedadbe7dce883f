package client_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ducktail/ducktail/api/client"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// passThrough is a proxy plan that only records requests.
func passThrough(int, *http.Request, *rand.Rand) fault { return none }

// TestRefusalsStopWithStatusError: 400, 401, 403 and 404 before the stream starts end it
// with a *StatusError carrying the problem details, after one request and no retry.
func TestRefusalsStopWithStatusError(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createNumbers("t")
	e.createNumbers("u")
	_, ingest := e.token(store.PurposeIngest, "t")
	_, streamU := e.token(store.PurposeStream, "u")
	cases := []struct {
		name, table, token, cursor string
		status                     int
		code                       string
	}{
		{"unknown table", "nope", e.admin, "", 404, "not_found"},
		{"malformed token", "t", "garbage", "", 400, "invalid"},
		{"unknown token", "t", "dt_0123456789abcdef_" + strings.Repeat("a", 52), "", 401, "unauthorized"},
		{"wrong purpose", "t", ingest, "", 403, "forbidden"},
		{"wrong table", "t", streamU, "", 404, "not_found"},
		{"Last-Event-ID too long", "t", e.admin, strings.Repeat("r", 600), 400, "invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newFaultProxy(t, e.URL(), 1, passThrough)
			c := &collector{}
			o := c.options(tc.table, client.FramingSSE, heartbeat)
			o.Cursor = tc.cursor
			err := client.Stream(context.Background(), p.URL(), tc.token, o)
			var se *client.StatusError
			if !errors.As(err, &se) || se.StatusCode != tc.status || se.Problem.Status != tc.status || se.Problem.Code != tc.code {
				t.Fatalf("Stream returned %#v, want a *StatusError %d with code %s", err, tc.status, tc.code)
			}
			if n := len(p.requests()); n != 1 {
				t.Fatalf("%d requests, want 1: a %d is not retried", n, tc.status)
			}
			if _, _, statuses, _ := c.state(); !slices.Equal(statuses, []client.Status{client.Connecting, client.Closed}) {
				t.Fatalf("statuses %v", statuses)
			}
		})
	}
}

// TestRetryAfterHonoured: 429 (the token's stream limit) and 503 (admission) are retried,
// no sooner than their Retry-After, and the stream then goes live.
func TestRetryAfterHonoured(t *testing.T) {
	cases := []struct {
		name   string
		hub    func(*stream.Hub)
		other  bool // the stream holding the slot uses another token
		status int
	}{
		{"429 per-token limit", func(h *stream.Hub) { h.MaxStreamsPerToken = 1 }, false, http.StatusTooManyRequests},
		{"503 admission", func(h *stream.Hub) { h.MaxStreams = 1 }, true, http.StatusServiceUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{hub: tc.hub})
			e.createNumbers("t")
			_, tok := e.token(store.PurposeStream, "t")
			holder := tok
			if tc.other {
				_, holder = e.token(store.PurposeStream, "t")
			}
			held := run(t, func(ctx context.Context) error {
				return client.Stream(ctx, e.URL(), holder, client.Options{Table: "t"})
			})
			eventually(t, "the first stream to hold the slot", func() bool { return e.hub.Streams() == 1 })
			p := newFaultProxy(t, e.URL(), 1, passThrough)
			c := &collector{}
			r := run(t, func(ctx context.Context) error {
				return client.Stream(ctx, p.URL(), tok, c.options("t", client.FramingSSE, heartbeat))
			})
			var refusal *client.StatusError
			eventually(t, "the refusal to be reported", func() bool {
				return c.countErrors(func(err error) bool { return errors.As(err, &refusal) }) > 0
			})
			if refusal.StatusCode != tc.status || refusal.RetryAfter < time.Second {
				t.Fatalf("refusal %d with Retry-After %v, want %d with at least 1s", refusal.StatusCode, refusal.RetryAfter, tc.status)
			}
			held.stop()
			eventually(t, "the client to go live", func() bool {
				_, _, statuses, _ := c.state()
				return slices.Contains(statuses, client.Live)
			})
			r.stop()
			reqs := p.streams()
			if len(reqs) < 2 || reqs[0].status != tc.status || reqs[1].at.Sub(reqs[0].at) < refusal.RetryAfter {
				t.Fatalf("requests %+v: the retry must come no sooner than Retry-After %v", reqs, refusal.RetryAfter)
			}
		})
	}
}

// TestReconnectRequestsAndRetryField: a server ending every stream after 200 ms
// (reconnect, max_stream_age) is reconnected to after each event's retry_ms, and an abrupt
// close no sooner than the SSE retry field; the rows stay exact across all of it.
func TestReconnectRequestsAndRetryField(t *testing.T) {
	const retry = 150 * time.Millisecond
	e := newEnv(t, envOptions{hub: func(h *stream.Hub) { fastHeartbeat(h); h.MaxStreamAge = 200 * time.Millisecond; h.Retry = retry }})
	e.createNumbers("t")
	next := 1
	ingestSome(e, "t", &next, 2)
	streams := 0
	p := newFaultProxy(t, e.URL(), 5, func(_ int, r *http.Request, _ *rand.Rand) fault {
		f := none
		if strings.Contains(r.URL.Path, "/stream") {
			if streams++; streams == 1 {
				f.cutAfter = 100 // after the preamble and its retry field
			}
		}
		return f
	})
	var mu sync.Mutex
	var reported []time.Time
	var waits []time.Duration
	c := &collector{}
	o := c.live("t", client.FramingSSE, heartbeat)
	o.OnError = func(err error) {
		c.error(err)
		var re *client.ReconnectError
		if errors.As(err, &re) {
			mu.Lock()
			reported, waits = append(reported, time.Now()), append(waits, re.RetryAfter)
			mu.Unlock()
		}
	}
	r := run(t, func(ctx context.Context) error { return client.LiveQuery(ctx, p.URL(), e.admin, o) })
	for range 3 {
		ingestSome(e, "t", &next, 2)
		time.Sleep(150 * time.Millisecond)
	}
	catchUp(t, e, c, "t")
	eventually(t, "two reconnect requests", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reported) >= 2
	})
	r.stop()
	checkExact(t, e, c, "t")
	reqs := p.streams()
	if !reqs[0].cut || reqs[1].at.Sub(reqs[0].at) < retry {
		t.Fatalf("after the cut, the retry came %v later: want no sooner than the retry field (%v or more)", reqs[1].at.Sub(reqs[0].at), retry)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, at := range reported {
		if waits[i] < retry {
			t.Fatalf("retry_ms %v below the server's %v", waits[i], retry)
		}
		// The first request after the event is the one made after the wait.
		for _, req := range reqs {
			if req.at.After(at) {
				if gap := req.at.Sub(at); gap < waits[i] {
					t.Fatalf("reconnect %d came %v after the event, want no sooner than retry_ms %v", i, gap, waits[i])
				}
				break
			}
		}
	}
}

// TestRefreshRequiredEndsStream: Stream (without LiveQuery's refresh) stops on
// refresh-required with a *RefreshRequiredError, and never sends the refused cursor again.
func TestRefreshRequiredEndsStream(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createNumbers("t")
	p := newFaultProxy(t, e.URL(), 1, passThrough)
	c := &collector{}
	o := c.options("t", client.FramingJSONSeq, heartbeat)
	o.Cursor = "r1.garbage"
	err := client.Stream(context.Background(), p.URL(), e.admin, o)
	var rr *client.RefreshRequiredError
	if !errors.As(err, &rr) || rr.Reason != "invalid_cursor" || rr.Cursor != "r1.garbage" {
		t.Fatalf("Stream returned %v, want refresh-required invalid_cursor for r1.garbage", err)
	}
	if n := len(p.streams()); n != 1 {
		t.Fatalf("%d stream requests: the refused cursor must not be retried", n)
	}
}

// TestFailureEndsStream: revoking the stream's token ends it with failure token_revoked,
// returned as a *FailureError without a retry.
func TestFailureEndsStream(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createNumbers("t")
	id, tok := e.token(store.PurposeStream, "t")
	p := newFaultProxy(t, e.URL(), 1, passThrough)
	c := &collector{}
	r := run(t, func(ctx context.Context) error {
		return client.Stream(ctx, p.URL(), tok, c.options("t", client.FramingNDJSON, heartbeat))
	})
	eventually(t, "the stream to be live", func() bool {
		_, _, statuses, _ := c.state()
		return slices.Contains(statuses, client.Live)
	})
	if status, b := e.do("DELETE", "/v1/tokens/"+id, nil); status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", status, b)
	}
	err := r.wait(t)
	var fe *client.FailureError
	if !errors.As(err, &fe) || fe.Code != "token_revoked" {
		t.Fatalf("Stream returned %v, want failure token_revoked", err)
	}
	if n := len(p.streams()); n != 1 {
		t.Fatalf("%d stream requests after a failure, want 1", n)
	}
}

// TestPathTokenEndpoint streams through GET /stream/{token} when Options.Table is "".
func TestPathTokenEndpoint(t *testing.T) {
	e := newEnv(t, envOptions{hub: fastHeartbeat})
	e.createNumbers("t")
	_, tok := e.token(store.PurposeStream, "t")
	p := newFaultProxy(t, e.URL(), 1, passThrough)
	c := &collector{}
	o := c.options("", client.FramingSSE, heartbeat)
	r := run(t, func(ctx context.Context) error { return client.Stream(ctx, p.URL(), tok, o) })
	eventually(t, "the stream to be live", func() bool {
		_, _, statuses, _ := c.state()
		return slices.Contains(statuses, client.Live)
	})
	next := 1
	ingestSome(e, "t", &next, 4)
	catchUp(t, e, c, "t")
	r.stop()
	checkExact(t, e, c, "t")
	if reqs := p.streams(); reqs[0].path != "/stream/"+tok {
		t.Fatalf("requested %s", reqs[0].path)
	}
}

var errBoom = errors.New("boom")

// TestHandlerErrorsAreReturned: a handler that returns an error or panics ends the stream
// with a *HandlerError naming it and the cursor of the batch it failed on, and starting
// again from the last cursor the application processed delivers that batch again.
func TestHandlerErrorsAreReturned(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createNumbers("t")
	e.ingestNumbers("t", 1, 1, 0)
	start := e.head("t")
	for n := 2; n <= 4; n++ {
		e.ingestNumbers("t", n, 1, 0)
	}
	failAt := func(n int64, fail func() error) func(client.Batch) error {
		return func(b client.Batch) error {
			if ns, _ := nColumn(b.Schema, b.Records); ns[0] == n {
				return fail()
			}
			return nil
		}
	}
	for _, tc := range []struct {
		name string
		fail func() error
		want string
	}{
		{"error", func() error { return errBoom }, "OnBatch failed: boom"},
		{"panic", func() error { panic("kaboom") }, "OnBatch failed: panic: kaboom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &collector{onBatch: failAt(3, tc.fail)}
			o := c.options("t", client.FramingSSE, heartbeat)
			o.Cursor = start
			err := client.Stream(context.Background(), e.URL(), e.admin, o)
			var he *client.HandlerError
			if !errors.As(err, &he) || he.Handler != "OnBatch" || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Stream returned %v, want %q", err, tc.want)
			}
			if pos, err := e.db.Cursors().Decode(he.Cursor); err != nil || pos.Seq != 3 {
				t.Fatalf("HandlerError.Cursor %q is seq %d (%v), want the failed batch's, seq 3", he.Cursor, pos.Seq, err)
			}
			if rows, _, _, _ := c.state(); !slices.Equal(rows, []int64{2}) {
				t.Fatalf("processed rows %v, want [2]", rows)
			}
			// Resume from what was processed: batch 3 comes again.
			again := &collector{}
			o = again.options("t", client.FramingSSE, heartbeat)
			o.Cursor = c.cursor
			r := run(t, func(ctx context.Context) error { return client.Stream(ctx, e.URL(), e.admin, o) })
			catchUp(t, e, again, "t")
			r.stop()
			if rows, _, _, _ := again.state(); !slices.Equal(rows, []int64{3, 4}) {
				t.Fatalf("resumed rows %v, want [3 4]", rows)
			}
		})
	}
	t.Run("OnSnapshot panic", func(t *testing.T) {
		o := client.LiveOptions{Options: client.Options{Table: "t"}, StartWithSnapshot: true,
			OnSnapshot: func(client.Snapshot) error { panic("snap") }}
		err := client.LiveQuery(context.Background(), e.URL(), e.admin, o)
		var he *client.HandlerError
		if !errors.As(err, &he) || he.Handler != "OnSnapshot" {
			t.Fatalf("LiveQuery returned %v, want an OnSnapshot *HandlerError", err)
		}
	})
	t.Run("OnStatus panic", func(t *testing.T) {
		o := client.Options{Table: "t", OnStatus: func(s client.Status) {
			if s == client.Live {
				panic("status")
			}
		}}
		err := client.Stream(context.Background(), e.URL(), e.admin, o)
		var he *client.HandlerError
		if !errors.As(err, &he) || he.Handler != "OnStatus" {
			t.Fatalf("Stream returned %v, want an OnStatus *HandlerError", err)
		}
	})
}

// TestLiveQuerySQL: a LiveQuery over SQL takes its snapshot from POST /v1/query and
// starts from the table's cursor in Ducktail-Cursors; a query that does not read the table
// ends with ErrNoCursor.
func TestLiveQuerySQL(t *testing.T) {
	e := newEnv(t, envOptions{hub: fastHeartbeat})
	e.createNumbers("t")
	e.createNumbers("u")
	next := 1
	ingestSome(e, "t", &next, 3)
	c := &collector{}
	o := c.live("t", client.FramingSSE, heartbeat)
	o.SQL = "SELECT n, s FROM T WHERE n > $1 ORDER BY n"
	o.Params = []any{0}
	r := run(t, func(ctx context.Context) error { return client.LiveQuery(ctx, e.URL(), e.admin, o) })
	ingestSome(e, "t", &next, 3)
	catchUp(t, e, c, "t")
	r.stop()
	checkExact(t, e, c, "t")

	o.SQL, o.Params = "SELECT n FROM u", nil
	if err := client.LiveQuery(context.Background(), e.URL(), e.admin, o); !errors.Is(err, client.ErrNoCursor) {
		t.Fatalf("LiveQuery over another table returned %v, want ErrNoCursor", err)
	}
}
