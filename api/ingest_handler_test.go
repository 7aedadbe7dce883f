package api_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/api"
	"github.com/ducktail/ducktail/store"
)

func TestIngestRejectsBadInputCommitsNothingAndKeepsServing(t *testing.T) {
	e := newEnv(t, options{api: func(c *api.Config) { c.MaxBodyBytes = 4096 }})
	e.do(t, "POST", "/v1/tables", e.admin, []byte(`{"name":"t","columns":[{"name":"n","type":"TINYINT"},{"name":"ts","type":"TIMESTAMPTZ"},{"name":"s","type":"VARCHAR"}]}`))
	e.ingest(t, "t", "text/csv", []byte("n,ts,s\n1,2024-01-01T10:00:00+02:00,a\n"), http.StatusCreated)
	cases := []struct {
		name, contentType, body string
		status                  int
		row, line               int
		column                  string
	}{
		{"csv ragged row", "text/csv", "n,ts,s\r\n1,,a\r\n2,,b,extra\r\n", 400, 0, 3, ""},
		{"csv bad integer", "text/csv", "n,ts,s\n1,,a\n2,,\"multi\nline\"\nx,,c\n", 422, 3, 5, "n"},
		{"csv out of range", "text/csv", "n,ts,s\n300,,a\n", 422, 1, 2, "n"},
		{"csv unknown column", "text/csv", "n,bogus\n1,2\n", 422, 0, 0, "bogus"},
		{"json wrong type", "application/json", `[{"n":1},{"n":"two"}]`, 422, 2, 0, "n"},
		{"json not an array", "application/json", `{"n":1}`, 400, 0, 0, ""},
		{"ndjson bad timestamp", "application/x-ndjson", "{\"n\":1}\n\n{\"ts\":\"yesterday\"}", 422, 2, 3, "ts"},
		{"ndjson bad json", "application/x-ndjson", "{\"n\":1}\n{\"n\":", 400, 0, 2, ""},
		{"arrow garbage", "application/vnd.apache.arrow.stream", "not arrow", 400, 0, 0, ""},
		{"unsupported type", "application/xml", "<n>1</n>", 415, 0, 0, ""},
		{"too large", "text/csv", "n\n" + strings.Repeat("1\n", 3000), 413, 0, 0, ""},
	}
	for _, c := range cases {
		r := e.do(t, "POST", "/v1/tables/t/rows", e.admin, []byte(c.body), "Content-Type: "+c.contentType)
		if r.status != c.status {
			t.Errorf("%s: status %d (%s), want %d", c.name, r.status, r.body, c.status)
			continue
		}
		p := r.problem(t)
		if (c.row != 0 && p.Row != c.row) || (c.line != 0 && p.Line != c.line) || (c.column != "" && p.Column != c.column) || p.Detail == "" {
			t.Errorf("%s: problem %+v, want row %d line %d column %q", c.name, p, c.row, c.line, c.column)
		}
	}
	info, _ := e.db.Table("t")
	if info.Head.Seq != 1 || info.Rows != 1 {
		t.Fatalf("after bad requests: seq %d rows %d, want 1 and 1", info.Head.Seq, info.Rows)
	}
	q := e.queryJSON(t, "SELECT ts FROM t")
	if q.Rows[0]["ts"] != "2024-01-01T08:00:00Z" {
		t.Fatalf("timestamp with offset stored as %v", q.Rows[0]["ts"])
	}
}

func TestIngestIdempotencyKey(t *testing.T) {
	e := newEnv(t, options{})
	body := []byte("n\n1\n2\n")
	first := e.ingest(t, "t?create=true", "text/csv", body, http.StatusCreated, "Idempotency-Key: load-1")
	again := e.ingest(t, "t", "text/csv", body, http.StatusOK, "Idempotency-Key: load-1")
	if !bytes.Equal(first.body, again.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry answered %s, first was %s", again.body, first.body)
	}
	r := e.do(t, "POST", "/v1/tables/t/rows", e.admin, []byte("n\n3\n"), "Content-Type: text/csv", "Idempotency-Key: load-1")
	if r.status != http.StatusConflict || r.problem(t).Field != "Idempotency-Key" {
		t.Fatalf("key reused with another body: %d %s", r.status, r.body)
	}
	if q := e.queryJSON(t, "SELECT count(*) AS n FROM t"); q.Rows[0]["n"].(interface{ String() string }).String() != "2" {
		t.Fatalf("rows = %v, want 2", q.Rows)
	}
	if r := e.do(t, "POST", "/v1/tables/t/rows", e.admin, body, "Content-Type: text/csv", "Idempotency-Key: cl\xc3\xa9"); r.status != http.StatusBadRequest {
		t.Fatalf("non-ASCII key: %d", r.status)
	}
}

