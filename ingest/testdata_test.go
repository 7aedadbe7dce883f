package ingest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/ducktail/ducktail/store"
)

// readTestdata reads one of the real data sets in the repository's testdata folder.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// inferAndDecode infers the columns of a real file, checks them, and decodes it.
func inferAndDecode(t *testing.T, name, contentType string, want []store.ColumnSpec) arrow.RecordBatch {
	t.Helper()
	body := readTestdata(t, name)
	d, err := DecoderFor(contentType)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := d.Infer(body)
	if err != nil {
		t.Fatalf("Infer(%s): %v", name, err)
	}
	if !slices.Equal(specs, want) {
		t.Fatalf("Infer(%s) = %v\nwant %v", name, specs, want)
	}
	s := schemaFromSpecs(t, specs)
	rec, err := d.Decode(body, s)
	if err != nil {
		t.Fatalf("Decode(%s): %v", name, err)
	}
	checkRecord(t, rec, s)
	return rec
}

// csvLines splits a CSV file without quoted fields into its data rows' fields; lines
// end in LF or CRLF.
func csvLines(t *testing.T, body []byte) [][]string {
	t.Helper()
	if bytes.ContainsRune(body, '"') {
		t.Fatal("csvLines needs a file without quotes")
	}
	text := strings.ReplaceAll(string(body), "\r\n", "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")[1:]
	rows := make([][]string, len(lines))
	for i, l := range lines {
		rows[i] = strings.Split(l, ",")
	}
	return rows
}

