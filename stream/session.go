package stream

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ducktail/ducktail/store"
)

// Session is one subscriber's stream: its place in its table's log, registered by
// Hub.Subscribe, and the state of its delivery. The api calls Next in a loop and writes
// each frame; Next is not safe for concurrent use, but the hub appends to the log and ends
// sessions concurrently.
type Session struct {
	hub      *Hub
	table    string
	tableID  int64
	token    store.Token
	framing  Framing
	encoding Encoding
	cursor   string
	// shape is what the stream carries of its table, with its key and tag (shape.go).
	shape    *store.Shape
	shapeKey string
	shapeTag store.ShapeTag
	// deadline is when max_stream_age ends the stream (zero: never), jittered per session.
	deadline time.Time

	// log is the table's log; next is the index of the next item to take from it, set
	// by Subscribe and then moved by Next (read atomically for LogStats).
	log  *tableLog
	next atomic.Int64

	ended     atomic.Pointer[Frame] // a terminal frame decided outside Next (drain, revocation)
	wake      chan struct{}
	closeOnce sync.Once

	// Owned by the goroutine calling Next.
	started bool
	done    bool
	// out holds the frames made and not yet returned, from outAt on; its array is kept
	// and reused once every frame was returned, so that a busy session makes frames
	// without allocating.
	out           []Frame
	outAt         int
	pos           store.Position // the last position delivered (baseline, replayed or live)
	schemaVersion int
	replay        *replay
	written       *replayEntry // the pin of the frame Next returned last
	lastData      time.Time
	timer         *time.Timer
	timerAt       time.Time       // when timer fires, zero when it is not armed
	taken         []item          // the items taken from the log, reused
	logWait       <-chan struct{} // closed when the log has the item at next
}

// newSession returns a session reading log from its current head on. Every event
// appended after that is read; one appended before was applied to the store's catalog
// before it was published, so the baseline or replay range the session reads next
// already covers it (start).
func newSession(h *Hub, req SubscribeRequest, info store.TableInfo, log *tableLog) *Session {
	s := &Session{
		hub: h, table: info.Name, tableID: info.ID, token: req.Token,
		framing: req.Framing, encoding: req.Encoding, cursor: req.Cursor,
		shape: req.Shape, shapeKey: req.Shape.Key(), shapeTag: req.Shape.Tag(),
		wake: make(chan struct{}, 1), log: log,
	}
	head, _ := log.state()
	s.next.Store(head)
	if h.MaxStreamAge > 0 {
		s.deadline = time.Now().Add(h.MaxStreamAge - time.Duration(rand.Int64N(int64(h.MaxStreamAge)/10+1)))
	}
	return s
}

// Close unregisters the session from the hub. It is safe to call more than once.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		s.hub.remove(s)
		if s.timer != nil {
			s.timer.Stop()
		}
		s.dropOut()
		s.releaseWritten()
		s.endReplay()
	})
}

// releaseWritten releases the replay cache pin of the frame Next returned last: the caller
// asks for the next frame, or closes the session, only once it wrote that one.
func (s *Session) releaseWritten() {
	if s.written != nil {
		s.hub.replays.release(s.written)
		s.written = nil
	}
}

// dropOut discards the frames not yet returned, releasing their pins.
func (s *Session) dropOut() {
	for _, f := range s.out[s.outAt:] {
		if f.pin != nil {
			s.hub.replays.release(f.pin)
		}
	}
	s.out, s.outAt = nil, 0
}

// ready reports whether out holds a frame not yet returned.
func (s *Session) ready() bool { return s.outAt < len(s.out) }

// pop returns the oldest frame of out, which must be ready.
func (s *Session) pop() Frame {
	f := s.out[s.outAt]
	s.out[s.outAt] = Frame{}
	if s.outAt++; s.outAt == len(s.out) {
		s.out, s.outAt = s.out[:0], 0
	}
	return f
}

// endReplay ends the session's replay, if one is in progress.
func (s *Session) endReplay() {
	if s.replay != nil {
		s.replay = nil
		s.hub.replaying.Add(-1)
	}
}

// Table returns the name of the table the session streams.
func (s *Session) Table() string { return s.table }

// end makes f the session's next and last frame, unless one is already decided.
func (s *Session) end(f Frame) {
	s.ended.CompareAndSwap(nil, &f)
	s.signal()
}

