package store_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/ducktail/ducktail/store"
)

// FuzzCursorDecode feeds arbitrary strings to the cursor decoder: it must never panic,
// must refuse with a *CursorError, and whatever it accepts must re-encode (with the shape
// tag it carries) to the same string (a cursor has exactly one spelling, so a tampered one cannot pass).
func FuzzCursorDecode(f *testing.F) {
	c := store.NewCursors([]byte("fuzz key fuzz key fuzz key fuzz "))
	pos := store.Position{TableID: 3, Activation: uuid.MustParse("0b5a1f3e-8d1c-4c55-9a8e-3f2b1c0d9e7a"), Seq: 17}
	good := c.Encode(pos)
	shaped := c.EncodeShaped(pos, store.ShapeTag{1, 2, 3, 4, 5, 6, 7, 8})
	for _, s := range []string{good, shaped, "", "42", "r1.", "r1." + good[3:20], good + "=", good[:len(good)-1] + "B", "r2" + good[2:], "r1" + shaped[2:], shaped[:len(shaped)-1] + "B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, tag, err := c.DecodeShaped(s)
		if err != nil {
			if _, ok := err.(*store.CursorError); !ok {
				t.Fatalf("Decode(%q) error %T, want *CursorError", s, err)
			}
			return
		}
		if again := c.EncodeShaped(p, tag); again != s {
			t.Fatalf("Decode(%q) accepted a cursor that re-encodes as %q", s, again)
		}
	})
}
