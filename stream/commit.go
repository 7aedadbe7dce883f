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

// item is one entry of a subscriber's queue: a commit (commit != nil) or another event.
type item struct {
	event  store.Event
	commit *sharedCommit
}

// sharedCommit is one published commit, shared by every subscriber of its table. Its
// frames are encoded lazily, by the first subscriber that needs each framing × encoding,
// and then reused byte for byte by all the others (DESIGN.md: each commit is encoded once).
type sharedCommit struct {
	event store.Event
	codec *store.Cursors
	// size approximates the commit's memory for queue accounting: the record's buffers.
	size int64

	cursorOnce sync.Once
	cursor     string
	ipcOnce    sync.Once
	ipc        []byte
	ipcErr     error
	frames     [3][2]lazyFrame
}

type lazyFrame struct {
	once  sync.Once
	frame Frame
	err   error
}

func newSharedCommit(e store.Event, codec *store.Cursors) *sharedCommit {
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

// frame returns the batch frame of this commit in framing f and encoding enc.
func (c *sharedCommit) frame(f Framing, enc Encoding) (Frame, error) {
	lf := &c.frames[f][enc]
	lf.once.Do(func() {
		var ipcBytes, jsonValue []byte
		if enc == EncodingJSON {
			jsonValue = appendJSONRows(nil, c.records())
		} else {
			c.ipcOnce.Do(func() { c.ipc, c.ipcErr = ArrowIPC(c.event.Record.Schema(), c.records()) })
			if c.ipcErr != nil {
				lf.err = c.ipcErr
				return
			}
			ipcBytes = c.ipc
		}
		b, err := encodePayload(f, EventBatch, c.cursorString(), ipcBytes, jsonValue)
		if err != nil {
			lf.err = err
			return
		}
		lf.frame = Frame{
			Event:  EventBatch,
			Bytes:  b,
			Commit: CommitMeta{Position: c.event.Position, Rows: c.event.Rows, CommittedAt: c.event.CommittedAt},
		}
	})
	return lf.frame, lf.err
}