func (s *Session) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Next returns the next frame to write: first a schema event (or, when the cursor cannot
// be used, a terminal refresh-required), then replayed and live batch events with schema
// events where the schema changes, heartbeats when idle for HeartbeatInterval, and finally
// one terminal event, after which it returns io.EOF. It blocks until a frame is ready or
// ctx ends (then ctx's error).
func (s *Session) Next(ctx context.Context) (Frame, error) {
	s.releaseWritten()
	for {
		if s.ready() {
			f := s.pop()
			if f.Terminal {
				s.done = true
				s.dropOut()
				s.endReplay()
			}
			s.written = f.pin
			return f, nil
		}
		if s.done {
			return Frame{}, io.EOF
		}
		if f, ok := s.takeEnded(); ok {
			s.out = append(s.out, f)
			continue
		}
		// Lifetimes end a busy stream too, not only one that waits.
		if what, passed := s.lifetimePassed(time.Now()); passed {
			s.out = append(s.out, s.dueFrame(what))
			continue
		}
		if !s.started {
			s.started = true
			s.lastData = time.Now()
			if err := s.start(ctx); err != nil {
				return Frame{}, err
			}
			continue
		}
		if s.replay != nil {
			if err := s.replayNext(ctx); err != nil {
				return Frame{}, err
			}
			continue
		}
		if s.takeLog(); s.ready() {
			continue
		}
		if err := s.wait(ctx); err != nil {
			return Frame{}, err
		}
	}
}

func (s *Session) takeEnded() (Frame, bool) {
	if f := s.ended.Load(); f != nil {
		return *f, true
	}
	return Frame{}, false
}

// due names what ends a wait when its timer fires first.
type due int

const (
	dueHeartbeat due = iota
	dueMaxAge
	dueTokenExpiry
	dueIdle
)

// nextLifetime returns the earliest lifetime limit of the stream and which it is: the
// token's expiry, max_stream_age, or idle_timeout counted from the last data; ok is false
// when none applies.
func (s *Session) nextLifetime() (at time.Time, what due, ok bool) {
	consider := func(t time.Time, w due) {
		if !t.IsZero() && (!ok || t.Before(at)) {
			at, what, ok = t, w, true
		}
	}
	consider(s.token.ExpiresAt, dueTokenExpiry)
	consider(s.deadline, dueMaxAge)
	if s.hub.IdleTimeout > 0 && !s.lastData.IsZero() {
		consider(s.lastData.Add(s.hub.IdleTimeout), dueIdle)
	}
	return at, what, ok
}

// lifetimePassed reports whether a lifetime limit has passed at now.
func (s *Session) lifetimePassed(now time.Time) (due, bool) {
	at, what, ok := s.nextLifetime()
	return what, ok && !now.Before(at)
}

// wait blocks until the log has the next item, the session is ended, a deadline passes
// (adding a heartbeat or a terminal frame to out) or ctx ends. The timer is left armed
// when something else ends the wait, and armed again only when it would fire too late: a
// busy session does not re-arm it per frame; fired early, it is armed for the rest.
func (s *Session) wait(ctx context.Context) error {
	at, what := time.Now().Add(s.hub.HeartbeatInterval), dueHeartbeat
	if limit, w, ok := s.nextLifetime(); ok && limit.Before(at) {
		at, what = limit, w
	}
	for {
		if s.timerAt.IsZero() || s.timerAt.After(at) {
			d := max(time.Until(at), 0)
			if s.timer == nil {
				s.timer = time.NewTimer(d)
			} else {
				s.timer.Reset(d)
			}
			s.timerAt = at
		}
		select {
		case <-s.wake:
			return nil
		case <-s.logWait:
			return nil
		case <-s.timer.C:
			s.timerAt = time.Time{}
			if time.Now().Before(at) {
				continue
			}
			s.out = append(s.out, s.dueFrame(what))
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// dueFrame is the frame a passed deadline adds: a heartbeat, or the terminal event of a
// lifetime limit.
func (s *Session) dueFrame(what due) Frame {
	switch what {
	case dueMaxAge:
		return terminalFrame(s.framing, EventReconnect, "max_stream_age", s.hub.RetryMS(), "")
	case dueTokenExpiry:
		return terminalFrame(s.framing, EventFailure, "token_expired", 0, "the stream's token expired")
	case dueIdle:
		return terminalFrame(s.framing, EventReconnect, "idle_timeout", s.hub.RetryMS(), "")
	}
	return heartbeatFrames[s.framing]
}

// Buffered reports whether Next has a frame ready without waiting, so that the caller can
// write several frames with one write: one already made, an end decided, or one made now
// from what the table's log already holds (never waiting, never reading the table). Like
// Next, it is called only by the goroutine calling Next.
func (s *Session) Buffered() bool {
	if s.ready() {
		return true
	}
	if s.done || !s.started || s.replay != nil {
		return false
	}
	if _, ok := s.takeEnded(); ok {
		return true
	}
	s.takeLog()
	return s.ready()
}

// takeLog turns the next items of the table's log into frames, until some frame is ready
// or the log has nothing more (then logWait is the channel to wait on). A session whose
// next item the log has dropped fell out of its window: it ends with reconnect, reason
// "slow_consumer", and resumes from its cursor by replay.
func (s *Session) takeLog() {
	s.logWait = nil
	for !s.ready() {
		items, lagging, wait := s.log.read(s.next.Load(), s.taken[:0])
		s.taken = items
		if lagging {
			s.out = append(s.out, terminalFrame(s.framing, EventReconnect, "slow_consumer", s.hub.RetryMS(), ""))
			return
		}
		if len(items) == 0 {
			s.logWait = wait
			return
		}
		s.next.Add(int64(len(items)))
		ended, made := false, len(s.out)
		for _, it := range items {
			if ended = !s.deliver(it); ended {
				// A terminal frame: nothing after it is delivered.
				break
			}
		}
		if len(s.out) > made {
			s.lastData = time.Now() // once for the items taken together
		}
		clear(items)
		if ended {
			return
		}
	}
}

// deliver adds the frames for one live item to out; false when it ended the stream. The
// caller sets lastData.
func (s *Session) deliver(it item) bool {
	switch e := it.event.(type) {
	case store.ActivationEnded:
		if e.Position.Activation != s.pos.Activation {
			return true
		}
		s.out = append(s.out, terminalFrame(s.framing, EventRefreshRequired, e.Reason, 0, ""))
		return false
	case store.SchemaEvent:
		if e.Position.Activation != s.pos.Activation || e.Schema.Version <= s.schemaVersion {
			return true
		}
		return s.appendSchema(e.Schema)
	case store.CommitEvent:
		if e.Position.Activation != s.pos.Activation {
			// A commit of an activation that ended before this stream's baseline; an end
			// of the stream's own activation always arrives first as ActivationEnded.
			return true
		}
		if e.Position.Seq <= s.pos.Seq {
			return true // covered by the baseline or the replay
		}
		if e.Position.Seq != s.pos.Seq+1 {
			// Never skip: the client resumes from its last cursor and replay from the
			// table fills the gap exactly.
			s.hub.Logger.Error("stream gap", "table", s.table, "have", s.pos.Seq, "got", e.Position.Seq)
			s.out = append(s.out, terminalFrame(s.framing, EventReconnect, "resync", s.hub.RetryMS(), ""))
			return false
		}
		if e.Schema.Version != s.schemaVersion && !s.appendSchema(e.Schema) {
			return false
		}
		f, err := s.commitFrame(it.commit)
		if err != nil {
			s.out = append(s.out, s.failure(err))
			return false
		}
		s.out = append(s.out, f)
		s.pos = e.Position
	}
	return true
}

// appendSchema adds a schema event for schema, whose id is the last delivered position:
// a schema change acknowledges no data (docs/design.md, "The stream").
func (s *Session) appendSchema(schema *store.Schema) bool {
	if !s.checkShape(schema) {
		return false
	}
	f, err := s.schemaFrame(schema)
	if err != nil {
		s.out = append(s.out, s.internalFailure(err))
		return false
	}
	s.out = append(s.out, f)
	s.schemaVersion = schema.Version
	s.lastData = time.Now()
	return true
}

func (s *Session) schemaFrame(schema *store.Schema) (Frame, error) {
	p, err := schemaPayload(s.encoding, s.shape.Project(schema))
	if err != nil {
		return Frame{}, err
	}
	return dataFrame(s.framing, EventSchema, s.encodeCursor(s.pos), p, CommitMeta{})
}

// failure is the terminal frame of err: a shape's failure, or an internal one.
func (s *Session) failure(err error) Frame {
	var se *shapeError
	if errors.As(err, &se) {
		return s.shapeFailure()
	}
	return s.internalFailure(err)
}

func (s *Session) internalFailure(err error) Frame {
	s.hub.Logger.Error("stream failed", "table", s.table, "err", err)
	return terminalFrame(s.framing, EventFailure, "internal", 0, "internal error")
}

// readFailure is the terminal frame of a failed read of the source: reconnect, reason
// ReasonSourceUnavailable, when the source said it is unavailable for now (a stream
// node whose JetStream does not answer, store.CodeUnavailable), so that the client
// resumes; an internal failure otherwise.
func (s *Session) readFailure(err error) Frame {
	if store.ErrorCode(err) == store.CodeUnavailable {
		s.hub.Logger.Warn("stream source unavailable; the client is told to reconnect", "table", s.table, "err", err)
		return terminalFrame(s.framing, EventReconnect, ReasonSourceUnavailable, s.hub.RetryMS(), "")
	}
	return s.internalFailure(err)
}

func (s *Session) refresh(reason string) {
	s.out = append(s.out, terminalFrame(s.framing, EventRefreshRequired, reason, 0, ""))
}

// start captures the baseline of a new subscription, or validates the cursor of a resume
// and plans its replay. The session's place in the log was taken by Subscribe, before this read.
// The baseline comes from the store's in-memory catalog: the store updates it after each
// commit and before publishing the commit, so every commit after the baseline reaches the
// log after that place, and those at or before it are skipped by seq.
func (s *Session) start(ctx context.Context) error {
	if s.cursor != "" {
		return s.startReplay(ctx)
	}
	info, err := s.hub.Source.Table(s.table)
	if errors.Is(err, store.ErrTableNotFound) || (err == nil && info.ID != s.tableID) {
		s.refresh(store.ReasonTableDropped)
		return nil
	}
	if err != nil {
		s.out = append(s.out, s.readFailure(err))
		return nil
	}
	s.pos = info.Head
	s.appendSchema(&info.Schema)
	return nil
}
