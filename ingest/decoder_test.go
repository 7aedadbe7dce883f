package ingest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/store"
)

func TestDecoderFor(t *testing.T) {
	for _, tc := range []struct {
		contentType string
		want        Decoder
	}{
		{"text/csv", csvDecoder{}},
		{"text/csv; charset=utf-8", csvDecoder{}},
		{"TEXT/CSV;charset=UTF-8", csvDecoder{}},
		{"text/csv; header=present;", csvDecoder{}},
		{"application/json", jsonDecoder{}},
		{"application/json; charset=utf-8", jsonDecoder{}},
		{"application/x-ndjson", jsonDecoder{ndjson: true}},
		{"application/jsonl", jsonDecoder{ndjson: true}},
		{"application/vnd.apache.arrow.stream", arrowDecoder{}},
		{"application/vnd.apache.arrow.file", arrowDecoder{file: true}},
		{"application/vnd.apache.parquet", parquetDecoder{}},
	} {
		got, err := DecoderFor(tc.contentType)
		if err != nil {
			t.Errorf("DecoderFor(%q): %v", tc.contentType, err)
			continue
		}
		if got != tc.want {
			t.Errorf("DecoderFor(%q) = %#v, want %#v", tc.contentType, got, tc.want)
		}
	}
	for _, ct := range []string{"", "text/plain", "application/xml", "application/x-www-form-urlencoded", "text", "/", "application/parquet"} {
		_, err := DecoderFor(ct)
		var e *store.Error
		if !errors.As(err, &e) || e.Code != store.CodeUnsupportedMediaType {
			t.Errorf("DecoderFor(%q) error = %v, want CodeUnsupportedMediaType", ct, err)
		}
	}
}

// schemaOf builds a table schema from "name TYPE" strings.
func schemaOf(t testing.TB, cols ...string) *store.Schema {
	t.Helper()
	s := &store.Schema{Version: 1, FromSeq: 1}
	for i, c := range cols {
		name, typ, ok := strings.Cut(c, " ")
		if !ok {
			t.Fatalf("bad column %q", c)
		}
		ty, err := store.ParseType(typ)
		if err != nil {
			t.Fatalf("column %q: %v", c, err)
		}
		s.Columns = append(s.Columns, store.Column{ID: i + 1, Name: name, Type: ty})
	}
	return s
}

// schemaFromSpecs builds the schema a table created from specs would have.
func schemaFromSpecs(t testing.TB, specs []store.ColumnSpec) *store.Schema {
	t.Helper()
	s := &store.Schema{Version: 1, FromSeq: 1}
	for i, sp := range specs {
		ty, err := store.ParseType(sp.Type)
		if err != nil {
			t.Fatalf("spec %v: %v", sp, err)
		}
		s.Columns = append(s.Columns, store.Column{ID: i + 1, Name: sp.Name, Type: ty})
	}
	return s
}

// decodeOK decodes body with the decoder for contentType and checks the record's
// schema and buffers.
func decodeOK(t testing.TB, contentType, body string, s *store.Schema) arrow.RecordBatch {
	t.Helper()
	d, err := DecoderFor(contentType)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := d.Decode([]byte(body), s)
	if err != nil {
		t.Fatalf("Decode(%s): %v", contentType, err)
	}
	checkRecord(t, rec, s)
	return rec
}

// checkRecord fails unless rec has exactly s.Arrow() as its schema and valid data.
func checkRecord(t testing.TB, rec arrow.RecordBatch, s *store.Schema) {
	t.Helper()
	if !rec.Schema().Equal(s.Arrow()) {
		t.Fatalf("record schema = %s, want %s", rec.Schema(), s.Arrow())
	}
	if err := array.ValidateRecordFull(rec); err != nil {
		t.Fatalf("record is invalid: %v", err)
	}
}

// decodeErr decodes body and returns the *store.Error it must fail with.
func decodeErr(t testing.TB, contentType, body string, s *store.Schema) *store.Error {
	t.Helper()
	d, err := DecoderFor(contentType)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := d.Decode([]byte(body), s)
	if err == nil {
		t.Fatalf("Decode(%s) of %q succeeded with %d rows, want an error", contentType, body, rec.NumRows())
	}
	var e *store.Error
	if !errors.As(err, &e) {
		t.Fatalf("Decode error %v (%T) is not a *store.Error", err, err)
	}
	return e
}

