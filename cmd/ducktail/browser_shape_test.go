package main

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rainyWhere is the filter the shape test types: the weather rows it keeps are those
// weatherRainy selects.
const rainyWhere = "weather = 'rain' AND temp_max > 20"

// TestBrowserShape sets the live page's filter and column picker on the weather table
// (docs/api.md, "Shapes: ?where= and ?columns="): the page reloads through the shape and
// shows exactly the rows the predicate matches, with the picked columns; of two commits
// after it only the matching row appears; a predicate the server refuses shows the
// server's problem detail in the page's error state, and a good one loads again.
func TestBrowserShape(t *testing.T) {
	node, web := needNode(t, requireBrowserEnv, "playwright-core")
	needChromium(t)
	st := startStack(t)
	ingestWeather(t, st)
	rainy := weatherRainy(t)
	token := st.streamToken(t, "weather")
	b := startChromium(t, node, web)

	b.open(t, "page", st.URL()+"/ui/#token="+url.QueryEscape(token)+"&table=weather")
	s := b.wait(t, "page", until{Status: "live", Count: new(1461)}, 20*time.Second)
	all := []string{"date", "precipitation", "temp_max", "temp_min", "wind", "weather"}
	var picker []string
	for _, c := range s.Picker {
		if c.Checked {
			picker = append(picker, c.Name)
		}
	}
	if !slices.Equal(picker, all) || len(s.Picker) != len(all) {
		t.Fatalf("column picker %v, want %q all picked", s.Picker, all)
	}

	// The filter, then three columns off: each change restarts the load.
	b.send(t, "fill", map[string]any{"page": "page", "selector": "#where", "value": rainyWhere})
	for _, c := range []string{"precipitation", "temp_min", "wind"} {
		b.send(t, "check", map[string]any{"page": "page", "selector": `#columns input[value="` + c + `"]`, "checked": false})
	}
	loaded := "Connecting to weather (where " + rainyWhere + "; columns date, temp_max, weather)."
	// The header is the last load's alone: the count and rows rendered with it are its own.
	s = b.wait(t, "page", until{Status: "live", Count: new(len(rainy)), Notice: loaded, Columns: []string{"#", "date", "temp_max", "weather"}}, 20*time.Second)
	checkRows(t, s, len(rainy), rainy, nil)
	for _, r := range s.Rows {
		if temp, err := strconv.ParseFloat(r.Cells[2], 64); len(r.Cells) != 4 || err != nil || temp <= 20 || r.Cells[3] != "rain" {
			t.Fatalf("row %q is not of the shape", r.Cells)
		}
	}
	if !strings.HasPrefix(s.Cursor, "r2.") {
		t.Errorf("page cursor %q, want a shaped one (r2.)", s.Cursor)
	}
	if len(s.Problems) > 0 {
		t.Errorf("the page logged errors: %q", s.Problems)
	}
	b.screenshot(t, "page", "shaped")

	// A commit the filter drops whole, then one with a matching and a dropped row.
	st.ingest(t, "weather", "application/x-ndjson", []byte(
		`{"date":"2016-01-01","precipitation":0,"temp_max":25,"temp_min":10,"wind":1,"weather":"sun"}`+"\n"))
	st.ingest(t, "weather", "application/x-ndjson", []byte(
		`{"date":"2016-01-02","precipitation":3,"temp_max":10,"temp_min":5,"wind":2,"weather":"rain"}`+"\n"+
			`{"date":"2016-01-03","precipitation":4,"temp_max":22.5,"temp_min":12,"wind":3,"weather":"rain"}`+"\n"))
	s = b.wait(t, "page", until{Count: new(len(rainy) + 1)}, liveBudget)
	checkRows(t, s, len(rainy)+1, rainy, []string{"2016-01-03"})
	if want := []string{strconv.Itoa(len(rainy) + 1), "2016-01-03", "22.5", "rain"}; !slices.Equal(s.Rows[0].Cells, want) {
		t.Errorf("live row %q, want %q", s.Rows[0].Cells, want)
	}

	// A predicate the sandbox refuses: the page shows the server's own problem detail.
	bad := "random() < 0.5"
	status, body := st.do(t, "GET", "/v1/tables/weather/snapshot?where="+url.QueryEscape(bad), "", nil)
	var problem struct{ Detail, Field string }
	if err := json.Unmarshal(body, &problem); status != http.StatusBadRequest || err != nil || problem.Field != "where" || problem.Detail == "" {
		t.Fatalf("snapshot with where %q: status %d: %s", bad, status, body)
	}
	b.send(t, "fill", map[string]any{"page": "page", "selector": "#where", "value": bad})
	b.wait(t, "page", until{Status: "closed", Error: "HTTP 400 – " + problem.Detail}, 20*time.Second)
	b.screenshot(t, "page", "shape-refused")

	// Mending the filter loads again.
	b.send(t, "fill", map[string]any{"page": "page", "selector": "#where", "value": rainyWhere})
	s = b.wait(t, "page", until{Status: "live", Count: new(len(rainy) + 1)}, 20*time.Second)
	if s.Error != "" {
		t.Errorf("the error %q is still shown", s.Error)
	}
	checkRows(t, s, len(rainy)+1, append(slices.Clone(rainy), "2016-01-03"), nil)
}

// weatherRainy returns the dates, in order, of the weather data set's rows that
// rainyWhere keeps.
func weatherRainy(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(weatherCSV)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"date", "precipitation", "temp_max", "temp_min", "wind", "weather"}; !slices.Equal(records[0], want) {
		t.Fatalf("%s header %q, want %q", weatherCSV, records[0], want)
	}
	var dates []string
	for _, r := range records[1:] {
		temp, err := strconv.ParseFloat(r[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		if r[5] == "rain" && temp > 20 {
			dates = append(dates, r[0])
		}
	}
	if len(dates) == 0 {
		t.Fatal("no rainy day over 20 °C in the data set")
	}
	return dates
}
