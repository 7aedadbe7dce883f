package ingest

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/ducktail/ducktail/store"
)

const (
	arrowStreamType = "application/vnd.apache.arrow.stream"
	arrowFileType   = "application/vnd.apache.arrow.file"
)

// ipcBody writes records as an Arrow IPC stream or file.
func ipcBody(t testing.TB, file bool, schema *arrow.Schema, recs []arrow.RecordBatch, opts ...ipc.Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	opts = append(opts, ipc.WithSchema(schema))
	var w interface {
		Write(arrow.RecordBatch) error
		Close() error
	}
	if file {
		fw, err := ipc.NewFileWriter(&buf, opts...)
		if err != nil {
			t.Fatal(err)
		}
		w = fw
	} else {
		w = ipc.NewWriter(&buf, opts...)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// batch builds a one-column record from an array.
func batch(name string, a arrow.Array) arrow.RecordBatch {
	s := arrow.NewSchema([]arrow.Field{{Name: name, Type: a.DataType(), Nullable: true}}, nil)
	return array.NewRecordBatch(s, []arrow.Array{a}, int64(a.Len()))
}

// fromJSON builds an array of type dt from a JSON array (arrow-go's JSON form).
func fromJSON(t testing.TB, dt arrow.DataType, js string) arrow.Array {
	t.Helper()
	a, _, err := array.FromJSON(memory.DefaultAllocator, dt, bytes.NewReader([]byte(js)))
	if err != nil {
		t.Fatalf("array.FromJSON(%s, %s): %v", dt, js, err)
	}
	return a
}

// decodeArrow decodes one column given as batches of arrays into a one-column table
// of type typ, through both the stream and the file format.
func decodeArrow(t testing.TB, typ string, arrays ...arrow.Array) (arrow.RecordBatch, error) {
	t.Helper()
	s := schemaOf(t, "c "+typ)
	recs := make([]arrow.RecordBatch, len(arrays))
	for i, a := range arrays {
		recs[i] = batch("c", a)
	}
	var out [2]arrow.RecordBatch
	var errs [2]error
	for i, file := range []bool{false, true} {
		body := ipcBody(t, file, recs[0].Schema(), recs)
		out[i], errs[i] = arrowDecoder{file: file}.Decode(body, s)
		if errs[i] == nil {
			checkRecord(t, out[i], s)
		}
	}
	if (errs[0] == nil) != (errs[1] == nil) {
		t.Fatalf("stream and file disagree: %v / %v", errs[0], errs[1])
	}
	if errs[0] == nil && !array.RecordEqual(out[0], out[1]) {
		t.Fatalf("stream and file records differ")
	}
	return out[0], errs[0]
}

func TestArrowConversions(t *testing.T) {
	ts := func(unit arrow.TimeUnit, tz string) arrow.DataType {
		return &arrow.TimestampType{Unit: unit, TimeZone: tz}
	}
	f16 := array.NewFloat16Builder(memory.DefaultAllocator)
	f16.AppendValues([]float16.Num{float16.New(1.5), float16.New(-0.25)}, nil)
	f16.AppendNull()
	dict := array.NewDictionaryBuilder(memory.DefaultAllocator, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
	for _, v := range []string{"red", "green", "red"} {
		if err := dict.AppendString(v); err != nil {
			t.Fatal(err)
		}
	}
	dict.AppendNull()
	intDict := array.NewDictionaryBuilder(memory.DefaultAllocator, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Uint16, ValueType: arrow.PrimitiveTypes.Int64}).(*array.Int64DictionaryBuilder)
	for _, v := range []int64{7, 9, 7} {
		if err := intDict.Append(v); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, typ string
		src       []arrow.Array
		want      []string
	}{
		{"int16 to BIGINT", "BIGINT", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Int16, `[1, -32768, null]`)}, []string{"1", "-32768", "NULL"}},
		{"int64 to TINYINT in range", "TINYINT", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Int64, `[127, -128, null]`)}, []string{"127", "-128", "NULL"}},
		{"uint64 to BIGINT in range", "BIGINT", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Uint64, `[9223372036854775807]`)}, []string{"9223372036854775807"}},
		{"int8 to UBIGINT", "UBIGINT", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Int8, `[0, 127]`)}, []string{"0", "127"}},
		{"int64 to DOUBLE exact", "DOUBLE", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Int64, `[9007199254740992, -5]`)}, []string{"9.007199254740992e+15", "-5"}},
		{"uint32 to FLOAT exact", "FLOAT", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Uint32, `[16777216, 3]`)}, []string{"1.6777216e+07", "3"}},
		{"float32 to DOUBLE", "DOUBLE", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Float32, `[1.5, null]`)}, []string{"1.5", "NULL"}},
		{"float64 to FLOAT rounds", "FLOAT", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Float64, `[0.1, 2.5]`)}, []string{"0.1", "2.5"}},
		{"float16 to FLOAT", "FLOAT", []arrow.Array{f16.NewArray()}, []string{"1.5", "-0.25", "NULL"}},
		{"large_utf8 to VARCHAR", "VARCHAR", []arrow.Array{fromJSON(t, arrow.BinaryTypes.LargeString, `["a", null, "ü"]`)}, []string{"a", "NULL", "ü"}},
		{"utf8_view to VARCHAR", "VARCHAR", []arrow.Array{fromJSON(t, arrow.BinaryTypes.StringView, `["short", "a string longer than twelve bytes"]`)}, []string{"short", "a string longer than twelve bytes"}},
		{"dictionary<utf8> to VARCHAR", "VARCHAR", []arrow.Array{dict.NewArray()}, []string{"red", "green", "red", "NULL"}},
		{"dictionary<int64> to BIGINT", "BIGINT", []arrow.Array{intDict.NewArray()}, []string{"7", "9", "7"}},
		{"large_binary to BLOB", "BLOB", []arrow.Array{fromJSON(t, arrow.BinaryTypes.LargeBinary, `["AAE=", null]`)}, []string{"AAE=", "NULL"}},
		{"fixed_size_binary to BLOB", "BLOB", []arrow.Array{fromJSON(t, &arrow.FixedSizeBinaryType{ByteWidth: 2}, `["AAE=", "/w8="]`)}, []string{"AAE=", "/w8="}},
		{"date64 to DATE", "DATE", []arrow.Array{fromJSON(t, arrow.FixedWidthTypes.Date64, `[1325376000000, -86400000, null]`)}, []string{"2012-01-01", "1969-12-31", "NULL"}},
		{"time32[s] to TIME", "TIME", []arrow.Array{fromJSON(t, arrow.FixedWidthTypes.Time32s, `["12:34:56"]`)}, []string{"12:34:56.000000"}},
		{"time32[ms] to TIME", "TIME", []arrow.Array{fromJSON(t, arrow.FixedWidthTypes.Time32ms, `["12:34:56.789"]`)}, []string{"12:34:56.789000"}},
		{"time64[ns] to TIME floors", "TIME", []arrow.Array{fromJSON(t, arrow.FixedWidthTypes.Time64ns, `["12:34:56.123456789"]`)}, []string{"12:34:56.123456"}},
		{"timestamp[s] to TIMESTAMP", "TIMESTAMP", []arrow.Array{fromJSON(t, ts(arrow.Second, ""), `["2012-01-01T10:00:00"]`)}, []string{"2012-01-01T10:00:00.000000Z"}},
		{"timestamp[ms, Europe/Paris] to TIMESTAMPTZ", "TIMESTAMPTZ", []arrow.Array{fromJSON(t, ts(arrow.Millisecond, "Europe/Paris"), `["2012-01-01T10:00:00.5Z"]`)}, []string{"2012-01-01T10:00:00.500000Z"}},
		{"timestamp[us, +02:00] to TIMESTAMP", "TIMESTAMP", []arrow.Array{fromJSON(t, ts(arrow.Microsecond, "+02:00"), `["2012-01-01T10:00:00Z"]`)}, []string{"2012-01-01T10:00:00.000000Z"}},
		{"timestamp[ns] to TIMESTAMPTZ floors", "TIMESTAMPTZ", []arrow.Array{fromJSON(t, ts(arrow.Nanosecond, ""), `[-1, 1999]`)}, []string{"1969-12-31T23:59:59.999999Z", "1970-01-01T00:00:00.000001Z"}},
		{"decimal rescale up", "DECIMAL(10,4)", []arrow.Array{fromJSON(t, &arrow.Decimal128Type{Precision: 8, Scale: 2}, `["123.45", null]`)}, []string{"123.4500", "NULL"}},
		{"decimal rescale down exact", "DECIMAL(5,1)", []arrow.Array{fromJSON(t, &arrow.Decimal128Type{Precision: 8, Scale: 3}, `["-1234.500"]`)}, []string{"-1234.5"}},
		{"null type to any column", "DATE", []arrow.Array{array.NewNull(2)}, []string{"NULL", "NULL"}},
		{"several batches", "INTEGER", []arrow.Array{
			fromJSON(t, arrow.PrimitiveTypes.Int32, `[1, 2]`),
			fromJSON(t, arrow.PrimitiveTypes.Int32, `[]`),
			fromJSON(t, arrow.PrimitiveTypes.Int32, `[null, 4]`),
		}, []string{"1", "2", "NULL", "4"}},
		{"several batches converted", "BIGINT", []arrow.Array{
			fromJSON(t, arrow.PrimitiveTypes.Int8, `[1, null]`),
			fromJSON(t, arrow.PrimitiveTypes.Int8, `[3]`),
		}, []string{"1", "NULL", "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := decodeArrow(t, tc.typ, tc.src...)
			if err != nil {
				t.Fatal(err)
			}
			if got := column(t, rec, "c"); !slices.Equal(got, tc.want) {
				t.Errorf("values = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestArrowConversionErrors(t *testing.T) {
	list := arrow.ListOf(arrow.PrimitiveTypes.Int64)
	for _, tc := range []struct {
		name, typ string
		src       []arrow.Array
		row       int
		fragments []string
	}{
		{"300 into TINYINT, second batch", "TINYINT", []arrow.Array{
			fromJSON(t, arrow.PrimitiveTypes.Int64, `[1, 2]`),
			fromJSON(t, arrow.PrimitiveTypes.Int64, `[null, 300]`),
		}, 4, []string{"value 300 is out of range for TINYINT"}},
		{"2^63 into BIGINT", "BIGINT", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Uint64, `[9223372036854775808]`)}, 1, []string{"value 9223372036854775808 is out of range for BIGINT"}},
		{"-1 into UINTEGER", "UINTEGER", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Int32, `[0, -1]`)}, 2, []string{"value -1 is out of range for UINTEGER"}},
		{"2^53+1 into DOUBLE", "DOUBLE", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Int64, `[9007199254740993]`)}, 1, []string{"cannot be stored exactly in DOUBLE"}},
		{"max int64 into DOUBLE", "DOUBLE", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Int64, `[9223372036854775807]`)}, 1, []string{"cannot be stored exactly in DOUBLE"}},
		{"max uint64 into DOUBLE", "DOUBLE", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Uint64, `[18446744073709551615]`)}, 1, []string{"cannot be stored exactly in DOUBLE"}},
		{"float64 past FLOAT", "FLOAT", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Float64, `[1, 1e300]`)}, 2, []string{"value 1e+300 is out of range for FLOAT"}},
		{"decimal loses digits", "DECIMAL(10,1)", []arrow.Array{fromJSON(t, &arrow.Decimal128Type{Precision: 8, Scale: 2}, `["1.25"]`)}, 1, []string{"value 1.25 does not fit DECIMAL(10,1) exactly"}},
		{"decimal too wide", "DECIMAL(4,2)", []arrow.Array{fromJSON(t, &arrow.Decimal128Type{Precision: 8, Scale: 2}, `["123.45"]`)}, 1, []string{"value 123.45 does not fit DECIMAL(4,2)"}},
		{"decimal beyond its own precision", "DECIMAL(4,2)", []arrow.Array{decimalOver(t)}, 1, []string{"does not fit DECIMAL(4,2)"}},
		{"decimal128 precision past 38", "DECIMAL(18,3)", []arrow.Array{decimalOf(&arrow.Decimal128Type{Precision: 50, Scale: 3})}, 0, []string{"cannot be stored in a DECIMAL(18,3) column"}},
		{"seconds overflow", "TIMESTAMP", []arrow.Array{fromJSON(t, &arrow.TimestampType{Unit: arrow.Second}, `[9223372036854775807]`)}, 1, []string{"out of range for TIMESTAMP"}},
		{"time past a day", "TIME", []arrow.Array{fromJSON(t, arrow.FixedWidthTypes.Time64us, `[86400000001]`)}, 1, []string{"is not a time of day"}},
		{"utf8 into BIGINT", "BIGINT", []arrow.Array{fromJSON(t, arrow.BinaryTypes.String, `["1"]`)}, 0, []string{"Arrow type utf8 cannot be stored in a BIGINT column"}},
		{"float into integer", "BIGINT", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Float64, `[1]`)}, 0, []string{"Arrow type float64 cannot be stored in a BIGINT column"}},
		{"utf8 into BLOB", "BLOB", []arrow.Array{fromJSON(t, arrow.BinaryTypes.String, `["x"]`)}, 0, []string{"cannot be stored in a BLOB column"}},
		{"binary into VARCHAR", "VARCHAR", []arrow.Array{fromJSON(t, arrow.BinaryTypes.Binary, `["eA=="]`)}, 0, []string{"cannot be stored in a VARCHAR column"}},
		{"bool into BIGINT", "BIGINT", []arrow.Array{fromJSON(t, arrow.FixedWidthTypes.Boolean, `[true]`)}, 0, []string{"cannot be stored in a BIGINT column"}},
		{"int into BOOLEAN", "BOOLEAN", []arrow.Array{fromJSON(t, arrow.PrimitiveTypes.Int8, `[1]`)}, 0, []string{"cannot be stored in a BOOLEAN column"}},
		{"date32 into TIMESTAMP", "TIMESTAMP", []arrow.Array{fromJSON(t, arrow.FixedWidthTypes.Date32, `["2012-01-01"]`)}, 0, []string{"cannot be stored in a TIMESTAMP column"}},
		{"list into BIGINT", "BIGINT", []arrow.Array{fromJSON(t, list, `[[1]]`)}, 0, []string{"Arrow type list<item: int64, nullable> cannot be stored in a BIGINT column"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeArrow(t, tc.typ, tc.src...)
			e, ok := err.(*store.Error)
			if !ok {
				t.Fatalf("error = %v (%T), want a *store.Error", err, err)
			}
			wantError(t, e, store.CodeUnprocessable, tc.row, 0, "c", tc.fragments...)
		})
	}
}

