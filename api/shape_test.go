package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/ducktail/ducktail/store"
)

// snapshotRows reads a snapshot as JSON and returns its rows and cursor header.
func (e *env) snapshotRows(t testing.TB, path, token string) ([]map[string]any, string) {
	t.Helper()
	r := e.do(t, "GET", path, token, nil, "Accept: application/json")
	if r.status != http.StatusOK {
		t.Fatalf("%s: %d %s", path, r.status, r.body)
	}
	var body struct {
		Rows   []map[string]any
		Cursor string
	}
	r.json(t, &body)
	if body.Cursor != r.header.Get("Ducktail-Cursor") {
		t.Fatalf("%s: body cursor %s, header %s", path, body.Cursor, r.header.Get("Ducktail-Cursor"))
	}
	return body.Rows, body.Cursor
}

// TestShapedSnapshotThenStream: a shaped snapshot and a stream of the same shape from its
// cursor continue exactly, over the wire; a commit without a matching row is an empty
// batch; another shape from that cursor is refresh-required; a bad predicate is a 400
// before the stream starts.
func TestShapedSnapshotThenStream(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "t")
	e.ingestNumbers(t, "t", 0, 10)
	shape := "where=" + url.QueryEscape("n % 2 = 0 AND s LIKE 'row%'") + "&columns=n"
	rows, cursor := e.snapshotRows(t, "/v1/tables/t/snapshot?"+shape, e.admin)
	if len(rows) != 5 || len(rows[0]) != 1 || !strings.HasPrefix(cursor, store.ShapedCursorPrefix) {
		t.Fatalf("shaped snapshot: %v, cursor %s", rows, cursor)
	}
	s := e.sse(t, "/v1/tables/t/stream?"+shape+"&cursor="+url.QueryEscape(cursor), e.admin)
	ev := s.next()
	sc, _ := decodePayload(t, ev.Data)
	if ev.Event != "schema" || ev.ID != cursor || sc.NumFields() != 1 {
		t.Fatalf("first event %+v, schema %s", ev, sc)
	}
	e.ingestNumbers(t, "t", 11, 1)
	e.ingestNumbers(t, "t", 12, 3)
	ev = s.next()
	if _, recs := decodePayload(t, ev.Data); ev.Event != "batch" || len(nValues(recs)) != 0 {
		t.Fatalf("commit without a matching row: %+v", ev)
	}
	ev = s.next()
	if _, recs := decodePayload(t, ev.Data); ev.Event != "batch" || fmt.Sprint(nValues(recs)) != "[12 14]" {
		t.Fatalf("commit 12..14: %+v %v", ev, nValues(recs))
	}
	rows, _ = e.snapshotRows(t, "/v1/tables/t/snapshot?"+shape, e.admin)
	if len(rows) != 7 {
		t.Errorf("shaped head: %d rows, want 7", len(rows))
	}
	other := e.sse(t, "/v1/tables/t/stream?columns=n&cursor="+url.QueryEscape(cursor), e.admin)
	if ev := other.next(); ev.Event != "refresh-required" || !strings.Contains(ev.Data, "shape_mismatch") {
		t.Errorf("another shape: %+v", ev)
	}
	for _, path := range []string{
		"/v1/tables/t/stream?where=" + url.QueryEscape("n IN (SELECT 1)"),
		"/v1/tables/t/snapshot?where=" + url.QueryEscape("random() > 0.5"),
		"/v1/tables/t/stream?columns=n,nosuch",
		"/v1/tables/t/snapshot?columns=" + url.QueryEscape(`"n`),
	} {
		r := e.do(t, "GET", path, e.admin, nil)
		if p := r.problem(t); r.status != 400 || (p.Field != "where" && p.Field != "columns") {
			t.Errorf("%s: %d %+v", path, r.status, p)
		}
	}
}

