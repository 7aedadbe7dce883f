package api

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ducktail/ducktail/ingest"
	"github.com/ducktail/ducktail/store"
)

// chunked is a request whose body has no declared length, as a chunked upload.
func chunked(body []byte) *http.Request {
	r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
	r.ContentLength = -1
	return r
}

// TestReadBodyChargesWhatItHolds: a body with a Content-Length ends in one buffer of
// exactly that size, a chunked one in at most about twice its size; each holds its
// buffer's size of the budget until released, and a body that declared a length and
// stopped holds at most four times what it sent.
func TestReadBodyChargesWhatItHolds(t *testing.T) {
	budget := ingest.NewMemoryBudget(64 << 20)
	whole := bytes.Repeat([]byte("0123456789"), 300_000)
	body, release, err := readBody(httptest.NewRecorder(), httptest.NewRequest("POST", "/", bytes.NewReader(whole)), 256<<20, budget)
	if err != nil || !bytes.Equal(body, whole) || cap(body) != len(whole) {
		t.Fatalf("declared: %d bytes (capacity %d), %v; want the %d sent in a buffer of that size", len(body), cap(body), err, len(whole))
	}
	if got := budget.Held(); got != int64(len(whole)) {
		t.Fatalf("declared: %d bytes held, want %d", got, len(whole))
	}
	release()
	body, release, err = readBody(httptest.NewRecorder(), chunked(whole), 256<<20, budget)
	if err != nil || !bytes.Equal(body, whole) || cap(body) > 2*len(whole)+firstBodyBuffer {
		t.Fatalf("chunked: %d bytes (capacity %d), %v; want the %d sent", len(body), cap(body), err, len(whole))
	}
	if got := budget.Held(); got != int64(cap(body)) {
		t.Fatalf("chunked: %d bytes held, want its buffer's %d", got, cap(body))
	}
	release()
	for _, sent := range []int{1, firstBodyBuffer, 3 * firstBodyBuffer, 1 << 20} {
		r := httptest.NewRequest("POST", "/", bytes.NewReader(make([]byte, sent)))
		r.ContentLength = 200 << 20
		_, release, err = readBody(httptest.NewRecorder(), r, 256<<20, budget)
		if held := budget.Held(); !errors.Is(err, io.ErrUnexpectedEOF) || held > int64(max(4*sent, firstBodyBuffer)) {
			t.Fatalf("200 MiB declared, %d sent: %d bytes held, %v; want at most %d and io.ErrUnexpectedEOF", sent, held, err, max(4*sent, firstBodyBuffer))
		}
		release()
	}
	if got := budget.Held(); got != 0 {
		t.Fatalf("%d bytes held after every release", got)
	}
}

// TestReadBodyUpToABudgetOfTheLimit: with the budget equal to the limit, a lone body of
// exactly the limit is read whether declared or chunked, and one byte more is 413.
func TestReadBodyUpToABudgetOfTheLimit(t *testing.T) {
	const limit = 3 << 20
	budget := ingest.NewMemoryBudget(limit)
	for _, n := range []int{limit - 1, limit, limit + 1} {
		for _, r := range []*http.Request{httptest.NewRequest("POST", "/", bytes.NewReader(make([]byte, n))), chunked(make([]byte, n))} {
			body, release, err := readBody(httptest.NewRecorder(), r, limit, budget)
			release()
			var tooBig *http.MaxBytesError
			switch {
			case n <= limit && (err != nil || len(body) != n):
				t.Fatalf("%d bytes (length %d): %d read, %v", n, r.ContentLength, len(body), err)
			case n > limit && !errors.As(err, &tooBig):
				t.Fatalf("%d bytes (length %d): %v, want a MaxBytesError", n, r.ContentLength, err)
			}
		}
	}
	if got := budget.Held(); got != 0 {
		t.Fatalf("%d bytes held after every release", got)
	}
}

// TestReadBodyRefusals: a declared length past the limit is refused before the body is
// read, a chunked body once it passes the limit, a body shorter than declared is an
// error, and a body the budget cannot hold is CodeUnavailable; none holds anything
// after release.
func TestReadBodyRefusals(t *testing.T) {
	budget := ingest.NewMemoryBudget(1 << 20)
	src := strings.NewReader(strings.Repeat("x", 2000))
	r := httptest.NewRequest("POST", "/", src)
	_, release, err := readBody(httptest.NewRecorder(), r, 1000, budget)
	release()
	var tooBig *http.MaxBytesError
	if !errors.As(err, &tooBig) || src.Len() != 2000 {
		t.Fatalf("declared past the limit: %v with %d of 2000 bytes unread; want a MaxBytesError before reading", err, src.Len())
	}
	_, release, err = readBody(httptest.NewRecorder(), chunked(bytes.Repeat([]byte("x"), 200_000)), 100_000, budget)
	release()
	if !errors.As(err, &tooBig) {
		t.Fatalf("chunked past the limit: %v, want a MaxBytesError", err)
	}
	r = httptest.NewRequest("POST", "/", strings.NewReader("short"))
	r.ContentLength = 10
	_, release, err = readBody(httptest.NewRecorder(), r, 1000, budget)
	release()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("shorter than declared: %v, want io.ErrUnexpectedEOF", err)
	}
	held, holding, err := readBody(httptest.NewRecorder(), httptest.NewRequest("POST", "/", bytes.NewReader(make([]byte, 600<<10))), 1<<20, budget)
	if err != nil || len(held) != 600<<10 {
		t.Fatalf("the first body: %d bytes, %v", len(held), err)
	}
	_, release, err = readBody(httptest.NewRecorder(), httptest.NewRequest("POST", "/", bytes.NewReader(make([]byte, 600<<10))), 1<<20, budget)
	release()
	if store.ErrorCode(err) != store.CodeUnavailable {
		t.Fatalf("a body past the budget: %v, want CodeUnavailable", err)
	}
	_, release, err = readBody(httptest.NewRecorder(), chunked(make([]byte, 600<<10)), 1<<20, budget)
	release()
	if store.ErrorCode(err) != store.CodeUnavailable {
		t.Fatalf("a chunked body growing past the budget: %v, want CodeUnavailable", err)
	}
	holding()
	if got := budget.Held(); got != 0 {
		t.Fatalf("%d bytes held after every release", got)
	}
}

// TestIngestBudgetRefusesOnlyWhatPassesIt: charges that fit are never refused, however
// many charges that do not fit run beside them, and the budget never holds more than its
// maximum.
func TestIngestBudgetRefusesOnlyWhatPassesIt(t *testing.T) {
	budget := ingest.NewMemoryBudget(100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100_000 {
			if budget.Charge(200) {
				t.Error("a charge past the maximum was taken")
				return
			}
		}
	}()
	refused := 0
	for range 100_000 {
		if !budget.Charge(1) {
			refused++
			continue
		}
		if held := budget.Held(); held > budget.Max() {
			t.Fatalf("%d bytes held, past the maximum %d", held, budget.Max())
		}
		budget.Release(1)
	}
	<-done
	if refused > 0 {
		t.Fatalf("%d charges of 1 byte refused on an empty budget", refused)
	}
}
