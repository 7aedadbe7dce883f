package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/cors"
)

// cors returns the CORS middleware (go-chi/cors, the Fetch standard's CORS protocol):
// allowed origins may send Authorization, Last-Event-ID, Content-Type and
// Idempotency-Key and read the cursor headers; other origins get no CORS headers.
func (s *Server) cors() func(http.Handler) http.Handler {
	return cors.Handler(cors.Options{
		AllowOriginFunc: func(r *http.Request, origin string) bool { return s.originListed(origin) },
		AllowedMethods:  []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete},
		AllowedHeaders:  []string{"Authorization", "Last-Event-ID", "Content-Type", "Idempotency-Key", RequestIDHeader},
		ExposedHeaders:  []string{CursorHeader, CursorsHeader, RequestIDHeader, "Retry-After"},
		MaxAge:          600,
	})
}

// originListed reports whether origin is on the CORS allow-list.
func (s *Server) originListed(origin string) bool {
	return slices.Contains(s.cfg.CORSOrigins, "*") || slices.ContainsFunc(s.cfg.CORSOrigins, func(o string) bool {
		return strings.EqualFold(strings.TrimSuffix(o, "/"), origin)
	})
}

// originAllowed reports whether a request may open a stream: it carries no Origin (not a
// browser, or a same-origin EventSource), its Origin is this server's own, or the
// Origin is on the allow-list.
func (s *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || s.originListed(origin) {
		return true
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return strings.EqualFold(origin, scheme+"://"+r.Host)
}
