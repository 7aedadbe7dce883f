package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/ducktail/ducktail/internal/ssetest"
)

// delivery is one batch event a subscriber received: its id (the cursor), the seq the
// cursor names, the n of its rows and when it arrived.
type delivery struct {
	cursor string
	seq    int64
	rows   []int64
	at     time.Time
}

// connection is one 200 answer a subscriber read: the server, the cursor it resumed
// from ("" for none) and the id of the first event (a schema event, always).
type connection struct {
	server      string
	resumedFrom string
	firstEvent  string
	firstID     string
}

// subscriber is a real SSE client of one table: it reads the wire bytes with the WHATWG
// parser (internal/ssetest), decodes each batch (Arrow IPC or JSON rows), and after an
// abrupt close, a refused connection or a reconnect event resumes with Last-Event-ID,
// the id of the last event it read: on the same server, or with failover on the next of
// its servers. It stops at refresh-required or failure (terminal) or at a status other
// than 200, 502 and 503 (draining, or the writer a node proxies to is down).
type subscriber struct {
	name     string
	servers  []string
	failover bool
	table    string
	token    string
	// byPath uses GET /stream/{token}, else GET /v1/tables/{t}/stream with the token in
	// Authorization.
	byPath bool
	// json asks for ?encoding=json, else Arrow IPC (the default).
	json bool
	// start is the ?cursor= of the first request, resume its Last-Event-ID; "" for
	// none (both "": a new subscription).
	start, resume string

	mu          sync.Mutex
	batches     []delivery
	connections []connection
	reconnects  []string
	lastID      string
	ended       bool
	terminal    ssetest.Event
	endedAt     time.Time
	status      int
	problems    []string
	cancel      context.CancelFunc
	done        chan struct{}
}

// run starts reading; stop ends it. The subscriber is done once it stopped for a reason
// of its own (ended).
func (s *subscriber) run() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done, s.lastID = cancel, make(chan struct{}), s.resume
	go func() {
		defer close(s.done)
		for i := 0; ctx.Err() == nil; {
			next, wait := s.connect(ctx, s.servers[i%len(s.servers)])
			if s.isEnded() {
				return
			}
			if next && s.failover {
				i++
			}
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
	}()
}

// stop ends the subscriber and waits for it.
func (s *subscriber) stop() {
	s.cancel()
	<-s.done
}

func (s *subscriber) isEnded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// problem records something the stream did that a server must never do.
func (s *subscriber) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

