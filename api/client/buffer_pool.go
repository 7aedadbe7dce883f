package client

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bufferAlignment is the alignment of every buffer a bufferPool hands out: 64 bytes, as
// the Arrow columnar format recommends ("Buffer Alignment and Padding") and
// memory.GoAllocator gives.
const bufferAlignment = 64

// maxPooledClass is the largest size class a bufferPool keeps: 8 MiB. A larger buffer is
// allocated at its size and left to the collector, as on Go's allocator. Past that size
// the rounding to a power of two would nearly double a buffer's memory, and a freed
// buffer waits in the pool of the processor that freed it, where a read on another
// processor does not find it and allocates another; and the collector, which runs when
// the heap has grown by its live size, already runs only every batch or two of that size.
const maxPooledClass = 23

// bufferPool is a memory.Allocator that keeps the buffers freed to it and hands them out
// again: one sync.Pool per power-of-two size class, so a buffer serves any later request
// of its class. An Arrow IPC reader on it (ipc.WithAllocator) whose record batches are
// released as it goes, as ReadSnapshot's are, reads each message body into memory an
// earlier batch freed. On Go's allocator the same reader allocates the snapshot's whole
// size again, and the collector, run every few MiB of it, held a TLS read of the 3M-row
// flights table to 0.57–0.60 of DuckDB's own Arrow read on the project's 2-core machine,
// against 0.65–0.67 on the pool (docs/design.md, "Measured facts about DuckDB";
// docs/benchmarks.md, BenchmarkBulk).
//
// Buffers are 64-byte aligned and zeroed, as memory.GoAllocator's. What a pool holds is
// the collector's to drop (sync.Pool), so it never holds memory past two collections; a
// buffer of up to 8 MiB (maxPooledClass) takes at most twice its size.
// A buffer must not be used after it is freed: Arrow's reference counting (Retain,
// Release) frees one only when no record batch holds it.
type bufferPool struct {
	classes [maxPooledClass + 1]sync.Pool // class c holds buffers of capacity 1<<c
}

var _ memory.Allocator = (*bufferPool)(nil)

// Allocate returns a zeroed buffer of size bytes, from the pool when one of its class is
// there.
func (p *bufferPool) Allocate(size int) []byte {
	if size == 0 {
		return []byte{}
	}
	class := bits.Len(uint(size - 1))
	if class > maxPooledClass {
		return alignedBuffer(size, size)
	}
	if b, ok := p.classes[class].Get().(*[]byte); ok {
		buf := (*b)[:size]
		clear(buf)
		return buf
	}
	return alignedBuffer(size, 1<<class)
}

// alignedBuffer returns a new zeroed buffer of size bytes and capacity capacity, 64-byte
// aligned.
func alignedBuffer(size, capacity int) []byte {
	raw := make([]byte, capacity+bufferAlignment)
	shift := int(-uintptr(unsafe.Pointer(unsafe.SliceData(raw))) & (bufferAlignment - 1))
	return raw[shift : shift+size : shift+capacity]
}

// Reallocate returns b resized to size bytes, its contents kept and any bytes past them
// zeroed: b itself when its class holds size, else a new buffer, b going back to the pool.
func (p *bufferPool) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		if size > len(b) {
			clear(b[len(b):size])
		}
		return b[:size]
	}
	buf := p.Allocate(size)
	copy(buf, b)
	p.Free(b)
	return buf
}

// Free puts b back in its class's pool. Only the pool's own buffers are freed to it (an
// arrow memory.Buffer frees to the allocator it allocated from); one that no class
// holds, its capacity not a power of two or past maxPooledClass, is left to the
// collector.
func (p *bufferPool) Free(b []byte) {
	c := cap(b)
	if c == 0 || c&(c-1) != 0 || c > 1<<maxPooledClass {
		return
	}
	b = b[:0]
	p.classes[bits.Len(uint(c-1))].Put(&b)
}
