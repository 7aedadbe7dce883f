package valuetext_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/valuetext"
)

func fromJSON(tb testing.TB, dt arrow.DataType, s string) arrow.Array {
	tb.Helper()
	a, _, err := array.FromJSON(memory.DefaultAllocator, dt, strings.NewReader(s))
	if err != nil {
		tb.Fatalf("%s from %s: %v", dt, s, err)
	}
	return a
}

func TestNestedAndWideValues(t *testing.T) {
	p := arrow.PrimitiveTypes
	geometry := arrow.StructOf(arrow.Field{Name: "type", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "coordinates", Type: arrow.ListOf(p.Float64), Nullable: true})
	iv := array.NewMonthDayNanoIntervalBuilder(memory.DefaultAllocator)
	iv.AppendValues([]arrow.MonthDayNanoInterval{
		{Months: 14, Days: 3, Nanoseconds: (4*3600+5*60+6)*1e9 + 5e8}, {}, {Months: -1}, {Nanoseconds: -1000}, {Days: 1},
	}, nil)
	intervals := iv.NewArray()
	huge, _ := decimal128.FromString("170141183460469231731687303715884105727", 38, 0)
	hb := array.NewDecimal128Builder(memory.DefaultAllocator, &arrow.Decimal128Type{Precision: 38})
	hb.AppendValues([]decimal128.Num{huge, decimal128.FromI64(9007199254740991), decimal128.FromI64(-9007199254740992)}, nil)
	hugeints := hb.NewArray()
	codes := fromJSON(t, p.Int8, `[0, 1, 0]`)
	ints, strs := fromJSON(t, p.Int32, `[7, null, null]`), fromJSON(t, arrow.BinaryTypes.String, `[null, "x", null]`)
	union, err := array.NewSparseUnionFromArraysWithFields(codes, []arrow.Array{ints, strs}, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		arr  arrow.Array
		i    int
		big  bool
		json string
		text string
	}{
		{"list with a big integer", fromJSON(t, arrow.ListOf(p.Int64), `[[1, 9007199254740993, null]]`), 0, true, `[1,"9007199254740993",null]`, `[1,9007199254740993,null]`},
		{"empty list", fromJSON(t, arrow.ListOf(p.Int64), `[[]]`), 0, false, `[]`, `[]`},
		{"struct", fromJSON(t, geometry, `[{"type": "Point", "coordinates": [-122.5, 38.1, 2.25]}]`), 0, false,
			`{"type":"Point","coordinates":[-122.5,38.1,2.25]}`, `{"type":"Point","coordinates":[-122.5,38.1,2.25]}`},
		{"struct with a null member", fromJSON(t, geometry, `[{"type": "a\n", "coordinates": null}]`), 0, false, `{"type":"a\n","coordinates":null}`, `{"type":"a\n","coordinates":null}`},
		{"map", fromJSON(t, arrow.MapOf(arrow.BinaryTypes.String, p.Int32), `[[{"key": "a", "value": 1}, {"key": "b\"", "value": null}]]`), 0, false, `{"a":1,"b\"":null}`, `{"a":1,"b\"":null}`},
		{"map with integer keys", fromJSON(t, arrow.MapOf(p.Int32, arrow.BinaryTypes.String), `[[{"key": 1, "value": "x"}]]`), 0, false, `{"1":"x"}`, `{"1":"x"}`},
		{"fixed-size list", fromJSON(t, arrow.FixedSizeListOf(2, p.Float32), `[[0.1, null]]`), 0, false, `[0.1,null]`, `[0.1,null]`},
		{"union first member", union, 0, false, `7`, `7`},
		{"union second member", union, 1, false, `"x"`, `x`},
		{"union null", union, 2, false, `null`, ``},
		{"interval", intervals, 0, false, `"P1Y2M3DT4H5M6.5S"`, `P1Y2M3DT4H5M6.5S`},
		{"zero interval", intervals, 1, false, `"PT0S"`, `PT0S`},
		{"negative month", intervals, 2, false, `"P-1M"`, `P-1M`},
		{"negative microsecond", intervals, 3, false, `"PT-0.000001S"`, `PT-0.000001S`},
		{"one day", intervals, 4, false, `"P1D"`, `P1D`},
		{"HUGEINT max as a string", hugeints, 0, true, `"170141183460469231731687303715884105727"`, `170141183460469231731687303715884105727`},
		{"HUGEINT max as a number", hugeints, 0, false, `170141183460469231731687303715884105727`, `170141183460469231731687303715884105727`},
		{"HUGEINT safe", hugeints, 1, true, `9007199254740991`, `9007199254740991`},
		{"HUGEINT past safe", hugeints, 2, true, `"-9007199254740992"`, `-9007199254740992`},
		{"timestamp[s]", fromJSON(t, &arrow.TimestampType{Unit: arrow.Second}, `["2024-02-29T12:00:01"]`), 0, false, `"2024-02-29T12:00:01"`, `2024-02-29T12:00:01`},
		{"timestamp[ms]", fromJSON(t, &arrow.TimestampType{Unit: arrow.Millisecond}, `["1969-12-31T23:59:59.999"]`), 0, false, `"1969-12-31T23:59:59.999"`, `1969-12-31T23:59:59.999`},
		{"timestamp[ns]", fromJSON(t, &arrow.TimestampType{Unit: arrow.Nanosecond}, `["1969-12-31T23:59:59.999999999"]`), 0, false, `"1969-12-31T23:59:59.999999999"`, `1969-12-31T23:59:59.999999999`},
		{"timestamp[ns] whole", fromJSON(t, &arrow.TimestampType{Unit: arrow.Nanosecond}, `["2001-01-01T00:00:00.000001000"]`), 0, false, `"2001-01-01T00:00:00.000001"`, `2001-01-01T00:00:00.000001`},
	} {
		if got := string(valuetext.AppendJSONValue(nil, c.arr, c.i, c.big)); got != c.json {
			t.Errorf("%s: AppendJSONValue = %s, want %s", c.name, got, c.json)
		} else if !json.Valid([]byte(got)) {
			t.Errorf("%s: %s is not JSON", c.name, got)
		}
		if got := string(valuetext.AppendTextValue(nil, c.arr, c.i)); got != c.text {
			t.Errorf("%s: AppendTextValue = %s, want %s", c.name, got, c.text)
		}
	}
}
