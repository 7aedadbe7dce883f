package api_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ducktail/ducktail/api"
	"github.com/ducktail/ducktail/internal/ssetest"
	"github.com/ducktail/ducktail/store"
)

func TestOpenStreamEndsWhenItsTokenIsRevokedOrExpires(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "t")
	tok, secret, _ := e.db.CreateToken(context.Background(), store.PurposeStream, "t", 0)
	s := e.sse(t, "/stream/"+secret, "")
	s.next()
	start := time.Now()
	if r := e.do(t, "DELETE", "/v1/tokens/"+tok.ID, e.admin, nil); r.status != 204 {
		t.Fatalf("revoke: %d", r.status)
	}
	ev := s.next()
	if ev.Event != "failure" || !strings.Contains(ev.Data, `"code":"token_revoked"`) || time.Since(start) > time.Second {
		t.Fatalf("after revoke: %+v after %v", ev, time.Since(start))
	}
	// A token that expires while its stream is open.
	_, short, _ := e.db.CreateToken(context.Background(), store.PurposeStream, "t", 1500*time.Millisecond)
	s2 := e.sse(t, "/stream/"+short, "")
	s2.next()
	if ev := s2.next(); ev.Event != "failure" || !strings.Contains(ev.Data, `"code":"token_expired"`) {
		t.Fatalf("after expiry: %+v", ev)
	}
	if r := e.do(t, "POST", "/v1/query", short, []byte(`{"sql":"SELECT 1"}`)); r.status != 401 {
		t.Fatalf("query with an expired token: %d", r.status)
	}
}

func TestRateLimitPerToken(t *testing.T) {
	e := newEnv(t, options{api: func(c *api.Config) { c.RateLimit = 1; c.RateBurst = 3 }})
	q := e.token(t, store.PurposeQuery, "")
	other := e.token(t, store.PurposeQuery, "")
	var last response
	for range 4 {
		last = e.do(t, "GET", "/v1/tables", q, nil)
	}
	if last.status != 429 || last.header.Get("Retry-After") == "" || last.problem(t).Code != "rate_limited" {
		t.Fatalf("4th request in a burst of 3: %d %v", last.status, last.header)
	}
	if r := e.do(t, "GET", "/v1/tables", other, nil); r.status != 200 {
		t.Fatalf("another token is limited separately: %d", r.status)
	}
}

func TestCORSPreflightAndOrigins(t *testing.T) {
	e := newEnv(t, options{api: func(c *api.Config) { c.CORSOrigins = []string{"https://dash.example"} }})
	e.createNumbers(t, "t")
	preflight := func(origin string) response {
		return e.do(t, "OPTIONS", "/v1/tables/t/stream", "", nil,
			"Origin: "+origin, "Access-Control-Request-Method: GET",
			"Access-Control-Request-Headers: authorization, last-event-id, content-type")
	}
	r := preflight("https://dash.example")
	allowed := strings.ToLower(r.header.Get("Access-Control-Allow-Headers"))
	if r.header.Get("Access-Control-Allow-Origin") != "https://dash.example" || !strings.Contains(r.header.Get("Vary"), "Origin") ||
		!strings.Contains(allowed, "authorization") || !strings.Contains(allowed, "last-event-id") || !strings.Contains(allowed, "content-type") {
		t.Fatalf("allowed preflight: %d %v", r.status, r.header)
	}
	r = preflight("https://evil.example")
	for k := range r.header {
		if strings.HasPrefix(k, "Access-Control-") {
			t.Fatalf("a disallowed origin got %s: %v", k, r.header)
		}
	}
	get := e.do(t, "GET", "/v1/tables/t", e.admin, nil, "Origin: https://dash.example")
	if get.header.Get("Access-Control-Allow-Origin") != "https://dash.example" || !strings.Contains(get.header.Get("Access-Control-Expose-Headers"), "Ducktail-Cursor") {
		t.Fatalf("simple request from an allowed origin: %v", get.header)
	}
	if r := e.openStream(t, "/v1/tables/t/stream", e.admin, "Origin: https://evil.example"); r.StatusCode != 403 {
		t.Fatalf("stream from a disallowed origin: %d", r.StatusCode)
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestTokensNeverReachLogsOrMetrics(t *testing.T) {
	var logs syncBuffer
	e := newEnv(t, options{api: func(c *api.Config) { c.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) }})
	e.createNumbers(t, "t")
	secret := e.token(t, store.PurposeStream, "t")
	s := e.sse(t, "/stream/"+secret, "")
	s.next()
	s.resp.Body.Close()
	e.do(t, "GET", "/stream/"+secret+"x", "", nil)
	e.do(t, "GET", "/v1/tables", secret, nil)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), `"route":"/stream/{token}","status":200`) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	metrics := string(e.do(t, "GET", "/metrics", "", nil).body)
	id := secret[3:19]
	for what, text := range map[string]string{"logs": logs.String(), "metrics": metrics} {
		if strings.Contains(text, secret[20:]) || strings.Contains(text, id) {
			t.Fatalf("token found in %s:\n%s", what, text)
		}
	}
	if !strings.Contains(logs.String(), `"route":"/stream/{token}"`) || !strings.Contains(logs.String(), `"request_id"`) {
		t.Fatalf("stream requests are not logged by route with a request id:\n%s", logs.String())
	}
}

