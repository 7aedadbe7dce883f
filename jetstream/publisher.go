// Package jetstream publishes the writer's durable changes to a NATS JetStream stream, so
// that stream nodes on other machines can serve them (docs/scaling.md). It sits beside the
// stream hub: Publisher passes every store.Event on to the hub first, then queues it for
// JetStream, never blocking the store's writer; the catalog's commit log is its outbox,
// read again after a restart or an overflow of the queue (docs/design.md, "The stream").
package jetstream

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/ducktail/ducktail/store"
)

// Defaults of Publisher's fields.
const (
	DefaultStream        = "DUCKTAIL"
	DefaultSubjectPrefix = "ducktail"
	DefaultQueueSize     = 4096
	DefaultRetry         = 500 * time.Millisecond
	// DefaultDuplicates is the stream's duplicate window: a commit published again within
	// it is dropped by JetStream.
	DefaultDuplicates = 2 * time.Minute
	// DefaultPublishTimeout bounds the wait for one publish's acknowledgement.
	DefaultPublishTimeout = 5 * time.Second
)

// Publisher is a store.Publisher that passes every event on to Next (the stream hub) and
// publishes it to JetStream in commit order (docs/scaling.md, "Messages"). Set the fields,
// make it the store's Publisher before the store opens, then Start it once the store is
// open; Close it before closing the store.
type Publisher struct {
	// Next receives every event first, synchronously; required.
	Next store.Publisher
	// Stream is the JetStream stream's name; SubjectPrefix starts its subjects
	// ("<prefix>.>"); Replicas (1, 3 or 5) and MaxAge (its retention; 0: unlimited) and
	// Duplicates (the duplicate window, which drops a republished commit) configure it
	// when Start creates or updates it.
	Stream        string
	SubjectPrefix string
	Replicas      int
	MaxAge        time.Duration
	Duplicates    time.Duration
	// Retry is the pause after a failed publish before it is tried again;
	// PublishTimeout bounds the wait for one acknowledgement or JetStream API answer.
	Retry          time.Duration
	PublishTimeout time.Duration
	Logger         *slog.Logger
	// Now is the clock that MaxAge is measured on (time.Now; a test's own).
	Now func() time.Time

	queue  chan store.Event
	tokens chan string // token ids for the catalog bucket (tokens.go)
	behind atomic.Bool

	js     njs.JetStream
	kv     njs.KeyValue // the catalog bucket (catalog.go)
	db     *store.DB
	state  map[int64]published // the worker's only
	cancel context.CancelFunc
	wg     sync.WaitGroup

	published, overflows, failures atomic.Int64
	// lastCommitted is the committed-at of the last published commit, Unix nanoseconds.
	lastCommitted atomic.Int64
}

// NewPublisher returns a Publisher passing events on to next, with the defaults, whose
// queue holds queueSize events (DefaultQueueSize when ≤ 0): past it events are not
// queued and the publisher reads the commit log instead, once it has caught up.
func NewPublisher(next store.Publisher, queueSize int) *Publisher {
	if queueSize <= 0 {
		queueSize = DefaultQueueSize
	}
	return &Publisher{
		Next: next, Stream: DefaultStream, SubjectPrefix: DefaultSubjectPrefix, Replicas: 1,
		Duplicates: DefaultDuplicates, Retry: DefaultRetry, PublishTimeout: DefaultPublishTimeout,
		Logger: slog.Default(), Now: time.Now, queue: make(chan store.Event, queueSize),
		tokens: make(chan string, tokenQueueSize),
	}
}

// Publish implements store.Publisher: Next.Publish(e), then e is queued for JetStream
// without blocking; when the queue is full the event is left to the commit log.
func (p *Publisher) Publish(e store.Event) {
	p.Next.Publish(e)
	if id := tokenOf(e); id != "" {
		p.queueToken(id)
	}
	select {
	case p.queue <- e:
	default:
		p.overflows.Add(1)
		p.behind.Store(true)
	}
}

// Start creates or updates the stream over nc and starts publishing: first every commit of
// db's live tables that the stream does not have yet (the outbox: a commit acknowledged
// before a crash is published now), then the queued events. db must be open. It returns
// at once; failures to reach JetStream are logged and retried until Close.
func (p *Publisher) Start(nc *nats.Conn, db *store.DB) error {
	js, err := njs.New(nc)
	if err != nil {
		return err
	}
	p.js, p.db, p.state = js, db, map[int64]published{}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	ready := make(chan struct{})
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		p.run(ctx, ready)
	}()
	go func() {
		defer p.wg.Done()
		p.runTokens(ctx, ready)
	}()
	return nil
}

// Close stops publishing; what is still queued is published by the next Start, from the
// commit log.
func (p *Publisher) Close() {
	if p.cancel != nil {
		p.cancel()
		p.wg.Wait()
	}
}

// Stats counts what the publisher did: messages JetStream acknowledged (a duplicate
// included), events not queued because the queue was full, failed publish attempts, and
// the events queued now.
type Stats struct {
	Published, Overflows, Failures int64
	Queued                         int
}

// Stats returns the counts so far.
func (p *Publisher) Stats() Stats {
	return Stats{Published: p.published.Load(), Overflows: p.overflows.Load(),
		Failures: p.failures.Load(), Queued: len(p.queue)}
}

