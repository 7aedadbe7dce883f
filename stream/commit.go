package stream

import (
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ducktail/ducktail/store"
)

// CommitMeta identifies the commit a batch frame carries.
type CommitMeta struct {
	Position    store.Position
	Rows        int64
	CommittedAt time.Time
	// Replayed is true for a commit read back from the table during a resume.
	Replayed bool
}

// item is one entry of a table's log (log.go): a store event, with the shared encodings of
// a store.CommitEvent in commit.
type item struct {
	event  store.Event
	commit *sharedCommit
}

// sharedCommit is one published commit, shared by every subscriber of its table. Its
// frames are encoded lazily, by the first subscriber that needs each framing × encoding,
// and then reused byte for byte by all the others (docs/design.md, "The stream": each commit is encoded once).
type sharedCommit struct {
	event store.CommitEvent
	codec *store.Cursors
	// size approximates the commit's memory for the log's accounting: the record's buffers.
	size int64
	// schema is the message of the commit's schema version, shared by the commits of that
	// version in the table's log (set by tableLog.append; nil out of a log).
	schema *schemaMessage

	cursorOnce sync.Once
	cursor     string
	payloads   [2]lazyPayload // by Encoding
	frames     [3][2]lazyFrame
	shaped     shapedCommits // through each shape in use (shape.go)
}

type lazyPayload struct {
	once    sync.Once
	payload framePayload
	err     error
}

type lazyFrame struct {
	once  sync.Once
	frame Frame
	err   error
}

func newSharedCommit(e store.CommitEvent, codec *store.Cursors) *sharedCommit {
	return &sharedCommit{event: e, codec: codec, size: store.RecordBytes(e.Record)}
}

func (c *sharedCommit) cursorString() string {
	c.cursorOnce.Do(func() { c.cursor = c.codec.Encode(c.event.Position) })
	return c.cursor
}

func (c *sharedCommit) records() []arrow.RecordBatch {
	if c.event.Record.NumRows() == 0 {
		return nil
	}
	return []arrow.RecordBatch{c.event.Record}
}

// frame returns the batch frame of this commit in framing f and encoding enc. The
// payload of each encoding is made once and shared by the three framings.
func (c *sharedCommit) frame(f Framing, enc Encoding) (Frame, error) {
	lf := &c.frames[f][enc]
	lf.once.Do(func() {
		lp := &c.payloads[enc]
		lp.once.Do(func() { lp.payload, lp.err = c.payload(enc) })
		if lp.err != nil {
			lf.err = lp.err
			return
		}
		lf.frame, lf.err = dataFrame(f, EventBatch, c.cursorString(), lp.payload,
			CommitMeta{Position: c.event.Position, Rows: c.event.Rows, CommittedAt: c.event.CommittedAt})
	})
	return lf.frame, lf.err
}

// payload returns the payload of this commit's batch event in enc: for Arrow, an IPC
// stream headed by the shared schema message of its version.
func (c *sharedCommit) payload(enc Encoding) (framePayload, error) {
	if enc != EncodingArrow {
		return batchPayload(enc, c.event.Record.Schema(), c.records())
	}
	b, err := c.schema.stream(c.event.Record.Schema(), c.records(), c.size)
	return framePayload{ipc: b}, err
}
