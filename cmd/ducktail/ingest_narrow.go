package main

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
)

// A chunk's columns of large_utf8 or large_binary (Parquet files written by pyarrow and
// DuckDB read that way) are sent as utf8 and binary: 32-bit offsets, a chunk's values are
// never near 2 GiB (maxChunkBytes), and the table's VARCHAR and BLOB columns are the same
// either way. It takes 4 bytes a value off every request body, which the client encrypts
// and hashes and the server decrypts, hashes and narrows again: for the 3M-row flights
// file about a sixth of the body and 7–9% of the server's CPU.

// narrowType is the type a column of type t is sent as.
func narrowType(t arrow.DataType) arrow.DataType {
	switch t.ID() {
	case arrow.LARGE_STRING:
		return arrow.BinaryTypes.String
	case arrow.LARGE_BINARY:
		return arrow.BinaryTypes.Binary
	}
	return t
}

// narrowSchema is s with each top-level field of a large type as narrowType makes it.
func narrowSchema(s *arrow.Schema) *arrow.Schema {
	fields := s.Fields()
	for i := range fields {
		fields[i].Type = narrowType(fields[i].Type)
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// narrowRecord returns rec with its columns as schema, narrowSchema of rec's schema, has
// them. Errors: a column whose values do not fit 32-bit offsets.
func narrowRecord(rec arrow.RecordBatch, schema *arrow.Schema) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, c := range rec.Columns() {
		want := schema.Field(i).Type
		if arrow.TypeEqual(c.DataType(), want) {
			c.Retain()
			cols[i] = c
			continue
		}
		out, err := compute.CastArray(context.Background(), c, compute.SafeCastOptions(want))
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", schema.Field(i).Name, err)
		}
		cols[i] = out
	}
	return array.NewRecordBatch(schema, cols, rec.NumRows()), nil
}
