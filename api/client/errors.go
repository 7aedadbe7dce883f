package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
)

// Sentinel errors. The transient ones (ErrSilence, ErrAbruptClose) reach Options.OnError
// wrapped with detail, and the stream reconnects; the others end Stream and LiveQuery.
var (
	// ErrSilence: no byte arrived for longer than Options.HeartbeatInterval plus
	// Options.HeartbeatMargin, so the connection is taken for dead and replaced (docs/design.md,
	// "Heartbeats and timeouts": a silent connection and a disconnected one are the same
	// thing at the socket).
	ErrSilence = errors.New("no bytes from the server for longer than the heartbeat interval plus margin")
	// ErrAbruptClose: the response ended without a terminal event. Never taken for
	// completion (docs/design.md, "Three outcomes, not two"); the stream reconnects.
	ErrAbruptClose = errors.New("the stream ended without a terminal event")
	// ErrEventTooLarge: one event is longer than Options.MaxEventBytes. It ends the
	// stream, since reconnecting would read the same event again.
	ErrEventTooLarge = errors.New("event longer than MaxEventBytes")
	// ErrNoCursor: a snapshot answer carries no cursor for the table (a query that does
	// not read Options.Table, or a server without the hand-off header). It ends
	// LiveQuery: without the cursor the hand-off cannot be exact (docs/design.md, "The atomic
	// hand-off").
	ErrNoCursor = errors.New("the snapshot answer carries no cursor for the table")
	// ErrNoTable: LiveQuery and ReadSnapshot need Options.Table to read snapshots.
	ErrNoTable = errors.New("LiveQuery and ReadSnapshot need Options.Table")
	// ErrTruncatedSnapshot: a snapshot's Arrow IPC stream ended between two messages
	// without its end-of-stream marker, which the server always writes last and leaves
	// out when it aborts a snapshot (docs/design.md, "The atomic hand-off"; a proxy may
	// turn the abort into a clean end). Some of its rows were never read.
	ErrTruncatedSnapshot = errors.New("the snapshot ended without its end-of-stream marker")
	// ErrNoHandler: ReadSnapshot needs a function to hand the record batches to.
	ErrNoHandler = errors.New("ReadSnapshot needs a function for the record batches")
	// ErrShapeWithSQL: LiveQuery takes a Shape or SQL, not both: a query's cursor is the
	// whole table's, which a shaped stream cannot continue.
	ErrShapeWithSQL = errors.New("LiveQuery takes Options.Shape or LiveOptions.SQL, not both")
)

// Problem is an RFC 9457 problem details object, the body of every refusal ducktail sends
// (application/problem+json). Code is ducktail's machine-readable error code.
type Problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance"`
	Code      string `json:"code"`
	Column    string `json:"column"`
	RequestID string `json:"request_id"`
}

// StatusError is a refusal before the stream or snapshot started: any status but 200
// (docs/design.md, "The stream": 400 malformed token or Last-Event-ID, 401 unknown, expired or
// revoked token, 403 purpose, table or origin, 404 table, 429 per-token stream limit, 503
// admission or draining). Retryable reports whether the consumer retries it.
type StatusError struct {
	// StatusCode is the HTTP status (RFC 9110 §15).
	StatusCode int
	// RetryAfter is the response's Retry-After (RFC 9110 §10.2.3) as a duration from when
	// it was received; 0 when absent.
	RetryAfter time.Duration
	// Problem is the decoded problem+json body; its zero value when the body was not one.
	Problem Problem
	// Body is the start of a body that was not problem+json, for the message.
	Body string
}

