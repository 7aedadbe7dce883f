package stream

import (
	"encoding/base64"
	"fmt"
	"strconv"

	"github.com/ducktail/ducktail/store"
)

// Framing is how events are delimited on the wire, chosen by the Accept header.
type Framing int

// Framings (DESIGN.md, "The stream"; seed 004, "Framing").
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

// Event names, the fixed set of DESIGN.md's event table. No other name is ever written,
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
}

// appendFrame frames one event. data is the payload: for FramingSSE it is written as one
// data line and must hold no CR or LF (base64 and our JSON never do); for the JSON
// framings it is a JSON value (dataIsJSON) or raw text to be written as a JSON string.
// id is a cursor (base64url characters only) or "".
func appendFrame(dst []byte, f Framing, event, id string, data []byte, dataIsJSON bool) []byte {
	switch f {
	case FramingSSE:
		dst = append(dst, "event: "...)
		dst = append(dst, event...)
		dst = append(dst, '\n')
		if id != "" {
			dst = append(dst, "id: "...)
			dst = append(dst, id...)
			dst = append(dst, '\n')
		}
		if len(data) == 0 {
			return append(dst, "data:\n\n"...)
		}
		dst = append(dst, "data: "...)
		dst = append(dst, data...)
		return append(dst, "\n\n"...)
	default:
		if f == FramingJSONSeq {
			dst = append(dst, 0x1e)
		}
		dst = append(dst, `{"event":"`...)
		dst = append(dst, event...)
		dst = append(dst, '"')
		if id != "" {
			dst = append(dst, `,"id":"`...)
			dst = append(dst, id...)
			dst = append(dst, '"')
		}
		if len(data) > 0 {
			dst = append(dst, `,"data":`...)
			if dataIsJSON {
				dst = append(dst, data...)
			} else {
				dst = append(dst, '"')
				dst = append(dst, data...)
				dst = append(dst, '"')
			}
		}
		return append(dst, "}\n"...)
	}
}

// encodePayload frames an event whose payload is either Arrow IPC bytes (base64-encoded
// here) or a JSON value.
func encodePayload(f Framing, event, id string, ipcBytes, jsonValue []byte) []byte {
	if jsonValue != nil {
		return appendFrame(make([]byte, 0, len(jsonValue)+len(id)+32), f, event, id, jsonValue, true)
	}
	b64 := make([]byte, base64.StdEncoding.EncodedLen(len(ipcBytes)))
	base64.StdEncoding.Encode(b64, ipcBytes)
	return appendFrame(make([]byte, 0, len(b64)+len(id)+32), f, event, id, b64, false)
}

// heartbeatFrames are the constant heartbeat events of each framing.
var heartbeatFrames = [...]Frame{
	FramingSSE:     {Event: EventHeartbeat, Bytes: appendFrame(nil, FramingSSE, EventHeartbeat, "", nil, false)},
	FramingNDJSON:  {Event: EventHeartbeat, Bytes: appendFrame(nil, FramingNDJSON, EventHeartbeat, "", nil, false)},
	FramingJSONSeq: {Event: EventHeartbeat, Bytes: appendFrame(nil, FramingJSONSeq, EventHeartbeat, "", nil, false)},
}

// terminalFrame frames a terminal event: refresh-required {"reason"}, reconnect
// {"reason","retry_ms"} or failure {"code","message"}.
func terminalFrame(f Framing, event, reason string, retryMS int64, message string) Frame {
	data := []byte(`{"`)
	if event == EventFailure {
		data = append(data, `code":`...)
	} else {
		data = append(data, `reason":`...)
	}
	data = store.AppendJSONString(data, reason)
	if event == EventReconnect {
		data = append(data, `,"retry_ms":`...)
		data = strconv.AppendInt(data, retryMS, 10)
	}
	if event == EventFailure {
		data = append(data, `,"message":`...)
		data = store.AppendJSONString(data, message)
	}
	data = append(data, '}')
	return Frame{Event: event, Bytes: appendFrame(nil, f, event, "", data, true), Terminal: true, Reason: reason}
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
