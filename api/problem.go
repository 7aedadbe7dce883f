package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
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

// statusByCode is the one table mapping store error codes to HTTP statuses (STYLE.md,
// "One coded application error").
var statusByCode = map[store.Code]int{
	store.CodeInvalid:       http.StatusBadRequest,
	store.CodeUnprocessable: http.StatusUnprocessableEntity,
	store.CodeNotFound:      http.StatusNotFound,
	store.CodeConflict:      http.StatusConflict,
	store.CodeTooLarge:      http.StatusRequestEntityTooLarge,
	store.CodeTimeout:       http.StatusUnprocessableEntity,
	store.CodeUnauthorized:  http.StatusUnauthorized,
	store.CodeForbidden:     http.StatusForbidden,
	store.CodeInternal:      http.StatusInternalServerError,
}

// apiError is an error with an explicit status, for conditions that are not store codes
// (415, 406, 429, 503).
type apiError struct {
	status     int
	code       string
	message    string
	retryAfter int // seconds; 0 omits Retry-After
}

func (e *apiError) Error() string { return e.message }

func statusError(status int, code, message string) *apiError {
	return &apiError{status: status, code: code, message: message}
}

// writeError answers err as problem+json: the status from the error's code, the client-safe
// message as detail, the location fields of a *store.Error. Uncoded errors are logged and
// answered with a generic 500.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	p := Problem{Instance: redactedPath(r), RequestID: requestID(r.Context())}
	var ae *apiError
	var se *store.Error
	switch {
	case errors.As(err, &ae):
		p.Status, p.Code, p.Detail = ae.status, ae.code, ae.message
		if ae.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(ae.retryAfter))
		}
	case errors.Is(err, errUnsupportedMediaType) && errors.As(err, &se):
		p.Status, p.Code, p.Detail = http.StatusUnsupportedMediaType, "unsupported_media_type", se.Message
	case errors.Is(err, snapshot.ErrNotAcceptable) && errors.As(err, &se):
		p.Status, p.Code, p.Detail = http.StatusNotAcceptable, "not_acceptable", se.Message
	case errors.As(err, &se) && se.Code != store.CodeInternal:
		p.Status, p.Code, p.Detail = statusByCode[se.Code], string(se.Code), se.Message
		p.Row, p.Line, p.Column, p.Field = se.Row, se.Line, se.Column, se.Field
	case errors.Is(err, stream.ErrDraining), errors.Is(err, stream.ErrAdmission):
		p.Status, p.Code, p.Detail = http.StatusServiceUnavailable, "unavailable", err.Error()
		w.Header().Set("Retry-After", strconv.Itoa(s.retryAfterSeconds()))
	case errors.Is(err, stream.ErrTokenStreams):
		p.Status, p.Code, p.Detail = http.StatusTooManyRequests, "too_many_streams", err.Error()
		w.Header().Set("Retry-After", strconv.Itoa(s.retryAfterSeconds()))
	case errors.Is(err, store.ErrClosed):
		p.Status, p.Code, p.Detail = http.StatusServiceUnavailable, "unavailable", "the server is shutting down"
	default:
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
