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
// buffer past the largest class, or one the pool did not hand out, is not pooled.
func TestBufferPoolReusesZeroedAlignedBuffers(t *testing.T) {
	var p bufferPool
	for _, size := range []int{1, 63, 64, 1000, 1 << 16, 100_000} {
		b := p.Allocate(size)
		if len(b) != size || !aligned(b) || cap(b)&(cap(b)-1) != 0 || cap(b) < size {
			t.Fatalf("Allocate(%d): len %d cap %d aligned %v", size, len(b), cap(b), aligned(b))
		}
		// sync.Pool may drop what it is given (the race detector has it drop some on
		// purpose): free and ask again until the freed buffer comes back.
		for attempt := 0; ; attempt++ {
			if attempt == 100 {
				t.Fatalf("Allocate(%d) never returned a freed buffer", size)
			}
			fill(b[:cap(b)])
			p.Free(b)
			again := p.Allocate(size - size/3)
			if unsafe.SliceData(again) != unsafe.SliceData(b) {
				b = again
				continue
			}
			if len(again) != size-size/3 || !aligned(again) || !zero(again) {
				t.Fatalf("Allocate(%d) after a Free: len %d aligned %v, not zeroed", size-size/3, len(again), aligned(again))
			}
			break
		}
	}

	b := p.Allocate(100)
	fill(b[:cap(b)])
	copy(b, "ducktail")
	b = p.Reallocate(120, b[:8])
	if len(b) != 120 || string(b[:8]) != "ducktail" || !zero(b[8:]) {
		t.Fatalf("Reallocate within the class: %q", b)
	}
	b = p.Reallocate(5000, b[:8])
	if len(b) != 5000 || !aligned(b) || string(b[:8]) != "ducktail" || !zero(b[8:]) {
		t.Fatalf("Reallocate past the class: len %d, %q…", len(b), b[:16])
	}

	// Past maxPooledClass a buffer is not rounded up, and not kept.
	size := 1<<maxPooledClass + 1
	big := p.Allocate(size)
	if len(big) != size || cap(big) != size || !aligned(big) || !zero(big) {
		t.Fatalf("Allocate(%d): len %d cap %d aligned %v", size, len(big), cap(big), aligned(big))
	}
	p.Free(big)
	if again := p.Allocate(size); unsafe.SliceData(again) == unsafe.SliceData(big) {
		t.Fatal("a buffer past the largest class came back from the pool")
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

// fill writes 0xAA over b, for a check that what the pool hands out again is zeroed.
func fill(b []byte) {
	for i := range b {
		b[i] = 0xAA
	}
}

func zero(b []byte) bool {
	return !bytes.ContainsFunc(b, func(r rune) bool { return r != 0 })
}
