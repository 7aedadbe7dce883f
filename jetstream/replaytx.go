package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// ReasonBeyondRetention is the refresh-required reason of a cursor whose next commit is no
// longer in the JetStream stream (its retention removed it): the client takes a new
// snapshot from the writer (docs/scaling.md, "Retention").
const ReasonBeyondRetention = "beyond_retention"

// replayChunkBytes bounds the message data one Commits call holds, as the hub bounds a
// replay chunk (at least one commit).
const replayChunkBytes = 1 << 20

// replayTx is a stream.ReplayTx over the JetStream stream: the current activation of a
// table comes from its feed, an ended one from the catalog, commits from the table's
// subject. It holds the messages its last Commits call fetched, for ReadCommits.
type replayTx struct {
	src     *Source
	fetched map[int64]*njs.RawStreamMsg // by commit seq
}

var _ stream.ReplayTx = (*replayTx)(nil)

func (tx *replayTx) Table(_ context.Context, name string) (store.TableInfo, error) {
	return tx.src.Table(name)
}

// Activation returns the current activation of a live table with its feed's head, or an
// ended one as a feed saw it end or as the catalog records it. Errors: a CodeNotFound
// *store.Error; CodeUnavailable.
func (tx *replayTx) Activation(ctx context.Context, tableID int64, id uuid.UUID) (store.Activation, error) {
	f, err := tx.src.feedByID(tableID)
	if err != nil && store.ErrorCode(err) != store.CodeNotFound {
		return store.Activation{}, err
	}
	if f != nil {
		if st := f.state(); st.activation == id && !st.dropped {
			return store.Activation{ID: id, TableID: tableID, TableName: f.table.Name, Head: st.head}, nil
		}
	}
	tx.src.mu.Lock()
	a, ok := tx.src.ended[id]
	tx.src.mu.Unlock()
	if !ok {
		if a, err = tx.src.catalogActivation(ctx, tableID, id); err != nil {
			return store.Activation{}, err
		}
	}
	return store.Activation{ID: id, TableID: tableID, TableName: a.Table, Head: a.Head, Ended: true, Reason: a.Reason}, nil
}

// catalogActivation reads an ended activation from the catalog. Errors: a CodeNotFound
// *store.Error; CodeUnavailable.
func (s *Source) catalogActivation(ctx context.Context, tableID int64, id uuid.UUID) (activationEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, s.FetchTimeout)
	defer cancel()
	e, err := s.kv.Get(ctx, activationKey(tableID, id))
	if errors.Is(err, njs.ErrKeyNotFound) {
		return activationEntry{}, &store.Error{Code: store.CodeNotFound, Message: "no activation " + id.String() + " of table " + strconv.FormatInt(tableID, 10)}
	}
	if err != nil {
		return activationEntry{}, unavailable(err)
	}
	var a activationEntry
	if err := json.Unmarshal(e.Value(), &a); err != nil {
		return activationEntry{}, err
	}
	return a, nil
}

// CommitStats counts the commits after after through through, after checking that the
// first of them is still in the stream (a *store.CursorError, ReasonBeyondRetention, when
// not). A stream node does not count their rows up front (rows is 0): the Hub's
// MaxReplayRows is not applied there, MaxReplayCommits and the replay cache's byte bound
// are.
func (tx *replayTx) CommitStats(ctx context.Context, a store.Activation, after, through int64) (commits, rows int64, err error) {
	if through <= after {
		return 0, 0, nil
	}
	if _, err := tx.locate(ctx, a, after+1); err != nil {
		return 0, 0, err
	}
	return through - after, 0, nil
}

