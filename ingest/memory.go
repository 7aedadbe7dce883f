package ingest

import (
	"fmt"
	"sync/atomic"

	"github.com/ducktail/ducktail/store"
)

// MemoryBudget bounds the bytes all ingest requests in flight hold at once
// (docs/operations.md, --max-ingest-bytes): the buffers of their bodies, which package api
// charges as a body arrives, and what the Arrow and Parquet readers allocate decoding
// them, which Ingester.Ingest charges to a lease of the request (Request.Memory). A
// request's charges are returned when it ends. It is safe for concurrent use; its zero
// value holds nothing and refuses every charge.
type MemoryBudget struct {
	max  int64
	held atomic.Int64
}

// NewMemoryBudget returns a budget of max bytes.
func NewMemoryBudget(max int64) *MemoryBudget { return &MemoryBudget{max: max} }

// Charge takes n bytes of the budget, or nothing and false when that would pass its max.
func (b *MemoryBudget) Charge(n int64) bool {
	for {
		held := b.held.Load()
		if held+n > b.max {
			return false
		}
		if b.held.CompareAndSwap(held, held+n) {
			return true
		}
	}
}

// Release returns n bytes charged before.
func (b *MemoryBudget) Release(n int64) { b.held.Add(-n) }

// Held is the bytes charged now.
func (b *MemoryBudget) Held() int64 { return b.held.Load() }

// Max is the budget's bound in bytes.
func (b *MemoryBudget) Max() int64 { return b.max }

// Exhausted is the CodeUnavailable error (503 with Retry-After) of a charge b refused.
func (b *MemoryBudget) Exhausted() error {
	return &store.Error{Code: store.CodeUnavailable, Message: fmt.Sprintf(
		"ingest requests in flight already hold the server's limit of %d bytes (--max-ingest-bytes); retry shortly", b.max)}
}

// lease is one request's share of a MemoryBudget: what its decoder prepaid before
// reading, and what the reader allocated beyond that. A nil lease charges nothing.
type lease struct {
	budget *MemoryBudget
	// prepaid is charged before reading starts (prepay); allocations up to it charge
	// nothing more (budgetAllocator), so that the allocations arrow-go makes in
	// goroutines no recover reaches, which come first, can never find the budget spent.
	prepaid atomic.Int64
	// allocated is every byte allocated so far; held is what the budget was charged.
	allocated, held atomic.Int64
	// pastBudget is set when a refused charge would have taken the lease past the whole
	// budget, which no wait would help.
	pastBudget atomic.Bool
}

// newLease returns a lease of budget, nil when budget is nil.
func newLease(budget *MemoryBudget) *lease {
	if budget == nil {
		return nil
	}
	return &lease{budget: budget}
}

// prepay charges n bytes before reading starts, or returns the budget's Exhausted error
// (tooLarge when the lease would pass the whole budget).
func (l *lease) prepay(n int64) error {
	if l == nil {
		return nil
	}
	if l.held.Load()+n > l.budget.max {
		return l.tooLarge()
	}
	if !l.budget.Charge(n) {
		return l.budget.Exhausted()
	}
	l.prepaid.Add(n)
	l.held.Add(n)
	return nil
}

// allocate books n more bytes allocated, charging the budget for what passes prepaid;
// false when the budget refused.
func (l *lease) allocate(n int64) bool {
	if l == nil {
		return true
	}
	total := l.allocated.Add(n)
	over := total - l.prepaid.Load()
	if n <= 0 || over <= 0 {
		return true
	}
	charge := min(n, over)
	if !l.budget.Charge(charge) {
		l.pastBudget.Store(l.held.Load()+charge > l.budget.max)
		return false
	}
	l.held.Add(charge)
	return true
}

// refusal is the error of a refused allocation: tooLarge when the lease passed the
// whole budget, else the budget's Exhausted error.
func (l *lease) refusal() error {
	if l.pastBudget.Load() {
		return l.tooLarge()
	}
	return l.budget.Exhausted()
}

// tooLarge is the CodeTooLarge error (413) of a request that needs more than the whole
// budget: waiting for other requests to end would not help it.
func (l *lease) tooLarge() error {
	return &store.Error{Code: store.CodeTooLarge, Message: fmt.Sprintf(
		"the body decodes to more than the server's %d bytes for all ingests (--max-ingest-bytes); send smaller commits", l.budget.max)}
}

// release returns everything the lease holds to its budget.
func (l *lease) release() {
	if l != nil {
		l.budget.Release(l.held.Swap(0))
	}
}
