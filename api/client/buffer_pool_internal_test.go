package client

import (
	"bytes"
	"testing"
	"unsafe"
)

func aligned(b []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))%bufferAlignment == 0
}

// TestBufferPoolReusesZeroedAlignedBuffers: a freed buffer serves the next request of its
// class, zeroed and aligned; Reallocate keeps the contents and zeroes what it adds; a
// buffer the pool did not hand out is not pooled.
func TestBufferPoolReusesZeroedAlignedBuffers(t *testing.T) {
	var p bufferPool
	for _, size := range []int{1, 63, 64, 1000, 1 << 16, 100_000} {
		b := p.Allocate(size)
		if len(b) != size || !aligned(b) || cap(b)&(cap(b)-1) != 0 || cap(b) < size {
			t.Fatalf("Allocate(%d): len %d cap %d aligned %v", size, len(b), cap(b), aligned(b))
		}
		for i := range b {
			b[i] = 0xAA
		}
		p.Free(b)
		// sync.Pool hands back what this goroutine put, short of a collection between.
		again := p.Allocate(size - size/3)
		if len(again) != size-size/3 || !aligned(again) || bytes.ContainsFunc(again, func(r rune) bool { return r != 0 }) {
			t.Fatalf("Allocate(%d) after a Free: len %d aligned %v, not zeroed", size-size/3, len(again), aligned(again))
		}
		p.Free(again)
	}

	b := p.Allocate(100)
	copy(b, "ducktail")
	b = b[:8]
	b = p.Reallocate(120, b)
	if len(b) != 120 || string(b[:8]) != "ducktail" || bytes.ContainsFunc(b[8:], func(r rune) bool { return r != 0 }) {
		t.Fatalf("Reallocate within the class: %q", b)
	}
	for i := 8; i < len(b); i++ {
		b[i] = 0xAA
	}
	b = p.Reallocate(5000, b[:8])
	if len(b) != 5000 || !aligned(b) || string(b[:8]) != "ducktail" || bytes.ContainsFunc(b[8:], func(r rune) bool { return r != 0 }) {
		t.Fatalf("Reallocate past the class: len %d, %q…", len(b), b[:16])
	}

	foreign := make([]byte, 100)
	p.Free(foreign)
	if got := p.Allocate(100); unsafe.SliceData(got) == unsafe.SliceData(foreign) {
		t.Fatal("a buffer the pool did not hand out came back from it")
	}
	if b := p.Allocate(0); len(b) != 0 {
		t.Fatalf("Allocate(0) has length %d", len(b))
	}
}
