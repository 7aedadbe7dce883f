package ingest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/store"
)

// The fuzz targets check, for any body: no panic; every error is a *store.Error; a
// decoded record has exactly the table's Arrow schema and valid buffers; Infer
// followed by Decode of the same body succeeds (inference never picks a type the
// decoder then rejects); for JSON, a decoded record written back as NDJSON decodes to
// the same rows.

// seedLines returns the first n lines of a testdata file.
func seedLines(f *testing.F, name string, n int) string {
	lines := strings.SplitAfter(string(readTestdata(f, name)), "\n")
	return strings.Join(lines[:min(n, len(lines))], "")
}

// checkErr reports whether err is nil, and fails unless a non-nil err is a
// *store.Error with a code a decoder may return.
func checkErr(t *testing.T, err error) bool {
	t.Helper()
	if err == nil {
		return true
	}
	var e *store.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *store.Error", err, err)
	}
	if e.Code != store.CodeInvalid && e.Code != store.CodeUnprocessable && e.Code != store.CodeTooLarge {
		t.Fatalf("error %v has code %s", err, e.Code)
	}
	return false
}

// checkFuzzResult checks the outcome of one Decode and reports whether it succeeded.
func checkFuzzResult(t *testing.T, rec arrow.RecordBatch, err error, s *store.Schema) bool {
	t.Helper()
	if !checkErr(t, err) {
		return false
	}
	checkRecord(t, rec, s)
	return true
}

// checkInferThenDecode infers columns from body and requires Decode to accept it.
func checkInferThenDecode(t *testing.T, d Decoder, body []byte, mustDecode bool) {
	t.Helper()
	specs, err := d.Infer(body)
	if !checkErr(t, err) {
		return
	}
	s := &store.Schema{}
	for i, sp := range specs {
		if err := store.ValidateColumnName(sp.Name); err != nil {
			t.Fatalf("inferred column name %q: %v", sp.Name, err)
		}
		ty, err := store.ParseType(sp.Type)
		if err != nil || string(ty) != sp.Type {
			t.Fatalf("inferred type %q is not canonical: %v", sp.Type, err)
		}
		s.Columns = append(s.Columns, store.Column{ID: i + 1, Name: sp.Name, Type: ty})
	}
	rec, err := d.Decode(body, s)
	if mustDecode && err != nil {
		t.Fatalf("Infer gave %v, but Decode then failed: %v", specs, err)
	}
	checkFuzzResult(t, rec, err, s)
}

func FuzzDecodeCSV(f *testing.F) {
	f.Add(seedLines(f, "seattle-weather.csv", 6))
	f.Add(seedLines(f, "birdstrikes.csv", 4))
	f.Add(string(readTestdata(f, "airports.csv")[:1200]))
	f.Add("b,i8,i16,i32,i64,u8,u16,u32,u64,f,d,dec,s,blob,day,tod,ts,tz\r\n" +
		"true,-128,-32768,1,9007199254740993,0,0,0,18446744073709551615,1.5,-2.25,12.345,\"a,\"\"b\"\"\nc\",raw,2012-01-01,12:34:56.789,2012-01-01 10:00:00,2012-01-01T10:00:00+02:00\r\n" +
		"f,,,,,,,,,nan,-inf,\"\",\"\",,,,,\r\n")
	f.Add("\uFEFFa,b\n1,\"\"\n\n2,x")
	f.Add("a,b\n1\n")
	f.Add("a\n\"open\n")
	f.Add("s,i64\n\xff,1\n")
	s := allTypes(f)
	f.Fuzz(func(t *testing.T, body string) {
		rec, err := csvDecoder{}.Decode([]byte(body), s)
		checkFuzzResult(t, rec, err, s)
		checkInferThenDecode(t, csvDecoder{}, []byte(body), true)
	})
}

