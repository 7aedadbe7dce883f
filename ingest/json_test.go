package ingest

import (
	"slices"
	"strings"
	"testing"

	"github.com/ducktail/ducktail/store"
)

const (
	jsonType   = "application/json"
	ndjsonType = "application/x-ndjson"
)

// allTypes is a schema with one column of every type.
func allTypes(t testing.TB) *store.Schema {
	return schemaOf(t, "b BOOLEAN", "i8 TINYINT", "i16 SMALLINT", "i32 INTEGER", "i64 BIGINT",
		"u8 UTINYINT", "u16 USMALLINT", "u32 UINTEGER", "u64 UBIGINT", "f FLOAT", "d DOUBLE",
		"dec DECIMAL(18,3)", "s VARCHAR", "blob BLOB", "day DATE", "tod TIME", "ts TIMESTAMP", "tz TIMESTAMPTZ")
}

func TestJSONDecodeTypes(t *testing.T) {
	rows := []string{
		`{"b":true,"i8":-128,"i16":-32768,"i32":-2147483648,"i64":-9223372036854775808,"u8":0,"u16":0,"u32":0,"u64":0,` +
			`"f":1.5,"d":-2.25e-3,"dec":12.3456,"s":"h\u00e9llo \"q\" \ud83d\ude00","blob":"aGVsbG8=","day":"2012-01-01",` +
			`"tod":"12:34:56.789","ts":"2012-01-01 10:00:00","tz":"2012-01-01T10:00:00+02:00"}`,
		`{"b":false,"i8":127,"i16":32767,"i32":2147483647,"i64":9007199254740993,"u8":255,"u16":65535,"u32":4294967295,` +
			`"u64":18446744073709551615,"f":"NaN","d":"-Infinity","dec":"-0.0005","s":{"nested": [1, 2]},"blob":"aGk",` +
			`"day":"9999-12-31","tod":"00:00","ts":"2012-01-01T10:00:00-05:00","tz":"2012-01-01T10:00:00"}`,
		`{"b":null,"i64":"-42","d":1e308,"s":[]}`,
	}
	want := map[string][]string{
		"b":    {"true", "false", "NULL"},
		"i8":   {"-128", "127", "NULL"},
		"i16":  {"-32768", "32767", "NULL"},
		"i32":  {"-2147483648", "2147483647", "NULL"},
		"i64":  {"-9223372036854775808", "9007199254740993", "-42"},
		"u8":   {"0", "255", "NULL"},
		"u16":  {"0", "65535", "NULL"},
		"u32":  {"0", "4294967295", "NULL"},
		"u64":  {"0", "18446744073709551615", "NULL"},
		"f":    {"1.5", "NaN", "NULL"},
		"d":    {"-0.00225", "-Infinity", "1e+308"},
		"dec":  {"12.346", "-0.001", "NULL"},
		"s":    {"héllo \"q\" 😀", `{"nested": [1, 2]}`, "[]"},
		"blob": {"aGVsbG8=", "aGk=", "NULL"},
		"day":  {"2012-01-01", "9999-12-31", "NULL"},
		"tod":  {"12:34:56.789000", "00:00:00.000000", "NULL"},
		"ts":   {"2012-01-01T10:00:00.000000Z", "2012-01-01T15:00:00.000000Z", "NULL"},
		"tz":   {"2012-01-01T08:00:00.000000Z", "2012-01-01T10:00:00.000000Z", "NULL"},
	}
	s := allTypes(t)
	for _, tc := range []struct{ contentType, body string }{
		{jsonType, "[" + strings.Join(rows, ",\n") + "]"},
		{ndjsonType, strings.Join(rows, "\n") + "\n"},
	} {
		rec := decodeOK(t, tc.contentType, tc.body, s)
		if rec.NumRows() != 3 {
			t.Fatalf("%s: rows = %d, want 3", tc.contentType, rec.NumRows())
		}
		for name, w := range want {
			if got := column(t, rec, name); !slices.Equal(got, w) {
				t.Errorf("%s: column %s = %q, want %q", tc.contentType, name, got, w)
			}
		}
	}
}

