package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/google/uuid"
)

// Log attribute keys (docs/design.md, "Code conventions": attribute keys are constants).
const (
	logKeyRequestID = "request_id"
	logKeyMethod    = "method"
	logKeyRoute     = "route"
	logKeyStatus    = "status"
	logKeyBytes     = "bytes"
	logKeyDuration  = "duration"
	logKeyRemote    = "remote"
	logKeyProto     = "proto"
)

// RequestIDHeader carries the request id, taken from the client when it is a sane value,
// otherwise made here; it is echoed in the response and in problem bodies.
const RequestIDHeader = "X-Request-ID"

type requestIDKey struct{}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// requestLog is middleware that gives each request an id and logs it once it ends, with
// slog. It logs the route pattern, never the raw path, so the token of /stream/{token}
// never reaches a log line or a metric label.
func (s *Server) requestLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(RequestIDHeader)
		if len(id) == 0 || len(id) > 64 || !printableASCII(id) {
			id = uuid.NewString()
		}
		w.Header().Set(RequestIDHeader, id)
		ctx := context.WithValue(r.Context(), requestIDKey{}, id)
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r.WithContext(ctx))
		route := routePattern(r)
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		s.metrics.requests.WithLabelValues(methodLabel(r.Method), route, http.StatusText(status)).Inc()
		s.metrics.requestDuration.WithLabelValues(route).Observe(time.Since(start).Seconds())
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		if !s.log.Enabled(ctx, level) {
			return
		}
		s.log.LogAttrs(ctx, level, "request",
			slog.String(logKeyRequestID, id),
			slog.String(logKeyMethod, r.Method),
			slog.String(logKeyRoute, route),
			slog.Int(logKeyStatus, status),
			slog.Int(logKeyBytes, ww.BytesWritten()),
			slog.Duration(logKeyDuration, time.Since(start)),
			slog.String(logKeyRemote, r.RemoteAddr),
			slog.String(logKeyProto, r.Proto),
		)
	})
}

// methodLabel is r.Method for the methods HTTP defines and "other" for anything else, so
// that clients cannot mint metric series with made-up methods.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// routePattern is the chi route pattern that matched r ("/v1/tables/{table}/rows"), or
// "unmatched".
func routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if p := rc.RoutePattern(); p != "" {
			return strings.TrimSuffix(p, "/*")
		}
	}
	return "unmatched"
}
