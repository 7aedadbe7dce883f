// Package ssetest parses Server-Sent Events by the WHATWG rules, for tests: the bytes a
// server writes are read by the standard, not by the code that wrote them.
package ssetest

import (
	"bufio"
	"bytes"
	"io"
	"strings"
)

// Event is one dispatched Server-Sent Event.
type Event struct {
	Event string
	ID    string
	Data  string
	// Retry is the last retry field seen before this event, in ms (-1: none).
	Retry int
}

// Parser is a WHATWG HTML "Server-sent events" parser ("Interpreting an event
// stream"), written for tests so that the bytes on the wire are read by rules, not by
// the server's own code: lines end in CRLF, LF or CR; a leading BOM is dropped; lines
// starting with ':' are comments; "field: value" drops one leading space; data fields
// join with LF; an event is dispatched at a blank line only when a data field was seen
// (our heartbeat sends an empty "data:" line for that reason); the id field persists
// across events and is ignored when it contains NUL; retry must be all digits. Input may
// arrive chunked at any byte.
type Parser struct {
	r       *bufio.Reader
	started bool
	lastID  string
	retry   int
	pending bool // a CR was the last byte: a following LF belongs to it
}

// NewParser returns a Parser reading r.
func NewParser(r io.Reader) *Parser {
	return &Parser{r: bufio.NewReader(r), retry: -1}
}

// readLine returns one line without its terminator (CRLF, LF or CR).
func (p *Parser) readLine() (string, error) {
	var b bytes.Buffer
	for {
		c, err := p.r.ReadByte()
		if err != nil {
			if b.Len() > 0 {
				return b.String(), io.ErrUnexpectedEOF
			}
			return "", err
		}
		if p.pending {
			p.pending = false
			if c == '\n' {
				continue
			}
		}
		switch c {
		case '\n':
			return b.String(), nil
		case '\r':
			p.pending = true
			return b.String(), nil
		}
		b.WriteByte(c)
	}
}

// Next returns the next dispatched event. At the end of input it returns io.EOF; a
// partial event at the end (a truncated stream) is discarded, as the standard says.
func (p *Parser) Next() (Event, error) {
	var event, data strings.Builder
	hasData := false
	for {
		line, err := p.readLine()
		if err != nil {
			return Event{}, io.EOF
		}
		if !p.started {
			p.started = true
			line = strings.TrimPrefix(line, "\ufeff")
		}
		if line == "" {
			if !hasData {
				event.Reset()
				continue
			}
			return Event{Event: event.String(), ID: p.lastID, Data: data.String(), Retry: p.retry}, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch field {
		case "event":
			event.Reset()
			event.WriteString(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		case "id":
			if !strings.ContainsRune(value, 0) {
				p.lastID = value
			}
		case "retry":
			if value != "" && strings.Trim(value, "0123456789") == "" {
				n := 0
				for _, c := range value {
					n = n*10 + int(c-'0')
				}
				p.retry = n
			}
		}
	}
}
