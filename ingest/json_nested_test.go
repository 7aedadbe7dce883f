package ingest

import (
	"strings"
	"testing"

	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/valuetext"
)

// TestJSONNullFixedSizeListsBounded: NULL elements of INTEGER[n] inside a list take n slots
// each from five bytes of JSON; past the request's memory they are refused, not built.
func TestJSONNullFixedSizeListsBounded(t *testing.T) {
	s := schemaOf(t, "x INTEGER[65536][]")
	body := `{"x":[` + strings.Repeat("null,", 200_000) + `null]}`
	e := decodeErr(t, ndjsonType, body, s)
	wantError(t, e, store.CodeTooLarge, 1, 1, "x", "NULL fixed-size lists")
	decodeOK(t, ndjsonType, `{"x":[null,[`+strings.Repeat("1,", 65535)+`1]]}`, s)
}

// TestJSONWideScalars decodes the scalar types beyond the flat core from JSON and CSV,
// at their edges, and refuses what they cannot hold.
func TestJSONWideScalars(t *testing.T) {
	s := schemaOf(t, "h HUGEINT", "uh UHUGEINT", "id UUID", "j JSON", "iv INTERVAL", "ns TIMESTAMP_NS", "sec TIMESTAMP_S", "e ENUM('a', 'b')")
	rec := decodeOK(t, ndjsonType, `{"h":"-170141183460469231731687303715884105728","uh":170141183460469231731687303715884105727,`+
		`"id":"urn:uuid:A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11","j":"text","iv":"P1W","ns":"2262-04-11T23:47:16.854775","sec":"1969-12-31T23:59:59.5","e":"b"}`+"\n"+
		`{"h":-1,"uh":"0","id":"a0eebc999c0b4ef8bb6d6bb9bd380a11","j":[1,{"a":null}],"iv":"-P1D","ns":null,"e":null}`, s)
	want := [][]string{
		{"-170141183460469231731687303715884105728", "170141183460469231731687303715884105727", `"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"`, `"\"text\""`, `"P7D"`, `"2262-04-11T23:47:16.854775"`, `"1969-12-31T23:59:59"`, `"b"`},
		{"-1", "0", `"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"`, `"[1,{\"a\":null}]"`, `"P-1D"`, "null", "null", "null"},
	}
	for i, row := range want {
		for j, w := range row {
			if w == "" {
				continue
			}
			if got := string(valuetext.AppendJSONValue(nil, rec.Column(j), i, false)); got != w {
				t.Errorf("row %d, %s = %s, want %s", i+1, s.Columns[j].Name, got, w)
			}
		}
	}
	for _, c := range []struct{ body, column, fragment string }{
		{`{"h":"170141183460469231731687303715884105728"}`, "h", "out of range for HUGEINT"},
		{`{"h":1.5}`, "h", "not a whole number"},
		{`{"uh":-1}`, "uh", "out of range for UHUGEINT"},
		{`{"uh":"340282366920938463463374607431768211455"}`, "uh", "out of range for UHUGEINT"},
		{`{"id":"a0eebc99"}`, "id", "is not a UUID"},
		{`{"id":1}`, "id", "cannot be stored in a UUID column"},
		{`{"iv":"1 day"}`, "iv", "is not an INTERVAL"},
		{`{"ns":"2262-04-12T00:00:00"}`, "ns", "out of range for TIMESTAMP_NS"},
		{`{"e":"c"}`, "e", "is not one of the values"},
	} {
		e := decodeErr(t, ndjsonType, c.body, s)
		wantError(t, e, store.CodeUnprocessable, 1, 1, c.column, c.fragment)
	}
	if e := decodeErr(t, csvType, "j\n\"{\"\"a\"\":\"\n", s); e.Column != "j" || !strings.Contains(e.Message, "is not JSON text") {
		t.Errorf("CSV JSON column: %v", e)
	}
}
