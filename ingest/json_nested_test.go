package ingest

import (
	"strings"
	"testing"

	"github.com/ducktail/ducktail/store"
)

// TestJSONNullFixedSizeListsBounded: NULL elements of INTEGER[n] inside a list take n slots
// each from five bytes of JSON; past the request's memory they are refused, not built.
func TestJSONNullFixedSizeListsBounded(t *testing.T) {
	s := schemaOf(t, "x INTEGER[65536][]")
	body := `{"x":[` + strings.Repeat("null,", 200_000) + `null]}`
	e := decodeErr(t, ndjsonType, body, s)
	wantError(t, e, store.CodeTooLarge, 1, 1, "x", "NULL fixed-size lists")
	decodeOK(t, ndjsonType, `{"x":[null,[`+strings.Repeat("1,", 65535)+`1]]}`, s)
}
