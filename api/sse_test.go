package api_test

import (
	"bufio"
	"bytes"
	"io"
	"strings"
)

// sseEvent is one dispatched Server-Sent Event.
type sseEvent struct {
	Event string
	ID    string
	Data  string
	// Retry is the last retry field seen before this event, in ms (-1: none).
	Retry int
}

// sseParser is a WHATWG HTML "Server-sent events" parser ("Interpreting an event
// stream"), written for the tests so that the bytes on the wire are read by rules, not by
// the server's own code: lines end in CRLF, LF or CR; a leading BOM is dropped; lines
// starting with ':' are comments; "field: value" drops one leading space; data fields
// join with LF; an event is dispatched at a blank line only when a data field was seen
// (our heartbeat sends an empty "data:" line for that reason); the id field persists
// across events and is ignored when it contains NUL; retry must be all digits. Input may
// arrive chunked at any byte.
type sseParser struct {
	r       *bufio.Reader
	started bool
	lastID  string
	retry   int
	pending bool // a CR was the last byte: a following LF belongs to it
}

func newSSEParser(r io.Reader) *sseParser {
	return &sseParser{r: bufio.NewReader(r), retry: -1}
}

// readLine returns one line without its terminator (CRLF, LF or CR).
func (p *sseParser) readLine() (string, error) {
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
func (p *sseParser) Next() (sseEvent, error) {
	var event, data strings.Builder
	hasData := false
	for {
		line, err := p.readLine()
		if err != nil {
			return sseEvent{}, io.EOF
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
			return sseEvent{Event: event.String(), ID: p.lastID, Data: data.String(), Retry: p.retry}, nil
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
