package valuetext_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/valuetext"
)

// one builds a one-row array of type dt holding v (nil for NULL) through the Arrow builders.
func one(tb testing.TB, dt arrow.DataType, v any) arrow.Array {
	tb.Helper()
	b := array.NewBuilder(memory.DefaultAllocator, dt)
	defer b.Release()
	if v == nil {
		b.AppendNull()
		return b.NewArray()
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Int8Builder:
		b.Append(v.(int8))
	case *array.Int16Builder:
		b.Append(v.(int16))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Uint8Builder:
		b.Append(v.(uint8))
	case *array.Uint16Builder:
		b.Append(v.(uint16))
	case *array.Uint32Builder:
		b.Append(v.(uint32))
	case *array.Uint64Builder:
		b.Append(v.(uint64))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.Decimal128Builder:
		b.Append(v.(decimal128.Num))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.(int)))
	case *array.Time64Builder:
		b.Append(arrow.Time64(v.(int64)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.(int64)))
	case *array.BinaryDictionaryBuilder:
		if err := b.AppendString(v.(string)); err != nil {
			tb.Fatal(err)
		}
	case *array.ListBuilder:
		b.Append(true)
		for _, x := range v.([]int32) {
			b.ValueBuilder().(*array.Int32Builder).Append(x)
		}
	default:
		tb.Fatalf("no builder case for %s", dt)
	}
	return b.NewArray()
}

func decimal(tb testing.TB, s string) decimal128.Num {
	tb.Helper()
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		tb.Fatalf("bad decimal %q", s)
	}
	return decimal128.FromBigInt(n)
}

type valueCase struct {
	name string
	dt   arrow.DataType
	v    any
	big  bool   // bigIntsAsStrings
	json string // want from AppendJSONValue
	text string // want from AppendTextValue
}

