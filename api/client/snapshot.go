package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Headers and media types of the snapshot hand-off (docs/design.md, "The atomic hand-off").
const (
	// cursorHeader carries a table snapshot's cursor.
	cursorHeader = "Ducktail-Cursor"
	// cursorsHeader carries a query's cursors: "t1=r1…, t2=r1…".
	cursorsHeader = "Ducktail-Cursors"
	// arrowStreamType is the IANA media type of an Arrow IPC stream.
	arrowStreamType = "application/vnd.apache.arrow.stream"
)

// Snapshot is a consistent read of the table, or of a query over it, with the cursor the
// stream continues from: the snapshot's rows and the batches after its cursor are
// exactly the table, nothing missing and nothing twice (docs/design.md, "The atomic
// hand-off").
type Snapshot struct {
	// Cursor is the table's position in the snapshot's read transaction (the
	// Ducktail-Cursor header, or the table's entry in Ducktail-Cursors). Opaque.
	Cursor string
	// Schema is the schema of Records: the table's, or the query result's.
	Schema *arrow.Schema
	// Records holds the rows. They are released when OnSnapshot returns; Retain one to
	// keep it longer. ReadSnapshot leaves it nil: it hands the rows to its fn instead.
	Records []arrow.RecordBatch
	// Reason is "" for the snapshot LiveOptions.StartWithSnapshot asks for, and the
	// refresh-required reason (table_reset, replay_limit, …) for one that replaces the
	// caller's state.
	Reason string
}

// ReadSnapshot reads a consistent snapshot of opts.Table through opts.Shape (GET
// /v1/tables/{Table}/snapshot, as an Arrow IPC stream) and hands its record batches to fn
// one at a time, in the table's order. It returns the snapshot with its Cursor, from
// which a Stream continues exactly after the rows fn was given (docs/design.md, "The
// atomic hand-off"), and its Schema, which holds even when the table has no rows; its
// Records is nil. Of opts it uses Table, Shape, HTTPClient, CAFile and HeartbeatInterval
// with HeartbeatMargin (the silence that ends the read with ErrSilence); the others are
// ignored.
//
// It holds a batch or two in memory at a time, whatever the table's size. A batch is
// valid during fn; once fn returns, its memory goes back to a pool the whole process
// shares, and a later batch, of this read or another, is read into it, much as
// bufio.Scanner reuses its buffer. Values kept past fn must be copied (strings.Clone of a
// string's Value, bytes.Clone of a binary one's; any value of a nested column), or the
// batch retained (Retain, then Release when done).
//
// It reads once and does not retry: a read that fails part way has already handed fn
// some rows, and a caller that wants them all reads again from the start. The server
// ends a response that makes no progress for its --stream-write-timeout (30 s by
// default), so a fn that holds one batch longer ends the read with an error. Errors:
// ErrNoTable; ErrNoHandler; a bad baseURL or CAFile; *StatusError for a refusal (404 for
// no such table, 503 with Retry-After when the server's snapshot slots are taken);
// ErrNoCursor; an error wrapping ErrSilence, ErrUntrustedCertificate,
// ErrTruncatedSnapshot, or a read or decoding error; *HandlerError (Handler
// "ReadSnapshot", Cursor "") for fn's error or panic; ctx's error, checked before each
// batch too.
func ReadSnapshot(ctx context.Context, baseURL, token string, opts Options, fn func(arrow.RecordBatch) error) (*Snapshot, error) {
	if opts.Table == "" {
		return nil, ErrNoTable
	}
	if fn == nil {
		return nil, ErrNoHandler
	}
	c, err := newConsumer(baseURL, token, opts)
	if err != nil {
		return nil, err
	}
	return c.readSnapshot(ctx, "", nil, &snapshotBuffers, func(rec arrow.RecordBatch) error {
		return c.call("ReadSnapshot", "", func() error { return fn(rec) })
	})
}

// snapshotBuffers is the memory ReadSnapshot's batches are read into, shared by every
// read in the process.
var snapshotBuffers bufferPool

// goAllocator is Go's allocator, whose buffers the collector frees, whatever
// memory.DefaultAllocator is (C's malloc under arrow-go's mallocator build tag).
var goAllocator = memory.NewGoAllocator()

