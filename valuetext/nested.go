package valuetext

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// This file renders the nested Arrow types (list, fixed_size_list, map, struct, union)
// as JSON, and the scalar types beyond the flat core of value.go: intervals, timestamps
// in seconds, milliseconds and nanoseconds, and decimals past MaxSafeInteger.

// appendNested appends the JSON of a nested value: a list or fixed-size list as an array,
// a struct as an object of its members in order, a map as an object whose member names
// are the keys' text. Members are rendered by AppendJSONValue's rules.
func appendNested(dst []byte, arr arrow.Array, i int, bigIntsAsStrings bool) []byte {
	switch a := arr.(type) {
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		dst = append(dst, '{')
		for k := int(start); k < int(end); k++ {
			if k > int(start) {
				dst = append(dst, ',')
			}
			dst = AppendJSONString(dst, string(AppendTextValue(nil, keys, k)))
			dst = append(dst, ':')
			dst = appendValue(dst, items, k, true, bigIntsAsStrings)
		}
		return append(dst, '}')
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		values := a.ListValues()
		dst = append(dst, '[')
		for k := int(start); k < int(end); k++ {
			if k > int(start) {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, values, k, true, bigIntsAsStrings)
		}
		return append(dst, ']')
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		dst = append(dst, '{')
		for k := 0; k < a.NumField(); k++ {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSONString(dst, st.Field(k).Name)
			dst = append(dst, ':')
			dst = appendValue(dst, a.Field(k), i, true, bigIntsAsStrings)
		}
		return append(dst, '}')
	}
	return AppendJSONString(dst, arr.ValueStr(i))
}

// isNested reports whether arr is of a type appendNested renders.
func isNested(arr arrow.Array) bool {
	switch arr.(type) {
	case *array.Map, array.ListLike, *array.Struct:
		return true
	}
	return false
}

var maxSafe, minSafe = decimal128.FromI64(MaxSafeInteger), decimal128.FromI64(-MaxSafeInteger)

// unsafeDecimal reports whether the unscaled value of n exceeds MaxSafeInteger in
// magnitude, so that a JSON number could not carry its digits into JavaScript exactly.
func unsafeDecimal(n decimal128.Num) bool {
	return n.Greater(maxSafe) || n.Less(minSafe)
}

// appendInterval writes months, days and nanoseconds as an ISO 8601 duration with the
// sign extension PostgreSQL's iso_8601 style writes ("P1Y2M3DT4H5M6.5S", "P-1M",
// "PT-0.000001S"); the zero interval is "PT0S". Sub-microsecond digits do not occur in
// DuckDB's INTERVAL and are written when present.
func appendInterval(dst []byte, v arrow.MonthDayNanoInterval) []byte {
	dst = append(dst, 'P')
	start := len(dst)
	years, months := v.Months/12, v.Months%12
	if years != 0 {
		dst = append(strconv.AppendInt(dst, int64(years), 10), 'Y')
	}
	if months != 0 {
		dst = append(strconv.AppendInt(dst, int64(months), 10), 'M')
	}
	if v.Days != 0 {
		dst = append(strconv.AppendInt(dst, int64(v.Days), 10), 'D')
	}
	ns := v.Nanoseconds
	if ns == 0 && len(dst) > start {
		return dst
	}
	dst = append(dst, 'T')
	if ns == 0 {
		return append(dst, '0', 'S')
	}
	neg := ns < 0
	u := uint64(ns)
	if neg {
		u = -u
	}
	hours, rem := u/3_600_000_000_000, u%3_600_000_000_000
	mins, rem := rem/60_000_000_000, rem%60_000_000_000
	sign := func() {
		if neg {
			dst = append(dst, '-')
		}
	}
	if hours != 0 {
		sign()
		dst = append(strconv.AppendUint(dst, hours, 10), 'H')
	}
	if mins != 0 {
		sign()
		dst = append(strconv.AppendUint(dst, mins, 10), 'M')
	}
	if rem != 0 {
		sign()
		dst = strconv.AppendUint(dst, rem/1_000_000_000, 10)
		if frac := rem % 1_000_000_000; frac != 0 {
			dst = appendPadded(append(dst, '.'), frac, 9)
			for dst[len(dst)-1] == '0' {
				dst = dst[:len(dst)-1]
			}
		}
		dst = append(dst, 'S')
	}
	return dst
}

// appendTimestampUnit writes a timestamp in seconds, milliseconds or nanoseconds as
// appendTimestamp does, with up to nine fraction digits for nanoseconds.
func appendTimestampUnit(dst []byte, v int64, unit arrow.TimeUnit) []byte {
	switch unit {
	case arrow.Second:
		return appendTimestamp(dst, v*1_000_000)
	case arrow.Millisecond:
		return appendTimestamp(dst, v*1000)
	case arrow.Nanosecond:
		secs := v / 1_000_000_000
		if v%1_000_000_000 < 0 {
			secs--
		}
		dst = appendTimestamp(dst, secs*1_000_000)
		if frac := v - secs*1_000_000_000; frac != 0 {
			dst = appendPadded(append(dst, '.'), uint64(frac), 9)
			for dst[len(dst)-1] == '0' {
				dst = dst[:len(dst)-1]
			}
		}
		return dst
	}
	return appendTimestamp(dst, v)
}
