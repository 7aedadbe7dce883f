package stream

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

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
)

// Hub fans every published commit out to the live subscribers of its table. Publish never
// blocks on a subscriber: each has a bounded queue, and one past its bound is evicted with
// a reconnect event while the others carry on. Each commit is encoded at most once per
// framing × encoding in use, and those bytes are shared by every subscriber. Set the
// exported fields, then call Open; Close undoes Open.
type Hub struct {
	// DB is the store replay and baselines are read from, and whose codec (DB.Cursors)
	// encodes and decodes the cursors; required, and opened before the Hub.
	DB *store.DB
	// HeartbeatInterval: a heartbeat is sent after this long without any event.
	HeartbeatInterval time.Duration
	// IdleTimeout ends a stream (reconnect, reason "idle_timeout") after this long without
	// a schema or batch event; 0 disables it.
	IdleTimeout time.Duration
	// MaxStreamAge ends a stream (reconnect, reason "max_stream_age") after this long,
	// minus up to 10% jitter; 0 disables it.
	MaxStreamAge time.Duration
	// MaxBufferedBatches and MaxBufferedBytes bound each subscriber's queue.
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
	// MaxStreams bounds open streams (admission); MaxStreamsPerToken bounds them per token.
	MaxStreams         int
	MaxStreamsPerToken int
	// Retry is the base reconnect delay sent in retry fields and reconnect events; each
	// value sent adds up to the same again of random jitter.
	Retry time.Duration
	// Logger defaults to slog.Default() with component=stream.
	Logger *slog.Logger

	mu       sync.Mutex
	topics   map[int64]map[*Session]struct{} // live subscribers by table id
	sessions map[*Session]struct{}
	perToken map[string]int
	draining bool
	drained  chan struct{} // closed when draining and no session is left

	dispatchMu   sync.Mutex
	dispatchQ    []store.Event
	dispatchWake chan struct{}

	cursors *store.Cursors
	replays *replayCache
	shapes  shapesInUse // the distinct shapes of each table's sessions (shape.go)
	// replaying counts the sessions whose replay is in progress; replayRead counts the
	// commits replay read from the table.
	replaying  atomic.Int64
	replayRead atomic.Int64

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ store.Publisher = (*Hub)(nil)

// NewHub returns a Hub reading from db, with defaults filled in.
func NewHub(db *store.DB) *Hub {
	return &Hub{
		DB:                 db,
		HeartbeatInterval:  DefaultHeartbeatInterval,
		IdleTimeout:        DefaultIdleTimeout,
		MaxStreamAge:       DefaultMaxStreamAge,
		MaxBufferedBatches: DefaultMaxBufferedBatches,
		MaxBufferedBytes:   DefaultMaxBufferedBytes,
		MaxReplayCommits:   DefaultMaxReplayCommits,
		MaxReplayRows:      DefaultMaxReplayRows,
		MaxReplayBytes:     DefaultMaxReplayBytes,
		MaxStreams:         DefaultMaxStreams,
		MaxStreamsPerToken: DefaultMaxStreamsPerToken,
		Retry:              DefaultRetry,
	}
}

// Open starts the dispatcher goroutine. It fails, and starts nothing, when DB is nil or
// not yet open (store.DB.Open makes the cursor codec the hub encodes with).
func (h *Hub) Open() error {
	if h.DB == nil || h.DB.Cursors() == nil {
		return errors.New("stream: Hub.Open: DB is nil or not open")
	}
	h.cursors = h.DB.Cursors()
	if h.MaxReplayBytes <= 0 {
		h.MaxReplayBytes = DefaultMaxReplayBytes
	}
	h.replays = newReplayCache(h.MaxReplayBytes)
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
	h.topics = map[int64]map[*Session]struct{}{}
	h.sessions = map[*Session]struct{}{}
	h.perToken = map[string]int{}
	h.drained = make(chan struct{})
	h.dispatchWake = make(chan struct{}, 1)
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.dispatch()
	}()
	return nil
}

// Close stops the dispatcher. Open sessions get no more commits; Drain them first.
func (h *Hub) Close() error {
	if h.cancel != nil {
		h.cancel()
		h.wg.Wait()
	}
	return nil
}

// Publish implements store.Publisher: it queues e for the dispatcher and returns at once.
func (h *Hub) Publish(e store.Event) {
	h.dispatchMu.Lock()
	h.dispatchQ = append(h.dispatchQ, e)
	h.dispatchMu.Unlock()
	select {
	case h.dispatchWake <- struct{}{}:
	default:
	}
}

// dispatch hands each published event to the queues of the subscribers it concerns.
func (h *Hub) dispatch() {
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.dispatchWake:
		}
		h.dispatchMu.Lock()
		events := h.dispatchQ
		h.dispatchQ = nil
		h.dispatchMu.Unlock()
		for _, e := range events {
			h.fanOut(e)
		}
	}
}

// fanOut ends the streams of a revoked token, and queues every other event for the live
// subscribers of its table.
func (h *Hub) fanOut(e store.Event) {
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
		it.commit = newSharedCommit(e, h.cursors)
		table = e.Position.TableID
	case store.SchemaEvent:
		table = e.Position.TableID
	case store.ActivationEnded:
		table = e.Position.TableID
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.topics[table] {
		s.push(it, h.MaxBufferedBatches, h.MaxBufferedBytes)
	}
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

// Subscribe registers a subscription's live queue on req.Table, before anything is read, so
// that no commit after the baseline or the replay range can be missed (docs/design.md, "The
// stream"). Errors, all before HTTP 200: a CodeNotFound *store.Error for an unknown table,
// a CodeUnauthorized one for a token revoked or expired since it was authenticated,
// ErrDraining, ErrAdmission, ErrTokenStreams.
func (h *Hub) Subscribe(req SubscribeRequest) (*Session, error) {
	info, err := h.DB.Table(req.Table)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// Check the token again under the lock: a revocation applied after the caller
	// authenticated, and published before this session registered, would otherwise be
	// missed (the store applies a revocation before publishing it, and fanOut holds mu).
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
	s := newSession(h, req, info)
	h.sessions[s] = struct{}{}
	h.perToken[req.Token.ID]++
	subs := h.topics[info.ID]
	if subs == nil {
		subs = map[*Session]struct{}{}
		h.topics[info.ID] = subs
	}
	subs[s] = struct{}{}
	h.shapes.add(info.ID, s.shape, s.shapeKey)
	return s, nil
}

// tokenValid returns the store's error for a token revoked or expired since it was
// authenticated.
func (h *Hub) tokenValid(id string) error {
	t, err := h.DB.LookupToken(id)
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
	if subs := h.topics[s.tableID]; subs != nil {
		delete(subs, s)
		if len(subs) == 0 {
			delete(h.topics, s.tableID)
		}
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
