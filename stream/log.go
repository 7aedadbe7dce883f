package stream

import "sync"

// logReadBatch bounds the items one session takes from its table's log at a time, so that
// the frames a session holds beyond the log stay few and a lagging session is noticed
// between two of its writes.
const logReadBatch = 64

// tableLog is the bounded log of one table's published events, shared by every session
// of the table (docs/design.md, "The stream"): Publish appends to it in O(1), whatever the
// number or speed of the sessions, and each session reads it from its own index at its own
// pace. It holds the newest maxItems items and at most maxBytes of commit records (always
// at least the newest item); a session whose next index was dropped has fallen out of the
// window and ends with reconnect, reason "slow_consumer", to resume by replay from its
// cursor. It is safe for concurrent use.
type tableLog struct {
	mu       sync.Mutex
	ring     []item // len(ring) is the capacity; index i is ring[i%len(ring)]
	first    int64  // index of the oldest item held
	head     int64  // index the next appended item gets
	bytes    int64  // commit record bytes of the items held
	maxBytes int64
	// notify, when a session waits, is closed at the next append (made on demand, so an
	// append with no one waiting allocates nothing).
	notify chan struct{}
	// sessions counts the sessions reading the log; guarded by Hub.mu.
	sessions int
}

func newTableLog(maxItems int, maxBytes int64) *tableLog {
	return &tableLog{ring: make([]item, max(maxItems, 1)), maxBytes: maxBytes}
}

func (it item) size() int64 {
	if it.commit == nil {
		return 0
	}
	return it.commit.size
}

// append adds it as the newest item, first dropping the oldest items past either bound,
// and wakes the sessions waiting for it.
func (l *tableLog) append(it item) {
	size := it.size()
	l.mu.Lock()
	for l.head > l.first && (l.head-l.first >= int64(len(l.ring)) || l.bytes+size > l.maxBytes) {
		slot := &l.ring[l.first%int64(len(l.ring))]
		l.bytes -= slot.size()
		*slot = item{}
		l.first++
	}
	l.ring[l.head%int64(len(l.ring))] = it
	l.head++
	l.bytes += size
	ch := l.notify
	l.notify = nil
	l.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// read appends to dst the items from index from on, at most logReadBatch of them. lagging
// is true when from is older than the oldest item held: items were dropped before this
// reader took them. When there is nothing at from yet, wait is a channel closed at the
// next append.
func (l *tableLog) read(from int64, dst []item) (items []item, lagging bool, wait <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if from < l.first {
		return dst, true, nil
	}
	if from >= l.head {
		if l.notify == nil {
			l.notify = make(chan struct{})
		}
		return dst, false, l.notify
	}
	for i := from; i < l.head && len(dst) < logReadBatch; i++ {
		dst = append(dst, l.ring[i%int64(len(l.ring))])
	}
	return dst, false, nil
}

// state returns the index the next item gets and the commit record bytes held.
func (l *tableLog) state() (head, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.head, l.bytes
}
