package ingest

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/ducktail/ducktail/store"
)

// This file checks the footer of a Parquet body before pqarrow reads its columns.
// arrow-go (v18.8.0) trusts the footer: it sizes the buffer of a column chunk by the
// chunk's total_compressed_size (a negative one panics, a huge one is a fatal out of
// memory), takes the table's row count from the first column it reads, and decodes the
// Arrow schema stored under the key ARROW:schema with the unchecked IPC reader. It does so
// in goroutines of its own, where no recover of ours reaches, so those inputs must never
// get that far. The checks follow the Parquet format's FileMetaData, RowGroup and
// ColumnChunk (parquet.thrift).

// arrowSchemaKey is the footer key under which Arrow writers store the Arrow schema of
// the file: a base64 IPC stream holding the schema message.
const arrowSchemaKey = "ARROW:schema"

// maxParquetLeaves bounds the leaf columns of a Parquet body (a struct's members count
// one each): pqarrow allocates a 16 KiB buffer per leaf where no recover reaches, which
// must stay well inside the smallest budgetAllocator (arrowBaseBudget).
const maxParquetLeaves = 1024

// checkParquetFooter checks the footer of pf, a file of size bytes: at most
// maxParquetLeaves leaf columns; every row group has
// a column chunk for every leaf of the schema and a row count of at least 0, adding up to
// the file's; every column chunk lies inside the file, after the leading magic, and no
// two overlap (so that reading every chunk allocates at most size bytes); and a stored
// Arrow schema passes verifyIPC. Errors are CodeInvalid naming the row group and column,
// CodeUnprocessable for too many leaves.
func checkParquetFooter(pf *file.Reader, size int64) error {
	md := pf.MetaData()
	leaves := md.Schema.NumColumns()
	if leaves > maxParquetLeaves {
		return &store.Error{Code: store.CodeUnprocessable, Message: fmt.Sprintf("the Parquet file has %d leaf columns; at most %d are read", leaves, maxParquetLeaves)}
	}
	var rows int64
	var chunks [][2]int64
	for i := range md.NumRowGroups() {
		rg := md.RowGroup(i)
		if rg.NumRows() < 0 || rg.NumRows() > math.MaxInt64-rows {
			return footerError("row group %d has %d rows", i+1, rg.NumRows())
		}
		rows += rg.NumRows()
		if rg.NumColumns() != leaves {
			return footerError("row group %d has %d column chunks for the schema's %d columns", i+1, rg.NumColumns(), leaves)
		}
		for j := range leaves {
			cc, err := rg.ColumnChunk(j)
			if err != nil {
				return footerError("row group %d, column %s: %v", i+1, md.Schema.Column(j).Path(), err)
			}
			start, length := cc.DataPageOffset(), cc.TotalCompressedSize()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && start > cc.DictionaryPageOffset() {
				start = cc.DictionaryPageOffset()
			}
			if start < 4 || length <= 0 || start > size || length > size-start || cc.NumValues() < 0 {
				return footerError("row group %d, column %s: a chunk of %d bytes at offset %d holding %d values does not fit the file's %d bytes",
					i+1, md.Schema.Column(j).Path(), length, start, cc.NumValues(), size)
			}
			chunks = append(chunks, [2]int64{start, start + length})
		}
	}
	if rows != pf.NumRows() {
		return footerError("the row groups hold %d rows, the footer says %d", rows, pf.NumRows())
	}
	slices.SortFunc(chunks, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	for i := 1; i < len(chunks); i++ {
		if chunks[i][0] < chunks[i-1][1] {
			return footerError("column chunks overlap at offset %d", chunks[i][0])
		}
	}
	if stored := md.KeyValueMetadata().FindValue(arrowSchemaKey); stored != nil {
		if err := checkStoredSchema(*stored); err != nil {
			return err
		}
	}
	return nil
}

// checkStoredSchema checks the Arrow schema a footer stores, decoded from base64 as
// pqarrow does (padded, else unpadded), with verifyIPC. A value that is not base64 is
// left to pqarrow, which refuses it.
func checkStoredSchema(serialized string) error {
	var decoded []byte
	var err error
	if len(serialized)%4 == 0 {
		decoded, err = base64.StdEncoding.DecodeString(serialized)
	}
	if len(decoded) == 0 || err != nil {
		if decoded, err = base64.RawStdEncoding.DecodeString(serialized); err != nil {
			return nil
		}
	}
	if err := verifyIPC(decoded, false); err != nil {
		return &store.Error{Code: store.CodeInvalid, Message: "the Parquet footer's " + arrowSchemaKey + " is not a valid Arrow schema: " + err.Error()}
	}
	return nil
}

// footerError is the CodeInvalid error of a footer that does not describe its file.
func footerError(format string, args ...any) error {
	return &store.Error{Code: store.CodeInvalid, Message: "the Parquet footer does not describe the file: " + fmt.Sprintf(format, args...)}
}
