package api

import (
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
)

// CursorHeader carries the cursor of a table snapshot: subscribing with it continues
// exactly after the snapshot (docs/design.md, "The atomic hand-off").
const CursorHeader = "Ducktail-Cursor"

// CursorsHeader carries the cursor of every table a query read, as a comma-separated list
// of table=cursor pairs.
const CursorsHeader = "Ducktail-Cursors"

// tableSnapshot: GET /v1/tables/{table}/snapshot streams a consistent snapshot of the
// table in the format the Accept header asks for (Arrow IPC stream, JSON, NDJSON, CSV or
// Parquet), with its cursor in Ducktail-Cursor, taken in the same read transaction.
// Query, stream and admin tokens may read it: a stream consumer rebuilds from it after
// refresh-required. 404 unknown table, 406 unsupported Accept.
func (s *Server) tableSnapshot(w http.ResponseWriter, r *http.Request) {
	name := pathParam(r, "table")
	tok := tokenFrom(r)
	purpose := store.PurposeQuery
	if tok.Purpose == store.PurposeStream {
		purpose = store.PurposeStream
	}
	if err := allow(tok, purpose, name); err != nil {
		s.writeError(w, r, err)
		return
	}
	format, contentType, err := snapshot.Negotiate(r.Header.Get("Accept"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	spec, err := shapeSpec(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// A snapshot holds a reader connection while the client downloads it: bound how
	// many run at once, so that slow downloads cannot take every connection from
	// queries and stream resumes.
	if !s.acquire(w, r, s.snapshots, "snapshots are being downloaded") {
		return
	}
	defer func() { <-s.snapshots }()
	started := false
	out := deadlineWriter{w: w, wd: &writeDeadline{s: s, rc: http.NewResponseController(w)}}
	err = s.reader.ShapedTable(r.Context(), name, spec, policyOn(tok, name), format, out, func(head store.Position, tag store.ShapeTag) {
		started = true
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set(CursorHeader, s.shapedCursor(head, tag))
		w.WriteHeader(http.StatusOK)
	})
	switch {
	case err == nil:
	case !started:
		s.writeError(w, r, err)
	default:
		// The status is sent: abort the response so the client sees a truncated body,
		// never a complete-looking one.
		s.log.Warn("snapshot failed after the first byte", "table", name, "err", err)
		panic(http.ErrAbortHandler)
	}
}

// queryRequest is the body of POST /v1/query: one SELECT and its positional parameters.
type queryRequest struct {
	SQL    string `json:"sql"`
	Params []any  `json:"params"`
}

// query: POST /v1/query runs one sandboxed SELECT in one read transaction and answers
// its result in the format the Accept header asks for, with the cursor of every table it
// read (Ducktail-Cursors, and in the JSON body), taken in the same transaction. Query and
// admin tokens may query; a table-scoped token reads only its table. 400/403/422 for
// refused SQL, 413 result too large.
func (s *Server) query(w http.ResponseWriter, r *http.Request) {
	tok := tokenFrom(r)
	if err := allow(tok, store.PurposeQuery, tok.Table); err != nil {
		s.writeError(w, r, err)
		return
	}
	var req queryRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	format, _, err := snapshot.Negotiate(r.Header.Get("Accept"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// A query holds a reader connection for as long as it runs: bound how many run at
	// once, so that slow queries cannot take every connection from snapshots and stream
	// resumes.
	if !s.acquire(w, r, s.queries, "queries are running") {
		return
	}
	defer func() { <-s.queries }()
	start := time.Now()
	var policy func(string) store.TokenPolicy
	if !tok.Policy.Empty() {
		policy = func(table string) store.TokenPolicy { return policyOn(tok, table) }
	}
	res, err := s.reader.PolicyQuery(r.Context(), req.SQL, req.Params, format, func(table string) bool {
		return tok.Allows(store.PurposeQuery, table)
	}, policy)
	s.metrics.queryDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		s.metrics.queryRefusals.WithLabelValues(string(store.ErrorCode(err))).Inc()
		if store.ErrorCode(err) == store.CodeTooLarge {
			// 413 is about the request; an over-large result is the query's fault.
			err = &store.Error{Code: store.CodeResultTooLarge, Message: err.Error() + "; add a LIMIT, or read the whole table from GET /v1/tables/{table}/snapshot, which streams any size"}
		}
		s.writeError(w, r, err)
		return
	}
	s.metrics.queries.Inc()
	names := make([]string, 0, len(res.Cursors))
	for name := range res.Cursors {
		names = append(names, name)
	}
	sort.Strings(names)
	pairs := make([]string, len(names))
	for i, name := range names {
		pairs[i] = name + "=" + s.codec.Encode(res.Cursors[name])
	}
	w.Header().Set(CursorsHeader, strings.Join(pairs, ", "))
	w.Header().Set("Content-Type", res.ContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	w.Write(res.Body)
}

// deadlineWriter keeps the write deadline of a long response ahead of its writes, so
// that a large snapshot is not cut by the server-wide WriteTimeout while it makes
// progress.
type deadlineWriter struct {
	w  http.ResponseWriter
	wd *writeDeadline
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	d.wd.extend()
	return d.w.Write(p)
}

// acquire takes a slot of sem, or answers 503 with Retry-After when all are taken; what
// says what holds them.
func (s *Server) acquire(w http.ResponseWriter, r *http.Request, sem chan struct{}, what string) bool {
	select {
	case sem <- struct{}{}:
		return true
	default:
		s.writeError(w, r, store.Errorf(store.CodeUnavailable, "%d %s; retry shortly", cap(sem), what))
		return false
	}
}
