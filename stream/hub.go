package stream

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/ducktail/ducktail/store"
)

// Defaults for Hub fields left zero (docs/design.md, "The stream"; heartbeat every
// 15 seconds).
const (
	DefaultHeartbeatInterval  = 15 * time.Second
	DefaultIdleTimeout        = time.Hour
	DefaultMaxStreamAge       = 24 * time.Hour
	DefaultMaxBufferedBatches = 1024
	DefaultMaxBufferedBytes   = 64 << 20
	DefaultMaxReplayCommits   = 100_000
	DefaultMaxReplayRows      = 50_000_000
	DefaultMaxReplayBytes     = 256 << 20
	DefaultReplayRate         = 64 << 20
	DefaultMaxStreams         = 20_000
	DefaultMaxStreamsPerToken = 200
	DefaultRetry              = 2 * time.Second
)

// Errors returned by Hub.Subscribe, before a stream starts: coded *store.Error values,
// compared with errors.Is; the api maps their codes to statuses.
var (
	// ErrDraining: the server is shutting down and accepts no new streams
	// (store.CodeUnavailable).
	ErrDraining error = &store.Error{Code: store.CodeUnavailable, Message: "server is draining; reconnect to another instance or retry"}
	// ErrAdmission: MaxStreams streams are open (store.CodeUnavailable).
	ErrAdmission error = &store.Error{Code: store.CodeUnavailable, Message: "stream admission limit reached"}
	// ErrTokenStreams: the token has MaxStreamsPerToken streams open
	// (store.CodeTooManyStreams).
	ErrTokenStreams error = &store.Error{Code: store.CodeTooManyStreams, Message: "too many open streams for this token"}
	// ErrWriterOnly: a stream only the writer can serve, asked of a stream node: a shaped
	// one (a Hub with no Shaper), or one of a table whose messages the node's source no
	// longer has (store.CodeUnavailable). A stream node's API redirects it to the writer;
	// a source's error says which by wrapping it.
	ErrWriterOnly error = &store.Error{Code: store.CodeUnavailable, Message: "this stream is served by the writer"}
)