func valueCases(tb testing.TB) []valueCase {
	ts := &arrow.TimestampType{Unit: arrow.Microsecond}
	tstz := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	tsNY := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "America/New_York"}
	p := arrow.PrimitiveTypes
	return []valueCase{
		{"null", p.Int64, nil, false, `null`, ``},
		{"true", arrow.FixedWidthTypes.Boolean, true, false, `true`, `true`},
		{"false", arrow.FixedWidthTypes.Boolean, false, false, `false`, `false`},
		{"int8 min", p.Int8, int8(math.MinInt8), false, `-128`, `-128`},
		{"int16 max", p.Int16, int16(math.MaxInt16), false, `32767`, `32767`},
		{"int32 min", p.Int32, int32(math.MinInt32), false, `-2147483648`, `-2147483648`},
		{"int64 min", p.Int64, int64(math.MinInt64), false, `-9223372036854775808`, `-9223372036854775808`},
		{"int64 max", p.Int64, int64(math.MaxInt64), false, `9223372036854775807`, `9223372036854775807`},
		{"int64 min as string", p.Int64, int64(math.MinInt64), true, `"-9223372036854775808"`, `-9223372036854775808`},
		{"int64 max as string", p.Int64, int64(math.MaxInt64), true, `"9223372036854775807"`, `9223372036854775807`},
		{"2^53-1 stays a number", p.Int64, int64(1<<53 - 1), true, `9007199254740991`, `9007199254740991`},
		{"2^53 becomes a string", p.Int64, int64(1 << 53), true, `"9007199254740992"`, `9007199254740992`},
		{"2^53+1 becomes a string", p.Int64, int64(1<<53 + 1), true, `"9007199254740993"`, `9007199254740993`},
		{"-(2^53-1) stays a number", p.Int64, int64(-(1<<53 - 1)), true, `-9007199254740991`, `-9007199254740991`},
		{"-2^53 becomes a string", p.Int64, int64(-(1 << 53)), true, `"-9007199254740992"`, `-9007199254740992`},
		{"2^53+1 as a number", p.Int64, int64(1<<53 + 1), false, `9007199254740993`, `9007199254740993`},
		{"uint8 max", p.Uint8, uint8(math.MaxUint8), false, `255`, `255`},
		{"uint16 max", p.Uint16, uint16(math.MaxUint16), false, `65535`, `65535`},
		{"uint32 max", p.Uint32, uint32(math.MaxUint32), false, `4294967295`, `4294967295`},
		{"uint64 max", p.Uint64, uint64(math.MaxUint64), false, `18446744073709551615`, `18446744073709551615`},
		{"uint64 max as string", p.Uint64, uint64(math.MaxUint64), true, `"18446744073709551615"`, `18446744073709551615`},
		{"uint64 2^53-1", p.Uint64, uint64(1<<53 - 1), true, `9007199254740991`, `9007199254740991`},
		{"float64 0.1", p.Float64, 0.1, false, `0.1`, `0.1`},
		{"float64 -0", p.Float64, math.Copysign(0, -1), false, `-0`, `-0`},
		{"float64 integral", p.Float64, 12.0, false, `12`, `12`},
		{"float64 1e20", p.Float64, 1e20, false, `100000000000000000000`, `100000000000000000000`},
		{"float64 1e21", p.Float64, 1e21, false, `1e+21`, `1e+21`},
		{"float64 1e-6", p.Float64, 1e-6, false, `0.000001`, `0.000001`},
		{"float64 1e-7", p.Float64, 1e-7, false, `1e-7`, `1e-7`},
		{"float64 max", p.Float64, math.MaxFloat64, false, `1.7976931348623157e+308`, `1.7976931348623157e+308`},
		{"float64 smallest", p.Float64, math.SmallestNonzeroFloat64, false, `5e-324`, `5e-324`},
		{"float64 NaN", p.Float64, math.NaN(), false, `"NaN"`, `NaN`},
		{"float64 +Inf", p.Float64, math.Inf(1), false, `"Infinity"`, `Infinity`},
		{"float64 -Inf", p.Float64, math.Inf(-1), false, `"-Infinity"`, `-Infinity`},
		{"float32 0.1", p.Float32, float32(0.1), false, `0.1`, `0.1`},
		{"float32 max", p.Float32, float32(math.MaxFloat32), false, `3.4028235e+38`, `3.4028235e+38`},
		{"float32 2^24+1 rounds", p.Float32, float32(16777217), false, `16777216`, `16777216`},
		{"float32 NaN", p.Float32, float32(math.NaN()), false, `"NaN"`, `NaN`},
		{"float32 -Inf", p.Float32, float32(math.Inf(-1)), false, `"-Infinity"`, `-Infinity`},
		{"decimal scale kept", &arrow.Decimal128Type{Precision: 18, Scale: 3}, decimal(tb, "1500"), false, `1.500`, `1.500`},
		{"decimal small negative", &arrow.Decimal128Type{Precision: 18, Scale: 3}, decimal(tb, "-1"), false, `-0.001`, `-0.001`},
		{"decimal zero", &arrow.Decimal128Type{Precision: 18, Scale: 3}, decimal(tb, "0"), false, `0.000`, `0.000`},
		{"decimal all fraction", &arrow.Decimal128Type{Precision: 5, Scale: 5}, decimal(tb, "12345"), false, `0.12345`, `0.12345`},
		{"decimal scale 0", &arrow.Decimal128Type{Precision: 10, Scale: 0}, decimal(tb, "-42"), false, `-42`, `-42`},
		{"decimal 38 digits", &arrow.Decimal128Type{Precision: 38, Scale: 0}, decimal(tb, "99999999999999999999999999999999999999"), false,
			`99999999999999999999999999999999999999`, `99999999999999999999999999999999999999`},
		{"decimal 38 digits negative", &arrow.Decimal128Type{Precision: 38, Scale: 10}, decimal(tb, "-99999999999999999999999999999999999999"), false,
			`-9999999999999999999999999999.9999999999`, `-9999999999999999999999999999.9999999999`},
		{"decimal 2^64 boundary", &arrow.Decimal128Type{Precision: 38, Scale: 2}, decimal(tb, "18446744073709551616"), false,
			`184467440737095516.16`, `184467440737095516.16`},
		{"decimal 10^19 chunk with zeros", &arrow.Decimal128Type{Precision: 38, Scale: 0}, decimal(tb, "100000000000000000000000000001"), false,
			`100000000000000000000000000001`, `100000000000000000000000000001`},
		{"string quote and backslash", arrow.BinaryTypes.String, `a"b\c`, false, `"a\"b\\c"`, `a"b\c`},
		{"string controls", arrow.BinaryTypes.String, "\r\n\x00\x1f\t\b\f\x7f", false, `"\r\n\u0000\u001f\t\b\f` + "\x7f" + `"`, "\r\n\x00\x1f\t\b\f\x7f"},
		{"string line separators", arrow.BinaryTypes.String, "a\u2028b\u2029c", false, `"a\u2028b\u2029c"`, "a\u2028b\u2029c"},
		{"string emoji", arrow.BinaryTypes.String, "🦆 ümlaut", false, `"🦆 ümlaut"`, "🦆 ümlaut"},
		{"string invalid UTF-8", arrow.BinaryTypes.String, "a\xffb\xe2\x82", false, "\"a\uFFFDb\uFFFD\uFFFD\"", "a\uFFFDb\uFFFD\uFFFD"},
		{"string empty", arrow.BinaryTypes.String, "", false, `""`, ``},
		{"binary", arrow.BinaryTypes.Binary, []byte{0, 1, 2, 253, 254, 255}, false, `"AAEC/f7/"`, `AAEC/f7/`},
		{"binary padded", arrow.BinaryTypes.Binary, []byte("ab"), false, `"YWI="`, `YWI=`},
		{"binary empty", arrow.BinaryTypes.Binary, []byte{}, false, `""`, ``},
		{"date epoch", arrow.FixedWidthTypes.Date32, 0, false, `"1970-01-01"`, `1970-01-01`},
		{"date before epoch", arrow.FixedWidthTypes.Date32, -1, false, `"1969-12-31"`, `1969-12-31`},
		{"date leap day", arrow.FixedWidthTypes.Date32, 11016, false, `"2000-02-29"`, `2000-02-29`},
		{"date 9999-12-31", arrow.FixedWidthTypes.Date32, 2932896, false, `"9999-12-31"`, `9999-12-31`},
		{"date year 10000", arrow.FixedWidthTypes.Date32, 2932897, false, `"+010000-01-01"`, `+010000-01-01`},
		{"date year 0", arrow.FixedWidthTypes.Date32, -719528, false, `"0000-01-01"`, `0000-01-01`},
		{"date year -1", arrow.FixedWidthTypes.Date32, -719529, false, `"-000001-12-31"`, `-000001-12-31`},
		{"time midnight", arrow.FixedWidthTypes.Time64us, int64(0), false, `"00:00:00"`, `00:00:00`},
		{"time millis", arrow.FixedWidthTypes.Time64us, int64(45296789000), false, `"12:34:56.789"`, `12:34:56.789`},
		{"time one micro", arrow.FixedWidthTypes.Time64us, int64(1), false, `"00:00:00.000001"`, `00:00:00.000001`},
		{"time last micro", arrow.FixedWidthTypes.Time64us, int64(86399999999), false, `"23:59:59.999999"`, `23:59:59.999999`},
		{"time 24:00", arrow.FixedWidthTypes.Time64us, int64(86400000000), false, `"24:00:00"`, `24:00:00`},
		{"time negative falls back to ValueStr", arrow.FixedWidthTypes.Time64us, int64(-1), false, `"23:59:59.999999"`, `23:59:59.999999`},
		{"time64[ns] falls back to ValueStr", arrow.FixedWidthTypes.Time64ns, int64(1500), false, `"00:00:00.000001500"`, `00:00:00.000001500`},
		{"timestamp epoch", ts, int64(0), false, `"1970-01-01T00:00:00"`, `1970-01-01T00:00:00`},
		{"timestamp before epoch", ts, int64(-1), false, `"1969-12-31T23:59:59.999999"`, `1969-12-31T23:59:59.999999`},
		{"timestamp micros", ts, int64(1700000000123456), false, `"2023-11-14T22:13:20.123456"`, `2023-11-14T22:13:20.123456`},
		{"timestamptz", tstz, int64(1700000000120000), false, `"2023-11-14T22:13:20.12Z"`, `2023-11-14T22:13:20.12Z`},
		{"timestamptz other zone is still UTC", tsNY, int64(0), false, `"1970-01-01T00:00:00Z"`, `1970-01-01T00:00:00Z`},
		{"timestamp max", ts, int64(math.MaxInt64), false, `"+294247-01-10T04:00:54.775807"`, `+294247-01-10T04:00:54.775807`},
		{"timestamp min", ts, int64(math.MinInt64), false, `"-290308-12-21T19:59:05.224192"`, `-290308-12-21T19:59:05.224192`},
		{"dictionary decodes", &arrow.DictionaryType{IndexType: p.Int8, ValueType: arrow.BinaryTypes.String}, "sun\n", false, `"sun\n"`, "sun\n"},
		{"list", arrow.ListOf(p.Int32), []int32{1, 2}, false, `[1,2]`, `[1,2]`},
	}
}

