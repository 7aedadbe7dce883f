package ingest

import (
	"fmt"
	"math"
	"math/big"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/store"
)

// This file converts the arrays of an Arrow IPC body to the Arrow types of the table's
// columns (convertArrow), by the rules arrowDecoder documents, checking every value.

// rowError is a CodeUnprocessable error at a 1-based row.
func rowError(row int, format string, args ...any) error {
	return &store.Error{Code: store.CodeUnprocessable, Row: row, Message: fmt.Sprintf(format, args...)}
}

// unsupported is the error for an Arrow type a column type never takes.
func unsupported(dt arrow.DataType, t store.Type) error {
	return valueError(fmt.Sprintf("Arrow type %s cannot be stored in a %s column", dt, t))
}

// convertArrow returns src as an array of t.Arrow() (a new reference), converting as
// arrowDecoder documents; base is the number of rows before src, for error rows.
func convertArrow(src arrow.Array, t store.Type, base int) (arrow.Array, error) {
	if ext, ok := src.(array.ExtensionArray); ok {
		src = ext.Storage()
	}
	if r, ok := src.(*array.RunEndEncoded); ok {
		return convertRunEnd(r, t, base)
	}
	if d, ok := src.(*array.Dictionary); ok {
		if _, nestedValues := d.Dictionary().DataType().(arrow.NestedType); nestedValues || t.Nested() {
			return convertDictionary(d, t, base)
		}
		m, err := materialize(d, base)
		if err != nil {
			return nil, err
		}
		defer m.Release()
		src = m
	}
	want := t.Arrow()
	if src.DataType().ID() == arrow.NULL {
		return array.MakeArrayOfNull(goAllocator, want, src.Len()), nil
	}
	if t.Nested() {
		return convertNested(src, t, base)
	}
	if p, s, ok := t.Decimal(); ok {
		if dt, isDec := src.DataType().(arrow.DecimalType); isDec && dt.ID() != arrow.DECIMAL128 {
			d, err := toDecimal128(src, t, base)
			if err != nil {
				return nil, err
			}
			defer d.Release()
			src = d
		}
		return toDecimal(src, t, p, s, base)
	}
	if t.Node().Kind == store.KindEnum {
		return fromStrings(src, t, base)
	}
	switch t {
	case store.TypeHugeint, store.TypeUHugeint:
		return toHugeint(src, t, base)
	case store.TypeUUID:
		return toUUID(src, base)
	case store.TypeJSON:
		return fromStrings(src, t, base)
	case store.TypeInterval:
		return toInterval(src, base)
	case store.TypeTimestampS, store.TypeTimestampMS, store.TypeTimestampNS:
		return toTimestampUnit(src, t, base)
	}
	if t == store.TypeTime {
		return toTime(src, base)
	}
	if arrow.TypeEqual(src.DataType(), want) {
		src.Retain()
		return src, nil
	}
	if convert, ok := numericConversions[t]; ok {
		return convert(src, t, base)
	}
	switch t {
	case store.TypeVarchar, store.TypeBlob:
		return toBytes(src, t, base)
	case store.TypeDate:
		return toDate(src, base)
	case store.TypeTimestamp, store.TypeTimestampTZ:
		return toTimestamp(src, t, base)
	}
	return nil, unsupported(src.DataType(), t)
}

// numericConversions converts an Arrow column of any numeric type to each integer and
// floating-point column type (toInteger, toFloat).
var numericConversions = map[store.Type]func(src arrow.Array, t store.Type, base int) (arrow.Array, error){
	store.TypeTinyint:   toInteger[int8],
	store.TypeSmallint:  toInteger[int16],
	store.TypeInteger:   toInteger[int32],
	store.TypeBigint:    toInteger[int64],
	store.TypeUTinyint:  toInteger[uint8],
	store.TypeUSmallint: toInteger[uint16],
	store.TypeUInteger:  toInteger[uint32],
	store.TypeUBigint:   toInteger[uint64],
	store.TypeFloat:     toFloat[float32],
	store.TypeDouble:    toFloat[float64],
}