// run creates the stream and the catalog bucket, closes ready, then publishes until ctx
// ends.
func (p *Publisher) run(ctx context.Context, ready chan<- struct{}) {
	if !p.retry(ctx, "create the stream", p.ensureStream) || !p.retry(ctx, "create the catalog bucket", p.ensureCatalog) {
		return
	}
	close(ready)
	p.behind.Store(true)
	for {
		if p.behind.Swap(false) {
			if !p.retry(ctx, "catch up from the commit log", p.catchUpAll) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case e := <-p.queue:
			if !p.retry(ctx, "publish", func(ctx context.Context) error { return p.handle(ctx, e) }) {
				return
			}
		}
	}
}

func (p *Publisher) ensureStream(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.PublishTimeout)
	defer cancel()
	_, err := p.js.CreateOrUpdateStream(ctx, njs.StreamConfig{
		Name: p.Stream, Subjects: []string{p.SubjectPrefix + ".>"}, Storage: njs.FileStorage,
		Replicas: max(p.Replicas, 1), MaxAge: p.MaxAge, Duplicates: p.Duplicates,
	})
	return err
}

// retry runs fn until it succeeds (true) or ctx ends (false), pausing Retry after each
// failure.
func (p *Publisher) retry(ctx context.Context, what string, fn func(context.Context) error) bool {
	for {
		err := fn(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		p.failures.Add(1)
		p.Logger.Warn("jetstream: "+what+" failed; retrying", "err", err, "retry", p.Retry)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(p.Retry):
		}
	}
}

// handle publishes one queued event, or reads the commit log instead when the event is
// not the next one the stream lacks, then updates the catalog bucket.
func (p *Publisher) handle(ctx context.Context, e store.Event) error {
	if err := p.publishEvent(ctx, e); err != nil {
		return err
	}
	return p.catalogAfter(ctx, e)
}

// publishEvent puts e on its subject.
func (p *Publisher) publishEvent(ctx context.Context, e store.Event) error {
	switch e := e.(type) {
	case store.CommitEvent:
		st, err := p.stateOf(ctx, e.Position.TableID)
		if err != nil {
			return err
		}
		switch {
		case st.activation == e.Position.Activation && e.Position.Seq <= st.seq:
			return nil // published by a catch-up
		case st.activation != e.Position.Activation || e.Position.Seq != st.seq+1:
			return p.catchUp(ctx, e.TableName)
		}
		return p.sendCommit(ctx, e.TableName, e.Position, e.Schema, e.Rows, e.CommittedAt, []arrow.RecordBatch{e.Record})
	case store.SchemaEvent:
		st, err := p.stateOf(ctx, e.Position.TableID)
		if err != nil {
			return err
		}
		switch {
		case st.activation == e.Position.Activation && e.Schema.Version <= st.version:
			return nil
		case st.activation != e.Position.Activation || e.Position.Seq != st.seq:
			return p.catchUp(ctx, e.TableName)
		}
		return p.sendSchema(ctx, e.TableName, e.Position, e.Schema)
	case store.ActivationStarted:
		// Its first schema version, at seq 0: a stream node finds a table's activation
		// on its subject before the first commit.
		st, err := p.stateOf(ctx, e.Position.TableID)
		if err != nil {
			return err
		}
		switch {
		case st.activation == e.Position.Activation && st.version >= e.Schema.Version:
			return nil
		case st.activation != e.Position.Activation || st.seq != 0:
			return p.catchUp(ctx, e.TableName)
		}
		return p.sendSchema(ctx, e.TableName, e.Position, e.Schema)
	case store.ActivationEnded:
		st, err := p.stateOf(ctx, e.Position.TableID)
		if err != nil {
			return err
		}
		if st.activation != e.Position.Activation && st.activation != uuid.Nil {
			return nil // ended before; a catch-up published its end
		}
		if e.Position.Seq > st.seq {
			p.Logger.Warn("jetstream: the activation ended before its last commits were published; stream nodes get refresh-required",
				"table", e.TableName, "published_seq", st.seq, "head", e.Position.Seq)
		}
		return p.sendEnded(ctx, e.TableName, e.Position, e.Reason, e.NewActivation)
	case store.TokenRevoked:
		return p.send(ctx, revokedMessage(p.SubjectPrefix, e.TokenID), "revoked."+e.TokenID)
	}
	return nil
}

// stateOf returns how far table tableID has reached the stream: the worker's record, or at
// first the stream's last message on the table's subject.
func (p *Publisher) stateOf(ctx context.Context, tableID int64) (published, error) {
	if st, ok := p.state[tableID]; ok {
		return st, nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.PublishTimeout)
	defer cancel()
	s, err := p.js.Stream(ctx, p.Stream)
	if err != nil {
		return published{}, err
	}
	m, err := s.GetLastMsgForSubject(ctx, TableSubject(p.SubjectPrefix, tableID))
	if errors.Is(err, njs.ErrMsgNotFound) {
		p.state[tableID] = published{}
		return published{}, nil
	}
	if err != nil {
		return published{}, err
	}
	st, err := publishedFrom(m.Header)
	if err != nil {
		return published{}, err
	}
	if m.Header.Get(HeaderEvent) == EventActivationEnded {
		next, _ := uuid.Parse(m.Header.Get(HeaderNewActivation))
		st = published{activation: next}
	}
	p.state[tableID] = st
	return st, nil
}

// send publishes m with Nats-Msg-Id id and waits for JetStream's acknowledgement.
func (p *Publisher) send(ctx context.Context, m *nats.Msg, id string) error {
	ctx, cancel := context.WithTimeout(ctx, p.PublishTimeout)
	defer cancel()
	if _, err := p.js.PublishMsg(ctx, m, njs.WithMsgID(id), njs.WithExpectStream(p.Stream)); err != nil {
		return err
	}
	p.published.Add(1)
	return nil
}
