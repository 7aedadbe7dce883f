package ingest

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/ducktail/ducktail/store"
)

// parquetDecoder decodes application/vnd.apache.parquet bodies: one Apache Parquet file
// (Parquet format specification, "File Format"), all its row groups making one commit.
// arrow-go's pqarrow reads the file into Arrow columns, its columns in
// parallel, with the same schema mapping `ducktail ingest` used when it decoded Parquet
// files itself (strings as utf8, timestamps by their unit, nested types as lists,
// structs and maps); from there the rules of arrowDecoder apply unchanged: fields
// matched to columns by name, lossless conversions only, every column checked with
// array.ValidateFull, missing columns NULL.
//
// The body is untrusted. Its row count (from the footer) is bounded before any column
// is read, the reader allocates at most arrowBudget bytes (Parquet pages are compressed
// and dictionary-encoded, so a body decodes to several times its size: 13 MiB of
// flights decode to 115 MiB), and a panic inside arrow-go's reader is CodeInvalid.
type parquetDecoder struct{}

// Infer implements Decoder: the columns of the file's Arrow schema (arrowSpecs), read
// from its footer.
func (parquetDecoder) Infer(body []byte) (specs []store.ColumnSpec, err error) {
	defer recoverParquet(&err)
	fr, _, err := openParquet(body)
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
func (parquetDecoder) Decode(body []byte, s *store.Schema) (rec arrow.RecordBatch, err error) {
	defer recoverParquet(&err)
	fr, mem, err := openParquet(body)
	if err != nil {
		return nil, err
	}
	if limit := arrowBudget(len(body)) / rowBytes(s); fr.ParquetReader().NumRows() > limit {
		return nil, tooManyRows(limit, len(body))
	}
	table, err := fr.ReadTable(context.Background())
	if err != nil {
		if mem.exceeded.Load() {
			return nil, &store.Error{Code: store.CodeTooLarge, Message: "the Parquet body is too large once decoded", Err: err}
		}
		return nil, notParquet(err)
	}
	defer table.Release()
	batches, err := tableBatches(table)
	if err != nil {
		return nil, err
	}
	defer releaseBatches(batches)
	return shapeBatches(table.Schema(), batches, len(body), s)
}

// openParquet opens body as a Parquet file read through a budgetAllocator of
// arrowBudget(len(body)) bytes, with its columns read in parallel.
func openParquet(body []byte) (*pqarrow.FileReader, *budgetAllocator, error) {
	mem := newBudgetAllocator(arrowBudget(len(body)))
	pf, err := file.NewParquetReader(bytes.NewReader(body), file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return nil, nil, notParquet(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: true}, mem)
	if err != nil {
		return nil, nil, notParquet(err)
	}
	return fr, mem, nil
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

// notParquet is the CodeInvalid error of a body arrow-go cannot read as Parquet.
func notParquet(err error) error {
	return &store.Error{Code: store.CodeInvalid, Message: "the body is not a valid Parquet file: " + err.Error()}
}

// recoverParquet turns a panic while reading an untrusted Parquet body into a
// CodeInvalid error (or CodeTooLarge for an exhausted budgetAllocator): arrow-go reads
// the footer's metadata and pages as they describe themselves.
func recoverParquet(err *error) {
	if r := recover(); r != nil {
		if r == errArrowBudget {
			*err = &store.Error{Code: store.CodeTooLarge, Message: "the Parquet body is too large once decoded"}
			return
		}
		*err = &store.Error{Code: store.CodeInvalid, Message: "the body is not a valid Parquet file", Err: fmt.Errorf("parquet reader panic: %v", r)}
	}
}
