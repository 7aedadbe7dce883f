package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// nodesHTTP is the HTTP client of the TestNodes scenarios: plaintext HTTP/1.1, one
// connection per open stream. It follows no redirect, so that a stream a node sends to
// the writer (307) is seen as such.
var nodesHTTP = &http.Client{
	Transport:     &http.Transport{MaxIdleConnsPerHost: 64, ResponseHeaderTimeout: time.Minute},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// apiClient calls one server (the writer, or a stream node that proxies to it) with a
// bearer token.
type apiClient struct {
	base  string
	token string
}

// do sends a request and returns the status, the body and the header; an error only
// when no answer came.
func (c apiClient) do(method, path, contentType, body string) (int, []byte, http.Header, error) {
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := nodesHTTP.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header, err
}

// must sends a request and fails the test unless the answer has status want.
func (c apiClient) must(t testing.TB, want int, method, path, contentType, body string) ([]byte, http.Header) {
	t.Helper()
	status, b, h, err := c.do(method, path, contentType, body)
	if err != nil {
		t.Fatalf("%s %s%s: %v", method, c.base, path, err)
	}
	if status != want {
		t.Fatalf("%s %s%s: status %d, want %d: %s", method, c.base, path, status, want, b)
	}
	return b, h
}

// createTable creates table name with columns p (the producer) and n (a value unique
// to its row) and returns the cursor of its empty snapshot.
func (c apiClient) createTable(t testing.TB, name string) string {
	t.Helper()
	c.must(t, http.StatusCreated, "POST", "/v1/tables", "application/json",
		fmt.Sprintf(`{"name":%q,"columns":[{"name":"p","type":"BIGINT"},{"name":"n","type":"BIGINT"}]}`, name))
	return c.snapshotCursor(t, name)
}

// snapshotCursor reads table's snapshot and returns its cursor (Ducktail-Cursor).
func (c apiClient) snapshotCursor(t testing.TB, table string) string {
	t.Helper()
	_, h := c.must(t, http.StatusOK, "GET", "/v1/tables/"+url.PathEscape(table)+"/snapshot", "", "")
	cur := h.Get("Ducktail-Cursor")
	if cursorSeq(cur) < 0 {
		t.Fatalf("snapshot of %s: cursor %q", table, cur)
	}
	return cur
}

// streamToken creates a stream token for table and returns its id and secret.
func (c apiClient) streamToken(t testing.TB, table string) (id, secret string) {
	t.Helper()
	b, _ := c.must(t, http.StatusCreated, "POST", "/v1/tokens", "application/json", fmt.Sprintf(`{"purpose":"stream","table":%q}`, table))
	var tok struct{ ID, Token string }
	if err := json.Unmarshal(b, &tok); err != nil || tok.ID == "" || tok.Token == "" {
		t.Fatalf("token answer %s: %v", b, err)
	}
	return tok.ID, tok.Token
}

// commit is one acknowledged commit: its seq and cursor as the ingest answer gave them,
// and the n of its rows, in order.
type commit struct {
	seq    int64
	cursor string
	rows   []int64
}

// ingest commits one row per value of ns (p = producer) into table and returns the
// acknowledged commit.
func (c apiClient) ingest(table string, producer int, ns []int64) (commit, error) {
	var body strings.Builder
	for _, n := range ns {
		fmt.Fprintf(&body, "{\"p\":%d,\"n\":%d}\n", producer, n)
	}
	status, b, _, err := c.do("POST", "/v1/tables/"+url.PathEscape(table)+"/rows", "application/x-ndjson", body.String())
	if err != nil {
		return commit{}, err
	}
	if status != http.StatusCreated {
		return commit{}, fmt.Errorf("ingest via %s: status %d: %s", c.base, status, b)
	}
	var ack struct {
		Seq    int64
		Cursor string
		Rows   int64
	}
	if err := json.Unmarshal(b, &ack); err != nil || ack.Rows != int64(len(ns)) || cursorSeq(ack.Cursor) != ack.Seq {
		return commit{}, fmt.Errorf("ingest answer %s: %v", b, err)
	}
	return commit{seq: ack.Seq, cursor: ack.Cursor, rows: ns}, nil
}

// mustIngest is ingest failing the test on an error.
func (c apiClient) mustIngest(t testing.TB, l *ledger, table string, producer int, ns ...int64) commit {
	t.Helper()
	cm, err := c.ingest(table, producer, ns)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.add(cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

// ledger is every acknowledged commit of one table activation, by seq.
type ledger struct {
	mu      sync.Mutex
	commits map[int64]commit
}

func newLedger() *ledger { return &ledger{commits: map[int64]commit{}} }

// add records an acknowledged commit. Errors: a seq acknowledged twice.
func (l *ledger) add(c commit) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.commits[c.seq]; ok {
		return fmt.Errorf("seq %d acknowledged twice: rows %v and %v", c.seq, old.rows, c.rows)
	}
	l.commits[c.seq] = c
	return nil
}

// all returns the commits in seq order; it fails the test unless their seqs are 1, 2, …
// without a gap (every commit of the activation was acknowledged to the test).
func (l *ledger) all(t testing.TB) []commit {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]commit, 0, len(l.commits))
	for _, c := range l.commits {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b commit) int { return int(a.seq - b.seq) })
	for i, c := range out {
		if c.seq != int64(i+1) {
			t.Fatalf("acknowledged seqs are not 1…%d: %d at %d", len(out), c.seq, i)
		}
	}
	return out
}

// last returns the highest acknowledged seq.
func (l *ledger) last() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var m int64
	for s := range l.commits {
		m = max(m, s)
	}
	return m
}

// produce runs producers goroutines, producer i committing commits commits into table
// through clients[i % len(clients)], each of 1 to 3 rows whose n is unique (base +
// i·100000 + commit·10 + row), one after the other. It returns once every commit was
// acknowledged, or with the first error.
func produce(l *ledger, clients []apiClient, table string, producers, commits int, base int64) error {
	errs := make(chan error, producers)
	var wg sync.WaitGroup
	for i := range producers {
		wg.Go(func() {
			c := clients[i%len(clients)]
			for j := range commits {
				ns := make([]int64, 1+(i+j)%3)
				for k := range ns {
					ns[k] = base + int64(i)*100000 + int64(j)*10 + int64(k)
				}
				cm, err := c.ingest(table, i, ns)
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

// cursorSeq returns the seq of a cursor (docs/design.md, "The cursor": big-endian, after
// the version byte, the table id and the activation), -1 when s is not shaped like one.
// It does not check the MAC: the servers do.
func cursorSeq(s string) int64 {
	raw, ok := cursorPayload(s)
	if !ok {
		return -1
	}
	return int64(binary.BigEndian.Uint64(raw[25:33]))
}

// cursorTableID returns the table id of a cursor, -1 when s is not shaped like one.
func cursorTableID(s string) int64 {
	raw, ok := cursorPayload(s)
	if !ok {
		return -1
	}
	return int64(binary.BigEndian.Uint64(raw[1:9]))
}

func cursorPayload(s string) ([]byte, bool) {
	_, enc, ok := strings.Cut(s, ".")
	if !ok || (!strings.HasPrefix(s, "r1.") && !strings.HasPrefix(s, "r2.")) {
		return nil, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(raw) < 33 {
		return nil, false
	}
	return raw, true
}
