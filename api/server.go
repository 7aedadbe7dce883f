// Package api is ducktail's HTTP layer and the only importer of net/http: the chi router,
// authentication by token purpose and table scope, CORS, rate and size limits, errors as
// RFC 9457 problem+json, TLS with HTTP/2, health, Prometheus metrics, and the stream
// handlers that negotiate a framing and write the frames a stream.Session produces
// (docs/design.md, "Packages and who owns what").
package api

import (
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ducktail/ducktail/ingest"
	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// Defaults for Config fields left zero.
const (
	DefaultMaxBodyBytes       = 256 << 20
	DefaultMaxIngestBytes     = 1 << 30
	DefaultMaxQueryBodyBytes  = 1 << 20
	DefaultStreamWriteTimeout = 30 * time.Second
	DefaultRateLimit          = 500
	DefaultRateBurst          = 1000
	DefaultMaxSnapshots       = 6
	DefaultMaxQueries         = 6
)

// Config configures a Server.
type Config struct {
	// MaxBodyBytes limits an ingest body (413 past it).
	MaxBodyBytes int64
	// MaxIngestBytes bounds the bytes all ingest requests in flight hold together: their
	// bodies and what the Arrow and Parquet readers allocate decoding them; past it 503
	// with Retry-After. It is at least MaxBodyBytes.
	MaxIngestBytes int64
	// MaxQueryBodyBytes limits other JSON request bodies (413 past it).
	MaxQueryBodyBytes int64
	// StreamWriteTimeout is the deadline of each write to a stream, set through
	// http.ResponseController so that the server-wide WriteTimeout never cuts a stream.
	StreamWriteTimeout time.Duration
	// CORSOrigins lists the browser origins allowed to call the API ("https://a.example");
	// "*" allows any. Requests from other origins get no CORS headers, and their stream
	// requests get 403.
	CORSOrigins []string
	// RateLimit is each token's sustained request rate per second, RateBurst its burst;
	// past them requests get 429 with Retry-After. A negative RateLimit disables it.
	RateLimit float64
	RateBurst int
	// MaxSnapshots bounds the table snapshots served at once; past it 503 with
	// Retry-After. Keep it below the store's ReadConns, so that queries and stream
	// resumes always find a reader connection.
	MaxSnapshots int
	// MaxQueries bounds the queries run at once; past it 503 with Retry-After. Keep
	// MaxSnapshots + MaxQueries below the store's ReadConns, so that stream resumes
	// always find a reader connection.
	MaxQueries int
	// Logger defaults to slog.Default() with component=api.
	Logger *slog.Logger
	// Registry receives the server's Prometheus metrics; nil makes a new registry.
	Registry *prometheus.Registry
}

// Server is the ducktail HTTP API. It implements http.Handler.
type Server struct {
	cfg     Config
	db      *store.DB // nil on a stream node (NewStreamNode)
	backend Backend
	proxy   http.Handler     // a stream node's proxy to its writer (NewStreamNode)
	shapes  snapshot.Querier // a stream node's shape compiler (NewStreamNode)
	hub     *stream.Hub
	reader  *snapshot.Reader
	codec   *store.Cursors
	log     *slog.Logger
	metrics *metrics
	limits  *tokenLimiters
	router  chi.Router
	// ingestMemory is charged with the buffer of every ingest body held (readBody) and
	// with what the Arrow and Parquet readers allocate decoding it (ingest.Request.Memory).
	ingestMemory *ingest.MemoryBudget
	// snapshots and queries hold a token per table snapshot or query being served.
	snapshots chan struct{}
	queries   chan struct{}
	// methods lists the methods of each route pattern, for the Allow header of 405s.
	methods map[string][]string
}

var _ http.Handler = (*Server)(nil)

// NewServer returns the API over db, hub and reader, with cfg's zero fields defaulted.
func NewServer(cfg Config, db *store.DB, hub *stream.Hub, reader *snapshot.Reader) *Server {
	s := newServer(cfg, hub, db)
	s.db, s.reader, s.codec = db, reader, db.Cursors()
	s.router = s.routes()
	s.walkMethods()
	return s
}

// newServer returns the parts of a Server that the writer and a stream node share, with
// cfg's zero fields defaulted; db is nil on a stream node.
func newServer(cfg Config, hub *stream.Hub, backend Backend) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxIngestBytes <= 0 {
		cfg.MaxIngestBytes = DefaultMaxIngestBytes
	}
	cfg.MaxIngestBytes = max(cfg.MaxIngestBytes, cfg.MaxBodyBytes)
	if cfg.MaxQueryBodyBytes <= 0 {
		cfg.MaxQueryBodyBytes = DefaultMaxQueryBodyBytes
	}
	if cfg.StreamWriteTimeout <= 0 {
		cfg.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = DefaultRateLimit
	}
	if cfg.RateBurst <= 0 {
		cfg.RateBurst = DefaultRateBurst
	}
	if cfg.MaxSnapshots <= 0 {
		cfg.MaxSnapshots = DefaultMaxSnapshots
	}
	if cfg.MaxQueries <= 0 {
		cfg.MaxQueries = DefaultMaxQueries
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default().With("component", "api")
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	db, _ := backend.(*store.DB)
	bodies := ingest.NewMemoryBudget(cfg.MaxIngestBytes)
	return &Server{
		cfg: cfg, backend: backend, hub: hub, log: cfg.Logger,
		metrics:      newMetrics(cfg.Registry, db, hub, bodies),
		limits:       newTokenLimiters(cfg.RateLimit, cfg.RateBurst),
		ingestMemory: bodies,

		snapshots: make(chan struct{}, cfg.MaxSnapshots),
		queries:   make(chan struct{}, cfg.MaxQueries),
	}
}

// walkMethods records the methods of each route, for the Allow header of 405s.
func (s *Server) walkMethods() {
	s.methods = map[string][]string{}
	chi.Walk(s.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		route = strings.TrimSuffix(route, "/")
		s.methods[route] = append(s.methods[route], method)
		slices.Sort(s.methods[route])
		return nil
	})
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(s.requestLog, s.cors())
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	r.Handle("/metrics", s.metricsHandler())
	r.Get("/openapi.json", s.openAPI)
	r.Get("/stream/{token}", s.streamByPathToken)
	r.Mount("/ui", s.ui())
	r.Route("/v1", func(r chi.Router) {
		r.Use(s.authenticate)
		r.Post("/tokens", s.createToken)
		r.Get("/tokens", s.listTokens)
		r.Delete("/tokens/{id}", s.revokeToken)
		r.Post("/query", s.query)
		r.Get("/tables", s.listTables)
		r.Post("/tables", s.createTable)
		r.Route("/tables/{table}", func(r chi.Router) {
			r.Get("/", s.describeTable)
			r.Delete("/", s.dropTable)
			r.Post("/reset", s.resetTable)
			r.Post("/rows", s.ingest)
			r.Get("/snapshot", s.tableSnapshot)
			r.Get("/stream", s.streamByBearer)
			r.Post("/columns", s.addColumn)
			r.Patch("/columns/{column}", s.renameColumn)
			r.Delete("/columns/{column}", s.dropColumn)
		})
	})
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, store.Errorf(store.CodeNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		// RFC 9110 §15.5.6: a 405 lists the methods the resource supports.
		allowed := s.methods[routePattern(req)]
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		s.writeError(w, req, store.Errorf(store.CodeMethodNotAllowed, "%s is not allowed here; use %s", req.Method, strings.Join(allowed, " or ")))
	})
	return r
}

// retryAfterSeconds is the Retry-After sent with refusals a later retry may cure
// (store.CodeUnavailable, store.CodeTooManyStreams) that carry no delay of their own: the
// hub's reconnect delay with the same jitter as its reconnect events (up to the delay
// again), rounded up to whole seconds (RFC 9110, section 10.2.3), so that clients refused
// together do not all come back together.
func (s *Server) retryAfterSeconds() int {
	return int(max((s.hub.RetryMS()+999)/1000, 1))
}

// pathParam returns the route parameter key of r, percent-decoded: chi hands over the
// raw segment when the path held an escape, and a column named "km/h" travels as
// "km%2Fh".
func pathParam(r *http.Request, key string) string {
	raw := chi.URLParam(r, key)
	if v, err := url.PathUnescape(raw); err == nil {
		return v
	}
	return raw
}
