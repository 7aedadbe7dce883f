package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ducktail/ducktail/snapshot"
)

// TestQueryTooLargeSaysWhatToDo runs a query whose result passes --max-result-bytes: the
// 422 too_large problem gives the limit in MiB and every way out (a LIMIT, the snapshot
// endpoint, the server flag).
func TestQueryTooLargeSaysWhatToDo(t *testing.T) {
	e := newEnv(t, options{reader: func(r *snapshot.Reader) { r.MaxResultBytes = 1 << 20 }})
	body, _ := json.Marshal(map[string]any{"sql": "SELECT range AS n, 'row ' || range AS s FROM range(1000000)"})
	r := e.do(t, "POST", "/v1/query", e.admin, body, "Accept: application/json")
	if r.status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d, body %s; want 422", r.status, r.body)
	}
	p := r.problem(t)
	if p.Code != "too_large" {
		t.Fatalf("code %q, want too_large", p.Code)
	}
	for _, want := range []string{"limit of 1 MiB", "LIMIT", "GET /v1/tables/{table}/snapshot", "streams any size", "--max-result-bytes"} {
		if !strings.Contains(p.Detail, want) {
			t.Errorf("detail %q lacks %q", p.Detail, want)
		}
	}
}