func TestAuthPurposesAndScopes(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "a")
	e.createNumbers(t, "b")
	ingestA := e.token(t, store.PurposeIngest, "a")
	queryA := e.token(t, store.PurposeQuery, "a")
	streamA := e.token(t, store.PurposeStream, "a")
	row := []byte(`{"n":1}`)
	checks := []struct {
		name, method, path, token string
		body                      []byte
		status                    int
	}{
		{"ingest own table", "POST", "/v1/tables/a/rows", ingestA, row, 201},
		{"ingest other table", "POST", "/v1/tables/b/rows", ingestA, row, 404},
		{"ingest token queries", "POST", "/v1/query", ingestA, []byte(`{"sql":"SELECT 1"}`), 403},
		{"query own table", "POST", "/v1/query", queryA, []byte(`{"sql":"SELECT count(*) FROM a"}`), 200},
		{"query other table", "POST", "/v1/query", queryA, []byte(`{"sql":"SELECT * FROM (SELECT * FROM b)"}`), 404},
		{"query via CTE", "POST", "/v1/query", queryA, []byte(`{"sql":"WITH x AS (SELECT * FROM b) SELECT * FROM x"}`), 404},
		{"stream token snapshot", "GET", "/v1/tables/a/snapshot", streamA, nil, 200},
		{"stream token other snapshot", "GET", "/v1/tables/b/snapshot", streamA, nil, 404},
		{"create table needs admin", "POST", "/v1/tables", ingestA, []byte(`{"name":"c","columns":[{"name":"n","type":"BIGINT"}]}`), 403},
		{"tokens need admin", "GET", "/v1/tokens", queryA, nil, 403},
		{"no token", "GET", "/v1/tables", "", nil, 401},
		{"unknown token", "GET", "/v1/tables", "dt_0123456789abcdef_" + strings.Repeat("a", 52), nil, 401},
	}
	for _, c := range checks {
		r := e.do(t, c.method, c.path, c.token, c.body, "Content-Type: application/x-ndjson")
		if r.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, r.status, r.body, c.status)
		}
		if r.status >= 400 {
			r.problem(t)
		}
	}
	// A scoped token lists only its table.
	var list struct{ Tables []struct{ Name string } }
	e.do(t, "GET", "/v1/tables", queryA, nil).json(t, &list)
	if len(list.Tables) != 1 || list.Tables[0].Name != "a" {
		t.Fatalf("scoped list = %+v", list)
	}
}