func TestJSONFraming(t *testing.T) {
	s := schemaOf(t, "a BIGINT", "B VARCHAR")
	for _, tc := range []struct {
		name, contentType, body string
		a, b                    []string
	}{
		{"empty array", jsonType, " [ ] ", nil, nil},
		{"BOM and whitespace", jsonType, "\uFEFF\r\n[ {\"a\" : 1 ,\n \"B\":\"x\"} ,\t{}\n]\n", []string{"1", "NULL"}, []string{"x", "NULL"}},
		{"missing fields are NULL", jsonType, `[{"a":1},{"B":"y"}]`, []string{"1", "NULL"}, []string{"NULL", "y"}},
		{"case-insensitive names", jsonType, `[{"A":1,"b":"x"}]`, []string{"1"}, []string{"x"}},
		{"escaped member names", jsonType, `[{"\u0061":1,"\u0042":"x"}]`, []string{"1"}, []string{"x"}},
		{"fields in any order", jsonType, `[{"a":1,"B":"x"},{"B":"y","a":2},{"a":3,"B":"z"}]`, []string{"1", "2", "3"}, []string{"x", "y", "z"}},
		{"ndjson empty body", ndjsonType, "", nil, nil},
		{"ndjson blank lines and CRLF", ndjsonType, "\r\n{\"a\":1}\r\n   \r\n\t\n{\"a\":2}\r\n\n", []string{"1", "2"}, []string{"NULL", "NULL"}},
		{"ndjson no final newline", ndjsonType, "{\"a\":1}\n{\"a\":2}", []string{"1", "2"}, []string{"NULL", "NULL"}},
		{"ndjson trailing spaces", ndjsonType, "{\"a\":1}  \t\n", []string{"1"}, []string{"NULL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := decodeOK(t, tc.contentType, tc.body, s)
			if got := column(t, rec, "a"); !slices.Equal(got, tc.a) {
				t.Errorf("a = %q, want %q", got, tc.a)
			}
			if got := column(t, rec, "B"); !slices.Equal(got, tc.b) {
				t.Errorf("B = %q, want %q", got, tc.b)
			}
		})
	}
}

func TestJSONStringEscapes(t *testing.T) {
	s := schemaOf(t, "s VARCHAR")
	body := `[{"s":"\"\\\/\b\f\n\r\t"},{"s":"\u00e9\u20ac\ud83d\ude00"},{"s":"lone \ud800 high"},{"s":"lone \udc00 low"},{"s":"\ud800\u0041"},{"s":""}]`
	rec := decodeOK(t, jsonType, body, s)
	want := []string{"\"\\/\b\f\n\r\t", "é€😀", "lone \uFFFD high", "lone \uFFFD low", "\uFFFDA", ""}
	if got := column(t, rec, "s"); !slices.Equal(got, want) {
		t.Errorf("s = %q, want %q", got, want)
	}
}

