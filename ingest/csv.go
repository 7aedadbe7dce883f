package ingest

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ducktail/ducktail/store"
)

// csvDecoder decodes text/csv bodies: RFC 4180 with a header row naming the columns,
// read with encoding/csv. A UTF-8 byte order mark is skipped; lines may end in "\n" or
// "\r\n" (inside quoted fields "\r\n" is read as "\n", as encoding/csv does); quoted
// fields may hold commas, doubled quotes and newlines; blank lines are skipped; every
// row must have as many fields as the header (a ragged row is CodeInvalid naming its
// row and line).
//
// Empty fields follow DuckDB's CSV reader: an empty field is NULL, except that a quoted
// "" in a VARCHAR column is the empty string. Fields are trimmed of spaces and tabs
// before they are parsed as numbers, booleans, dates or times, but kept as they are for
// VARCHAR and BLOB (whose value is the field's raw bytes). A nested column's field is
// its JSON text, a UNION's its member's text (docs/design.md, "Column types").
type csvDecoder struct{}

// Decode implements Decoder. Header names are matched to columns exactly, then
// case-insensitively; an unknown name is CodeUnprocessable, two names for one column
// CodeInvalid; columns missing from the header are NULL.
func (csvDecoder) Decode(body []byte, s *store.Schema) (arrow.RecordBatch, error) {
	c := newCSVBody(body)
	header, err := c.header()
	if err != nil {
		return nil, err
	}
	colOf := make([]int, len(header))
	varchar := make([]bool, len(header))
	inHeader := make([]bool, len(s.Columns))
	for i, name := range header {
		_, ci := s.Column(name)
		if ci < 0 {
			return nil, &store.Error{Code: store.CodeUnprocessable, Line: 1, Column: name,
				Message: "unknown header field " + quoteValue(name) + ": the table has no such column"}
		}
		if inHeader[ci] {
			return nil, &store.Error{Code: store.CodeInvalid, Line: 1, Column: name,
				Message: "header field " + quoteValue(name) + " names column " + quoteValue(s.Columns[ci].Name) + " a second time"}
		}
		inHeader[ci] = true
		colOf[i] = ci
		varchar[i] = s.Columns[ci].Type == store.TypeVarchar
	}
	bs, err := newColumnBuilders(s, len(body))
	if err != nil {
		return nil, err
	}
	rows, maxRows := 0, textRowLimit(len(body), s)
	for {
		rec, line, err := c.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if rows++; rows > maxRows {
			return nil, locate(rowLimitError(maxRows), rows, line, "")
		}
		for i, f := range rec {
			b := bs[colOf[i]]
			if f == "" && !(varchar[i] && c.quoted(i)) {
				b.appendNull()
				continue
			}
			if err := b.appendText(f); err != nil {
				return nil, locate(inside(err, s.Columns[colOf[i]].Name), rows, line, "")
			}
		}
	}
	for ci, ok := range inHeader {
		if !ok {
			for range rows {
				bs[ci].appendNull()
			}
		}
	}
	return finishRecord(s, bs, rows), nil
}

// Infer implements Decoder: the header names the columns, in order, each checked
// with store.ValidateColumnName and unique case-insensitively (CodeInvalid); each
// column's type is inferred from all its values by textTypes (see infer.go).
func (csvDecoder) Infer(body []byte) ([]store.ColumnSpec, error) {
	c := newCSVBody(body)
	header, err := c.header()
	if err != nil {
		return nil, err
	}
	for i, name := range header {
		if err := store.ValidateColumnName(name); err != nil {
			return nil, locate(err, 0, 1, name)
		}
		for _, prev := range header[:i] {
			if store.SameName(prev, name) {
				return nil, &store.Error{Code: store.CodeInvalid, Line: 1, Column: name,
					Message: "header field " + quoteValue(name) + " repeats " + quoteValue(prev) + " (column names are case-insensitive)"}
			}
		}
	}
	types := make([]textTypes, len(header))
	for i := range types {
		types[i] = allTextTypes
	}
	for row := 1; ; row++ {
		rec, line, err := c.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		for i, f := range rec {
			if err := types[i].observe(f); err != nil {
				return nil, locate(err, row, line, header[i])
			}
		}
	}
	specs := make([]store.ColumnSpec, len(header))
	for i, name := range header {
		specs[i] = store.ColumnSpec{Name: name, Type: string(types[i].choose())}
	}
	return specs, nil
}

// csvBody reads one CSV body record by record, with the positions needed for error
// messages and for telling a quoted "" from an empty field.
type csvBody struct {
	body  []byte
	r     *csv.Reader
	lines lineCursor
	row   int
}

// newCSVBody starts reading body, skipping a UTF-8 byte order mark.
func newCSVBody(body []byte) *csvBody {
	body = bytes.TrimPrefix(body, []byte("\uFEFF"))
	r := csv.NewReader(bytes.NewReader(body))
	r.ReuseRecord = true
	return &csvBody{body: body, r: r, lines: lineCursor{body: body, line: 1}}
}

// header reads the header row; an empty body is CodeInvalid.
func (c *csvBody) header() ([]string, error) {
	rec, err := c.r.Read()
	if err == io.EOF {
		return nil, store.Errorf(store.CodeInvalid, "the CSV body is empty; a header row naming the columns is required")
	}
	if err != nil {
		return nil, c.parseError(err, 0)
	}
	return append([]string(nil), rec...), nil
}

// next returns the next data record and the line it starts on, or io.EOF. The record
// is only valid until the next call.
func (c *csvBody) next() ([]string, int, error) {
	rec, err := c.r.Read()
	if err == io.EOF {
		return nil, 0, io.EOF
	}
	c.row++
	if err != nil {
		return nil, 0, c.parseError(err, len(rec))
	}
	line, _ := c.r.FieldPos(0)
	return rec, line, nil
}

// quoted reports whether field i of the last record was written in quotes.
func (c *csvBody) quoted(i int) bool {
	off := c.lines.offset(c.r.FieldPos(i))
	return off >= 0 && off < len(c.body) && c.body[off] == '"'
}

// parseError turns an encoding/csv error into a CodeInvalid *store.Error at the row
// (0 for the header) and the line where that row starts; fields is the number of
// fields read for a ragged row.
func (c *csvBody) parseError(err error, fields int) error {
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return &store.Error{Code: store.CodeInvalid, Message: "invalid CSV", Err: err}
	}
	if errors.Is(pe.Err, csv.ErrFieldCount) {
		return &store.Error{Code: store.CodeInvalid, Row: c.row, Line: pe.StartLine,
			Message: fmt.Sprintf("row has %d fields, the header has %d", fields, c.r.FieldsPerRecord)}
	}
	return &store.Error{Code: store.CodeInvalid, Row: c.row, Line: pe.StartLine,
		Message: fmt.Sprintf("invalid CSV at line %d, column %d: %v", pe.Line, pe.Column, pe.Err)}
}

// lineCursor maps encoding/csv field positions (1-based line, 1-based byte column)
// back to body offsets. It moves forward only, so asking in reading order costs one
// pass over the body in all.
type lineCursor struct {
	body  []byte
	line  int // line that starts at start
	start int
}

// offset returns the body offset of a position, or -1 past the last line.
func (lc *lineCursor) offset(line, col int) int {
	if line < lc.line {
		lc.line, lc.start = 1, 0
	}
	for lc.line < line {
		i := bytes.IndexByte(lc.body[lc.start:], '\n')
		if i < 0 {
			return -1
		}
		lc.start += i + 1
		lc.line++
	}
	return lc.start + col - 1
}
