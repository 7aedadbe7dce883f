package snapshot

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/store"
)

// writeCSV writes rr as CSV (RFC 4180): a header row of column names, then one record per
// row; fields separated by ",", records ended by CRLF. NULL is an empty unquoted field;
// a field is quoted when it is empty (so "" is the empty string), holds ',', '"', CR or
// LF, or starts with a space or tab. Values are the text of store.AppendTextValue.
func writeCSV(w io.Writer, rr array.RecordReader) error {
	cols := columnsOf(rr.Schema())
	buf := make([]byte, 0, flushBytes+flushBytes/4)
	for i, c := range cols {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendCSVField(buf, []byte(c.name))
	}
	buf = append(buf, '\r', '\n')
	var text []byte
	for rr.Next() {
		rec := rr.RecordBatch()
		for r := range int(rec.NumRows()) {
			for c := range cols {
				if c > 0 {
					buf = append(buf, ',')
				}
				if col := rec.Column(c); !col.IsNull(r) {
					text = store.AppendTextValue(text[:0], col, r)
					buf = appendCSVField(buf, text)
				}
			}
			buf = append(buf, '\r', '\n')
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

// appendCSVField appends one non-NULL field, quoted when needed.
func appendCSVField(dst, field []byte) []byte {
	if !csvNeedsQuotes(field) {
		return append(dst, field...)
	}
	dst = append(dst, '"')
	for _, b := range field {
		if b == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, b)
	}
	return append(dst, '"')
}

func csvNeedsQuotes(field []byte) bool {
	if len(field) == 0 || field[0] == ' ' || field[0] == '\t' {
		return true
	}
	for _, b := range field {
		if b == ',' || b == '"' || b == '\r' || b == '\n' {
			return true
		}
	}
	return false
}
