package ingest

import (
	"encoding/base64"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/store"
)

// columnBuilder accumulates the values of one table column, read from CSV fields or
// JSON values, into Go memory laid out as the column's Arrow type (store.Type.Arrow,
// Arrow columnar format), so that finish wraps the memory without copying and the
// record stays garbage-collected. Errors are CodeUnprocessable *store.Error values
// without a location; the decoder adds Row, Line and Column.
type columnBuilder interface {
	appendNull()
	// appendText appends a CSV field. The CSV decoder turns empty fields into NULL
	// itself and calls appendText("") only for a quoted "" in a VARCHAR column.
	// Fields are trimmed of spaces and tabs for every type but VARCHAR and BLOB.
	appendText(s string) error
	// appendJSON appends a JSON value (RFC 8259); null is NULL for every type.
	appendJSON(v jsonValue) error
	// finish returns the column as an Arrow array; the builder is not used after.
	finish() arrow.Array
}

// newColumnBuilder returns the builder for a column of type t. The error is a
// CodeInternal *store.Error for a type store does not define.
func newColumnBuilder(t store.Type) (columnBuilder, error) {
	dt := t.Arrow()
	switch t {
	case store.TypeBoolean:
		return &boolBuilder{}, nil
	case store.TypeTinyint:
		return &intBuilder[int8]{fixedBuilder[int8]{dt: dt}, t, intRange{math.MinInt8, math.MaxInt8}}, nil
	case store.TypeSmallint:
		return &intBuilder[int16]{fixedBuilder[int16]{dt: dt}, t, intRange{math.MinInt16, math.MaxInt16}}, nil
	case store.TypeInteger:
		return &intBuilder[int32]{fixedBuilder[int32]{dt: dt}, t, intRange{math.MinInt32, math.MaxInt32}}, nil
	case store.TypeBigint:
		return &intBuilder[int64]{fixedBuilder[int64]{dt: dt}, t, intRange{math.MinInt64, math.MaxInt64}}, nil
	case store.TypeUTinyint:
		return &intBuilder[uint8]{fixedBuilder[uint8]{dt: dt}, t, intRange{0, math.MaxUint8}}, nil
	case store.TypeUSmallint:
		return &intBuilder[uint16]{fixedBuilder[uint16]{dt: dt}, t, intRange{0, math.MaxUint16}}, nil
	case store.TypeUInteger:
		return &intBuilder[uint32]{fixedBuilder[uint32]{dt: dt}, t, intRange{0, math.MaxUint32}}, nil
	case store.TypeUBigint:
		return &intBuilder[uint64]{fixedBuilder[uint64]{dt: dt}, t, intRange{0, math.MaxUint64}}, nil
	case store.TypeFloat:
		return &floatBuilder[float32]{fixedBuilder[float32]{dt: dt}, t, 32}, nil
	case store.TypeDouble:
		return &floatBuilder[float64]{fixedBuilder[float64]{dt: dt}, t, 64}, nil
	case store.TypeVarchar:
		return &binaryBuilder{dt: dt, offsets: []int32{0}}, nil
	case store.TypeBlob:
		return &binaryBuilder{dt: dt, offsets: []int32{0}, blob: true}, nil
	case store.TypeDate:
		return &textBuilder[int32]{fixedBuilder: fixedBuilder[int32]{dt: dt}, typ: store.TypeDate, form: "YYYY-MM-DD", parse: parseDate}, nil
	case store.TypeTime:
		return &textBuilder[int64]{fixedBuilder: fixedBuilder[int64]{dt: dt}, typ: store.TypeTime, form: "HH:MM:SS[.ffffff]", parse: parseTime}, nil
	case store.TypeTimestamp, store.TypeTimestampTZ, store.TypeTimestampS, store.TypeTimestampMS, store.TypeTimestampNS:
		return &timestampBuilder{fixedBuilder[int64]{dt: dt}, t, dt.(*arrow.TimestampType).Unit}, nil
	case store.TypeHugeint, store.TypeUHugeint:
		return &hugeintBuilder{fixedBuilder[decimal128.Num]{dt: dt}, t}, nil
	case store.TypeUUID:
		return &uuidBuilder{binaryBuilder{dt: dt, offsets: []int32{0}}}, nil
	case store.TypeJSON:
		return &jsonTextBuilder{binaryBuilder{dt: dt, offsets: []int32{0}}}, nil
	case store.TypeInterval:
		return &intervalBuilder{fixedBuilder[arrow.MonthDayNanoInterval]{dt: dt}}, nil
	}
	if p, s, ok := t.Decimal(); ok {
		return &decimalBuilder{fixedBuilder[decimal128.Num]{dt: dt}, t, p, s}, nil
	}
	return newNestedBuilder(t)
}

