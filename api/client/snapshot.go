package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
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
	// keep it longer.
	Records []arrow.RecordBatch
	// Reason is "" for the snapshot LiveOptions.StartWithSnapshot asks for, and the
	// refresh-required reason (table_reset, replay_limit, …) for one that replaces the
	// caller's state.
	Reason string
}

// fetchSnapshot reads a snapshot as an Arrow IPC stream: the table through
// GET /v1/tables/{table}/snapshot, or q's result through POST /v1/query, whose
// Ducktail-Cursors must name the table. The response body is read under the silence
// watchdog; its headers are not, since the server reads the whole result before it
// answers. Errors: *StatusError for a refusal, ErrNoCursor, ErrSilence or a read or
// decoding error (wrapped), ctx's error.
func (c *consumer) fetchSnapshot(ctx context.Context, sql string, params []any) (*Snapshot, error) {
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
	schema, recs, err := decodeIPC(wd.reader(resp.Body))
	if err != nil {
		if errors.Is(context.Cause(connCtx), ErrSilence) {
			return nil, fmt.Errorf("snapshot: %w (%v)", ErrSilence, c.silence)
		}
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return &Snapshot{Cursor: cursor, Schema: schema, Records: recs}, nil
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
