package api_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readCSV(t testing.TB, name string) [][]string {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(readFile(t, name))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func columnTypes(q queryResult) map[string]string {
	out := map[string]string{}
	for _, c := range q.Columns {
		out[c.Name] = c.Type
	}
	return out
}

// snapshotArrow reads a table snapshot as an Arrow IPC stream and returns its schema,
// row count and Ducktail-Cursor.
func (e *env) snapshotArrow(t testing.TB, table string) (*arrow.Schema, int64, string, []arrow.RecordBatch) {
	t.Helper()
	r := e.do(t, "GET", "/v1/tables/"+table+"/snapshot", e.admin, nil, "Accept: application/vnd.apache.arrow.stream")
	if r.status != http.StatusOK {
		t.Fatalf("snapshot %s: %d %s", table, r.status, r.body)
	}
	rd, err := ipc.NewReader(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	var recs []arrow.RecordBatch
	for rd.Next() {
		rec := rd.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
		n += rec.NumRows()
	}
	if err := rd.Err(); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return rd.Schema(), n, r.header.Get("Ducktail-Cursor"), recs
}

// TestRealDataEndToEnd ingests the real data sets of testdata/ over HTTP, each as the
// issue names it, and checks row counts, column types and values against the source
// files through both the snapshot endpoint and /v1/query.
func TestRealDataEndToEnd(t *testing.T) {
	e := newEnv(t, options{})

	t.Run("seattle-weather.csv", func(t *testing.T) {
		src := readCSV(t, "seattle-weather.csv")
		r := e.ingest(t, "weather?create=true", "text/csv", readFile(t, "seattle-weather.csv"), http.StatusCreated, "Idempotency-Key: weather-1")
		var ack struct {
			Rows   int
			Cursor string
		}
		r.json(t, &ack)
		if ack.Rows != len(src)-1 || ack.Rows != 1461 {
			t.Fatalf("ingested %d rows, file has %d", ack.Rows, len(src)-1)
		}
		q := e.queryJSON(t, "SELECT * FROM weather")
		want := map[string]string{"date": "DATE", "precipitation": "DOUBLE", "temp_max": "DOUBLE", "temp_min": "DOUBLE", "wind": "DOUBLE", "weather": "VARCHAR"}
		if got := columnTypes(q); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("types = %v, want %v", got, want)
		}
		if len(q.Rows) != 1461 {
			t.Fatalf("query rows = %d", len(q.Rows))
		}
		// Every value of every row equals the file's.
		for i, rec := range src[1:] {
			row := q.Rows[i]
			if row["date"] != rec[0] || row["weather"] != rec[5] {
				t.Fatalf("row %d = %v, file has %v", i+1, row, rec)
			}
			for j, col := range []string{"precipitation", "temp_max", "temp_min", "wind"} {
				got, _ := row[col].(json.Number).Float64()
				want, _ := strconv.ParseFloat(rec[j+1], 64)
				if got != want {
					t.Fatalf("row %d %s = %v, file has %s", i+1, col, row[col], rec[j+1])
				}
			}
		}
		if q.Cursors["weather"] != ack.Cursor {
			t.Fatalf("query cursor %s, ingest cursor %s", q.Cursors["weather"], ack.Cursor)
		}
		schema, n, cursor, _ := e.snapshotArrow(t, "weather")
		if n != 1461 || cursor != ack.Cursor || schema.Field(0).Type.ID() != arrow.DATE32 {
			t.Fatalf("snapshot: %d rows, cursor %s, schema %s", n, cursor, schema)
		}
	})

	t.Run("birdstrikes.csv", func(t *testing.T) {
		src := readCSV(t, "birdstrikes.csv")
		r := e.do(t, "POST", "/v1/tables/birdstrikes/rows?create=true", e.admin, readFile(t, "birdstrikes.csv"), "Content-Type: text/csv")
		if r.status != http.StatusCreated {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		q := e.queryJSON(t, `SELECT count(*) AS n, sum("Cost Total $") AS cost, max("Flight Date") AS last FROM birdstrikes`)
		var cost int64
		last := ""
		for _, rec := range src[1:] {
			c, _ := strconv.ParseInt(rec[12], 10, 64)
			cost += c
			last = max(last, rec[3])
		}
		row := q.Rows[0]
		if row["n"].(json.Number).String() != strconv.Itoa(len(src)-1) || row["cost"].(json.Number).String() != strconv.FormatInt(cost, 10) || row["last"] != last {
			t.Fatalf("birdstrikes = %v, file: %d rows, cost %d, last %s", row, len(src)-1, cost, last)
		}
		types := columnTypes(e.queryJSON(t, `SELECT * FROM birdstrikes LIMIT 1`))
		if types["Flight Date"] != "DATE" || types["Speed IAS in knots"] != "BIGINT" || types["Airport Name"] != "VARCHAR" {
			t.Fatalf("types = %v", types)
		}
	})

	flights := readFile(t, "flights-20k.json")
	var srcFlights []struct {
		Date        string `json:"date"`
		Delay       int64  `json:"delay"`
		Distance    int64  `json:"distance"`
		Origin      string `json:"origin"`
		Destination string `json:"destination"`
	}
	if err := json.Unmarshal(flights, &srcFlights); err != nil {
		t.Fatal(err)
	}
	var ndjson bytes.Buffer
	var rawRows []json.RawMessage
	json.Unmarshal(flights, &rawRows)
	for _, raw := range rawRows {
		ndjson.Write(raw)
		ndjson.WriteByte('\n')
	}
	for _, c := range []struct {
		table, contentType string
		body               []byte
	}{
		{"flights_json", "application/json", flights},
		{"flights_ndjson", "application/x-ndjson", ndjson.Bytes()},
	} {
		t.Run(c.table, func(t *testing.T) {
			e.do(t, "POST", "/v1/tables/"+c.table+"/rows?create=true", e.admin, c.body, "Content-Type: "+c.contentType)
			q := e.queryJSON(t, "SELECT * FROM "+c.table)
			if len(q.Rows) != 20000 || len(srcFlights) != 20000 {
				t.Fatalf("%d rows, file has %d", len(q.Rows), len(srcFlights))
			}
			if types := columnTypes(q); types["delay"] != "BIGINT" || types["distance"] != "BIGINT" || types["origin"] != "VARCHAR" {
				t.Fatalf("types = %v", types)
			}
			for _, i := range []int{0, 1, 9999, 19999} {
				row, f := q.Rows[i], srcFlights[i]
				if row["date"] != f.Date || row["delay"].(json.Number).String() != strconv.FormatInt(f.Delay, 10) ||
					row["distance"].(json.Number).String() != strconv.FormatInt(f.Distance, 10) || row["origin"] != f.Origin || row["destination"] != f.Destination {
					t.Fatalf("row %d = %v, file has %+v", i, row, f)
				}
			}
		})
	}
	if q := e.queryJSON(t, "SELECT count(*) AS n FROM (SELECT * FROM flights_json EXCEPT ALL SELECT * FROM flights_ndjson)"); q.Rows[0]["n"].(json.Number).String() != "0" {
		t.Fatalf("JSON and NDJSON ingests differ: %v", q.Rows)
	}

	t.Run("flights-200k.arrow", func(t *testing.T) {
		body := readFile(t, "flights-200k.arrow")
		fr, err := ipc.NewFileReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var rows, distance int64
		for i := 0; i < fr.NumRecords(); i++ {
			rec, _ := fr.RecordBatch(i)
			rows += rec.NumRows()
			for _, v := range rec.Column(1).(*array.Int16).Int16Values() {
				distance += int64(v)
			}
		}
		r := e.do(t, "POST", "/v1/tables/flights_arrow/rows?create=true", e.admin, body, "Content-Type: application/vnd.apache.arrow.file")
		if r.status != http.StatusCreated {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		q := e.queryJSON(t, "SELECT count(*) AS n, sum(distance) AS d FROM flights_arrow")
		if q.Rows[0]["n"].(json.Number).String() != strconv.FormatInt(rows, 10) || q.Rows[0]["d"].(json.Number).String() != strconv.FormatInt(distance, 10) || rows != 200000 {
			t.Fatalf("got %v, file has %d rows, distance %d", q.Rows[0], rows, distance)
		}
		schema, n, _, recs := e.snapshotArrow(t, "flights_arrow")
		if n != rows || schema.Field(0).Type.ID() != arrow.INT16 || schema.Field(2).Type.ID() != arrow.FLOAT32 {
			t.Fatalf("snapshot: %d rows, schema %s", n, schema)
		}
		first, _ := fr.RecordBatch(0)
		if !array.Equal(recs[0].Column(0), array.NewSlice(first.Column(0), 0, recs[0].NumRows())) {
			t.Fatal("snapshot delay values differ from the file")
		}
	})

	t.Run("flights-20k.parquet", func(t *testing.T) {
		body := readFile(t, "flights-20k.parquet")
		r := e.do(t, "POST", "/v1/tables/flights_parquet/rows?create=true", e.admin, body, "Content-Type: application/vnd.apache.parquet")
		if r.status != http.StatusCreated {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		// DuckDB's own reading of the file (it wrote it): 20,000 rows, these sums.
		q := e.queryJSON(t, "SELECT count(*) AS n, sum(delay)::VARCHAR AS d, sum(distance)::VARCHAR AS m, min(date)::VARCHAR AS first FROM flights_parquet")
		if got := fmt.Sprint(q.Rows[0]["n"], " ", q.Rows[0]["d"], " ", q.Rows[0]["m"], " ", q.Rows[0]["first"]); got != "20000 275859 15087480 2001-01-01 00:01:00" {
			t.Fatalf("got %s", got)
		}
		// Into the existing table again, and a body that is not Parquet: a 400 that
		// commits nothing.
		if r := e.do(t, "POST", "/v1/tables/flights_parquet/rows", e.admin, body, "Content-Type: application/vnd.apache.parquet"); r.status != http.StatusCreated {
			t.Fatalf("second load: status %d: %s", r.status, r.body)
		}
		bad := e.do(t, "POST", "/v1/tables/flights_parquet/rows", e.admin, body[:len(body)-100], "Content-Type: application/vnd.apache.parquet")
		if bad.status != http.StatusBadRequest || !strings.Contains(string(bad.body), "not a valid Parquet file") {
			t.Fatalf("truncated file: status %d: %s", bad.status, bad.body)
		}
		if q := e.queryJSON(t, "SELECT count(*) AS n FROM flights_parquet"); q.Rows[0]["n"].(json.Number).String() != "40000" {
			t.Fatalf("rows after the refused body: %v", q.Rows[0])
		}
	})
}
