package ingest

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ducktail/ducktail/store"
)

// jsonDecoder decodes application/json bodies (RFC 8259: one array of objects, one
// object per row) and, with ndjson set, application/x-ndjson and application/jsonl
// bodies (NDJSON spec 1.0 / JSON Lines: one object per line). Both share jsonScanner,
// a single pass over the body that feeds the column builders directly.
//
// Framing rules: a UTF-8 byte order mark is skipped (RFC 8259, section 8.1 allows
// ignoring it). In NDJSON, lines may end in "\n" or "\r\n", blank and whitespace-only
// lines are skipped, the last line needs no newline, and an object may not span lines
// (the NDJSON spec forbids newlines inside a JSON text); two objects on one line are
// rejected. Every row must be a JSON object; member names are matched to columns
// exactly, then case-insensitively, and a name that appears twice in one object
// (after that matching) is rejected.
//
// Values (the column builders in builders.go): null is NULL in any column;
// numbers are read from their text, integers exactly at any size, and must be whole
// and in range for integer columns; strings holding numbers are also accepted by the
// numeric columns, as the protobuf JSON mapping writes 64-bit integers, decimals and
// "NaN"/"Infinity"; true and false only go to BOOLEAN; VARCHAR takes strings, and
// objects and arrays as their JSON text, but rejects numbers and booleans rather than
// guess their spelling; BLOB takes base64 strings; DATE, TIME, TIMESTAMP and
// TIMESTAMPTZ take strings in ISO 8601 forms; the nested columns take arrays and objects
// (builders_nested.go), the other types as builders_scalar.go says.
type jsonDecoder struct{ ndjson bool }

// Decode implements Decoder.
func (d jsonDecoder) Decode(body []byte, s *store.Schema) (arrow.RecordBatch, error) {
	bs, err := newColumnBuilders(s, len(body))
	if err != nil {
		return nil, err
	}
	v := &jsonDecodeVisitor{
		schema:  s,
		maxRows: textRowLimit(len(body), s),
		cols:    bs,
		seen:    make([]int, len(bs)),
	}
	sc := newJSONScanner(body, d.ndjson)
	if err := sc.rows(v); err != nil {
		return nil, err
	}
	return finishRecord(s, bs, v.row), nil
}

// Infer implements Decoder with jsonInferVisitor (see infer.go).
func (d jsonDecoder) Infer(body []byte) ([]store.ColumnSpec, error) {
	v := newJSONInferVisitor()
	sc := newJSONScanner(body, d.ndjson)
	if err := sc.rows(v); err != nil {
		return nil, err
	}
	return v.specs()
}

// jsonKind is the kind of a JSON value (RFC 8259, section 3).
type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonFalse
	jsonTrue
	jsonNumber
	jsonString
	jsonObject
	jsonArray
)

// String names the kind as error messages do.
func (k jsonKind) String() string {
	switch k {
	case jsonNull:
		return "null"
	case jsonFalse, jsonTrue:
		return "boolean"
	case jsonNumber:
		return "number"
	case jsonString:
		return "string"
	case jsonObject:
		return "object"
	}
	return "array"
}

// jsonValue is one scanned JSON value. text is the number's text for numbers, the
// unescaped contents for strings, and the raw JSON text for objects and arrays.
type jsonValue struct {
	kind jsonKind
	text string
}

// shown returns v as error messages show it.
func (v jsonValue) shown() shown {
	switch v.kind {
	case jsonNull:
		return shown{text: "null", bare: true}
	case jsonFalse:
		return shown{text: "false", bare: true}
	case jsonTrue:
		return shown{text: "true", bare: true}
	case jsonString:
		return shown{text: v.text}
	}
	return shown{text: v.text, bare: true}
}

// jsonRowVisitor receives the rows jsonScanner reads. member gets each member of the
// row object in order, with its name unescaped; errors it returns are located at the
// row by the scanner.
type jsonRowVisitor interface {
	startRow(row int) error
	member(name string, v jsonValue) error
	endRow()
}

// jsonDecodeVisitor appends each row's members to the column builders. Names are
// resolved once: a member usually sits at the same position as the column it sets, or
// as in the previous row, so the names at that position are compared first, then a
// map of names seen, then the schema (store.Schema.Column: exact, then
// case-insensitive).
type jsonDecodeVisitor struct {
	schema    *store.Schema
	cols      []columnBuilder
	seen      []int // row number that last set each column
	row       int
	maxRows   int
	k         int // member position in the row
	byName    map[string]int
	prevNames []string
	prevCols  []int
}

func (v *jsonDecodeVisitor) startRow(row int) error {
	if row > v.maxRows {
		return rowLimitError(v.maxRows)
	}
	v.row = row
	v.k = 0
	return nil
}

// member appends one member's value to its column. Errors: an unknown field, a
// column set twice in one object, a value that does not fit the column.
func (v *jsonDecodeVisitor) member(name string, val jsonValue) error {
	var ci int
	switch {
	case v.k < len(v.schema.Columns) && v.schema.Columns[v.k].Name == name:
		ci = v.k
	case v.k < len(v.prevNames) && v.prevNames[v.k] == name:
		ci = v.prevCols[v.k]
	default:
		ci = v.resolve(name)
		for len(v.prevNames) <= v.k {
			// No column is named "" (store.ValidateColumnName), so padding matches none.
			v.prevNames, v.prevCols = append(v.prevNames, ""), append(v.prevCols, -1)
		}
		v.prevNames[v.k], v.prevCols[v.k] = name, ci
	}
	v.k++
	if ci < 0 {
		return &store.Error{Code: store.CodeUnprocessable, Column: name,
			Message: "unknown field " + quoteValue(name) + ": the table has no such column"}
	}
	col := v.schema.Columns[ci].Name
	if v.seen[ci] == v.row {
		return &store.Error{Code: store.CodeUnprocessable, Column: col,
			Message: "field " + quoteValue(name) + " sets column " + quoteValue(col) + " a second time in the same object"}
	}
	v.seen[ci] = v.row
	if err := v.cols[ci].appendJSON(val); err != nil {
		return inside(err, col)
	}
	return nil
}

// resolve returns the column index of a member name, or -1, remembering the answer.
func (v *jsonDecodeVisitor) resolve(name string) int {
	if ci, ok := v.byName[name]; ok {
		return ci
	}
	_, ci := v.schema.Column(name)
	if v.byName == nil {
		v.byName = make(map[string]int)
	}
	v.byName[name] = ci
	return ci
}

// endRow appends NULL to every column the row did not set.
func (v *jsonDecodeVisitor) endRow() {
	for i, r := range v.seen {
		if r != v.row {
			v.cols[i].appendNull()
		}
	}
}