// decimalOver is a decimal128(4,2) array holding 123.45, beyond its own precision:
// the Arrow format does not enforce precision, the decoder must.
func decimalOver(t testing.TB) arrow.Array {
	t.Helper()
	return decimalOf(&arrow.Decimal128Type{Precision: 4, Scale: 2})
}

// decimalOf is a one-value array of type dt holding the unscaled value 12345, built
// without the checks of arrow-go's builders.
func decimalOf(dt *arrow.Decimal128Type) arrow.Array {
	vals := []decimal128.Num{decimal128.FromI64(12345)}
	data := array.NewData(dt, 1, []*memory.Buffer{nil, memory.NewBufferBytes(arrow.GetBytes(vals))}, nil, 0, 0)
	return array.MakeFromData(data)
}

func TestArrowFields(t *testing.T) {
	s := schemaOf(t, "Id BIGINT", "name VARCHAR", "extra DOUBLE")
	fields := arrow.NewSchema([]arrow.Field{
		{Name: "NAME", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "Id", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	rec := array.NewRecordBatch(fields, []arrow.Array{
		fromJSON(t, arrow.BinaryTypes.String, `["a", "b"]`),
		fromJSON(t, arrow.PrimitiveTypes.Int32, `[1, 2]`),
	}, 2)
	body := ipcBody(t, false, fields, []arrow.RecordBatch{rec})
	got := decodeOK(t, arrowStreamType, string(body), s)
	for name, want := range map[string][]string{"Id": {"1", "2"}, "name": {"a", "b"}, "extra": {"NULL", "NULL"}} {
		if g := column(t, got, name); !slices.Equal(g, want) {
			t.Errorf("column %s = %q, want %q", name, g, want)
		}
	}

	empty := ipcBody(t, true, fields, nil)
	if got := decodeOK(t, arrowFileType, string(empty), s); got.NumRows() != 0 {
		t.Errorf("zero-batch file: rows = %d, want 0", got.NumRows())
	}
	if got := decodeOK(t, arrowStreamType, string(ipcBody(t, false, fields, nil)), s); got.NumRows() != 0 {
		t.Errorf("zero-batch stream: rows = %d, want 0", got.NumRows())
	}

	unknown := arrow.NewSchema([]arrow.Field{{Name: "nope", Type: arrow.PrimitiveTypes.Int32}}, nil)
	e := decodeErr(t, arrowStreamType, string(ipcBody(t, false, unknown, nil)), s)
	wantError(t, e, store.CodeUnprocessable, 0, 0, "nope", `unknown Arrow field "nope"`)

	twice := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}, {Name: "ID", Type: arrow.PrimitiveTypes.Int32}}, nil)
	e = decodeErr(t, arrowStreamType, string(ipcBody(t, false, twice, nil)), s)
	wantError(t, e, store.CodeInvalid, 0, 0, "ID", "a second time")
}

