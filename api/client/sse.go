package client

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"time"
)

// maxReconnectionTime bounds the reconnection time a server can set with an SSE retry
// field or a reconnect event's retry_ms, so that a garbled value cannot park a consumer.
const maxReconnectionTime = time.Hour

// sseReader parses text/event-stream by WHATWG HTML, "Interpreting an event stream": lines
// end in CRLF, LF or CR, and input may be split anywhere, a CR and its LF included (the LF
// is skipped when it arrives, so a line ending in CR is returned at once); one leading
// U+FEFF BYTE ORDER MARK is dropped; a line starting with ':' is a comment; "field:
// value" loses one leading space of the value, and a line without ':' is a field with an
// empty value; data fields are joined with LF; an event is dispatched at a blank line
// only when its data buffer is not empty, and its type is "message" when no event field
// was seen; the id field sets the last event ID buffer, which persists across events,
// unless it contains NUL; retry sets the reconnection time when it is all ASCII digits;
// other fields are ignored; an event not followed by a blank line when the input ends is
// discarded. Bytes are not UTF-8-decoded: ducktail writes only ASCII in these fields.
type sseReader struct {
	r       *bufio.Reader
	max     int
	started bool // the first line was read (and its BOM dropped)
	skipLF  bool // the last line ended in CR: a following LF belongs to it

	line      []byte
	size      int // bytes of the event read so far, for max
	eventType []byte
	data      []byte
	lastID    string
	retry     time.Duration
	hasRetry  bool
}

func newSSEReader(r *bufio.Reader, maxEventBytes int) *sseReader {
	return &sseReader{r: r, max: maxEventBytes}
}

func (p *sseReader) reconnectionTime() (time.Duration, bool) { return p.retry, p.hasRetry }

// readLine returns the next line without its end, valid until the next call.
func (p *sseReader) readLine() ([]byte, error) {
	p.line = p.line[:0]
	if p.skipLF {
		b, err := p.r.ReadByte()
		if err != nil {
			return nil, err
		}
		p.skipLF = false
		if b != '\n' {
			p.r.UnreadByte()
		}
	}
	for {
		if _, err := p.r.Peek(1); err != nil {
			if len(p.line) > 0 && err == io.EOF {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		buf, _ := p.r.Peek(p.r.Buffered())
		if i := indexDelim(buf, '\n', '\r'); i >= 0 {
			p.line = append(p.line, buf[:i]...)
			p.skipLF = buf[i] == '\r'
			p.r.Discard(i + 1)
			p.size += i + 1
			if p.size > p.max {
				return nil, ErrEventTooLarge
			}
			return p.line, nil
		}
		p.line = append(p.line, buf...)
		p.r.Discard(len(buf))
		p.size += len(buf)
		if p.size > p.max {
			return nil, ErrEventTooLarge
		}
	}
}

// next returns the next dispatched event. Errors: io.EOF at the end of input,
// io.ErrUnexpectedEOF when it ends inside an event, ErrEventTooLarge when an event passes
// the bound, or the body's read error.
func (p *sseReader) next() (wireEvent, error) {
	for {
		line, err := p.readLine()
		if err != nil {
			if err == io.EOF && (len(p.data) > 0 || len(p.eventType) > 0) {
				err = io.ErrUnexpectedEOF
			}
			return wireEvent{}, err
		}
		if !p.started {
			p.started = true
			line = bytes.TrimPrefix(line, []byte("\uFEFF"))
		}
		if len(line) == 0 {
			p.size = 0
			if len(p.data) == 0 {
				p.eventType = p.eventType[:0]
				continue
			}
			ev := wireEvent{name: "message", id: p.lastID, data: p.data[:len(p.data)-1]}
			if len(p.eventType) > 0 {
				ev.name = string(p.eventType)
			}
			p.eventType, p.data = p.eventType[:0], p.data[:0]
			return ev, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "event":
			p.eventType = append(p.eventType[:0], value...)
		case "data":
			p.data = append(append(p.data, value...), '\n')
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				p.lastID = string(value)
			}
		case "retry":
			if ms, ok := parseDigits(value); ok {
				p.retry, p.hasRetry = min(time.Duration(ms)*time.Millisecond, maxReconnectionTime), true
			}
		}
	}
}

// parseDigits parses a non-empty run of ASCII digits; false for anything else. Values
// too large for an int64 saturate at the hour that maxReconnectionTime allows.
func parseDigits(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		n = maxReconnectionTime.Milliseconds()
	}
	return min(n, maxReconnectionTime.Milliseconds()), true
}
