package client

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime"
	"time"
)

// Framing is how the server delimits events, asked for with the Accept header and
// confirmed by the response's Content-Type (docs/design.md, "The stream";
// "Framing"). Its value is the media type.
type Framing string

// The framings ducktail serves. The consumer reads whichever the response declares, so
// all three deliver the same events.
const (
	// FramingSSE is text/event-stream (WHATWG HTML, "Server-sent events"), the default.
	FramingSSE Framing = "text/event-stream"
	// FramingNDJSON is application/x-ndjson: one JSON object per line.
	FramingNDJSON Framing = "application/x-ndjson"
	// FramingJSONSeq is application/json-seq (RFC 7464): RS, a JSON object, LF. Its
	// leading separator lets a reader resynchronise after a truncated record.
	FramingJSONSeq Framing = "application/json-seq"
)

// Event names (docs/design.md, "The stream"). An event of any other name is ignored, so that
// a newer server can add events.
const (
	eventSchema          = "schema"
	eventBatch           = "batch"
	eventHeartbeat       = "heartbeat"
	eventRefreshRequired = "refresh-required"
	eventReconnect       = "reconnect"
	eventFailure         = "failure"
)

// wireEvent is one event as framed on the wire, before its payload is decoded.
type wireEvent struct {
	name string
	// id is the event's cursor: for SSE the last event ID buffer when the event was
	// dispatched (WHATWG), for the JSON framings the record's "id" member.
	id string
	// data is the SSE data buffer, or the JSON framings' "data" member: a JSON string's
	// contents, or the raw JSON of any other value. Valid until the next call to next.
	data []byte
}

// eventReader reads the events of one response.
type eventReader interface {
	// next returns the next event. At the end of the response it returns io.EOF, or
	// io.ErrUnexpectedEOF when the response ended inside an event (which is discarded);
	// ErrEventTooLarge past the size bound; a read error of the body as is.
	next() (wireEvent, error)
	// reconnectionTime returns the SSE reconnection time set by the last retry field
	// (WHATWG), and whether one was seen.
	reconnectionTime() (time.Duration, bool)
}

// newEventReader returns the reader for a response of contentType (media type
// parameters ignored). Errors: a media type that is none of the three framings.
func newEventReader(contentType string, body io.Reader, maxEventBytes int) (eventReader, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, fmt.Errorf("stream response Content-Type %q: %w", contentType, err)
	}
	br := bufio.NewReaderSize(body, 64<<10)
	switch Framing(mt) {
	case FramingSSE:
		return newSSEReader(br, maxEventBytes), nil
	case FramingNDJSON:
		return &jsonReader{r: br, max: maxEventBytes}, nil
	case FramingJSONSeq:
		return &jsonReader{r: br, max: maxEventBytes, seq: true}, nil
	}
	return nil, fmt.Errorf("stream response Content-Type %q is not an event stream", contentType)
}

// indexDelim returns the index in b of the first of two delimiter bytes, or -1. It uses
// bytes.IndexByte twice, which is much faster than a byte loop on long base64 lines.
func indexDelim(b []byte, d1, d2 byte) int {
	i := bytes.IndexByte(b, d1)
	if i >= 0 {
		b = b[:i]
	}
	if j := bytes.IndexByte(b, d2); j >= 0 {
		return j
	}
	return i
}
