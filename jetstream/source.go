package jetstream

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// DefaultHeadWait is how long Source.AwaitHead and a baseline wait for a commit or schema
// the writer published and this node has not received yet.
const DefaultHeadWait = 5 * time.Second

// DefaultCatalogWait is how long Source.Authenticate and Source.Table wait for a token or
// table they do not know: the writer may have created it a moment ago, and the catalog's
// watch not delivered it yet.
const DefaultCatalogWait = 2 * time.Second

// Source is the stream.Source of a stream node (docs/scaling.md, "Stream nodes"): it holds
// no DuckDB file, and reads everything from the JetStream stream a writer's Publisher
// publishes to and from its catalog bucket (catalog.go). It keeps in memory the catalog's
// tables and tokens (a watch of the bucket: no round trip per request, and a revocation
// reaches the Hub within the watch's delivery time), and one feed per table in use: an
// ordered consumer of the table's subject that updates the table's head and then publishes
// each event to the Hub (feed.go). Replay reads the stream within its retention
// (replaytx.go). Set the fields, Start it, then open the Hub over it; Close it after the
// Hub.
type Source struct {
	// Stream and SubjectPrefix are the writer's (Publisher.Stream, SubjectPrefix).
	Stream        string
	SubjectPrefix string
	// HeadWait bounds AwaitHead and the wait of a baseline for a table's first schema.
	HeadWait time.Duration
	// CatalogWait bounds the wait of Authenticate and Table for a token id or a table
	// name the catalog has not shown yet.
	CatalogWait time.Duration
	// FetchTimeout bounds one JetStream API call or fetch.
	FetchTimeout time.Duration
	Logger       *slog.Logger
	// Now is the clock tokens expire on.
	Now func() time.Time

	js      njs.JetStream
	str     njs.Stream
	kv      njs.KeyValue
	hub     Hub
	cursors *store.Cursors
	watch   njs.KeyWatcher
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	received    atomic.Int64
	commitDelay prometheus.Histogram

	mu     sync.Mutex
	tables map[string]tableEntry  // live tables by store.FoldName
	tokens map[string]store.Token // by id
	// changed is closed and replaced whenever tables or tokens change.
	changed chan struct{}
	feeds   map[int64]*feed // the tables in use, by id
	// ended holds the activations whose end a feed received, so that a cursor of one is
	// judged without reading the catalog, which a follower may answer late.
	ended      map[uuid.UUID]activationEntry
	endedOrder []uuid.UUID // ended's keys, oldest first (at most maxEnded)
}

var _ stream.Source = (*Source)(nil)

// Hub is what a Source hands its events to: stream.Hub.
type Hub interface {
	store.Publisher
	// HasSubscribers reports whether a table has a stream open; a commit of a table
	// without one is not decoded.
	HasSubscribers(tableID int64) bool
}

// NewSource returns a Source with the writer's default stream and subjects.
func NewSource() *Source {
	return &Source{Stream: DefaultStream, SubjectPrefix: DefaultSubjectPrefix, HeadWait: DefaultHeadWait, CatalogWait: DefaultCatalogWait,
		FetchTimeout: DefaultPublishTimeout, Logger: slog.Default(), Now: time.Now,
		commitDelay: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ducktail_jetstream_node_commit_delay_seconds",
			Help: "Seconds from a commit on the writer to its arrival at this stream node.", Buckets: commitDelayBuckets})}
}

// Start connects the source to JetStream over nc and loads the catalog: it returns once
// the catalog's current tables, tokens and cursor key are in memory, and keeps watching it
// until Close; events go to hub (the stream node's Hub). It waits, until ctx ends, for a
// writer to have made the stream and the catalog. Errors: ctx's, or JetStream's.
func (s *Source) Start(ctx context.Context, nc *nats.Conn, hub Hub) error {
	js, err := njs.New(nc)
	if err != nil {
		return err
	}
	s.js, s.hub = js, hub
	s.tables, s.tokens, s.feeds = map[string]tableEntry{}, map[string]store.Token{}, map[int64]*feed{}
	s.changed = make(chan struct{})
	s.ended = map[uuid.UUID]activationEntry{}
	for {
		err = s.open(ctx)
		if err == nil {
			break
		}
		s.Logger.Warn("waiting for the writer's JetStream stream and catalog", "stream", s.Stream, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("jetstream: %w (last: %v)", ctx.Err(), err)
		case <-time.After(time.Second):
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.watchCatalog()
	}()
	return nil
}

// open finds the stream and the catalog, and reads the catalog's current values.
func (s *Source) open(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.FetchTimeout)
	defer cancel()
	str, err := s.js.Stream(ctx, s.Stream)
	if err != nil {
		return err
	}
	kv, err := s.js.KeyValue(ctx, CatalogBucket(s.Stream))
	if err != nil {
		return err
	}
	w, err := kv.WatchFiltered(context.Background(), []string{keyCursorKey, tableKeyPrefix + ">", tokenKeyPrefix + ">"})
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			w.Stop()
			return ctx.Err()
		case e := <-w.Updates():
			if e == nil { // the current values are in
				if s.cursors == nil {
					w.Stop()
					return errors.New("the catalog has no cursor key yet")
				}
				s.str, s.kv, s.watch = str, kv, w
				return nil
			}
			s.apply(e)
		}
	}
}