func TestJSONValueErrors(t *testing.T) {
	s := allTypes(t)
	for _, tc := range []struct {
		name, row, column string
		fragments         []string
	}{
		{"300 into TINYINT", `{"i8":300}`, "i8", []string{"value 300 is out of range for TINYINT"}},
		{"2^63 into BIGINT", `{"i64":9223372036854775808}`, "i64", []string{"out of range for BIGINT"}},
		{"-1 into UBIGINT", `{"u64":-1}`, "u64", []string{"value -1 is out of range for UBIGINT"}},
		{"fraction into integer", `{"i32":1.5}`, "i32", []string{"1.5 is not a whole number"}},
		{"string into integer", `{"i64":"abc"}`, "i64", []string{`value "abc" is not a BIGINT`}},
		{"boolean into integer", `{"i64":true}`, "i64", []string{"JSON boolean true cannot be stored in a BIGINT column"}},
		{"number into VARCHAR", `{"s":12}`, "s", []string{"JSON number 12 cannot be stored in a VARCHAR column"}},
		{"boolean into VARCHAR", `{"s":false}`, "s", []string{"JSON boolean false"}},
		{"string into BOOLEAN", `{"b":"true"}`, "b", []string{`JSON string "true" cannot be stored in a BOOLEAN column`}},
		{"number into BOOLEAN", `{"b":1}`, "b", []string{"JSON number 1 cannot be stored in a BOOLEAN column"}},
		{"object into BIGINT", `{"i64":{"x":1}}`, "i64", []string{"JSON object cannot be stored in a BIGINT column"}},
		{"array into DATE", `{"day":[1]}`, "day", []string{"JSON array cannot be stored in a DATE column"}},
		{"number into DATE", `{"day":20120101}`, "day", []string{"JSON number 20120101 cannot be stored in a DATE column"}},
		{"bad date", `{"day":"2012-02-30"}`, "day", []string{`"2012-02-30" is not a DATE`}},
		{"bad time", `{"tod":"25:00:00"}`, "tod", []string{`"25:00:00" is not a TIME`}},
		{"bad timestamp", `{"ts":"2012-01-01T10:00:00 CET"}`, "ts", []string{"is not a TIMESTAMP"}},
		{"bad base64", `{"blob":"***"}`, "blob", []string{"is not base64"}},
		{"DECIMAL out of range", `{"dec":1e15}`, "dec", []string{"value 1e15 is out of range for DECIMAL(18,3)"}},
		{"DOUBLE overflow", `{"d":1e999}`, "d", []string{"value 1e999 is out of range for DOUBLE"}},
		{"FLOAT overflow", `{"f":1e39}`, "f", []string{"out of range for FLOAT"}},
		{"long value is cut", `{"i64":"` + strings.Repeat("x", 100) + `"}`, "i64", []string{`"` + strings.Repeat("x", 64) + `"…`}},
		{"unknown field", `{"nope":1}`, "nope", []string{`unknown field "nope"`}},
		{"duplicate field", `{"i64":1,"I64":2}`, "i64", []string{"a second time"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The bad row is row 3; in the array it starts on line 4, in NDJSON on line 3.
			good := `{"i64":1}`
			e := decodeErr(t, jsonType, "[\n"+good+",\n"+good+",\n"+tc.row+"\n]", s)
			wantError(t, e, store.CodeUnprocessable, 3, 4, tc.column, tc.fragments...)
			e = decodeErr(t, ndjsonType, good+"\n"+good+"\n"+tc.row+"\n", s)
			wantError(t, e, store.CodeUnprocessable, 3, 3, tc.column, tc.fragments...)
		})
	}
}

