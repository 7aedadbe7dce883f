package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ducktail/ducktail/api"
	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// stack is a real ducktail stack on loopback, as api/env_test.go builds it: a DuckDB
// file, the hub, the snapshot reader and the API behind a real HTTP server.
type stack struct {
	path string
	addr string
	db   *store.DB
	hub  *stream.Hub
	srv  *httptest.Server
}

// envOptions tune a stack; they apply again at every start.
type envOptions struct {
	hub func(*stream.Hub)
	// listener wraps the server's listener (small socket buffers).
	listener func(net.Listener) net.Listener
}

// testRetry is the server's base reconnect delay in tests (its --retry): the SSE retry
// field and retry_ms are this plus up to as much jitter.
const testRetry = 5 * time.Millisecond

// openStack opens the database at path and serves it on addr ("127.0.0.1:0" for any
// port). Opening again on the same path and address is a restart.
func openStack(path, addr string, o envOptions) (*stack, error) {
	quiet := slog.New(slog.DiscardHandler)
	cfg := api.StackConfig{Store: store.NewDB(path), Hub: stream.NewHub(nil), Reader: snapshot.NewReader(nil),
		API: api.Config{Logger: quiet, RateLimit: -1}}
	cfg.Store.Logger, cfg.Hub.Logger, cfg.Reader.Logger = quiet, quiet, quiet
	cfg.Hub.Retry = testRetry
	if o.hub != nil {
		o.hub(cfg.Hub)
	}
	st, err := api.OpenStack(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	ln, err := listenAgain(addr)
	if err != nil {
		st.Close()
		return nil, err
	}
	if o.listener != nil {
		ln = o.listener(ln)
	}
	srv := httptest.NewUnstartedServer(st.Handler)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	return &stack{path: path, addr: ln.Addr().String(), db: st.Store, hub: st.Hub, srv: srv}, nil
}

// listenAgain listens on addr, retrying for a while: after a restart the old socket may
// still hold the port for a moment.
func listenAgain(addr string) (net.Listener, error) {
	var err error
	for range 100 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err == nil {
			return ln, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, err
}

// URL is the server's base URL; it stays the same across restarts.
func (s *stack) URL() string { return "http://" + s.addr }

// close shuts the stack down: with drain, open streams are asked to reconnect
// (reconnect, server_draining) and given a moment to leave first; without, they are cut.
func (s *stack) close(drain bool) {
	if drain {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.hub.Drain(ctx, 0)
		cancel()
	}
	s.srv.CloseClientConnections()
	s.srv.Close()
	s.hub.Close()
	s.db.Close()
}

// env is a stack owned by a test, with an admin token, restartable on the same file and
// address.
type env struct {
	*stack
	t     testing.TB
	o     envOptions
	admin string
	http  *http.Client
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	s, err := openStack(filepath.Join(t.TempDir(), "ducktail.duckdb"), "127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{stack: s, t: t, o: o, http: &http.Client{}}
	t.Cleanup(func() {
		if e.stack != nil {
			e.close(false)
		}
	})
	if _, e.admin, err = s.db.CreateToken(context.Background(), store.PurposeAdmin, "", 0); err != nil {
		t.Fatal(err)
	}
	return e
}

// restart stops the stack and starts it again on the same file and address.
func (e *env) restart(drain bool) {
	e.t.Helper()
	path, addr := e.path, e.addr
	e.close(drain)
	e.stack = nil
	e.http.CloseIdleConnections()
	s, err := openStack(path, addr, e.o)
	if err != nil {
		e.t.Fatal(err)
	}
	e.stack = s
}

// do sends a request with the admin token straight to the server and returns the status
// and body.
func (e *env) do(method, path string, body []byte, headers ...string) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.URL()+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.admin)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	resp, err := e.http.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// createNumbers creates table with columns n BIGINT and s VARCHAR.
func (e *env) createNumbers(table string) {
	e.t.Helper()
	body := fmt.Sprintf(`{"name":%q,"columns":[{"name":"n","type":"BIGINT"},{"name":"s","type":"VARCHAR"}]}`, table)
	if status, b := e.do("POST", "/v1/tables", []byte(body)); status != http.StatusCreated {
		e.t.Fatalf("create %s: %d %s", table, status, b)
	}
}

// ingestNumbers commits rows n = first … first+count-1 in one commit, each with s of
// pad bytes ("row N" when pad is 0).
func (e *env) ingestNumbers(table string, first, count, pad int) {
	e.t.Helper()
	var b bytes.Buffer
	for i := first; i < first+count; i++ {
		s := fmt.Sprintf("row %d", i)
		if pad > 0 {
			s = strings.Repeat("x", pad)
		}
		fmt.Fprintf(&b, "{\"n\":%d,\"s\":%q}\n", i, s)
	}
	if status, body := e.do("POST", "/v1/tables/"+table+"/rows", b.Bytes(), "Content-Type: application/x-ndjson"); status != http.StatusCreated {
		e.t.Fatalf("ingest into %s: %d %s", table, status, body)
	}
}

// tableNs returns the n column of the table, in commit order, read straight from the
// server: the oracle every consumer is compared with.
func (e *env) tableNs(table string) []int64 {
	e.t.Helper()
	status, body := e.do("GET", "/v1/tables/"+table+"/snapshot", nil, "Accept: application/x-ndjson")
	if status != http.StatusOK {
		e.t.Fatalf("snapshot of %s: %d %s", table, status, body)
	}
	var ns []int64
	for line := range bytes.SplitSeq(bytes.TrimSpace(body), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var row struct{ N int64 }
		if err := json.Unmarshal(line, &row); err != nil {
			e.t.Fatal(err)
		}
		ns = append(ns, row.N)
	}
	return ns
}

// head returns the cursor of the table's last commit (its baseline after a reset).
func (e *env) head(table string) string {
	e.t.Helper()
	status, body := e.do("GET", "/v1/tables/"+table, nil)
	if status != http.StatusOK {
		e.t.Fatalf("describe %s: %d %s", table, status, body)
	}
	var d struct{ Cursor string }
	if err := json.Unmarshal(body, &d); err != nil {
		e.t.Fatal(err)
	}
	return d.Cursor
}

// token makes a token of purpose for table ("" for any) and returns its id and secret.
func (e *env) token(purpose store.Purpose, table string) (string, string) {
	e.t.Helper()
	tok, secret, err := e.db.CreateToken(context.Background(), purpose, table, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok.ID, secret
}

// eventually fails the test unless cond holds within a generous bound; it guards against
// a hang, it does not measure anything.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// running is a consumer running in its own goroutine, owned by the test: stop cancels it
// and waits for its result.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	once   sync.Once
}

func run(t testing.TB, f func(ctx context.Context) error) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = f(ctx)
	}()
	t.Cleanup(func() { r.stop() })
	return r
}

// stop cancels the consumer and returns what it returned.
func (r *running) stop() error {
	r.once.Do(func() {
		r.cancel()
		<-r.done
	})
	return r.err
}

// wait returns what the consumer returned on its own, failing the test when it has not
// returned within a generous bound.
func (r *running) wait(t testing.TB) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(30 * time.Second):
		t.Fatal("the consumer did not return")
		return nil
	}
}