// wantError checks the code and location of e and that its message holds each of
// the given fragments.
func wantError(t testing.TB, e *store.Error, code store.Code, row, line int, column string, fragments ...string) {
	t.Helper()
	if e.Code != code || e.Row != row || e.Line != line || e.Column != column {
		t.Errorf("error %q: code, row, line, column = %s, %d, %d, %q; want %s, %d, %d, %q",
			e.Error(), e.Code, e.Row, e.Line, e.Column, code, row, line, column)
	}
	for _, f := range fragments {
		if !strings.Contains(e.Message, f) {
			t.Errorf("error message %q does not contain %q", e.Message, f)
		}
	}
}

// cell renders one value of rec for comparisons: "NULL", or the value in the text
// form the JSON decoder reads (dates, times and timestamps in ISO form, UTC).
func cell(t testing.TB, rec arrow.RecordBatch, column string, row int) string {
	t.Helper()
	idx := rec.Schema().FieldIndices(column)
	if len(idx) != 1 {
		t.Fatalf("record has no column %q", column)
	}
	return render(rec.Column(idx[0]), row)
}

// render formats value i of a column of one of the store's Arrow types.
func render(col arrow.Array, i int) string {
	if col.IsNull(i) {
		return "NULL"
	}
	switch a := col.(type) {
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	case *array.Int8:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Uint8:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.FormatUint(a.Value(i), 10)
	case *array.Float32:
		return formatFloat(float64(a.Value(i)), 32)
	case *array.Float64:
		return formatFloat(a.Value(i), 64)
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return base64.StdEncoding.EncodeToString(a.Value(i))
	case *array.Date32:
		return time.Unix(int64(a.Value(i))*86400, 0).UTC().Format(time.DateOnly)
	case *array.Time64:
		us := int64(a.Value(i))
		return fmt.Sprintf("%02d:%02d:%02d.%06d", us/3_600_000_000, us/60_000_000%60, us/1_000_000%60, us%1_000_000)
	case *array.Timestamp:
		return time.UnixMicro(int64(a.Value(i))).UTC().Format("2006-01-02T15:04:05.000000Z07:00")
	}
	panic("render: unexpected array type " + col.DataType().String())
}

// formatFloat formats a float so that parseFloat reads it back exactly, spelling the
// non-finite values as the protobuf JSON mapping does.
func formatFloat(f float64, bitSize int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, bitSize)
}

// column returns all rendered values of one column.
func column(t testing.TB, rec arrow.RecordBatch, name string) []string {
	t.Helper()
	out := make([]string, rec.NumRows())
	for i := range out {
		out[i] = cell(t, rec, name, i)
	}
	return out
}

// encodeNDJSON writes rec as NDJSON in the forms the JSON decoder reads: numbers,
// booleans and decimals as JSON numbers, non-finite floats and everything else as JSON
// strings (BLOB in base64), NULL as an absent member.
func encodeNDJSON(rec arrow.RecordBatch) []byte {
	var b bytes.Buffer
	for i := 0; i < int(rec.NumRows()); i++ {
		b.WriteByte('{')
		sep := ""
		for j, col := range rec.Columns() {
			if col.IsNull(i) {
				continue
			}
			name, _ := json.Marshal(rec.ColumnName(j))
			b.WriteString(sep)
			b.Write(name)
			b.WriteByte(':')
			sep = ","
			v := render(col, i)
			switch col.DataType().ID() {
			case arrow.BOOL, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
				arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64, arrow.DECIMAL128:
				b.WriteString(v)
			case arrow.FLOAT32, arrow.FLOAT64:
				if v != "NaN" && v != "Infinity" && v != "-Infinity" {
					b.WriteString(v)
					break
				}
				fallthrough
			default:
				q, _ := json.Marshal(v)
				b.Write(q)
			}
		}
		b.WriteString("}\n")
	}
	return b.Bytes()
}