func TestArrowCompressed(t *testing.T) {
	s := schemaOf(t, "n BIGINT", "s VARCHAR")
	fields := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	nb := array.NewInt64Builder(memory.DefaultAllocator)
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	for i := range 5000 {
		nb.Append(int64(i))
		sb.Append("row")
	}
	rec := array.NewRecordBatch(fields, []arrow.Array{nb.NewArray(), sb.NewArray()}, 5000)
	for name, opt := range map[string]ipc.Option{"lz4": ipc.WithLZ4(), "zstd": ipc.WithZstd()} {
		for _, file := range []bool{false, true} {
			body := ipcBody(t, file, fields, []arrow.RecordBatch{rec, rec}, opt, ipc.WithMinSpaceSavings(0))
			got, err := arrowDecoder{file: file}.Decode(body, s)
			if err != nil {
				t.Fatalf("%s (file %v): %v", name, file, err)
			}
			checkRecord(t, got, s)
			if got.NumRows() != 10000 || cell(t, got, "n", 9999) != "4999" || cell(t, got, "s", 7) != "row" {
				t.Errorf("%s (file %v): rows = %d, n[9999] = %s", name, file, got.NumRows(), cell(t, got, "n", 9999))
			}
		}
	}

	// A buffer that claims to decompress to 1 TiB must not be allocated.
	body := ipcBody(t, false, fields, []arrow.RecordBatch{rec}, ipc.WithZstd(), ipc.WithMinSpaceSavings(0))
	var size [8]byte
	binary.LittleEndian.PutUint64(size[:], 5000*8)
	i := bytes.Index(body, size[:])
	if i < 0 {
		t.Fatal("no uncompressed length prefix in the body")
	}
	binary.LittleEndian.PutUint64(body[i:], 1<<40)
	_, err := arrowDecoder{}.Decode(body, s)
	if e, ok := err.(*store.Error); !ok || e.Code != store.CodeTooLarge {
		t.Errorf("bomb: error = %v, want CodeTooLarge", err)
	}
}

