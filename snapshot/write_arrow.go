package snapshot

import (
	"bufio"
	"io"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// arrowBufferBytes is how much of an Arrow IPC stream writeArrow collects before writing
// it on. The IPC writer writes each buffer of each record batch on its own, a few KiB
// each for DuckDB's 2,048-row batches; over HTTP/2 every write to a response waits for
// the connection's frame writer, so they are gathered first.
const arrowBufferBytes = 1 << 20

// writeArrow writes rr as an Arrow IPC stream (Arrow columnar format, "IPC Streaming
// Format"): the schema message, one record batch message per record, then the
// end-of-stream marker. The schema is written even when there are no records. On an
// error the end-of-stream marker is not written, so a reader sees a truncated stream.
func writeArrow(w io.Writer, rr array.RecordReader) error {
	bw := bufio.NewWriterSize(w, arrowBufferBytes)
	iw := ipc.NewWriter(bw, ipc.WithSchema(rr.Schema()))
	for rr.Next() {
		if err := iw.Write(rr.RecordBatch()); err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil {
		return err
	}
	if err := iw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}
