package stream

import (
	"bytes"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/valuetext"
)

// Encoding is how a schema or batch payload is represented inside an event.
type Encoding int

// Payload encodings (DESIGN.md, "The stream").
const (
	// EncodingArrow: an Arrow IPC stream (Arrow columnar format, "IPC Streaming
	// Format"), base64-encoded (RFC 4648 §4) — the schema message, then the record
	// batches, then the end-of-stream marker, decodable alone by any Arrow reader.
	EncodingArrow Encoding = iota
	// EncodingJSON: column names and types once in schema, then positional rows; int64
	// and uint64 values beyond 2^53−1 as strings so JavaScript loses nothing.
	EncodingJSON
)

// ParseEncoding maps the ?encoding= query value ("" or "arrow", "json").
func ParseEncoding(s string) (Encoding, error) {
	switch s {
	case "", "arrow":
		return EncodingArrow, nil
	case "json":
		return EncodingJSON, nil
	}
	return 0, fmt.Errorf("unknown encoding %q: use arrow or json", s)
}

// ArrowIPC returns the Arrow IPC stream holding schema s and then recs (none for a
// schema-only payload).
func ArrowIPC(s *arrow.Schema, recs []arrow.RecordBatch) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s))
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			return nil, fmt.Errorf("encode arrow ipc: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encode arrow ipc: %w", err)
	}
	return buf.Bytes(), nil
}

// appendJSONSchema appends {"columns":[{"name":…,"type":…},…]}.
func appendJSONSchema(dst []byte, s *store.Schema) []byte {
	dst = append(dst, `{"columns":[`...)
	for i, c := range s.Columns {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"name":`...)
		dst = valuetext.AppendJSONString(dst, c.Name)
		dst = append(dst, `,"type":`...)
		dst = valuetext.AppendJSONString(dst, string(c.Type))
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// appendJSONRows appends {"rows":[[v,…],…]} with the rows of recs in order.
func appendJSONRows(dst []byte, recs []arrow.RecordBatch) []byte {
	dst = append(dst, `{"rows":[`...)
	first := true
	for _, r := range recs {
		cols := r.Columns()
		for i := 0; i < int(r.NumRows()); i++ {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, '[')
			for j, c := range cols {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = valuetext.AppendJSONValue(dst, c, i, true)
			}
			dst = append(dst, ']')
		}
	}
	return append(dst, "]}"...)
}
