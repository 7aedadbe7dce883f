package ingest

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/store"
)

// arrowDecoder decodes application/vnd.apache.arrow.stream bodies (Arrow IPC streaming
// format) and, with file set, application/vnd.apache.arrow.file bodies (Arrow IPC file
// format), all record batches of a body making one commit. Compressed buffers (LZ4
// frame, ZSTD) are read. The body is untrusted: its FlatBuffers metadata is checked
// before arrow-go reads it (verifyIPC), every batch is checked with array.ValidateFull,
// the reader may allocate at most arrowBudget bytes, and a panic inside arrow-go's
// reader is turned into CodeInvalid.
//
// Fields are matched to columns by name, exact first, then case-insensitively; an
// unknown field is CodeUnprocessable; a missing column is NULL. A field whose type
// equals the column's Arrow type is used as is (DECIMAL values are still checked
// against the precision, TIME values against the day). Otherwise only lossless or
// safe conversions are made, each value checked, a failure naming the 1-based row
// across all batches:
//
//   - any integer type → any integer column, if the value is in range;
//   - integers → FLOAT or DOUBLE, if the value is exactly representable;
//     float16 and float32 → FLOAT or DOUBLE; float64 → FLOAT rounds to nearest and
//     rejects values past FLOAT's range;
//   - decimal128(p1,s1) → DECIMAL(p,s) when rescaling is exact and the value fits p;
//   - utf8, large_utf8, utf8_view → VARCHAR; binary, large_binary, binary_view,
//     fixed_size_binary → BLOB; dictionary-encoded values as their value type;
//   - date64 → DATE (days, floored);
//   - time32[s|ms], time64[us|ns] → TIME; timestamp of any unit and zone →
//     TIMESTAMP or TIMESTAMPTZ. Both store UTC microseconds: the Arrow value is already
//     an instant (Arrow columnar format, "Timestamp"), a zone-less one is taken as UTC.
//     Seconds and milliseconds are multiplied (overflow rejected); nanoseconds are
//     floored to the microsecond, so sub-microsecond digits are dropped, the same rule
//     as for text with more than six fraction digits;
//   - a field of Arrow type null → NULL in any column.
//
// Anything else is CodeUnprocessable naming the column.
type arrowDecoder struct{ file bool }

// Infer implements Decoder: the columns of the body's Arrow schema (arrowSpecs).
func (d arrowDecoder) Infer(body []byte) (specs []store.ColumnSpec, err error) {
	defer recoverArrow(&err)
	schema, _, err := d.read(body, false)
	if err != nil {
		return nil, err
	}
	return arrowSpecs(schema)
}

// Decode implements Decoder.
func (d arrowDecoder) Decode(body []byte, s *store.Schema) (rec arrow.RecordBatch, err error) {
	defer recoverArrow(&err)
	schema, batches, err := d.read(body, true)
	if err != nil {
		return nil, err
	}
	defer releaseBatches(batches)
	// Rows of null-typed fields cost no bytes in the body, so the row count is bounded
	// by the memory the decoded record may take instead.
	limit := arrowBudget(len(body)) / rowBytes(s)
	var rows int64
	for _, b := range batches {
		if b.NumRows() < 0 || b.NumRows() > limit-rows {
			return nil, &store.Error{Code: store.CodeTooLarge,
				Message: fmt.Sprintf("the Arrow body holds more rows than the %d a body of %d bytes may decode to", limit, len(body))}
		}
		rows += b.NumRows()
	}
	n := int(rows)
	colOf := make([]int, schema.NumFields())
	inBody := make([]bool, len(s.Columns))
	for j, f := range schema.Fields() {
		_, ci := s.Column(f.Name)
		if ci < 0 {
			return nil, &store.Error{Code: store.CodeUnprocessable, Column: f.Name,
				Message: "unknown Arrow field " + quoteValue(f.Name) + ": the table has no such column"}
		}
		if inBody[ci] {
			return nil, &store.Error{Code: store.CodeInvalid, Column: f.Name,
				Message: "Arrow field " + quoteValue(f.Name) + " names column " + quoteValue(s.Columns[ci].Name) + " a second time"}
		}
		inBody[ci] = true
		colOf[j] = ci
	}
	cols := make([]arrow.Array, len(s.Columns))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for j := range schema.Fields() {
		c := s.Columns[colOf[j]]
		chunks := make([]arrow.Array, 0, len(batches))
		base := 0
		for _, b := range batches {
			a, err := convertArrow(b.Column(j), c.Type, base)
			if err != nil {
				releaseAll(chunks)
				return nil, locate(err, 0, 0, c.Name)
			}
			chunks = append(chunks, a)
			base += int(b.NumRows())
		}
		col, err := concatenate(chunks, c.Type.Arrow())
		releaseAll(chunks)
		if err != nil {
			return nil, err
		}
		cols[colOf[j]] = col
	}
	for ci, c := range s.Columns {
		if !inBody[ci] {
			cols[ci] = array.MakeArrayOfNull(goAllocator, c.Type.Arrow(), n)
		}
	}
	return array.NewRecordBatch(s.Arrow(), cols, int64(n)), nil
}

