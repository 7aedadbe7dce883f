package api

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// openAPIMethods are the operations an OpenAPI path item may hold (OpenAPI 3.1, "Path
// Item Object").
var openAPIMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// TestOpenAPIMatchesTheRouter walks the router (chi.Walk): every route and method is
// described in api/openapi.json, and every path and method described there is routed,
// so that neither can drift. A route registered for every method (r.Handle, r.Mount)
// counts as its GET; a wildcard route ("/ui/*") covers the described paths under it.
func TestOpenAPIMatchesTheRouter(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	described := map[string]bool{} // "GET /v1/tables/{table}"
	for path, item := range doc.Paths {
		for method := range item {
			if slices.Contains(openAPIMethods, method) {
				described[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	s := NewServer(Config{}, store.NewDB(""), stream.NewHub(nil), nil)
	routed := map[string][]string{}
	chi.Walk(s.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		route = strings.TrimSuffix(route, "/")
		routed[route] = append(routed[route], method)
		return nil
	})
	for route, methods := range routed {
		if slices.Contains(methods, http.MethodConnect) && slices.Contains(methods, http.MethodTrace) {
			methods = []string{http.MethodGet} // every method: a handler or a mounted router
		}
		for _, method := range methods {
			prefix, wildcard := strings.CutSuffix(route, "*")
			ok := described[method+" "+route]
			for d := range described {
				ok = ok || (wildcard && strings.HasPrefix(d, method+" "+prefix))
			}
			if !ok {
				t.Errorf("%s %s is routed but not in api/openapi.json", method, route)
			}
		}
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	for d := range described {
		method, path, _ := strings.Cut(d, " ")
		if !s.router.Match(chi.NewRouteContext(), method, param.ReplaceAllString(path, "x")) {
			t.Errorf("%s is in api/openapi.json but not routed", d)
		}
	}
	if len(described) < 20 {
		t.Fatalf("api/openapi.json describes %d operations; the router has more", len(described))
	}
}
