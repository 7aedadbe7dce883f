package ingest

import (
	"errors"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// This file holds the text → value parsers shared by the CSV and JSON decoders and by
// type inference. They never go through float64 for integers or decimals, and never use
// the server's time zone: every date and time is computed in UTC from its digits.

const (
	microsPerSecond = 1_000_000
	microsPerDay    = 86_400 * microsPerSecond
	// expLimit caps the decimal exponent read from text; a larger exponent is kept at
	// the cap, which is already far outside every column type's range.
	expLimit = 1 << 30
)

// decNumber is a decimal number read exactly from its text: value = ±M × 10^exp, where
// M is the digit sequence ip+fp sliced to [lo:hi], without leading or trailing zeros
// (lo == hi means zero).
type decNumber struct {
	neg    bool
	ip, fp string // digits before and after the decimal point
	lo, hi int
	exp    int
}

// parseDecNumber reads a decimal number: an optional sign, digits with an optional
// decimal point (at least one digit in all), and an optional exponent ("e" or "E", an
// optional sign, digits). It accepts the JSON number grammar (RFC 8259, section 6) and
// the forms DuckDB casts from text ("+5", "007", ".5", "5.").
func parseDecNumber(s string) (d decNumber, ok bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		d.neg = s[i] == '-'
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	d.ip = s[start:i]
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		d.fp = s[start:i]
	}
	if d.ip == "" && d.fp == "" {
		return d, false
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		start = i
		for i < len(s) && isDigit(s[i]) {
			if exp < expLimit {
				exp = exp*10 + int(s[i]-'0')
			}
			i++
		}
		if i == start {
			return d, false
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return d, false
	}
	n := len(d.ip) + len(d.fp)
	lo, hi := 0, n
	for lo < n && d.digit(lo) == '0' {
		lo++
	}
	for hi > lo && d.digit(hi-1) == '0' {
		hi--
	}
	d.lo, d.hi = lo, hi
	d.exp = exp - len(d.fp) + (n - hi)
	return d, true
}

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digit returns the k-th digit of ip+fp.
func (d *decNumber) digit(k int) byte {
	if k < len(d.ip) {
		return d.ip[k]
	}
	return d.fp[k-len(d.ip)]
}

// magnitude returns |d| when d is a whole number; integral is false when d has a
// nonzero fractional part, fits is false when |d| exceeds 2^64-1.
func (d *decNumber) magnitude() (mag uint64, integral, fits bool) {
	if d.lo == d.hi {
		return 0, true, true
	}
	if d.exp < 0 {
		return 0, false, false
	}
	if d.hi-d.lo+d.exp > 20 {
		return 0, true, false
	}
	for k := d.lo; k < d.hi+d.exp; k++ {
		var c uint64
		if k < d.hi {
			c = uint64(d.digit(k) - '0')
		}
		hi, lo := bits.Mul64(mag, 10)
		sum, carry := bits.Add64(lo, c, 0)
		if hi != 0 || carry != 0 {
			return 0, true, false
		}
		mag = sum
	}
	return mag, true, true
}

// intRange is the inclusive range of an integer column type: min ≤ 0 ≤ max.
type intRange struct {
	min int64
	max uint64
}

// contains reports whether ±mag lies in r.
func (r intRange) contains(neg bool, mag uint64) bool {
	if neg && mag != 0 {
		return r.min < 0 && mag-1 <= uint64(-(r.min+1))
	}
	return mag <= r.max
}

// integerResult classifies the outcome of parseInteger.
type integerResult uint8

const (
	integerOK         integerResult = iota
	integerSyntax                   // not a number
	integerFractional               // a number with a nonzero fractional part
	integerRange                    // a whole number outside the column type's range
)

// parseInteger reads a whole number in r from text: any parseDecNumber form whose exact
// value is whole ("12", "-0", "1e3", "2.0"). The result is the value's two's-complement
// bits: int64(v) for signed columns, v itself for unsigned ones.
func parseInteger(s string, r intRange) (uint64, integerResult) {
	d, ok := parseDecNumber(s)
	if !ok {
		return 0, integerSyntax
	}
	mag, integral, fits := d.magnitude()
	switch {
	case !integral:
		return 0, integerFractional
	case !fits || !r.contains(d.neg, mag):
		return 0, integerRange
	case d.neg:
		return -mag, integerOK
	}
	return mag, integerOK
}

// isPlainInteger reports whether s is an optional sign followed by digits only, the
// integer form type inference accepts for BIGINT (so "1.0" infers DOUBLE, as in DuckDB's
// CSV sniffer).
func isPlainInteger(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// parseDecimal reads text into a DECIMAL(precision, scale) value: the exact number
// times 10^scale, rounded half away from zero to a whole number as DuckDB rounds on
// cast, which must then have at most precision digits. ok is false for text that is
// not a number; inRange is false for a number too large for the type.
func parseDecimal(s string, precision, scale int32) (v decimal128.Num, ok, inRange bool) {
	d, ok := parseDecNumber(s)
	if !ok {
		return v, false, false
	}
	if d.lo == d.hi {
		return v, true, true
	}
	e := d.exp + int(scale)
	kept := d.hi - d.lo
	if e < 0 {
		kept += e
	}
	if kept+max(e, 0) > int(precision) {
		return v, true, false
	}
	var hi, lo uint64
	for k := 0; k < kept+max(e, 0); k++ {
		var c uint64
		if k < kept {
			c = uint64(d.digit(d.lo+k) - '0')
		}
		hi, lo = mul10Add(hi, lo, c)
	}
	if e < 0 && kept >= 0 && d.digit(d.lo+kept) >= '5' {
		var carry uint64
		lo, carry = bits.Add64(lo, 1, 0)
		hi += carry
	}
	v = decimal128.New(int64(hi), lo)
	if !v.FitsInPrecision(precision) {
		return v, true, false
	}
	if d.neg {
		v = v.Negate()
	}
	return v, true, true
}

// mul10Add returns the 128-bit value (hi, lo) × 10 + c; callers keep it below 10^39.
func mul10Add(hi, lo, c uint64) (uint64, uint64) {
	h, l := bits.Mul64(lo, 10)
	h += hi * 10
	l, carry := bits.Add64(l, c, 0)
	return h + carry, l
}

// parseFloat reads text into a float64 rounded to bitSize (32 or 64) bits: a
// parseDecNumber form, or case-insensitively "nan", "inf" or "infinity" with an
// optional sign (the spellings DuckDB casts). ok is false for other text; finite is
// false for a number whose magnitude overflows the type.
func parseFloat(s string, bitSize int) (f float64, ok, finite bool) {
	if _, isNum := parseDecNumber(s); !isNum {
		t := strings.TrimLeft(s, "+-")
		if len(s)-len(t) > 1 {
			return 0, false, false
		}
		switch strings.ToLower(t) {
		case "nan":
			return math.NaN(), true, true
		case "inf", "infinity":
			if s[0] == '-' {
				return math.Inf(-1), true, true
			}
			return math.Inf(1), true, true
		}
		return 0, false, false
	}
	f, err := strconv.ParseFloat(s, bitSize)
	if err != nil {
		if !isRangeError(err) {
			return 0, false, false
		}
		if math.IsInf(f, 0) {
			return 0, true, false
		}
	}
	return f, true, true
}

// isRangeError reports whether a strconv error is a range error.
func isRangeError(err error) bool { return errors.Is(err, strconv.ErrRange) }

// parseBool reads a BOOLEAN from text, case-insensitively: "true", "t", "1" or
// "false", "f", "0" (the spellings DuckDB casts from VARCHAR).
func parseBool(s string) (v, ok bool) {
	switch len(s) {
	case 1:
		switch s[0] {
		case 't', 'T', '1':
			return true, true
		case 'f', 'F', '0':
			return false, true
		}
	case 4:
		return true, strings.EqualFold(s, "true")
	case 5:
		return false, strings.EqualFold(s, "false")
	}
	return false, false
}

// parseDate reads a DATE from "YYYY-MM-DD" (ISO 8601 calendar date, years 0000 to 9999)
// and returns days since 1970-01-01.
func parseDate(s string) (days int32, ok bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, false
	}
	return int32(daysFromCivil(y, m, d)), true
}

// digits reads a fixed-width run of ASCII digits.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// daysIn returns the number of days in month m of year y (proleptic Gregorian).
func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian date
// (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms", days_from_civil).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// parseClock reads a time of day "HH:MM[:SS[.fraction]]" (ISO 8601 extended format,
// 00:00:00 to 23:59:59.999999) from the start of s. Fraction digits past the sixth
// are dropped (truncated to the microsecond). It returns microseconds since midnight
// and the text after the clock.
func parseClock(s string) (micros int64, rest string, ok bool) {
	if len(s) < 5 || s[2] != ':' {
		return 0, s, false
	}
	h, ok1 := digits(s[0:2])
	m, ok2 := digits(s[3:5])
	if !ok1 || !ok2 || h > 23 || m > 59 {
		return 0, s, false
	}
	micros = int64(h*3600+m*60) * microsPerSecond
	s = s[5:]
	if len(s) == 0 || s[0] != ':' {
		return micros, s, true
	}
	if len(s) < 3 {
		return 0, s, false
	}
	sec, ok3 := digits(s[1:3])
	if !ok3 || sec > 59 {
		return 0, s, false
	}
	micros += int64(sec) * microsPerSecond
	s = s[3:]
	if len(s) == 0 || s[0] != '.' {
		return micros, s, true
	}
	i := 1
	scale := int64(100_000)
	for i < len(s) && isDigit(s[i]) {
		micros += int64(s[i]-'0') * scale
		scale /= 10
		i++
	}
	if i == 1 {
		return 0, s, false
	}
	return micros, s[i:], true
}

// parseTime reads a TIME from "HH:MM[:SS[.fraction]]" (see parseClock) and returns
// microseconds since midnight.
func parseTime(s string) (micros int64, ok bool) {
	micros, rest, ok := parseClock(s)
	return micros, ok && rest == ""
}

// timestampForm tells which ISO 8601 form a timestamp was written in; type inference
// uses it to choose between DATE, TIMESTAMP and TIMESTAMPTZ.
type timestampForm uint8

const (
	formDate   timestampForm = iota // "YYYY-MM-DD" only
	formLocal                       // date and time without a UTC offset
	formOffset                      // date and time with "Z" or a UTC offset
)

// parseTimestamp reads a timestamp in an ISO 8601 / RFC 3339 form: "YYYY-MM-DD", or
// that date, a separator ("T", "t" or a space), a clock (see parseClock) and an
// optional UTC offset ("Z", "z", "±HH", "±HHMM" or "±HH:MM", up to ±23:59). It returns
// microseconds since 1970-01-01 00:00:00 UTC: a value with an offset is converted to
// that instant, which must lie within the years 0000 to 9999; a value without one is
// taken as UTC. The server's time zone is never consulted.
func parseTimestamp(s string) (micros int64, form timestampForm, ok bool) {
	if len(s) < 10 {
		return 0, 0, false
	}
	days, ok := parseDate(s[:10])
	if !ok {
		return 0, 0, false
	}
	micros = int64(days) * microsPerDay
	if len(s) == 10 {
		return micros, formDate, true
	}
	if c := s[10]; c != 'T' && c != 't' && c != ' ' {
		return 0, 0, false
	}
	clock, rest, ok := parseClock(s[11:])
	if !ok {
		return 0, 0, false
	}
	micros += clock
	if rest == "" {
		return micros, formLocal, true
	}
	offset, ok := parseOffset(rest)
	if !ok || micros-offset < minTimestamp || micros-offset > maxTimestamp {
		return 0, 0, false
	}
	return micros - offset, formOffset, true
}

// The instants parseTimestamp returns, 0000-01-01 00:00:00 to 9999-12-31
// 23:59:59.999999 UTC: an offset may not move a value out of the years the text form
// can spell, so that every stored timestamp reads back from its ISO text.
const (
	minTimestamp = -62_167_219_200 * microsPerSecond
	maxTimestamp = 253_402_300_800*microsPerSecond - 1
)

// parseOffset reads a UTC offset ("Z", "z", "±HH", "±HHMM", "±HH:MM") and returns it in
// microseconds east of UTC.
func parseOffset(s string) (int64, bool) {
	if s == "Z" || s == "z" {
		return 0, true
	}
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') {
		return 0, false
	}
	h, ok := digits(s[1:3])
	if !ok || h > 23 {
		return 0, false
	}
	m := 0
	switch rest := s[3:]; {
	case len(rest) == 0:
	case len(rest) == 2:
		m, ok = digits(rest)
	case len(rest) == 3 && rest[0] == ':':
		m, ok = digits(rest[1:])
	default:
		ok = false
	}
	if !ok || m > 59 {
		return 0, false
	}
	off := int64(h*3600+m*60) * microsPerSecond
	if s[0] == '-' {
		off = -off
	}
	return off, true
}

// trimSpace removes the ASCII spaces and tabs around a CSV field before it is parsed
// as a number, boolean, date or time, as DuckDB's casts from VARCHAR do.
func trimSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
