package stream

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ducktail/ducktail/valuetext"
)

// Framing is how events are delimited on the wire, chosen by the Accept header.
type Framing int

// Framings (docs/design.md, "The stream"; docs/design.md, "Framing").
const (
	// FramingSSE: text/event-stream (WHATWG HTML, "Server-sent events"): event, id and
	// data fields, one line each, a blank line after each event.
	FramingSSE Framing = iota
	// FramingNDJSON: application/x-ndjson: one JSON object per line.
	FramingNDJSON
	// FramingJSONSeq: application/json-seq (RFC 7464): RS (0x1E), a JSON object, LF.
	FramingJSONSeq
)

// ContentType returns the media type of the framing.
func (f Framing) ContentType() string {
	switch f {
	case FramingNDJSON:
		return "application/x-ndjson"
	case FramingJSONSeq:
		return "application/json-seq"
	}
	return "text/event-stream"
}

// Event names, the fixed set of the event table of docs/design.md, "The stream". No other name is ever written,
// so no name can put CR, LF or NUL into an SSE field.
const (
	EventSchema          = "schema"
	EventBatch           = "batch"
	EventHeartbeat       = "heartbeat"
	EventRefreshRequired = "refresh-required"
	EventReconnect       = "reconnect"
	EventFailure         = "failure"
)

// Frame is one event, framed and ready to write.
type Frame struct {
	// Event is one of the Event* names.
	Event string
	// Bytes is the framed event. It may be shared with other subscribers: never modify.
	Bytes []byte
	// Terminal is true for refresh-required, reconnect and failure: the response ends
	// after this frame.
	Terminal bool
	// Reason is the reason (refresh-required, reconnect) or code (failure) of a terminal
	// frame.
	Reason string
	// Commit is the commit a batch frame carries (zero for other frames), for the
	// commit-to-write latency metric.
	Commit CommitMeta

	// pin is the replay cache entry a replayed batch frame is held by, released once the
	// frame was written (Session.Next).
	pin *replayEntry
}

// ErrUnframeable is returned by Framing.Encode for an event it refuses to write: an
// unknown event name, or an id or data that would break the framing.
var ErrUnframeable = errors.New("event cannot be framed")

var eventNames = map[string]bool{
	EventSchema: true, EventBatch: true, EventHeartbeat: true,
	EventRefreshRequired: true, EventReconnect: true, EventFailure: true,
}

// Encode appends one event to dst in framing f and returns the extended slice.
//
// SSE (WHATWG HTML, "Server-sent events"): "event: <event>", then "id: <id>" when id is
// not empty, then one "data: <data>" line ("data:" when empty), then a blank line. NDJSON
// and JSON-seq (RFC 7464): {"event":…,"id":…,"data":…} then LF, JSON-seq with RS first;
// data is inserted as a JSON value when dataIsJSON, otherwise as a JSON string.
//
// Encode refuses (ErrUnframeable) an event name outside the fixed set, an id holding CR,
// LF, NUL or invalid UTF-8, data that is not valid UTF-8 (all three media types are
// UTF-8 text), and, where data is written raw (SSE, or JSON data), data holding CR, LF
// or NUL: a record never contains a raw newline, because for NDJSON the line is the only
// record boundary there is, and an SSE field ends at CR or LF (docs/design.md, "Framing").
func (f Framing) Encode(dst []byte, event, id string, data []byte, dataIsJSON bool) ([]byte, error) {
	if err := checkHead(event, id); err != nil {
		return dst, err
	}
	if !utf8.Valid(data) || ((f == FramingSSE || dataIsJSON) && bytes.ContainsAny(data, "\r\n\x00")) {
		return dst, fmt.Errorf("%w: data holds CR, LF, NUL or invalid UTF-8", ErrUnframeable)
	}
	dst = f.appendHead(dst, event, id)
	if f == FramingSSE {
		if len(data) == 0 {
			return append(dst, "data:\n\n"...), nil
		}
		dst = append(dst, "data: "...)
		dst = append(dst, data...)
		return append(dst, "\n\n"...), nil
	}
	if len(data) > 0 {
		dst = append(dst, `,"data":`...)
		if dataIsJSON {
			dst = append(dst, data...)
		} else {
			dst = valuetext.AppendJSONString(dst, string(data))
		}
	}
	return append(dst, "}\n"...), nil
}

// checkHead refuses (ErrUnframeable) an event name outside the fixed set and an id holding
// CR, LF, NUL or invalid UTF-8.
func checkHead(event, id string) error {
	if !eventNames[event] {
		return fmt.Errorf("%w: unknown event %q", ErrUnframeable, event)
	}
	if strings.ContainsAny(id, "\r\n\x00") || !utf8.ValidString(id) {
		return fmt.Errorf("%w: id holds CR, LF, NUL or invalid UTF-8", ErrUnframeable)
	}
	return nil
}

