package ingest

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/ducktail/ducktail/store"
)

// This file is the JSON tokenizer both JSON decoders share: jsonScanner validates the
// body's grammar and hands each row's members to a jsonRowVisitor (json.go for decoding,
// infer.go for inference).

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
		if err := sc.memberColon(); err != nil {
			return err
		}
		val, err := sc.value(0)
		if err != nil {
			return err
		}
		if err := v.member(name, val); err != nil {
			return err
		}
		more, closed, err := sc.separator('}')
		switch {
		case err != nil:
			return err
		case more:
			continue
		case closed:
			v.endRow()
			return nil
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
			if err := sc.memberColon(); err != nil {
				return err
			}
		}
		if err := sc.skipValue(depth + 1); err != nil {
			return err
		}
		more, closed, err := sc.separator(closer)
		switch {
		case err != nil:
			return err
		case more:
			continue
		case closed:
			return nil
		}
		return sc.syntaxError("expected ',' or '%c', found %s", closer, sc.describe())
	}
}

// skipDigits returns the index of the first byte at or after i in s that is not an ASCII
// digit.
func skipDigits(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// memberColon reads the ':' after a member name, with the white space around it.
func (sc *jsonScanner) memberColon() error {
	if err := sc.skipSpace(); err != nil {
		return err
	}
	if sc.p >= len(sc.s) || sc.s[sc.p] != ':' {
		return sc.syntaxError("expected ':' after member name, found %s", sc.describe())
	}
	sc.p++
	return sc.skipSpace()
}

// separator reads what follows a member or an element: a ',' (more is true; the white
// space after it is skipped too) or closer (closed is true). Neither is left for the
// caller to report.
func (sc *jsonScanner) separator(closer byte) (more, closed bool, err error) {
	if err := sc.skipSpace(); err != nil {
		return false, false, err
	}
	if sc.p < len(sc.s) {
		switch sc.s[sc.p] {
		case ',':
			sc.p++
			return true, false, sc.skipSpace()
		case closer:
			sc.p++
			return false, true, nil
		}
	}
	return false, false, nil
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
		i = skipDigits(s, i)
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
		i = skipDigits(s, i)
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
		i = skipDigits(s, i)
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
