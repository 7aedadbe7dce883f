package snapshot

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/valuetext"
)

// writeJSON writes rr as one JSON object (RFC 8259) on one line:
// {"columns":[{"name":…,"type":…},…],"rows":[{…},…]<,cursors>}\n, where cursors are the
// pre-encoded members passed to encode, and each "type" is types[i] when given.
func writeJSON(w io.Writer, rr array.RecordReader, cursors []byte, types []string) error {
	cols := columnsOf(rr.Schema())
	for i := range cols {
		if i < len(types) {
			cols[i].typ = types[i]
		}
	}
	buf := make([]byte, 0, flushBytes+flushBytes/4)
	buf = append(buf, `{"columns":[`...)
	for i, c := range cols {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = valuetext.AppendJSONString(append(buf, `{"name":`...), c.name)
		buf = append(valuetext.AppendJSONString(append(buf, `,"type":`...), c.typ), '}')
	}
	buf = append(buf, `],"rows":[`...)
	enc := newRowEncoder(cols)
	first := true
	for rr.Next() {
		rec := rr.RecordBatch()
		for r := range int(rec.NumRows()) {
			if !first {
				buf = append(buf, ',')
			}
			first = false
			buf = enc.appendRow(buf, rec, r)
			if err := flushIfFull(w, &buf); err != nil {
				return err
			}
		}
	}
	if err := rr.Err(); err != nil {
		return err
	}
	buf = append(buf, ']')
	if len(cursors) > 0 {
		buf = append(append(buf, ','), cursors...)
	}
	buf = append(buf, '}', '\n')
	_, err := w.Write(buf)
	return err
}

// writeNDJSON writes rr as newline-delimited JSON: one object per row, each ended by "\n".
func writeNDJSON(w io.Writer, rr array.RecordReader) error {
	enc := newRowEncoder(columnsOf(rr.Schema()))
	buf := make([]byte, 0, flushBytes+flushBytes/4)
	for rr.Next() {
		rec := rr.RecordBatch()
		for r := range int(rec.NumRows()) {
			buf = append(enc.appendRow(buf, rec, r), '\n')
			if err := flushIfFull(w, &buf); err != nil {
				return err
			}
		}
	}
	if err := rr.Err(); err != nil {
		return err
	}
	_, err := w.Write(buf)
	return err
}

// rowEncoder appends rows as JSON objects keyed by column name.
type rowEncoder struct {
	// keys holds each column's encoded `"name":`.
	keys [][]byte
}

func newRowEncoder(cols []column) *rowEncoder {
	keys := make([][]byte, len(cols))
	for i, c := range cols {
		keys[i] = append(valuetext.AppendJSONString(nil, c.name), ':')
	}
	return &rowEncoder{keys: keys}
}

// appendRow appends row r of rec as {"name":value,…}.
func (e *rowEncoder) appendRow(dst []byte, rec arrow.RecordBatch, r int) []byte {
	dst = append(dst, '{')
	for c, key := range e.keys {
		if c > 0 {
			dst = append(dst, ',')
		}
		dst = valuetext.AppendJSONValue(append(dst, key...), rec.Column(c), r, false)
	}
	return append(dst, '}')
}

// flushIfFull writes *buf to w and empties it once it holds flushBytes or more.
func flushIfFull(w io.Writer, buf *[]byte) error {
	if len(*buf) < flushBytes {
		return nil
	}
	_, err := w.Write(*buf)
	*buf = (*buf)[:0]
	return err
}
