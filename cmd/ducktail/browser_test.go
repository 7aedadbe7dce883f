package main

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ducktail/ducktail/api"
)

// weatherCSV is the data set the browser tests show: NOAA Seattle weather, 1,461 days.
const weatherCSV = "../../testdata/seattle-weather.csv"

// liveBudget is how soon a committed row must be on the page.
const liveBudget = 2 * time.Second

// TestBrowserLiveTable loads the page from ducktail itself (/ui, TLS with the
// self-signed certificate) in headless Chromium and checks, from the rendered DOM, that
// it shows the snapshot of a real data set, shows a row committed after load within 2 s,
// resumes across a server restart without repeating or losing a row, and rebuilds from
// a new snapshot after the table is reset (refresh-required).
func TestBrowserLiveTable(t *testing.T) {
	node, web := needNode(t, requireBrowserEnv, "playwright-core")
	needChromium(t)
	st := startStack(t)
	dates := ingestWeather(t, st)
	token := st.streamToken(t, "weather")
	b := startChromium(t, node, web)

	// /ui redirects to /ui/ and the browser keeps the fragment, which the page reads and
	// then removes from the address bar.
	b.open(t, "page", st.URL()+"/ui#token="+url.QueryEscape(token)+"&table=weather")
	s := b.wait(t, "page", until{Status: "live", Count: new(1461)}, 20*time.Second)
	if want := st.URL() + "/ui/"; s.URL != want {
		t.Errorf("page URL %q, want %q (the token removed from the fragment)", s.URL, want)
	}
	if want := []string{"#", "date", "precipitation", "temp_max", "temp_min", "wind", "weather"}; !slices.Equal(s.Columns, want) {
		t.Errorf("columns %q, want %q", s.Columns, want)
	}
	checkRows(t, s, 1461, dates, nil)
	if want := []string{"1,461", "2015-12-31", "0", "5.6", "-2.1", "3.5", "sun"}; !slices.Equal(s.Rows[0].Cells, want) {
		t.Errorf("newest snapshot row %q, want %q", s.Rows[0].Cells, want)
	}
	if s.ChartPoints != 1461 {
		t.Errorf("chart has %d points, want 1461", s.ChartPoints)
	}
	checkConnected(t, s)
	// The chart's x-axis is the table's DATE column; the point at its right end is the
	// last day, in UTC though the browser's zone is west of it.
	checkChart(t, b.hover(t, "page", "#chart .u-over", 0.999, 0.5), "date", "2015-12-31")
	b.screenshot(t, "page", "live-date-axis")

	// A row committed now is on the page within liveBudget, and the page's cursor is the
	// commit's.
	cursor := st.ingest(t, "weather", "application/x-ndjson", weatherRows("2016-01-01"))
	s = b.wait(t, "page", until{Count: new(1462)}, liveBudget)
	live := []string{"2016-01-01"}
	checkRows(t, s, 1462, dates, live)
	if want := []string{"1,462", "2016-01-01", "1.5", "7.2", "1.1", "2.3", "sun"}; !slices.Equal(s.Rows[0].Cells, want) {
		t.Errorf("live row %q, want %q", s.Rows[0].Cells, want)
	}
	if s.Cursor != cursor {
		t.Errorf("page cursor %q, want the commit's %q", s.Cursor, cursor)
	}
	// The event log sums up the batches of each second in one line.
	b.wait(t, "page", until{Notice: "1 batch, 1 row."}, liveBudget)

	// Restart: the draining server tells the page to reconnect; the page resumes from its
	// last cursor on the new server, which replays what was committed meanwhile.
	st.restart(t)
	st.ingest(t, "weather", "application/x-ndjson", weatherRows("2016-01-02"))
	st.ingest(t, "weather", "application/x-ndjson", weatherRows("2016-01-03"))
	b.wait(t, "page", until{Status: "live", Count: new(1464), Notice: "server_draining"}, 20*time.Second)
	cursor = st.ingest(t, "weather", "application/x-ndjson", weatherRows("2016-01-04"))
	s = b.wait(t, "page", until{Count: new(1465)}, liveBudget)
	live = append(live, "2016-01-02", "2016-01-03", "2016-01-04")
	checkRows(t, s, 1465, dates, live)
	if s.Cursor != cursor {
		t.Errorf("page cursor %q, want the last commit's %q", s.Cursor, cursor)
	}
	b.screenshot(t, "page", "live-table")

	// Reset: the stream ends with refresh-required; the page says so, loads the new
	// (empty) snapshot and follows the table from its cursor.
	if status, body := st.do(t, "POST", "/v1/tables/weather/reset", "", nil); status != http.StatusOK {
		t.Fatalf("reset: status %d: %s", status, body)
	}
	b.wait(t, "page", until{Status: "live", Count: new(0), Notice: "Refresh required (table_reset)"}, 20*time.Second)
	st.ingest(t, "weather", "application/x-ndjson", weatherRows("2016-02-01", "2016-02-02"))
	s = b.wait(t, "page", until{Count: new(2)}, liveBudget)
	checkRows(t, s, 2, nil, []string{"2016-02-01", "2016-02-02"})
	// Chromium logs the connections refused while the server was down; nothing else.
	problems := slices.DeleteFunc(s.Problems, func(p string) bool { return strings.Contains(p, "net::ERR_CONNECTION_REFUSED") })
	if len(problems) > 0 {
		t.Errorf("the page logged errors: %q", problems)
	}
}

