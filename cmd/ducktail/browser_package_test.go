package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBrowserClientPackage runs @ducktail/client (clients/js) in headless Chromium from a
// test page of its own (web/test/package-page, built with Vite from the package's source)
// on another origin: a liveQuery with the token in Authorization and the cursor in
// Last-Event-ID, so every stream request passes a CORS preflight. From the rendered DOM it
// checks that the page holds the snapshot of a real data set, then a committed row, then
// resumes across a server restart without repeating or losing a row, and swaps in a new
// snapshot after the table is reset (refresh-required).
func TestBrowserClientPackage(t *testing.T) {
	node, web := needNode(t, requireBrowserEnv, "playwright-core", "vite", "apache-arrow")
	needChromium(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, node, filepath.Join(web, "test", "build-package-page.mjs"), dir)
	build.Dir = web
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the test page: %v\n%s", err, out)
	}
	page := httptest.NewUnstartedServer(http.FileServer(http.Dir(dir)))
	page.EnableHTTP2 = true
	page.StartTLS()
	t.Cleanup(page.Close)

	st := startStack(t, page.URL)
	dates := ingestWeather(t, st)
	token := st.streamToken(t, "weather")
	b := startChromium(t, node, web)
	b.open(t, "pkg", page.URL+"/#api="+url.QueryEscape(st.URL())+"&token="+url.QueryEscape(token)+"&table=weather")
	s := b.wait(t, "pkg", until{Status: "live", Count: new(1461)}, 20*time.Second)
	if want := []string{"#", "date", "precipitation", "temp_max", "temp_min", "wind", "weather"}; !slices.Equal(s.Columns, want) {
		t.Errorf("columns %q, want %q", s.Columns, want)
	}
	checkRows(t, s, 1461, dates, nil)

	cursor := st.ingest(t, "weather", "application/x-ndjson", weatherRows("2016-01-01"))
	s = b.wait(t, "pkg", until{Count: new(1462)}, liveBudget)
	live := []string{"2016-01-01"}
	checkRows(t, s, 1462, dates, live)
	if want := []string{"1462", "2016-01-01", "1.5", "7.2", "1.1", "2.3", "sun"}; !slices.Equal(s.Rows[0].Cells, want) {
		t.Errorf("live row %q, want %q", s.Rows[0].Cells, want)
	}
	if s.Cursor != cursor {
		t.Errorf("page cursor %q, want the commit's %q", s.Cursor, cursor)
	}

	// Restart: the draining server tells the client to reconnect; it resumes from its
	// cursor on the new server, which replays what was committed meanwhile.
	st.restart(t)
	st.ingest(t, "weather", "application/x-ndjson", weatherRows("2016-01-02"))
	cursor = st.ingest(t, "weather", "application/x-ndjson", weatherRows("2016-01-03"))
	s = b.wait(t, "pkg", until{Status: "live", Count: new(1464), Notice: "reconnecting (server_draining)"}, 20*time.Second)
	checkRows(t, s, 1464, dates, append(live, "2016-01-02", "2016-01-03"))
	if s.Cursor != cursor {
		t.Errorf("page cursor %q, want the last commit's %q", s.Cursor, cursor)
	}

	// Reset: refresh-required, a new (empty) snapshot, then the table from its cursor.
	if status, body := st.do(t, "POST", "/v1/tables/weather/reset", "", nil); status != http.StatusOK {
		t.Fatalf("reset: status %d: %s", status, body)
	}
	b.wait(t, "pkg", until{Status: "live", Count: new(0), Notice: "refresh-required (table_reset)"}, 20*time.Second)
	st.ingest(t, "weather", "application/x-ndjson", weatherRows("2016-02-01", "2016-02-02"))
	s = b.wait(t, "pkg", until{Count: new(2)}, liveBudget)
	checkRows(t, s, 2, nil, []string{"2016-02-01", "2016-02-02"})
	problems := slices.DeleteFunc(s.Problems, func(p string) bool { return strings.Contains(p, "net::ERR_CONNECTION_REFUSED") })
	if len(problems) > 0 {
		t.Errorf("the page logged errors: %q", problems)
	}
}
