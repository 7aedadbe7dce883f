package ingest

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/thrift/lib/go/thrift"

	"github.com/ducktail/ducktail/store"
)

// This file checks the footer of a Parquet body before pqarrow reads its columns.
// arrow-go (v18.8.0) trusts the footer: it sizes the schema tree by each element's
// num_children and the buffer of a column chunk by the chunk's total_compressed_size (a
// negative one panics, a huge one is a fatal out of memory), takes the table's row count
// from the first column it reads, and believes the Arrow schema stored under the key
// ARROW:schema. Much of it runs in goroutines of its own, where no recover of ours
// reaches, so those inputs must never get that far. The checks follow the Parquet format's FileMetaData, RowGroup and
// ColumnChunk (parquet.thrift).

// arrowSchemaKey is the footer key under which Arrow writers store the Arrow schema of
// the file (base64 of an IPC schema message).
const arrowSchemaKey = "ARROW:schema"

// maxParquetLeaves bounds the leaf columns of a Parquet body (a struct's members count
// one each): pqarrow allocates a 16 KiB buffer per leaf where no recover reaches, which
// must stay well inside the smallest budgetAllocator (arrowBaseBudget).
const maxParquetLeaves = 1024

// checkParquetFooter checks the footer of pf, a file of size bytes: at most
// maxParquetLeaves leaf columns; every column chunk holds as many values as its row
// group has rows (at least as many for a repeated column); every row group has
// a column chunk for every leaf of the schema and a row count of at least 0, adding up to
// the file's; and every column chunk lies inside the file, after the leading magic, and no
// two overlap (so that reading every chunk allocates at most size bytes). Errors are CodeInvalid naming the row group and column,
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
			// Every row puts one value (a NULL or an empty list included) in a column
			// without repetition, and at least one in a repeated one; arrow-go stops
			// reading a chunk at its num_values, which would shift the rows after it.
			values, repeated := cc.NumValues(), md.Schema.Column(j).MaxRepetitionLevel() > 0
			if (!repeated && values != rg.NumRows()) || (repeated && values < rg.NumRows()) {
				return footerError("row group %d, column %s: %d values for the row group's %d rows",
					i+1, md.Schema.Column(j).Path(), values, rg.NumRows())
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
	return nil
}

// ignoreStoredSchema renames the footer's ARROW:schema entry in pf's metadata (in
// memory), so that pqarrow maps the columns from the Parquet schema alone: arrow-go
// trusts a stored Arrow schema that disagrees with the Parquet one (a list stored as
// large_utf8) and dereferences nil in a goroutine of its own, which ends the process.
// The Parquet types give the same columns for what Arrow writers store (large strings
// and dictionaries as VARCHAR, time zones as TIMESTAMPTZ).
func ignoreStoredSchema(pf *file.Reader) {
	for _, kv := range pf.MetaData().KeyValueMetadata() {
		if kv != nil && kv.Key == arrowSchemaKey {
			kv.Key = "ducktail:ignored:" + arrowSchemaKey
		}
	}
}

// checkFooterSchema walks the footer of body, a Parquet file (its thrift FileMetaData in
// the compact protocol, parquet.thrift), for the schema's elements and checks that each
// one's num_children lies between 0 and the number of elements, before arrow-go builds
// the schema tree, which sizes a slice by it (2^31 is a fatal out of memory no recover
// catches). A footer it cannot walk is left for arrow-go, which refuses it.
func checkFooterSchema(body []byte) error {
	if len(body) < 12 || string(body[len(body)-4:]) != "PAR1" {
		return nil
	}
	n := int64(binary.LittleEndian.Uint32(body[len(body)-8:]))
	if n > int64(len(body))-12 {
		return nil
	}
	tr := thrift.NewTMemoryBufferLen(int(n))
	tr.Write(body[int64(len(body))-8-n : len(body)-8])
	p := thrift.NewTCompactProtocolConf(tr, &thrift.TConfiguration{})
	ctx := context.Background()
	if _, err := p.ReadStructBegin(ctx); err != nil {
		return nil
	}
	for {
		_, typ, id, err := p.ReadFieldBegin(ctx)
		if err != nil || typ == thrift.STOP {
			return nil
		}
		if id != 2 || typ != thrift.LIST {
			if p.Skip(ctx, typ) != nil {
				return nil
			}
			continue
		}
		_, elements, err := p.ReadListBegin(ctx)
		if err != nil {
			return nil
		}
		for i := range elements {
			children, ok := numChildren(ctx, p)
			if !ok {
				return nil
			}
			if children < 0 || children > int64(elements) {
				return footerError("schema element %d claims %d children of the schema's %d elements", i+1, children, elements)
			}
		}
		return nil
	}
}

// numChildren reads one SchemaElement struct and returns its num_children (field 5),
// 0 when it has none; ok is false when the struct cannot be read.
func numChildren(ctx context.Context, p *thrift.TCompactProtocol) (children int64, ok bool) {
	if _, err := p.ReadStructBegin(ctx); err != nil {
		return 0, false
	}
	for {
		_, typ, id, err := p.ReadFieldBegin(ctx)
		if err != nil {
			return 0, false
		}
		switch {
		case typ == thrift.STOP:
			return children, p.ReadStructEnd(ctx) == nil
		case id == 5 && typ == thrift.I32:
			v, err := p.ReadI32(ctx)
			if err != nil {
				return 0, false
			}
			children = int64(v)
		default:
			if p.Skip(ctx, typ) != nil {
				return 0, false
			}
		}
	}
}

// footerError is the CodeInvalid error of a footer that does not describe its file.
func footerError(format string, args ...any) error {
	return &store.Error{Code: store.CodeInvalid, Message: "the Parquet footer does not describe the file: " + fmt.Sprintf(format, args...)}
}