// validityOf returns src's validity bitmap moved to offset 0, or nil without nulls.
func validityOf(src arrow.Array) *memory.Buffer {
	if src.NullN() == 0 {
		return nil
	}
	d := src.Data()
	if d.Offset() == 0 {
		return d.Buffers()[0]
	}
	out := make([]byte, bitutil.BytesForBits(int64(src.Len())))
	bitutil.CopyBitmap(d.Buffers()[0].Bytes(), d.Offset(), src.Len(), out, 0)
	return memory.NewBufferBytes(out)
}

// withValues returns an array of type dt with src's validity and the given values.
func withValues[T arrow.FixedWidthType](dt arrow.DataType, src arrow.Array, vals []T) arrow.Array {
	return newArray(dt, src.Len(), []*memory.Buffer{validityOf(src), memory.NewBufferBytes(arrow.GetBytes(vals))}, src.NullN())
}

// relabel returns src's buffers under type dt, which has the same layout.
func relabel(src arrow.Array, dt arrow.DataType) arrow.Array {
	d := src.Data()
	data := array.NewData(dt, d.Len(), d.Buffers(), nil, src.NullN(), d.Offset())
	defer data.Release()
	return array.MakeFromData(data)
}

// valuesOf returns the values of a fixed-width array whose element type is T.
func valuesOf[T arrow.FixedWidthType](a arrow.Array) []T {
	return a.(interface{ Values() []T }).Values()
}

// widen returns the values of an integer array as int64 (signed types) or uint64
// (unsigned types); ok is false for other types.
func widen(a arrow.Array) (signed []int64, unsigned []uint64, ok bool) {
	switch a.DataType().ID() {
	case arrow.INT8:
		return widenTo[int8, int64](a), nil, true
	case arrow.INT16:
		return widenTo[int16, int64](a), nil, true
	case arrow.INT32:
		return widenTo[int32, int64](a), nil, true
	case arrow.INT64:
		return valuesOf[int64](a), nil, true
	case arrow.UINT8:
		return nil, widenTo[uint8, uint64](a), true
	case arrow.UINT16:
		return nil, widenTo[uint16, uint64](a), true
	case arrow.UINT32:
		return nil, widenTo[uint32, uint64](a), true
	case arrow.UINT64:
		return nil, valuesOf[uint64](a), true
	}
	return nil, nil, false
}

// widenTo copies the values of an integer array of element type S into W values.
func widenTo[S int8 | int16 | int32 | uint8 | uint16 | uint32, W int64 | uint64](a arrow.Array) []W {
	in := valuesOf[S](a)
	out := make([]W, len(in))
	for i, v := range in {
		out[i] = W(v)
	}
	return out
}

// toInteger converts any integer array to integer type D, checking each valid value's
// range.
func toInteger[D int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](src arrow.Array, t store.Type, base int) (arrow.Array, error) {
	signed, unsigned, ok := widen(src)
	if !ok {
		return nil, unsupported(src.DataType(), t)
	}
	out := make([]D, src.Len())
	for i, v := range signed {
		d := D(v)
		if (int64(d) != v || (d < 0) != (v < 0)) && src.IsValid(i) {
			return nil, rowError(base+i+1, "value %d is out of range for %s", v, t)
		}
		out[i] = d
	}
	for i, v := range unsigned {
		d := D(v)
		if (uint64(d) != v || d < 0) && src.IsValid(i) {
			return nil, rowError(base+i+1, "value %d is out of range for %s", v, t)
		}
		out[i] = d
	}
	return withValues(t.Arrow(), src, out), nil
}