// newColumnBuilders returns one builder per column of s, in column order, for a body of
// n bytes: the NULLs of fixed-size lists nested in lists and maps, which take n slots each
// from a few bytes of text, share one budget of the text decoders' memory (slotBudget).
func newColumnBuilders(s *store.Schema, n int) ([]columnBuilder, error) {
	budget := &slotBudget{left: (textBaseBudget + textExpansion*int64(n)) / 4}
	bs := make([]columnBuilder, len(s.Columns))
	for i, c := range s.Columns {
		b, err := newColumnBuilder(c.Type)
		if err != nil {
			return nil, err
		}
		budget.attach(b)
		bs[i] = b
	}
	return bs, nil
}

// finishRecord wraps finished builders into one record with schema exactly s.Arrow().
func finishRecord(s *store.Schema, bs []columnBuilder, rows int) arrow.RecordBatch {
	cols := make([]arrow.Array, len(bs))
	for i, b := range bs {
		cols[i] = b.finish()
	}
	return array.NewRecordBatch(s.Arrow(), cols, int64(rows))
}

// bitmap is an Arrow bitmap under construction (Arrow columnar format, "Validity
// bitmaps": bit i of byte i/8, least significant bit first).
type bitmap struct {
	bits []byte
	n    int
}

// add appends one bit.
func (b *bitmap) add(set bool) {
	if b.n&7 == 0 {
		b.bits = append(b.bits, 0)
	}
	if set {
		b.bits[b.n>>3] |= 1 << (b.n & 7)
	}
	b.n++
}

// validity is the validity bitmap of a column under construction, with its slot and null
// counts. Until the first null every slot is valid and no bitmap is kept: buffer is nil
// without nulls, as the Arrow format allows, so a column without nulls allocates none.
type validity struct {
	n     int
	nulls int
	bits  bitmap // every slot's bit, from the first null on
}

// add appends one slot's validity.
func (v *validity) add(valid bool) {
	switch {
	case !valid && v.nulls == 0:
		v.bits.bits = make([]byte, 0, v.n/8+1)
		for range v.n {
			v.bits.add(true)
		}
		fallthrough
	case v.nulls > 0:
		v.bits.add(valid)
	}
	if !valid {
		v.nulls++
	}
	v.n++
}

// buffer returns the bitmap as an Arrow buffer, nil without nulls.
func (v *validity) buffer() *memory.Buffer {
	if v.nulls == 0 {
		return nil
	}
	return memory.NewBufferBytes(v.bits.bits)
}