func TestAppendJSONValue(t *testing.T) {
	for _, c := range valueCases(t) {
		arr := one(t, c.dt, c.v)
		if got := string(valuetext.AppendJSONValue([]byte("x"), arr, 0, c.big)); got != "x"+c.json {
			t.Errorf("%s: AppendJSONValue = %s, want %s", c.name, got[1:], c.json)
		}
		if got := string(valuetext.AppendTextValue([]byte("x"), arr, 0)); got != "x"+c.text {
			t.Errorf("%s: AppendTextValue = %q, want %q", c.name, got[1:], c.text)
		}
		if got := valuetext.AppendJSONValue(nil, arr, 0, c.big); !json.Valid(got) {
			t.Errorf("%s: %s is not valid JSON", c.name, got)
		}
		if bytes.ContainsAny(valuetext.AppendJSONValue(nil, arr, 0, c.big), "\r\n\x00") {
			t.Errorf("%s: output holds a raw CR, LF or NUL", c.name)
		}
		arr.Release()
	}
}

// TestAppendJSONValueRoundTrip decodes the output with encoding/json and compares it with
// the value that went in.
func TestAppendJSONValueRoundTrip(t *testing.T) {
	ints := []int64{0, 1, -1, 42, 1<<53 - 1, 1 << 53, 1<<53 + 1, math.MaxInt64, math.MinInt64}
	for _, v := range ints {
		for _, asStrings := range []bool{false, true} {
			out := valuetext.AppendJSONValue(nil, one(t, arrow.PrimitiveTypes.Int64, v), 0, asStrings)
			var n json.Number
			if asStrings && (v > valuetext.MaxSafeInteger || v < -valuetext.MaxSafeInteger) {
				var s string
				if err := json.Unmarshal(out, &s); err != nil {
					t.Fatalf("%s: %v", out, err)
				}
				n = json.Number(s)
			} else {
				d := json.NewDecoder(bytes.NewReader(out))
				d.UseNumber()
				if err := d.Decode(&n); err != nil {
					t.Fatalf("%s: %v", out, err)
				}
			}
			if got, err := n.Int64(); err != nil || got != v {
				t.Errorf("int64 %d round-tripped to %s (%v)", v, n, err)
			}
		}
	}
	floats := []float64{0, math.Copysign(0, -1), 0.1, 1.0 / 3, -2.5e-300, 6.02214076e23, math.MaxFloat64, math.SmallestNonzeroFloat64, 1e21, 1e-7}
	for _, v := range floats {
		var got float64
		out := valuetext.AppendJSONValue(nil, one(t, arrow.PrimitiveTypes.Float64, v), 0, false)
		if err := json.Unmarshal(out, &got); err != nil || math.Float64bits(got) != math.Float64bits(v) {
			t.Errorf("float64 %v encoded as %s decoded to %v (%v)", v, out, got, err)
		}
		f32 := float32(v)
		if math.IsInf(float64(f32), 0) {
			continue
		}
		out = valuetext.AppendJSONValue(nil, one(t, arrow.PrimitiveTypes.Float32, f32), 0, false)
		var got32 float32
		if err := json.Unmarshal(out, &got32); err != nil || math.Float32bits(got32) != math.Float32bits(f32) {
			t.Errorf("float32 %v encoded as %s decoded to %v (%v)", f32, out, got32, err)
		}
	}
	strs := []string{"", "plain", "tab\there", "\x00\x01\x1f", "quote\"back\\slash", "\u2028\u2029", "🦆🦆", "日本語", strings.Repeat("é", 100)}
	for _, s := range strs {
		var got string
		out := valuetext.AppendJSONString(nil, s)
		if err := json.Unmarshal(out, &got); err != nil || got != s {
			t.Errorf("string %q encoded as %s decoded to %q (%v)", s, out, got, err)
		}
	}
	// Dates and timestamps against Go's own calendar, across four centuries.
	for days := -146097; days <= 146097; days += 97 {
		want := time.Unix(int64(days)*86400, 0).UTC().Format("2006-01-02")
		if got := string(valuetext.AppendTextValue(nil, one(t, arrow.FixedWidthTypes.Date32, days), 0)); got != want {
			t.Fatalf("date %d = %s, want %s", days, got, want)
		}
	}
	for us := int64(-1e16); us <= 1e16; us += 123456789012345 {
		want := strings.TrimRight(strings.TrimRight(time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000"), "0"), ".")
		if got := string(valuetext.AppendTextValue(nil, one(t, &arrow.TimestampType{Unit: arrow.Microsecond}, us), 0)); got != want {
			t.Fatalf("timestamp %d = %s, want %s", us, got, want)
		}
	}
}

func TestAppendJSONValueDoesNotAllocate(t *testing.T) {
	var arrs []arrow.Array
	for _, c := range valueCases(t) {
		if _, ok := c.dt.(*arrow.ListType); ok || strings.HasSuffix(c.name, "falls back to ValueStr") {
			continue // ValueStr fallbacks allocate by design
		}
		arrs = append(arrs, one(t, c.dt, c.v))
	}
	dst := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		dst = dst[:0]
		for _, a := range arrs {
			dst = valuetext.AppendJSONValue(dst, a, 0, true)
			dst = valuetext.AppendTextValue(dst, a, 0)
		}
	})
	if allocs != 0 {
		t.Fatalf("allocations per run = %v, want 0", allocs)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\r\n\x00", "\u2028", "\xff\xfe", "🦆", "\xe2\x82"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := valuetext.AppendJSONString(nil, s)
		if !json.Valid(out) {
			t.Fatalf("%q encoded as invalid JSON %s", s, out)
		}
		if bytes.ContainsAny(out, "\r\n\x00") {
			t.Fatalf("%q encoded with a raw CR, LF or NUL: %s", s, out)
		}
		// encoding/json replaces each invalid byte with U+FFFD too, so both decode alike.
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var got, wantS string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(want, &wantS); err != nil {
			t.Fatal(err)
		}
		if got != wantS {
			t.Fatalf("%q decoded to %q, encoding/json gives %q", s, got, wantS)
		}
		if text := string(valuetext.AppendTextValue(nil, one(t, arrow.BinaryTypes.String, s), 0)); text != wantS {
			t.Fatalf("AppendTextValue(%q) = %q, want %q", s, text, wantS)
		}
	})
}
