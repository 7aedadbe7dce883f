package main

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestUIFiles checks how ducktail serves the embedded page, without a token: /ui
// redirects to /ui/ keeping the query; the page is HTML revalidated by ETag, under a
// Content-Security-Policy; its hashed assets have their media types and are immutable;
// other paths are 404 and other methods 405.
func TestUIFiles(t *testing.T) {
	st := startStack(t)
	client := *st.client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func(path string, header ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest("GET", st.URL()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}

	resp, _ := get("/ui?x=1")
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "ui/?x=1" {
		t.Errorf("GET /ui: %d, Location %q; want 301 to ui/?x=1", resp.StatusCode, resp.Header.Get("Location"))
	}

	resp, page := get("/ui/")
	h := resp.Header
	if resp.StatusCode != http.StatusOK || h.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(page, "<title>ducktail") {
		t.Fatalf("GET /ui/: %d %q: %.200s", resp.StatusCode, h.Get("Content-Type"), page)
	}
	if h.Get("Cache-Control") != "no-cache" || h.Get("ETag") == "" || h.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("GET /ui/ headers %v", h)
	}
	if resp, _ := get("/ui/", "If-None-Match", h.Get("ETag")); resp.StatusCode != http.StatusNotModified {
		t.Errorf("GET /ui/ with its ETag: %d, want 304", resp.StatusCode)
	}

	assets := regexp.MustCompile(`(?:src|href)="\./(assets/[^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(assets) < 2 {
		t.Fatalf("the page links %d assets, want a script and a style sheet", len(assets))
	}
	for _, a := range assets {
		resp, body := get("/ui/" + a[1])
		want := map[bool]string{true: "text/javascript; charset=utf-8", false: "text/css; charset=utf-8"}[strings.HasSuffix(a[1], ".js")]
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != want || len(body) == 0 ||
			resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
			t.Errorf("GET /ui/%s: %d %q %q, %d bytes", a[1], resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"), len(body))
		}
	}

	if resp, _ := get("/ui/nope.js"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /ui/nope.js: %d, want 404", resp.StatusCode)
	}
	if status, _ := st.do(t, "POST", "/ui/", "text/plain", nil); status != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/: %d, want 405", status)
	}
}
