package ingest

import (
	"math"
	"testing"
	"time"
	_ "time/tzdata" // America/New_York for TestTimestampsIgnoreLocalZone on any machine

	"github.com/apache/arrow-go/v18/arrow"
)

func TestParseInteger(t *testing.T) {
	int8Range := intRange{math.MinInt8, math.MaxInt8}
	uint64Range := intRange{0, math.MaxUint64}
	for _, tc := range []struct {
		in   string
		r    intRange
		want int64
		res  integerResult
	}{
		{"0", int64Range, 0, integerOK},
		{"-0", uint64Range, 0, integerOK},
		{"+42", int64Range, 42, integerOK},
		{"007", int64Range, 7, integerOK},
		{"9007199254740993", int64Range, 9007199254740993, integerOK},
		{"9223372036854775807", int64Range, math.MaxInt64, integerOK},
		{"-9223372036854775808", int64Range, math.MinInt64, integerOK},
		{"9223372036854775808", int64Range, 0, integerRange},
		{"-9223372036854775809", int64Range, 0, integerRange},
		{"99999999999999999999999", int64Range, 0, integerRange},
		{"1e3", int64Range, 1000, integerOK},
		{"2.0", int64Range, 2, integerOK},
		{"1200e-2", int64Range, 12, integerOK},
		{"0.000e5", int64Range, 0, integerOK},
		{"1e18", int64Range, 1e18, integerOK},
		{"1e19", int64Range, 0, integerRange},
		{"1e999999999999999", int64Range, 0, integerRange},
		{"0e999999999999999", int64Range, 0, integerOK},
		{"1.5", int64Range, 0, integerFractional},
		{"1e-1", int64Range, 0, integerFractional},
		{"127", int8Range, 127, integerOK},
		{"-128", int8Range, -128, integerOK},
		{"128", int8Range, 0, integerRange},
		{"-129", int8Range, 0, integerRange},
		{"300", int8Range, 0, integerRange},
		{"-1", uint64Range, 0, integerRange},
		{"", int64Range, 0, integerSyntax},
		{"-", int64Range, 0, integerSyntax},
		{"abc", int64Range, 0, integerSyntax},
		{"1 2", int64Range, 0, integerSyntax},
		{"1e", int64Range, 0, integerSyntax},
		{"0x10", int64Range, 0, integerSyntax},
		{"1_000", int64Range, 0, integerSyntax},
	} {
		got, res := parseInteger(tc.in, tc.r)
		if res != tc.res || (res == integerOK && int64(got) != tc.want) {
			t.Errorf("parseInteger(%q) = %d, %d; want %d, %d", tc.in, int64(got), res, tc.want, tc.res)
		}
	}
	got, res := parseInteger("18446744073709551615", uint64Range)
	if res != integerOK || got != math.MaxUint64 {
		t.Errorf("parseInteger(2^64-1) = %d, %d; want %d", got, res, uint64(math.MaxUint64))
	}
	if _, res := parseInteger("18446744073709551616", uint64Range); res != integerRange {
		t.Errorf("parseInteger(2^64) result = %d, want integerRange", res)
	}
}

func TestParseDecimal(t *testing.T) {
	for _, tc := range []struct {
		in          string
		p, s        int32
		want        string
		ok, inRange bool
	}{
		{"123.456", 18, 3, "123.456", true, true},
		{"-123.456", 18, 3, "-123.456", true, true},
		{"1.5", 18, 3, "1.500", true, true},
		{"1e2", 5, 2, "100.00", true, true},
		{"0.0005", 18, 3, "0.001", true, true},   // half away from zero
		{"-0.0005", 18, 3, "-0.001", true, true}, // half away from zero
		{"0.0004999", 18, 3, "0.000", true, true},
		{"2.5", 2, 0, "3", true, true},
		{"-2.5", 2, 0, "-3", true, true},
		{"999.9995", 6, 3, "0", true, false}, // rounds to 1000.000, 7 digits
		{"999.9994", 6, 3, "999.999", true, true},
		{"12345678901234567890.123456789012345678", 38, 18, "12345678901234567890.123456789012345678", true, true},
		{"99999999999999999999999999999999999999", 38, 0, "99999999999999999999999999999999999999", true, true},
		{"100000000000000000000000000000000000000", 38, 0, "0", true, false},
		{"1e-99999999", 18, 3, "0.000", true, true},
		{"1e99999999", 18, 3, "0", true, false},
		{"0", 1, 0, "0", true, true},
		{"-0.0", 4, 2, "0.00", true, true},
		{"abc", 18, 3, "0", false, false},
		{"1.2.3", 18, 3, "0", false, false},
	} {
		v, ok, inRange := parseDecimal(tc.in, tc.p, tc.s)
		if ok != tc.ok || inRange != tc.inRange || (ok && inRange && v.ToString(tc.s) != tc.want) {
			t.Errorf("parseDecimal(%q, %d, %d) = %s, %v, %v; want %s, %v, %v", tc.in, tc.p, tc.s, v.ToString(tc.s), ok, inRange, tc.want, tc.ok, tc.inRange)
		}
	}
}