// Schemas returns every schema version of activation a, from the catalog.
func (tx *replayTx) Schemas(ctx context.Context, a store.Activation) (map[int]*store.Schema, error) {
	f, err := tx.src.feedByID(a.TableID)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, store.TableNotFound(a.TableName)
	}
	st := f.state()
	if st.activation != a.ID || st.schema == nil {
		return nil, &store.CursorError{Reason: store.ReasonTableReset}
	}
	out := make(map[int]*store.Schema, st.schema.Version)
	for v := 1; v <= st.schema.Version; v++ {
		if out[v], err = f.schema(ctx, a.ID, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Commits fetches the commits of a after after through through from the table's subject,
// stopping early (after at least one) once their data passes replayChunkBytes; it keeps
// them for ReadCommits. Errors: a *store.CursorError (ReasonBeyondRetention) when the
// first is no longer in the stream.
func (tx *replayTx) Commits(ctx context.Context, a store.Activation, after, through int64) ([]store.CommitInfo, error) {
	tx.fetched = map[int64]*njs.RawStreamMsg{}
	if through <= after {
		return nil, nil
	}
	seq, err := tx.locate(ctx, a, after+1)
	if err != nil {
		return nil, err
	}
	subject := TableSubject(tx.src.SubjectPrefix, a.TableID)
	var out []store.CommitInfo
	var bytes int
	for next := after + 1; next <= through && (len(out) == 0 || bytes < replayChunkBytes); {
		m, err := tx.get(ctx, seq, subject)
		if err != nil {
			return nil, err
		}
		seq = m.Sequence + 1
		pub, err := publishedFrom(m.Header)
		if err != nil {
			return nil, err
		}
		if pub.activation != a.ID {
			return nil, &store.CursorError{Reason: store.ReasonTableReset}
		}
		if m.Header.Get(HeaderEvent) != EventCommit || pub.seq < next {
			continue
		}
		if pub.seq != next {
			return nil, &store.CursorError{Reason: ReasonBeyondRetention}
		}
		rows, _ := strconv.ParseInt(m.Header.Get(HeaderRows), 10, 64)
		at, _ := time.Parse(time.RFC3339Nano, m.Header.Get(HeaderCommittedAt))
		out = append(out, store.CommitInfo{Seq: pub.seq, SchemaVersion: pub.version, Rows: rows, Bytes: int64(len(m.Data)), CommittedAt: at})
		tx.fetched[pub.seq] = m
		bytes += len(m.Data)
		next++
	}
	return out, nil
}

// ReadCommits decodes the commits Commits fetched and calls fn with each, in order.
func (tx *replayTx) ReadCommits(ctx context.Context, a store.Activation, schemas map[int]*store.Schema, commits []store.CommitInfo, fn func(store.CommitInfo, *store.Schema, []arrow.RecordBatch) error) error {
	for _, c := range commits {
		m := tx.fetched[c.Seq]
		schema := schemas[c.SchemaVersion]
		if m == nil || schema == nil {
			return fmt.Errorf("jetstream: commit %d was not fetched before it was read", c.Seq)
		}
		rec, err := decodeCommit(m.Data, schema)
		if err != nil {
			return fmt.Errorf("commit %d: %w", c.Seq, err)
		}
		err = fn(c, schema, []arrow.RecordBatch{rec})
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// get returns the first message on subject at or after stream sequence seq.
func (tx *replayTx) get(ctx context.Context, seq uint64, subject string) (*njs.RawStreamMsg, error) {
	ctx, cancel := context.WithTimeout(ctx, tx.src.FetchTimeout)
	defer cancel()
	m, err := tx.src.str.GetMsg(ctx, seq, njs.WithGetMsgSubject(subject))
	if errors.Is(err, njs.ErrMsgNotFound) {
		return nil, &store.CursorError{Reason: ReasonBeyondRetention}
	}
	return m, unavailable(err)
}

// locate returns the stream sequence of commit seq of activation a, the current one of
// its table, by a binary search over the stream: on a table's subject an activation's
// messages are contiguous and ordered by seq (a schema message at head S comes before
// commit S+1), and those of earlier activations come before them. Errors: a
// *store.CursorError (ReasonBeyondRetention) when the commit is not in the stream.
func (tx *replayTx) locate(ctx context.Context, a store.Activation, seq int64) (uint64, error) {
	ictx, cancel := context.WithTimeout(ctx, tx.src.FetchTimeout)
	info, err := tx.src.str.Info(ictx)
	cancel()
	if err != nil {
		return 0, unavailable(err)
	}
	subject := TableSubject(tx.src.SubjectPrefix, a.TableID)
	lo, hi := info.State.FirstSeq, info.State.LastSeq+1
	var found *njs.RawStreamMsg
	for lo < hi {
		mid := lo + (hi-lo)/2
		m, err := tx.get(ctx, mid, subject)
		var ce *store.CursorError
		if errors.As(err, &ce) {
			hi = mid // nothing on the subject at or after mid
			continue
		}
		if err != nil {
			return 0, err
		}
		if atOrAfter(m.Header, a.ID, seq) {
			found, hi = m, mid
		} else {
			lo = m.Sequence + 1
		}
	}
	if found == nil {
		return 0, &store.CursorError{Reason: ReasonBeyondRetention}
	}
	pub, _ := publishedFrom(found.Header)
	if found.Header.Get(HeaderEvent) != EventCommit || pub.activation != a.ID || pub.seq != seq {
		return 0, &store.CursorError{Reason: ReasonBeyondRetention}
	}
	return found.Sequence, nil
}

// atOrAfter reports whether a message with headers h comes at or after commit seq of
// activation in the table's order: a message of another activation comes before it (the
// activation is the table's current one), a schema message at head S comes at or after it
// when S >= seq, an activation's end after all of its commits.
func atOrAfter(h nats.Header, activation uuid.UUID, seq int64) bool {
	pub, err := publishedFrom(h)
	if err != nil || pub.activation != activation {
		return false
	}
	switch h.Get(HeaderEvent) {
	case EventCommit, EventSchema:
		return pub.seq >= seq
	}
	return true
}
