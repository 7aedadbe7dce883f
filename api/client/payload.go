package client

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// decodeIPC reads a whole Arrow IPC stream (Arrow columnar format, "IPC Streaming
// Format"): its schema and every record batch, each retained; the caller releases them.
func decodeIPC(r io.Reader) (*arrow.Schema, []arrow.RecordBatch, error) {
	rd, err := ipc.NewReader(r)
	if err != nil {
		return nil, nil, fmt.Errorf("read arrow ipc stream: %w", err)
	}
	defer rd.Release()
	var recs []arrow.RecordBatch
	for rd.Next() {
		rec := rd.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := rd.Err(); err != nil {
		releaseAll(recs)
		return nil, nil, fmt.Errorf("read arrow ipc stream: %w", err)
	}
	return rd.Schema(), recs, nil
}

// decodePayload decodes the data of a schema or batch event: base64 (RFC 4648 §4) of a
// self-contained Arrow IPC stream (docs/design.md, "The stream", encoding arrow).
func decodePayload(data []byte) (*arrow.Schema, []arrow.RecordBatch, error) {
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(raw, data)
	if err != nil {
		return nil, nil, fmt.Errorf("payload is not base64: %w", err)
	}
	return decodeIPC(bytes.NewReader(raw[:n]))
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}
