package ingest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/ducktail/ducktail/store"
)

// parquetDecoder decodes application/vnd.apache.parquet bodies: one Apache Parquet file
// (Parquet format specification, "File Format"), all its row groups making one commit.
// arrow-go's pqarrow reads the file into Arrow columns (in parallel unless one holds a
// struct), mapping types from the Parquet schema alone (strings as utf8, timestamps by
// their unit, nested types as lists, structs and maps; a stored Arrow schema is
// ignored, ignoreStoredSchema); from there the rules of arrowDecoder apply unchanged:
// fields matched to columns by name, lossless conversions only, every column checked
// with array.ValidateFull, missing columns NULL.
//
// The body is untrusted. Its footer is checked first (parquet_footer.go), its row count
// is bounded before any column is read, the reader allocates at most arrowBudget bytes
// (Parquet pages are compressed and dictionary-encoded, so a body decodes to several
// times its size: 13 MiB of flights decode to about 110 MiB), booked to the request's lease
// of the MemoryBudget, and a panic inside arrow-go's reader is CodeInvalid.
type parquetDecoder struct{}

// Infer implements Decoder: the columns of the file's Arrow schema (arrowSpecs), read
// from its footer.
func (parquetDecoder) Infer(body []byte) (specs []store.ColumnSpec, err error) {
	defer recoverParquet(&err, nil)
	fr, _, err := openParquet(body, nil)
	if err != nil {
		return nil, err
	}
	schema, err := fr.Schema()
	if err != nil {
		return nil, notParquet(err)
	}
	return arrowSpecs(schema)
}

// Decode implements Decoder.
func (d parquetDecoder) Decode(body []byte, s *store.Schema) (arrow.RecordBatch, error) {
	return d.decodeLeased(body, s, nil)
}

// decodeLeased implements leasedDecoder.
func (parquetDecoder) decodeLeased(body []byte, s *store.Schema, l *lease) (rec arrow.RecordBatch, err error) {
	defer recoverParquet(&err, l)
	fr, mem, err := openParquet(body, l)
	if err != nil {
		return nil, err
	}
	if limit := arrowBudget(len(body)) / rowBytes(s); fr.ParquetReader().NumRows() > limit {
		return nil, tooManyRows(limit, len(body))
	}
	table, err := fr.ReadTable(context.Background())
	if err != nil {
		return nil, mem.failure(err, parquetTooLarge, notParquet(err))
	}
	defer table.Release()
	for i := range int(table.NumCols()) {
		if col := table.Column(i); int64(col.Len()) != fr.ParquetReader().NumRows() || table.NumRows() != fr.ParquetReader().NumRows() {
			return nil, &store.Error{Code: store.CodeInvalid, Column: table.Schema().Field(i).Name,
				Message: fmt.Sprintf("the Parquet column %s holds %d values where the footer says %d rows", quoteValue(table.Schema().Field(i).Name), col.Len(), fr.ParquetReader().NumRows())}
		}
	}
	batches, err := tableBatches(table)
	if err != nil {
		return nil, err
	}
	defer releaseBatches(batches)
	return shapeBatches(table.Schema(), batches, len(body), s)
}

// parquetLeafPrepay is what a request's lease prepays for each leaf column of a Parquet
// body, on top of the body's size: pqarrow sets up each column's reader in a goroutine of
// its own (no recover reaches it), allocating a 16 KiB page header buffer through the
// budgetAllocator; a quarter of this is room to spare.
const parquetLeafPrepay = 64 << 10

// openParquet opens body as a Parquet file read through a budgetAllocator of
// arrowBudget(len(body)) bytes booked to l, once its footer passed checkFooterSchema and
// checkParquetFooter, with its stored Arrow schema ignored (ignoreStoredSchema), and l is
// prepaid for what pqarrow allocates where no recover reaches. Its columns are
// read in parallel unless one holds a struct (a map's entries are one): pqarrow reads the
// children of a struct in goroutines of its own when parallel, where a panic on a damaged
// page would end the process, and otherwise inside the column's goroutine, whose panics it
// turns into errors.
func openParquet(body []byte, l *lease) (*pqarrow.FileReader, *budgetAllocator, error) {
	if err := checkFooterSchema(body); err != nil {
		return nil, nil, err
	}
	mem := newBudgetAllocator(arrowBudget(len(body)), l)
	pf, err := file.NewParquetReader(bytes.NewReader(body), file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return nil, nil, notParquet(err)
	}
	if err := checkParquetFooter(pf, int64(len(body))); err != nil {
		return nil, nil, err
	}
	ignoreStoredSchema(pf)
	if err := l.prepay(int64(len(body)) + int64(pf.MetaData().Schema.NumColumns())*parquetLeafPrepay); err != nil {
		return nil, nil, err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		return nil, nil, notParquet(err)
	}
	schema, err := fr.Schema()
	if err != nil {
		return nil, nil, notParquet(err)
	}
	fr.Props.Parallel = !slices.ContainsFunc(schema.Fields(), func(f arrow.Field) bool { return holdsStruct(f.Type) })
	return fr, mem, nil
}

// holdsStruct reports whether values of dt hold a struct at any depth.
func holdsStruct(dt arrow.DataType) bool {
	switch dt := dt.(type) {
	case *arrow.StructType, *arrow.MapType:
		return true
	case arrow.ListLikeType:
		return holdsStruct(dt.Elem())
	case *arrow.DictionaryType:
		return holdsStruct(dt.ValueType)
	case arrow.ExtensionType:
		return holdsStruct(dt.StorageType())
	}
	return false
}

// tableBatches returns the rows of table as record batches (one per run of rows that
// no column's chunk boundary splits), each validated and retained.
func tableBatches(table arrow.Table) ([]arrow.RecordBatch, error) {
	tr := array.NewTableReader(table, -1)
	defer tr.Release()
	var batches []arrow.RecordBatch
	var rows int64
	for tr.Next() {
		rec := tr.RecordBatch()
		if err := validateColumns(rec, fmt.Sprintf("Parquet rows %d–%d", rows+1, rows+rec.NumRows())); err != nil {
			releaseBatches(batches)
			return nil, err
		}
		rec.Retain()
		batches = append(batches, rec)
		rows += rec.NumRows()
	}
	return batches, nil
}

// notParquet is the CodeInvalid error of a body arrow-go cannot read as Parquet. The
// "context canceled" an errgroup of pqarrow's joins to the first error is left out.
func notParquet(err error) error {
	return &store.Error{Code: store.CodeInvalid, Message: "the body is not a valid Parquet file: " + strings.TrimSuffix(err.Error(), "\ncontext canceled")}
}

// recoverParquet turns a panic while reading an untrusted Parquet body into an error
// (recoverReader): arrow-go reads the footer's metadata and pages as they describe
// themselves.
func recoverParquet(err *error, l *lease) {
	recoverReader(recover(), err, l, parquetTooLarge, "the body is not a valid Parquet file")
}

// parquetTooLarge is the message of a Parquet body past its budgetAllocator.
const parquetTooLarge = "the Parquet body is too large once decoded"
