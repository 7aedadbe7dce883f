package ingest

import (
	"slices"
	"testing"

	"github.com/ducktail/ducktail/store"
)

const csvType = "text/csv"

func TestCSVDecodeTypes(t *testing.T) {
	s := schemaOf(t, "b BOOLEAN", "i8 TINYINT", "i16 SMALLINT", "i32 INTEGER", "i64 BIGINT",
		"u8 UTINYINT", "u16 USMALLINT", "u32 UINTEGER", "u64 UBIGINT", "f FLOAT", "d DOUBLE",
		"dec DECIMAL(10,2)", "s VARCHAR", "blob BLOB", "day DATE", "tod TIME", "ts TIMESTAMP", "tz TIMESTAMPTZ")
	body := "b,i8,i16,i32,i64,u8,u16,u32,u64,f,d,dec,s,blob,day,tod,ts,tz\r\n" +
		"true,-128,-32768,-2147483648,-9223372036854775808,0,0,0,0,1.5,-2.25,12.345,héllo,raw bytes,2012-01-01,12:34:56.789,2012-01-01 10:00:00,2012-01-01T10:00:00+02:00\r\n" +
		"F,127,32767,2147483647,9007199254740993,255,65535,4294967295,18446744073709551615,3.4e38,1e308,-0.005,\"a,\"\"b\"\"\nc\", 12 ,9999-12-31,00:00,0001-01-01,2012-01-01\r\n"
	rec := decodeOK(t, csvType, body, s)
	if rec.NumRows() != 2 {
		t.Fatalf("rows = %d, want 2", rec.NumRows())
	}
	want := map[string][]string{
		"b":    {"true", "false"},
		"i8":   {"-128", "127"},
		"i16":  {"-32768", "32767"},
		"i32":  {"-2147483648", "2147483647"},
		"i64":  {"-9223372036854775808", "9007199254740993"},
		"u8":   {"0", "255"},
		"u16":  {"0", "65535"},
		"u32":  {"0", "4294967295"},
		"u64":  {"0", "18446744073709551615"},
		"f":    {"1.5", "3.4e+38"},
		"d":    {"-2.25", "1e+308"},
		"dec":  {"12.35", "-0.01"},
		"s":    {"héllo", "a,\"b\"\nc"},
		"blob": {"cmF3IGJ5dGVz", "IDEyIA=="},
		"day":  {"2012-01-01", "9999-12-31"},
		"tod":  {"12:34:56.789000", "00:00:00.000000"},
		"ts":   {"2012-01-01T10:00:00.000000Z", "0001-01-01T00:00:00.000000Z"},
		"tz":   {"2012-01-01T08:00:00.000000Z", "2012-01-01T00:00:00.000000Z"},
	}
	for name, w := range want {
		if got := column(t, rec, name); !slices.Equal(got, w) {
			t.Errorf("column %s = %q, want %q", name, got, w)
		}
	}
}

func TestCSVEmptyFields(t *testing.T) {
	// DuckDB's CSV reader: an empty field is NULL, a quoted "" in a VARCHAR column is
	// the empty string; for other types both are NULL.
	s := schemaOf(t, "s VARCHAR", "n BIGINT", "d DATE", "b BLOB")
	body := "s,n,d,b\n,,,\n\"\",\"\",\"\",\"\"\nx,1,2020-01-01,y\n"
	rec := decodeOK(t, csvType, body, s)
	for name, w := range map[string][]string{
		"s": {"NULL", "", "x"},
		"n": {"NULL", "NULL", "1"},
		"d": {"NULL", "NULL", "2020-01-01"},
		"b": {"NULL", "NULL", "eQ=="},
	} {
		if got := column(t, rec, name); !slices.Equal(got, w) {
			t.Errorf("column %s = %q, want %q", name, got, w)
		}
	}
}

func TestCSVFraming(t *testing.T) {
	s := schemaOf(t, "a BIGINT", "b VARCHAR")
	for _, tc := range []struct {
		name, body string
		a, b       []string
	}{
		{"BOM and CRLF", "\uFEFFa,b\r\n1,x\r\n2,y\r\n", []string{"1", "2"}, []string{"x", "y"}},
		{"no final newline", "a,b\n1,x\n2,y", []string{"1", "2"}, []string{"x", "y"}},
		{"blank lines skipped", "a,b\n\n1,x\n\n\n2,y\n", []string{"1", "2"}, []string{"x", "y"}},
		{"quoted newlines", "a,b\n1,\"multi\nline\"\n2,\"crlf\r\ninside\"\n", []string{"1", "2"}, []string{"multi\nline", "crlf\ninside"}},
		{"header order and case", "B,A\nx,1\n", []string{"1"}, []string{"x"}},
		{"missing column is NULL", "b\nx\ny\n", []string{"NULL", "NULL"}, []string{"x", "y"}},
		{"header only", "a,b\n", nil, nil},
		{"spaces around numbers", "a,b\n  7\t, spaced \n", []string{"7"}, []string{" spaced "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := decodeOK(t, csvType, tc.body, s)
			if got := column(t, rec, "a"); !slices.Equal(got, tc.a) {
				t.Errorf("a = %q, want %q", got, tc.a)
			}
			if got := column(t, rec, "b"); !slices.Equal(got, tc.b) {
				t.Errorf("b = %q, want %q", got, tc.b)
			}
			if int(rec.NumRows()) != len(tc.a) {
				t.Errorf("rows = %d, want %d", rec.NumRows(), len(tc.a))
			}
		})
	}
}

