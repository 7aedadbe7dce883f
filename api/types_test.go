package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/ducktail/ducktail/valuetext"
)

// everyTypeFile is testdata/every-type.json: a table of every column type
// (docs/api.md, "Column types") in the spelling a user might send and the canonical
// spelling ducktail answers with, one row of values, and that row in the snapshot's JSON.
type everyTypeFile struct {
	Columns []struct {
		Name, Type, Canonical string
	}
	Row          json.RawMessage
	SnapshotJSON string `json:"snapshot_json"`
}

var (
	everyType     []struct{ name, spelling, canonical string }
	everyTypeRow  string
	everyTypeJSON string
)

func init() {
	raw, err := os.ReadFile("../testdata/every-type.json")
	if err != nil {
		panic(err)
	}
	var f everyTypeFile
	if err := json.Unmarshal(raw, &f); err != nil {
		panic(err)
	}
	for _, c := range f.Columns {
		everyType = append(everyType, struct{ name, spelling, canonical string }{c.Name, c.Type, c.Canonical})
	}
	var row bytes.Buffer
	if err := json.Compact(&row, f.Row); err != nil {
		panic(err)
	}
	everyTypeRow, everyTypeJSON = row.String(), f.SnapshotJSON
}

// everyTypeNulls is the all-NULL row in the same JSON.
func everyTypeNulls() string {
	var parts []string
	for _, c := range everyType {
		parts = append(parts, fmt.Sprintf("%q:null", c.name))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func createEveryType(t *testing.T, e *env, table string) {
	t.Helper()
	var cols []map[string]string
	for _, c := range everyType {
		cols = append(cols, map[string]string{"name": c.name, "type": c.spelling})
	}
	body, _ := json.Marshal(map[string]any{"name": table, "columns": cols})
	r := e.do(t, "POST", "/v1/tables", e.admin, body)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var info struct{ Columns []struct{ Name, Type string } }
	r.json(t, &info)
	for i, c := range info.Columns {
		if c.Type != everyType[i].canonical {
			t.Errorf("column %s: type %s, want %s", c.Name, c.Type, everyType[i].canonical)
		}
	}
}

// snapshotRows returns the snapshot's JSON rows, each compacted to one line.
func snapshotRows(t *testing.T, e *env, table string) []string {
	t.Helper()
	r := e.do(t, "GET", "/v1/tables/"+table+"/snapshot", e.admin, nil, "Accept: application/x-ndjson")
	if r.status != http.StatusOK {
		t.Fatalf("snapshot: %d %s", r.status, r.body)
	}
	return strings.Split(strings.TrimSpace(string(r.body)), "\n")
}

// TestEveryTypeEndToEnd declares a table of every column type, ingests a row of values
// and a row of NULLs as NDJSON and checks them in every snapshot format and in the live
// stream (Arrow and JSON payloads); then re-ingests the snapshot as Arrow and as CSV into
// new tables and reads the same values back; then adds a nested column, and replays.
func TestEveryTypeEndToEnd(t *testing.T) {
	e := newEnv(t, options{})
	createEveryType(t, e, "every")
	var created struct{ Cursor string }
	e.do(t, "GET", "/v1/tables/every", e.admin, nil).json(t, &created)
	arrowLive := e.sse(t, "/v1/tables/every/stream", e.admin)
	jsonLive := e.sse(t, "/v1/tables/every/stream?encoding=json", e.admin)
	if ev := arrowLive.next(); ev.Event != "schema" {
		t.Fatalf("first event %+v", ev)
	}
	if ev := jsonLive.next(); !strings.Contains(ev.Data, `{"name":"deep","type":"STRUCT(a STRUCT(b INTEGER[])[])"}`) {
		t.Fatalf("JSON schema event does not describe the nested type: %s", ev.Data)
	}
	e.ingest(t, "every", "application/x-ndjson", []byte(everyTypeRow+"\n{}\n"), http.StatusCreated)
	want := []string{everyTypeJSON, everyTypeNulls()}
	if got := snapshotRows(t, e, "every"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("NDJSON snapshot:\n got %s\nwant %s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The live batch in the Arrow encoding renders as the snapshot; in the JSON encoding
	// the integers past 2^53 are strings.
	ev := arrowLive.next()
	sc, recs := decodePayload(t, ev.Data)
	if got := renderRows(sc, recs, false); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Arrow batch payload:\n got %s\nwant %s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	ev = jsonLive.next()
	for _, s := range []string{`"9007199254740993"`, `"-170141183460469231731687303715884105728"`, `"18446744073709551615"`,
		`"170141183460469231731687303715884105727"`, `"1234567890123456789012345678.0123456789"`, `{"lat":38.5,"tags":["x"]}`} {
		if !strings.Contains(ev.Data, s) {
			t.Errorf("JSON batch payload lacks %s: %s", s, ev.Data)
		}
	}

	// The Arrow snapshot re-ingested into a table of the same columns reads back the same.
	createEveryType(t, e, "again")
	r := e.do(t, "GET", "/v1/tables/every/snapshot", e.admin, nil, "Accept: application/vnd.apache.arrow.stream")
	e.ingest(t, "again", "application/vnd.apache.arrow.stream", r.body, http.StatusCreated)
	if got := snapshotRows(t, e, "again"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Arrow round trip:\n got %s\nwant %s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Created from that Arrow, a table gets the types the Arrow forms map to: DuckDB's
	// Arrow output carries no trace of HUGEINT, UHUGEINT, UUID, JSON or ENUM (docs/api.md;
	// HUGEINT's values need a HUGEINT column, a DECIMAL(38,0) holds fewer digits).
	body, _ := json.Marshal(map[string]any{"sql": "SELECT * EXCLUDE (h, uh) FROM every"})
	r = e.do(t, "POST", "/v1/query", e.admin, body, "Accept: application/vnd.apache.arrow.stream")
	e.ingest(t, "created?create=true", "application/vnd.apache.arrow.stream", r.body, http.StatusCreated)
	var created2 struct{ Columns []struct{ Name, Type string } }
	e.do(t, "GET", "/v1/tables/created", e.admin, nil).json(t, &created2)
	lost := map[string]string{"UUID": "VARCHAR", "JSON": "VARCHAR", "ENUM('sad', 'ok', 'happy')": "VARCHAR"}
	k := 0
	for _, c := range everyType {
		if c.name == "h" || c.name == "uh" {
			continue
		}
		wantType := c.canonical
		if l, ok := lost[wantType]; ok {
			wantType = l
		}
		if got := created2.Columns[k]; got.Name != c.name || got.Type != wantType {
			t.Errorf("column %s created from Arrow as %s, want %s", got.Name, got.Type, wantType)
		}
		k++
	}

	// The CSV snapshot (nested values as JSON text) ingested into a table of the same
	// columns reads back the same, BLOB apart (CSV takes a BLOB's raw bytes).
	createEveryType(t, e, "from_csv")
	r = e.do(t, "GET", "/v1/tables/every/snapshot", e.admin, nil, "Accept: text/csv")
	csvBody := strings.Replace(string(r.body), ",AAEC,", ",\x00\x01\x02,", 1)
	e.ingest(t, "from_csv", "text/csv", []byte(csvBody), http.StatusCreated)
	if got := snapshotRows(t, e, "from_csv"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("CSV round trip:\n got %s\nwant %s\nCSV %s", strings.Join(got, "\n"), strings.Join(want, "\n"), r.body)
	}

	// JSON and Parquet snapshots.
	r = e.do(t, "GET", "/v1/tables/every/snapshot", e.admin, nil, "Accept: application/json")
	if !bytes.Contains(r.body, []byte(`"rows":[`+everyTypeJSON+",")) || !bytes.Contains(r.body, []byte(`{"name":"geo","type":"STRUCT(lat DOUBLE, tags VARCHAR[])"}`)) {
		t.Fatalf("JSON snapshot %s", r.body)
	}
	r = e.do(t, "GET", "/v1/tables/every/snapshot", e.admin, nil, "Accept: application/vnd.apache.parquet")
	if r.status != http.StatusOK {
		t.Fatalf("Parquet snapshot: %d %s", r.status, r.body)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, -1)
	defer tr.Release()
	var precs []arrow.RecordBatch
	for tr.Next() {
		rec := tr.RecordBatch()
		rec.Retain()
		precs = append(precs, rec)
	}
	// Parquet has no INTERVAL with microseconds and no UNION: they are structs there.
	wantParquet := strings.NewReplacer(`"iv":"P1Y2M3DT4H5M6.5S"`, `"iv":{"months":14,"days":3,"nanoseconds":14706500000000}`,
		`"u":"word"`, `"u":{"tag":1,"num":null,"str":"word"}`).Replace(strings.Join(want, "\n"))
	if got := renderRows(tbl.Schema(), precs, false); strings.Join(got, "\n") != wantParquet {
		t.Fatalf("Parquet snapshot:\n got %s\nwant %s", strings.Join(got, "\n"), wantParquet)
	}

	// A nested column added later; live and replayed batches carry it.
	if r := e.do(t, "POST", "/v1/tables/every/columns", e.admin, []byte(`{"name":"later","type":"MAP(VARCHAR, STRUCT(x DOUBLE[]))"}`)); r.status != http.StatusCreated {
		t.Fatalf("add column: %d %s", r.status, r.body)
	}
	e.ingest(t, "every", "application/x-ndjson", []byte(`{"i8":1,"later":{"k":{"x":[1.5,null]}}}`), http.StatusCreated)
	if ev := arrowLive.next(); ev.Event != "schema" {
		t.Fatalf("after add column: %+v", ev)
	}
	ev = arrowLive.next()
	sc, recs = decodePayload(t, ev.Data)
	live := renderRows(sc, recs, false)
	if len(live) != 1 || !strings.HasSuffix(live[0], `"later":{"k":{"x":[1.5,null]}}}`) {
		t.Fatalf("batch with the new column: %v", live)
	}
	replay := e.sse(t, "/v1/tables/every/stream", e.admin, "Last-Event-ID: "+created.Cursor)
	var replayed []string
	for len(replayed) < 3 {
		ev := replay.next()
		if ev.Event != "batch" {
			continue
		}
		sc, recs := decodePayload(t, ev.Data)
		replayed = append(replayed, renderRows(sc, recs, false)...)
	}
	if replayed[0] != everyTypeJSON || replayed[2] != live[0] {
		t.Fatalf("replay:\n got %v\nwant %s … %s", replayed, everyTypeJSON, live[0])
	}
}

// renderRows renders records as JSON rows with the server's value encoder.
func renderRows(sc *arrow.Schema, recs []arrow.RecordBatch, bigIntsAsStrings bool) []string {
	var out []string
	for _, rec := range recs {
		for i := 0; i < int(rec.NumRows()); i++ {
			b := []byte{'{'}
			for j, f := range sc.Fields() {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(valuetext.AppendJSONString(b, f.Name), ':')
				b = valuetext.AppendJSONValue(b, rec.Column(j), i, bigIntsAsStrings)
			}
			out = append(out, string(append(b, '}')))
		}
	}
	return out
}

// TestNestedValueErrorsNameThePath sends values that do not fit their nested column in
// each text format: a 422 naming the row and the path inside the value, nothing committed.
func TestNestedValueErrorsNameThePath(t *testing.T) {
	e := newEnv(t, options{})
	createEveryType(t, e, "every")
	for _, c := range []struct {
		contentType, body string
		row               int
		column, message   string
	}{
		{"application/x-ndjson", "{}\n{}\n" + `{"geo":{"lat":1,"tags":["a",2]}}`, 3, "geo.tags[1]", `JSON number 2 cannot be stored in a VARCHAR column`},
		{"application/x-ndjson", `{"deep":{"a":[{"b":[1]},{"b":[1,"x"]}]}}`, 1, "deep.a[1].b[1]", `"x" is not an INTEGER`},
		{"application/json", `[{"pair":[1,2,3]}]`, 1, "pair", "JSON array of 3 elements cannot be stored in a INTEGER[2] column"},
		{"application/json", `[{"geo":{"lon":1}}]`, 1, "geo.lon", "unknown member"},
		{"application/json", `[{"attrs":{"a":"x"}}]`, 1, `attrs["a"]`, `"x" is not an INTEGER`},
		{"application/json", `[{"mood":"angry"}]`, 1, "mood", "is not one of the values"},
		{"application/json", `[{"u":true}]`, 1, "u", "cannot be stored"},
		{"text/csv", "tags,geo\n\"[\"\"a\"\"]\",\"{\"\"lat\"\":\"\"x\"\"}\"\n", 1, "geo.lat", `"x" is not a DOUBLE`},
		{"text/csv", "tags\n[\n", 1, "tags", "is not JSON text"},
	} {
		r := e.do(t, "POST", "/v1/tables/every/rows", e.admin, []byte(c.body), "Content-Type: "+c.contentType)
		if r.status != http.StatusUnprocessableEntity {
			t.Errorf("%s %s: %d %s; want 422", c.contentType, c.body, r.status, r.body)
			continue
		}
		p := r.problem(t)
		if r.status != http.StatusUnprocessableEntity || p.Row != c.row || p.Column != c.column || !strings.Contains(p.Detail, c.message) {
			t.Errorf("%s %s: %d %+v; want 422 at row %d, column %s: %s", c.contentType, c.body, r.status, p, c.row, c.column, c.message)
		}
	}
	if rows := snapshotRows(t, e, "every"); len(rows) != 1 || rows[0] != "" {
		t.Fatalf("refused bodies committed rows: %v", rows)
	}
}

// TestGeoJSONFeaturesInferNestedColumns ingests the USGS earthquake features one per
// NDJSON line with ?create=true: properties and geometry become STRUCTs, coordinates a
// DOUBLE[], as DuckDB's read_json infers them, and SQL reaches into them directly.
func TestGeoJSONFeaturesInferNestedColumns(t *testing.T) {
	e := newEnv(t, options{})
	var doc struct{ Features []json.RawMessage }
	if err := json.Unmarshal(readFile(t, "earthquakes-50.json"), &doc); err != nil {
		t.Fatal(err)
	}
	var lines bytes.Buffer
	for _, f := range doc.Features {
		if err := json.Compact(&lines, f); err != nil {
			t.Fatal(err)
		}
		lines.WriteByte('\n')
	}
	e.ingest(t, "quakes?create=true", "application/x-ndjson", lines.Bytes(), http.StatusCreated)
	var info struct{ Columns []struct{ Name, Type string } }
	e.do(t, "GET", "/v1/tables/quakes", e.admin, nil).json(t, &info)
	types := map[string]string{}
	for _, c := range info.Columns {
		types[c.Name] = c.Type
	}
	if types["geometry"] != `STRUCT("type" VARCHAR, coordinates DOUBLE[])` || types["id"] != "VARCHAR" ||
		!strings.HasPrefix(types["properties"], `STRUCT(mag DOUBLE, place VARCHAR, "time" BIGINT, updated BIGINT, tz BIGINT, url VARCHAR,`) {
		t.Fatalf("inferred %v", types)
	}
	q := e.queryJSON(t, "SELECT id, properties.place AS place, geometry.coordinates[2] AS lat, len(geometry.coordinates) AS n FROM quakes WHERE id = 'ci37868143'")
	if got := fmt.Sprint(q.Rows); got != "[map[id:ci37868143 lat:34.4945 n:3 place:4km W of Castaic, CA]]" {
		t.Fatalf("query over the nested columns: %s", got)
	}
	// A value that does not fit the inferred type names its path.
	r := e.do(t, "POST", "/v1/tables/quakes/rows", e.admin, []byte(`{"geometry":{"coordinates":[1,"x"]}}`), "Content-Type: application/x-ndjson")
	if p := r.problem(t); r.status != http.StatusUnprocessableEntity || p.Column != "geometry.coordinates[1]" || p.Row != 1 || !strings.Contains(p.Detail, `"x" is not a DOUBLE`) {
		t.Fatalf("bad coordinate: %d %+v", r.status, p)
	}
}
