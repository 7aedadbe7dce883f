package stream_test

import (
	"testing"
	"unicode/utf8"

	"github.com/ducktail/ducktail/stream"
)

// FuzzCheckLastEventID checks the header check against its rule: accepted values are at
// most 512 bytes of valid UTF-8 without control characters.
func FuzzCheckLastEventID(f *testing.F) {
	for _, s := range []string{"", "r1.abc", "a\nb", "a\rb", "a\x00b", "\x7f", "\xff", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := stream.CheckLastEventID(s)
		ok := len(s) <= stream.MaxLastEventIDLen && utf8.ValidString(s)
		for _, r := range s {
			if r < 0x20 || r == 0x7f || r == utf8.RuneError {
				ok = false
			}
		}
		if (err == nil) != ok {
			t.Fatalf("CheckLastEventID(%q) = %v, want accepted=%v", s, err, ok)
		}
	})
}
