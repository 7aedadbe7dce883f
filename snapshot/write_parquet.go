package snapshot

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// parquetRowGroupRows bounds the rows of one Parquet row group: DuckDB's own row group
// size, so a file round-trips into DuckDB without re-chunking. A row group is buffered in
// memory until full.
const parquetRowGroupRows = 122_880

// writeParquet writes rr as one Parquet file (Apache Parquet format, written by arrow-go's
// pqarrow): Snappy-compressed row groups of at most parquetRowGroupRows rows, with the
// Arrow schema stored in the file metadata under ARROW:schema so that Arrow readers get
// the exact types back (time zones, unsigned integers); INTERVAL and UNION columns are
// written as the structs parquetType names. When reading rr fails, the footer
// is not written, so the output is not a readable file.
func writeParquet(w io.Writer, rr array.RecordReader) error {
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(parquetRowGroupRows),
	)
	schema := parquetSchema(rr.Schema())
	fw, err := pqarrow.NewFileWriter(schema, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return err
	}
	for rr.Next() {
		rec := rr.RecordBatch()
		cols := make([]arrow.Array, rec.NumCols())
		for i, c := range rec.Columns() {
			d := toParquetData(c.Data())
			cols[i] = array.MakeFromData(d)
			d.Release()
		}
		out := array.NewRecordBatch(schema, cols, rec.NumRows())
		for _, c := range cols {
			c.Release()
		}
		err := fw.WriteBuffered(out)
		out.Release()
		if err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil {
		return err
	}
	return fw.Close()
}
