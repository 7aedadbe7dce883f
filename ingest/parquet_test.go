package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/ducktail/ducktail/store"
)

const parquetType = "application/vnd.apache.parquet"

// parquetBody writes rec as a Parquet file with arrow-go's writer.
func parquetBody(t testing.TB, rec arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, parquet.NewWriterProperties(parquet.WithDictionaryDefault(true)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// repeatedString is n copies of one string of size bytes, as a dictionary array of one
// entry: pqarrow writes it in a few kilobytes, and reads it back as n plain strings.
func repeatedString(t testing.TB, n, size int) arrow.Array {
	t.Helper()
	indices := array.NewInt32Builder(memory.DefaultAllocator)
	indices.AppendValues(make([]int32, n), nil)
	words := fromJSON(t, arrow.BinaryTypes.String, `["`+strings.Repeat("x", size)+`"]`)
	return array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String},
		indices.NewArray(), words)
}

// codeOf is the code of a *store.Error, "" for any other error.
func codeOf(err error) store.Code {
	var e *store.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// TestParquetFlights decodes the 20,000 flights DuckDB wrote in three row groups: the
// types the footer gives, every value (against DuckDB's own reading of the file: the
// sums, the first and last rows), and the same rows into a table whose columns are in
// another order, spelled in another case, narrower or missing from the file.
func TestParquetFlights(t *testing.T) {
	rec := inferAndDecode(t, "flights-20k.parquet", parquetType, []store.ColumnSpec{
		{Name: "date", Type: "TIMESTAMP"}, {Name: "delay", Type: "BIGINT"}, {Name: "distance", Type: "BIGINT"},
		{Name: "origin", Type: "VARCHAR"}, {Name: "destination", Type: "VARCHAR"},
	})
	if rec.NumRows() != 20000 {
		t.Fatalf("rows = %d, want 20000", rec.NumRows())
	}
	date := rec.Column(0).(*array.Timestamp)
	delay, distance := rec.Column(1).(*array.Int64), rec.Column(2).(*array.Int64)
	origin, dest := rec.Column(3).(*array.String), rec.Column(4).(*array.String)
	var delays, distances int64
	origins := map[string]bool{}
	for i := 0; i < int(rec.NumRows()); i++ {
		delays += delay.Value(i)
		distances += distance.Value(i)
		origins[origin.Value(i)] = true
	}
	if delays != 275859 || distances != 15087480 || len(origins) != 222 || delay.NullN() != 0 {
		t.Fatalf("sum(delay) %d, sum(distance) %d, %d origins, %d NULL delays; DuckDB reads 275859, 15087480, 222, 0",
			delays, distances, len(origins), delay.NullN())
	}
	for _, w := range []struct {
		row                 int
		date                string
		delay, distance     int64
		origin, destination string
	}{{0, "2001-01-01T00:01:00Z", 33, 2176, "LAS", "PHL"}, {19999, "2001-01-02T10:44:00Z", 5, 845, "IAH", "IND"}} {
		got := time.UnixMicro(int64(date.Value(w.row))).UTC().Format(time.RFC3339)
		if got != w.date || delay.Value(w.row) != w.delay || distance.Value(w.row) != w.distance ||
			origin.Value(w.row) != w.origin || dest.Value(w.row) != w.destination {
			t.Errorf("row %d = %s %d %d %s %s, want %v", w.row+1, got, delay.Value(w.row), distance.Value(w.row),
				origin.Value(w.row), dest.Value(w.row), w)
		}
	}

	other := schemaOf(t, "Destination VARCHAR", "delay INTEGER", "note VARCHAR", "DATE TIMESTAMPTZ", "origin VARCHAR", "distance SMALLINT")
	got, err := parquetDecoder{}.Decode(readTestdata(t, "flights-20k.parquet"), other)
	if err != nil {
		t.Fatal(err)
	}
	checkRecord(t, got, other)
	if got.Column(0).(*array.String).Value(19999) != "IND" || got.Column(1).(*array.Int32).Value(0) != 33 ||
		got.Column(2).NullN() != 20000 || got.Column(5).(*array.Int16).Value(0) != 2176 {
		t.Errorf("reordered, narrowed: row 1 %v", got.NewSlice(0, 1))
	}
}

// TestParquetRefusals: what a Parquet body cannot be, each refused with the code and the
// column that say why.
func TestParquetRefusals(t *testing.T) {
	flights := readTestdata(t, "flights-20k.parquet")
	_, err := parquetDecoder{}.Decode(flights, schemaOf(t, "date TIMESTAMP", "delay BIGINT"))
	var e *store.Error
	if !errors.As(err, &e) || e.Code != store.CodeUnprocessable || e.Column != "distance" {
		t.Errorf("unknown field: %v, want CodeUnprocessable naming distance", err)
	}
	_, err = parquetDecoder{}.Decode(flights, schemaOf(t, "date TIMESTAMP", "delay TINYINT", "distance BIGINT", "origin VARCHAR", "destination VARCHAR"))
	if !errors.As(err, &e) || e.Code != store.CodeUnprocessable || e.Column != "delay" || e.Row == 0 {
		t.Errorf("a delay past TINYINT: %v, want CodeUnprocessable naming the row and delay", err)
	}
	for _, body := range [][]byte{nil, []byte("PAR1"), []byte("not a parquet file at all, just text"), flights[:len(flights)/2]} {
		if _, err := (parquetDecoder{}).Infer(body); codeOf(err) != store.CodeInvalid {
			t.Errorf("Infer(%d bytes): %v, want CodeInvalid", len(body), err)
		}
	}

	// Twenty million NULLs take a few bytes of Parquet: refused from the footer's row
	// count, before a column is read.
	nulls := batch("c", array.NewNull(20_000_000))
	if _, err := (parquetDecoder{}).Decode(parquetBody(t, nulls), schemaOf(t, "c BIGINT")); codeOf(err) != store.CodeTooLarge ||
		!strings.Contains(err.Error(), "more rows than") {
		t.Errorf("20M NULLs: %v, want CodeTooLarge for the rows", err)
	}
	// A million copies of one 4 KiB string are one dictionary entry in the file (read
	// back as plain strings: the writer stores no Arrow schema).
	bomb := parquetBody(t, batch("c", repeatedString(t, 1_000_000, 4096)))
	if len(bomb) > 1<<20 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	if _, err := (parquetDecoder{}).Decode(bomb, schemaOf(t, "c VARCHAR")); codeOf(err) != store.CodeTooLarge ||
		!strings.Contains(err.Error(), "once decoded") {
		t.Errorf("4 GB of strings in %d bytes: %v, want CodeTooLarge from the reader's budget", len(bomb), err)
	}
}

// TestParquetCorruption flips bytes and truncates a real file at many places: every
// result is a record or a *store.Error, never a panic or another error.
func TestParquetCorruption(t *testing.T) {
	flights := readTestdata(t, "flights-20k.parquet")
	s := schemaOf(t, "date TIMESTAMP", "delay BIGINT", "distance BIGINT", "origin VARCHAR", "destination VARCHAR")
	check := func(what string, body []byte) {
		rec, err := parquetDecoder{}.Decode(body, s)
		if err == nil {
			checkRecord(t, rec, s)
			return
		}
		if codeOf(err) == "" {
			t.Fatalf("%s: %v is not a *store.Error", what, err)
		}
	}
	step := len(flights) / 97
	for at := 0; at < len(flights); at += step {
		for _, v := range []byte{0x00, 0xff, 0x7f} {
			body := bytes.Clone(flights)
			body[at] = v
			check(fmt.Sprintf("byte %#x at %d", v, at), body)
		}
		check(fmt.Sprintf("the first %d bytes", at), flights[:at])
	}
	// The footer's last kilobyte, byte by byte: lengths, offsets and counts.
	for at := len(flights) - 1024; at < len(flights)-4; at++ {
		body := bytes.Clone(flights)
		body[at] ^= 0xa5
		check(fmt.Sprintf("footer byte at %d", at), body)
	}
}

// TestParquetDamagedFiles: files whose damage once ended the process (arrow-go reads
// column chunks and struct children in goroutines no recover reaches, and sizes the
// schema tree by the footer) or committed columns of different lengths; each is now
// CodeInvalid, with the message saying what is wrong (testdata/parquet/README.md). Two
// whose stored Arrow schema is damaged or disagrees with the Parquet schema are read by
// the Parquet schema alone.
func TestParquetDamagedFiles(t *testing.T) {
	for _, c := range []struct{ file, says string }{
		{"chunk-size-negative.parquet", "a chunk of -5 bytes"},
		{"chunk-size-1tib.parquet", "a chunk of 1099511627776 bytes"},
		{"row-group-no-rows.parquet", "300 values for the row group's 0 rows"},
		{"chunk-no-values.parquet", "0 values for the row group's 300 rows"},
		{"struct-page-damaged.parquet", "not a valid Parquet file"},
		{"schema-children-2g.parquet", "schema element 4 claims 2147483647 children"},
	} {
		body, err := os.ReadFile(filepath.Join("testdata", "parquet", c.file))
		if err != nil {
			t.Fatal(err)
		}
		specs, err := parquetDecoder{}.Infer(body)
		if err == nil {
			_, err = parquetDecoder{}.Decode(body, schemaFromSpecs(t, specs))
		}
		if codeOf(err) != store.CodeInvalid || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want CodeInvalid saying %q", c.file, err, c.says)
		}
	}
	for file, rows := range map[string]int64{"arrow-schema-damaged.parquet": 4, "arrow-schema-disagrees.parquet": 3} {
		body, err := os.ReadFile(filepath.Join("testdata", "parquet", file))
		if err != nil {
			t.Fatal(err)
		}
		specs, err := parquetDecoder{}.Infer(body)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		s := schemaFromSpecs(t, specs)
		rec, err := parquetDecoder{}.Decode(body, s)
		if err != nil || rec.NumRows() != rows {
			t.Fatalf("%s: %v, want %d rows", file, err, rows)
		}
		checkRecord(t, rec, s)
	}
}
