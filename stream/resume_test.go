package stream_test

import (
	"strings"
	"testing"

	"github.com/ducktail/ducktail/stream"
)

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
