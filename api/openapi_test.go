package api_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/errors"
)

// openAPIValidator reads api/openapi.json, checks it against the OpenAPI 3.1 schema, and
// returns a validator of requests and answers by it.
func openAPIValidator(t *testing.T) validator.Validator {
	t.Helper()
	spec, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("api/openapi.json: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		t.Fatalf("api/openapi.json is not a valid OpenAPI 3.1 document:\n%s", describeValidation(verrs))
	}
	return v
}

func describeValidation(errs []*errors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Message + ": " + e.Reason + "\n")
		for _, se := range e.SchemaValidationErrors {
			b.WriteString("    " + se.FieldPath + " (" + se.KeywordLocation + "): " + se.Reason + "\n")
		}
	}
	return b.String()
}

// TestOpenAPIServedAndValid: GET /openapi.json answers api/openapi.json, without a
// token, and the document is valid OpenAPI 3.1.
func TestOpenAPIServedAndValid(t *testing.T) {
	openAPIValidator(t)
	e := newEnv(t, options{})
	r := e.do(t, "GET", "/openapi.json", "", nil)
	want, _ := os.ReadFile("openapi.json")
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" || !bytes.Equal(r.body, want) {
		t.Fatalf("GET /openapi.json: %d %q, %d bytes; want 200, application/json, api/openapi.json", r.status, r.header.Get("Content-Type"), len(r.body))
	}
}

// TestOpenAPIDescribesRealAnswers sends requests to a real server, a refusal among them,
// and checks every request and answer against the description (parameters, bodies,
// statuses, media types and JSON schemas).
func TestOpenAPIDescribesRealAnswers(t *testing.T) {
	v := openAPIValidator(t)
	e := newEnv(t, options{})
	// exchange sends a request; onSpec says whether the request itself is one the
	// description allows (else only the answer is checked: a refusal of what it does not
	// allow).
	exchange := func(onSpec bool, method, path, contentType, body string, headers ...string) {
		t.Helper()
		req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.admin)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		for _, h := range headers {
			k, val, _ := strings.Cut(h, ":")
			req.Header.Set(k, strings.TrimSpace(val))
		}
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		// The validator reads both bodies again.
		req, _ = http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
		req.Header = resp.Request.Header.Clone()
		resp.Body = io.NopCloser(bytes.NewReader(got))
		ok, errs := v.ValidateHttpResponse(req, resp)
		if onSpec {
			ok, errs = v.ValidateHttpRequestResponse(req, resp)
		}
		if !ok {
			t.Errorf("%s %s: %d %s\n%s", method, path, resp.StatusCode, got, describeValidation(errs))
		}
	}
	check := func(method, path, contentType, body string, headers ...string) {
		t.Helper()
		exchange(true, method, path, contentType, body, headers...)
	}
	check("GET", "/healthz", "", "")
	check("GET", "/readyz", "", "")
	check("POST", "/v1/tables", "application/json", `{"name":"weather","columns":[{"name":"date","type":"DATE"},{"name":"temp_max","type":"DOUBLE"}]}`)
	check("POST", "/v1/tables", "application/json", `{"name":"weather","columns":[{"name":"date","type":"DATE"}]}`) // 409
	check("GET", "/v1/tables", "", "")
	check("POST", "/v1/tables/weather/rows", "text/csv", "date,temp_max\n2016-01-01,7.2\n", "Idempotency-Key: k1")
	check("POST", "/v1/tables/weather/rows", "text/csv", "date,temp_max\n2016-01-01,7.2\n", "Idempotency-Key: k1") // 200, replayed
	check("POST", "/v1/tables/weather/rows", "application/x-ndjson", `{"date":"2016-01-02","temp_max":"warm"}`)    // 422
	exchange(false, "POST", "/v1/tables/weather/rows", "application/xml", `<row/>`)                                // 415
	check("GET", "/v1/tables/weather", "", "")
	check("GET", "/v1/tables/nosuch", "", "") // 404
	check("GET", "/v1/tables/weather/snapshot", "", "", "Accept: application/json")
	check("GET", "/v1/tables/weather/snapshot", "", "", "Accept: text/csv")
	check("POST", "/v1/query", "application/json", `{"sql":"SELECT count(*) AS n FROM weather WHERE temp_max > $1","params":[5]}`)
	check("POST", "/v1/query", "application/json", `{"sql":"DROP TABLE weather"}`) // 4xx
	check("POST", "/v1/tables/weather/columns", "application/json", `{"name":"station","type":"VARCHAR"}`)
	check("PATCH", "/v1/tables/weather/columns/station", "application/json", `{"name":"site"}`)
	check("DELETE", "/v1/tables/weather/columns/site", "", "")
	check("POST", "/v1/tables/weather/reset", "", "")
	check("POST", "/v1/tokens", "application/json", `{"purpose":"stream","table":"weather","ttl":"1h"}`)
	check("GET", "/v1/tokens", "", "")
	check("DELETE", "/v1/tokens/0123456789abcdef", "", "") // 404
	check("DELETE", "/v1/tables/weather", "", "")
}