// toFloat converts integer and floating-point arrays to F: integers only when exactly
// representable, float64 to float32 rounded but not overflowing.
func toFloat[F float32 | float64](src arrow.Array, t store.Type, base int) (arrow.Array, error) {
	out := make([]F, src.Len())
	switch src.DataType().ID() {
	case arrow.FLOAT16:
		for i, v := range src.(*array.Float16).Values() {
			out[i] = F(v.Float32())
		}
	case arrow.FLOAT32:
		for i, v := range valuesOf[float32](src) {
			out[i] = F(v)
		}
	case arrow.FLOAT64:
		for i, v := range valuesOf[float64](src) {
			f := F(v)
			if math.IsInf(float64(f), 0) && !math.IsInf(v, 0) && src.IsValid(i) {
				return nil, rowError(base+i+1, "value %g is out of range for %s", v, t)
			}
			out[i] = f
		}
	default:
		signed, unsigned, ok := widen(src)
		if !ok {
			return nil, unsupported(src.DataType(), t)
		}
		for i, v := range signed {
			f := F(v)
			g := float64(f)
			if !(g < 0x1p63 && int64(g) == v) && src.IsValid(i) {
				return nil, rowError(base+i+1, "value %d cannot be stored exactly in %s", v, t)
			}
			out[i] = f
		}
		for i, v := range unsigned {
			f := F(v)
			g := float64(f)
			if !(g < 0x1p64 && uint64(g) == v) && src.IsValid(i) {
				return nil, rowError(base+i+1, "value %d cannot be stored exactly in %s", v, t)
			}
			out[i] = f
		}
	}
	return withValues(t.Arrow(), src, out), nil
}

// toDecimal converts a decimal128 array to DECIMAL(p,s), rescaling exactly and
// checking every valid value against the precision.
func toDecimal(src arrow.Array, t store.Type, p, s int32, base int) (arrow.Array, error) {
	st, ok := src.DataType().(*arrow.Decimal128Type)
	if !ok || st.Precision < 1 || st.Precision > decimal128.MaxPrecision || st.Scale < -decimal128.MaxScale || st.Scale > decimal128.MaxScale {
		return nil, unsupported(src.DataType(), t)
	}
	in := valuesOf[decimal128.Num](src)
	var out []decimal128.Num
	if st.Scale != s {
		out = make([]decimal128.Num, len(in))
	}
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
	for i, v := range in {
		if !src.IsValid(i) {
			continue
		}
		r, exact := v, true
		if st.Scale != s {
			r, exact = rescale(v, st.Scale, s, limit)
			out[i] = r
		}
		if !exact || !r.FitsInPrecision(p) {
			return nil, rowError(base+i+1, "value %s does not fit %s exactly", v.ToString(st.Scale), t)
		}
	}
	if st.Scale == s {
		return relabel(src, t.Arrow()), nil
	}
	return withValues(t.Arrow(), src, out), nil
}

// rescale returns v (at scale from) at scale to; exact is false when digits would be
// lost or the result reaches limit in magnitude.
func rescale(v decimal128.Num, from, to int32, limit *big.Int) (decimal128.Num, bool) {
	b := v.BigInt()
	ten := big.NewInt(10)
	if to > from {
		b.Mul(b, new(big.Int).Exp(ten, big.NewInt(int64(to-from)), nil))
	} else {
		var rem big.Int
		b.QuoRem(b, new(big.Int).Exp(ten, big.NewInt(int64(from-to)), nil), &rem)
		if rem.Sign() != 0 {
			return v, false
		}
	}
	if new(big.Int).Abs(b).Cmp(limit) >= 0 {
		return v, false
	}
	return decimal128.FromBigInt(b), true
}

// floorDiv divides rounding toward negative infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// scaleMicros converts v in a unit with per units per second to microseconds:
// multiplied with an overflow check for coarser units, floored for nanoseconds.
func scaleMicros(v int64, unit arrow.TimeUnit) (int64, bool) {
	switch unit {
	case arrow.Second:
		if v > math.MaxInt64/microsPerSecond || v < math.MinInt64/microsPerSecond {
			return 0, false
		}
		return v * microsPerSecond, true
	case arrow.Millisecond:
		if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
			return 0, false
		}
		return v * 1000, true
	case arrow.Nanosecond:
		return floorDiv(v, 1000), true
	}
	return v, true
}