// appendHead appends what comes before an event's data: in SSE the event field and the id
// field (when id is not empty); in the JSON framings (RS first for JSON-seq) the object up
// to its data member, not closed.
func (f Framing) appendHead(dst []byte, event, id string) []byte {
	if f == FramingSSE {
		dst = append(dst, "event: "...)
		dst = append(dst, event...)
		dst = append(dst, '\n')
		if id != "" {
			dst = append(dst, "id: "...)
			dst = append(dst, id...)
			dst = append(dst, '\n')
		}
		return dst
	}
	if f == FramingJSONSeq {
		dst = append(dst, 0x1e)
	}
	dst = append(dst, `{"event":"`...)
	dst = append(dst, event...)
	dst = append(dst, '"')
	if id != "" {
		dst = append(dst, `,"id":`...)
		dst = valuetext.AppendJSONString(dst, id)
	}
	return dst
}

// encodePayload frames an event whose payload is either Arrow IPC bytes (base64-encoded
// here, RFC 4648 §4) or a JSON value. The base64 text is ASCII without CR, LF, NUL, quote
// or backslash: it is written straight into the frame, in the JSON framings as the JSON
// string it already is, the same bytes Encode writes for it without Encode's scan of it.
func encodePayload(f Framing, event, id string, ipcBytes, jsonValue []byte) ([]byte, error) {
	if jsonValue != nil {
		return f.Encode(make([]byte, 0, len(jsonValue)+len(id)+32), event, id, jsonValue, true)
	}
	if len(ipcBytes) == 0 {
		return f.Encode(nil, event, id, nil, false)
	}
	if err := checkHead(event, id); err != nil {
		return nil, err
	}
	open, end := "data: ", "\n\n"
	if f != FramingSSE {
		open, end = `,"data":"`, "\"}\n"
	}
	dst := make([]byte, 0, base64.StdEncoding.EncodedLen(len(ipcBytes))+len(id)+48)
	dst = append(f.appendHead(dst, event, id), open...)
	dst = base64.StdEncoding.AppendEncode(dst, ipcBytes)
	return append(dst, end...), nil
}

// mustEncode frames an event built here from constants and escaped JSON, which always
// frames; a failure is a bug.
func mustEncode(f Framing, event string, data []byte) []byte {
	b, err := f.Encode(nil, event, "", data, true)
	if err != nil {
		panic(err)
	}
	return b
}

// heartbeatFrames are the constant heartbeat events of each framing.
var heartbeatFrames = [...]Frame{
	FramingSSE:     {Event: EventHeartbeat, Bytes: mustEncode(FramingSSE, EventHeartbeat, nil)},
	FramingNDJSON:  {Event: EventHeartbeat, Bytes: mustEncode(FramingNDJSON, EventHeartbeat, nil)},
	FramingJSONSeq: {Event: EventHeartbeat, Bytes: mustEncode(FramingJSONSeq, EventHeartbeat, nil)},
}

// terminalFrame frames a terminal event: refresh-required {"reason"}, reconnect
// {"reason","retry_ms"} (in SSE preceded by a retry field of the same value) or failure
// {"code","message"}.
func terminalFrame(f Framing, event, reason string, retryMS int64, message string) Frame {
	data := []byte(`{"`)
	if event == EventFailure {
		data = append(data, `code":`...)
	} else {
		data = append(data, `reason":`...)
	}
	data = valuetext.AppendJSONString(data, reason)
	if event == EventReconnect {
		data = append(data, `,"retry_ms":`...)
		data = strconv.AppendInt(data, retryMS, 10)
	}
	if event == EventFailure {
		data = append(data, `,"message":`...)
		data = valuetext.AppendJSONString(data, message)
	}
	data = append(data, '}')
	b := mustEncode(f, event, data)
	if f == FramingSSE && event == EventReconnect {
		// A retry field in the same block makes a browser's EventSource, which reads no
		// data of a terminal event, wait retry_ms before it reconnects by itself.
		b = append(fmt.Appendf(nil, "retry: %d\n", retryMS), b...)
	}
	return Frame{Event: event, Bytes: b, Terminal: true, Reason: reason}
}

// Preamble returns what to write right after the response headers: for SSE a comment,
// flushed at once so that proxies release the headers, and a retry field telling
// EventSource how long to wait before reconnecting (WHATWG SSE "retry"); nothing for the
// JSON framings.
func Preamble(f Framing, retryMS int64) []byte {
	if f != FramingSSE {
		return nil
	}
	return fmt.Appendf(nil, ": ducktail stream\nretry: %d\n\n", retryMS)
}
