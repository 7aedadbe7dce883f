package stream_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ducktail/ducktail/internal/ssetest"
	"github.com/ducktail/ducktail/stream"
)

var fuzzEvents = []string{
	stream.EventSchema, stream.EventBatch, stream.EventHeartbeat,
	stream.EventRefreshRequired, stream.EventReconnect, stream.EventFailure,
}

// FuzzSSEEncoding frames arbitrary ids and data with stream.Framing.Encode and reads the
// bytes back with a WHATWG parser (ssetest) (and, for NDJSON and JSON-seq, with
// encoding/json): either the encoder refuses the event, or exactly the same event comes
// back, alone.
func FuzzSSEEncoding(f *testing.F) {
	f.Add(uint8(1), "r1.AQAAAAAAAAAB", []byte("/////3gBAAAQ"))
	f.Add(uint8(2), "", []byte(nil))
	f.Add(uint8(3), "", []byte(`{"reason":"table_reset"}`))
	f.Add(uint8(0), " leading space", []byte(" data with: colon"))
	f.Add(uint8(1), "id\nbreak", []byte("a\r\nb"))
	f.Add(uint8(5), "", []byte("\ufeffbom\x00nul"))
	f.Fuzz(func(t *testing.T, which uint8, id string, data []byte) {
		event := fuzzEvents[int(which)%len(fuzzEvents)]
		frame, err := stream.FramingSSE.Encode(nil, event, id, data, false)
		if err == nil {
			p := ssetest.NewParser(bytes.NewReader(frame))
			ev, perr := p.Next()
			if perr != nil || ev.Event != event || ev.ID != id || ev.Data != string(data) {
				t.Fatalf("SSE frame %q parsed as %+v (%v), want event %q id %q data %q", frame, ev, perr, event, id, data)
			}
			if _, perr := p.Next(); perr == nil {
				t.Fatalf("SSE frame %q holds more than one event", frame)
			}
		}
		for _, fr := range []stream.Framing{stream.FramingNDJSON, stream.FramingJSONSeq} {
			frame, err := fr.Encode(nil, event, id, data, false)
			if err != nil {
				continue
			}
			body := bytes.TrimPrefix(frame, []byte{0x1e})
			if bytes.Count(body, []byte("\n")) != 1 || body[len(body)-1] != '\n' || bytes.ContainsRune(body, '\r') {
				t.Fatalf("%s record %q is not one line", fr.ContentType(), frame)
			}
			var rec struct {
				Event string
				ID    string
				Data  string
			}
			if err := json.Unmarshal(body, &rec); err != nil {
				t.Fatalf("%s record %q: %v", fr.ContentType(), frame, err)
			}
			if rec.Event != event || rec.ID != id || (len(data) > 0 && rec.Data != string(data)) {
				t.Fatalf("%s record %q decoded as %+v", fr.ContentType(), frame, rec)
			}
		}
	})
}
