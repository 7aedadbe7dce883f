package api

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadBodyHoldsWhatArrived: a request that declares 200 MiB and sends one byte gets a
// buffer of at most maxBodyPrealloc, not its declared length; a body that arrives whole is
// read whole into at most about twice its size.
func TestReadBodyHoldsWhatArrived(t *testing.T) {
	r := httptest.NewRequest("POST", "/", strings.NewReader("n"))
	r.ContentLength = 200 << 20
	body, err := readBody(httptest.NewRecorder(), r, 256<<20)
	if err != nil || string(body) != "n" || cap(body) > maxBodyPrealloc+bytes.MinRead {
		t.Fatalf("readBody = %d bytes (capacity %d), %v; want 1 byte in at most %d", len(body), cap(body), err, maxBodyPrealloc+bytes.MinRead)
	}
	whole := bytes.Repeat([]byte("0123456789"), 300_000)
	r = httptest.NewRequest("POST", "/", bytes.NewReader(whole))
	body, err = readBody(httptest.NewRecorder(), r, 256<<20)
	if err != nil || !bytes.Equal(body, whole) || cap(body) > 2*len(whole)+maxBodyPrealloc {
		t.Fatalf("readBody = %d bytes (capacity %d), %v; want the %d sent", len(body), cap(body), err, len(whole))
	}
}
