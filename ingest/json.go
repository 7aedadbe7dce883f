package ingest

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

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
// Values (the column builders in ingest_builders.go): null is NULL in any column;
// numbers are read from their text, integers exactly at any size, and must be whole
// and in range for integer columns; strings holding numbers are also accepted by the
// numeric columns, as the protobuf JSON mapping writes 64-bit integers, decimals and
// "NaN"/"Infinity"; true and false only go to BOOLEAN; VARCHAR takes strings, and
// objects and arrays as their JSON text, but rejects numbers and booleans rather than
// guess their spelling; BLOB takes base64 strings; DATE, TIME, TIMESTAMP and
// TIMESTAMPTZ take strings in ISO 8601 forms.
type jsonDecoder struct{ ndjson bool }

// Decode implements Decoder.
func (d jsonDecoder) Decode(body []byte, s *store.Schema) (arrow.RecordBatch, error) {
	bs, err := newColumnBuilders(s)
	if err != nil {
		return nil, err
	}
	v := &jsonDecodeVisitor{
		schema:  s,
		maxRows: textRowLimit(len(body), s),
		cols:    bs,
		seen:    make([]int, len(bs)),
		byName:  make(map[string]int),
	}
	sc := newJSONScanner(body, d.ndjson)
	if err := sc.rows(v); err != nil {
		return nil, err
	}
	return finishRecord(s, bs, v.row), nil
}

// Infer implements Decoder with jsonInferVisitor (see ingest_infer.go).
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

// maxJSONDepth bounds the nesting of arrays and objects inside a row value.
const maxJSONDepth = 512

// jsonScanner reads JSON text (RFC 8259) from one body in a single pass, tracking the
// line and byte column for error messages. It validates the full grammar, including UTF-8 in
// strings and escape sequences; lone surrogate escapes become U+FFFD, as encoding/json
// does.
type jsonScanner struct {
	s         string
	p         int // offset of the next byte
	line      int // 1-based line of s[p]
	lineStart int // offset where that line starts
	ndjson    bool
	buf       []byte // scratch for unescaping
}

// newJSONScanner copies body into a string once, so that values can be sliced from it.
func newJSONScanner(body []byte, ndjson bool) *jsonScanner {
	s := string(body)
	p := 0
	if strings.HasPrefix(s, "\uFEFF") {
		p = 3
	}
	return &jsonScanner{s: s, p: p, line: 1, lineStart: p, ndjson: ndjson}
}

// syntaxError returns the CodeInvalid error for malformed JSON at the current position.
func (sc *jsonScanner) syntaxError(format string, args ...any) error {
	return &store.Error{
		Code:    store.CodeInvalid,
		Line:    sc.line,
		Message: fmt.Sprintf("invalid JSON at line %d, column %d: ", sc.line, sc.p-sc.lineStart+1) + fmt.Sprintf(format, args...),
	}
}

// describe names the byte at the current position for syntax errors.
func (sc *jsonScanner) describe() string {
	if sc.p >= len(sc.s) {
		return "end of input"
	}
	r, _ := utf8.DecodeRuneInString(sc.s[sc.p:])
	return fmt.Sprintf("%q", r)
}

// rows reads every row of the body, as a JSON array or as NDJSON lines.
func (sc *jsonScanner) rows(v jsonRowVisitor) error {
	if sc.ndjson {
		return sc.lines(v)
	}
	return sc.array(v)
}

// array reads a body holding one JSON array of objects.
func (sc *jsonScanner) array(v jsonRowVisitor) error {
	if err := sc.skipSpace(); err != nil {
		return err
	}
	if sc.p >= len(sc.s) {
		return sc.syntaxError("the body is empty; send a JSON array of objects")
	}
	if sc.s[sc.p] != '[' {
		if sc.s[sc.p] == '{' {
			return sc.syntaxError("expected '[': send the rows as a JSON array of objects, or send one object per line as " + mediaNDJSON)
		}
		return sc.syntaxError("expected '[' starting a JSON array of objects, found %s", sc.describe())
	}
	sc.p++
	if err := sc.skipSpace(); err != nil {
		return err
	}
	if sc.p < len(sc.s) && sc.s[sc.p] == ']' {
		sc.p++
	} else {
		for row := 1; ; row++ {
			if err := sc.row(v, row); err != nil {
				return err
			}
			if err := sc.skipSpace(); err != nil {
				return err
			}
			if sc.p < len(sc.s) && sc.s[sc.p] == ',' {
				sc.p++
				if err := sc.skipSpace(); err != nil {
					return err
				}
				continue
			}
			if sc.p < len(sc.s) && sc.s[sc.p] == ']' {
				sc.p++
				break
			}
			return sc.syntaxError("expected ',' or ']' after row %d, found %s", row, sc.describe())
		}
	}
	if err := sc.skipSpace(); err != nil {
		return err
	}
	if sc.p < len(sc.s) {
		return sc.syntaxError("unexpected %s after the JSON array", sc.describe())
	}
	return nil
}

