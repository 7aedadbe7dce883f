package api_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/valuetext"
)

// benchFlightsFile is the 3M-row BTS flights file that `make bench-data` fetches.
const benchFlightsFile = "../testdata/bench/flights-3m.parquet"

// flightColumns are the ten columns of the benchmark rows, derived from the five of the
// BTS flights file (date, delay, distance, origin, destination).
var flightColumns = []store.ColumnSpec{
	{Name: "date", Type: "TIMESTAMP"}, {Name: "day", Type: "DATE"},
	{Name: "delay", Type: "BIGINT"}, {Name: "distance", Type: "BIGINT"},
	{Name: "delay_hours", Type: "DOUBLE"}, {Name: "distance_km", Type: "DOUBLE"},
	{Name: "origin", Type: "VARCHAR"}, {Name: "destination", Type: "VARCHAR"},
	{Name: "route", Type: "VARCHAR"}, {Name: "delayed", Type: "BOOLEAN"},
}

// loadFlights reads the first n rows of the flights file as one record shaped by
// flightColumns. It skips the benchmark when the file is missing.
func loadFlights(b *testing.B, n int) arrow.RecordBatch {
	b.Helper()
	f, err := os.Open(benchFlightsFile)
	if errors.Is(err, os.ErrNotExist) {
		b.Skip("run `make bench-data` first: " + benchFlightsFile + " is missing")
	}
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		b.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		b.Fatal(err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	schema := (&store.Schema{Columns: specColumns(flightColumns)}).Arrow()
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	rows := 0
	for rows < n && rr.Next() {
		rec := rr.RecordBatch()
		dates := rec.Column(0).(*array.Timestamp)
		delays := rec.Column(1).(*array.Int64)
		dists := rec.Column(2).(*array.Int64)
		origins := rec.Column(3).(*array.LargeString)
		dests := rec.Column(4).(*array.LargeString)
		for i := 0; i < int(rec.NumRows()) && rows < n; i++ {
			ts := dates.Value(i)
			bld.Field(0).(*array.TimestampBuilder).Append(ts)
			bld.Field(1).(*array.Date32Builder).Append(arrow.Date32FromTime(time.UnixMicro(int64(ts)).UTC()))
			bld.Field(2).(*array.Int64Builder).Append(delays.Value(i))
			bld.Field(3).(*array.Int64Builder).Append(dists.Value(i))
			bld.Field(4).(*array.Float64Builder).Append(float64(delays.Value(i)) / 60)
			bld.Field(5).(*array.Float64Builder).Append(float64(dists.Value(i)) * 1.609344)
			bld.Field(6).(*array.StringBuilder).Append(origins.Value(i))
			bld.Field(7).(*array.StringBuilder).Append(dests.Value(i))
			bld.Field(8).(*array.StringBuilder).Append(origins.Value(i) + "-" + dests.Value(i))
			bld.Field(9).(*array.BooleanBuilder).Append(delays.Value(i) > 15)
			rows++
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		b.Fatal(err)
	}
	return bld.NewRecordBatch()
}

func specColumns(specs []store.ColumnSpec) []store.Column {
	cols := make([]store.Column, len(specs))
	for i, s := range specs {
		t, _ := store.ParseType(s.Type)
		cols[i] = store.Column{ID: i + 1, Name: s.Name, Type: t}
	}
	return cols
}

// arrowBody encodes rec as an Arrow IPC stream.
func arrowBody(b *testing.B, rec arrow.RecordBatch) []byte {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		b.Fatal(err)
	}
	w.Close()
	return buf.Bytes()
}

// csvBody encodes rec as CSV with a header row (values as valuetext.AppendTextValue writes
// them; none of the flights values needs quoting).
func csvBody(rec arrow.RecordBatch) []byte {
	var buf []byte
	for i, f := range rec.Schema().Fields() {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, f.Name...)
	}
	buf = append(buf, '\n')
	for r := 0; r < int(rec.NumRows()); r++ {
		for c := range rec.Columns() {
			if c > 0 {
				buf = append(buf, ',')
			}
			buf = valuetext.AppendTextValue(buf, rec.Column(c), r)
		}
		buf = append(buf, '\n')
	}
	return buf
}

// jsonBody encodes rec as a JSON array of objects, or as NDJSON.
func jsonBody(rec arrow.RecordBatch, ndjson bool) []byte {
	var buf []byte
	if !ndjson {
		buf = append(buf, '[')
	}
	for r := 0; r < int(rec.NumRows()); r++ {
		if r > 0 && !ndjson {
			buf = append(buf, ',')
		}
		buf = append(buf, '{')
		for c, f := range rec.Schema().Fields() {
			if c > 0 {
				buf = append(buf, ',')
			}
			buf = valuetext.AppendJSONString(buf, f.Name)
			buf = append(buf, ':')
			buf = valuetext.AppendJSONValue(buf, rec.Column(c), r, false)
		}
		buf = append(buf, '}')
		if ndjson {
			buf = append(buf, '\n')
		}
	}
	if !ndjson {
		buf = append(buf, ']')
	}
	return buf
}
