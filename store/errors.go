package store

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Code classifies an Error: every refusal ducktail gives has one. The api package maps
// each code to a status in a single table; clients see the code in the problem+json body
// (RFC 9457) as the "code" member, and metrics label refusals with it.
type Code string

// Error codes.
const (
	// CodeInvalid: the request is malformed (bad JSON, bad identifier, bad parameter).
	CodeInvalid Code = "invalid"
	// CodeUnprocessable: the request is well formed but a row or value does not fit the
	// table's schema, or a query was refused by the sandbox.
	CodeUnprocessable Code = "unprocessable"
	// CodeNotFound: the named table, column, token or endpoint does not exist.
	CodeNotFound Code = "not_found"
	// CodeConflict: the named thing already exists, the schema changed under the request,
	// or an Idempotency-Key was reused with a different body.
	CodeConflict Code = "conflict"
	// CodeTooLarge: a request body, what it decodes to, or a query result is over its
	// size limit.
	CodeTooLarge Code = "too_large"
	// CodeTimeout: a query ran past its time limit and was cancelled.
	CodeTimeout Code = "timeout"
	// CodeUnauthorized: the request carries no token, or one that is unknown, expired
	// or revoked.
	CodeUnauthorized Code = "unauthorized"
	// CodeForbidden: the token's purpose or table scope does not allow the request.
	CodeForbidden Code = "forbidden"
	// CodeResultTooLarge: a query's result is over its size limit, told apart from
	// CodeTooLarge where the query, not the request's size, is at fault; clients see
	// it under the name "too_large".
	CodeResultTooLarge Code = "result_too_large"
	// CodeUnsupportedMediaType: the request body's media type is not one ducktail reads.
	CodeUnsupportedMediaType Code = "unsupported_media_type"
	// CodeNotAcceptable: no response format ducktail writes matches the request's Accept.
	CodeNotAcceptable Code = "not_acceptable"
	// CodeMethodNotAllowed: the path exists but does not take the request's method.
	CodeMethodNotAllowed Code = "method_not_allowed"
	// CodeRateLimited: the token is over its request rate; RetryAfter says when to retry.
	CodeRateLimited Code = "rate_limited"
	// CodeTooManyStreams: the token has as many streams open as it may.
	CodeTooManyStreams Code = "too_many_streams"
	// CodeUnavailable: the server cannot take the request now (shutting down, draining,
	// or all slots of a bounded resource taken); retrying later, or elsewhere, may work.
	CodeUnavailable Code = "unavailable"
	// CodeInternal: anything else; the message is generic and the cause is logged.
	CodeInternal Code = "internal"
)

// Error is ducktail's one coded application error. Message is safe to show to clients;
// Err, the cause, is not. Row, Line and Column locate bad input when known.
type Error struct {
	Code    Code
	Message string
	// Row is the 1-based data row (not counting a CSV header) of bad input, or 0.
	Row int
	// Line is the 1-based line of the input text where the bad row starts, or 0.
	Line int
	// Column is the table column of bad input, or "".
	Column string
	// Field is the request field, header or parameter that was wrong ("ttl",
	// "Idempotency-Key"), or "".
	Field string
	// RetryAfter, when not 0, is how long the client should wait before retrying
	// (CodeRateLimited, CodeUnavailable).
	RetryAfter time.Duration
	// Err is the underlying cause, or nil.
	Err error
}

// Error implements error: the message with its location and cause.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	if e.Row > 0 {
		fmt.Fprintf(&b, " (row %d", e.Row)
		if e.Line > 0 {
			fmt.Fprintf(&b, ", line %d", e.Line)
		}
		if e.Column != "" {
			fmt.Fprintf(&b, ", column %q", e.Column)
		}
		b.WriteString(")")
	} else if e.Column != "" {
		fmt.Fprintf(&b, " (column %q)", e.Column)
	} else if e.Field != "" {
		fmt.Fprintf(&b, " (%s)", e.Field)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted client-safe message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, or CodeInternal.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// Sentinel errors. ErrTableNotFound and ErrSchemaChanged are wrapped in an *Error where
// returned so that ErrorCode works; ErrClosed is one.
var (
	// ErrClosed is returned by every method after Close; its code is CodeUnavailable.
	ErrClosed error = &Error{Code: CodeUnavailable, Message: "the server is shutting down"}
	// ErrTableNotFound is returned when a table name does not name a live table.
	ErrTableNotFound = errors.New("table not found")
	// ErrSchemaChanged is returned by Append when the table's schema changed after the
	// batch was shaped; the client should retry.
	ErrSchemaChanged = errors.New("table schema changed")
)
