package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/ducktail/ducktail/store"
)

// problemTypeBase prefixes every problem type URI; the code follows it.
const problemTypeBase = "urn:ducktail:problem:"

// Problem is an RFC 9457 problem details object, served as application/problem+json.
// Code, Row, Line, Column and Field are extension members locating bad input: the data
// row and input line, the table column, or the request field, header or parameter.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Instance is the request path the problem occurred on.
	Instance string `json:"instance,omitempty"`
	Code     string `json:"code"`
	Row      int    `json:"row,omitempty"`
	Line     int    `json:"line,omitempty"`
	Column   string `json:"column,omitempty"`
	Field    string `json:"field,omitempty"`
	// RequestID correlates the problem with the server's log.
	RequestID string `json:"request_id,omitempty"`
}

// statusByCode is the one table mapping error codes to HTTP statuses (RFC 9110, section
// 15); an error without a code, or with CodeInternal, is a 500.
var statusByCode = map[store.Code]int{
	store.CodeInvalid:              http.StatusBadRequest,
	store.CodeUnprocessable:        http.StatusUnprocessableEntity,
	store.CodeNotFound:             http.StatusNotFound,
	store.CodeConflict:             http.StatusConflict,
	store.CodeTooLarge:             http.StatusRequestEntityTooLarge,
	store.CodeResultTooLarge:       http.StatusUnprocessableEntity,
	store.CodeTimeout:              http.StatusUnprocessableEntity,
	store.CodeUnauthorized:         http.StatusUnauthorized,
	store.CodeForbidden:            http.StatusForbidden,
	store.CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	store.CodeNotAcceptable:        http.StatusNotAcceptable,
	store.CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
	store.CodeRateLimited:          http.StatusTooManyRequests,
	store.CodeTooManyStreams:       http.StatusTooManyRequests,
	store.CodeUnavailable:          http.StatusServiceUnavailable,
	store.CodeInternal:             http.StatusInternalServerError,
}

// problemCode is the "code" member clients see for c: its name, except that a result
// over its size limit is "too_large" like a body over its limit (docs/api.md, "Errors").
func problemCode(c store.Code) string {
	if c == store.CodeResultTooLarge {
		return string(store.CodeTooLarge)
	}
	return string(c)
}

// retryAfter is the Retry-After of a refusal in whole seconds, 0 for none: the error's
// own RetryAfter, else the hub's reconnect delay for the codes a later retry may cure
// (unavailable, too many streams).
func (s *Server) retryAfter(e *store.Error) int {
	if e.RetryAfter > 0 {
		return int(max(math.Ceil(e.RetryAfter.Seconds()), 1))
	}
	switch e.Code {
	case store.CodeUnavailable, store.CodeTooManyStreams:
		return s.retryAfterSeconds()
	}
	return 0
}

// writeError answers err as problem+json: the status from the error's code, the client-safe
// message as detail, the location fields and Retry-After of a *store.Error. Uncoded errors
// are logged and answered with a generic 500.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	p := Problem{Instance: redactedPath(r), RequestID: requestID(r.Context())}
	var se *store.Error
	if errors.As(err, &se) && se.Code != store.CodeInternal && statusByCode[se.Code] != 0 {
		p.Status, p.Code, p.Detail = statusByCode[se.Code], problemCode(se.Code), se.Message
		p.Row, p.Line, p.Column, p.Field = se.Row, se.Line, se.Column, se.Field
		if secs := s.retryAfter(se); secs > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(secs))
		}
	} else {
		s.log.LogAttrs(r.Context(), slog.LevelError, "internal error", slog.String(logKeyRequestID, p.RequestID), slog.Any("err", err))
		p.Status, p.Code, p.Detail = http.StatusInternalServerError, string(store.CodeInternal), "internal error"
	}
	p.Type = problemTypeBase + p.Code
	p.Title = http.StatusText(p.Status)
	s.metrics.problems.WithLabelValues(strconv.Itoa(p.Status), p.Code).Inc()
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	json.NewEncoder(w).Encode(p)
}

// writeJSON answers v as application/json with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// redactedPath is the request path for problem bodies, with the token of
// /stream/{token} replaced by its route parameter name, so that a secret never travels
// back in an error that clients, proxies and error trackers log.
func redactedPath(r *http.Request) string {
	if strings.HasPrefix(r.URL.Path, "/stream/") {
		return "/stream/{token}"
	}
	return r.URL.Path
}