// watchCatalog applies the catalog's changes until Close.
func (s *Source) watchCatalog() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case e, ok := <-s.watch.Updates():
			if !ok {
				return
			}
			if e != nil {
				s.apply(e)
			}
		}
	}
}

// apply takes one catalog entry into memory; a token revoked now ends its streams.
func (s *Source) apply(e njs.KeyValueEntry) {
	key, deleted := e.Key(), e.Operation() != njs.KeyValuePut
	switch {
	case key == keyCursorKey && !deleted:
		s.mu.Lock()
		if s.cursors == nil {
			s.cursors = store.NewCursors(append([]byte(nil), e.Value()...))
		}
		s.mu.Unlock()
	case strings.HasPrefix(key, tableKeyPrefix):
		folded, err := hex.DecodeString(strings.TrimPrefix(key, tableKeyPrefix))
		if err != nil {
			return
		}
		var t tableEntry
		if !deleted && json.Unmarshal(e.Value(), &t) != nil {
			s.Logger.Warn("jetstream: a malformed table in the catalog", "key", key)
			return
		}
		s.mu.Lock()
		if deleted {
			delete(s.tables, string(folded))
		} else {
			s.tables[string(folded)] = t
		}
		s.signal()
		s.mu.Unlock()
	case strings.HasPrefix(key, tokenKeyPrefix):
		id := strings.TrimPrefix(key, tokenKeyPrefix)
		var t tokenEntry
		if !deleted && json.Unmarshal(e.Value(), &t) != nil {
			s.Logger.Warn("jetstream: a malformed token in the catalog", "key", key)
			return
		}
		s.mu.Lock()
		before, had := s.tokens[id]
		if deleted {
			delete(s.tokens, id)
		} else {
			s.tokens[id] = t.token()
		}
		now, has := s.tokens[id]
		s.signal()
		s.mu.Unlock()
		if had && before.RevokedAt.IsZero() && (!has || !now.RevokedAt.IsZero()) {
			s.hub.Publish(store.TokenRevoked{TokenID: id, Token: now})
		}
	}
}

// Close stops the catalog watch and every feed.
func (s *Source) Close() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.watch.Stop()
	s.mu.Lock()
	feeds := make([]*feed, 0, len(s.feeds))
	for _, f := range s.feeds {
		feeds = append(feeds, f)
	}
	s.mu.Unlock()
	// Stopped outside the lock: a consumer's Stop may wait while it reconnects.
	for _, f := range feeds {
		f.stop()
	}
	s.wg.Wait()
}

// Cursors implements stream.Source: a codec keyed by the writer's cursor key.
func (s *Source) Cursors() *store.Cursors {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursors
}

// LookupToken implements stream.Source from the catalog's tokens.
func (s *Source) LookupToken(id string) (store.Token, error) {
	s.mu.Lock()
	t, ok := s.tokens[id]
	s.mu.Unlock()
	if !ok {
		return store.Token{}, &store.Error{Code: store.CodeNotFound, Message: "no token with id " + id}
	}
	return t, nil
}

// Authenticate returns the token whose secret is secret, as store.DB.Authenticate does on
// the writer, from the catalog's tokens (store.AuthenticateWith). A well-formed token whose
// id the catalog has not shown is waited for, up to CatalogWait, so that a token used
// right after the writer created it is accepted. Errors: store.DB.Authenticate's.
func (s *Source) Authenticate(secret string) (store.Token, error) {
	return store.AuthenticateWith(func(id string) (store.Token, bool) {
		var t store.Token
		ok := s.awaitCatalog(func() bool {
			var found bool
			t, found = s.tokens[id]
			return found
		})
		return t, ok
	}, secret, s.Now())
}

