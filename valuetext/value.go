package valuetext

import (
	"encoding/base64"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// MaxSafeInteger is the largest integer a JSON number carries exactly through an IEEE 754
// double, as JavaScript reads it: 2^53 − 1 (Number.MAX_SAFE_INTEGER).
const MaxSafeInteger = 1<<53 - 1

// AppendJSONValue appends the JSON (RFC 8259) encoding of row i of arr to dst. It is the
// one value encoder of every JSON output (snapshot and stream payloads alike), so a value
// reads the same wherever it is delivered. Encodings, for the Arrow types of ducktail columns:
//
//	null                       null
//	bool                       true, false
//	int8 … int64, uint8 … uint64  a number; with bigIntsAsStrings, a value whose
//	                           magnitude exceeds MaxSafeInteger is a string of its exact
//	                           digits ("9007199254740993"), so JavaScript cannot round it
//	float32, float64           the shortest text that round-trips at the value's own width
//	                           (float32 0.1 is 0.1), exponent form below 1e-6 and from
//	                           1e21 on, as encoding/json and JavaScript write it; NaN and
//	                           ±Inf are the strings "NaN", "Infinity", "-Infinity"
//	decimal128(p,s)            the exact decimal as a number with s fraction digits (1.500);
//	                           with bigIntsAsStrings, one whose unscaled value exceeds
//	                           MaxSafeInteger is a string of that text (HUGEINT and UHUGEINT
//	                           are decimal128(38,0))
//	utf8                       a string: '"', '\', every control character and U+2028,
//	                           U+2029 escaped, so the output never holds a raw CR, LF or
//	                           NUL; each byte of invalid UTF-8 becomes U+FFFD
//	binary                     a string: standard base64 with padding (RFC 4648 §4)
//	date32                     "YYYY-MM-DD"
//	time64[us]                 "HH:MM:SS" plus ".ffffff" without trailing zeros when the
//	                           fraction is not zero
//	timestamp[us]              "YYYY-MM-DDTHH:MM:SS[.ffffff]", with a time zone "…Z" (the
//	                           instant in UTC); timestamp[s], [ms] alike, timestamp[ns]
//	                           with up to nine fraction digits
//	month_day_nano_interval    an ISO 8601 duration, signed per component ("P1Y2M3DT4H5M6.5S")
//	list, fixed_size_list      an array of the element values
//	struct                     an object of the members in order
//	map                        an object: each key's plain text (AppendTextValue) → value
//	union                      the value of the selected member
//
// Nested values are JSON in AppendTextValue too (the CSV form of nested columns).
//
// Years outside 0000–9999 use ISO 8601 expanded years ("+010000-01-01", "-000001-12-31").
// A dictionary array encodes its decoded value. Any other type appends a JSON string of
// arr.ValueStr(i). Nothing is allocated beyond dst's growth, except for those other types.
func AppendJSONValue(dst []byte, arr arrow.Array, i int, bigIntsAsStrings bool) []byte {
	return appendValue(dst, arr, i, true, bigIntsAsStrings)
}

// AppendTextValue appends the plain text of row i of arr to dst: the text AppendJSONValue
// writes, without JSON quoting or escaping (strings raw, with invalid UTF-8 replaced by
// U+FFFD; dates, times, timestamps, base64 and "NaN" unquoted; integers always as plain
// digits). A null appends nothing: callers that must tell NULL from "" check
// arr.IsNull(i). The CSV output uses it (RFC 4180 fields hold text).
func AppendTextValue(dst []byte, arr arrow.Array, i int) []byte {
	return appendValue(dst, arr, i, false, false)
}

// AppendJSONString appends s as a JSON string (RFC 8259 §7): '"' and '\' escaped, control
// characters as \n, \r, \t, \b, \f or \u00XX, U+2028 and U+2029 as \u2028 and \u2029 (so
// that the text is also a valid JavaScript string and never breaks a line), and each byte
// of invalid UTF-8 replaced by U+FFFD.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, string(utf8.RuneError)...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendValue is AppendJSONValue (asJSON) and AppendTextValue (!asJSON).
func appendValue(dst []byte, arr arrow.Array, i int, asJSON, bigIntsAsStrings bool) []byte {
	if arr.IsNull(i) {
		if asJSON {
			return append(dst, "null"...)
		}
		return dst
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return strconv.AppendBool(dst, a.Value(i))
	case *array.Int8:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int64:
		v := a.Value(i)
		if asJSON && bigIntsAsStrings && (v > MaxSafeInteger || v < -MaxSafeInteger) {
			return append(strconv.AppendInt(append(dst, '"'), v, 10), '"')
		}
		return strconv.AppendInt(dst, v, 10)
	case *array.Uint8:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint64:
		v := a.Value(i)
		if asJSON && bigIntsAsStrings && v > MaxSafeInteger {
			return append(strconv.AppendUint(append(dst, '"'), v, 10), '"')
		}
		return strconv.AppendUint(dst, v, 10)
	case *array.Float32:
		return appendFloat(dst, float64(a.Value(i)), 32, asJSON)
	case *array.Float64:
		return appendFloat(dst, a.Value(i), 64, asJSON)
	case *array.Decimal128:
		if asJSON && bigIntsAsStrings && unsafeDecimal(a.Value(i)) {
			return append(appendDecimal128(append(dst, '"'), a.Value(i), a.DataType().(*arrow.Decimal128Type).Scale), '"')
		}
		return appendDecimal128(dst, a.Value(i), a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.String:
		if asJSON {
			return AppendJSONString(dst, a.Value(i))
		}
		return appendValidUTF8(dst, a.Value(i))
	case *array.Binary:
		return quoted(base64.StdEncoding.AppendEncode(quoted(dst, asJSON), a.Value(i)), asJSON)
	case *array.Date32:
		return quoted(appendDate(quoted(dst, asJSON), int64(a.Value(i))), asJSON)
	case *array.Time64:
		us := int64(a.Value(i))
		if a.DataType().(*arrow.Time64Type).Unit == arrow.Microsecond && us >= 0 && us <= microsPerDay {
			return quoted(appendClock(quoted(dst, asJSON), us), asJSON)
		}
	case *array.Timestamp:
		tt := a.DataType().(*arrow.TimestampType)
		dst = appendTimestampUnit(quoted(dst, asJSON), int64(a.Value(i)), tt.Unit)
		if tt.TimeZone != "" {
			dst = append(dst, 'Z')
		}
		return quoted(dst, asJSON)
	case *array.MonthDayNanoInterval:
		return quoted(appendInterval(quoted(dst, asJSON), a.Value(i)), asJSON)
	case *array.Dictionary:
		return appendValue(dst, a.Dictionary(), a.GetValueIndex(i), asJSON, bigIntsAsStrings)
	case *array.SparseUnion:
		return appendValue(dst, a.Field(a.ChildID(i)), i, asJSON, bigIntsAsStrings)
	case *array.DenseUnion:
		return appendValue(dst, a.Field(a.ChildID(i)), int(a.ValueOffset(i)), asJSON, bigIntsAsStrings)
	}
	if isNested(arr) {
		return appendNested(dst, arr, i, asJSON && bigIntsAsStrings)
	}
	if asJSON {
		return AppendJSONString(dst, arr.ValueStr(i))
	}
	return appendValidUTF8(dst, arr.ValueStr(i))
}

// quoted appends '"' when asJSON.
func quoted(dst []byte, asJSON bool) []byte {
	if asJSON {
		return append(dst, '"')
	}
	return dst
}

// appendValidUTF8 appends s with each byte of invalid UTF-8 replaced by U+FFFD.
func appendValidUTF8(dst []byte, s string) []byte {
	if utf8.ValidString(s) {
		return append(dst, s...)
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, string(utf8.RuneError)...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

// appendFloat writes f as encoding/json does (the ECMAScript Number-to-String rules):
// shortest round-trip digits at the given bit size, exponent form below 1e-6 and from 1e21
// on, with a one-digit negative exponent written without its leading zero.
func appendFloat(dst []byte, f float64, bitSize int, asJSON bool) []byte {
	switch {
	case math.IsNaN(f):
		return quoted(append(quoted(dst, asJSON), "NaN"...), asJSON)
	case math.IsInf(f, 1):
		return quoted(append(quoted(dst, asJSON), "Infinity"...), asJSON)
	case math.IsInf(f, -1):
		return quoted(append(quoted(dst, asJSON), "-Infinity"...), asJSON)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bitSize == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bitSize == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bitSize)
	if format == 'e' {
		// e-09 → e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// appendDecimal128 writes the exact decimal value of n·10^−scale.
func appendDecimal128(dst []byte, n decimal128.Num, scale int32) []byte {
	hi, lo := uint64(n.HighBits()), n.LowBits()
	if n.Sign() < 0 {
		// two's complement negation of the 128-bit value
		lo = ^lo + 1
		hi = ^hi
		if lo == 0 {
			hi++
		}
		dst = append(dst, '-')
	}
	// The digits, right-aligned in buf: |n| < 2^127 has at most 39 digits.
	var buf [40]byte
	pos := len(buf)
	for hi != 0 {
		// Divide (hi, lo) by 10^19 and emit the 19-digit remainder.
		var r uint64
		hi, r = bits.Div64(0, hi, 1e19)
		lo, r = bits.Div64(r, lo, 1e19)
		for range 19 {
			pos--
			buf[pos] = byte('0' + r%10)
			r /= 10
		}
	}
	for {
		pos--
		buf[pos] = byte('0' + lo%10)
		lo /= 10
		if lo == 0 {
			break
		}
	}
	digits := buf[pos:]
	for len(digits) > 1 && digits[0] == '0' {
		digits = digits[1:]
	}
	switch s := int(scale); {
	case s <= 0:
		dst = append(dst, digits...)
		if len(digits) > 1 || digits[0] != '0' {
			for range -s {
				dst = append(dst, '0')
			}
		}
	case len(digits) <= s:
		dst = append(dst, '0', '.')
		for range s - len(digits) {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[:len(digits)-s]...)
		dst = append(dst, '.')
		dst = append(dst, digits[len(digits)-s:]...)
	}
	return dst
}

const microsPerDay = 86_400_000_000

// appendTimestamp writes microseconds since the Unix epoch as YYYY-MM-DDTHH:MM:SS[.ffffff].
func appendTimestamp(dst []byte, us int64) []byte {
	days, rem := us/microsPerDay, us%microsPerDay
	if rem < 0 {
		days--
		rem += microsPerDay
	}
	dst = appendDate(dst, days)
	dst = append(dst, 'T')
	return appendClock(dst, rem)
}

// appendDate writes days since 1970-01-01 as a proleptic Gregorian date YYYY-MM-DD
// (civil_from_days, H. Hinnant, "chrono-Compatible Low-Level Date Algorithms").
func appendDate(dst []byte, days int64) []byte {
	z := days + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if mp >= 10 {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	switch {
	case y >= 0 && y <= 9999:
		dst = appendPadded(dst, uint64(y), 4)
	case y < 0:
		dst = appendPadded(append(dst, '-'), uint64(-y), 6)
	default:
		dst = appendPadded(append(dst, '+'), uint64(y), 6)
	}
	dst = appendPadded(append(dst, '-'), uint64(m), 2)
	return appendPadded(append(dst, '-'), uint64(d), 2)
}

// appendClock writes microseconds since midnight as HH:MM:SS[.ffffff], the fraction
// without trailing zeros.
func appendClock(dst []byte, us int64) []byte {
	secs, frac := us/1_000_000, us%1_000_000
	dst = appendPadded(dst, uint64(secs/3600), 2)
	dst = appendPadded(append(dst, ':'), uint64(secs/60%60), 2)
	dst = appendPadded(append(dst, ':'), uint64(secs%60), 2)
	if frac == 0 {
		return dst
	}
	dst = appendPadded(append(dst, '.'), uint64(frac), 6)
	for dst[len(dst)-1] == '0' {
		dst = dst[:len(dst)-1]
	}
	return dst
}

// appendPadded writes v in decimal with at least width digits.
func appendPadded(dst []byte, v uint64, width int) []byte {
	var buf [20]byte
	digits := strconv.AppendUint(buf[:0], v, 10)
	for range width - len(digits) {
		dst = append(dst, '0')
	}
	return append(dst, digits...)
}