func TestParseFloat(t *testing.T) {
	for _, tc := range []struct {
		in         string
		bitSize    int
		want       float64
		ok, finite bool
	}{
		{"1.5", 64, 1.5, true, true},
		{"-2e-3", 64, -0.002, true, true},
		{".5", 64, 0.5, true, true},
		{"5.", 64, 5, true, true},
		{"9007199254740993", 64, 9007199254740992, true, true},
		{"1e308", 64, 1e308, true, true},
		{"1e309", 64, 0, true, false},
		{"1e39", 32, 0, true, false},
		{"1e-400", 64, 0, true, true},
		{"inf", 64, math.Inf(1), true, true},
		{"-Infinity", 64, math.Inf(-1), true, true},
		{"NaN", 64, math.NaN(), true, true},
		{"--inf", 64, 0, false, false},
		{"0x1p3", 64, 0, false, false},
		{"1_0", 64, 0, false, false},
		{"", 64, 0, false, false},
	} {
		f, ok, finite := parseFloat(tc.in, tc.bitSize)
		same := f == tc.want || (math.IsNaN(f) && math.IsNaN(tc.want))
		if ok != tc.ok || finite != tc.finite || (ok && finite && !same) {
			t.Errorf("parseFloat(%q, %d) = %v, %v, %v; want %v, %v, %v", tc.in, tc.bitSize, f, ok, finite, tc.want, tc.ok, tc.finite)
		}
	}
}

func TestParseBool(t *testing.T) {
	for in, want := range map[string]bool{"true": true, "TRUE": true, "t": true, "1": true, "False": false, "f": false, "0": false} {
		if v, ok := parseBool(in); !ok || v != want {
			t.Errorf("parseBool(%q) = %v, %v; want %v, true", in, v, ok, want)
		}
	}
	for _, in := range []string{"", "yes", "no", "2", "tru", "falsey"} {
		if _, ok := parseBool(in); ok {
			t.Errorf("parseBool(%q) ok, want not ok", in)
		}
	}
}

func TestParseDate(t *testing.T) {
	for in, want := range map[string]time.Time{
		"1970-01-01": time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		"2012-02-29": time.Date(2012, 2, 29, 0, 0, 0, 0, time.UTC),
		"2000-02-29": time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC),
		"1969-12-31": time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC),
		"0001-01-01": time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		"0000-03-01": time.Date(0, 3, 1, 0, 0, 0, 0, time.UTC),
		"9999-12-31": time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
	} {
		got, ok := parseDate(in)
		if wantDays := want.Unix() / 86400; !ok || int64(got) != wantDays {
			t.Errorf("parseDate(%q) = %d, %v; want %d", in, got, ok, wantDays)
		}
	}
	for _, in := range []string{"2013-02-29", "1900-02-29", "2012-13-01", "2012-00-10", "2012-01-32", "2012-1-01", "2012/01/01", "20120101", "2012-01-01 "} {
		if _, ok := parseDate(in); ok {
			t.Errorf("parseDate(%q) ok, want not ok", in)
		}
	}
}

