package ingest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ducktail/ducktail/store"
)

// inferOK infers the columns of body and checks that Decode then accepts the body.
func inferOK(t testing.TB, contentType, body string) []store.ColumnSpec {
	t.Helper()
	d, err := DecoderFor(contentType)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := d.Infer([]byte(body))
	if err != nil {
		t.Fatalf("Infer(%s): %v", contentType, err)
	}
	decodeOK(t, contentType, body, schemaFromSpecs(t, specs))
	return specs
}

// inferErr returns the *store.Error Infer must fail with.
func inferErr(t testing.TB, contentType, body string) *store.Error {
	t.Helper()
	d, err := DecoderFor(contentType)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := d.Infer([]byte(body))
	if err == nil {
		t.Fatalf("Infer(%s) of %q = %v, want an error", contentType, body, specs)
	}
	e, ok := err.(*store.Error)
	if !ok {
		t.Fatalf("Infer error %v (%T) is not a *store.Error", err, err)
	}
	return e
}

func TestInferCSVTypes(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   store.Type
	}{
		{[]string{"true", "FALSE", ""}, store.TypeBoolean},
		{[]string{"t", "f"}, store.TypeVarchar},
		{[]string{"1", "-20", " 12 ", "+3"}, store.TypeBigint},
		{[]string{"0", "1"}, store.TypeBigint},
		{[]string{"1", "2.5"}, store.TypeDouble},
		{[]string{"1.0"}, store.TypeDouble},
		{[]string{"1e3"}, store.TypeDouble},
		{[]string{"9223372036854775807"}, store.TypeBigint},
		{[]string{"9223372036854775808"}, store.TypeDouble},
		{[]string{"1", "nan", "-inf"}, store.TypeDouble},
		{[]string{"1e999"}, store.TypeVarchar},
		{[]string{"0x10"}, store.TypeVarchar},
		{[]string{"2012-01-01", "", "2012-12-31"}, store.TypeDate},
		{[]string{"2012-01-01", "2012-01-01 10:00:00.5"}, store.TypeTimestamp},
		{[]string{"2012-01-01T10:00:00"}, store.TypeTimestamp},
		{[]string{"2012-01-01T10:00:00Z", "2012-01-01 12:00+02"}, store.TypeTimestampTZ},
		{[]string{"2012-01-01T10:00:00Z", "2012-01-01 12:00", "2012-01-02"}, store.TypeTimestampTZ},
		{[]string{"2012-01-01", "2012-02-30"}, store.TypeVarchar},
		{[]string{"2001/01/01 00:47"}, store.TypeVarchar},
		{[]string{"12:00:00"}, store.TypeVarchar},
		{[]string{"1", "x"}, store.TypeVarchar},
		{[]string{"true", "1"}, store.TypeVarchar},
		{[]string{"", ""}, store.TypeVarchar},
		{[]string{`""`}, store.TypeVarchar},
		{[]string{"   "}, store.TypeVarchar},
	} {
		body := "c,other\n" + strings.Join(tc.values, ",x\n") + ",x\n"
		specs := inferOK(t, csvType, body)
		if specs[0].Type != string(tc.want) {
			t.Errorf("values %q: inferred %s, want %s", tc.values, specs[0].Type, tc.want)
		}
	}
}

func TestInferCSVHeader(t *testing.T) {
	specs := inferOK(t, csvType, "\uFEFFid,Cost Total $,when\r\n1,2.5,2012-01-01\r\n")
	want := []store.ColumnSpec{{Name: "id", Type: "BIGINT"}, {Name: "Cost Total $", Type: "DOUBLE"}, {Name: "when", Type: "DATE"}}
	if !slices.Equal(specs, want) {
		t.Errorf("specs = %v, want %v", specs, want)
	}
	if specs := inferOK(t, csvType, "a,b\n"); !slices.Equal(specs, []store.ColumnSpec{{Name: "a", Type: "VARCHAR"}, {Name: "b", Type: "VARCHAR"}}) {
		t.Errorf("header only: specs = %v, want two VARCHAR columns", specs)
	}
	for _, tc := range []struct {
		name, body, column string
		code               store.Code
		row, line          int
		fragment           string
	}{
		{"empty name", "a,,c\n", "", store.CodeInvalid, 0, 1, "empty"},
		{"reserved prefix", "a,__ducktail_seq\n", "__ducktail_seq", store.CodeInvalid, 0, 1, "reserved"},
		{"leading space", "a, b\n", " b", store.CodeInvalid, 0, 1, "leading or trailing space"},
		{"duplicate, other case", "Name,x,NAME\n", "NAME", store.CodeInvalid, 0, 1, `repeats "Name"`},
		{"empty body", "", "", store.CodeInvalid, 0, 0, "empty"},
		{"ragged row", "a,b\n1,2\n3\n", "", store.CodeInvalid, 2, 3, "row has 1 fields"},
		{"invalid UTF-8", "a\nok\n\xff\n", "a", store.CodeUnprocessable, 2, 3, "not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, inferErr(t, csvType, tc.body), tc.code, tc.row, tc.line, tc.column, tc.fragment)
		})
	}
}

