package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/stream"
)

// tableNs returns the n column of a table through a JSON snapshot, and the snapshot's
// cursor.
func (e *env) tableNs(t testing.TB, table string) ([]int64, string) {
	t.Helper()
	r := e.do(t, "GET", "/v1/tables/"+table+"/snapshot", e.admin, nil, "Accept: application/x-ndjson")
	if r.status != http.StatusOK {
		t.Fatalf("snapshot: %d %s", r.status, r.body)
	}
	var ns []int64
	for _, line := range bytes.Split(bytes.TrimSpace(r.body), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var row struct{ N int64 }
		if err := json.Unmarshal(line, &row); err != nil {
			t.Fatal(err)
		}
		ns = append(ns, row.N)
	}
	return ns, r.header.Get("Ducktail-Cursor")
}

func TestResumeWithLastEventIDReplaysThenGoesLive(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "t")
	s := e.sse(t, "/v1/tables/t/stream", e.admin)
	s.next()
	var last string
	for i := 1; i <= 5; i++ {
		e.ingestNumbers(t, "t", i, 1)
		last = s.next().ID
	}
	s.resp.Body.Close()
	for i := 6; i <= 40; i++ {
		e.ingestNumbers(t, "t", i, 1)
	}
	// Resume by header and by ?cursor=: the same replay.
	for _, how := range []string{"header", "query"} {
		path, headers := "/v1/tables/t/stream", []string{"Last-Event-ID: " + last}
		if how == "query" {
			path, headers = path+"?cursor="+last, nil
		}
		r := e.sse(t, path, e.admin, headers...)
		if ev := r.next(); ev.Event != "schema" || ev.ID != last {
			t.Fatalf("%s: first event %+v", how, ev)
		}
		var got []int64
		for len(got) < 35 {
			_, recs := decodePayload(t, r.next().Data)
			got = append(got, nValues(recs)...)
		}
		e.ingestNumbers(t, "t", 41, 1)
		_, recs := decodePayload(t, r.next().Data)
		got = append(got, nValues(recs)...)
		for i, n := range got {
			if n != int64(i+6) {
				t.Fatalf("%s: replay+live = %v, want 6..41", how, got)
			}
		}
		r.resp.Body.Close()
	}
}

// TestSnapshotCursorHandOffIsExact takes snapshots while commits land and subscribes
// from each snapshot's cursor: the snapshot's rows followed by the streamed rows must be
// exactly the final table, nothing missing and nothing twice (docs/design.md, "The atomic
// hand-off").
func TestSnapshotCursorHandOffIsExact(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "t")
	const total = 300
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= total; i++ {
			e.ingestNumbers(t, "t", i, 1+i%3)
		}
	}()
	var wg sync.WaitGroup
	results := make([][]int64, 8)
	for k := range results {
		time.Sleep(15 * time.Millisecond)
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			rows, cursor := e.tableNs(t, "t")
			s := e.sse(t, "/v1/tables/t/stream?cursor="+cursor, e.admin)
			if ev := s.next(); ev.Event != "schema" || ev.ID != cursor {
				t.Errorf("first event %+v, want schema at the snapshot cursor", ev)
				return
			}
			for len(rows) == 0 || rows[len(rows)-1] != total {
				_, recs := decodePayload(t, s.next().Data)
				rows = append(rows, nValues(recs)...)
			}
			results[k] = rows
		}(k)
	}
	<-done
	wg.Wait()
	final, _ := e.tableNs(t, "t")
	for k, rows := range results {
		if !slices.Equal(rows, final) {
			t.Fatalf("subscriber %d: snapshot+stream has %d rows, table has %d (first difference at %d)", k, len(rows), len(final), firstDiff(rows, final))
		}
	}
}

func firstDiff(a, b []int64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestCursorSurvivesRestart disconnects, restarts the server on the same file, and
// resumes with the last cursor.
func TestCursorSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ducktail.duckdb")
	e := newEnv(t, options{path: path})
	e.createNumbers(t, "t")
	s := e.sse(t, "/v1/tables/t/stream", e.admin)
	s.next()
	e.ingestNumbers(t, "t", 1, 2)
	last := s.next().ID
	e.ingestNumbers(t, "t", 3, 2)
	e.close()

	e2 := newEnv(t, options{path: path})
	e2.ingestNumbers(t, "t", 5, 1)
	r := e2.sse(t, "/v1/tables/t/stream", e2.admin, "Last-Event-ID: "+last)
	if ev := r.next(); ev.Event != "schema" || ev.ID != last {
		t.Fatalf("after restart: %+v", ev)
	}
	var got []int64
	for len(got) < 3 {
		_, recs := decodePayload(t, r.next().Data)
		got = append(got, nValues(recs)...)
	}
	if fmt.Sprint(got) != "[3 4 5]" {
		t.Fatalf("resumed rows %v, want [3 4 5]", got)
	}
}