// connect makes one request and reads its stream until it ends. It returns whether the
// next attempt should go to another server (when failing over) and how long to wait.
func (s *subscriber) connect(ctx context.Context, server string) (next bool, wait time.Duration) {
	u := server + "/v1/tables/" + url.PathEscape(s.table) + "/stream"
	if s.byPath {
		u = server + "/stream/" + url.PathEscape(s.token)
	}
	q := url.Values{}
	if s.json {
		q.Set("encoding", "json")
	}
	s.mu.Lock()
	resumeFrom := s.lastID
	s.mu.Unlock()
	if resumeFrom == "" && s.start != "" {
		q.Set("cursor", s.start)
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		s.problem("request: %v", err)
		return false, time.Second
	}
	req.Header.Set("Accept", "text/event-stream")
	if !s.byPath {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	if resumeFrom != "" {
		req.Header.Set("Last-Event-ID", resumeFrom)
	}
	resp, err := nodesHTTP.Do(req)
	if err != nil {
		return true, 50 * time.Millisecond
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusServiceUnavailable, http.StatusBadGateway:
		return true, 100 * time.Millisecond
	default:
		b, _ := io.ReadAll(resp.Body)
		s.mu.Lock()
		s.ended, s.status, s.endedAt = true, resp.StatusCode, time.Now()
		s.problems = append(s.problems, fmt.Sprintf("status %d from %s: %s", resp.StatusCode, server, b))
		s.mu.Unlock()
		return false, 0
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		s.problem("Content-Type %q from %s", ct, server)
	}
	p := ssetest.NewParser(resp.Body)
	for first := true; ; first = false {
		ev, err := p.Next()
		if err != nil {
			return true, 50 * time.Millisecond
		}
		if first {
			s.mu.Lock()
			s.connections = append(s.connections, connection{server: server, resumedFrom: resumeFrom, firstEvent: ev.Event, firstID: ev.ID})
			s.mu.Unlock()
		}
		switch ev.Event {
		case "schema":
			s.mu.Lock()
			s.lastID = ev.ID
			s.mu.Unlock()
		case "batch":
			rows, err := s.rows(ev.Data)
			if err != nil {
				s.problem("batch %s from %s: %v", ev.ID, server, err)
			}
			s.mu.Lock()
			s.batches = append(s.batches, delivery{cursor: ev.ID, seq: cursorSeq(ev.ID), rows: rows, at: time.Now()})
			s.lastID = ev.ID
			s.mu.Unlock()
		case "heartbeat":
		case "reconnect":
			var d struct {
				Reason  string
				RetryMS int `json:"retry_ms"`
			}
			json.Unmarshal([]byte(ev.Data), &d)
			s.mu.Lock()
			s.reconnects = append(s.reconnects, d.Reason)
			s.mu.Unlock()
			return true, min(time.Duration(d.RetryMS)*time.Millisecond, 200*time.Millisecond)
		case "refresh-required", "failure":
			s.mu.Lock()
			s.ended, s.terminal, s.endedAt = true, ev, time.Now()
			s.mu.Unlock()
			return false, 0
		default:
			s.problem("unknown event %q from %s", ev.Event, server)
		}
	}
}

// rows decodes the n column of a batch event's data.
func (s *subscriber) rows(data string) ([]int64, error) {
	if s.json {
		var b struct{ Rows [][]json.Number }
		d := json.NewDecoder(strings.NewReader(data))
		d.UseNumber()
		if err := d.Decode(&b); err != nil {
			return nil, err
		}
		out := make([]int64, 0, len(b.Rows))
		for _, r := range b.Rows {
			if len(r) != 2 {
				return nil, fmt.Errorf("row %v: want p and n", r)
			}
			n, err := r[1].Int64()
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		}
		return out, nil
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil, err
	}
	r, err := ipc.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	defer r.Release()
	var out []int64
	for r.Next() {
		rec := r.RecordBatch()
		idx := rec.Schema().FieldIndices("n")
		if len(idx) != 1 {
			return nil, fmt.Errorf("no column n in %v", rec.Schema())
		}
		out = append(out, rec.Column(idx[0]).(*array.Int64).Int64Values()...)
	}
	if r.Err() != nil && !errors.Is(r.Err(), io.EOF) {
		return nil, r.Err()
	}
	return out, nil
}

// lastSeq returns the seq of the last batch received, and whether the subscriber ended.
func (s *subscriber) lastSeq() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var seq int64
	if n := len(s.batches); n > 0 {
		seq = s.batches[n-1].seq
	}
	return seq, s.ended
}

// startSeq returns the seq of the first event of the first stream, -1 before one.
func (s *subscriber) startSeq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.connections) == 0 {
		return -1
	}
	return cursorSeq(s.connections[0].firstID)
}

// String describes the subscriber's state for a failure message.
func (s *subscriber) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := int64(0)
	if n := len(s.batches); n > 0 {
		last = s.batches[n-1].seq
	}
	var servers []string
	for _, c := range s.connections {
		servers = append(servers, c.server)
	}
	return fmt.Sprintf("%s: %d batches, last seq %d, connections %v, reconnects %v, ended %v (%s %s, status %d), problems %q",
		s.name, len(s.batches), last, servers, s.reconnects, s.ended, s.terminal.Event, s.terminal.Data, s.status, s.problems)
}

// subscribe starts one subscriber per spec.
func subscribe(t testing.TB, specs ...*subscriber) []*subscriber {
	t.Helper()
	for _, s := range specs {
		s.run()
		t.Cleanup(s.stop)
	}
	return specs
}

// waitStarted waits until every subscriber has read the first event of a stream.
func waitStarted(t testing.TB, subs []*subscriber) {
	t.Helper()
	waitFor(t, subs, "every stream to start", func(s *subscriber) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.connections) > 0 || s.ended
	})
}