// lines reads an NDJSON body: one object per non-blank line.
func (sc *jsonScanner) lines(v jsonRowVisitor) error {
	row := 0
	for {
		sc.skipBlank()
		if sc.p >= len(sc.s) {
			return nil
		}
		if sc.s[sc.p] == '\n' {
			sc.newline()
			continue
		}
		row++
		if err := sc.row(v, row); err != nil {
			return err
		}
		sc.skipBlank()
		if sc.p < len(sc.s) {
			if sc.s[sc.p] != '\n' {
				return atRow(sc.syntaxError("expected the end of the line after the object, found %s", sc.describe()), row, sc.line)
			}
			sc.newline()
		}
	}
}

// row reads one row object and hands its members to v; errors get the row's number and
// the line where its object starts.
func (sc *jsonScanner) row(v jsonRowVisitor, row int) error {
	line := sc.line
	if sc.p >= len(sc.s) || sc.s[sc.p] != '{' {
		val, err := sc.value(0)
		if err != nil {
			return atRow(err, row, line)
		}
		return &store.Error{Code: store.CodeUnprocessable, Row: row, Line: line,
			Message: "row is a JSON " + val.kind.String() + ", not an object"}
	}
	if err := v.startRow(row); err != nil {
		return atRow(err, row, line)
	}
	if err := sc.object(v); err != nil {
		return atRow(err, row, line)
	}
	return nil
}

// object reads one object, at its '{', handing each member to v.
func (sc *jsonScanner) object(v jsonRowVisitor) error {
	sc.p++
	if err := sc.skipSpace(); err != nil {
		return err
	}
	if sc.p < len(sc.s) && sc.s[sc.p] == '}' {
		sc.p++
		v.endRow()
		return nil
	}
	for {
		if sc.p >= len(sc.s) || sc.s[sc.p] != '"' {
			return sc.syntaxError("expected a member name string, found %s", sc.describe())
		}
		raw, escaped, err := sc.scanString()
		if err != nil {
			return err
		}
		name := raw
		if escaped {
			name = sc.unescape(raw)
		}
		if err := sc.skipSpace(); err != nil {
			return err
		}
		if sc.p >= len(sc.s) || sc.s[sc.p] != ':' {
			return sc.syntaxError("expected ':' after member name, found %s", sc.describe())
		}
		sc.p++
		if err := sc.skipSpace(); err != nil {
			return err
		}
		val, err := sc.value(0)
		if err != nil {
			return err
		}
		if err := v.member(name, val); err != nil {
			return err
		}
		if err := sc.skipSpace(); err != nil {
			return err
		}
		if sc.p < len(sc.s) {
			switch sc.s[sc.p] {
			case ',':
				sc.p++
				if err := sc.skipSpace(); err != nil {
					return err
				}
				continue
			case '}':
				sc.p++
				v.endRow()
				return nil
			}
		}
		return sc.syntaxError("expected ',' or '}' after member %s, found %s", quoteValue(name), sc.describe())
	}
}

// skipSpace skips JSON whitespace (space, tab, CR, LF). In NDJSON a LF here would be
// inside an object and is an error.
func (sc *jsonScanner) skipSpace() error {
	for sc.p < len(sc.s) {
		switch sc.s[sc.p] {
		case ' ', '\t', '\r':
			sc.p++
		case '\n':
			if sc.ndjson {
				return sc.syntaxError("the line ends inside an object; NDJSON needs each object on one line")
			}
			sc.newline()
		default:
			return nil
		}
	}
	return nil
}