// newArray wraps Go-owned buffers as an array of type dt.
func newArray(dt arrow.DataType, n int, buffers []*memory.Buffer, nulls int) arrow.Array {
	data := array.NewData(dt, n, buffers, nil, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// fixedBuilder accumulates a fixed-width column: one T per slot, Arrow's values buffer.
type fixedBuilder[T arrow.FixedWidthType] struct {
	dt    arrow.DataType
	vals  []T
	valid validity
}

// push appends a valid value.
func (b *fixedBuilder[T]) push(v T) {
	b.vals = append(b.vals, v)
	b.valid.add(true)
}

func (b *fixedBuilder[T]) appendNull() {
	var zero T
	b.vals = append(b.vals, zero)
	b.valid.add(false)
}

// finish wraps the values and validity as an array of type dt.
func (b *fixedBuilder[T]) finish() arrow.Array {
	return newArray(b.dt, len(b.vals), []*memory.Buffer{b.valid.buffer(), memory.NewBufferBytes(arrow.GetBytes(b.vals))}, b.valid.nulls)
}

// appendParsedJSON appends the JSON value v to b: NULL for null, the value parse reads from
// its text for one of kinds, and for any other kind the error that v is not a typ.
func appendParsedJSON(b interface{ appendNull() }, v jsonValue, typ store.Type, parse func(string, shown) error, kinds ...jsonKind) error {
	switch {
	case v.kind == jsonNull:
		b.appendNull()
		return nil
	case slices.Contains(kinds, v.kind):
		return parse(v.text, v.shown())
	}
	return jsonTypeError(v, typ)
}

// openNestedJSON settles the JSON values of a nested column that hold no members to
// read: it appends NULL for null, and refuses a kind other than want as not a typ. done is
// false when v is a want whose members the caller reads.
func openNestedJSON(b interface{ appendNull() }, v jsonValue, want jsonKind, typ store.Type) (done bool, err error) {
	switch v.kind {
	case jsonNull:
		b.appendNull()
		return true, nil
	case want:
		return false, nil
	}
	return true, jsonTypeError(v, typ)
}

// intBuilder builds TINYINT … UBIGINT columns. Text and JSON numbers (and JSON strings
// holding numbers, as the protobuf JSON mapping writes 64-bit integers) are read
// exactly by parseInteger, never through float64, and must be whole and in range.
type intBuilder[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64] struct {
	fixedBuilder[T]
	typ store.Type
	rng intRange
}

func (b *intBuilder[T]) appendText(s string) error { return b.parse(trimSpace(s), shown{text: s}) }

func (b *intBuilder[T]) appendJSON(v jsonValue) error {
	return appendParsedJSON(b, v, b.typ, b.parse, jsonNumber, jsonString)
}

// parse appends the integer s, or returns the error for it, showing in.
func (b *intBuilder[T]) parse(s string, in shown) error {
	v, res := parseInteger(s, b.rng)
	switch res {
	case integerOK:
		b.push(T(v))
		return nil
	case integerFractional:
		return valueError("value " + in.String() + " is not a whole number, as " + string(b.typ) + " needs")
	case integerRange:
		return valueError("value " + in.String() + " is out of range for " + string(b.typ))
	}
	return notA(in, b.typ)
}

// floatBuilder builds FLOAT and DOUBLE columns, rounding to the nearest value of the
// type (strconv.ParseFloat, IEEE 754 round half to even); a magnitude past the type's
// largest finite value is rejected. JSON strings "NaN", "Infinity" and "-Infinity"
// (the protobuf JSON mapping's spellings) carry the non-finite values.
type floatBuilder[T float32 | float64] struct {
	fixedBuilder[T]
	typ     store.Type
	bitSize int
}

func (b *floatBuilder[T]) appendText(s string) error { return b.parse(trimSpace(s), shown{text: s}) }

func (b *floatBuilder[T]) appendJSON(v jsonValue) error {
	return appendParsedJSON(b, v, b.typ, b.parse, jsonNumber, jsonString)
}

// parse appends the number s, or returns the error for it, showing in.
func (b *floatBuilder[T]) parse(s string, in shown) error {
	f, ok, finite := parseFloat(s, b.bitSize)
	switch {
	case !ok:
		return notA(in, b.typ)
	case !finite:
		return valueError("value " + in.String() + " is out of range for " + string(b.typ))
	}
	b.push(T(f))
	return nil
}

// decimalBuilder builds DECIMAL(p,s) columns from the exact number text (parseDecimal):
// digits past the scale are rounded half away from zero, as DuckDB does.
type decimalBuilder struct {
	fixedBuilder[decimal128.Num]
	typ              store.Type
	precision, scale int32
}

func (b *decimalBuilder) appendText(s string) error {
	return b.parse(trimSpace(s), shown{text: s})
}

func (b *decimalBuilder) appendJSON(v jsonValue) error {
	return appendParsedJSON(b, v, b.typ, b.parse, jsonNumber, jsonString)
}

// parse appends the decimal s, or returns the error for it, showing in.
func (b *decimalBuilder) parse(s string, in shown) error {
	v, ok, inRange := parseDecimal(s, b.precision, b.scale)
	switch {
	case !ok:
		return notA(in, b.typ)
	case !inRange:
		return valueError("value " + in.String() + " is out of range for " + string(b.typ))
	}
	b.push(v)
	return nil
}

// boolBuilder builds BOOLEAN columns: CSV text by parseBool, JSON true and false only.
type boolBuilder struct {
	vals  bitmap
	valid validity
}

func (b *boolBuilder) appendNull() {
	b.vals.add(false)
	b.valid.add(false)
}

func (b *boolBuilder) appendText(s string) error {
	v, ok := parseBool(trimSpace(s))
	if !ok {
		return notA(shown{text: s}, store.TypeBoolean)
	}
	b.vals.add(v)
	b.valid.add(true)
	return nil
}

func (b *boolBuilder) appendJSON(v jsonValue) error {
	switch v.kind {
	case jsonNull:
		b.appendNull()
		return nil
	case jsonTrue, jsonFalse:
		b.vals.add(v.kind == jsonTrue)
		b.valid.add(true)
		return nil
	}
	return jsonTypeError(v, store.TypeBoolean)
}

func (b *boolBuilder) finish() arrow.Array {
	return newArray(arrow.FixedWidthTypes.Boolean, b.vals.n, []*memory.Buffer{b.valid.buffer(), memory.NewBufferBytes(b.vals.bits)}, b.valid.nulls)
}

// binaryBuilder builds VARCHAR (utf8) and BLOB (binary) columns. VARCHAR takes CSV text
// that is valid UTF-8, JSON strings, and JSON objects and arrays as their JSON text;
// JSON numbers and booleans are rejected rather than turned into text. BLOB takes CSV
// text as its raw bytes and JSON strings as base64 (RFC 4648, section 4, with or
// without padding).
type binaryBuilder struct {
	dt      arrow.DataType
	blob    bool
	offsets []int32
	data    []byte
	valid   validity
}

func (b *binaryBuilder) appendNull() {
	b.offsets = append(b.offsets, int32(len(b.data)))
	b.valid.add(false)
}

// push appends a valid value; past 2 GiB of data (the reach of utf8 and binary
// int32 offsets) it returns a CodeTooLarge error.
func (b *binaryBuilder) push(s string) error {
	if len(b.data)+len(s) > math.MaxInt32 {
		return &store.Error{Code: store.CodeTooLarge, Message: "column holds more than 2 GiB of data"}
	}
	b.data = append(b.data, s...)
	b.offsets = append(b.offsets, int32(len(b.data)))
	b.valid.add(true)
	return nil
}

func (b *binaryBuilder) appendText(s string) error {
	if !b.blob && !utf8.ValidString(s) {
		return valueError("value " + quoteValue(s) + " is not valid UTF-8, as VARCHAR needs")
	}
	return b.push(s)
}

func (b *binaryBuilder) appendJSON(v jsonValue) error {
	switch {
	case v.kind == jsonNull:
		b.appendNull()
		return nil
	case v.kind == jsonString && b.blob:
		raw, err := base64.StdEncoding.DecodeString(v.text)
		if err != nil {
			raw, err = base64.RawStdEncoding.DecodeString(v.text)
		}
		if err != nil {
			return valueError("value " + v.shown().String() + " is not base64, as BLOB needs in JSON")
		}
		return b.push(string(raw))
	case v.kind == jsonString || (!b.blob && (v.kind == jsonObject || v.kind == jsonArray)):
		return b.push(v.text)
	case v.kind == jsonNumber && !b.blob:
		return valueError("JSON number " + v.shown().String() + " cannot be stored in a VARCHAR column; send it as a JSON string")
	}
	if b.blob {
		return jsonTypeError(v, store.TypeBlob)
	}
	return jsonTypeError(v, store.TypeVarchar)
}

func (b *binaryBuilder) finish() arrow.Array {
	n := len(b.offsets) - 1
	return newArray(b.dt, n, []*memory.Buffer{b.valid.buffer(), memory.NewBufferBytes(arrow.GetBytes(b.offsets)), memory.NewBufferBytes(b.data)}, b.valid.nulls)
}

// textBuilder builds a fixed-width column of values written as JSON strings or CSV
// text and read by parse: DATE (date32, days since 1970-01-01, "YYYY-MM-DD") and TIME
// (time64[us], microseconds since midnight, "HH:MM[:SS[.ffffff]]").
type textBuilder[T int32 | int64] struct {
	fixedBuilder[T]
	typ store.Type
	// form is the accepted text form, for error messages.
	form  string
	parse func(string) (T, bool)
}

func (b *textBuilder[T]) appendText(s string) error { return b.append(trimSpace(s), shown{text: s}) }

func (b *textBuilder[T]) appendJSON(v jsonValue) error {
	switch v.kind {
	case jsonNull:
		b.appendNull()
		return nil
	case jsonString:
		return b.append(v.text, v.shown())
	}
	return jsonTypeError(v, b.typ)
}

// append appends the value s, or returns the error for it, showing in.
func (b *textBuilder[T]) append(s string, in shown) error {
	v, ok := b.parse(s)
	if !ok {
		return valueError("value " + in.String() + " is not a " + string(b.typ) + " (" + b.form + ")")
	}
	b.push(v)
	return nil
}

// timestampBuilder builds TIMESTAMP, TIMESTAMPTZ (timestamp[us], UTC) and TIMESTAMP_S,
// _MS, _NS (timestamp[s], [ms], [ns]) columns from the ISO 8601 forms parseTimestamp
// reads, to the microsecond: seconds and milliseconds are floored, nanoseconds are the
// microseconds × 1000, TIMESTAMP_NS's range (years 1677 to 2262) checked. All store the
// UTC instant: a value with an offset is converted to UTC, one without is taken as UTC.
type timestampBuilder struct {
	fixedBuilder[int64]
	typ  store.Type
	unit arrow.TimeUnit
}

func (b *timestampBuilder) appendText(s string) error {
	return b.parse(trimSpace(s), shown{text: s})
}

func (b *timestampBuilder) appendJSON(v jsonValue) error {
	return appendParsedJSON(b, v, b.typ, b.parse, jsonString)
}

// parse appends the timestamp s, or returns the error for it, showing in.
func (b *timestampBuilder) parse(s string, in shown) error {
	t, _, ok := parseTimestamp(s)
	if !ok {
		return valueError("value " + in.String() + " is not a " + string(b.typ) + " (YYYY-MM-DD[ HH:MM:SS[.ffffff]][±HH:MM], years 0000 to 9999 in UTC)")
	}
	switch b.unit {
	case arrow.Second:
		t = floorDiv(t, microsPerSecond)
	case arrow.Millisecond:
		t = floorDiv(t, 1000)
	case arrow.Nanosecond:
		if t > math.MaxInt64/1000 || t < math.MinInt64/1000 {
			return valueError("value " + in.String() + " is out of range for " + string(b.typ))
		}
		t *= 1000
	}
	b.push(t)
	return nil
}

// notA is the error for a value that does not parse as type t at all.
func notA(in shown, t store.Type) error {
	article := "a "
	switch t[0] {
	case 'A', 'E', 'I', 'O':
		article = "an "
	}
	return valueError("value " + in.String() + " is not " + article + string(t))
}

// jsonTypeError is the error for a JSON value whose kind a column type never takes.
func jsonTypeError(v jsonValue, t store.Type) error {
	what := "JSON " + v.kind.String()
	if v.kind != jsonObject && v.kind != jsonArray {
		what += " " + v.shown().String()
	}
	return valueError(what + " cannot be stored in a " + string(t) + " column")
}
