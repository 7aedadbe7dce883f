package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// feedState is how far a feed has a table: its activation, the seq of its last commit
// received, and its current schema version (nil between a reset and the new activation's
// first schema message).
type feedState struct {
	activation uuid.UUID
	head       int64
	schema     *store.Schema
	dropped    bool
}

// feed is one table in use on a stream node: an ordered consumer of the table's subject
// from the message after the last one at its start. Each message updates the state, then
// goes to the Hub as the store.Event it was on the writer, so that a session registered
// before reading the state misses nothing after it (stream.Source).
type feed struct {
	src   *Source
	table tableEntry

	mu sync.Mutex
	st feedState
	// schemas are the schema versions of the current activation seen so far (from its
	// schema messages, or read from the catalog).
	schemas map[int]*store.Schema
	changed chan struct{} // closed and replaced at every change of st
	cons    njs.ConsumeContext
	// pending is how many messages JetStream had for the feed after its last one.
	pending atomic.Uint64
}

func newFeed(src *Source, t tableEntry) *feed {
	return &feed{src: src, table: t, changed: make(chan struct{})}
}

func (f *feed) subject() string { return TableSubject(f.src.SubjectPrefix, f.table.ID) }

// start reads the table's last message, takes its state from it, and consumes the messages
// after it. Errors: CodeUnavailable when JetStream does not answer, or, wrapping
// stream.ErrWriterOnly, when the subject has no message (the table's activation is older
// than the stream's retention).
func (f *feed) start() error {
	ctx, cancel := context.WithTimeout(f.src.ctx, f.src.FetchTimeout)
	defer cancel()
	last, err := f.src.str.GetLastMsgForSubject(ctx, f.subject())
	if errors.Is(err, njs.ErrMsgNotFound) {
		return &store.Error{Code: store.CodeUnavailable, Message: "table " + strconv.Quote(f.table.Name) + " has no message left in the JetStream stream's retention; stream it from the writer", Err: stream.ErrWriterOnly}
	}
	if err != nil {
		return unavailable(err)
	}
	if err := f.take(ctx, last.Header, last.Data, false); err != nil {
		return unavailable(err)
	}
	if f.ended() {
		return store.TableNotFound(f.table.Name)
	}
	cons, err := f.src.js.OrderedConsumer(ctx, f.src.Stream, njs.OrderedConsumerConfig{
		FilterSubjects: []string{f.subject()}, DeliverPolicy: njs.DeliverByStartSequencePolicy, OptStartSeq: last.Sequence + 1,
	})
	if err != nil {
		return unavailable(err)
	}
	cc, err := cons.Consume(func(m njs.Msg) {
		f.src.received.Add(1)
		if md, err := m.Metadata(); err == nil {
			f.pending.Store(md.NumPending)
		}
		if err := f.take(f.src.ctx, m.Headers(), m.Data(), true); err != nil {
			f.src.Logger.Error("jetstream: a table message could not be delivered", "table", f.table.Name, "err", err)
		}
	})
	if err != nil {
		return unavailable(err)
	}
	f.mu.Lock()
	f.cons = cc
	f.mu.Unlock()
	return nil
}

// drop stops the feed of a dropped table and forgets it: the table's next stream gets
// not-found, or the feed of a new table of that name.
func (f *feed) drop() {
	f.stop()
	f.src.mu.Lock()
	if f.src.feeds[f.table.ID] == f {
		delete(f.src.feeds, f.table.ID)
	}
	f.src.mu.Unlock()
}

// stop stops the feed's consumer.
func (f *feed) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cons != nil {
		f.cons.Stop()
	}
}

// ended reports whether the table was dropped: its next user starts a new feed.
func (f *feed) ended() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.dropped
}

// take applies one message of the table's subject to the state and, when publish is set,
// hands its event to the Hub afterwards. A message the state already has (a republish
// outside the duplicate window) is dropped.
func (f *feed) take(ctx context.Context, h nats.Header, data []byte, publish bool) error {
	pub, err := publishedFrom(h)
	if err != nil {
		return err
	}
	pos := store.Position{TableID: f.table.ID, Activation: pub.activation, Seq: pub.seq}
	var ev store.Event
	switch kind := h.Get(HeaderEvent); kind {
	case EventCommit:
		cur := f.state()
		if cur.activation == pos.Activation && pos.Seq <= cur.head {
			return nil
		}
		if f.src.endedActivation(pos.Activation) {
			return nil // a republish of an ended activation's commit
		}
		schema := cur.schema
		if schema == nil || schema.Version != pub.version || cur.activation != pos.Activation {
			if schema, err = f.schema(ctx, pos.Activation, pub.version); err != nil {
				return err
			}
		}
		f.set(feedState{activation: pos.Activation, head: pos.Seq, schema: schema})
		if !publish || !f.src.hub.HasSubscribers(f.table.ID) {
			// No session to deliver to: one that registers later reads a baseline that
			// already counts this commit.
			return nil
		}
		rows, _ := strconv.ParseInt(h.Get(HeaderRows), 10, 64)
		at, _ := time.Parse(time.RFC3339Nano, h.Get(HeaderCommittedAt))
		f.src.commitDelay.Observe(max(f.src.Now().Sub(at).Seconds(), 0))
		rec, err := decodeCommit(data, schema)
		if err != nil {
			return fmt.Errorf("commit %d: %w", pos.Seq, err)
		}
		ev = store.CommitEvent{TableName: f.table.Name, Position: pos, Schema: schema, Record: rec, Rows: rows, CommittedAt: at}
	case EventSchema:
		schema := &store.Schema{}
		if err := json.Unmarshal(data, schema); err != nil {
			return fmt.Errorf("schema %d: %w", pub.version, err)
		}
		cur := f.state()
		if f.src.endedActivation(pos.Activation) || (cur.activation == pos.Activation && cur.schema != nil && schema.Version <= cur.schema.Version) {
			return nil
		}
		f.keepSchema(pos.Activation, schema)
		f.set(feedState{activation: pos.Activation, head: pos.Seq, schema: schema})
		ev = store.SchemaEvent{TableName: f.table.Name, Position: pos, Schema: schema}
		if pos.Seq == 0 && schema.Version == 1 {
			// A new activation: the writer's ActivationStarted has nothing to deliver.
			publish = false
		}
	case EventActivationEnded:
		next, _ := uuid.Parse(h.Get(HeaderNewActivation))
		reason := h.Get(HeaderReason)
		if cur := f.state(); publish && cur.activation != pos.Activation {
			return nil // a republished end, or one of an activation this feed never had
		}
		f.src.rememberEnded(pos.Activation, activationEntry{Table: f.table.Name, Head: pos.Seq, Reason: reason})
		f.set(feedState{activation: next, dropped: reason == store.ReasonTableDropped})
		ev = store.ActivationEnded{TableName: f.table.Name, Position: pos, Reason: reason, NewActivation: next}
		if reason == store.ReasonTableDropped && publish {
			defer f.drop()
		}
	default:
		return fmt.Errorf("unknown %s %q", HeaderEvent, kind)
	}
	if publish {
		f.src.hub.Publish(ev)
	}
	return nil
}