func TestTokensAndTablesAPI(t *testing.T) {
	e := newEnv(t, options{})
	r := e.do(t, "POST", "/v1/tokens", e.admin, []byte(`{"purpose":"stream","table":"weather","ttl":"24h"}`))
	var tok struct {
		ID, Token, Purpose, Table string
		ExpiresAt                 *string `json:"expires_at"`
	}
	r.json(t, &tok)
	if r.status != 201 || tok.Token == "" || tok.Purpose != "stream" || tok.Table != "weather" || tok.ExpiresAt == nil {
		t.Fatalf("create token: %d %s", r.status, r.body)
	}
	list := e.do(t, "GET", "/v1/tokens", e.admin, nil)
	if strings.Contains(string(list.body), tok.Token) || !strings.Contains(string(list.body), tok.ID) {
		t.Fatalf("token list shows a secret or misses the token: %s", list.body)
	}
	for _, c := range []struct {
		body   string
		status int
	}{
		{`{"purpose":"root"}`, 400},
		{`{"purpose":"stream","ttl":"forever"}`, 400},
		{`{"purpose":"stream","extra":1}`, 400},
		{`{"purpose":`, 400},
	} {
		if r := e.do(t, "POST", "/v1/tokens", e.admin, []byte(c.body)); r.status != c.status {
			t.Errorf("token %s: %d, want %d", c.body, r.status, c.status)
		}
	}
	if r := e.do(t, "DELETE", "/v1/tokens/"+tok.ID, e.admin, nil); r.status != 204 {
		t.Fatalf("revoke: %d", r.status)
	}
	if r := e.do(t, "GET", "/v1/tables", tok.Token, nil); r.status != 401 {
		t.Fatalf("revoked token: %d", r.status)
	}
	for _, c := range []struct {
		body   string
		status int
	}{
		{`{"name":"ok","columns":[{"name":"a","type":"BIGINT"}]}`, 201},
		{`{"name":"ok","columns":[{"name":"a","type":"BIGINT"}]}`, 409},
		{`{"name":"bad name","columns":[{"name":"a","type":"BIGINT"}]}`, 400},
		{`{"name":"x","columns":[{"name":"a","type":"WHATEVER"}]}`, 400},
		{`{"name":"x","columns":[]}`, 400},
	} {
		if r := e.do(t, "POST", "/v1/tables", e.admin, []byte(c.body)); r.status != c.status {
			t.Errorf("create %s: %d %s, want %d", c.body, r.status, r.body, c.status)
		}
	}
	if r := e.do(t, "GET", "/v1/tables/nope", e.admin, nil); r.status != 404 {
		t.Fatalf("describe unknown: %d", r.status)
	}
}

func TestIngestAmplificationAndWidthLimits(t *testing.T) {
	e := newEnv(t, options{})
	var header []string
	for i := range 1025 {
		header = append(header, fmt.Sprint("c", i))
	}
	r := e.do(t, "POST", "/v1/tables/wide/rows?create=true", e.admin, []byte(strings.Join(header, ",")+"\n"), "Content-Type: text/csv")
	if r.status != 400 || r.problem(t).Field != "columns" {
		t.Fatalf("1025 columns: %d %s", r.status, r.body)
	}
	e.do(t, "POST", "/v1/tables/wide/rows?create=true", e.admin, []byte(strings.Join(header[:1000], ",")+"\n"), "Content-Type: text/csv")
	// A few bytes per row that decode to 1,000 NULLs each: refused before it costs memory.
	r = e.do(t, "POST", "/v1/tables/wide/rows", e.admin, []byte("["+strings.Repeat("{},", 20000)+"{}]"), "Content-Type: application/json")
	if r.status != 413 {
		t.Fatalf("amplifying JSON body: %d %s", r.status, r.body)
	}
	r = e.do(t, "POST", "/v1/tables/wide/rows", e.admin, []byte("c0\n"+strings.Repeat("1\n", 20000)), "Content-Type: text/csv")
	if r.status != 413 {
		t.Fatalf("amplifying CSV body: %d %s", r.status, r.body)
	}
	if info, _ := e.db.Table("wide"); info.Head.Seq != 1 {
		t.Fatalf("refused bodies committed: seq %d", info.Head.Seq)
	}
}

func TestIngestRetriesAndNamesFoundByReview(t *testing.T) {
	e := newEnv(t, options{})
	// A retry after a schema change answers the first commit, not a decode error.
	first := e.ingest(t, "t?create=true", "application/json", []byte(`[{"v":1}]`), http.StatusCreated, "Idempotency-Key: K1")
	e.do(t, "PATCH", "/v1/tables/t/columns/v", e.admin, []byte(`{"name":"w"}`))
	again := e.ingest(t, "t", "application/json; charset=utf-8", []byte(`[{"v":1}]`), http.StatusOK, "Idempotency-Key: K1")
	if !bytes.Equal(first.body, again.body) {
		t.Fatalf("retry after a rename answered %s, first %s", again.body, first.body)
	}
	// A body refused under ?create=true leaves no table behind.
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	b.Field(0).(*array.StringBuilder).Append("not UTF-8: \xff")
	var body bytes.Buffer
	w := ipc.NewWriter(&body, ipc.WithSchema(schema))
	w.Write(b.NewRecordBatch())
	w.Close()
	r := e.do(t, "POST", "/v1/tables/ghost/rows?create=true", e.admin, body.Bytes(), "Content-Type: application/vnd.apache.arrow.stream")
	if r.status != 400 {
		t.Fatalf("Arrow body with invalid UTF-8: %d %s", r.status, r.body)
	}
	if _, err := e.db.Table("ghost"); err == nil {
		t.Fatal("a refused ?create=true body created its table")
	}
	// Columns whose names need escaping in a path.
	e.do(t, "POST", "/v1/tables/t/columns", e.admin, []byte(`{"name":"km/h","type":"DOUBLE"}`))
	if r := e.do(t, "PATCH", "/v1/tables/t/columns/km%2Fh", e.admin, []byte(`{"name":"speed kmh"}`)); r.status != 200 {
		t.Fatalf("rename km/h: %d %s", r.status, r.body)
	}
	if r := e.do(t, "DELETE", "/v1/tables/t/columns/SPEED%20KMH", e.admin, nil); r.status != 200 {
		t.Fatalf("drop 'speed kmh' by another case: %d %s", r.status, r.body)
	}
}