// Hub fans every published commit out to the live subscribers of its table. Publish never
// blocks on a subscriber and costs the same whatever their number: it appends the commit
// to its table's bounded log (log.go), which every subscriber of the table reads at its
// own pace; one that falls out of the log's window is evicted with a reconnect event while
// the others carry on. Each commit is encoded at most once per framing × encoding in use,
// and those bytes are shared by every subscriber. Set the exported fields, then call Open;
// Close undoes Open.
type Hub struct {
	// Source is where baselines, tokens and replay are read from, and whose codec
	// (Source.Cursors) encodes and decodes the cursors; required, and opened before the
	// Hub: Local{DB} in the writer, package jetstream's Source on a stream node.
	Source Source
	// Shaper filters commits for shaped streams (docs/design.md, "Shapes and
	// policies"); nil refuses them with ErrWriterOnly.
	Shaper Shaper
	// HeartbeatInterval: a heartbeat is sent after this long without any event.
	HeartbeatInterval time.Duration
	// IdleTimeout ends a stream (reconnect, reason "idle_timeout") after this long without
	// a schema or batch event; 0 disables it.
	IdleTimeout time.Duration
	// MaxStreamAge ends a stream (reconnect, reason "max_stream_age") after this long,
	// minus up to 10% jitter; 0 disables it.
	MaxStreamAge time.Duration
	// MaxBufferedBatches and MaxBufferedBytes bound the log of each table with
	// subscribers: the newest MaxBufferedBatches events, at most MaxBufferedBytes of
	// commit records (always the newest commit). A subscriber further behind than the log
	// holds ends with reconnect, reason "slow_consumer".
	MaxBufferedBatches int
	MaxBufferedBytes   int64
	// MaxReplayCommits and MaxReplayRows bound one resume; past them the stream ends with
	// refresh-required, reason "replay_limit".
	MaxReplayCommits int64
	MaxReplayRows    int64
	// MaxReplayBytes bounds the replayed batch frames all resumed streams hold together,
	// in bytes (the shared replay cache, replaycache.go); a stream whose next replayed
	// commit does not fit ends with reconnect, reason "replay_capacity". Each stream holds
	// at most one replay chunk (about 1 MiB of commits, or one larger commit).
	MaxReplayBytes int64
	// ReplayRate bounds the bytes per second all resumed streams replay together (a
	// token bucket, golang.org/x/time/rate, with a burst of one replay chunk), so that a
	// storm of replays, whose frames cost the same CPU to write whether or not they are
	// shared, leaves the writer and live delivery their share of the cores; a replay
	// waits for its next chunk, holding nothing. It applies while more than four streams
	// replay at once (a few replays run at full speed). Zero or less means no limit.
	ReplayRate int64
	// MaxStreams bounds open streams (admission); MaxStreamsPerToken bounds them per token.
	MaxStreams         int
	MaxStreamsPerToken int
	// Retry is the base reconnect delay sent in retry fields and reconnect events; each
	// value sent adds up to the same again of random jitter.
	Retry time.Duration
	// Logger defaults to slog.Default() with component=stream.
	Logger *slog.Logger

	mu       sync.Mutex
	logs     map[int64]*tableLog // the logs of the tables with subscribers, by table id
	sessions map[*Session]struct{}
	perToken map[string]int
	draining bool
	drained  chan struct{} // closed when draining and no session is left

	cursors     *store.Cursors
	replays     *replayCache
	replayRate  *rate.Limiter
	replayReads chan struct{} // a slot per replay read from the table in progress
	shapes      shapesInUse   // the distinct shapes of each table's sessions (shape.go)
	// replaying counts the sessions whose replay is in progress; replayRead counts the
	// commits replay read from the table.
	replaying  atomic.Int64
	replayRead atomic.Int64

	// wakeQ holds the logs whose waiting sessions the waker goroutine is to wake, each
	// at most once (tableLog.wakeQueued): waking a thousand sessions is not the writer
	// goroutine's work, and the goroutines it would wake would run before the ingest
	// requests it answers.
	wakeMu sync.Mutex
	wakeQ  []*tableLog
	wakeUp chan struct{}

	opened atomic.Bool
	closed atomic.Bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

var _ store.Publisher = (*Hub)(nil)

// NewHub returns a Hub reading from src, with defaults filled in.
func NewHub(src Source) *Hub {
	return &Hub{
		Source:             src,
		HeartbeatInterval:  DefaultHeartbeatInterval,
		IdleTimeout:        DefaultIdleTimeout,
		MaxStreamAge:       DefaultMaxStreamAge,
		MaxBufferedBatches: DefaultMaxBufferedBatches,
		MaxBufferedBytes:   DefaultMaxBufferedBytes,
		MaxReplayCommits:   DefaultMaxReplayCommits,
		MaxReplayRows:      DefaultMaxReplayRows,
		MaxReplayBytes:     DefaultMaxReplayBytes,
		ReplayRate:         DefaultReplayRate,
		MaxStreams:         DefaultMaxStreams,
		MaxStreamsPerToken: DefaultMaxStreamsPerToken,
		Retry:              DefaultRetry,
	}
}

// Open starts the goroutine that wakes waiting sessions. It fails, and starts nothing, when
// Source is nil or not yet open (store.DB.Open makes the cursor codec the hub encodes
// with).
func (h *Hub) Open() error {
	if h.Source == nil || h.Source.Cursors() == nil {
		return errors.New("stream: Hub.Open: Source is nil or not open")
	}
	h.cursors = h.Source.Cursors()
	if h.MaxReplayBytes <= 0 {
		h.MaxReplayBytes = DefaultMaxReplayBytes
	}
	h.replays = newReplayCache(h.MaxReplayBytes)
	h.replayReads = make(chan struct{}, replayReadsAtOnce)
	h.replayRate = rate.NewLimiter(rate.Inf, 0)
	if h.ReplayRate > 0 {
		h.replayRate = rate.NewLimiter(rate.Limit(h.ReplayRate), replayChunkBytes)
	}
	if h.Logger == nil {
		h.Logger = slog.Default().With("component", "stream")
	}
	if h.HeartbeatInterval <= 0 {
		h.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if h.MaxBufferedBatches <= 0 {
		h.MaxBufferedBatches = DefaultMaxBufferedBatches
	}
	if h.MaxBufferedBytes <= 0 {
		h.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if h.Retry <= 0 {
		h.Retry = DefaultRetry
	}
	h.logs = map[int64]*tableLog{}
	h.wakeUp = make(chan struct{}, 1)
	h.stop = make(chan struct{})
	h.sessions = map[*Session]struct{}{}
	h.perToken = map[string]int{}
	h.drained = make(chan struct{})
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.waker()
	}()
	h.opened.Store(true)
	return nil
}

// Close stops publishing: open sessions get no more commits; Drain them first.
func (h *Hub) Close() error {
	if h.stop != nil && !h.closed.Swap(true) {
		close(h.stop)
		h.wg.Wait()
	}
	return nil
}

// waker wakes the sessions waiting on the logs Publish queued, until Close.
func (h *Hub) waker() {
	for {
		select {
		case <-h.stop:
			return
		case <-h.wakeUp:
		}
		h.wakeMu.Lock()
		logs := h.wakeQ
		h.wakeQ = nil
		h.wakeMu.Unlock()
		for _, l := range logs {
			// Cleared first: an append after this queues the log again.
			l.wakeQueued.Store(false)
			l.wake()
		}
	}
}

// Publish implements store.Publisher. It ends the streams of a revoked token, and appends
// every other event to the log of its table when the table has subscribers: O(1) in the
// number of subscribers, who read the log at their own pace. The store calls it from its
// writer goroutine, in commit order.
func (h *Hub) Publish(e store.Event) {
	if !h.opened.Load() || h.closed.Load() {
		return // before Open (a stream node's source starts first) there is no session
	}
	it := item{event: e}
	var table int64
	switch e := e.(type) {
	case store.TokenRevoked:
		h.mu.Lock()
		defer h.mu.Unlock()
		for s := range h.sessions {
			if s.token.ID == e.TokenID {
				s.end(terminalFrame(s.framing, EventFailure, "token_revoked", 0, "the stream's token was revoked"))
			}
		}
		return
	case store.CommitEvent:
		table = e.Position.TableID
	case store.SchemaEvent:
		table = e.Position.TableID
	case store.ActivationEnded:
		table = e.Position.TableID
	case store.ActivationStarted, store.TokenCreated:
		return // nothing to deliver: a new activation has no subscriber yet
	}
	h.mu.Lock()
	log := h.logs[table]
	h.mu.Unlock()
	if log == nil {
		// No subscriber: one that registers later reads a baseline that already counts
		// this event (the store updates its catalog before publishing).
		return
	}
	if e, ok := e.(store.CommitEvent); ok {
		it.commit = newSharedCommit(e, h.cursors)
	}
	if log.append(it) && !log.wakeQueued.Swap(true) {
		h.wakeMu.Lock()
		h.wakeQ = append(h.wakeQ, log)
		h.wakeMu.Unlock()
		select {
		case h.wakeUp <- struct{}{}:
		default:
		}
	}
}

// HasSubscribers reports whether table tableID has a stream open: a source with events
// to decode first (a stream node's) skips the work for tables nobody reads.
func (h *Hub) HasSubscribers(tableID int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logs[tableID] != nil
}

// SubscribeRequest describes a stream to open. The api has authenticated the token and checked
// its purpose and scope.
type SubscribeRequest struct {
	Table    string
	Token    store.Token
	Framing  Framing
	Encoding Encoding
	// Cursor is the Last-Event-ID or ?cursor= value, already checked by CheckLastEventID;
	// "" starts a new subscription at the current baseline.
	Cursor string
	// Shape is what the stream carries of the table (snapshot.Reader.Shape compiles it):
	// nil for every row and column (docs/design.md, "Shapes and policies").
	Shape *store.Shape
}

// Subscribe registers a subscription at the head of req.Table's log, before anything is read, so
// that no commit after the baseline or the replay range can be missed (docs/design.md, "The
// stream"). Errors, all before HTTP 200: a CodeNotFound *store.Error for an unknown table,
// a CodeUnauthorized one for a token revoked or expired since it was authenticated,
// ErrDraining, ErrAdmission, ErrTokenStreams, ErrWriterOnly.
func (h *Hub) Subscribe(req SubscribeRequest) (*Session, error) {
	if !req.Shape.Empty() && h.Shaper == nil {
		return nil, ErrWriterOnly
	}
	info, err := h.Source.Table(req.Table)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// Check the token again under the lock: a revocation applied after the caller
	// authenticated, and published before this session registered, would otherwise be
	// missed (the store applies a revocation before publishing it, and Publish holds mu).
	if err := h.tokenValid(req.Token.ID); err != nil {
		return nil, err
	}
	switch {
	case h.draining:
		return nil, ErrDraining
	case h.MaxStreams > 0 && len(h.sessions) >= h.MaxStreams:
		return nil, ErrAdmission
	case h.MaxStreamsPerToken > 0 && h.perToken[req.Token.ID] >= h.MaxStreamsPerToken:
		return nil, ErrTokenStreams
	}
	log := h.logs[info.ID]
	if log == nil {
		log = newTableLog(h.MaxBufferedBatches, h.MaxBufferedBytes)
		h.logs[info.ID] = log
	}
	log.sessions++
	s := newSession(h, req, info, log)
	h.sessions[s] = struct{}{}
	h.perToken[req.Token.ID]++
	h.shapes.add(info.ID, s.shape, s.shapeKey)
	return s, nil
}

// tokenValid returns the store's error for a token revoked or expired since it was
// authenticated.
func (h *Hub) tokenValid(id string) error {
	t, err := h.Source.LookupToken(id)
	switch {
	case err != nil:
		return &store.Error{Code: store.CodeUnauthorized, Message: "unknown token", Err: store.ErrTokenUnknown}
	case !t.RevokedAt.IsZero():
		return &store.Error{Code: store.CodeUnauthorized, Message: "token revoked", Err: store.ErrTokenRevoked}
	case t.Expired(time.Now()):
		return &store.Error{Code: store.CodeUnauthorized, Message: "token expired", Err: store.ErrTokenExpired}
	}
	return nil
}

// remove unregisters s; called once by Session.Close.
func (h *Hub) remove(s *Session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.sessions, s)
	h.shapes.remove(s.tableID, s.shapeKey)
	if s.log.sessions--; s.log.sessions == 0 && h.logs[s.tableID] == s.log {
		delete(h.logs, s.tableID)
	}
	if h.perToken[s.token.ID]--; h.perToken[s.token.ID] <= 0 {
		delete(h.perToken, s.token.ID)
	}
	if h.draining && len(h.sessions) == 0 {
		select {
		case <-h.drained:
		default:
			close(h.drained)
		}
	}
}

// ReplayStats is a point-in-time view of resumed streams' replay, for metrics.
type ReplayStats struct {
	// Active is how many streams are replaying.
	Active int64
	// Bytes is how many bytes of replayed batch frames the replay cache holds, shared by
	// every stream that replays them; at most MaxReplayBytes.
	Bytes int64
	// Read counts the commits replay read from the table since Open: each is read once
	// for every stream that replays it at about the same time.
	Read int64
}

// ReplayStats returns the current ReplayStats; zero before Open.
func (h *Hub) ReplayStats() ReplayStats {
	if h.replays == nil {
		return ReplayStats{}
	}
	return ReplayStats{Active: h.replaying.Load(), Bytes: h.replays.bytes(), Read: h.replayRead.Load()}
}

// LogStats is a point-in-time view of the tables' logs and of how far behind their
// sessions read, for metrics.
type LogStats struct {
	// Bytes is the commit record bytes the logs hold, at most MaxBufferedBytes per table
	// with subscribers.
	Bytes int64
	// MaxLag is the most events any live session has yet to take from its table's log; a
	// session more than MaxBufferedBatches behind is evicted (reconnect slow_consumer).
	MaxLag int64
}

// LogStats returns the current LogStats, visiting every session: for scrapes, not for a
// hot path.
func (h *Hub) LogStats() LogStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	var st LogStats
	heads := make(map[*tableLog]int64, len(h.logs))
	for _, l := range h.logs {
		head, bytes := l.state()
		heads[l] = head
		st.Bytes += bytes
	}
	for s := range h.sessions {
		if head, ok := heads[s.log]; ok {
			st.MaxLag = max(st.MaxLag, head-s.next.Load())
		}
	}
	return st
}

// Streams returns the number of open sessions.
func (h *Hub) Streams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// Drain refuses new streams and asks every open stream to reconnect (reconnect, reason
// "server_draining", with a retry_ms spread over spread so that clients do not all return
// at once), then waits until every session closed or ctx ends. docs/design.md, "Shutdown".
func (h *Hub) Drain(ctx context.Context, spread time.Duration) error {
	h.mu.Lock()
	h.draining = true
	if len(h.sessions) == 0 {
		select {
		case <-h.drained:
		default:
			close(h.drained)
		}
	}
	for s := range h.sessions {
		retry := h.Retry.Milliseconds()
		if spread > 0 {
			retry += rand.Int64N(spread.Milliseconds() + 1)
		}
		s.end(terminalFrame(s.framing, EventReconnect, "server_draining", retry, ""))
	}
	h.mu.Unlock()
	select {
	case <-h.drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RetryMS returns a reconnect delay in milliseconds: Retry plus up to Retry of jitter.
func (h *Hub) RetryMS() int64 {
	base := h.Retry.Milliseconds()
	return base + rand.Int64N(base+1)
}

// Draining reports whether Drain was called.
func (h *Hub) Draining() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.draining
}