// skipBlank skips spaces, tabs and CRs, stopping at a LF.
func (sc *jsonScanner) skipBlank() {
	for sc.p < len(sc.s) && (sc.s[sc.p] == ' ' || sc.s[sc.p] == '\t' || sc.s[sc.p] == '\r') {
		sc.p++
	}
}

// newline consumes the LF at the current position.
func (sc *jsonScanner) newline() {
	sc.p++
	sc.line++
	sc.lineStart = sc.p
}

// value reads one JSON value at the current position; depth counts the arrays and
// objects around it inside the row value.
func (sc *jsonScanner) value(depth int) (jsonValue, error) {
	if sc.p >= len(sc.s) {
		return jsonValue{}, sc.syntaxError("unexpected end of input, expected a value")
	}
	switch c := sc.s[sc.p]; {
	case c == '"':
		raw, escaped, err := sc.scanString()
		if escaped {
			raw = sc.unescape(raw)
		}
		return jsonValue{jsonString, raw}, err
	case c == '{' || c == '[':
		start := sc.p
		kind := jsonObject
		if c == '[' {
			kind = jsonArray
		}
		err := sc.skipComposite(depth)
		return jsonValue{kind, sc.s[start:sc.p]}, err
	case c == '-' || isDigit(c):
		text, err := sc.scanNumber()
		return jsonValue{jsonNumber, text}, err
	case c == 't':
		return jsonValue{kind: jsonTrue}, sc.literal("true")
	case c == 'f':
		return jsonValue{kind: jsonFalse}, sc.literal("false")
	case c == 'n':
		return jsonValue{kind: jsonNull}, sc.literal("null")
	}
	return jsonValue{}, sc.syntaxError("expected a value, found %s", sc.describe())
}

// literal consumes the literal word at the current position.
func (sc *jsonScanner) literal(word string) error {
	if !strings.HasPrefix(sc.s[sc.p:], word) {
		return sc.syntaxError("invalid literal, expected %s", word)
	}
	sc.p += len(word)
	return nil
}

// skipComposite validates and skips the array or object at the current position.
func (sc *jsonScanner) skipComposite(depth int) error {
	if depth >= maxJSONDepth {
		return sc.syntaxError("values nest deeper than %d levels", maxJSONDepth)
	}
	isObject := sc.s[sc.p] == '{'
	closer := byte(']')
	if isObject {
		closer = '}'
	}
	sc.p++
	if err := sc.skipSpace(); err != nil {
		return err
	}
	if sc.p < len(sc.s) && sc.s[sc.p] == closer {
		sc.p++
		return nil
	}
	for {
		if isObject {
			if sc.p >= len(sc.s) || sc.s[sc.p] != '"' {
				return sc.syntaxError("expected a member name string, found %s", sc.describe())
			}
			if _, _, err := sc.scanString(); err != nil {
				return err
			}
			if err := sc.skipSpace(); err != nil {
				return err
			}
			if sc.p >= len(sc.s) || sc.s[sc.p] != ':' {
				return sc.syntaxError("expected ':' after member name, found %s", sc.describe())
			}
			sc.p++
			if err := sc.skipSpace(); err != nil {
				return err
			}
		}
		if err := sc.skipValue(depth + 1); err != nil {
			return err
		}
		if err := sc.skipSpace(); err != nil {
			return err
		}
		if sc.p < len(sc.s) {
			switch sc.s[sc.p] {
			case ',':
				sc.p++
				if err := sc.skipSpace(); err != nil {
					return err
				}
				continue
			case closer:
				sc.p++
				return nil
			}
		}
		return sc.syntaxError("expected ',' or '%c', found %s", closer, sc.describe())
	}
}

// skipValue validates and skips one value without unescaping strings.
func (sc *jsonScanner) skipValue(depth int) error {
	if sc.p < len(sc.s) {
		switch c := sc.s[sc.p]; {
		case c == '"':
			_, _, err := sc.scanString()
			return err
		case c == '{' || c == '[':
			return sc.skipComposite(depth)
		}
	}
	_, err := sc.value(depth)
	return err
}

