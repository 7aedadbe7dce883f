package snapshot

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// A snapshot's encoder hands its bytes to the client through a writeAhead of at most
// writeAheadBuffers buffers, each handed on once it holds writeAheadBytes.
const (
	writeAheadBytes   = 1 << 20
	writeAheadBuffers = 4
)

// writeAhead is an io.Writer that gathers what it is given into buffers and writes each
// full one to the underlying writer from a goroutine of its own, so that a snapshot's scan
// and encoding (DuckDB's conversion of its chunks to Arrow, the text encoders) go on while
// the bytes before them are on their way to the client: over HTTP a write to a response
// waits for the socket, and over HTTP/2 for the connection's frame writer too. Measured on
// the 3M-row flights table (BenchmarkBulk/snapshot in package api), that took the Arrow
// snapshot over HTTP/2 with TLS from 0.43 to 0.52 of DuckDB's own Arrow read.
//
// At most writeAheadBuffers buffers exist, and none grows past its first capacity
// (writeAheadBytes and a quarter): a write that would overflow the current buffer hands it
// on first, and a write of writeAheadBytes or more (Parquet writes each column chunk at
// once) is handed on as it is, not copied, and Write returns once it is written. So a
// snapshot holds at most 5 MiB on top of what its encoder holds; when every buffer is in
// use Write blocks until the client has taken one, so a slow client slows the scan
// (backpressure), never grows memory. After the underlying writer has failed, Write
// returns its error, so the encoder stops. finish must be called once, after the last
// Write; it returns once the goroutine is done with the underlying writer.
type writeAhead struct {
	w   io.Writer
	cur []byte
	// made counts the buffers allocated so far, at most writeAheadBuffers: a small
	// snapshot allocates one.
	made int
	full chan handedOn
	free chan []byte
	// written is sent a value once a borrowed write is written (or dropped).
	written chan struct{}
	// failed is closed once a write to w has failed, after err is set.
	failed chan struct{}
	err    error
	done   chan struct{}
}

// handedOn is what Write hands the goroutine: one of the buffers, or borrowed, the
// caller's own bytes, which go back to the caller instead of to the free buffers.
type handedOn struct {
	b        []byte
	borrowed bool
}

func newWriteAhead(w io.Writer) *writeAhead {
	a := &writeAhead{w: w, made: 1, cur: make([]byte, 0, writeAheadBytes+writeAheadBytes/4),
		full: make(chan handedOn, writeAheadBuffers), free: make(chan []byte, writeAheadBuffers),
		written: make(chan struct{}, 1), failed: make(chan struct{}), done: make(chan struct{})}
	go a.drain()
	return a
}

// drain writes everything handed on to w in order; after a failed write it drops it.
func (a *writeAhead) drain() {
	defer close(a.done)
	for h := range a.full {
		if a.err == nil {
			if _, err := a.w.Write(h.b); err != nil {
				a.err = err
				close(a.failed)
			}
		}
		if h.borrowed {
			a.written <- struct{}{}
		} else {
			a.free <- h.b[:0]
		}
	}
}

// Write copies p into the current buffer, handing buffers on as they fill, or hands p on
// as it is when it is writeAheadBytes or more. It fails only with the underlying writer's
// error.
func (a *writeAhead) Write(p []byte) (int, error) {
	if err := a.failure(); err != nil {
		return 0, err
	}
	if len(a.cur) > 0 && len(a.cur)+len(p) > cap(a.cur) {
		a.handOn()
	}
	if len(p) >= writeAheadBytes {
		a.full <- handedOn{b: p, borrowed: true}
		<-a.written
		return len(p), a.failure()
	}
	a.cur = append(a.cur, p...)
	if len(a.cur) >= writeAheadBytes {
		a.handOn()
	}
	return len(p), nil
}

// failure returns the underlying writer's error once a write to it has failed.
func (a *writeAhead) failure() error {
	select {
	case <-a.failed:
		return a.err
	default:
		return nil
	}
}

// handOn hands the current buffer to the goroutine and takes a free one, or allocates one
// while fewer than writeAheadBuffers exist, or waits for one.
func (a *writeAhead) handOn() {
	a.full <- handedOn{b: a.cur}
	if a.made < writeAheadBuffers {
		select {
		case a.cur = <-a.free:
		default:
			a.made++
			a.cur = make([]byte, 0, writeAheadBytes+writeAheadBytes/4)
		}
		return
	}
	a.cur = <-a.free
}

// finish hands on what the current buffer holds, waits until everything handed on is
// written (or dropped after a failure) and returns the underlying writer's error, if any.
// It is not named Close: pqarrow's FileWriter closes a sink that is an io.Closer.
func (a *writeAhead) finish() error {
	if len(a.cur) > 0 {
		a.full <- handedOn{b: a.cur}
		a.cur = nil
	}
	close(a.full)
	<-a.done
	return a.err
}

// encodeAhead is encode through a writeAhead to w. The writeAhead is finished even when
// the encoder panics, so that its goroutine is done with w before the panic reaches the
// HTTP server.
func encodeAhead(w io.Writer, f Format, rr array.RecordReader, cursors []byte, types []string) (err error) {
	wa := newWriteAhead(w)
	defer func() {
		if ferr := wa.finish(); err == nil {
			err = ferr
		}
	}()
	return encode(wa, f, rr, cursors, types)
}
