package api

import (
	"context"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// Backend is what the HTTP layer asks of the process behind it for every request: the
// writer's store (store.DB), or a stream node's copy of the writer's catalog
// (jetstream.Source).
type Backend interface {
	// Authenticate returns the token whose secret is secret (store.DB.Authenticate has
	// the errors).
	Authenticate(secret string) (store.Token, error)
	// Ping returns nil while the backend answers (readiness).
	Ping(ctx context.Context) error
}

// NodeConfig configures a stream node's HTTP API (docs/scaling.md, "Stream nodes").
type NodeConfig struct {
	Config
	// Writer is the base URL of the writer, which answers everything but streams;
	// required.
	Writer *url.URL
	// WriterTransport carries the proxied requests (its TLS configuration trusts the
	// writer's certificate); nil means http.DefaultTransport.
	WriterTransport http.RoundTripper
	// Shapes compiles the shapes of the node's streams (a store.ShapeEngine, which is also
	// the hub's Shaper); required.
	Shapes snapshot.Querier
}

// NewStreamNode returns the HTTP API of a stream node: GET /stream/{token} and GET
// /v1/tables/{table}/stream are served by hub, whose source is the writer's JetStream
// stream, with the same events, framings, encodings, limits and refusals as on the writer;
// tokens are checked by backend; shapes and policies are compiled with cfg.Shapes and
// filtered by the hub's Shaper, as on the writer; /healthz, /readyz and /metrics are the
// node's own. Every other request is proxied to the writer (httputil.ReverseProxy), and so
// is a stream only the writer can serve (stream.ErrWriterOnly: a table with no message
// left in JetStream): a client needs the node's URL only, and keeps its Authorization
// header, which a redirect to another host would drop.
func NewStreamNode(cfg NodeConfig, backend Backend, hub *stream.Hub) *Server {
	s := newServer(cfg.Config, hub, backend)
	proxy := httputil.NewSingleHostReverseProxy(cfg.Writer)
	proxy.Transport = cfg.WriterTransport
	proxy.FlushInterval = -1 // streams: every frame at once
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		s.writeError(w, r, &store.Error{Code: store.CodeUnavailable, Message: "the writer did not answer: " + err.Error()})
	}
	r := chi.NewRouter()
	r.Use(s.requestLog)
	r.Group(func(r chi.Router) {
		// CORS headers on the node's own answers only: a proxied answer carries the
		// writer's, and a second Access-Control-Allow-Origin would fail in browsers.
		r.Use(s.cors())
		r.Get("/healthz", s.healthz)
		r.Get("/readyz", s.readyz)
		r.Handle("/metrics", s.metricsHandler())
		r.Get("/stream/{token}", s.streamByPathToken)
		r.With(s.authenticate).Get("/v1/tables/{table}/stream", s.streamByBearer)
	})
	r.Handle("/*", proxy)
	s.proxy, s.shapes = proxy, cfg.Shapes
	s.router = r
	s.walkMethods()
	return s
}

// backendName names the backend in readiness answers.
func (s *Server) backendName() string {
	if s.db != nil {
		return "store"
	}
	return "jetstream"
}