// rowBytes is a lower bound of the bytes one decoded row of s takes: the values of
// fixed-width columns (a byte for BOOLEAN) and the offsets of VARCHAR and BLOB.
func rowBytes(s *store.Schema) int64 {
	w := int64(1)
	for _, c := range s.Columns {
		if fw, ok := c.Type.Arrow().(arrow.FixedWidthDataType); ok {
			w += int64(max(fw.BitWidth()/8, 1))
		} else {
			w += 4
		}
	}
	return w
}

// goAllocator allocates Go memory, so that decoded records are garbage-collected.
var goAllocator = memory.NewGoAllocator()

// Budget for the memory the IPC reader may allocate for one body: a base plus a
// multiple of the body size, room for compressed buffers that expand.
const (
	arrowBaseBudget = 64 << 20
	arrowExpansion  = 64
)

// arrowBudget returns the allocation budget for a body of n bytes.
func arrowBudget(n int) int64 { return arrowBaseBudget + arrowExpansion*int64(n) }

// errArrowBudget is the panic value of budgetAllocator when the budget is spent.
var errArrowBudget = fmt.Errorf("arrow body expands past %d bytes plus %d times its size", arrowBaseBudget, arrowExpansion)

// budgetAllocator is the Go allocator with a cap on the bytes it hands out, so that a
// small IPC body cannot make the reader allocate without bound (a buffer's declared
// uncompressed length is trusted by arrow-go). Past the cap it panics with
// errArrowBudget and records that it did.
type budgetAllocator struct {
	left     atomic.Int64
	exceeded atomic.Bool
}

// newBudgetAllocator returns an allocator that hands out at most budget bytes.
func newBudgetAllocator(budget int64) *budgetAllocator {
	a := &budgetAllocator{}
	a.left.Store(budget)
	return a
}

// charge books n bytes, panicking with errArrowBudget once the budget is spent.
func (a *budgetAllocator) charge(n int) {
	if a.left.Add(-int64(n)) < 0 {
		a.exceeded.Store(true)
		panic(errArrowBudget)
	}
}

// Allocate implements memory.Allocator.
func (a *budgetAllocator) Allocate(size int) []byte {
	a.charge(size)
	return goAllocator.Allocate(size)
}

// Reallocate implements memory.Allocator.
func (a *budgetAllocator) Reallocate(size int, b []byte) []byte {
	a.charge(size - len(b))
	return goAllocator.Reallocate(size, b)
}

// Free implements memory.Allocator; Go memory is left to the garbage collector.
func (a *budgetAllocator) Free(b []byte) { goAllocator.Free(b) }

// read returns the schema of an IPC body and, with batches set, all its record
// batches, each retained and validated.
func (d arrowDecoder) read(body []byte, withBatches bool) (*arrow.Schema, []arrow.RecordBatch, error) {
	if err := verifyIPC(body, d.file); err != nil {
		return nil, nil, err
	}
	mem := newBudgetAllocator(arrowBudget(len(body)))
	opts := []ipc.Option{
		ipc.WithAllocator(mem),
		ipc.WithBodySizeLimit(int64(len(body))),
		ipc.WithMetadataSizeLimit(int64(len(body))),
	}
	format := "stream"
	if d.file {
		format = "file"
	}
	fail := func(err error) error {
		if mem.exceeded.Load() {
			return &store.Error{Code: store.CodeTooLarge, Message: "the Arrow IPC body is too large once decompressed", Err: err}
		}
		return &store.Error{Code: store.CodeInvalid, Message: "the body is not a valid Arrow IPC " + format + ": " + err.Error()}
	}
	var batches []arrow.RecordBatch
	keep := func(rec arrow.RecordBatch) error {
		for j, col := range rec.Columns() {
			if col.DataType().ID() == arrow.NULL {
				continue // no buffers to check; arrow-go's validator wants one the IPC reader does not make
			}
			if err := array.ValidateFull(col); err != nil {
				return &store.Error{Code: store.CodeInvalid, Column: rec.Schema().Field(j).Name,
					Message: "Arrow record batch " + fmt.Sprint(len(batches)+1) + " is malformed: " + err.Error()}
			}
		}
		batches = append(batches, rec)
		return nil
	}
	if d.file {
		r, err := ipc.NewFileReader(bytes.NewReader(body), opts...)
		if err != nil {
			return nil, nil, fail(err)
		}
		defer r.Close()
		for i := 0; withBatches && i < r.NumRecords(); i++ {
			rec, err := r.RecordBatchAt(i)
			if err != nil {
				releaseBatches(batches)
				return nil, nil, fail(err)
			}
			if err := keep(rec); err != nil {
				rec.Release()
				releaseBatches(batches)
				return nil, nil, err
			}
		}
		return r.Schema(), batches, nil
	}
	// ipc.NewReader ignores the size limits (arrow-go v18.8.0) and would allocate
	// whatever length a message header claims; its message reader honours them.
	r, err := ipc.NewReaderFromMessageReader(ipc.NewMessageReader(bytes.NewReader(body), opts...), opts...)
	if err != nil {
		return nil, nil, fail(err)
	}
	defer r.Release()
	for withBatches && r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		if err := keep(rec); err != nil {
			rec.Release()
			releaseBatches(batches)
			return nil, nil, err
		}
	}
	if err := r.Err(); err != nil {
		releaseBatches(batches)
		return nil, nil, fail(err)
	}
	return r.Schema(), batches, nil
}