func TestInferJSON(t *testing.T) {
	rows := []string{
		`{"id":1,"price":2,"name":"a","when":"2012-01-01","at":"2012-01-01T10:00:00","tz":"2012-01-01T10:00:00Z","ok":true,"tags":["x"],"none":null}`,
		`{"ID":2,"price":2.5,"name":"b","when":"2012-01-02","at":"2012-01-02","tz":"2012-01-02 10:00","ok":false,"tags":"plain","late":9223372036854775808}`,
		`{"id":-3,"price":1e2,"name":null,"when":null,"at":null,"tz":null,"ok":null,"tags":{"k":1},"late":1}`,
	}
	want := []store.ColumnSpec{
		{Name: "id", Type: "BIGINT"}, {Name: "price", Type: "DOUBLE"}, {Name: "name", Type: "VARCHAR"},
		{Name: "when", Type: "DATE"}, {Name: "at", Type: "TIMESTAMP"}, {Name: "tz", Type: "TIMESTAMPTZ"},
		{Name: "ok", Type: "BOOLEAN"}, {Name: "tags", Type: "VARCHAR"}, {Name: "none", Type: "VARCHAR"},
		{Name: "late", Type: "DOUBLE"},
	}
	for _, tc := range []struct{ contentType, body string }{
		{jsonType, "[" + strings.Join(rows, ",") + "]"},
		{ndjsonType, strings.Join(rows, "\n")},
	} {
		if got := inferOK(t, tc.contentType, tc.body); !slices.Equal(got, want) {
			t.Errorf("%s: specs = %v\nwant %v", tc.contentType, got, want)
		}
	}
	if got := inferOK(t, jsonType, `[{"a":9007199254740993}]`); got[0].Type != "BIGINT" {
		t.Errorf("integer past 2^53: inferred %s, want BIGINT", got[0].Type)
	}
}

func TestInferJSONErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body, column string
		code               store.Code
		row                int
		fragment           string
	}{
		{"numbers then strings", `[{"a":1},{"a":"x"}]`, "a", store.CodeUnprocessable, 2, "holds numbers and then JSON string"},
		{"strings then booleans", `[{"a":"x"},{"a":true}]`, "a", store.CodeUnprocessable, 2, "holds strings or nested values and then JSON boolean"},
		{"nested then numbers", `[{"a":[1]},{"a":1}]`, "a", store.CodeUnprocessable, 2, "and then JSON number"},
		{"number past DOUBLE", `[{"a":1},{"a":1e999}]`, "a", store.CodeUnprocessable, 2, "out of range for DOUBLE"},
		{"same name twice in one object", `[{"a":1,"A":2}]`, "a", store.CodeUnprocessable, 1, "a second time"},
		{"invalid name", `[{"":1}]`, "", store.CodeInvalid, 1, "empty"},
		{"reserved name", `[{"__DUCKTAIL_x":1}]`, "__DUCKTAIL_x", store.CodeInvalid, 1, "reserved"},
		{"no rows", `[]`, "", store.CodeUnprocessable, 0, "no fields"},
		{"no fields", `[{},{}]`, "", store.CodeUnprocessable, 0, "no fields"},
		{"syntax", `[{"a":1}`, "", store.CodeInvalid, 0, "end of input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := inferErr(t, jsonType, tc.body)
			line := 0
			if tc.row > 0 || tc.code == store.CodeInvalid {
				line = 1
			}
			wantError(t, e, tc.code, tc.row, line, tc.column, tc.fragment)
		})
	}
}

