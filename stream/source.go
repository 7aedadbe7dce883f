package stream

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/ducktail/ducktail/store"
)

// Source is where a Hub reads what its sessions need besides the events published to it:
// the cursor codec, a table's baseline, tokens, and replay (docs/design.md, "The stream's
// source"). Two implement it: Local, the store in this process (the default), and package
// jetstream's Source on a stream node, which reads the JetStream stream the writer
// publishes to. Whichever it is, it must update a table's head before the event that moves
// it is published to the Hub, so that a session registered before it reads a baseline
// misses nothing after that baseline.
type Source interface {
	// Cursors is the codec of every cursor the Hub encodes and decodes; the same key on
	// every node serving the same tables, so that cursors are the same bytes everywhere.
	Cursors() *store.Cursors
	// Table returns the live table named name, with its head and current schema.
	// Errors: a CodeNotFound *store.Error wrapping store.ErrTableNotFound.
	Table(name string) (store.TableInfo, error)
	// LookupToken returns the token with the given id. Errors: a CodeNotFound
	// *store.Error.
	LookupToken(id string) (store.Token, error)
	// AwaitHead returns true once the source has the commits of pos's table through
	// pos (or knows pos's activation ended), false when ctx ends or after the source's
	// own bound: a resume with a cursor the source does not have yet (taken from a
	// snapshot of the writer, ahead of a stream node) waits here; one still ahead after
	// a false is told to reconnect (ReasonSourceBehind), not refresh-required.
	AwaitHead(ctx context.Context, pos store.Position) bool
	// Read runs fn on one consistent view of the commit log and the tables' rows.
	// A *store.CursorError from fn's reads ends the stream with refresh-required and its
	// reason (a cursor older than what the source retains).
	Read(ctx context.Context, fn func(ReplayTx) error) error
}

// ReplayTx is one consistent read of the commit log, the reads a replay makes
// (store.ReadTx has their documentation and errors).
type ReplayTx interface {
	Table(ctx context.Context, name string) (store.TableInfo, error)
	Activation(ctx context.Context, tableID int64, id uuid.UUID) (store.Activation, error)
	// CommitStats counts the commits after after through through, and their rows.
	CommitStats(ctx context.Context, a store.Activation, after, through int64) (commits, rows int64, err error)
	Schemas(ctx context.Context, a store.Activation) (map[int]*store.Schema, error)
	Commits(ctx context.Context, a store.Activation, after, through int64) ([]store.CommitInfo, error)
	ReadCommits(ctx context.Context, a store.Activation, schemas map[int]*store.Schema, commits []store.CommitInfo, fn func(store.CommitInfo, *store.Schema, []arrow.RecordBatch) error) error
}

// Shaper filters commits through shapes (store.DB.ShapeRecords and ShapeRecordsEach have
// the documentation). A Hub without one refuses shaped streams (ErrWriterOnly).
type Shaper interface {
	ShapeRecords(ctx context.Context, schema *store.Schema, recs []arrow.RecordBatch, shape *store.Shape) ([]arrow.RecordBatch, error)
	ShapeRecordsEach(ctx context.Context, schema *store.Schema, recs []arrow.RecordBatch, shapes []*store.Shape) ([][]arrow.RecordBatch, []error)
}

// Local is the Source of the store in this process: its in-memory catalog for baselines
// and tokens, its read transactions for replay. Its head is always current, so AwaitHead
// returns at once.
type Local struct {
	DB *store.DB
}

var _ Source = Local{}

// Cursors implements Source.
func (l Local) Cursors() *store.Cursors {
	if l.DB == nil {
		return nil
	}
	return l.DB.Cursors()
}

// Table implements Source.
func (l Local) Table(name string) (store.TableInfo, error) { return l.DB.Table(name) }

// LookupToken implements Source.
func (l Local) LookupToken(id string) (store.Token, error) { return l.DB.LookupToken(id) }

// AwaitHead implements Source: the store updates its catalog before publishing, so it
// already has every commit a cursor of it can name.
func (Local) AwaitHead(context.Context, store.Position) bool { return true }

// Read implements Source with one store.ReadTx.
func (l Local) Read(ctx context.Context, fn func(ReplayTx) error) error {
	return l.DB.Read(ctx, func(tx *store.ReadTx) error { return fn(tx) })
}
