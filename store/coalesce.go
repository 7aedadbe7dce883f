package store

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// vectorRows is DuckDB's vector size (STANDARD_VECTOR_SIZE): its Arrow scan turns each
// record batch into chunks of at most this many rows, and no chunk spans two batches, so
// a group of 1-row commits inserted as they are costs one chunk, and its per-chunk work,
// per row.
const vectorRows = 2048

// coalesceSmall concatenates runs of consecutive batches of recs (all of one schema)
// holding together at most vectorRows rows into one batch each, keeping the rows in
// order; a batch of vectorRows rows or more is kept as it is, so large appends are not
// copied. A run array.Concatenate cannot join (it has no union support) stays as it is.
func coalesceSmall(recs []arrow.RecordBatch) []arrow.RecordBatch {
	if len(recs) < 2 {
		return recs
	}
	out := make([]arrow.RecordBatch, 0, len(recs))
	var run []arrow.RecordBatch
	var runRows int64
	flush := func() {
		if len(run) > 1 {
			if rec, err := concatRecords(run, runRows); err == nil {
				run = []arrow.RecordBatch{rec}
			}
		}
		out = append(out, run...)
		run, runRows = nil, 0
	}
	for _, rec := range recs {
		if runRows+rec.NumRows() > vectorRows {
			flush()
		}
		if rec.NumRows() >= vectorRows {
			out = append(out, rec)
			continue
		}
		run = append(run, rec)
		runRows += rec.NumRows()
	}
	flush()
	return out
}

// concatRecords concatenates recs, which hold rows rows together, column by column.
func concatRecords(recs []arrow.RecordBatch, rows int64) (arrow.RecordBatch, error) {
	schema := recs[0].Schema()
	cols := make([]arrow.Array, schema.NumFields())
	parts := make([]arrow.Array, len(recs))
	for i := range cols {
		for j, rec := range recs {
			parts[j] = rec.Column(i)
		}
		col, err := array.Concatenate(parts, memory.DefaultAllocator)
		if err != nil {
			return nil, err
		}
		cols[i] = col
	}
	return array.NewRecordBatch(schema, cols, rows), nil
}