func TestInferArrow(t *testing.T) {
	fields := []arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "f16", Type: arrow.FixedWidthTypes.Float16},
		{Name: "big", Type: arrow.BinaryTypes.LargeString},
		{Name: "cat", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}},
		{Name: "raw", Type: &arrow.FixedSizeBinaryType{ByteWidth: 4}},
		{Name: "d64", Type: arrow.FixedWidthTypes.Date64},
		{Name: "t32", Type: arrow.FixedWidthTypes.Time32ms},
		{Name: "ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}},
		{Name: "zoned", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "Asia/Tokyo"}},
		{Name: "money", Type: &arrow.Decimal128Type{Precision: 12, Scale: 2}},
		{Name: "tags", Type: arrow.LargeListOf(arrow.BinaryTypes.StringView)},
		{Name: "id", Type: &arrow.FixedSizeBinaryType{ByteWidth: 16}, Metadata: arrow.NewMetadata([]string{"ARROW:extension:name"}, []string{"arrow.uuid"})},
	}
	want := []store.ColumnSpec{
		{Name: "i8", Type: "TINYINT"}, {Name: "u64", Type: "UBIGINT"}, {Name: "f16", Type: "FLOAT"},
		{Name: "big", Type: "VARCHAR"}, {Name: "cat", Type: "VARCHAR"}, {Name: "raw", Type: "BLOB"},
		{Name: "d64", Type: "DATE"}, {Name: "t32", Type: "TIME"}, {Name: "ns", Type: "TIMESTAMP_NS"},
		{Name: "zoned", Type: "TIMESTAMPTZ"}, {Name: "money", Type: "DECIMAL(12,2)"},
		{Name: "tags", Type: "VARCHAR[]"}, {Name: "id", Type: "UUID"},
	}
	schema := arrow.NewSchema(fields, nil)
	for _, file := range []bool{false, true} {
		got, err := arrowDecoder{file: file}.Infer(ipcBody(t, file, schema, nil))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("file %v: specs = %v\nwant %v", file, got, want)
		}
	}
	for _, tc := range []struct {
		name   string
		fields []arrow.Field
		code   store.Code
		column string
	}{
		{"null field", []arrow.Field{{Name: "l", Type: arrow.Null}}, store.CodeUnprocessable, "l"},
		{"null member", []arrow.Field{{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "n", Type: arrow.Null})}}, store.CodeUnprocessable, "s"},
		{"decimal precision past 38", []arrow.Field{{Name: "d", Type: &arrow.Decimal128Type{Precision: 40, Scale: 2}}}, store.CodeUnprocessable, "d"},
		{"duplicate", []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int8}, {Name: "A", Type: arrow.PrimitiveTypes.Int8}}, store.CodeInvalid, "A"},
		{"bad name", []arrow.Field{{Name: "tab\there", Type: arrow.PrimitiveTypes.Int8}}, store.CodeInvalid, "tab\there"},
		{"no fields", nil, store.CodeUnprocessable, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := inferErr(t, arrowStreamType, string(ipcBody(t, false, arrow.NewSchema(tc.fields, nil), nil)))
			wantError(t, e, tc.code, 0, 0, tc.column)
		})
	}
	e := inferErr(t, arrowStreamType, "not arrow")
	wantError(t, e, store.CodeInvalid, 0, 0, "", "not a valid Arrow IPC stream")
}

// TestInferJSONNested infers STRUCT, LIST and MAP from objects and arrays the way
// DuckDB's read_json does, and decodes the body under the inferred types.
func TestInferJSONNested(t *testing.T) {
	many := make([]string, maxInferredMembers+1)
	for i := range many {
		many[i] = fmt.Sprintf(`"k%d":%d`, i, i)
	}
	rows := []string{
		`{"geometry":{"type":"Point","coordinates":[-122.5,38,2]},"tags":["a"],"props":{"mag":1,"felt":null},"sizes":[[1],[2,3]],"mixed":[1,"a"],"wide":{` + strings.Join(many, ",") + `},"empty":[],"pair":{"a":1}}`,
		`{"geometry":{"TYPE":"Point","coordinates":[1,2.5]},"tags":[],"props":{"mag":1.5,"place":"x","when":"2024-01-01"},"sizes":null,"mixed":[true],"wide":{"z":1.5},"empty":[null],"pair":{"b":[1]}}`,
	}
	want := []store.ColumnSpec{
		{Name: "geometry", Type: `STRUCT("type" VARCHAR, coordinates DOUBLE[])`},
		{Name: "tags", Type: "VARCHAR[]"},
		{Name: "props", Type: "STRUCT(mag DOUBLE, felt VARCHAR, place VARCHAR, \"when\" DATE)"},
		{Name: "sizes", Type: "BIGINT[][]"},
		{Name: "mixed", Type: "JSON[]"},
		{Name: "wide", Type: "MAP(VARCHAR, DOUBLE)"},
		{Name: "empty", Type: "VARCHAR[]"},
		{Name: "pair", Type: "STRUCT(a BIGINT, b BIGINT[])"},
	}
	if got := inferOK(t, ndjsonType, strings.Join(rows, "\n")); !slices.Equal(got, want) {
		t.Errorf("specs = %v\nwant %v", got, want)
	}
	for _, c := range []struct{ body, typ string }{
		{`{"a":{"x":1}}` + "\n" + `{"a":[1]}`, "VARCHAR"},
		{`{"a":{"x":1}}` + "\n" + `{"a":"text"}`, "VARCHAR"},
		{`{"a":{}}`, "JSON"},
		{`{"a":{"":1}}`, "MAP(VARCHAR, BIGINT)"},
		{`{"a":[1e999]}`, "JSON[]"},
	} {
		if got := inferOK(t, ndjsonType, c.body); got[0].Type != c.typ {
			t.Errorf("%s: inferred %s, want %s", c.body, got[0].Type, c.typ)
		}
	}
}
