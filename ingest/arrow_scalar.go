package ingest

import (
	"math"
	"math/big"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/google/uuid"

	"github.com/ducktail/ducktail/store"
)

// This file converts Arrow arrays to the scalar column types beyond the flat core of
// arrow_convert.go, by the rules arrowDecoder documents: integers and scale-0 decimals →
// HUGEINT, UHUGEINT; fixed_size_binary(16) (the arrow.uuid extension's storage) and
// strings → UUID; strings → JSON and ENUM; intervals and durations → INTERVAL; timestamps
// → TIMESTAMP_S, _MS, _NS; decimal32, decimal64 and decimal256 → DECIMAL.

// viaBuilder appends every value of src to the builder of t through text, for
// conversions that check each value as its text form would be checked.
func viaBuilder(src arrow.Array, t store.Type, base int, text func(i int) (string, bool)) (arrow.Array, error) {
	b, err := newColumnBuilder(t)
	if err != nil {
		return nil, err
	}
	for i := 0; i < src.Len(); i++ {
		if src.IsNull(i) {
			b.appendNull()
			continue
		}
		s, ok := text(i)
		if !ok {
			return nil, unsupported(src.DataType(), t)
		}
		if err := b.appendText(s); err != nil {
			return nil, locate(err, base+i+1, 0, "")
		}
	}
	return b.finish(), nil
}

// decimalText returns a reader of the decimal values of any decimal width as text.
func decimalText(src arrow.Array) (func(int) string, bool) {
	dt, ok := src.DataType().(arrow.DecimalType)
	if !ok {
		return nil, false
	}
	scale := dt.GetScale()
	switch a := src.(type) {
	case *array.Decimal32:
		return func(i int) string { return a.Value(i).ToString(scale) }, true
	case *array.Decimal64:
		return func(i int) string { return a.Value(i).ToString(scale) }, true
	case *array.Decimal128:
		return func(i int) string { return a.Value(i).ToString(scale) }, true
	case *array.Decimal256:
		return func(i int) string { return a.Value(i).ToString(scale) }, true
	}
	return nil, false
}

// toHugeint converts integers and decimals with whole values to HUGEINT or UHUGEINT.
func toHugeint(src arrow.Array, t store.Type, base int) (arrow.Array, error) {
	if dec, ok := decimalText(src); ok {
		return viaBuilder(src, t, base, func(i int) (string, bool) { return dec(i), true })
	}
	signed, unsigned, ok := widen(src)
	if !ok {
		return nil, unsupported(src.DataType(), t)
	}
	return viaBuilder(src, t, base, func(i int) (string, bool) {
		if signed != nil {
			return strconv.FormatInt(signed[i], 10), true
		}
		return strconv.FormatUint(unsigned[i], 10), true
	})
}

// toUUID converts 16-byte fixed-size binary values (RFC 9562 byte order) and strings
// to UUID text.
func toUUID(src arrow.Array, base int) (arrow.Array, error) {
	if fsb, ok := src.(*array.FixedSizeBinary); ok && fsb.DataType().(*arrow.FixedSizeBinaryType).ByteWidth == 16 {
		return viaBuilder(src, store.TypeUUID, base, func(i int) (string, bool) {
			return uuid.UUID(fsb.Value(i)).String(), true
		})
	}
	return fromStrings(src, store.TypeUUID, base)
}

// fromStrings converts any string layout to t through t's text form.
func fromStrings(src arrow.Array, t store.Type, base int) (arrow.Array, error) {
	get, isUTF8, ok := stringAt(src)
	if !ok || !isUTF8 {
		return nil, unsupported(src.DataType(), t)
	}
	return viaBuilder(src, t, base, func(i int) (string, bool) { return get(i), true })
}