// TestStreamsOverHTTP2AndHTTP1 serves the API with TLS (h2 negotiated by ALPN) and in
// plaintext (HTTP/1.1 and h2c), and reads a stream over each protocol.
func TestStreamsOverHTTP2AndHTTP1(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "t")
	handler := e.srv.Config.Handler
	tlsSrv := httptest.NewUnstartedServer(handler)
	tlsSrv.EnableHTTP2 = true
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plain := api.NewHTTPServer("127.0.0.1:0", handler, true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go plain.Serve(ln)
	defer plain.Close()

	h2 := tlsSrv.Client()
	h1 := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.Clone(), TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}}
	var h2cProtocols http.Protocols
	h2cProtocols.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: &h2cProtocols}}
	for _, c := range []struct {
		name   string
		client *http.Client
		url    string
		proto  int
	}{
		{"h2 over TLS", h2, tlsSrv.URL, 2},
		{"HTTP/1.1 over TLS", h1, tlsSrv.URL, 1},
		{"h2c", h2c, "http://" + ln.Addr().String(), 2},
		{"HTTP/1.1 plaintext", http.DefaultClient, "http://" + ln.Addr().String(), 1},
	} {
		req, _ := http.NewRequest("GET", c.url+"/v1/tables/t/stream", nil)
		req.Header.Set("Authorization", "Bearer "+e.admin)
		resp, err := c.client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if resp.ProtoMajor != c.proto || resp.StatusCode != 200 {
			t.Fatalf("%s: %s %d", c.name, resp.Proto, resp.StatusCode)
		}
		p := ssetest.NewParser(resp.Body)
		if ev, err := p.Next(); err != nil || ev.Event != "schema" {
			t.Fatalf("%s: first event %+v %v", c.name, ev, err)
		}
		cursor := e.ingestNumbers(t, "t", 1, 1)
		ev, err := p.Next()
		if err != nil || ev.Event != "batch" || ev.ID != cursor {
			t.Fatalf("%s: batch %+v %v", c.name, ev, err)
		}
		resp.Body.Close()
	}
}

