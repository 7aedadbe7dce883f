package snapshot

import "io"

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
// At most writeAheadBuffers buffers exist, each writeAheadBytes plus the last write that
// filled it, so a snapshot holds at most about 4 MiB on top of what its encoder holds;
// when every buffer is in use Write blocks until the client has taken one, so a slow
// client slows the scan (backpressure), never grows memory. After the underlying writer
// has failed, Write returns its error, so the encoder stops. finish must be called once,
// after the last Write; it returns once the goroutine is done with the underlying writer.
type writeAhead struct {
	w   io.Writer
	cur []byte
	// made counts the buffers allocated so far, at most writeAheadBuffers: a small
	// snapshot allocates one, of its size.
	made int
	full chan []byte
	free chan []byte
	// failed is closed once a write to w has failed, after err is set.
	failed chan struct{}
	err    error
	done   chan struct{}
}

func newWriteAhead(w io.Writer) *writeAhead {
	a := &writeAhead{w: w, made: 1, full: make(chan []byte, writeAheadBuffers), free: make(chan []byte, writeAheadBuffers),
		failed: make(chan struct{}), done: make(chan struct{})}
	go a.drain()
	return a
}

// drain writes every full buffer to w in order and hands it back; after a failed write
// it hands buffers back unwritten.
func (a *writeAhead) drain() {
	defer close(a.done)
	for b := range a.full {
		if a.err == nil {
			if _, err := a.w.Write(b); err != nil {
				a.err = err
				close(a.failed)
			}
		}
		a.free <- b[:0]
	}
}

// Write copies p into the current buffer and hands the buffer on once it is full. It
// fails only with the underlying writer's error.
func (a *writeAhead) Write(p []byte) (int, error) {
	select {
	case <-a.failed:
		return 0, a.err
	default:
	}
	a.cur = append(a.cur, p...)
	if len(a.cur) < writeAheadBytes {
		return len(p), nil
	}
	a.full <- a.cur
	if a.made < writeAheadBuffers {
		select {
		case a.cur = <-a.free:
		default:
			a.made++
			a.cur = make([]byte, 0, writeAheadBytes+writeAheadBytes/4)
		}
	} else {
		a.cur = <-a.free
	}
	return len(p), nil
}

// finish hands on what the current buffer holds, waits until everything handed on is
// written (or dropped after a failure) and returns the underlying writer's error, if any.
// It is not named Close: pqarrow's FileWriter closes a sink that is an io.Closer.
func (a *writeAhead) finish() error {
	if len(a.cur) > 0 {
		a.full <- a.cur
		a.cur = nil
	}
	close(a.full)
	<-a.done
	return a.err
}
