package store_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ducktail/ducktail/store"
)

func TestCursorRoundTrip(t *testing.T) {
	c := store.NewCursors([]byte("0123456789abcdef0123456789abcdef"))
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
	c := store.NewCursors(key)
	good := c.Encode(store.Position{TableID: 7, Activation: uuid.New(), Seq: 3})
	flipped := []byte(good)
	if flipped[10] == 'A' {
		flipped[10] = 'B'
	} else {
		flipped[10] = 'A'
	}
	cases := map[string]string{
		"":                    store.ReasonInvalidCursor,
		"42":                  store.ReasonNumericCursor,
		"0":                   store.ReasonNumericCursor,
		"r1.":                 store.ReasonInvalidCursor,
		"r2." + good[3:]:      store.ReasonInvalidCursor,
		good + "A":            store.ReasonInvalidCursor,
		good[:len(good)-1]:    store.ReasonInvalidCursor,
		string(flipped):       store.ReasonTamperedCursor,
		strings.ToUpper(good): store.ReasonInvalidCursor,
	}
	other := store.NewCursors([]byte("another key, another server....."))
	cases[other.Encode(store.Position{TableID: 7, Activation: uuid.New(), Seq: 3})] = store.ReasonTamperedCursor
	for in, want := range cases {
		_, err := c.Decode(in)
		ce, ok := err.(*store.CursorError)
		if !ok || ce.Reason != want {
			t.Errorf("Decode(%q) = %v, want reason %s", in, err, want)
		}
	}
}
