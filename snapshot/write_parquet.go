package snapshot

import (
	"io"

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
// the exact types back (time zones, unsigned integers). When reading rr fails, the footer
// is not written, so the output is not a readable file.
func writeParquet(w io.Writer, rr array.RecordReader) error {
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(parquetRowGroupRows),
	)
	fw, err := pqarrow.NewFileWriter(rr.Schema(), w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return err
	}
	for rr.Next() {
		if err := fw.WriteBuffered(rr.RecordBatch()); err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil {
		return err
	}
	return fw.Close()
}