func TestArrowMalformed(t *testing.T) {
	s := schemaOf(t, "n BIGINT")
	three := batch("n", fromJSON(t, arrow.PrimitiveTypes.Int64, `[1, 2, 3]`))
	good := ipcBody(t, false, three.Schema(), []arrow.RecordBatch{three})
	file := ipcBody(t, true, three.Schema(), []arrow.RecordBatch{three})
	many := batch("n", array.NewNull(100_000_000))
	nulls := ipcBody(t, false, many.Schema(), []arrow.RecordBatch{many})
	for _, tc := range []struct {
		name        string
		contentType string
		body        []byte
	}{
		{"empty", arrowStreamType, nil},
		{"CSV text", arrowStreamType, []byte("n\n1\n")},
		{"truncated stream", arrowStreamType, good[:len(good)-20]},
		{"file sent as stream", arrowStreamType, file},
		{"stream sent as file", arrowFileType, good},
		{"truncated file", arrowFileType, file[:len(file)-10]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := decodeErr(t, tc.contentType, string(tc.body), s)
			if e.Code != store.CodeInvalid {
				t.Errorf("code = %s (%v), want %s", e.Code, e, store.CodeInvalid)
			}
		})
	}
	// Rows of a null-typed field cost nothing in the body; the record they would fill
	// is bounded by the decoder's memory budget.
	e := decodeErr(t, arrowStreamType, string(nulls), s)
	wantError(t, e, store.CodeTooLarge, 0, 0, "", "more rows than")
	if got := decodeOK(t, arrowStreamType, string(ipcBody(t, false, many.Schema(), []arrow.RecordBatch{many.NewSlice(0, 1000)})), s); got.NumRows() != 1000 {
		t.Errorf("1000 null rows: got %d rows", got.NumRows())
	}
}