// TestBrowserCORSOrigins serves the embedded page from two other origins and points it at
// ducktail: from the origin on the --cors-origin allow-list the snapshot and the stream
// work; from the other the page shows the snapshot refused, and the stream alone is
// refused by the server (403) and reported by the page.
func TestBrowserCORSOrigins(t *testing.T) {
	node, web := needNode(t, requireBrowserEnv, "playwright-core")
	needChromium(t)
	allowed := uiServer(t)
	refused := uiServer(t)
	st := startStack(t, allowed.URL)
	dates := ingestWeather(t, st)
	token := st.streamToken(t, "weather")
	b := startChromium(t, node, web)
	fragment := "#api=" + url.QueryEscape(st.URL()) + "&token=" + url.QueryEscape(token) + "&table=weather"

	b.open(t, "allowed", allowed.URL+"/ui/"+fragment)
	s := b.wait(t, "allowed", until{Status: "live", Count: new(1461)}, 20*time.Second)
	checkRows(t, s, 1461, dates, nil)
	st.ingest(t, "weather", "application/x-ndjson", weatherRows("2016-01-01"))
	s = b.wait(t, "allowed", until{Count: new(1462)}, liveBudget)
	checkRows(t, s, 1462, dates, []string{"2016-01-01"})
	if len(s.Problems) > 0 {
		t.Errorf("the page on the allowed origin logged errors: %q", s.Problems)
	}

	b.open(t, "refused", refused.URL+"/ui/"+fragment)
	s = b.wait(t, "refused", until{Status: "closed", Error: "The snapshot of weather failed"}, 20*time.Second)
	if s.Count != 0 || !strings.Contains(s.Error, "--cors-origin allow-list") {
		t.Errorf("refused origin: count %d, error %q", s.Count, s.Error)
	}
	// With nothing to chart, the page shows no empty chart box, and Connect is again the
	// primary action.
	if !s.Chart.Hidden || s.Chart.Height != 0 {
		t.Errorf("error state: chart hidden %v, %d px high; want it hidden", s.Chart.Hidden, s.Chart.Height)
	}
	if !hasClass(s.Buttons.Connect, "primary") || hasClass(s.Buttons.Disconnect, "primary") {
		t.Errorf("error state: Connect class %q, Disconnect class %q; want Connect primary", s.Buttons.Connect, s.Buttons.Disconnect)
	}
	b.screenshot(t, "refused", "error-state")
	forbidden := streamRequests(t, st, "Forbidden")
	b.send(t, "select", map[string]any{"page": "refused", "selector": "#start", "value": "live"})
	b.send(t, "click", map[string]any{"page": "refused", "selector": "#connect"})
	s = b.wait(t, "refused", until{Status: "closed", Error: "was refused before it started"}, 20*time.Second)
	if s.Count != 0 {
		t.Errorf("refused origin shows %d rows", s.Count)
	}
	if got := streamRequests(t, st, "Forbidden"); got != forbidden+1 {
		t.Errorf("the server refused %d streams with 403, want %d", got-forbidden, 1)
	}
}

// TestBrowserChartAxes checks the chart's x-axis on two more tables: a TIMESTAMP column
// is the x-axis, and its last tick label, two lines wide at the turn of a year, is drawn
// whole inside the chart; a table without a time column is charted against the row
// number, shown with thousands separators on the axis, in the legend and in the rows.
func TestBrowserChartAxes(t *testing.T) {
	node, web := needNode(t, requireBrowserEnv, "playwright-core")
	needChromium(t)
	st := startStack(t)
	st.ingest(t, "ticks", "text/csv", []byte("ts,v\n2015-12-31 23:59:00,1\n2015-12-31 23:59:30,3\n2016-01-01 00:00:00,2\n"))
	airports, err := os.ReadFile("../../testdata/airports.csv")
	if err != nil {
		t.Fatal(err)
	}
	st.ingest(t, "airports", "text/csv", airports)
	b := startChromium(t, node, web)

	b.open(t, "ticks", st.URL()+"/ui/#token="+url.QueryEscape(st.streamToken(t, "ticks"))+"&table=ticks")
	s := b.wait(t, "ticks", until{Status: "live", Count: new(3)}, 20*time.Second)
	if want := []string{"3", "2016-01-01T00:00:00.000", "2"}; !slices.Equal(s.Rows[0].Cells, want) {
		t.Errorf("newest row %q, want %q", s.Rows[0].Cells, want)
	}
	checkChart(t, b.hover(t, "ticks", "#chart .u-over", 0.999, 0.5), "ts", "2016-01-01T00:00:00.000")
	b.screenshot(t, "ticks", "timestamp-axis")

	b.open(t, "airports", st.URL()+"/ui/#token="+url.QueryEscape(st.streamToken(t, "airports"))+"&table=airports")
	s = b.wait(t, "airports", until{Status: "live", Count: new(3376)}, 20*time.Second)
	if s.Rows[0].Key != 3376 || s.Rows[0].Cells[0] != "3,376" {
		t.Errorf("newest row key %d, number %q; want 3376 shown as 3,376", s.Rows[0].Key, s.Rows[0].Cells[0])
	}
	if s.ChartPoints != 2000 {
		t.Errorf("chart has %d points, want the latest 2000", s.ChartPoints)
	}
	checkConnected(t, s)
	checkChart(t, b.hover(t, "airports", "#chart .u-over", 0.999, 0.5), "row", "3,376")
	b.screenshot(t, "airports", "row-axis")
	if len(s.Problems) > 0 {
		t.Errorf("the page logged errors: %q", s.Problems)
	}
}