func (f *feed) state() feedState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *feed) set(st feedState) {
	f.mu.Lock()
	f.st = st
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// await waits until ok holds of the state or ctx ends.
func (f *feed) await(ctx context.Context, ok func(feedState) bool) feedState {
	for {
		f.mu.Lock()
		st, ch := f.st, f.changed
		f.mu.Unlock()
		if ok(st) {
			return st
		}
		select {
		case <-ctx.Done():
			return st
		case <-ch:
		}
	}
}

// info returns the table at the feed's head, waiting (until ctx ends) for the first
// schema of an activation that just started. Errors: store.ErrTableNotFound for a dropped
// table; CodeUnavailable when the schema did not come.
func (f *feed) info(ctx context.Context) (store.TableInfo, error) {
	st := f.await(ctx, func(st feedState) bool { return st.dropped || st.schema != nil })
	switch {
	case st.dropped:
		return store.TableInfo{}, store.TableNotFound(f.table.Name)
	case st.schema == nil:
		return store.TableInfo{}, &store.Error{Code: store.CodeUnavailable, Message: "the new activation of table " + strconv.Quote(f.table.Name) + " has not reached this node yet; retry"}
	}
	return store.TableInfo{ID: f.table.ID, Name: f.table.Name, CreatedAt: f.table.CreatedAt,
		Head: store.Position{TableID: f.table.ID, Activation: st.activation, Seq: st.head}, Schema: *st.schema}, nil
}

// keepSchema remembers a schema version of activation, dropping those of earlier
// activations.
func (f *feed) keepSchema(activation uuid.UUID, schema *store.Schema) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.schemas == nil || f.st.activation != activation {
		f.schemas = map[int]*store.Schema{}
	}
	f.schemas[schema.Version] = schema
}

// schema returns a schema version of activation: the one the feed saw, or the catalog's.
func (f *feed) schema(ctx context.Context, activation uuid.UUID, version int) (*store.Schema, error) {
	f.mu.Lock()
	s := f.schemas[version]
	same := f.st.activation == activation
	f.mu.Unlock()
	if s != nil && same {
		return s, nil
	}
	s, err := f.src.schema(ctx, f.table.ID, activation, version)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if f.st.activation == activation {
		if f.schemas == nil {
			f.schemas = map[int]*store.Schema{}
		}
		f.schemas[version] = s
	}
	f.mu.Unlock()
	return s, nil
}

// schema reads a schema version of an activation from the catalog. The writer puts it
// before the message that names it, but a follower of the bucket may answer before it has
// it: a missing key is read again until HeadWait. Errors: CodeUnavailable.
func (s *Source) schema(ctx context.Context, tableID int64, activation uuid.UUID, version int) (*store.Schema, error) {
	e, err := s.getKey(ctx, schemaKey(tableID, activation, version), s.HeadWait)
	if err != nil {
		return nil, unavailable(fmt.Errorf("schema version %d of table %d: %w", version, tableID, err))
	}
	schema := &store.Schema{}
	if err := json.Unmarshal(e.Value(), schema); err != nil {
		return nil, fmt.Errorf("schema version %d of table %d: %w", version, tableID, err)
	}
	return schema, nil
}

// getKey reads key from the catalog, reading a missing key again for up to wait.
func (s *Source) getKey(ctx context.Context, key string, wait time.Duration) (njs.KeyValueEntry, error) {
	deadline := time.Now().Add(wait)
	for {
		gctx, cancel := context.WithTimeout(ctx, s.FetchTimeout)
		e, err := s.kv.Get(gctx, key)
		cancel()
		if !errors.Is(err, njs.ErrKeyNotFound) || time.Now().After(deadline) {
			return e, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// unavailable marks err, a failure to read JetStream, as store.CodeUnavailable: a
// stream ends with reconnect, not failure (stream.ReasonSourceUnavailable).
func unavailable(err error) error {
	if err == nil || store.ErrorCode(err) == store.CodeUnavailable {
		return err
	}
	return &store.Error{Code: store.CodeUnavailable, Message: "JetStream did not answer", Err: err}
}