// recoverArrow turns a panic while reading an untrusted IPC body into a CodeInvalid
// error (or CodeTooLarge for an exhausted budgetAllocator): arrow-go's reader indexes
// buffers as the body's metadata describes them, and validation only follows reading.
func recoverArrow(err *error) {
	if r := recover(); r != nil {
		if r == errArrowBudget {
			*err = &store.Error{Code: store.CodeTooLarge, Message: "the Arrow IPC body is too large once decompressed"}
			return
		}
		*err = &store.Error{Code: store.CodeInvalid, Message: "the body is not a valid Arrow IPC body", Err: fmt.Errorf("arrow reader panic: %v", r)}
	}
}

// releaseBatches releases every batch.
func releaseBatches(bs []arrow.RecordBatch) {
	for _, b := range bs {
		b.Release()
	}
}

// releaseAll releases every array.
func releaseAll(as []arrow.Array) {
	for _, a := range as {
		a.Release()
	}
}

// concatenate joins converted chunks into one array of type dt (a new reference).
func concatenate(chunks []arrow.Array, dt arrow.DataType) (arrow.Array, error) {
	switch len(chunks) {
	case 0:
		return array.MakeArrayOfNull(goAllocator, dt, 0), nil
	case 1:
		chunks[0].Retain()
		return chunks[0], nil
	}
	a, err := array.Concatenate(chunks, goAllocator)
	if err != nil {
		return nil, &store.Error{Code: store.CodeTooLarge, Message: "cannot join the Arrow record batches", Err: err}
	}
	return a, nil
}

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
	if d, ok := src.(*array.Dictionary); ok {
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
	if p, s, ok := t.Decimal(); ok {
		return toDecimal(src, t, p, s, base)
	}
	if t == store.TypeTime {
		return toTime(src, base)
	}
	if arrow.TypeEqual(src.DataType(), want) {
		src.Retain()
		return src, nil
	}
	switch t {
	case store.TypeTinyint:
		return toInteger[int8](src, t, base)
	case store.TypeSmallint:
		return toInteger[int16](src, t, base)
	case store.TypeInteger:
		return toInteger[int32](src, t, base)
	case store.TypeBigint:
		return toInteger[int64](src, t, base)
	case store.TypeUTinyint:
		return toInteger[uint8](src, t, base)
	case store.TypeUSmallint:
		return toInteger[uint16](src, t, base)
	case store.TypeUInteger:
		return toInteger[uint32](src, t, base)
	case store.TypeUBigint:
		return toInteger[uint64](src, t, base)
	case store.TypeFloat:
		return toFloat[float32](src, t, base)
	case store.TypeDouble:
		return toFloat[float64](src, t, base)
	case store.TypeVarchar, store.TypeBlob:
		return toBytes(src, t, base)
	case store.TypeDate:
		return toDate(src, base)
	case store.TypeTimestamp, store.TypeTimestampTZ:
		return toTimestamp(src, t, base)
	}
	return nil, unsupported(src.DataType(), t)
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
	b, err := newColumnBuilder(t)
	if err != nil {
		return nil, err
	}
	for i := 0; i < src.Len(); i++ {
		if src.IsNull(i) {
			b.appendNull()
			continue
		}
		if err := b.appendText(get(i)); err != nil {
			return nil, locate(err, base+i+1, 0, "")
		}
	}
	return b.finish(), nil
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
