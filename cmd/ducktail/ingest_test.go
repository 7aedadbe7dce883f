package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestRecordChunksBytes checks that an Arrow file of wide rows is cut into chunks of at
// most maxChunkBytes of Arrow buffers, fewer rows than --chunk-rows, none lost.
func TestRecordChunksBytes(t *testing.T) {
	const cols, rows = 10, 600_000 // 80 bytes a row, 48 MB in all
	fields := make([]arrow.Field, cols)
	arrays := make([]arrow.Array, cols)
	vals := make([]int64, rows)
	for i := range vals {
		vals[i] = int64(i)
	}
	for i := range fields {
		fields[i] = arrow.Field{Name: string(rune('a' + i)), Type: arrow.PrimitiveTypes.Int64}
		b := array.NewInt64Builder(memory.DefaultAllocator)
		b.AppendValues(vals, nil)
		arrays[i] = b.NewArray()
	}
	schema := arrow.NewSchema(fields, nil)
	path := filepath.Join(t.TempDir(), "wide.arrows")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := ipc.NewWriter(f, ipc.WithSchema(schema))
	if err := w.Write(array.NewRecordBatch(schema, arrays, rows)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	src, err := newChunkSource(fileReading{format: "arrow", chunkRows: defaultChunkRows}, &countingFile{f: in})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	total := 0
	for {
		ch, err := src.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ch.rows*cols*8 > maxChunkBytes {
			t.Errorf("a chunk of %d rows holds %d bytes, over %d", ch.rows, ch.rows*cols*8, maxChunkBytes)
		}
		got = append(got, ch.rows)
		total += ch.rows
	}
	if want := maxChunkBytes / (cols * 8); len(got) != 2 || got[0] != want || total != rows {
		t.Errorf("chunks of %v rows, want %d rows first and %d in all", got, want, rows)
	}
}
