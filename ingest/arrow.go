package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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
//   - decimal(p1,s1) of any width → DECIMAL(p,s) when rescaling is exact and the value
//     fits p;
//   - utf8, large_utf8, utf8_view → VARCHAR; binary, large_binary, binary_view,
//     fixed_size_binary → BLOB; dictionary-encoded values as their value type;
//   - date64 → DATE (days, floored);
//   - time32[s|ms], time64[us|ns] → TIME; timestamp of any unit and zone →
//     TIMESTAMP or TIMESTAMPTZ. Both store UTC microseconds: the Arrow value is already
//     an instant (Arrow columnar format, "Timestamp"), a zone-less one is taken as UTC.
//     Seconds and milliseconds are multiplied (overflow rejected); nanoseconds are
//     floored to the microsecond, so sub-microsecond digits are dropped, the same rule
//     as for text with more than six fraction digits;
//   - a field of Arrow type null → NULL in any column;
//   - the other column types by arrow_scalar.go (HUGEINT, UHUGEINT, UUID, JSON, ENUM,
//     INTERVAL, TIMESTAMP_S/_MS/_NS, decimal32/64/256 → DECIMAL) and arrow_nested.go
//     (lists, structs, maps, unions; dictionaries and run-end encoding of any value
//     type), as docs/design.md, "Column types" describes; nested values are bounded by
//     checkExpansion before they are built.
//
// Anything else is CodeUnprocessable naming the column (and the path inside a value).
type arrowDecoder struct{ file bool }

// Infer implements Decoder: the columns of the body's Arrow schema (arrowSpecs).
func (d arrowDecoder) Infer(body []byte) (specs []store.ColumnSpec, err error) {
	defer recoverArrow(&err, nil)
	schema, _, err := d.read(body, false, nil)
	if err != nil {
		return nil, err
	}
	return arrowSpecs(schema)
}

// Decode implements Decoder.
func (d arrowDecoder) Decode(body []byte, s *store.Schema) (arrow.RecordBatch, error) {
	return d.decodeLeased(body, s, nil)
}

// decodeLeased implements leasedDecoder.
func (d arrowDecoder) decodeLeased(body []byte, s *store.Schema, l *lease) (rec arrow.RecordBatch, err error) {
	defer recoverArrow(&err, l)
	schema, batches, err := d.read(body, true, l)
	if err != nil {
		return nil, err
	}
	defer releaseBatches(batches)
	return shapeBatches(schema, batches, len(body), s)
}