// signal wakes the waits of awaitCatalog; s.mu is held.
func (s *Source) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// awaitCatalog returns true once has, called with s.mu held, holds of the catalog in
// memory, or false after CatalogWait.
func (s *Source) awaitCatalog(has func() bool) bool {
	deadline := time.NewTimer(s.CatalogWait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ok, changed := has(), s.changed
		s.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return false
		}
	}
}

// Table implements stream.Source: the catalog's table, with the head and schema of its
// feed, which starts on first use. Errors: a CodeNotFound *store.Error wrapping
// store.ErrTableNotFound; CodeUnavailable when the table's activation has no message left
// in the stream's retention or JetStream does not answer.
func (s *Source) Table(name string) (store.TableInfo, error) {
	f, err := s.feedOf(name)
	if err != nil {
		return store.TableInfo{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.HeadWait)
	defer cancel()
	return f.info(ctx)
}

// feedOf returns the running feed of the live table named name, starting it first; a name
// the catalog has not shown is waited for up to CatalogWait.
func (s *Source) feedOf(name string) (*feed, error) {
	folded := store.FoldName(name)
	if !s.awaitCatalog(func() bool { _, ok := s.tables[folded]; return ok }) {
		return nil, store.TableNotFound(name)
	}
	s.mu.Lock()
	t, ok := s.tables[folded]
	if !ok {
		s.mu.Unlock()
		return nil, store.TableNotFound(name)
	}
	if f := s.feeds[t.ID]; f != nil {
		s.mu.Unlock()
		if f.ended() {
			// Dropped: the catalog's entry is stale until its deletion arrives.
			return nil, store.TableNotFound(name)
		}
		return f, nil
	}
	f := newFeed(s, t)
	s.feeds[t.ID] = f
	s.mu.Unlock()
	if err := f.start(); err != nil {
		s.mu.Lock()
		if s.feeds[t.ID] == f {
			delete(s.feeds, t.ID)
		}
		s.mu.Unlock()
		return nil, err
	}
	return f, nil
}

// feedByID returns the feed of the live table with id tableID, starting it first; nil
// when no live table has that id.
func (s *Source) feedByID(tableID int64) (*feed, error) {
	s.mu.Lock()
	var name string
	for _, t := range s.tables {
		if t.ID == tableID {
			name = t.Name
		}
	}
	s.mu.Unlock()
	if name == "" {
		return nil, nil
	}
	return s.feedOf(name)
}

// AwaitHead implements stream.Source: it waits, up to HeadWait, until the feed of pos's
// table has the commit at pos, or has moved on to another activation.
func (s *Source) AwaitHead(ctx context.Context, pos store.Position) bool {
	f, err := s.feedByID(pos.TableID)
	if err != nil || f == nil {
		return true // a table this node does not know: the read judges the cursor
	}
	has := func(st feedState) bool {
		return (st.activation == pos.Activation && st.head >= pos.Seq) || s.endedActivation(pos.Activation)
	}
	if has(f.state()) {
		return true
	}
	if _, err := s.catalogActivation(ctx, pos.TableID, pos.Activation); err == nil {
		return true // ended long ago
	}
	ctx, cancel := context.WithTimeout(ctx, s.HeadWait)
	defer cancel()
	return has(f.await(ctx, has))
}

// maxEnded bounds the ended activations a Source keeps in memory; past it the oldest is
// forgotten, and a cursor of it is judged from the catalog bucket, where the writer
// recorded it long before.
const maxEnded = 4096

// rememberEnded records that a feed saw activation id end.
func (s *Source) rememberEnded(id uuid.UUID, a activationEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ended[id]; ok {
		return
	}
	if len(s.endedOrder) >= maxEnded {
		delete(s.ended, s.endedOrder[0])
		s.endedOrder = s.endedOrder[1:]
	}
	s.ended[id] = a
	s.endedOrder = append(s.endedOrder, id)
}

// endedActivation reports whether a feed of this node saw activation id end.
func (s *Source) endedActivation(id uuid.UUID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ended[id]
	return ok
}

// Read implements stream.Source: fn reads the stream within its retention.
func (s *Source) Read(ctx context.Context, fn func(stream.ReplayTx) error) error {
	return fn(&replayTx{src: s})
}

// Ping returns nil while JetStream answers (a stream node's readiness, api.Backend).
func (s *Source) Ping(ctx context.Context) error {
	_, err := s.js.AccountInfo(ctx)
	return err
}