// fuzzJSON is the body of FuzzDecodeJSON and FuzzDecodeNDJSON.
func fuzzJSON(t *testing.T, d jsonDecoder, s *store.Schema, body []byte) {
	rec, err := d.Decode(body, s)
	if checkFuzzResult(t, rec, err, s) {
		first := encodeNDJSON(rec)
		again, err := jsonDecoder{ndjson: true}.Decode(first, s)
		if err != nil {
			t.Fatalf("re-encoded rows do not decode: %v\n%s", err, first)
		}
		if second := encodeNDJSON(again); !bytes.Equal(first, second) {
			t.Fatalf("round trip changed the rows:\n first %s\nsecond %s", first, second)
		}
	}
	checkInferThenDecode(t, d, body, true)
}

// jsonSeeds are rows for the JSON fuzz targets, one object per element.
func jsonSeeds(f *testing.F) [][]string {
	flights := string(readTestdata(f, "flights-20k.json")[:400])
	flights = flights[1 : strings.LastIndex(flights, "},")+1]
	return [][]string{
		strings.Split(strings.ReplaceAll(flights, "},{", "}\n{"), "\n"),
		{`{"b":true,"i8":-128,"i64":9007199254740993,"u64":18446744073709551615,"f":1.5,"d":-2.25e-3,"dec":12.3456,` +
			`"s":"h\u00e9llo \"q\" \ud83d\ude00","blob":"aGVsbG8=","day":"2012-01-01","tod":"12:34:56.789",` +
			`"ts":"2012-01-01 10:00:00","tz":"2012-01-01T10:00:00+02:00"}`,
			`{"b":null,"i64":"-42","d":"NaN","f":"-Infinity","s":{"nested":[1,{"x":null}]},"dec":"-0.0005"}`, `{}`},
		{`{"S":"lone \ud800","I64":-0,"D":1E+2,"U8":"255"}`, `{"s":[],"tz":"2024-02-29 12:00:00+05:45"}`},
		{`{"a":1,"A":2}`},
		{`{"x":[[[[]]]],"y":{"z":"w"},"n":null}`, `{"x":"2012-01-01","n":1e999}`},
		{`{"geometry":{"type":"Point","coordinates":[-122.5,38.1,2]},"tags":["a",null],"m":{"k":{"d":"2012-01-01"}}}`,
			`{"geometry":{"coordinates":[1e3]},"tags":[],"m":{"\u00e9":null,"x":{"d":null,"e":[true]}}}`},
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, rows := range jsonSeeds(f) {
		f.Add("[" + strings.Join(rows, ",\n") + "]")
	}
	f.Add("\uFEFF [ ]")
	f.Add(`[{"a":1},]`)
	f.Add(`{"a":1}`)
	s := allTypes(f)
	f.Fuzz(func(t *testing.T, body string) {
		fuzzJSON(t, jsonDecoder{}, s, []byte(body))
	})
}

func FuzzDecodeNDJSON(f *testing.F) {
	for _, rows := range jsonSeeds(f) {
		f.Add(strings.Join(rows, "\r\n") + "\n")
	}
	f.Add("\n  \n{\"i64\":1}")
	f.Add("{\"i64\":1} {\"i64\":2}\n")
	f.Add("{\"i64\":\n1}\n")
	s := allTypes(f)
	f.Fuzz(func(t *testing.T, body string) {
		fuzzJSON(t, jsonDecoder{ndjson: true}, s, []byte(body))
	})
}

// flightsSeed is the first 20 rows of flights-200k.arrow, a seed of the Arrow and
// Parquet fuzz targets.
func flightsSeed(f *testing.F) arrow.RecordBatch {
	flights, err := ipc.NewFileReader(bytes.NewReader(readTestdata(f, "flights-200k.arrow")))
	if err != nil {
		f.Fatal(err)
	}
	first, err := flights.RecordBatchAt(0)
	if err != nil {
		f.Fatal(err)
	}
	return first.NewSlice(0, 20)
}

// typedSeed is a row of every scalar type of allTypes and a row of NULLs, decoded from
// JSON: a seed of the Arrow and Parquet fuzz targets.
func typedSeed(f *testing.F, all *store.Schema) arrow.RecordBatch {
	row := `{"b":true,"i8":-128,"i64":9007199254740993,"u64":18446744073709551615,"f":1.5,"dec":12.345,"s":"héllo","blob":"aGk=","day":"2012-01-01","tod":"12:34:56","ts":"2012-01-01 10:00:00","tz":"2012-01-01T10:00:00Z"}`
	typed, err := jsonDecoder{}.Decode([]byte("["+row+",{}]"), all)
	if err != nil {
		f.Fatal(err)
	}
	return typed
}

func FuzzDecodeArrow(f *testing.F) {
	small := flightsSeed(f)
	f.Add(ipcBody(f, false, small.Schema(), []arrow.RecordBatch{small, small}), false)
	f.Add(ipcBody(f, true, small.Schema(), []arrow.RecordBatch{small}), true)
	f.Add(ipcBody(f, false, small.Schema(), []arrow.RecordBatch{small}, ipc.WithLZ4(), ipc.WithMinSpaceSavings(0)), false)
	f.Add(ipcBody(f, false, small.Schema(), []arrow.RecordBatch{small}, ipc.WithZstd(), ipc.WithMinSpaceSavings(0)), false)

	all := allTypes(f)
	typed := typedSeed(f, all)
	f.Add(ipcBody(f, false, typed.Schema(), []arrow.RecordBatch{typed}), false)
	f.Add(ipcBody(f, true, typed.Schema(), []arrow.RecordBatch{typed}), true)

	dict := array.NewDictionaryBuilder(memory.DefaultAllocator, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
	for _, v := range []string{"s", "t", "s"} {
		if err := dict.AppendString(v); err != nil {
			f.Fatal(err)
		}
	}
	other := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: dict.Type(), Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "Europe/Paris"}, Nullable: true},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	mixed := array.NewRecordBatch(other, []arrow.Array{
		dict.NewArray(),
		fromJSON(f, other.Field(1).Type, `[0, -1, null]`),
		fromJSON(f, arrow.PrimitiveTypes.Int64, `[1, 300, null]`),
	}, 3)
	f.Add(ipcBody(f, false, other, []arrow.RecordBatch{mixed}), false)
	f.Add([]byte("not arrow"), false)
	// Arrow's own integration files: nested types, unions, dictionaries, run-end encoding.
	for _, name := range []string{"nested", "recursive_nested", "map", "union", "list_view", "nested_dictionary", "run_end_encoded", "interval_mdn", "extension"} {
		f.Add(readTestdata(f, "arrow-testing/generated_"+name+".stream"), false)
	}
	f.Add(readTestdata(f, "arrow-testing/generated_nested.arrow_file"), true)

	f.Fuzz(func(t *testing.T, body []byte, file bool) {
		d := arrowDecoder{file: file}
		rec, err := d.Decode(body, all)
		checkFuzzResult(t, rec, err, all)
		checkInferThenDecode(t, d, body, false)
	})
}

func FuzzDecodeParquet(f *testing.F) {
	f.Add(parquetBody(f, flightsSeed(f)))
	all := allTypes(f)
	f.Add(parquetBody(f, typedSeed(f, all)))
	nestedType := arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
		arrow.Field{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), Nullable: true},
	)
	nested := fromJSON(f, nestedType, `[{"a":[1,null,3],"m":[{"key":"k","value":1.5}]},null,{"a":[],"m":[]}]`)
	f.Add(parquetBody(f, batch("n", nested)))
	f.Add([]byte("PAR1 not parquet PAR1"))

	f.Fuzz(func(t *testing.T, body []byte) {
		rec, err := parquetDecoder{}.Decode(body, all)
		checkFuzzResult(t, rec, err, all)
		checkInferThenDecode(t, parquetDecoder{}, body, false)
	})
}