// toInterval converts month, day-time and month-day-nano intervals and durations to
// INTERVAL (months, days, microseconds). Nanoseconds are floored to the microsecond, the
// rule for timestamps; a duration goes to the microseconds entirely.
func toInterval(src arrow.Array, base int) (arrow.Array, error) {
	out := make([]arrow.MonthDayNanoInterval, src.Len())
	micros := func(i int, v int64, unit arrow.TimeUnit) error {
		us, ok := scaleMicros(v, unit)
		if !ok || us > math.MaxInt64/1000 || us < math.MinInt64/1000 {
			return rowError(base+i+1, "%s value %d is out of range for INTERVAL", src.DataType(), v)
		}
		out[i].Nanoseconds = us * 1000
		return nil
	}
	switch a := src.(type) {
	case *array.MonthInterval:
		for i, v := range a.MonthIntervalValues() {
			out[i].Months = int32(v)
		}
	case *array.DayTimeInterval:
		for i, v := range a.DayTimeIntervalValues() {
			out[i].Days = v.Days
			out[i].Nanoseconds = int64(v.Milliseconds) * 1_000_000
		}
	case *array.MonthDayNanoInterval:
		for i, v := range a.MonthDayNanoIntervalValues() {
			out[i] = v
			out[i].Nanoseconds = floorDiv(v.Nanoseconds, 1000) * 1000
		}
	case *array.Duration:
		unit := a.DataType().(*arrow.DurationType).Unit
		for i, v := range a.DurationValues() {
			if err := micros(i, int64(v), unit); err != nil && a.IsValid(i) {
				return nil, err
			}
		}
	default:
		return nil, unsupported(src.DataType(), store.TypeInterval)
	}
	return withValues(store.TypeInterval.Arrow(), src, out), nil
}

// toTimestampUnit converts timestamps of any unit and zone to TIMESTAMP_S, _MS or _NS:
// to a coarser unit floored, to a finer one multiplied with an overflow check.
func toTimestampUnit(src arrow.Array, t store.Type, base int) (arrow.Array, error) {
	dt, ok := src.DataType().(*arrow.TimestampType)
	if !ok {
		return nil, unsupported(src.DataType(), t)
	}
	want := t.Arrow().(*arrow.TimestampType).Unit
	if dt.Unit == want {
		return relabel(src, t.Arrow()), nil
	}
	scale := []int64{1, 1_000, 1_000_000, 1_000_000_000}
	in := valuesOf[arrow.Timestamp](src)
	out := make([]int64, len(in))
	for i, v := range in {
		if want < dt.Unit {
			out[i] = floorDiv(int64(v), scale[dt.Unit]/scale[want])
			continue
		}
		f := scale[want] / scale[dt.Unit]
		if (int64(v) > math.MaxInt64/f || int64(v) < math.MinInt64/f) && src.IsValid(i) {
			return nil, rowError(base+i+1, "%s value %d is out of range for %s", dt, v, t)
		}
		out[i] = int64(v) * f
	}
	return withValues(t.Arrow(), src, out), nil
}

// toDecimal128 widens or narrows decimal32, decimal64 and decimal256 arrays to decimal128
// of the same precision (capped at 38) and scale, for toDecimal to check; a decimal256
// value past 38 digits is an error at its row.
func toDecimal128(src arrow.Array, t store.Type, base int) (arrow.Array, error) {
	dt := src.DataType().(arrow.DecimalType)
	prec := min(dt.GetPrecision(), decimal128.MaxPrecision)
	out := make([]decimal128.Num, src.Len())
	for i := 0; i < src.Len(); i++ {
		var b *big.Int
		switch a := src.(type) {
		case *array.Decimal32:
			b = big.NewInt(int64(a.Value(i)))
		case *array.Decimal64:
			b = big.NewInt(int64(a.Value(i)))
		case *array.Decimal256:
			b = a.Value(i).BigInt()
		default:
			return nil, unsupported(src.DataType(), t)
		}
		if !src.IsValid(i) {
			continue
		}
		if b.BitLen() > 126 || !decimal128.FromBigInt(b).FitsInPrecision(prec) {
			return nil, rowError(base+i+1, "value %s does not fit %s exactly", decimal256.FromBigInt(b).ToString(dt.GetScale()), t)
		}
		out[i] = decimal128.FromBigInt(b)
	}
	return withValues(&arrow.Decimal128Type{Precision: prec, Scale: dt.GetScale()}, src, out), nil
}