// fetchSnapshot reads a whole snapshot into memory, for LiveQuery: every record batch
// retained, on Go's allocator, so that what OnSnapshot keeps of a batch stays valid
// after the batch is released.
func (c *consumer) fetchSnapshot(ctx context.Context, sql string, params []any) (*Snapshot, error) {
	var recs []arrow.RecordBatch
	snap, err := c.readSnapshot(ctx, sql, params, goAllocator, func(rec arrow.RecordBatch) error {
		rec.Retain()
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		releaseAll(recs)
		return nil, err
	}
	snap.Records = recs
	return snap, nil
}

// readSnapshot reads a snapshot as an Arrow IPC stream, its batches read into mem and
// handed to each: the table through
// GET /v1/tables/{table}/snapshot, or q's result through POST /v1/query, whose
// Ducktail-Cursors must name the table. The response body is read under the silence
// watchdog; its headers are not, since the server reads the whole result before it
// answers. Errors: *StatusError for a refusal, ErrNoCursor, ErrSilence or a read or
// decoding error (wrapped), each's error, ctx's error (also checked before each batch).
func (c *consumer) readSnapshot(ctx context.Context, sql string, params []any, mem memory.Allocator, each func(arrow.RecordBatch) error) (*Snapshot, error) {
	connCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	wd := newWatchdog(c.silence, func() { cancel(ErrSilence) })
	defer wd.disarm()
	var req *http.Request
	var err error
	table := url.PathEscape(c.opts.Table)
	if sql == "" {
		req, err = http.NewRequestWithContext(connCtx, http.MethodGet, c.opts.Shape.query(c.base.JoinPath("v1", "tables", table, "snapshot").String()), nil)
	} else {
		body, jerr := json.Marshal(struct {
			SQL    string `json:"sql"`
			Params []any  `json:"params"`
		}{sql, params})
		if jerr != nil {
			return nil, fmt.Errorf("encode query parameters: %w", jerr)
		}
		req, err = http.NewRequestWithContext(connCtx, http.MethodPost, c.base.JoinPath("v1", "query").String(), bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", arrowStreamType)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, c.untrusted(fmt.Errorf("snapshot: %w", err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, readStatusError(resp, wd.reader(resp.Body))
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != arrowStreamType {
		return nil, fmt.Errorf("snapshot: Content-Type %q, want %s", resp.Header.Get("Content-Type"), arrowStreamType)
	}
	cursor := resp.Header.Get(cursorHeader)
	if sql != "" {
		cursor = tableCursor(resp.Header.Get(cursorsHeader), c.opts.Table)
	}
	if cursor == "" {
		return nil, ErrNoCursor
	}
	readErr := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(context.Cause(connCtx), ErrSilence) {
			return fmt.Errorf("snapshot: %w (%v)", ErrSilence, c.silence)
		}
		return fmt.Errorf("snapshot: read arrow ipc stream: %w", err)
	}
	body := &endWatch{r: wd.reader(resp.Body)}
	rd, err := ipc.NewReader(body, ipc.WithAllocator(mem))
	if err != nil {
		return nil, readErr(err)
	}
	defer rd.Release()
	for rd.Next() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := each(rd.RecordBatch()); err != nil {
			return nil, err
		}
	}
	if err := rd.Err(); err != nil {
		return nil, readErr(err)
	}
	if body.bareEOF {
		return nil, readErr(ErrTruncatedSnapshot)
	}
	return &Snapshot{Cursor: cursor, Schema: rd.Schema()}, nil
}

// endWatch is a response body that records whether its last Read found the body's end
// with no byte. An Arrow IPC reader ends the stream on its end-of-stream marker, or,
// since the format allows a stream to end without one (Arrow columnar format, "IPC
// Streaming Format"), on the body's end between two messages: only in the second case
// is its last Read a bare io.EOF, where it found no next message.
type endWatch struct {
	r       io.Reader
	bareEOF bool
}

func (w *endWatch) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	w.bareEOF = n == 0 && err == io.EOF
	return n, err
}

// tableCursor returns the cursor of table in a Ducktail-Cursors value
// ("t1=r1…, t2=r1…"; table names compared case-insensitively, as the server resolves
// them), or "".
func tableCursor(header, table string) string {
	for pair := range strings.SplitSeq(header, ",") {
		name, cursor, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && strings.EqualFold(name, table) {
			return cursor
		}
	}
	return ""
}
