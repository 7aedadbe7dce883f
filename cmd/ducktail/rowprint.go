package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ducktail/ducktail/valuetext"
)

// rowPrinter prints rows as they arrive, for `tail`. Values are written as the server's
// own JSON and CSV outputs write them (valuetext.AppendJSONValue, valuetext.AppendTextValue), so
// that a row prints the same in `ducktail query` and `ducktail tail`.
type rowPrinter interface {
	// schema announces the columns of the rows that follow; a printer with a header
	// prints it when the column names change.
	schema(s *arrow.Schema) error
	// rows prints every row of r.
	rows(r arrow.RecordBatch) error
	// flush writes what is buffered.
	flush() error
	// restart makes the next schema print its header again (a new snapshot follows).
	restart()
}

// newRowPrinter returns the printer of format: "table" (aligned columns for a terminal,
// widening as wider values come), "ndjson" (one JSON object per row, keys in column
// order) or "csv" (RFC 4180 as the server writes it, a header row first and again when
// the columns change).
func newRowPrinter(format string, w io.Writer) (rowPrinter, error) {
	bw := bufio.NewWriter(w)
	switch format {
	case "table":
		return &tablePrinter{w: bw}, nil
	case "ndjson":
		return &ndjsonPrinter{w: bw}, nil
	case "csv":
		return &csvPrinter{w: bw}, nil
	}
	return nil, fmt.Errorf("--format %q: use table, ndjson or csv", format)
}

// columnNames tracks the column names last announced.
type columnNames struct {
	names []string
	shown bool
}

// changed records s's names and reports whether they differ from the last ones shown.
func (c *columnNames) changed(s *arrow.Schema) bool {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	if c.shown && slices.Equal(names, c.names) {
		return false
	}
	c.names, c.shown = names, true
	return true
}

type ndjsonPrinter struct {
	w    *bufio.Writer
	cols columnNames
	buf  []byte
}

func (p *ndjsonPrinter) schema(s *arrow.Schema) error {
	p.cols.changed(s)
	return nil
}

func (p *ndjsonPrinter) rows(r arrow.RecordBatch) error {
	p.cols.changed(r.Schema())
	for i := range int(r.NumRows()) {
		p.buf = append(p.buf[:0], '{')
		for j, col := range r.Columns() {
			if j > 0 {
				p.buf = append(p.buf, ',')
			}
			p.buf = valuetext.AppendJSONString(p.buf, p.cols.names[j])
			p.buf = append(p.buf, ':')
			p.buf = valuetext.AppendJSONValue(p.buf, col, i, false)
		}
		p.buf = append(p.buf, '}', '\n')
		if _, err := p.w.Write(p.buf); err != nil {
			return err
		}
	}
	return nil
}

func (p *ndjsonPrinter) flush() error { return p.w.Flush() }
func (p *ndjsonPrinter) restart()     { p.cols.shown = false }

type csvPrinter struct {
	w    *bufio.Writer
	cols columnNames
	buf  []byte
	text []byte
}

func (p *csvPrinter) schema(s *arrow.Schema) error {
	if !p.cols.changed(s) {
		return nil
	}
	p.buf = p.buf[:0]
	for i, name := range p.cols.names {
		if i > 0 {
			p.buf = append(p.buf, ',')
		}
		p.buf = valuetext.AppendCSVField(p.buf, []byte(name))
	}
	p.buf = append(p.buf, '\r', '\n')
	_, err := p.w.Write(p.buf)
	return err
}

func (p *csvPrinter) rows(r arrow.RecordBatch) error {
	if err := p.schema(r.Schema()); err != nil {
		return err
	}
	for i := range int(r.NumRows()) {
		p.buf = p.buf[:0]
		for j, col := range r.Columns() {
			if j > 0 {
				p.buf = append(p.buf, ',')
			}
			if !col.IsNull(i) {
				p.text = valuetext.AppendTextValue(p.text[:0], col, i)
				p.buf = valuetext.AppendCSVField(p.buf, p.text)
			}
		}
		p.buf = append(p.buf, '\r', '\n')
		if _, err := p.w.Write(p.buf); err != nil {
			return err
		}
	}
	return nil
}

func (p *csvPrinter) flush() error { return p.w.Flush() }
func (p *csvPrinter) restart()     { p.cols.shown = false }

// maxCellWidth truncates long values in the table format, in characters.
const maxCellWidth = 48

// tablePrinter prints aligned columns. Rows are printed as they come, so a column widens
// when a wider value arrives and earlier rows stay as they were printed.
type tablePrinter struct {
	w      *bufio.Writer
	cols   columnNames
	widths []int
	buf    []byte
}

func (p *tablePrinter) schema(s *arrow.Schema) error {
	if !p.cols.changed(s) {
		return nil
	}
	p.widths = make([]int, len(p.cols.names))
	header := make([]string, len(p.cols.names))
	rule := make([]string, len(p.cols.names))
	for i, name := range p.cols.names {
		header[i] = cellText(name)
		p.widths[i] = utf8.RuneCountInString(header[i])
		rule[i] = strings.Repeat("-", p.widths[i])
	}
	if err := p.line(header); err != nil {
		return err
	}
	return p.line(rule)
}

func (p *tablePrinter) rows(r arrow.RecordBatch) error {
	if err := p.schema(r.Schema()); err != nil {
		return err
	}
	cells := make([]string, r.NumCols())
	for i := range int(r.NumRows()) {
		for j, col := range r.Columns() {
			if col.IsNull(i) {
				cells[j] = "NULL"
				continue
			}
			p.buf = valuetext.AppendTextValue(p.buf[:0], col, i)
			cells[j] = cellText(string(p.buf))
		}
		if err := p.line(cells); err != nil {
			return err
		}
	}
	return nil
}

// line prints cells padded to the column widths, widening them first, without
// trailing spaces.
func (p *tablePrinter) line(cells []string) error {
	p.buf = p.buf[:0]
	for j, c := range cells {
		n := utf8.RuneCountInString(c)
		p.widths[j] = max(p.widths[j], n)
		if j > 0 {
			p.buf = append(p.buf, "  "...)
		}
		p.buf = append(p.buf, c...)
		p.buf = append(p.buf, strings.Repeat(" ", p.widths[j]-n)...)
	}
	p.buf = append(bytes.TrimRight(p.buf, " "), '\n')
	_, err := p.w.Write(p.buf)
	return err
}

func (p *tablePrinter) flush() error { return p.w.Flush() }
func (p *tablePrinter) restart()     { p.cols.shown = false }

// cellText makes a value fit one table cell: control characters become spaces, and text
// longer than maxCellWidth characters is cut with an ellipsis.
func cellText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > maxCellWidth {
		s = string([]rune(s)[:maxCellWidth-1]) + "…"
	}
	return s
}