func TestResumeRefusals(t *testing.T) {
	e := newEnv(t, options{hub: func(h *stream.Hub) { h.MaxReplayCommits = 5; h.MaxReplayRows = 100 }})
	e.createNumbers(t, "t")
	e.createNumbers(t, "u")
	first := e.ingestNumbers(t, "t", 1, 1)
	for i := 0; i < 6; i++ {
		e.ingestNumbers(t, "t", 1, 1)
	}
	wide := e.ingestNumbers(t, "t", 1, 1)
	e.ingestNumbers(t, "t", 1, 150)
	other := e.ingestNumbers(t, "u", 1, 1)
	dropped := e.ingestNumbers(t, "u", 1, 1)
	e.do(t, "DELETE", "/v1/tables/u", e.admin, nil)
	e.createNumbers(t, "u")
	cases := map[string]string{
		"12345":      "numeric_cursor",
		"r1.garbage": "invalid_cursor",
		first:        "replay_limit",
		wide:         "replay_limit",
		other:        "foreign_cursor",
		first[:40] + strings.Repeat("A", len(first)-40): "tampered_cursor",
	}
	for cursor, reason := range cases {
		s := e.sse(t, "/v1/tables/t/stream", e.admin, "Last-Event-ID: "+cursor)
		ev := s.next()
		if ev.Event != "refresh-required" || ev.Data != `{"reason":"`+reason+`"}` {
			t.Errorf("cursor %.20s…: %+v, want refresh-required %s", cursor, ev, reason)
		}
	}
	s := e.sse(t, "/v1/tables/u/stream", e.admin, "Last-Event-ID: "+dropped)
	if ev := s.next(); ev.Data != `{"reason":"table_dropped"}` {
		t.Fatalf("cursor of a dropped table: %+v", ev)
	}
	// Go's client refuses to send a control character, so write the request by hand.
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/tables/t/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nLast-Event-ID: r1.a\x7fb\r\nConnection: close\r\n\r\n", e.admin)
	status, _ := bufio.NewReader(conn).ReadString('\n')
	if !strings.HasPrefix(status, "HTTP/1.1 400 ") {
		t.Fatalf("Last-Event-ID with a control character: %q", status)
	}
}

// consumer is a model client for the property test: it keeps the rows of the table it
// has applied and the cursor of the last batch it processed, rebuilding from a snapshot
// on refresh-required, as api/client.LiveQuery does.
type consumer struct {
	rows   []int64
	cursor string
	s      *sseStream
	schema []string
}

// TestPropertyRandomInterleavings runs random interleavings of ingest, disconnect,
// reconnect with the last processed cursor, reset and add-column, and checks after each
// step, with the table as the oracle, that every consumer holds exactly the table's rows.
func TestPropertyRandomInterleavings(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed*7919))
			e := newEnv(t, options{hub: func(h *stream.Hub) { h.MaxReplayCommits = 20 }})
			e.createNumbers(t, "t")
			consumers := make([]*consumer, 3)
			for i := range consumers {
				consumers[i] = &consumer{}
				consumers[i].rebuild(t, e)
			}
			next := 1
			columns := 0
			for step := 0; step < 60; step++ {
				switch op := rng.IntN(10); {
				case op < 6:
					n := rng.IntN(4)
					e.ingestNumbers(t, "t", next, n)
					next += n
				case op < 8:
					c := consumers[rng.IntN(len(consumers))]
					if c.s != nil {
						c.s.resp.Body.Close()
						c.s = nil
					}
				case op == 8:
					e.do(t, "POST", "/v1/tables/t/reset", e.admin, nil)
				default:
					columns++
					body := fmt.Sprintf(`{"name":"c%d","type":"DOUBLE"}`, columns)
					e.do(t, "POST", "/v1/tables/t/columns", e.admin, []byte(body))
				}
				want, _ := e.tableNs(t, "t")
				for i, c := range consumers {
					c.catchUp(t, e, len(want))
					if !slices.Equal(c.rows, want) {
						t.Fatalf("step %d consumer %d: has %v, table has %v", step, i, c.rows, want)
					}
				}
			}
		})
	}
}

// rebuild takes a snapshot and subscribes from its cursor.
func (c *consumer) rebuild(t *testing.T, e *env) {
	t.Helper()
	c.rows, c.cursor = e.tableNs(t, "t")
	c.connect(t, e)
}

func (c *consumer) connect(t *testing.T, e *env) {
	t.Helper()
	c.s = e.sse(t, "/v1/tables/t/stream", e.admin, "Last-Event-ID: "+c.cursor)
}

// catchUp reads events until the consumer holds want rows, reconnecting when
// disconnected and rebuilding on refresh-required.
func (c *consumer) catchUp(t *testing.T, e *env, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c.s == nil {
			c.connect(t, e)
		}
		if len(c.rows) == want && c.s.resp.Request != nil {
			// Confirm nothing else is pending: the table head equals our cursor.
			var d struct{ Cursor string }
			e.do(t, "GET", "/v1/tables/t", e.admin, nil).json(t, &d)
			if d.Cursor == c.cursor {
				return
			}
		}
		ev, err := c.s.p.Next()
		if err != nil {
			c.s = nil
			continue
		}
		switch ev.Event {
		case "schema":
			sc, _ := decodePayload(t, ev.Data)
			c.schema = c.schema[:0]
			for _, f := range sc.Fields() {
				c.schema = append(c.schema, f.Name)
			}
		case "batch":
			sc, recs := decodePayload(t, ev.Data)
			if sc.NumFields() != len(c.schema) {
				t.Fatalf("batch with %d columns after a schema of %d", sc.NumFields(), len(c.schema))
			}
			for _, r := range recs {
				c.rows = append(c.rows, r.Column(0).(*array.Int64).Int64Values()...)
			}
			c.cursor = ev.ID
		case "refresh-required":
			c.s.resp.Body.Close()
			c.rebuild(t, e)
		case "heartbeat":
		default:
			t.Fatalf("unexpected event %+v", ev)
		}
	}
	t.Fatalf("consumer did not catch up to %d rows (has %d)", want, len(c.rows))
}