// TestIngestBodiesShareOneBudget: while one upload holds most of --max-ingest-bytes (its
// whole declared length, once a quarter of it arrived), another body that would pass it
// is refused with 503, Retry-After and the problem code unavailable, committing nothing;
// once the first upload ends, the same request commits.
func TestIngestBodiesShareOneBudget(t *testing.T) {
	e := newEnv(t, options{api: func(c *api.Config) { c.MaxBodyBytes, c.MaxIngestBytes = 1<<20, 1<<20 }})
	e.ingest(t, "t?create=true", "text/csv", []byte("n\n1\n"), http.StatusCreated)
	rows := append([]byte("n\n"), bytes.Repeat([]byte("1\n"), 300<<10)...)
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/tables/t/rows", pr)
	req.ContentLength = int64(len(rows))
	req.Header.Set("Authorization", "Bearer "+e.admin)
	req.Header.Set("Content-Type", "text/csv")
	first := make(chan int, 1)
	go func() {
		resp, err := e.client.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	half := len(rows) / 2
	if _, err := pw.Write(rows[:half]); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("ducktail_ingest_memory_bytes %d\n", len(rows))
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(string(e.do(t, "GET", "/metrics", "", nil).body), want); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed %q", want)
		}
	}
	r := e.do(t, "POST", "/v1/tables/t/rows", e.admin, rows, "Content-Type: text/csv")
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), `"code":"unavailable"`) {
		t.Fatalf("a body past the budget: %d %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	if info, _ := e.db.Table("t"); info.Head.Seq != 1 {
		t.Fatalf("head %d after the refusal, want 1", info.Head.Seq)
	}
	pw.Write(rows[half:])
	pw.Close()
	if status := <-first; status != http.StatusCreated {
		t.Fatalf("the first upload: %d, want 201", status)
	}
	e.ingest(t, "t", "text/csv", rows, http.StatusCreated)
}

// TestIngestBodyLimit: a body past --max-body-bytes is 413 whether it declares its length
// or is sent chunked, and commits nothing.
func TestIngestBodyLimit(t *testing.T) {
	e := newEnv(t, options{api: func(c *api.Config) { c.MaxBodyBytes = 1 << 20 }})
	e.ingest(t, "t?create=true", "text/csv", []byte("n\n1\n"), http.StatusCreated)
	big := bytes.Repeat([]byte("1\n"), 600<<10)
	if r := e.do(t, "POST", "/v1/tables/t/rows", e.admin, append([]byte("n\n"), big...), "Content-Type: text/csv"); r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a declared body over the limit: %d %s", r.status, r.body)
	}
	req, _ := http.NewRequest("POST", e.srv.URL+"/v1/tables/t/rows", io.MultiReader(strings.NewReader("n\n"), bytes.NewReader(big)))
	req.Header.Set("Authorization", "Bearer "+e.admin)
	req.Header.Set("Content-Type", "text/csv")
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || req.ContentLength != 0 {
		t.Fatalf("a chunked body over the limit: %d", resp.StatusCode)
	}
	if info, _ := e.db.Table("t"); info.Head.Seq != 1 {
		t.Fatalf("head %d after refused bodies, want 1", info.Head.Seq)
	}
}
