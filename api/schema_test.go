package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// fieldNames renders an Arrow schema's field names as "a,b,c".
func fieldNames(s *arrow.Schema) string {
	var names []string
	for _, f := range s.Fields() {
		names = append(names, f.Name)
	}
	return strings.Join(names, ",")
}

// TestSchemaEvolutionLiveAndReplayed adds, renames, drops and re-adds a column between
// commits, then compares what a live subscriber saw with what a replay from the start
// sends: the same schema events at the same places, each batch with the columns and
// names of its own schema version, values never under another column's name.
func TestSchemaEvolutionLiveAndReplayed(t *testing.T) {
	e := newEnv(t, options{})
	e.do(t, "POST", "/v1/tables", e.admin, []byte(`{"name":"t","columns":[{"name":"a","type":"BIGINT"},{"name":"b","type":"BIGINT"}]}`))
	var created struct{ Cursor string }
	e.do(t, "GET", "/v1/tables/t", e.admin, nil).json(t, &created)
	live := e.sse(t, "/v1/tables/t/stream", e.admin)
	live.next()
	steps := []struct{ method, path, body string }{
		{"POST", "/v1/tables/t/rows", `{"a":1,"b":10}`},
		{"POST", "/v1/tables/t/columns", `{"name":"c","type":"BIGINT"}`},
		{"POST", "/v1/tables/t/rows", `{"a":2,"b":20,"c":200}`},
		{"PATCH", "/v1/tables/t/columns/a", `{"name":"z"}`},
		{"POST", "/v1/tables/t/rows", `{"z":3,"b":30,"c":300}`},
		{"DELETE", "/v1/tables/t/columns/b", ``},
		{"POST", "/v1/tables/t/columns", `{"name":"b","type":"BIGINT"}`},
		{"POST", "/v1/tables/t/rows", `{"z":4,"c":400,"b":4000}`},
	}
	for _, s := range steps {
		r := e.do(t, s.method, s.path, e.admin, []byte(s.body), "Content-Type: application/x-ndjson")
		if r.status >= 300 {
			t.Fatalf("%s %s: %d %s", s.method, s.path, r.status, r.body)
		}
	}
	// read renders the next n events as "schema(a,b)" or "batch(a,b)=1|10".
	read := func(s *sseStream, n int) []string {
		var out []string
		for range n {
			ev := s.next()
			sc, recs := decodePayload(t, ev.Data)
			item := ev.Event + "(" + fieldNames(sc) + ")"
			for _, r := range recs {
				for i := 0; i < int(r.NumRows()); i++ {
					var vals []string
					for j := range r.Columns() {
						vals = append(vals, r.Column(j).ValueStr(i))
					}
					item += "=" + strings.Join(vals, "|")
				}
			}
			out = append(out, item)
		}
		return out
	}
	want := []string{
		"batch(a,b)=1|10",
		"schema(a,b,c)", "batch(a,b,c)=2|20|200",
		"schema(z,b,c)", "batch(z,b,c)=3|30|300",
		"schema(z,c)", "schema(z,c,b)", "batch(z,c,b)=4|400|4000",
	}
	if got := read(live, len(want)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("live:\n got %v\nwant %v", got, want)
	}
	// A replay from the table's first cursor: the first schema is that of the first
	// replayed commit; later schema events only where a commit's version differs.
	replay := e.sse(t, "/v1/tables/t/stream", e.admin, "Last-Event-ID: "+created.Cursor)
	wantReplay := []string{
		"schema(a,b)", "batch(a,b)=1|10",
		"schema(a,b,c)", "batch(a,b,c)=2|20|200",
		"schema(z,b,c)", "batch(z,b,c)=3|30|300",
		"schema(z,c,b)", "batch(z,c,b)=4|400|4000",
	}
	if got := read(replay, len(wantReplay)); fmt.Sprint(got) != fmt.Sprint(wantReplay) {
		t.Fatalf("replay:\n got %v\nwant %v", got, wantReplay)
	}
	// The snapshot shows the current columns; the dropped b's old values are gone, the
	// new b is NULL where it was never written.
	q := e.queryJSON(t, "SELECT * FROM t")
	if got := fmt.Sprint(q.Rows); got != "[map[b:<nil> c:<nil> z:1] map[b:<nil> c:200 z:2] map[b:<nil> c:300 z:3] map[b:4000 c:400 z:4]]" {
		t.Fatalf("snapshot rows %s", got)
	}
	if r := e.do(t, "DELETE", "/v1/tables/t/columns/nope", e.admin, nil); r.status != http.StatusNotFound {
		t.Fatalf("drop unknown column: %d", r.status)
	}
}
