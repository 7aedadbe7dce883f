package snapshot

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// writeArrow writes rr as an Arrow IPC stream (Arrow columnar format, "IPC Streaming
// Format"): the schema message, one record batch message per record, then the
// end-of-stream marker. The schema is written even when there are no records. On an
// error the end-of-stream marker is not written, so a reader sees a truncated stream.
// The IPC writer writes each buffer of each record batch on its own, a few KiB each for
// DuckDB's 2,048-row batches: w should gather them (a snapshot's writeAhead does).
func writeArrow(w io.Writer, rr array.RecordReader) error {
	iw := ipc.NewWriter(w, ipc.WithSchema(rr.Schema()))
	for rr.Next() {
		if err := iw.Write(rr.RecordBatch()); err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil {
		return err
	}
	return iw.Close()
}