func TestTestdataSeattleWeather(t *testing.T) {
	rec := inferAndDecode(t, "seattle-weather.csv", csvType, []store.ColumnSpec{
		{Name: "date", Type: "DATE"}, {Name: "precipitation", Type: "DOUBLE"}, {Name: "temp_max", Type: "DOUBLE"},
		{Name: "temp_min", Type: "DOUBLE"}, {Name: "wind", Type: "DOUBLE"}, {Name: "weather", Type: "VARCHAR"},
	})
	if rec.NumRows() != 1461 {
		t.Fatalf("rows = %d, want 1461", rec.NumRows())
	}
	// Every value against the file, read independently.
	rows := csvLines(t, readTestdata(t, "seattle-weather.csv"))
	if len(rows) != 1461 {
		t.Fatalf("file has %d data lines, want 1461", len(rows))
	}
	dates := rec.Column(0).(*array.Date32)
	for i, fields := range rows {
		if got := render(dates, i); got != fields[0] {
			t.Fatalf("row %d date = %s, want %s", i+1, got, fields[0])
		}
		for j := 1; j <= 4; j++ {
			want, err := strconv.ParseFloat(fields[j], 64)
			if err != nil {
				t.Fatal(err)
			}
			if got := rec.Column(j).(*array.Float64).Value(i); got != want {
				t.Fatalf("row %d column %s = %v, want %v", i+1, rec.ColumnName(j), got, want)
			}
		}
		if got := rec.Column(5).(*array.String).Value(i); got != fields[5] {
			t.Fatalf("row %d weather = %q, want %q", i+1, got, fields[5])
		}
	}
	if got := strings.Join(rowOf(rec, 1460), ","); got != "2015-12-31,0,5.6,-2.1,3.5,sun" {
		t.Errorf("last row = %s, want 2015-12-31,0,5.6,-2.1,3.5,sun", got)
	}

	// The same file with CRLF line ends and a BOM decodes to the same record.
	crlf := append([]byte("\uFEFF"), bytes.ReplaceAll(readTestdata(t, "seattle-weather.csv"), []byte("\n"), []byte("\r\n"))...)
	again, err := csvDecoder{}.Decode(crlf, schemaFromSpecs(t, []store.ColumnSpec{
		{Name: "date", Type: "DATE"}, {Name: "precipitation", Type: "DOUBLE"}, {Name: "temp_max", Type: "DOUBLE"},
		{Name: "temp_min", Type: "DOUBLE"}, {Name: "wind", Type: "DOUBLE"}, {Name: "weather", Type: "VARCHAR"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !array.RecordEqual(rec, again) {
		t.Error("CRLF and BOM variant decoded differently")
	}
}

func TestTestdataBirdstrikes(t *testing.T) {
	rec := inferAndDecode(t, "birdstrikes.csv", csvType, []store.ColumnSpec{
		{Name: "Airport Name", Type: "VARCHAR"}, {Name: "Aircraft Make Model", Type: "VARCHAR"},
		{Name: "Effect Amount of damage", Type: "VARCHAR"}, {Name: "Flight Date", Type: "DATE"},
		{Name: "Aircraft Airline Operator", Type: "VARCHAR"}, {Name: "Origin State", Type: "VARCHAR"},
		{Name: "Phase of flight", Type: "VARCHAR"}, {Name: "Wildlife Size", Type: "VARCHAR"},
		{Name: "Wildlife Species", Type: "VARCHAR"}, {Name: "Time of day", Type: "VARCHAR"},
		{Name: "Cost Other", Type: "BIGINT"}, {Name: "Cost Repair", Type: "BIGINT"},
		{Name: "Cost Total $", Type: "BIGINT"}, {Name: "Speed IAS in knots", Type: "BIGINT"},
	})
	rows := csvLines(t, readTestdata(t, "birdstrikes.csv"))
	if rec.NumRows() != 10000 || len(rows) != 10000 {
		t.Fatalf("rows = %d, file lines = %d, want 10000", rec.NumRows(), len(rows))
	}
	for i, fields := range rows {
		for j, f := range fields {
			want := f
			if f == "" {
				want = "NULL"
			}
			if got := render(rec.Column(j), i); got != want {
				t.Fatalf("row %d column %q = %q, want %q", i+1, rec.ColumnName(j), got, want)
			}
		}
	}
	if got := strings.Join(rowOf(rec, 15), "|"); got != "BARKSDALE AIR FORCE BASE ARPT|A-10A|None|1990-03-13|MILITARY|Louisiana|Approach|Medium|Unknown bird or bat|Day|0|4175|4175|250" {
		t.Errorf("row 16 = %s", got)
	}
}

func TestTestdataAirports(t *testing.T) {
	rec := inferAndDecode(t, "airports.csv", csvType, []store.ColumnSpec{
		{Name: "iata", Type: "VARCHAR"}, {Name: "name", Type: "VARCHAR"}, {Name: "city", Type: "VARCHAR"},
		{Name: "state", Type: "VARCHAR"}, {Name: "country", Type: "VARCHAR"},
		{Name: "latitude", Type: "DOUBLE"}, {Name: "longitude", Type: "DOUBLE"},
	})
	if rec.NumRows() != 3376 {
		t.Fatalf("rows = %d, want 3376", rec.NumRows())
	}
	for _, tc := range []struct {
		row  int
		want string
	}{
		{0, "00M|Thigpen|Bay Springs|MS|USA|31.95376472|-89.23450472"},
		{301, "35A|Union County, Troy Shelton|Union|SC|USA|34.68680111|-81.64121167"},
		{486, "53A|Dr. C.P. Savage, Sr.|Montezuma|GA|USA|32.302|-84.00747222"},
		{3375, "ZZV|Zanesville Municipal|Zanesville|OH|USA|39.94445833|-81.89210528"},
	} {
		if got := strings.Join(rowOf(rec, tc.row), "|"); got != tc.want {
			t.Errorf("row %d = %s, want %s", tc.row+1, got, tc.want)
		}
	}
}

func TestTestdataFlightsJSON(t *testing.T) {
	want := []store.ColumnSpec{
		{Name: "date", Type: "VARCHAR"}, {Name: "delay", Type: "BIGINT"}, {Name: "distance", Type: "BIGINT"},
		{Name: "origin", Type: "VARCHAR"}, {Name: "destination", Type: "VARCHAR"},
	}
	rec := inferAndDecode(t, "flights-20k.json", jsonType, want)
	body := readTestdata(t, "flights-20k.json")
	var flights []struct {
		Date        string `json:"date"`
		Delay       int64  `json:"delay"`
		Distance    int64  `json:"distance"`
		Origin      string `json:"origin"`
		Destination string `json:"destination"`
	}
	if err := json.Unmarshal(body, &flights); err != nil {
		t.Fatal(err)
	}
	if rec.NumRows() != 20000 || len(flights) != 20000 {
		t.Fatalf("rows = %d, encoding/json rows = %d, want 20000", rec.NumRows(), len(flights))
	}
	for i, f := range flights {
		got := strings.Join(rowOf(rec, i), "|")
		if w := strings.Join([]string{f.Date, strconv.FormatInt(f.Delay, 10), strconv.FormatInt(f.Distance, 10), f.Origin, f.Destination}, "|"); got != w {
			t.Fatalf("row %d = %s, want %s", i+1, got, w)
		}
	}

	// The same rows as NDJSON infer and decode to the same record.
	var raw []json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	var nd bytes.Buffer
	for _, r := range raw {
		nd.Write(r)
		nd.WriteByte('\n')
	}
	specs, err := jsonDecoder{ndjson: true}.Infer(nd.Bytes())
	if err != nil || !slices.Equal(specs, want) {
		t.Fatalf("NDJSON Infer = %v, %v; want %v", specs, err, want)
	}
	again, err := jsonDecoder{ndjson: true}.Decode(nd.Bytes(), schemaFromSpecs(t, want))
	if err != nil {
		t.Fatal(err)
	}
	if !array.RecordEqual(rec, again) {
		t.Error("NDJSON decoded differently from the JSON array")
	}
}

func TestTestdataFlightsArrow(t *testing.T) {
	rec := inferAndDecode(t, "flights-200k.arrow", arrowFileType, []store.ColumnSpec{
		{Name: "delay", Type: "SMALLINT"}, {Name: "distance", Type: "SMALLINT"}, {Name: "time", Type: "FLOAT"},
	})
	body := readTestdata(t, "flights-200k.arrow")
	r, err := ipc.NewFileReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var batches []arrow.RecordBatch
	for i := 0; i < r.NumRecords(); i++ {
		b, err := r.RecordBatchAt(i)
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	if rec.NumRows() != 200000 {
		t.Fatalf("rows = %d, want 200000", rec.NumRows())
	}
	// Against arrow-go's own reading, and converted into wider columns.
	wide := schemaOf(t, "TIME DOUBLE", "delay BIGINT", "distance INTEGER")
	widened, err := arrowDecoder{file: true}.Decode(body, wide)
	if err != nil {
		t.Fatal(err)
	}
	checkRecord(t, widened, wide)
	row := 0
	for _, b := range batches {
		delay := b.Column(0).(*array.Int16)
		distance := b.Column(1).(*array.Int16)
		tm := b.Column(2).(*array.Float32)
		for i := 0; i < int(b.NumRows()); i++ {
			if rec.Column(0).(*array.Int16).Value(row) != delay.Value(i) ||
				rec.Column(1).(*array.Int16).Value(row) != distance.Value(i) ||
				rec.Column(2).(*array.Float32).Value(row) != tm.Value(i) {
				t.Fatalf("row %d differs from arrow-go's reading", row+1)
			}
			if widened.Column(1).(*array.Int64).Value(row) != int64(delay.Value(i)) ||
				widened.Column(2).(*array.Int32).Value(row) != int32(distance.Value(i)) ||
				widened.Column(0).(*array.Float64).Value(row) != float64(tm.Value(i)) {
				t.Fatalf("widened row %d differs from arrow-go's reading", row+1)
			}
			row++
		}
	}
	if row != 200000 {
		t.Errorf("arrow-go read %d rows, want 200000", row)
	}
	if got := strings.Join(rowOf(rec, 199999), "|"); got != "0|1452|23.983334" {
		t.Errorf("last row = %s, want 0|1452|23.983334", got)
	}
}

// rowOf renders one row of rec.
func rowOf(rec arrow.RecordBatch, i int) []string {
	out := make([]string, rec.NumCols())
	for j, col := range rec.Columns() {
		out[j] = render(col, i)
	}
	return out
}
