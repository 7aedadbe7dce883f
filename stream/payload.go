package stream

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

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
		r, err := compactUnions(r)
		if err != nil {
			return nil, fmt.Errorf("encode arrow ipc: %w", err)
		}
		err = w.Write(r)
		r.Release()
		if err != nil {
			return nil, fmt.Errorf("encode arrow ipc: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encode arrow ipc: %w", err)
	}
	return buf.Bytes(), nil
}

// schemaMessage is the encapsulated Arrow IPC schema message (Arrow columnar format,
// "Encapsulated message format") of one schema version of a table, encoded once, by the
// first live commit whose payload needs it, and written at the head of the payload of every
// commit of that version: each payload stays a whole IPC stream, decodable alone.
type schemaMessage struct {
	schema *arrow.Schema
	// whole is true for a schema holding a dictionary: ipc.Writer writes each
	// dictionary's batch before the record batch, so those payloads are written whole.
	whole bool

	once  sync.Once
	bytes []byte
	err   error
}

func newSchemaMessage(s *store.Schema) *schemaMessage {
	as := s.Arrow()
	whole := false
	for _, f := range as.Fields() {
		whole = whole || holdsType(f.Type, func(dt arrow.DataType) bool { return dt.ID() == arrow.DICTIONARY })
	}
	return &schemaMessage{schema: as, whole: whole}
}

// encoded returns the schema message's bytes, as ipc.Writer writes them at a stream's start.
func (m *schemaMessage) encoded() ([]byte, error) {
	m.once.Do(func() {
		var buf bytes.Buffer
		p := ipc.GetSchemaPayload(m.schema, memory.DefaultAllocator)
		defer p.Release()
		if _, err := p.WritePayload(&buf); err != nil {
			m.err = fmt.Errorf("encode arrow ipc schema: %w", err)
		}
		m.bytes = buf.Bytes()
	})
	return m.bytes, m.err
}

// endOfStream is the IPC stream's end-of-stream marker: the continuation token and a zero
// metadata length (Arrow columnar format, "IPC Streaming Format").
var endOfStream = []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}

// stream returns ArrowIPC(s, recs), byte for byte, with m's schema message reused when s
// is m's schema (m may be nil): that message, then each record batch message, then the
// end-of-stream marker. bodyBytes, the size of recs' buffers, sizes the result.
func (m *schemaMessage) stream(s *arrow.Schema, recs []arrow.RecordBatch, bodyBytes int64) ([]byte, error) {
	if m == nil || m.whole || !s.Equal(m.schema) {
		return ArrowIPC(s, recs)
	}
	head, err := m.encoded()
	if err != nil {
		return nil, err
	}
	// A record batch message's metadata is about as long as the schema message (a few
	// dozen bytes per column), its body about as long as the record's buffers.
	buf := bytes.NewBuffer(make([]byte, 0, 2*len(head)+int(bodyBytes)+256))
	buf.Write(head)
	for _, r := range recs {
		if err := writeRecordMessage(buf, r); err != nil {
			return nil, err
		}
	}
	buf.Write(endOfStream)
	return buf.Bytes(), nil
}

// writeRecordMessage writes the encapsulated record batch message of rec to buf, as
// ipc.Writer writes it.
func writeRecordMessage(buf *bytes.Buffer, rec arrow.RecordBatch) error {
	rec, err := compactUnions(rec)
	if err != nil {
		return fmt.Errorf("encode arrow ipc: %w", err)
	}
	defer rec.Release()
	p, err := ipc.GetRecordBatchPayload(rec)
	if err != nil {
		return fmt.Errorf("encode arrow ipc: %w", err)
	}
	defer p.Release()
	if _, err := p.WritePayload(buf); err != nil {
		return fmt.Errorf("encode arrow ipc: %w", err)
	}
	return nil
}

// compactUnions returns rec (retained) or, when a column holds a union, a copy of rec
// whose union type-code (and dense offset) buffers are padded: arrow-go's IPC writer
// (v18.8) slices those buffers at offset+padded length, past their end when they are not
// padded to 8 bytes (as DuckDB's are not) and the array is a slice at a non-zero offset,
// as replayed commits are slices of a scanned chunk.
func compactUnions(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := rec.Columns()
	var out []arrow.Array
	for i, c := range cols {
		if !hasUnion(c.DataType()) {
			continue
		}
		if out == nil {
			out = slices.Clone(cols)
		}
		d := padUnionBuffers(c.Data())
		out[i] = array.MakeFromData(d)
		d.Release()
		defer out[i].Release()
	}
	if out == nil {
		rec.Retain()
		return rec, nil
	}
	return array.NewRecordBatch(rec.Schema(), out, rec.NumRows()), nil
}

// padUnionBuffers returns d with every union's type codes and offsets copied into
// buffers 64 bytes longer, at any depth; other buffers are shared. A new reference.
func padUnionBuffers(d arrow.ArrayData) arrow.ArrayData {
	if !hasUnion(d.DataType()) {
		d.Retain()
		return d
	}
	bufs := slices.Clone(d.Buffers())
	if _, ok := d.DataType().(arrow.UnionType); ok {
		for i := 1; i < len(bufs); i++ {
			if bufs[i] != nil {
				padded := make([]byte, bufs[i].Len()+64)
				copy(padded, bufs[i].Bytes())
				bufs[i] = memory.NewBufferBytes(padded)
			}
		}
	}
	kids := make([]arrow.ArrayData, len(d.Children()))
	for i, c := range d.Children() {
		kids[i] = padUnionBuffers(c)
		defer kids[i].Release()
	}
	return array.NewData(d.DataType(), d.Len(), bufs, kids, d.NullN(), d.Offset())
}

// hasUnion reports whether dt is or holds a union type.
func hasUnion(dt arrow.DataType) bool {
	return holdsType(dt, func(dt arrow.DataType) bool {
		_, ok := dt.(arrow.UnionType)
		return ok
	})
}

// holdsType reports whether is is true of dt or of a type dt holds, at any depth: a
// nested type's fields, a dictionary's values.
func holdsType(dt arrow.DataType, is func(arrow.DataType) bool) bool {
	if is(dt) {
		return true
	}
	if d, ok := dt.(*arrow.DictionaryType); ok {
		return holdsType(d.ValueType, is)
	}
	if n, ok := dt.(arrow.NestedType); ok {
		for _, f := range n.Fields() {
			if holdsType(f.Type, is) {
				return true
			}
		}
	}
	return false
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
