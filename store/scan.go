package store

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"
)

// DefaultScanChunkRows is the chunk size of ScanTable: DuckDB's row group size.
const DefaultScanChunkRows = 122_880

// ScanTable hands fn a reader over every row of table info as of this transaction, in
// insertion order, with the columns and names users see. duckdb-go materializes a whole
// result before handing it over, so the rows are read chunkRows at a time, by rowid
// range over the table's physical table (DuckDB pushes the range into its scan): a
// snapshot of any size holds one chunk in memory at a time. The ranges run from rowid 0
// to the table's count(*): rows of a physical table are only ever appended (no UPDATE or
// DELETE touches one, and an append that rolls back leaves no rowid behind), so its
// rowids are 0 to count(*)-1, and DuckDB counts the rows of a table without reading
// them (0.7 ms on the 3M-row flights table, where max(rowid) reads every rowid in 2.5 to
// 5.6 ms before the first row can go out). The reader is valid only during fn. Errors:
// DuckDB's, fn's.
func (tx *ReadTx) ScanTable(ctx context.Context, info TableInfo, chunkRows int64, fn func(array.RecordReader) error) error {
	return tx.ScanShaped(ctx, info, nil, chunkRows, fn)
}

// ScanShaped is ScanTable through shape (nil for the whole table): DuckDB filters each
// chunk by the shape's predicate and keeps the shape's columns, so that the reader's
// records are shaped by shape.Project(&info.Schema).Arrow() (docs/design.md, "Shapes and
// policies"). Errors: DuckDB's, fn's.
func (tx *ReadTx) ScanShaped(ctx context.Context, info TableInfo, shape *Shape, chunkRows int64, fn func(array.RecordReader) error) error {
	a, err := tx.Activation(ctx, info.ID, info.Head.Activation)
	if err != nil {
		return err
	}
	physical := "ducktail_data." + QuoteIdent(a.physical)
	var rows int64
	if err := tx.conn.QueryRowContext(ctx, "SELECT count(*) FROM "+physical).Scan(&rows); err != nil {
		return fmt.Errorf("scan %s: %w", info.Name, err)
	}
	last := rows - 1
	cols := make([]string, len(info.Schema.Columns))
	for i, c := range info.Schema.Columns {
		cols[i] = QuoteIdent(physicalColumn(c.ID)) + " AS " + QuoteIdent(c.Name)
	}
	query := "SELECT " + strings.Join(cols, ", ") + " FROM " + physical + " WHERE rowid >= ? AND rowid < ?"
	if !shape.Empty() {
		query = "SELECT " + shape.SelectList(&info.Schema) + " FROM (" + query + ") AS " + QuoteIdent(ShapeRelation) + shape.whereClause()
	}
	return tx.conn.Raw(func(dc any) error {
		ar, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		r := &chunkReader{ctx: ctx, ar: ar, query: query, last: last, chunk: chunkRows}
		r.refs.Store(1)
		if err := r.open(0); err != nil {
			return err
		}
		defer r.Release()
		if err := fn(r); err != nil {
			return err
		}
		return r.Err()
	})
}

// chunkReader is an array.RecordReader over consecutive rowid ranges, each read by its
// own query when the previous one is exhausted.
type chunkReader struct {
	ctx   context.Context
	ar    *duckdb.Arrow
	query string
	last  int64 // the last rowid to read
	chunk int64
	next  int64 // the first rowid of the next range
	cur   array.RecordReader
	err   error
	refs  atomic.Int64
}

func (r *chunkReader) open(from int64) error {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	rr, err := r.ar.QueryContext(r.ctx, r.query, from, from+r.chunk)
	if err != nil {
		return err
	}
	r.cur, r.next = rr, from+r.chunk
	return nil
}

func (r *chunkReader) Retain() { r.refs.Add(1) }

func (r *chunkReader) Release() {
	if r.refs.Add(-1) == 0 && r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

func (r *chunkReader) Schema() *arrow.Schema { return r.cur.Schema() }

func (r *chunkReader) Next() bool {
	for r.err == nil && r.cur != nil {
		if r.cur.Next() {
			return true
		}
		if r.err = r.cur.Err(); r.err != nil || r.next > r.last {
			return false
		}
		r.err = r.open(r.next)
	}
	return false
}

func (r *chunkReader) RecordBatch() arrow.RecordBatch { return r.cur.RecordBatch() }

// Record is RecordBatch, for the array.RecordReader interface.
func (r *chunkReader) Record() arrow.RecordBatch { return r.cur.RecordBatch() }

func (r *chunkReader) Err() error { return r.err }