// Error returns the status with the problem's code and detail ("404 not_found: …", as
// the ducktail command line writes refusals), or with the status text and the body when
// the answer was not a problem.
func (e *StatusError) Error() string {
	if e.Problem.Code != "" {
		return fmt.Sprintf("%d %s: %s", e.StatusCode, e.Problem.Code, e.Problem.Detail)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Body != "" {
		fmt.Fprintf(&b, ": %s", e.Body)
	}
	return b.String()
}

// Retryable reports whether the refusal is temporary: 408, 429 and every 5xx status (RFC
// 9110 §15.5.9, RFC 6585 §4, RFC 9110 §15.6). Every other status ends the stream, since
// sending the same request again would be refused again.
func (e *StatusError) Retryable() bool {
	return e.StatusCode == http.StatusRequestTimeout || e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// RefreshRequiredError is the terminal refresh-required event: the cursor cannot be
// continued (the table was reset or dropped, the cursor is malformed, foreign or past the
// replay bounds). The same cursor must not be tried again (docs/design.md, "Recovery"); rebuild from a
// snapshot, as LiveQuery does.
type RefreshRequiredError struct {
	// Reason is the event's "reason": table_reset, table_dropped, invalid_cursor,
	// numeric_cursor, tampered_cursor, foreign_cursor, cursor_ahead, replay_limit.
	Reason string
	// Cursor is the cursor the refused stream started from ("" for a new subscription).
	Cursor string
}

// Error returns "refresh required: " and the reason.
func (e *RefreshRequiredError) Error() string {
	return "refresh required: " + e.Reason
}

// FailureError is the terminal failure event: the stream failed after HTTP 200 (docs/design.md,
// "The stream": token_revoked, token_expired, internal). The stream stops; the cursor of
// the last processed batch is still valid, so a caller that fixed the cause (a new token)
// may start again from it.
type FailureError struct {
	// Code is the event's "code".
	Code string
	// Message is the event's client-safe "message".
	Message string
}

// Error returns the failure's code and message.
func (e *FailureError) Error() string {
	return "stream failure: " + e.Code + ": " + e.Message
}

// ReconnectError is the terminal reconnect event (docs/design.md, "The stream": server_draining,
// slow_consumer, max_stream_age, idle_timeout). It is not an error of the stream: the
// consumer reports it to Options.OnError, waits RetryAfter and resumes from the last
// processed cursor.
type ReconnectError struct {
	// Reason is the event's "reason".
	Reason string
	// RetryAfter is the event's retry_ms.
	RetryAfter time.Duration
}

// Error returns the reason and the delay.
func (e *ReconnectError) Error() string {
	return fmt.Sprintf("server asked to reconnect (%s) after %v", e.Reason, e.RetryAfter)
}

// HandlerError is a handler of Options or LiveOptions, or ReadSnapshot's function, that
// returned an error or panicked. It ends the stream: the event was not processed, so its
// cursor is not acknowledged, and a caller starting again from its last processed cursor
// receives the event again. It ends ReadSnapshot, whose batches have no cursor of their
// own: the snapshot's cursor is after its last row.
type HandlerError struct {
	// Handler names the callback: "OnSchema", "OnBatch", "OnSnapshot", "OnStatus",
	// "OnError", "ReadSnapshot".
	Handler string
	// Cursor is the cursor of the event the handler was given ("" for OnStatus, OnError
	// and ReadSnapshot).
	Cursor string
	// Err is the handler's error, or for a panic an error holding the panic value and
	// the stack.
	Err error
}

// Error names the handler and its error.
func (e *HandlerError) Error() string {
	return e.Handler + " failed: " + e.Err.Error()
}

// Unwrap returns the handler's error, for errors.Is and errors.As.
func (e *HandlerError) Unwrap() error { return e.Err }

// readStatusError reads a refusal: its problem+json body (RFC 9457), up to 64 KiB, and its
// Retry-After.
func readStatusError(resp *http.Response, body io.Reader) *StatusError {
	e := &StatusError{StatusCode: resp.StatusCode, RetryAfter: parseRetryAfter(resp.Header, time.Now())}
	b, _ := io.ReadAll(io.LimitReader(body, 64<<10))
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/problem+json" && json.Unmarshal(b, &e.Problem) == nil {
		return e
	}
	e.Problem = Problem{}
	e.Body = strings.TrimSpace(string(b[:min(len(b), 512)]))
	return e
}
