package stream_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

func TestCursorRoundTrip(t *testing.T) {
	c := stream.NewCodec([]byte("0123456789abcdef0123456789abcdef"))
	for _, p := range []store.Position{
		{TableID: 1, Activation: uuid.New(), Seq: 0},
		{TableID: 42, Activation: uuid.New(), Seq: 1},
		{TableID: 1<<62 + 5, Activation: uuid.New(), Seq: 1<<62 + 7},
	} {
		s := c.Encode(p)
		if !strings.HasPrefix(s, "r1.") || strings.ContainsAny(s, "+/=\r\n") {
			t.Fatalf("cursor %q is not r1. + base64url", s)
		}
		got, err := c.Decode(s)
		if err != nil || got != p {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", p, got, err)
		}
	}
}

func TestCursorRejects(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	c := stream.NewCodec(key)
	good := c.Encode(store.Position{TableID: 7, Activation: uuid.New(), Seq: 3})
	flipped := []byte(good)
	if flipped[10] == 'A' {
		flipped[10] = 'B'
	} else {
		flipped[10] = 'A'
	}
	cases := map[string]string{
		"":                    stream.ReasonInvalidCursor,
		"42":                  stream.ReasonNumericCursor,
		"0":                   stream.ReasonNumericCursor,
		"r1.":                 stream.ReasonInvalidCursor,
		"r2." + good[3:]:      stream.ReasonInvalidCursor,
		good + "A":            stream.ReasonInvalidCursor,
		good[:len(good)-1]:    stream.ReasonInvalidCursor,
		string(flipped):       stream.ReasonTamperedCursor,
		strings.ToUpper(good): stream.ReasonInvalidCursor,
	}
	other := stream.NewCodec([]byte("another key, another server....."))
	cases[other.Encode(store.Position{TableID: 7, Activation: uuid.New(), Seq: 3})] = stream.ReasonTamperedCursor
	for in, want := range cases {
		_, err := c.Decode(in)
		ce, ok := err.(*stream.CursorError)
		if !ok || ce.Reason != want {
			t.Errorf("Decode(%q) = %v, want reason %s", in, err, want)
		}
	}
}

func TestCheckLastEventID(t *testing.T) {
	ok := []string{"", "r1.abc", "42", strings.Repeat("a", 512)}
	bad := []string{strings.Repeat("a", 513), "a\nb", "a\rb", "a\x00b", "\x7f", "bad\xffutf8"}
	for _, s := range ok {
		if err := stream.CheckLastEventID(s); err != nil {
			t.Errorf("CheckLastEventID(%q) = %v", s, err)
		}
	}
	for _, s := range bad {
		if err := stream.CheckLastEventID(s); err == nil {
			t.Errorf("CheckLastEventID(%q) accepted", s)
		}
	}
}

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