func TestParseTime(t *testing.T) {
	for in, want := range map[string]int64{
		"00:00:00":         0,
		"12:34":            (12*3600 + 34*60) * 1e6,
		"23:59:59":         86399 * 1e6,
		"23:59:59.999999":  86399*1e6 + 999999,
		"01:02:03.5":       3723*1e6 + 500000,
		"01:02:03.1234567": 3723*1e6 + 123456, // digits past microseconds dropped
	} {
		if got, ok := parseTime(in); !ok || got != want {
			t.Errorf("parseTime(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"24:00:00", "12:60:00", "12:00:60", "1:02:03", "12:00:00.", "12:00:00Z", "12", ""} {
		if _, ok := parseTime(in); ok {
			t.Errorf("parseTime(%q) ok, want not ok", in)
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	instant := time.Date(2024, 3, 10, 6, 30, 15, 123456000, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		form timestampForm
	}{
		{"2024-03-10", time.Date(2024, 3, 10, 0, 0, 0, 0, time.UTC), formDate},
		{"2024-03-10 06:30:15.123456", instant, formLocal},
		{"2024-03-10T06:30:15.123456", instant, formLocal},
		{"2024-03-10t06:30:15.1234569", instant, formLocal},
		{"2024-03-10T06:30", time.Date(2024, 3, 10, 6, 30, 0, 0, time.UTC), formLocal},
		{"2024-03-10T06:30:15.123456Z", instant, formOffset},
		{"2024-03-10T08:30:15.123456+02:00", instant, formOffset},
		{"2024-03-10 08:30:15.123456+0200", instant, formOffset},
		{"2024-03-10 08:30:15.123456+02", instant, formOffset},
		{"2024-03-10T01:00:15.123456-05:30", instant, formOffset},
		{"2024-03-09T23:30:15.123456-07", instant, formOffset},
		{"1969-12-31T23:59:59.999999Z", time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC), formOffset},
		{"0000-01-01T00:00:00Z", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), formOffset},
		{"0000-01-01T00:01:00+00:01", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), formOffset},
		{"9999-12-31T23:59:59.999999Z", time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC), formOffset},
		{"9999-12-31T22:59:59.999999-01", time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC), formOffset},
	} {
		got, form, ok := parseTimestamp(tc.in)
		if !ok || got != tc.want.UnixMicro() || form != tc.form {
			t.Errorf("parseTimestamp(%q) = %d, form %d, %v; want %d (%s), form %d", tc.in, got, form, ok, tc.want.UnixMicro(), tc.want, tc.form)
		}
	}
	for _, in := range []string{"2024-03-10T", "2024-03-10X06:30", "2024-03-10 06:30:15 +02:00", "2024-03-10 06:30:15+2", "2024-03-10 06:30:15+24:00", "2024-03-10 06:30:15+02:60", "2024-03-10 06:30:15UTC", "2024-02-30 00:00:00", "2001/01/01 00:47",
		"0000-01-01 00:00+00:01", "9999-12-31T23:59:59.999999-00:01"} {
		if _, _, ok := parseTimestamp(in); ok {
			t.Errorf("parseTimestamp(%q) ok, want not ok", in)
		}
	}
}

// TestTimestampsIgnoreLocalZone checks that the server's time zone never changes a
// stored instant: the same texts decode to the same values under another time.Local.
func TestTimestampsIgnoreLocalZone(t *testing.T) {
	s := schemaOf(t, "d DATE", "t TIME", "ts TIMESTAMP", "tz TIMESTAMPTZ")
	body := "d,t,ts,tz\n2024-03-10,02:30:00,2024-03-10 02:30:00,2024-03-10 02:30:00\n2024-11-03,01:30:00,2024-11-03T01:30:00-04:00,2024-11-03T01:30:00\n"
	want := [][]string{
		{"2024-03-10", "02:30:00.000000", "2024-03-10T02:30:00.000000Z", "2024-03-10T02:30:00.000000Z"},
		{"2024-11-03", "01:30:00.000000", "2024-11-03T05:30:00.000000Z", "2024-11-03T01:30:00.000000Z"},
	}
	check := func(zone string) {
		rec := decodeOK(t, "text/csv", body, s)
		for row, cells := range want {
			for i, name := range []string{"d", "t", "ts", "tz"} {
				if got := cell(t, rec, name, row); got != cells[i] {
					t.Errorf("time.Local %s: row %d column %s = %s, want %s", zone, row+1, name, got, cells[i])
				}
			}
		}
		ts := rec.Column(2).(interface{ Value(int) arrow.Timestamp })
		if got, want := int64(ts.Value(0)), time.Date(2024, 3, 10, 2, 30, 0, 0, time.UTC).UnixMicro(); got != want {
			t.Errorf("time.Local %s: stored micros = %d, want %d", zone, got, want)
		}
	}
	check("UTC")
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	saved := time.Local
	time.Local = ny
	t.Cleanup(func() { time.Local = saved })
	check("America/New_York")
}
