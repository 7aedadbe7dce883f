package stream_test

import (
	"testing"

	"github.com/ducktail/ducktail/stream"
)

func TestEncodeRefusesUnframeableEvents(t *testing.T) {
	for _, c := range []struct {
		event, id, data string
		json            bool
	}{
		{"message", "", "x", false},
		{stream.EventBatch, "a\nb", "x", false},
		{stream.EventBatch, "a\x00", "x", false},
		{stream.EventBatch, "\xff", "x", false},
		{stream.EventBatch, "", "line\nbreak", false},
		{stream.EventBatch, "", "cr\rhere", false},
		{stream.EventBatch, "", `{"a":"\n"}` + "\n", true},
		{stream.EventBatch, "", "\xfe", false},
	} {
		for _, f := range []stream.Framing{stream.FramingSSE, stream.FramingNDJSON, stream.FramingJSONSeq} {
			_, err := f.Encode(nil, c.event, c.id, []byte(c.data), c.json)
			rawData := f == stream.FramingSSE || c.json
			mustRefuse := c.event == "message" || c.id != "" || c.data == "\xfe" || rawData
			if mustRefuse && err == nil {
				t.Errorf("%s accepted %+v", f.ContentType(), c)
			}
		}
	}
}