// checkChart checks that the chart is shown against the x-axis x, that the legend shows
// legendX for the point under the mouse, and that the x-axis labels are drawn and none is
// cut off at the chart's right edge.
func checkChart(t *testing.T, s pageState, x, legendX string) {
	t.Helper()
	c := s.Chart
	if c.Hidden || c.X != x || c.LegendX != legendX {
		t.Errorf("chart: hidden %v, x-axis %q, legend x %q; want shown against %q, legend x %q", c.Hidden, c.X, c.LegendX, x, legendX)
	}
	if c.AxisInk == 0 || c.EdgeInk != 0 {
		t.Errorf("x-axis labels: %d pixels drawn, %d at the right edge; want some, none at the edge", c.AxisInk, c.EdgeInk)
	}
}

// checkConnected checks that, while connected, Disconnect is the primary button.
func checkConnected(t *testing.T, s pageState) {
	t.Helper()
	if hasClass(s.Buttons.Connect, "primary") || !hasClass(s.Buttons.Disconnect, "primary") {
		t.Errorf("connected: Connect class %q, Disconnect class %q; want Disconnect primary", s.Buttons.Connect, s.Buttons.Disconnect)
	}
}

func hasClass(attr, class string) bool {
	return slices.Contains(strings.Fields(attr), class)
}

// uiServer serves the embedded page at /ui/ from another origin (an HTTPS server of its
// own), as a site hosting the page elsewhere would.
func uiServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/ui/", http.StripPrefix("/ui", api.UIHandler()))
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// streamRequests reads from /metrics how many GET /stream/{token} requests ended with
// the HTTP status text status.
func streamRequests(t *testing.T, st *stack, status string) int {
	t.Helper()
	code, body := st.do(t, "GET", "/metrics", "", nil)
	if code != http.StatusOK {
		t.Fatalf("metrics: status %d", code)
	}
	prefix := fmt.Sprintf(`ducktail_http_requests_total{method="GET",route="/stream/{token}",status=%q} `, status)
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			var n int
			fmt.Sscan(v, &n)
			return n
		}
	}
	return 0
}

// ingestWeather commits the weather data set in one commit and returns its dates in order.
func ingestWeather(t *testing.T, st *stack) []string {
	t.Helper()
	body, err := os.ReadFile(weatherCSV)
	if err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	dates := make([]string, 0, len(records)-1)
	for _, r := range records[1:] {
		dates = append(dates, r[0])
	}
	st.ingest(t, "weather", "text/csv", body)
	return dates
}

// weatherRows is an NDJSON body of one weather row per date.
func weatherRows(dates ...string) []byte {
	var b strings.Builder
	for _, d := range dates {
		fmt.Fprintf(&b, `{"date":%q,"precipitation":1.5,"temp_max":7.2,"temp_min":1.1,"wind":2.3,"weather":"sun"}`+"\n", d)
	}
	return []byte(b.String())
}

// checkRows checks the page's rows against what was committed: snapshot dates, then
// live dates, in order. The page shows the latest rows newest first, numbered by arrival:
// the keys must count down from total without a gap or a repeat, and the dates must be
// the latest committed ones, newest first, so no row was lost or shown twice.
func checkRows(t *testing.T, s pageState, total int, snapshot, live []string) {
	t.Helper()
	if s.Count != total {
		t.Errorf("row count %d, want %d", s.Count, total)
	}
	all := append(slices.Clone(snapshot), live...)
	slices.Reverse(all)
	want := all[:min(len(all), 200)]
	if len(s.Rows) != len(want) {
		t.Fatalf("%d rows rendered, want %d", len(s.Rows), len(want))
	}
	for i, r := range s.Rows {
		if r.Key != total-i {
			t.Fatalf("row %d has key %d, want %d (keys %v…)", i, r.Key, total-i, keys(s.Rows[:min(len(s.Rows), 10)]))
		}
		if len(r.Cells) < 2 || r.Cells[1] != want[i] {
			t.Fatalf("row %d (key %d) is %q, want date %s", i, r.Key, r.Cells, want[i])
		}
	}
}

func keys(rows []pageRow) []int {
	out := make([]int, len(rows))
	for i, r := range rows {
		out[i] = r.Key
	}
	return out
}