// TestSandboxAttacksOverHTTP sends the sandbox's attack table through POST /v1/query:
// every attack gets a 4xx problem+json, and nothing changes.
func TestSandboxAttacksOverHTTP(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "t")
	e.ingestNumbers(t, "t", 1, 3)
	attacks := []string{
		"SELECT * FROM read_csv('/etc/passwd')",
		"SELECT * FROM read_text('/etc/hosts')",
		"SELECT * FROM read_parquet('x.parquet')",
		"SELECT * FROM '/etc/passwd'",
		"COPY t TO '/tmp/ducktail-attack.csv'",
		"EXPORT DATABASE '/tmp/ducktail-attack'",
		"ATTACH '/tmp/ducktail-attack.db'",
		"INSTALL httpfs", "LOAD httpfs",
		"SET threads = 1", "RESET threads", "PRAGMA version",
		"SELECT getenv('HOME')", "SELECT current_setting('threads')",
		"SELECT 1; DROP VIEW t", "DROP VIEW t", "INSERT INTO t VALUES (1, 'x')",
		"CREATE TABLE x AS SELECT 1", "CALL duckdb_tables()",
		"SELECT * FROM duckdb_tables()", "SELECT * FROM ducktail_catalog.tokens",
		"SELECT * FROM information_schema.tables",
		"WITH tokens AS (SELECT 1) SELECT * FROM ducktail_catalog.tokens",
	}
	for _, sql := range attacks {
		body, _ := json.Marshal(map[string]string{"sql": sql})
		r := e.do(t, "POST", "/v1/query", e.admin, body)
		if r.status < 400 || r.status >= 500 {
			t.Errorf("%q: status %d %s", sql, r.status, r.body)
			continue
		}
		r.problem(t)
	}
	if q := e.queryJSON(t, "SELECT count(*) AS n FROM t"); q.Rows[0]["n"].(json.Number).String() != "3" {
		t.Fatalf("table changed: %v", q.Rows)
	}

	// A token scoped to t must not reach the table payroll, nor the system views, by any
	// route found by the adversarial review.
	e.ingest(t, "payroll?create=true", "application/json", []byte(`[{"name":"alice","salary":123457}]`), http.StatusCreated)
	scoped := e.token(t, store.PurposeQuery, "t")
	deep := "SELECT " + strings.Repeat("(SELECT ", 28) + "1" + strings.Repeat(")", 28)
	for _, sql := range []string{
		"WITH RECURSIVE payroll AS (SELECT * FROM payroll UNION ALL SELECT * FROM payroll WHERE false) SELECT * FROM payroll",
		"WITH RECURSIVE duckdb_views AS (SELECT * FROM duckdb_views UNION ALL SELECT * FROM duckdb_views WHERE false) SELECT * FROM duckdb_views",
		"SELECT json_serialize_plan('SELECT 1 FROM payroll WHERE salary > 123456', optimize := true)",
		"SELECT json_serialize_plan('SELECT * FROM ducktail_catalog.tokens')",
		"SELECT getvariable('x')",
		deep,
		// Round two: Unicode case folding, crashes, CPU and memory leaks.
		"WITH \"duckdb_table\u017f\" AS (SELECT 1) SELECT * FROM duckdb_tables",
		"WITH \"duc\u212adb_tables\" AS (SELECT 1) SELECT * FROM duckdb_tables",
		"WITH \"pg_\u017fettings\" AS (SELECT 1) SELECT name, setting FROM pg_settings",
		"SELECT json_structure(repeat('[', 1000000) || repeat(']', 1000000)) IS NULL AS x",
		"SELECT json_contains(j, j) FROM (SELECT repeat('[', 1000000) || repeat(']', 1000000) AS j)",
		"SELECT levenshtein(repeat('a', 250000), repeat('b', 250000)) AS d",
		"SELECT (sum(x) EXPORT_STATE)::BLOB AS b FROM range(3) t(x)",
		"SELECT txid_current()",
	} {
		body, _ := json.Marshal(map[string]string{"sql": sql})
		start := time.Now()
		r := e.do(t, "POST", "/v1/query", scoped, body)
		if r.status < 400 || r.status >= 500 || strings.Contains(string(r.body), "123457") {
			t.Errorf("%.60q: status %d %s", sql, r.status, r.body)
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("%.60q took %v: refused only after planning", sql, time.Since(start))
		}
	}
	// A CTE may take the name of a table outside the token's scope: it reads the CTE,
	// and answers as it does under the name of a missing table, so that the token cannot
	// tell whether payroll exists (docs/design.md, "Shapes and policies").
	cte := func(name string) string {
		body, _ := json.Marshal(map[string]string{"sql": "WITH " + name + " AS (SELECT 1 AS x) SELECT * FROM " + name})
		r := e.do(t, "POST", "/v1/query", scoped, body)
		return fmt.Sprintf("%d %s", r.status, r.body)
	}
	if a, b := cte("payroll"), cte("nosuch"); a != b || strings.Contains(a, "123457") || !strings.HasPrefix(a, "200 ") {
		t.Errorf("a CTE named as a table outside the scope: %s; as a missing one: %s", a, b)
	}
	if r := e.do(t, "GET", "/healthz", "", nil); r.status != 200 {
		t.Fatalf("the server is down after the attacks: %d", r.status)
	}
	// Ordinary recursive CTEs still work.
	body, _ := json.Marshal(map[string]string{"sql": "WITH RECURSIVE c(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM c WHERE k < 5) SELECT sum(k) AS s FROM c"})
	if r := e.do(t, "POST", "/v1/query", scoped, body); r.status != 200 || !strings.Contains(string(r.body), `"s":15`) {
		t.Fatalf("recursive CTE: %d %s", r.status, r.body)
	}
}