// waitDelivered waits until every subscriber has received seq, or ended.
func waitDelivered(t testing.TB, subs []*subscriber, seq int64) {
	t.Helper()
	waitFor(t, subs, fmt.Sprintf("seq %d at every subscriber", seq), func(s *subscriber) bool {
		last, ended := s.lastSeq()
		return last >= seq || ended
	})
}

// waitEnded waits until every subscriber ended.
func waitEnded(t testing.TB, subs []*subscriber) {
	t.Helper()
	waitFor(t, subs, "every stream to end", func(s *subscriber) bool { return s.isEnded() })
}

// waitFor waits up to 3 minutes (a bound against a hang on a busy machine, not a
// measure) until cond holds for every subscriber; the failure names the others.
func waitFor(t testing.TB, subs []*subscriber, what string, cond func(*subscriber) bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var behind []*subscriber
		for _, s := range subs {
			if !cond(s) {
				behind = append(behind, s)
			}
		}
		if len(behind) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for i, s := range behind {
				if i == 10 {
					fmt.Fprintf(&b, "\n… and %d more", len(behind)-10)
					break
				}
				fmt.Fprintf(&b, "\n%s", s)
			}
			t.Fatalf("timed out waiting for %s; %d of %d subscribers not there:%s", what, len(behind), len(subs), b.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkExactly returns what is wrong with what s received, nil when it received exactly
// the commits of want after the seq it started from, each once, in seq order, with its
// cursor and rows, and nothing else, every connection beginning with a schema event at
// the position it started or resumed from, and the server did nothing else amiss.
func checkExactly(s *subscriber, want []commit) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []string
	errorf := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if len(s.problems) > 0 {
		errorf("%s: %q", s.name, s.problems)
	}
	if len(s.connections) == 0 {
		errorf("%s: never connected", s.name)
		return errs
	}
	startSeq := cursorSeq(s.connections[0].firstID)
	if from := s.start + s.resume; from != "" && startSeq != cursorSeq(from) {
		errorf("%s: the first stream starts at seq %d, want seq %d of the cursor it started from", s.name, startSeq, cursorSeq(from))
	}
	for i, c := range s.connections {
		if c.firstEvent != "schema" {
			errorf("%s: connection %d to %s began with %q (%s), want schema", s.name, i, c.server, c.firstEvent, s.terminal.Data)
		}
		if c.resumedFrom != "" && cursorSeq(c.firstID) != cursorSeq(c.resumedFrom) {
			errorf("%s: connection %d to %s resumed from seq %d but its schema event is at seq %d", s.name, i, c.server, cursorSeq(c.resumedFrom), cursorSeq(c.firstID))
		}
	}
	var expect []commit
	for _, c := range want {
		if c.seq > startSeq {
			expect = append(expect, c)
		}
	}
	got := s.batches
	for i := range max(len(got), len(expect)) {
		switch {
		case i >= len(got):
			errorf("%s: missing %d commits from seq %d on (received %d, started at seq %d; %s)", s.name, len(expect)-i, expect[i].seq, len(got), startSeq, s.describeLocked())
			return errs
		case i >= len(expect):
			errorf("%s: %d batches more than the %d acknowledged commits after seq %d, the first at seq %d", s.name, len(got)-i, len(expect), startSeq, got[i].seq)
			return errs
		case got[i].seq != expect[i].seq || got[i].cursor != expect[i].cursor:
			errorf("%s: batch %d is seq %d (%s), want seq %d (%s) (%s)", s.name, i, got[i].seq, got[i].cursor, expect[i].seq, expect[i].cursor, s.describeLocked())
			return errs
		case !slices.Equal(got[i].rows, expect[i].rows):
			errorf("%s: seq %d rows %v, want %v", s.name, got[i].seq, got[i].rows, expect[i].rows)
			return errs
		}
	}
	return errs
}

// describeLocked lists the seqs received around each connection; s.mu is held.
func (s *subscriber) describeLocked() string {
	var seqs []int64
	for _, d := range s.batches {
		seqs = append(seqs, d.seq)
	}
	return fmt.Sprintf("seqs %v, connections %+v, reconnects %v", seqs, s.connections, s.reconnects)
}
