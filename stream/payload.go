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

// Payload encodings (docs/design.md, "The stream").
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

// framePayload is the payload of a schema or batch event in one encoding: Arrow IPC
// bytes (base64-encoded when framed) or a JSON value.
type framePayload struct{ ipc, json []byte }

// schemaPayload returns the payload of the schema event of s: a schema-only Arrow IPC
// stream, or {"columns":[…]}.
func schemaPayload(enc Encoding, s *store.Schema) (framePayload, error) {
	if enc == EncodingJSON {
		return framePayload{json: appendJSONSchema(nil, s)}, nil
	}
	b, err := ArrowIPC(s.Arrow(), nil)
	return framePayload{ipc: b}, err
}

// batchPayload returns the payload of the batch event of one commit whose rows are recs,
// of Arrow schema s: an Arrow IPC stream, or {"rows":[…]}.
func batchPayload(enc Encoding, s *arrow.Schema, recs []arrow.RecordBatch) (framePayload, error) {
	if enc == EncodingJSON {
		return framePayload{json: appendJSONRows(nil, recs)}, nil
	}
	b, err := ArrowIPC(s, recs)
	return framePayload{ipc: b}, err
}

// dataFrame frames a schema or batch event carrying p, with id as its cursor: the one
// path by which live delivery and replay alike build the frames that carry data. commit
// is the commit of a batch event, zero for a schema event.
func dataFrame(f Framing, event, id string, p framePayload, commit CommitMeta) (Frame, error) {
	b, err := encodePayload(f, event, id, p.ipc, p.json)
	if err != nil {
		return Frame{}, err
	}
	return Frame{Event: event, Bytes: b, Commit: commit}, nil
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
