package api

import (
	"errors"
	"io"
	"net/http"

	"github.com/ducktail/ducktail/ingest"
)

// firstBodyBuffer is the first buffer of a body (or the whole of a smaller declared one);
// it grows as the body arrives (nextBodyBuffer).
const firstBodyBuffer = 64 << 10

// nextBodyBuffer is the size of the buffer that replaces a full one of size full: twice
// as large, up to limit, so that a body holds at most about twice the bytes that
// arrived; and for a body that declared its length (declared ≥ 0), that length as soon as
// a quarter of it arrived, so that it is copied about half as often and never grown past
// its size, while a client that declares a length and stalls holds at most four times
// what it sent.
func nextBodyBuffer(full, declared, limit int64) int64 {
	if declared >= 0 && 4*full >= declared {
		return declared
	}
	return min(2*full, limit)
}

// readBody reads the whole request body, at most limit bytes (a *http.MaxBytesError
// past it; a declared Content-Length past it before anything is read), into one buffer
// that grows by nextBodyBuffer as the body arrives and is charged to budget (the
// server's ingest.MemoryBudget, Config.MaxIngestBytes, docs/operations.md), each growth
// before it is made, until release is called (release is never nil), so that concurrent
// uploads cannot grow the server's memory without limit. A charge the budget refuses is
// its Exhausted error (503 with Retry-After). Growing every
// body by doubling to twice its size cost about a tenth of the server's CPU time for the
// 22 MiB Arrow commits of `ducktail ingest` (BenchmarkBulk/load).
func readBody(w http.ResponseWriter, r *http.Request, limit int64, budget *ingest.MemoryBudget) (body []byte, release func(), err error) {
	var held int64
	release = func() { budget.Release(held) }
	grow := func(buf []byte, size int64) ([]byte, error) {
		if !budget.Charge(size - int64(cap(buf))) {
			return nil, budget.Exhausted()
		}
		held += size - int64(cap(buf))
		return append(make([]byte, 0, size), buf...), nil
	}
	declared := r.ContentLength
	if declared > limit {
		return nil, release, &http.MaxBytesError{Limit: limit}
	}
	size := int64(firstBodyBuffer)
	if declared >= 0 {
		size = min(size, declared)
	}
	buf, err := grow(nil, min(size, limit))
	if err != nil {
		return nil, release, err
	}
	src := http.MaxBytesReader(w, r.Body, limit)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) == declared || int64(len(buf)) == limit {
				return buf, release, expectEOF(src) // past limit: src's *http.MaxBytesError
			}
			if buf, err = grow(buf, nextBodyBuffer(int64(cap(buf)), declared, limit)); err != nil {
				return nil, release, err
			}
		}
		n, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) && declared >= 0 && int64(len(buf)) < declared {
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

// expectEOF reads src to its end, which a body of its declared length, or of the limit,
// has reached.
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