func TestProblemDetailsNeverEchoAToken(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "t")
	revoked, secret, _ := e.db.CreateToken(context.Background(), store.PurposeStream, "", 0)
	e.db.RevokeToken(context.Background(), revoked.ID)
	for _, path := range []string{"/stream/" + secret, "/stream/" + e.admin + "?table=t", "/stream/" + e.token(t, store.PurposeStream, "")} {
		r := e.do(t, "GET", path, "", nil)
		p := r.problem(t)
		if strings.Contains(string(r.body), "dt_") || p.Instance != "/stream/{token}" {
			t.Fatalf("%d problem body echoes the path: %s", r.status, r.body)
		}
	}
	if r := e.do(t, "GET", "/stream/"+e.admin+"?table=t", "", nil); r.status != 403 {
		t.Fatalf("admin token in a URL: %d, want 403", r.status)
	}
}

func TestMethodNotAllowedAndNotAcceptable(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "t")
	r := e.do(t, "PUT", "/v1/tables/t", e.admin, nil)
	if r.status != 405 || r.header.Get("Allow") != "DELETE, GET" {
		t.Fatalf("PUT on a table: %d, Allow %q", r.status, r.header.Get("Allow"))
	}
	r = e.do(t, "GET", "/v1/tables/t/snapshot", e.admin, nil, "Accept: text/html")
	if r.status != 406 || r.problem(t).Code != "not_acceptable" {
		t.Fatalf("Accept text/html: %d %s", r.status, r.body)
	}
	r = e.do(t, "POST", "/v1/tables/t/rows", e.admin, []byte("x"), "Content-Type: application/xml")
	if p := r.problem(t); r.status != 415 || strings.Count(p.Detail, "unsupported media type") > 1 {
		t.Fatalf("Content-Type application/xml: %d %s", r.status, r.body)
	}
}

func TestControlPlaneJSONIsStrict(t *testing.T) {
	e := newEnv(t, options{})
	for body, want := range map[string]string{
		`{"purpose":"query","purpose":"admin"}`: `field \"purpose\" appears twice`,
		`{"PURPOSE":"query"}`:                   `unknown field \"PURPOSE\"`,
		`[]`:                                    "must be a JSON object",
		`{"purpose":"query"} {}`:                "more than one JSON value",
		`{"purpose":7}`:                         `field \"purpose\" must be a string`,
	} {
		r := e.do(t, "POST", "/v1/tokens", e.admin, []byte(body))
		if r.status != 400 || !strings.Contains(string(r.body), want) {
			t.Errorf("%s: %d %s, want 400 saying %s", body, r.status, r.body, want)
		}
	}
	if n := len(e.db.Tokens()); n != 1 {
		t.Fatalf("%d tokens after refused requests, want the admin token alone", n)
	}
	// Made-up methods do not mint metric series.
	e.do(t, "XYZZY", "/healthz", "", nil)
	if m := string(e.do(t, "GET", "/metrics", "", nil).body); strings.Contains(m, "XYZZY") || !strings.Contains(m, `method="other"`) {
		t.Fatal("a made-up method became a metric label")
	}
}

func TestSnapshotsAreBounded(t *testing.T) {
	e := newEnv(t, options{api: func(c *api.Config) { c.MaxSnapshots = 1 }})
	// 400,000 rows as JSON, ~20 MB: far more than loopback socket buffers hold, so the
	// first download stays in progress while its client does not read.
	e.ingest(t, "big?create=true", "application/vnd.apache.arrow.file", readFile(t, "flights-200k.arrow"), http.StatusCreated)
	e.ingest(t, "big", "application/vnd.apache.arrow.file", readFile(t, "flights-200k.arrow"), http.StatusCreated)
	slow := e.openStream(t, "/v1/tables/big/snapshot", e.admin, "Accept: application/json")
	if slow.StatusCode != 200 {
		t.Fatalf("first snapshot: %d", slow.StatusCode)
	}
	r := e.do(t, "GET", "/v1/tables/big/snapshot", e.admin, nil, "Accept: text/csv")
	if r.status != 503 || r.header.Get("Retry-After") == "" {
		t.Fatalf("second snapshot while the first downloads: %d", r.status)
	}
	if q := e.queryJSON(t, "SELECT count(*) AS n FROM big"); q.Rows[0]["n"].(json.Number).String() != "400000" {
		t.Fatalf("query during a snapshot: %v", q.Rows)
	}
	slow.Body.Close()
}