// TestTokenPolicies: a token's policy bounds its snapshot, query, stream and table
// description, combined with any shape it asks for; a column outside it answers as a
// missing one; another table answers as a missing one.
func TestTokenPolicies(t *testing.T) {
	e := newEnv(t, options{})
	e.createNumbers(t, "t")
	e.createNumbers(t, "other")
	e.ingestNumbers(t, "t", 0, 10)
	mk := func(purpose string) string {
		body := fmt.Sprintf(`{"purpose":%q,"table":"t","where":"n >= 5","columns":["n"]}`, purpose)
		r := e.do(t, "POST", "/v1/tokens", e.admin, []byte(body))
		var tok struct{ Token, Where string }
		r.json(t, &tok)
		if r.status != 201 || tok.Where != "(n >= 5)" {
			t.Fatalf("create token: %d %s", r.status, r.body)
		}
		return tok.Token
	}
	streamTok, queryTok := mk("stream"), mk("query")
	if r := e.do(t, "POST", "/v1/tokens", e.admin, []byte(`{"purpose":"stream","where":"n > 1"}`)); r.status != 400 {
		t.Errorf("policy without a table: %d", r.status)
	}
	for _, q := range []string{"", "?where=" + url.QueryEscape("true) OR (true"), "?where=" + url.QueryEscape("n >= 0 OR true")} {
		rows, _ := e.snapshotRows(t, "/v1/tables/t/snapshot"+q, streamTok)
		if len(rows) != 5 || len(rows[0]) != 1 {
			t.Errorf("snapshot%s through the policy: %v", q, rows)
		}
	}
	// A column outside the policy answers as a missing one.
	hidden := e.do(t, "GET", "/v1/tables/t/snapshot?columns=s", streamTok, nil).problem(t)
	missing := e.do(t, "GET", "/v1/tables/t/snapshot?columns=nosuch", streamTok, nil).problem(t)
	if hidden.Status != 400 || strings.Replace(hidden.Detail, `"s"`, `"nosuch"`, 1) != missing.Detail {
		t.Errorf("hidden column %+v, missing %+v", hidden, missing)
	}
	// The stream: only the policy's rows and columns.
	s := e.sse(t, "/v1/tables/t/stream", streamTok)
	if ev := s.next(); ev.Event != "schema" {
		t.Fatalf("%+v", ev)
	}
	e.ingestNumbers(t, "t", 3, 4)
	ev := s.next()
	sc, recs := decodePayload(t, ev.Data)
	if sc.NumFields() != 1 || fmt.Sprint(nValues(recs)) != "[5 6]" {
		t.Errorf("stream through the policy: %s %v", sc, nValues(recs))
	}
	// The query sees the table as its policy view.
	body, _ := json.Marshal(map[string]any{"sql": "SELECT * FROM t WHERE n > 0 OR true"})
	r := e.do(t, "POST", "/v1/query", queryTok, body)
	var q queryResult
	r.json(t, &q)
	if r.status != 200 || len(q.Rows) != 7 || len(q.Columns) != 1 {
		t.Errorf("query through the policy: %d %s", r.status, r.body)
	}
	// The description shows the policy's columns and no row count.
	var desc map[string]any
	e.do(t, "GET", "/v1/tables/t", streamTok, nil).json(t, &desc)
	if _, ok := desc["rows"]; ok || len(desc["columns"].([]any)) != 1 || !strings.HasPrefix(desc["cursor"].(string), store.ShapedCursorPrefix) {
		t.Errorf("description through the policy: %v", desc)
	}
	// Another table answers exactly as a missing one, everywhere.
	for _, c := range []struct{ method, path, token string }{
		{"GET", "/v1/tables/%s/snapshot", streamTok},
		{"GET", "/v1/tables/%s", streamTok},
		{"GET", "/v1/tables/%s/stream", streamTok},
		{"POST", "/v1/query", queryTok},
	} {
		answer := func(table string) (int, string) {
			var body []byte
			path := c.path
			if c.method == "POST" {
				body = []byte(fmt.Sprintf(`{"sql":"SELECT * FROM %s"}`, table))
			} else {
				path = fmt.Sprintf(c.path, table)
			}
			r := e.do(t, c.method, path, c.token, body)
			p := r.problem(t)
			return r.status, strings.ReplaceAll(p.Detail, table, "X")
		}
		s1, d1 := answer("other")
		s2, d2 := answer("nosuch")
		if s1 != 404 || s1 != s2 || d1 != d2 {
			t.Errorf("%s %s: another table %d %q, a missing one %d %q", c.method, c.path, s1, d1, s2, d2)
		}
	}
	// The token list shows the policies.
	var list struct{ Tokens []struct{ Where string } }
	e.do(t, "GET", "/v1/tokens", e.admin, nil).json(t, &list)
	if !slices.ContainsFunc(list.Tokens, func(t struct{ Where string }) bool { return t.Where == "(n >= 5)" }) {
		t.Errorf("tokens: %+v", list)
	}
}