func TestArrowMetadataVerifier(t *testing.T) {
	nested := arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "u", Type: arrow.DenseUnionOf([]arrow.Field{
			{Name: "x", Type: arrow.BinaryTypes.String, Nullable: true},
			{Name: "y", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		}, []arrow.UnionTypeCode{3, 7}), Nullable: true},
	))
	meta := arrow.NewMetadata([]string{"origin"}, []string{"test"})
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: nested, Nullable: true, Metadata: meta}}, &meta)
	for _, file := range []bool{false, true} {
		if err := verifyIPC(ipcBody(t, file, schema, nil), file); err != nil {
			t.Errorf("file %v: nested schema rejected: %v", file, err)
		}
	}

	// Deeper than arrow-go's nesting limit: rejected before arrow-go recurses into it.
	var deep arrow.DataType = arrow.PrimitiveTypes.Int8
	for range maxFieldDepth + 5 {
		deep = arrow.ListOf(deep)
	}
	deepSchema := arrow.NewSchema([]arrow.Field{{Name: "d", Type: deep}}, nil)
	for _, file := range []bool{false, true} {
		_, err := arrowDecoder{file: file}.Decode(ipcBody(t, file, deepSchema, nil), schemaOf(t, "d BIGINT"))
		if e, ok := err.(*store.Error); !ok || e.Code != store.CodeInvalid || !strings.Contains(e.Message, "malformed metadata") {
			t.Errorf("file %v: deep schema: error = %v, want CodeInvalid malformed metadata", file, err)
		}
	}

	// A message header claiming 2 GiB of metadata is refused without allocating it.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := arrowDecoder{}.Decode([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xF0, 0xFF, 0xFF, 0x7F, 0, 0, 0, 0}, schemaOf(t, "n BIGINT"))
	runtime.ReadMemStats(&after)
	if e, ok := err.(*store.Error); !ok || e.Code != store.CodeInvalid {
		t.Errorf("huge metadata length: error = %v, want CodeInvalid", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("huge metadata length: allocated %d bytes", grew)
	}
}