// scanNumber reads a number (RFC 8259, section 6):
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (sc *jsonScanner) scanNumber() (string, error) {
	s, i := sc.s, sc.p
	start := i
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && isDigit(s[i]):
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	default:
		sc.p = i
		return "", sc.syntaxError("invalid number: expected a digit, found %s", sc.describe())
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || !isDigit(s[i]) {
			sc.p = i
			return "", sc.syntaxError("invalid number: expected a digit after '.', found %s", sc.describe())
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			sc.p = i
			return "", sc.syntaxError("invalid number: expected a digit in the exponent, found %s", sc.describe())
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	if i < len(s) && (isDigit(s[i]) || s[i] == '.' || s[i] == 'e' || s[i] == 'E' || s[i] == '+' || s[i] == '-') {
		sc.p = i
		return "", sc.syntaxError("invalid number %s", quoteValue(s[start:i+1]))
	}
	sc.p = i
	return s[start:i], nil
}

// plainStringByte marks the bytes a string holds as themselves: printable ASCII other
// than '"' and '\\'.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString reads a string (RFC 8259, section 7) at its opening quote. raw is the text
// between the quotes; escaped reports whether it holds escape sequences.
func (sc *jsonScanner) scanString() (raw string, escaped bool, err error) {
	s := sc.s
	start := sc.p + 1
	i := start
	for i < len(s) {
		c := s[i]
		if plainStringByte[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			sc.p = i + 1
			return s[start:i], escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(s) {
				i++
				break
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(s) || !isHex4(s[i+2:i+6]) {
					sc.p = i
					return "", false, sc.syntaxError("invalid \\u escape in string")
				}
				i += 6
			default:
				sc.p = i
				return "", false, sc.syntaxError("invalid escape %s in string", quoteValue(s[i:i+2]))
			}
		case c < 0x20:
			sc.p = i
			return "", false, sc.syntaxError("control character %q in string; escape it", rune(c))
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				sc.p = i
				return "", false, sc.syntaxError("invalid UTF-8 in string")
			}
			i += size
		}
	}
	sc.p = len(s)
	return "", false, sc.syntaxError("unterminated string")
}

// isHex4 reports whether s starts with four hex digits.
func isHex4(s string) bool {
	for i := 0; i < 4; i++ {
		if hexVal(s[i]) < 0 {
			return false
		}
	}
	return true
}

// hexVal returns the value of a hex digit, or -1.
func hexVal(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// hex4 returns the value of the four hex digits s starts with.
func hex4(s string) rune {
	return hexVal(s[0])<<12 | hexVal(s[1])<<8 | hexVal(s[2])<<4 | hexVal(s[3])
}

// unescape decodes the escape sequences of a string scanString has validated.
func (sc *jsonScanner) unescape(raw string) string {
	b := sc.buf[:0]
	for i := 0; i < len(raw); {
		j := strings.IndexByte(raw[i:], '\\')
		if j < 0 {
			b = append(b, raw[i:]...)
			break
		}
		b = append(b, raw[i:i+j]...)
		i += j + 1
		switch c := raw[i]; c {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := hex4(raw[i+1:])
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					r2 = hex4(raw[i+3:])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			b = utf8.AppendRune(b, r)
		default:
			b = append(b, c)
		}
		i++
	}
	sc.buf = b
	return string(b)
}

// jsonDecodeVisitor appends each row's members to the column builders. Names are
// resolved once: a member usually sits at the same position as in the previous row,
// so that position's name is compared first, then a map of names seen, then the
// schema (store.Schema.Column: exact, then case-insensitive).
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
	if v.k < len(v.prevNames) && v.prevNames[v.k] == name {
		ci = v.prevCols[v.k]
	} else {
		ci = v.resolve(name)
		if v.k < len(v.prevNames) {
			v.prevNames[v.k], v.prevCols[v.k] = name, ci
		} else {
			v.prevNames, v.prevCols = append(v.prevNames, name), append(v.prevCols, ci)
		}
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
		return locate(err, 0, 0, col)
	}
	return nil
}

// resolve returns the column index of a member name, or -1, remembering the answer.
func (v *jsonDecodeVisitor) resolve(name string) int {
	if ci, ok := v.byName[name]; ok {
		return ci
	}
	_, ci := v.schema.Column(name)
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
