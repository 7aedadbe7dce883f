package snapshot

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/valuetext"
)

// writeCSV writes rr as CSV (RFC 4180): a header row of column names, then one record per
// row; fields separated by ",", records ended by CRLF. NULL is an empty unquoted field;
// a field is quoted when it is empty (so "" is the empty string), holds ',', '"', CR or
// LF, or starts with a space or tab. Values are the text of valuetext.AppendTextValue.
func writeCSV(w io.Writer, rr array.RecordReader) error {
	cols := columnsOf(rr.Schema())
	buf := make([]byte, 0, flushBytes+flushBytes/4)
	for i, c := range cols {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = valuetext.AppendCSVField(buf, []byte(c.name))
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
					text = valuetext.AppendTextValue(text[:0], col, r)
					buf = valuetext.AppendCSVField(buf, text)
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
