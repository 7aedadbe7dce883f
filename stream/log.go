package stream

import (
	"sync"
	"sync/atomic"

	"github.com/ducktail/ducktail/store"
)

// logReadBatch bounds the items one session takes from its table's log at a time, so that
// the frames a session holds beyond the log stay few and a lagging session is noticed
// between two of its writes.
const logReadBatch = 64

// tableLog is the bounded log of one table's published events, shared by every session
// of the table (docs/design.md, "The stream"): Publish appends to it in O(1), whatever the
// number or speed of the sessions, and each session reads it from its own index at its own
// pace. It holds the newest len(slots) items and at most maxBytes of commit records
// (always at least the newest item); a session whose next index was dropped has fallen out
// of the window and ends with reconnect, reason "slow_consumer", to resume by replay from
// its cursor.
//
// Readers take no lock: each slot holds an immutable entry naming its index, so that a
// reader recognises a slot overwritten (or cleared) under it, and head is stored after the
// slot. One goroutine appends at a time (the store publishes from its writer goroutine;
// mu makes it so regardless).
type tableLog struct {
	slots []atomic.Pointer[logEntry] // index i is slots[i%len(slots)]
	head  atomic.Int64               // index the next appended item gets
	first atomic.Int64               // index of the oldest item held
	// notify, when a session waits, is closed after the next append (made on demand, so
	// an append with no one waiting allocates nothing); wakeQueued is set while the hub's
	// waker has this log to wake.
	notify     atomic.Pointer[chan struct{}]
	wakeQueued atomic.Bool

	mu       sync.Mutex // serializes append
	bytes    int64      // commit record bytes of the items held; guarded by mu
	maxBytes int64
	// schema and schemaMsg are the schema version of the last commit appended and its
	// message, given to every commit of that version; guarded by mu.
	schema    *store.Schema
	schemaMsg *schemaMessage
	// sessions counts the sessions reading the log; guarded by Hub.mu.
	sessions int
}

// logEntry is one item of a tableLog at index.
type logEntry struct {
	index int64
	it    item
}

func newTableLog(maxItems int, maxBytes int64) *tableLog {
	return &tableLog{slots: make([]atomic.Pointer[logEntry], max(maxItems, 1)), maxBytes: maxBytes}
}

func (it item) size() int64 {
	if it.commit == nil {
		return 0
	}
	return it.commit.size
}

func (l *tableLog) slot(i int64) *atomic.Pointer[logEntry] { return &l.slots[i%int64(len(l.slots))] }

// append adds it as the newest item, first dropping the oldest items past either bound.
// It returns true when sessions wait for it: the caller then has wake called.
func (l *tableLog) append(it item) (waiting bool) {
	size := it.size()
	l.mu.Lock()
	if c := it.commit; c != nil && c.event.Schema != nil {
		if c.event.Schema != l.schema {
			l.schema, l.schemaMsg = c.event.Schema, newSchemaMessage(c.event.Schema)
		}
		c.schema = l.schemaMsg
	}
	head, first := l.head.Load(), l.first.Load()
	for head > first && (head-first >= int64(len(l.slots)) || l.bytes+size > l.maxBytes) {
		if e := l.slot(first).Swap(nil); e != nil {
			l.bytes -= e.it.size()
		}
		first++
	}
	l.first.Store(first)
	l.slot(head).Store(&logEntry{index: head, it: it})
	l.bytes += size
	l.head.Store(head + 1)
	l.mu.Unlock()
	return l.notify.Load() != nil
}

// wake wakes the sessions waiting for the next append.
func (l *tableLog) wake() {
	if ch := l.notify.Swap(nil); ch != nil {
		close(*ch)
	}
}

// read appends to dst the items from index from on, at most logReadBatch of them. lagging
// is true when the item at from is no longer held: the log dropped it before this reader
// took it. When there is nothing at from yet, wait is a channel closed after the next append.
func (l *tableLog) read(from int64, dst []item) (items []item, lagging bool, wait <-chan struct{}) {
	head := l.head.Load()
	if from >= head {
		ch := l.waitChannel()
		if l.head.Load() == head {
			return dst, false, ch
		}
		// Appended meanwhile, maybe before the channel was made: read it now.
		head = l.head.Load()
	}
	if from < l.first.Load() {
		return dst, true, nil
	}
	for i := from; i < head && len(dst) < logReadBatch; i++ {
		e := l.slot(i).Load()
		if e == nil || e.index != i {
			return dst[:0], true, nil
		}
		dst = append(dst, e.it)
	}
	return dst, false, nil
}

// waitChannel returns the channel the next append closes.
func (l *tableLog) waitChannel() <-chan struct{} {
	for {
		if ch := l.notify.Load(); ch != nil {
			return *ch
		}
		ch := make(chan struct{})
		if l.notify.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

// state returns the index the next item gets and the commit record bytes held.
func (l *tableLog) state() (head, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.head.Load(), l.bytes
}
