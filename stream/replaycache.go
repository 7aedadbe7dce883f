package stream

import (
	"container/list"
	"context"
	"errors"
	"sync"

	"github.com/google/uuid"
)

// errReplayCapacity: the replayed frames held by every stream together are at
// Hub.MaxReplayBytes; the stream that would pass it ends with reconnect, reason
// "replay_capacity", and resumes from its cursor later.
var errReplayCapacity = errors.New("replay capacity reached")

// errReplayFrameTooLarge: one commit's replayed frame is larger than all of
// Hub.MaxReplayBytes, so no stream can replay it; the stream ends with refresh-required,
// reason "replay_limit", and rebuilds from a snapshot.
var errReplayFrameTooLarge = errors.New("replayed frame larger than the replay budget")

// replayKey names one replayed batch frame: a commit in one framing and encoding.
type replayKey struct {
	activation uuid.UUID
	seq        int64
	framing    Framing
	encoding   Encoding
	shape      string // the shape's key (store.Shape.Key), "" for none
}

// replayEntry is one replayed batch frame in the cache. Until ready is closed it is a
// reservation: the session that made it reads the commit from the table and fills it, and
// sessions that want the same frame wait for it instead of reading it again.
type replayEntry struct {
	key     replayKey
	ready   chan struct{}
	frame   Frame
	version int   // the schema version the commit was written under
	size    int64 // len(frame.Bytes) once filled
	err     error // set, with ready closed, when the reservation was given up
	pins    int   // sessions holding the frame (queued or being written)
	idle    *list.Element
}

// replayCache holds the batch frames that resumed streams replay, shared by every session
// that replays the same commits in the same framing and encoding, so that concurrent
// replays of one range read and encode it once (docs/design.md, "Start position"). Its
// bytes, pinned or not, never pass budget: a frame that does not fit once idle frames are
// evicted (least recently released first) is refused with errReplayCapacity. It is safe
// for concurrent use.
type replayCache struct {
	budget int64

	mu      sync.Mutex
	used    int64
	entries map[replayKey]*replayEntry
	lru     list.List // ready entries no session pins, least recently released first
}

func newReplayCache(budget int64) *replayCache {
	return &replayCache{budget: budget, entries: map[replayKey]*replayEntry{}}
}

// acquire returns an entry for each key, pinned for the caller: a ready frame, one being
// filled by another session, or a new reservation that the caller must fill or give up
// (owned[i] is true).
func (c *replayCache) acquire(keys []replayKey) (entries []*replayEntry, owned []bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, owned = make([]*replayEntry, len(keys)), make([]bool, len(keys))
	for i, k := range keys {
		e := c.entries[k]
		if e == nil {
			e = &replayEntry{key: k, ready: make(chan struct{})}
			c.entries[k] = e
			owned[i] = true
		}
		if e.idle != nil {
			c.lru.Remove(e.idle)
			e.idle = nil
		}
		e.pins++
		entries[i] = e
	}
	return entries, owned
}

// fill makes a reservation ready with frame f of a commit written under schema version
// version, evicting idle frames to make room. Errors: errReplayFrameTooLarge when the
// frame is larger than the whole budget, errReplayCapacity when it does not fit beside the
// frames other sessions hold; the reservation is then given up.
func (c *replayCache) fill(e *replayEntry, f Frame, version int) error {
	size := int64(len(f.Bytes))
	if size > c.budget {
		c.giveUp(e, errReplayFrameTooLarge)
		return errReplayFrameTooLarge
	}
	c.mu.Lock()
	for c.used+size > c.budget && c.lru.Len() > 0 {
		c.evict(c.lru.Front().Value.(*replayEntry))
	}
	if c.used+size > c.budget {
		c.mu.Unlock()
		c.giveUp(e, errReplayCapacity)
		return errReplayCapacity
	}
	c.used += size
	e.frame, e.version, e.size = f, version, size
	c.mu.Unlock()
	close(e.ready)
	return nil
}

// giveUp ends a reservation without a frame: waiters see err, and the next acquire of its
// key makes a new reservation.
func (c *replayCache) giveUp(e *replayEntry, err error) {
	c.mu.Lock()
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
	}
	e.err = err
	c.mu.Unlock()
	close(e.ready)
}

// wait blocks until e is ready or given up (then its error), or ctx ends.
func (c *replayCache) wait(ctx context.Context, e *replayEntry) error {
	select {
	case <-e.ready:
		return e.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release drops one pin of e; a ready frame no session pins becomes evictable.
func (c *replayCache) release(e *replayEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.pins--
	if e.pins > 0 || e.err != nil || c.entries[e.key] != e {
		return
	}
	select {
	case <-e.ready:
		e.idle = c.lru.PushBack(e)
	default:
		// A reservation its owner still fills; the owner's own pin keeps it.
	}
}

// evict removes an idle entry; call with mu held.
func (c *replayCache) evict(e *replayEntry) {
	c.lru.Remove(e.idle)
	e.idle = nil
	delete(c.entries, e.key)
	c.used -= e.size
}

// bytes returns the bytes of the frames in the cache, pinned or not.
func (c *replayCache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