func TestJSONSyntaxErrors(t *testing.T) {
	s := schemaOf(t, "a BIGINT", "s VARCHAR")
	for _, tc := range []struct {
		name, contentType, body string
		code                    store.Code
		row, line               int
		fragments               []string
	}{
		{"empty body", jsonType, "  ", store.CodeInvalid, 0, 1, []string{"empty"}},
		{"single object", jsonType, `{"a":1}`, store.CodeInvalid, 0, 1, []string{"expected '['", ndjsonType}},
		{"not an array", jsonType, `"x"`, store.CodeInvalid, 0, 1, []string{"expected '['"}},
		{"row is not an object", jsonType, `[{"a":1}, 2]`, store.CodeUnprocessable, 2, 1, []string{"row is a JSON number, not an object"}},
		{"null row", jsonType, `[null]`, store.CodeUnprocessable, 1, 1, []string{"row is a JSON null"}},
		{"trailing comma", jsonType, `[{"a":1},]`, store.CodeInvalid, 2, 1, []string{"column 10", "expected a value"}},
		{"missing comma", jsonType, "[{\"a\":1}\n{\"a\":2}]", store.CodeInvalid, 0, 2, []string{"line 2, column 1", "expected ',' or ']' after row 1"}},
		{"unterminated array", jsonType, `[{"a":1}`, store.CodeInvalid, 0, 1, []string{"end of input"}},
		{"garbage after array", jsonType, `[{"a":1}] x`, store.CodeInvalid, 0, 1, []string{"after the JSON array"}},
		{"bad literal", jsonType, `[{"a":nul}]`, store.CodeInvalid, 1, 1, []string{"invalid literal"}},
		{"leading zero", jsonType, `[{"a":01}]`, store.CodeInvalid, 1, 1, []string{`invalid number "01"`}},
		{"plus sign", jsonType, `[{"a":+1}]`, store.CodeInvalid, 1, 1, []string{"expected a value"}},
		{"bare fraction", jsonType, `[{"a":.5}]`, store.CodeInvalid, 1, 1, []string{"expected a value"}},
		{"dot without digits", jsonType, `[{"a":1.}]`, store.CodeInvalid, 1, 1, []string{"expected a digit after '.'"}},
		{"bad escape", jsonType, `[{"s":"\x"}]`, store.CodeInvalid, 1, 1, []string{`invalid escape "\\x"`}},
		{"bad unicode escape", jsonType, `[{"s":"\u12G4"}]`, store.CodeInvalid, 1, 1, []string{`invalid \u escape`}},
		{"raw control character", jsonType, "[{\"s\":\"a\tb\"}]", store.CodeInvalid, 1, 1, []string{"control character"}},
		{"invalid UTF-8", jsonType, "[{\"s\":\"\xff\"}]", store.CodeInvalid, 1, 1, []string{"invalid UTF-8"}},
		{"unterminated string", jsonType, `[{"s":"abc`, store.CodeInvalid, 1, 1, []string{"unterminated string"}},
		{"missing colon", jsonType, `[{"a" 1}]`, store.CodeInvalid, 1, 1, []string{"expected ':'"}},
		{"unquoted name", jsonType, `[{a:1}]`, store.CodeInvalid, 1, 1, []string{"expected a member name"}},
		{"error line inside a multi-line row", jsonType, "[\n{\"a\":1,\n\"s\":\n\"x\"\n,,}]", store.CodeInvalid, 1, 2, []string{"line 5, column 2"}},
		{"too deep", jsonType, `[{"s":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}]`, store.CodeInvalid, 1, 1, []string{"nest deeper than 512"}},
		{"ndjson object spans lines", ndjsonType, "{\"a\":1}\n{\"a\":\n2}\n", store.CodeInvalid, 2, 2, []string{"NDJSON needs each object on one line"}},
		{"ndjson two objects on a line", ndjsonType, "{\"a\":1} {\"a\":2}\n", store.CodeInvalid, 1, 1, []string{"expected the end of the line"}},
		{"ndjson array row", ndjsonType, "{\"a\":1}\n\n[1]\n", store.CodeUnprocessable, 2, 3, []string{"row is a JSON array"}},
		{"ndjson truncated", ndjsonType, "{\"a\":1}\n{\"a\":", store.CodeInvalid, 2, 2, []string{"end of input"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := decodeErr(t, tc.contentType, tc.body, s)
			wantError(t, e, tc.code, tc.row, tc.line, "", tc.fragments...)
		})
	}
}

// TestJSONRoundTrip decodes a body with every type, re-encodes it as NDJSON in the
// canonical text forms, and checks that decoding that gives the same record.
func TestJSONRoundTrip(t *testing.T) {
	s := allTypes(t)
	body := `[{"b":true,"i64":9007199254740993,"u64":18446744073709551615,"f":0.1,"d":1e-300,"dec":"-12.5",` +
		`"s":"tab\tquote\"","blob":"AAEC/w==","day":"0001-01-01","tod":"23:59:59.999999","ts":"1969-12-31T23:59:59.999999Z","tz":"2024-02-29 12:00:00+05:45"},` +
		`{"f":"-Infinity","d":"NaN"},{}]`
	rec := decodeOK(t, jsonType, body, s)
	first := encodeNDJSON(rec)
	again := decodeOK(t, ndjsonType, string(first), s)
	if second := encodeNDJSON(again); string(second) != string(first) {
		t.Errorf("round trip changed the rows:\n first %s\nsecond %s", first, second)
	}
}