// toDate converts date64 (milliseconds) to date32 days, floored.
func toDate(src arrow.Array, base int) (arrow.Array, error) {
	if src.DataType().ID() != arrow.DATE64 {
		return nil, unsupported(src.DataType(), store.TypeDate)
	}
	in := valuesOf[arrow.Date64](src)
	out := make([]int32, len(in))
	for i, v := range in {
		d := floorDiv(int64(v), 86_400_000)
		if d != int64(int32(d)) && src.IsValid(i) {
			return nil, rowError(base+i+1, "date64 value %d is out of range for DATE", v)
		}
		out[i] = int32(d)
	}
	return withValues(arrow.FixedWidthTypes.Date32, src, out), nil
}

// toTime converts time32 and time64 arrays to microseconds since midnight, each valid
// value within 00:00:00 to 24:00:00 (DuckDB's TIME range).
func toTime(src arrow.Array, base int) (arrow.Array, error) {
	var in []int64
	var unit arrow.TimeUnit
	switch dt := src.DataType().(type) {
	case *arrow.Time32Type:
		unit = dt.Unit
		for _, v := range valuesOf[arrow.Time32](src) {
			in = append(in, int64(v))
		}
	case *arrow.Time64Type:
		unit = dt.Unit
		for _, v := range valuesOf[arrow.Time64](src) {
			in = append(in, int64(v))
		}
	default:
		return nil, unsupported(src.DataType(), store.TypeTime)
	}
	out := make([]int64, len(in))
	for i, v := range in {
		us, ok := scaleMicros(v, unit)
		if (!ok || us < 0 || us > microsPerDay) && src.IsValid(i) {
			return nil, rowError(base+i+1, "%s value %d is not a time of day", src.DataType(), v)
		}
		out[i] = us
	}
	return withValues(arrow.FixedWidthTypes.Time64us, src, out), nil
}

// toTimestamp converts a timestamp array of any unit and zone to UTC microseconds.
func toTimestamp(src arrow.Array, t store.Type, base int) (arrow.Array, error) {
	dt, ok := src.DataType().(*arrow.TimestampType)
	if !ok {
		return nil, unsupported(src.DataType(), t)
	}
	if dt.Unit == arrow.Microsecond {
		return relabel(src, t.Arrow()), nil
	}
	in := valuesOf[arrow.Timestamp](src)
	out := make([]int64, len(in))
	for i, v := range in {
		us, ok := scaleMicros(int64(v), dt.Unit)
		if !ok && src.IsValid(i) {
			return nil, rowError(base+i+1, "%s value %d is out of range for %s", dt, v, t)
		}
		out[i] = us
	}
	return withValues(t.Arrow(), src, out), nil
}

// stringAt returns a reader of value i for every Arrow string and binary layout, and
// whether the layout is a string (utf8) one.
func stringAt(a arrow.Array) (get func(int) string, utf8, ok bool) {
	switch a := a.(type) {
	case *array.String:
		return a.Value, true, true
	case *array.LargeString:
		return a.Value, true, true
	case *array.StringView:
		return a.Value, true, true
	case *array.Binary:
		return a.ValueString, false, true
	case *array.LargeBinary:
		return a.ValueString, false, true
	case *array.BinaryView:
		return a.ValueString, false, true
	case *array.FixedSizeBinary:
		return func(i int) string { return string(a.Value(i)) }, false, true
	}
	return nil, false, false
}

// toBytes converts string layouts to VARCHAR and binary layouts to BLOB.
func toBytes(src arrow.Array, t store.Type, base int) (arrow.Array, error) {
	get, isUTF8, ok := stringAt(src)
	if !ok || isUTF8 != (t == store.TypeVarchar) {
		return nil, unsupported(src.DataType(), t)
	}
	if a, ok := narrowOffsets(src, t); ok {
		return a, nil
	}
	return viaBuilder(src, t, base, func(i int) (string, bool) { return get(i), true })
}

