package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/ducktail/ducktail/store"
)

// ingestBudget bounds the bytes that ingest request bodies hold at once, all requests
// together (Config.MaxIngestBytes, docs/operations.md): a body's buffer is charged
// before it is allocated and discharged when its request ends, and a charge past the
// bound is refused, so that concurrent uploads cannot grow the server's memory without
// limit. It is safe for concurrent use.
type ingestBudget struct {
	max  int64
	held atomic.Int64
}

// charge takes n bytes of the budget, or nothing and false when that would pass max.
func (b *ingestBudget) charge(n int64) bool {
	if b.held.Add(n) > b.max {
		b.held.Add(-n)
		return false
	}
	return true
}

// heldBytes is the bytes charged now, for the ducktail_ingest_body_bytes gauge.
func (b *ingestBudget) heldBytes() int64 { return b.held.Load() }

// firstChunkedBuffer is the first buffer of a body sent without a Content-Length; it
// doubles as the body arrives.
const firstChunkedBuffer = 64 << 10

// readBody reads the whole request body, at most limit bytes (a *http.MaxBytesError
// past it), into one buffer charged to budget until release is called (release is never
// nil). A declared Content-Length sizes the buffer exactly, in one allocation and without
// a copy, and one past limit is refused before anything is read. A body sent without
// one (chunked) starts in firstChunkedBuffer bytes and doubles as it arrives, each growth
// charged, so that it holds at most about twice the bytes received. A charge the budget
// refuses is a CodeUnavailable *store.Error (503 with Retry-After). Growing every body
// by copies from 64 KiB cost about a tenth of the server's CPU time for the 22 MiB Arrow
// commits of `ducktail ingest` (BenchmarkBulk/load).
func readBody(w http.ResponseWriter, r *http.Request, limit int64, budget *ingestBudget) (body []byte, release func(), err error) {
	var held int64
	release = func() { budget.held.Add(-held) }
	grow := func(n int64) error {
		if !budget.charge(n) {
			return &store.Error{Code: store.CodeUnavailable, Message: fmt.Sprintf(
				"ingest bodies already hold the server's limit of %d bytes; retry shortly", budget.max)}
		}
		held += n
		return nil
	}
	declared := r.ContentLength >= 0
	size := int64(firstChunkedBuffer)
	if declared {
		if r.ContentLength > limit {
			return nil, release, &http.MaxBytesError{Limit: limit}
		}
		size = r.ContentLength
	}
	if err := grow(size); err != nil {
		return nil, release, err
	}
	src := http.MaxBytesReader(w, r.Body, limit)
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if declared {
				return buf, release, expectEOF(src)
			}
			next := min(2*int64(cap(buf)), limit+1) // a byte past limit makes src report it
			if err := grow(next - int64(cap(buf))); err != nil {
				return nil, release, err
			}
			buf = append(make([]byte, 0, next), buf...)
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) && len(buf) < cap(buf) && declared {
			return nil, release, io.ErrUnexpectedEOF // shorter than declared
		}
		if errors.Is(err, io.EOF) {
			return buf, release, nil
		}
		if err != nil {
			return nil, release, err
		}
	}
}

// expectEOF reads src to its end, which a body of its declared length has reached.
func expectEOF(src io.Reader) error {
	var extra [1]byte
	for {
		n, err := src.Read(extra[:])
		switch {
		case n > 0:
			return errors.New("the body is longer than its Content-Length")
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
	}
}