// largeUTF8 is a large_utf8 array of the given value bytes, offsets and validity (nil:
// all valid), built from buffers so that its values may be invalid UTF-8.
func largeUTF8(data string, offsets []int64, valid []byte) arrow.Array {
	var bitmap *memory.Buffer
	nulls := 0
	if valid != nil {
		bitmap = memory.NewBufferBytes(valid)
		nulls = len(offsets) - 1 - bitutil.CountSetBits(valid, 0, len(offsets)-1)
	}
	d := array.NewData(arrow.BinaryTypes.LargeString, len(offsets)-1, []*memory.Buffer{bitmap,
		memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(offsets)), memory.NewBufferBytes([]byte(data))}, nil, nulls, 0)
	return array.MakeFromData(d)
}

// TestArrowLargeUTF8 covers large_utf8 to VARCHAR, whose offsets are narrowed with the
// value bytes shared: values across batches, empty ones, NULLs whose slots hold bytes,
// and values that are not UTF-8 each although their bytes together are.
func TestArrowLargeUTF8(t *testing.T) {
	rec, err := decodeArrow(t, "VARCHAR",
		fromJSON(t, arrow.BinaryTypes.LargeString, `["", "é€", null]`),
		largeUTF8("xxhiddenyz", []int64{2, 8, 9, 10}, []byte{0b110}),
	)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := column(t, rec, "c"), []string{"", "é€", "NULL", "NULL", "y", "z"}; !slices.Equal(got, want) {
		t.Errorf("values = %q, want %q", got, want)
	}
	for _, bad := range []arrow.Array{
		largeUTF8("\xc3\xa9", []int64{0, 1, 2}, nil),
		largeUTF8("ok\xff", []int64{0, 2, 3}, nil),
	} {
		if rec, err := decodeArrow(t, "VARCHAR", fromJSON(t, arrow.BinaryTypes.LargeString, `["a"]`), bad); err == nil {
			t.Errorf("values %q decoded to %q, want an error", bad.(*array.LargeString).ValueBytes(), column(t, rec, "c"))
		}
	}
}