func TestCSVExactNameBeforeCaseInsensitive(t *testing.T) {
	s := schemaOf(t, "Name VARCHAR", "name_2 VARCHAR")
	rec := decodeOK(t, csvType, "NAME,Name_2\nx,y\n", s)
	if got := cell(t, rec, "Name", 0) + cell(t, rec, "name_2", 0); got != "xy" {
		t.Errorf("values = %q, want %q", got, "xy")
	}
}

func TestCSVErrors(t *testing.T) {
	s := schemaOf(t, "id BIGINT", "small TINYINT", "u UBIGINT", "name VARCHAR", "day DATE", "at TIMESTAMPTZ")
	const header = "id,small,u,name,day,at\n"
	for _, tc := range []struct {
		name, body string
		code       store.Code
		row, line  int
		column     string
		fragments  []string
	}{
		{"not a number", header + "1,1,1,a,2020-01-01,2020-01-01\nabc,1,1,b,2020-01-01,2020-01-01\n",
			store.CodeUnprocessable, 2, 3, "id", []string{`value "abc" is not a BIGINT`}},
		{"fraction into integer", header + "1.5,1,1,a,,\n", store.CodeUnprocessable, 1, 2, "id", []string{`"1.5" is not a whole number`}},
		{"out of range TINYINT", header + "1,300,1,a,,\n", store.CodeUnprocessable, 1, 2, "small", []string{`"300" is out of range for TINYINT`}},
		{"2^63 into BIGINT", header + "9223372036854775808,1,1,a,,\n", store.CodeUnprocessable, 1, 2, "id", []string{"out of range for BIGINT"}},
		{"-1 into UBIGINT", header + "1,1,-1,a,,\n", store.CodeUnprocessable, 1, 2, "u", []string{`"-1" is out of range for UBIGINT`}},
		{"bad date after a multi-line row", header + "1,1,1,\"two\nlines\",2020-01-01,\n2,2,2,x,2020-02-30,\n",
			store.CodeUnprocessable, 2, 4, "day", []string{`"2020-02-30" is not a DATE`}},
		{"bad timestamp", header + "1,1,1,a,,yesterday\n", store.CodeUnprocessable, 1, 2, "at", []string{`"yesterday" is not a TIMESTAMPTZ`}},
		{"invalid UTF-8 in VARCHAR", header + "1,1,1,\xff\xfe,,\n", store.CodeUnprocessable, 1, 2, "name", []string{"not valid UTF-8"}},
		{"unknown header field", "id,nope\n1,2\n", store.CodeUnprocessable, 0, 1, "nope", []string{`unknown header field "nope"`}},
		{"header names a column twice", "id,ID\n1,2\n", store.CodeInvalid, 0, 1, "ID", []string{"a second time"}},
		{"ragged row: too many fields", "id,name\n1,a\n2,b,extra\n", store.CodeInvalid, 2, 3, "", []string{"row has 3 fields, the header has 2"}},
		{"ragged row: too few fields", "id,name\n1,a\n2\n", store.CodeInvalid, 2, 3, "", []string{"row has 1 fields, the header has 2"}},
		{"bare quote", "id,name\n1,a\"b\n", store.CodeInvalid, 1, 2, "", []string{"invalid CSV at line 2, column 4", `bare "`}},
		{"unterminated quote", "id,name\n1,a\n2,\"open\n3,c\n", store.CodeInvalid, 2, 3, "", []string{"invalid CSV at line 4"}},
		{"empty body", "", store.CodeInvalid, 0, 0, "", []string{"empty"}},
		{"BOM only", "\uFEFF", store.CodeInvalid, 0, 0, "", []string{"empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := decodeErr(t, csvType, tc.body, s)
			wantError(t, e, tc.code, tc.row, tc.line, tc.column, tc.fragments...)
		})
	}
}
