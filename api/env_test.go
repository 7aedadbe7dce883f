package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ducktail/ducktail/api"
	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// env is a real ducktail stack on loopback: a DuckDB file in t.TempDir(), the hub, the
// snapshot reader and the API behind a real HTTP server.
type env struct {
	t      testing.TB
	db     *store.DB
	hub    *stream.Hub
	srv    *httptest.Server
	admin  string
	client *http.Client
}

// options tune an env before it opens.
type options struct {
	db     func(*store.DB)
	hub    func(*stream.Hub)
	reader func(*snapshot.Reader)
	api    func(*api.Config)
	// http tunes the HTTP server before it starts.
	http func(*http.Server)
	// path reuses a database file (a restart); "" makes a new one.
	path string
}

func newEnv(t testing.TB, o options) *env {
	t.Helper()
	path := o.path
	if path == "" {
		path = filepath.Join(t.TempDir(), "ducktail.duckdb")
	}
	db, hub, handler := openStack(t, path, o)
	srv := httptest.NewUnstartedServer(handler)
	if o.http != nil {
		o.http(srv.Config)
	}
	srv.Start()
	e := &env{t: t, db: db, hub: hub, srv: srv, client: srv.Client()}
	t.Cleanup(e.close)
	_, e.admin, _ = db.CreateToken(context.Background(), store.PurposeAdmin, "", 0)
	return e
}

// openStack opens the stack at path (api.OpenStack; logging nowhere, no rate limit), tuned
// by o, and returns the store and hub with the API handler over them.
func openStack(t testing.TB, path string, o options) (*store.DB, *stream.Hub, http.Handler) {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	cfg := api.StackConfig{Store: store.NewDB(path), Hub: stream.NewHub(nil), Reader: snapshot.NewReader(nil),
		API: api.Config{Logger: quiet, RateLimit: -1}}
	cfg.Store.Logger, cfg.Hub.Logger, cfg.Reader.Logger = quiet, quiet, quiet
	if o.db != nil {
		o.db(cfg.Store)
	}
	if o.hub != nil {
		o.hub(cfg.Hub)
	}
	if o.reader != nil {
		o.reader(cfg.Reader)
	}
	if o.api != nil {
		o.api(&cfg.API)
	}
	st, err := api.OpenStack(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st.Store, st.Hub, st.Handler
}

func (e *env) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	e.hub.Drain(ctx, 0)
	e.srv.CloseClientConnections()
	e.srv.Close()
	e.hub.Close()
	e.db.Close()
}

// token makes a token and returns its secret.
func (e *env) token(t testing.TB, purpose store.Purpose, table string) string {
	t.Helper()
	_, secret, err := e.db.CreateToken(context.Background(), purpose, table, 0)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
}

// problem decodes a problem+json body.
func (r response) problem(t testing.TB) api.Problem {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("status %d, Content-Type %q, body %s: want a problem+json", r.status, ct, r.body)
	}
	var p api.Problem
	r.json(t, &p)
	if p.Status != r.status || p.Type == "" || p.Title == "" || p.Code == "" {
		t.Fatalf("problem %+v does not match status %d", p, r.status)
	}
	return p
}

// do sends a request with token (none when "") and headers as "Name: value" strings.
func (e *env) do(t testing.TB, method, path, token string, body []byte, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// ingest posts body to a table ("weather", or "weather?create=true") and returns the
// answer, failing unless the status is want.
func (e *env) ingest(t testing.TB, table, contentType string, body []byte, want int, headers ...string) response {
	t.Helper()
	name, query, _ := strings.Cut(table, "?")
	if query != "" {
		query = "?" + query
	}
	r := e.do(t, "POST", "/v1/tables/"+name+"/rows"+query, e.admin, body, append(headers, "Content-Type: "+contentType)...)
	if r.status != want {
		t.Fatalf("ingest into %s: status %d, body %s; want %d", table, r.status, r.body, want)
	}
	return r
}

// queryJSON runs a query and decodes its JSON answer.
func (e *env) queryJSON(t testing.TB, sql string, params ...any) queryResult {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"sql": sql, "params": params})
	r := e.do(t, "POST", "/v1/query", e.admin, body, "Accept: application/json")
	if r.status != http.StatusOK {
		t.Fatalf("query %q: status %d: %s", sql, r.status, r.body)
	}
	var q queryResult
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.UseNumber()
	if err := dec.Decode(&q); err != nil {
		t.Fatal(err)
	}
	return q
}

type queryResult struct {
	Columns []struct{ Name, Type string }
	Rows    []map[string]any
	Cursors map[string]string
}