// shapeBatches makes one record shaped by s.Arrow() of the batches a body of bodySize
// bytes decoded to, all of the given schema, by the rules of arrowDecoder: fields
// matched to columns by name, each column converted by convertArrow, missing columns
// NULL. The record's rows and nested values are bounded by arrowBudget(bodySize).
func shapeBatches(schema *arrow.Schema, batches []arrow.RecordBatch, bodySize int, s *store.Schema) (arrow.RecordBatch, error) {
	// Rows of null-typed fields cost no bytes in the body, so the row count is bounded
	// by the memory the decoded record may take instead.
	limit := arrowBudget(bodySize) / rowBytes(s)
	var rows int64
	for _, b := range batches {
		if b.NumRows() < 0 || b.NumRows() > limit-rows {
			return nil, tooManyRows(limit, bodySize)
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
	// Nested values may repeat (overlapping list views, dictionaries, runs) far past the
	// body's size; bound them as the rows are (8 bytes a slot).
	if err := checkExpansion(batches, colOf, s, arrowBudget(bodySize)/8); err != nil {
		return nil, err
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
				return nil, inside(err, c.Name)
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

// tooManyRows is the CodeTooLarge error of a body of bodySize bytes holding more than
// limit rows.
func tooManyRows(limit int64, bodySize int) error {
	return &store.Error{Code: store.CodeTooLarge,
		Message: fmt.Sprintf("the body holds more rows than the %d a body of %d bytes may decode to", limit, bodySize)}
}

// rowBytes is a lower bound of the bytes one decoded row of s takes (slotBytes of each
// column's Arrow type).
func rowBytes(s *store.Schema) int64 {
	w := int64(1)
	for _, c := range s.Columns {
		w = addSat(w, slotBytes(c.Type.Arrow()))
	}
	return w
}

// slotBytes is a lower bound of the bytes one value of dt takes: a fixed width's values
// (a byte for BOOLEAN), the offsets of variable-length layouts, a dictionary's index,
// every member of a struct or sparse union (and its type code), and n elements of a
// fixed-size list, which a NULL takes too.
func slotBytes(dt arrow.DataType) int64 {
	switch dt := dt.(type) {
	case *arrow.FixedSizeListType:
		return max(1, int64(dt.Len())*slotBytes(dt.Elem()))
	case *arrow.StructType, *arrow.SparseUnionType:
		w := int64(0)
		if dt.ID() == arrow.SPARSE_UNION {
			w = 1
		}
		for _, f := range dt.(arrow.NestedType).Fields() {
			w = addSat(w, slotBytes(f.Type))
		}
		return max(w, 1)
	case *arrow.DictionaryType:
		return slotBytes(dt.IndexType)
	case arrow.FixedWidthDataType:
		return int64(max(dt.BitWidth()/8, 1))
	}
	return 4
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

// errLeaseRefused is the panic value of budgetAllocator when the request's lease of the
// MemoryBudget could not grow.
var errLeaseRefused = errors.New("the ingest memory budget is spent")

// budgetAllocator is the Go allocator with a cap on the bytes it hands out, so that a
// small IPC body cannot make the reader allocate without bound (a buffer's declared
// uncompressed length is trusted by arrow-go), each allocation also booked to the
// request's lease of the server's MemoryBudget. Past the cap it panics with
// errArrowBudget, and when the lease is refused with errLeaseRefused, recording which.
type budgetAllocator struct {
	left     atomic.Int64
	exceeded atomic.Bool
	lease    *lease
	refused  atomic.Bool
}

// newBudgetAllocator returns an allocator that hands out at most budget bytes, booked
// to l (nil for none).
func newBudgetAllocator(budget int64, l *lease) *budgetAllocator {
	a := &budgetAllocator{lease: l}
	a.left.Store(budget)
	return a
}

// charge books n bytes, panicking with errArrowBudget once the budget is spent and with
// errLeaseRefused when the lease is.
func (a *budgetAllocator) charge(n int) {
	if a.left.Add(-int64(n)) < 0 {
		a.exceeded.Store(true)
		panic(errArrowBudget)
	}
	if !a.lease.allocate(int64(n)) {
		a.refused.Store(true)
		panic(errLeaseRefused)
	}
}

// failure is the error of a read that failed with err: CodeTooLarge (tooLarge the
// message) when a's budget was spent, the lease's exhausted error when it was refused,
// else invalid.
func (a *budgetAllocator) failure(err error, tooLarge string, invalid error) error {
	switch {
	case a.exceeded.Load():
		return &store.Error{Code: store.CodeTooLarge, Message: tooLarge, Err: err}
	case a.refused.Load():
		return a.lease.refusal()
	}
	return invalid
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
func (d arrowDecoder) read(body []byte, withBatches bool, l *lease) (*arrow.Schema, []arrow.RecordBatch, error) {
	if err := verifyIPC(body, d.file); err != nil {
		return nil, nil, err
	}
	if err := l.prepay(int64(len(body))); err != nil {
		return nil, nil, err
	}
	mem := newBudgetAllocator(arrowBudget(len(body)), l)
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
		return mem.failure(err, "the Arrow IPC body is too large once decompressed",
			&store.Error{Code: store.CodeInvalid, Message: "the body is not a valid Arrow IPC " + format + ": " + err.Error()})
	}
	var batches []arrow.RecordBatch
	keep := func(rec arrow.RecordBatch) error {
		if err := validateColumns(rec, "Arrow record batch "+fmt.Sprint(len(batches)+1)); err != nil {
			return err
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

// validateColumns checks every column of rec with array.ValidateFull (offsets, sizes,
// UTF-8 of strings), naming the column and what (the batch) in a CodeInvalid error.
func validateColumns(rec arrow.RecordBatch, what string) error {
	for j, col := range rec.Columns() {
		if col.DataType().ID() == arrow.NULL {
			continue // no buffers to check; arrow-go's validator wants one the IPC reader does not make
		}
		if err := array.ValidateFull(col); err != nil {
			return &store.Error{Code: store.CodeInvalid, Column: rec.Schema().Field(j).Name,
				Message: what + " is malformed: " + err.Error()}
		}
	}
	return nil
}

// recoverArrow turns a panic while reading an untrusted IPC body into an error
// (recoverReader): arrow-go's reader indexes buffers as the body's metadata describes
// them, and validation only follows reading.
func recoverArrow(err *error, l *lease) {
	recoverReader(recover(), err, l, "the Arrow IPC body is too large once decompressed", "the body is not a valid Arrow IPC body")
}

// recoverReader sets *err for r, a recovered panic of a reader allocating through a
// budgetAllocator booked to l (nil when none): CodeTooLarge saying tooLarge for an
// exhausted budgetAllocator, l's refusal for a refused lease, else CodeInvalid saying
// invalid. A nil r leaves *err as it is.
func recoverReader(r any, err *error, l *lease, tooLarge, invalid string) {
	switch {
	case r == nil:
	case r == errArrowBudget:
		*err = &store.Error{Code: store.CodeTooLarge, Message: tooLarge}
	case r == errLeaseRefused:
		*err = l.refusal()
	default:
		*err = &store.Error{Code: store.CodeInvalid, Message: invalid, Err: fmt.Errorf("reader panic: %v", r)}
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
