package snapshot

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"testing/synctest"
)

// TestWriteAheadKeepsTheBytesInOrder writes 10 MiB in writes of random sizes, some
// larger than a buffer, and reads back exactly those bytes; a small snapshot's bytes are
// written only by finish.
func TestWriteAheadKeepsTheBytesInOrder(t *testing.T) {
	src := make([]byte, 10<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	var got bytes.Buffer
	a := newWriteAhead(&got)
	for rest := src; len(rest) > 0; {
		n := min(len(rest), 1+rng.IntN(3*writeAheadBytes/2))
		if m, err := a.Write(rest[:n]); err != nil || m != n {
			t.Fatalf("Write(%d bytes) = %d, %v", n, m, err)
		}
		rest = rest[n:]
	}
	if err := a.finish(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), src) {
		t.Fatalf("read back %d bytes that differ from the %d written", got.Len(), len(src))
	}

	got.Reset()
	a = newWriteAhead(&got)
	if _, err := a.Write([]byte("small")); err != nil {
		t.Fatal(err)
	}
	if err := a.finish(); err != nil || got.String() != "small" {
		t.Fatalf("finish = %v, wrote %q", err, got.String())
	}
}

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ n int }

var errGone = errors.New("client gone")

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n < len(p) {
		return 0, errGone
	}
	w.n -= len(p)
	return len(p), nil
}

// TestWriteAheadStopsTheEncoderAfterAFailedWrite: once the client's connection fails,
// Write returns its error (so the scan stops) and finish returns it too.
func TestWriteAheadStopsTheEncoderAfterAFailedWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newWriteAhead(&failingWriter{n: writeAheadBytes})
		chunk := make([]byte, writeAheadBytes)
		var err error
		for i := 0; i < 100 && err == nil; i++ {
			_, err = a.Write(chunk)
			synctest.Wait()
		}
		if !errors.Is(err, errGone) {
			t.Fatalf("Write after the client failed = %v, want %v", err, errGone)
		}
		if err := a.finish(); !errors.Is(err, errGone) {
			t.Fatalf("finish = %v, want %v", err, errGone)
		}
	})
}

// stalledWriter blocks every write until release is closed.
type stalledWriter struct {
	release chan struct{}
	wrote   int
}

func (w *stalledWriter) Write(p []byte) (int, error) {
	<-w.release
	w.wrote += len(p)
	return len(p), nil
}

// TestWriteAheadHoldsAtMostItsBuffers: with a client that reads nothing, Write blocks
// once every buffer is full, so a snapshot holds at most writeAheadBuffers buffers; the
// bytes all arrive once the client reads again.
func TestWriteAheadHoldsAtMostItsBuffers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &stalledWriter{release: make(chan struct{})}
		a := newWriteAhead(w)
		const piece = 64 << 10
		accepted := 0
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 200 {
				if _, err := a.Write(make([]byte, piece)); err != nil {
					t.Error(err)
					return
				}
				accepted += piece
			}
		}()
		synctest.Wait()
		// One buffer is in the stalled write, the rest are full, and the one being
		// filled took the write that blocks.
		if limit := (writeAheadBuffers + 1) * writeAheadBytes; accepted > limit {
			t.Fatalf("accepted %d bytes with the client stalled, more than %d", accepted, limit)
		}
		if accepted < writeAheadBuffers*writeAheadBytes-piece {
			t.Fatalf("accepted only %d bytes before blocking", accepted)
		}
		close(w.release)
		<-done
		if err := a.finish(); err != nil {
			t.Fatal(err)
		}
		if w.wrote != 200*piece {
			t.Fatalf("the client got %d bytes, want %d", w.wrote, 200*piece)
		}
	})
}

// TestWriteAheadPassesLargeWritesThrough: a write of a buffer's size or more (Parquet
// writes whole column chunks) reaches the client as it is, in order with the small writes
// around it, and no buffer grows past its first capacity.
func TestWriteAheadPassesLargeWritesThrough(t *testing.T) {
	var want, got bytes.Buffer
	a := newWriteAhead(&got)
	write := func(p []byte) {
		want.Write(p)
		if _, err := a.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		write(bytes.Repeat([]byte{byte('a' + i%26)}, 100_000))
		if i%7 == 0 {
			write(bytes.Repeat([]byte{byte('A' + i%26)}, 3*writeAheadBytes+i))
		}
	}
	if err := a.finish(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("the client got %d bytes that differ from the %d written", got.Len(), want.Len())
	}
	close(a.free)
	for b := range a.free {
		if cap(b) > writeAheadBytes+writeAheadBytes/4 {
			t.Errorf("a buffer grew to %d bytes", cap(b))
		}
	}
}