// narrowOffsets converts a large_utf8 or large_binary array (int64 offsets, as Parquet
// files written by pyarrow and pandas hold strings) to utf8 or binary (int32 offsets,
// Arrow columnar format, "Variable-size Binary Layout") by rewriting its offsets only:
// the values buffer and the validity bitmap are shared. It declines (false) an array
// that is a slice, whose values pass 2 GiB, or, for VARCHAR, whose values are not all
// valid UTF-8, which viaBuilder then converts value by value, locating the bad one. The
// values of a VARCHAR array are valid UTF-8 each when their bytes together are and no
// value starts inside a character (RFC 3629, section 3: continuation bytes are 0x80 to
// 0xBF).
func narrowOffsets(src arrow.Array, t store.Type) (arrow.Array, bool) {
	var offs []int64
	switch a := src.(type) {
	case *array.LargeString:
		offs = a.ValueOffsets()
	case *array.LargeBinary:
		offs = a.ValueOffsets()
	default:
		return nil, false
	}
	data := src.Data()
	values := data.Buffers()[2]
	first, last := offs[0], offs[len(offs)-1]
	if data.Offset() != 0 || last-first > math.MaxInt32 || values == nil || last > int64(values.Len()) {
		return nil, false
	}
	bytes := values.Bytes()[first:last]
	if t == store.TypeVarchar && !utf8.Valid(bytes) {
		return nil, false
	}
	narrow := make([]int32, len(offs))
	for i, o := range offs {
		narrow[i] = int32(o - first)
		if t == store.TypeVarchar && o < last && !utf8.RuneStart(bytes[o-first]) {
			return nil, false
		}
	}
	buf := memory.SliceBuffer(values, int(first), int(last-first))
	defer buf.Release()
	out := array.NewData(t.Arrow(), data.Len(), []*memory.Buffer{data.Buffers()[0],
		memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(narrow)), buf}, nil, data.NullN(), 0)
	defer out.Release()
	return array.MakeFromData(out), true
}

// materialize decodes a dictionary-encoded array into a plain array of its value type
// (string layouts become utf8, binary layouts binary); a slot is NULL where the index
// or the dictionary value is.
func materialize(d *array.Dictionary, base int) (arrow.Array, error) {
	dict := d.Dictionary()
	n := d.Len()
	valid := func(i int) bool { return d.IsValid(i) && dict.IsValid(d.GetValueIndex(i)) }
	if get, isUTF8, ok := stringAt(dict); ok {
		t := store.TypeBlob
		if isUTF8 {
			t = store.TypeVarchar
		}
		b, err := newColumnBuilder(t)
		if err != nil {
			return nil, err
		}
		for i := 0; i < n; i++ {
			if !valid(i) {
				b.appendNull()
				continue
			}
			if err := b.appendText(get(d.GetValueIndex(i))); err != nil {
				return nil, locate(err, base+i+1, 0, "")
			}
		}
		return b.finish(), nil
	}
	var v validity
	if dict.DataType().ID() == arrow.BOOL {
		bools := dict.(*array.Boolean)
		var vals bitmap
		for i := 0; i < n; i++ {
			ok := valid(i)
			vals.add(ok && bools.Value(d.GetValueIndex(i)))
			v.add(ok)
		}
		return newArray(dict.DataType(), n, []*memory.Buffer{v.buffer(), memory.NewBufferBytes(vals.bits)}, v.nulls), nil
	}
	fw, ok := dict.DataType().(arrow.FixedWidthDataType)
	if !ok || fw.BitWidth()%8 != 0 || len(dict.Data().Buffers()) != 2 {
		return nil, valueError(fmt.Sprintf("dictionary values of Arrow type %s are not supported", dict.DataType()))
	}
	w := fw.BitWidth() / 8
	var in []byte
	if buf := dict.Data().Buffers()[1]; buf != nil {
		in = buf.Bytes()[dict.Data().Offset()*w:]
	}
	out := make([]byte, n*w)
	for i := 0; i < n; i++ {
		ok := valid(i)
		if ok {
			k := d.GetValueIndex(i)
			copy(out[i*w:(i+1)*w], in[k*w:(k+1)*w])
		}
		v.add(ok)
	}
	return newArray(dict.DataType(), n, []*memory.Buffer{v.buffer(), memory.NewBufferBytes(out)}, v.nulls), nil
}
