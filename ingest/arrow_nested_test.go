package ingest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/valuetext"
)

// jsonColumn renders column c of rec with valuetext's JSON encoding, NULL as "null".
func jsonColumn(rec arrow.RecordBatch) []string {
	var out []string
	for i := 0; i < int(rec.NumRows()); i++ {
		out = append(out, string(valuetext.AppendJSONValue(nil, rec.Column(0), i, false)))
	}
	return out
}

func TestArrowNestedConversions(t *testing.T) {
	p := arrow.PrimitiveTypes
	dense, err := array.NewDenseUnionFromArraysWithFields(fromJSON(t, p.Int8, `[1, 0, 1]`), fromJSON(t, p.Int32, `[0, 0, 1]`),
		[]arrow.Array{fromJSON(t, p.Int64, `[7]`), fromJSON(t, arrow.BinaryTypes.LargeString, `["x", "y"]`)}, []string{"s", "n"})
	if err != nil {
		t.Fatal(err)
	}
	ree := array.NewRunEndEncodedArray(fromJSON(t, p.Int32, `[2, 3]`), fromJSON(t, arrow.StructOf(arrow.Field{Name: "a", Type: p.Int8, Nullable: true}), `[{"a": 1}, null]`), 3, 0)
	fsl := fromJSON(t, arrow.FixedSizeListOf(2, p.Int16), `[[1, 2], null, [3, null]]`)
	for _, tc := range []struct {
		name, typ string
		src       arrow.Array
		want      []string
	}{
		{"large_list<int16> to BIGINT[]", "BIGINT[]", fromJSON(t, arrow.LargeListOf(p.Int16), `[[1, 2], null, [], [null]]`), []string{"[1,2]", "null", "[]", "[null]"}},
		{"list_view to DOUBLE[]", "DOUBLE[]", fromJSON(t, arrow.ListViewOf(p.Float32), `[[0.5], [1.5, null]]`), []string{"[0.5]", "[1.5,null]"}},
		{"fixed_size_list to INTEGER[2]", "INTEGER[2]", fsl, []string{"[1,2]", "null", "[3,null]"}},
		{"fixed_size_list to INTEGER[]", "INTEGER[]", fsl, []string{"[1,2]", "null", "[3,null]"}},
		{"list with two values to INTEGER[2]", "INTEGER[2]", fromJSON(t, arrow.ListOf(p.Int64), `[[1, 2], null]`), []string{"[1,2]", "null"}},
		{"struct by name, any case, missing member NULL", "STRUCT(A BIGINT, b VARCHAR, c DOUBLE)",
			fromJSON(t, arrow.StructOf(arrow.Field{Name: "b", Type: arrow.BinaryTypes.StringView, Nullable: true}, arrow.Field{Name: "a", Type: p.Int8, Nullable: true}), `[{"a": 1, "b": "x"}, null]`),
			[]string{`{"A":1,"b":"x","c":null}`, "null"}},
		{"map with other names", "MAP(VARCHAR, BIGINT)", fromJSON(t, arrow.MapOf(arrow.BinaryTypes.LargeString, p.Int8), `[[{"key": "k", "value": 1}], null]`), []string{`{"k":1}`, "null"}},
		{"dense union to UNION by name", "UNION(n VARCHAR, s BIGINT)", dense, []string{`"x"`, "7", `"y"`}},
		{"run-end encoded struct", "STRUCT(a TINYINT)", ree, []string{`{"a":1}`, `{"a":1}`, "null"}},
		{"uuid bytes", "UUID", fromJSON(t, &arrow.FixedSizeBinaryType{ByteWidth: 16}, `["oO68mZwLTvi7bWu5vTgKEQ=="]`), []string{`"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"`}},
		{"uuid text", "UUID", fromJSON(t, arrow.BinaryTypes.String, `["A0EEBC999C0B4EF8BB6D6BB9BD380A11"]`), []string{`"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"`}},
		{"strings to ENUM", "ENUM('a', 'b')", fromJSON(t, arrow.BinaryTypes.String, `["b", null, "a"]`), []string{`"b"`, "null", `"a"`}},
		{"integers to HUGEINT", "HUGEINT", fromJSON(t, p.Uint64, `[18446744073709551615]`), []string{"18446744073709551615"}},
		{"decimal256 to HUGEINT", "HUGEINT", fromJSON(t, &arrow.Decimal256Type{Precision: 40, Scale: 0}, `["-170141183460469231731687303715884105728"]`), []string{"-170141183460469231731687303715884105728"}},
		{"duration[ns] to INTERVAL, floored", "INTERVAL", fromJSON(t, arrow.FixedWidthTypes.Duration_ns, `[1500, -1]`), []string{`"PT0.000001S"`, `"PT-0.000001S"`}},
		{"day_time to INTERVAL", "INTERVAL", fromJSON(t, arrow.FixedWidthTypes.DayTimeInterval, `[{"days": 2, "milliseconds": 1500}]`), []string{`"P2DT1.5S"`}},
		{"timestamp[us] to TIMESTAMP_S, floored", "TIMESTAMP_S", fromJSON(t, &arrow.TimestampType{Unit: arrow.Microsecond}, `[-1]`), []string{`"1969-12-31T23:59:59"`}},
		{"timestamp[s] to TIMESTAMP_NS", "TIMESTAMP_NS", fromJSON(t, &arrow.TimestampType{Unit: arrow.Second}, `[1]`), []string{`"1970-01-01T00:00:01"`}},
		{"decimal64 to DECIMAL", "DECIMAL(10,3)", fromJSON(t, &arrow.Decimal64Type{Precision: 5, Scale: 2}, `["-1.25"]`), []string{"-1.250"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := decodeArrow(t, tc.typ, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := jsonColumn(rec); !slices.Equal(got, tc.want) {
				t.Errorf("values = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestArrowNestedConversionErrors(t *testing.T) {
	p := arrow.PrimitiveTypes
	for _, tc := range []struct {
		name, typ string
		src       arrow.Array
		row       int
		column    string
		fragment  string
	}{
		{"element out of range", "TINYINT[]", fromJSON(t, arrow.ListOf(p.Int64), `[[1], [2, 300]]`), 2, "c[1]", "value 300 is out of range for TINYINT"},
		{"nested list element", "TINYINT[][]", fromJSON(t, arrow.ListOf(arrow.ListOf(p.Int64)), `[[[1]], [[2], [3, 300]]]`), 2, "c[1][1]", "out of range"},
		{"struct member", "STRUCT(a TINYINT)", fromJSON(t, arrow.StructOf(arrow.Field{Name: "a", Type: p.Int64, Nullable: true}), `[{"a": 1}, {"a": 999}]`), 2, "c.a", "out of range"},
		{"unknown struct member", "STRUCT(a TINYINT)", fromJSON(t, arrow.StructOf(arrow.Field{Name: "zz", Type: p.Int8, Nullable: true}), `[{"zz": 1}]`), 0, "c.zz", "is not a member"},
		{"map value", "MAP(VARCHAR, TINYINT)", fromJSON(t, arrow.MapOf(arrow.BinaryTypes.String, p.Int64), `[[{"key": "k", "value": 1000}]]`), 1, "c[0]", "out of range"},
		{"wrong list length for T[n]", "INTEGER[2]", fromJSON(t, arrow.ListOf(p.Int32), `[[1, 2], [1]]`), 2, "c", "a list of 1 values cannot be stored in a INTEGER[2] column"},
		{"value not in ENUM", "ENUM('a')", fromJSON(t, arrow.BinaryTypes.String, `["a", "b"]`), 2, "c", "is not one of the values"},
		{"bad UUID text", "UUID", fromJSON(t, arrow.BinaryTypes.String, `["nope"]`), 1, "c", "is not a UUID"},
		{"UHUGEINT negative", "UHUGEINT", fromJSON(t, p.Int8, `[-1]`), 1, "c", "out of range for UHUGEINT"},
		{"decimal256 past 38 digits", "DECIMAL(38,0)", fromJSON(t, &arrow.Decimal256Type{Precision: 40, Scale: 0}, `["1000000000000000000000000000000000000000"]`), 1, "c", "does not fit DECIMAL(38,0)"},
		{"duration past INTERVAL", "INTERVAL", fromJSON(t, arrow.FixedWidthTypes.Duration_s, `[9223372036854775807]`), 1, "c", "out of range for INTERVAL"},
		{"scalar into a list", "BIGINT[]", fromJSON(t, p.Int64, `[1]`), 0, "c", "cannot be stored in a BIGINT[] column"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeArrow(t, tc.typ, tc.src)
			e, ok := err.(*store.Error)
			if !ok {
				t.Fatalf("error = %v (%T), want a *store.Error", err, err)
			}
			wantError(t, e, store.CodeUnprocessable, tc.row, 0, tc.column, tc.fragment)
		})
	}
}

// TestIntervalTextRoundTrips: every INTERVAL valuetext writes, parseInterval reads back.
func TestIntervalTextRoundTrips(t *testing.T) {
	b := array.NewMonthDayNanoIntervalBuilder(memory.DefaultAllocator)
	for _, m := range []int32{0, 1, -1, 13, -25, 2147483647, -2147483648} {
		for _, d := range []int32{0, 1, -1, 400, -2147483648} {
			for _, us := range []int64{0, 1, -1, 999_999, 3_600_000_000, -86_399_999_999, 9_223_372_036_854_775} {
				b.Append(arrow.MonthDayNanoInterval{Months: m, Days: d, Nanoseconds: us * 1000})
			}
		}
	}
	a := b.NewMonthDayNanoIntervalArray()
	for i, v := range a.MonthDayNanoIntervalValues() {
		text := string(valuetext.AppendTextValue(nil, a, i))
		got, ok := parseInterval(text)
		if !ok || got != v {
			t.Fatalf("%+v wrote %s, read back %+v (%v)", v, text, got, ok)
		}
	}
	for _, bad := range []string{"", "P", "PT", "1D", "P1", "P1DT", "P1.5D", "P1D1D", "PT1.1234567S", "P99999999999Y", "PTS", "P-M"} {
		if v, ok := parseInterval(bad); ok {
			t.Errorf("parseInterval(%q) = %+v", bad, v)
		}
	}
}

// TestArrowNestedExpansionBounded: list views that all view one large child, and a run
// repeating one large list, describe columns far larger than the body; they are refused
// with CodeTooLarge before anything is built.
func TestArrowNestedExpansionBounded(t *testing.T) {
	const childLen, rows = 100_000, 2_000
	child := array.NewInt8Builder(memory.DefaultAllocator)
	for range childLen {
		child.Append(1)
	}
	values := child.NewArray()
	offsets, sizes := make([]int32, rows), make([]int32, rows)
	for i := range sizes {
		sizes[i] = childLen
	}
	lvType := arrow.ListViewOf(arrow.PrimitiveTypes.Int8)
	lv := array.MakeFromData(array.NewData(lvType, rows, []*memory.Buffer{nil,
		memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offsets)), memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(sizes))},
		[]arrow.ArrayData{values.Data()}, 0, 0))
	one := array.MakeFromData(array.NewData(arrow.ListOf(arrow.PrimitiveTypes.Int8), 1, []*memory.Buffer{nil,
		memory.NewBufferBytes(arrow.Int32Traits.CastToBytes([]int32{0, childLen}))}, []arrow.ArrayData{values.Data()}, 0, 0))
	run := array.NewRunEndEncodedArray(fromJSON(t, arrow.PrimitiveTypes.Int32, `[100000]`), one, 100_000, 0)
	for name, src := range map[string]arrow.Array{"overlapping list views": lv, "a run of one list": run} {
		_, err := decodeArrow(t, "TINYINT[]", src)
		e, ok := err.(*store.Error)
		if !ok || e.Code != store.CodeTooLarge || e.Column != "c" {
			t.Errorf("%s: %v, want CodeTooLarge naming column c", name, err)
		}
	}
}

// TestArrowMapDuplicateKey: a map holding a key twice is refused naming the row, as a
// JSON body's map is, not left to DuckDB's INSERT to fail on.
func TestArrowMapDuplicateKey(t *testing.T) {
	dt := arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)
	m := fromJSON(t, dt, `[[{"key":"a","value":1}], [{"key":"k","value":1},{"key":"j","value":2},{"key":"k","value":3}]]`)
	_, err := decodeArrow(t, "MAP(VARCHAR, BIGINT)", m)
	var e *store.Error
	if !errors.As(err, &e) || e.Code != store.CodeUnprocessable || e.Row != 2 || !strings.Contains(e.Message, `"k" appears twice`) {
		t.Fatalf("got %v, want CodeUnprocessable at row 2 naming key k", err)
	}
}
