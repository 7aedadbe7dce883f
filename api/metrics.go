package api

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ducktail/ducktail/ingest"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// metrics holds the server's Prometheus collectors, all named ducktail_*.
type metrics struct {
	registry *prometheus.Registry

	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	problems        *prometheus.CounterVec
	authFailures    *prometheus.CounterVec

	ingestCommits  prometheus.Counter
	ingestRows     prometheus.Counter
	ingestBytes    prometheus.Counter
	ingestRejects  *prometheus.CounterVec
	ingestDuration prometheus.Histogram

	queries       prometheus.Counter
	queryRefusals *prometheus.CounterVec
	queryDuration prometheus.Histogram

	streamsActive  prometheus.Gauge
	streamRefusals *prometheus.CounterVec
	framesSent     *prometheus.CounterVec
	// dataFrames are framesSent's counters of the events every delivery sends, looked
	// up once: a label lookup per frame is a measurable share of a delivery's CPU.
	dataFrames    map[string]prometheus.Counter
	bytesSent     prometheus.Counter
	streamEnds    *prometheus.CounterVec
	commitToWrite prometheus.Histogram
	replayCommits prometheus.Histogram
}

// latencyBuckets span 100 µs to 10 s.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2.5, 12)

func newMetrics(reg *prometheus.Registry, db *store.DB, hub *stream.Hub, bodies *ingest.MemoryBudget) *metrics {
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	m := &metrics{
		registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ducktail_http_requests_total",
			Help: "HTTP requests by method, route pattern and status."}, []string{"method", "route", "status"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ducktail_http_request_duration_seconds",
			Help: "HTTP request duration by route pattern (streams: their whole life).", Buckets: latencyBuckets}, []string{"route"}),
		problems: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ducktail_http_problems_total",
			Help: "Problem+json answers by status and code."}, []string{"status", "code"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ducktail_auth_failures_total",
			Help: "Refused tokens by reason: missing, malformed, unknown, expired, revoked, rate_limited."}, []string{"reason"}),
		ingestCommits: prometheus.NewCounter(prometheus.CounterOpts{Name: "ducktail_ingest_commits_total", Help: "Commits made by ingest requests."}),
		ingestRows:    prometheus.NewCounter(prometheus.CounterOpts{Name: "ducktail_ingest_rows_total", Help: "Rows committed by ingest requests."}),
		ingestBytes:   prometheus.NewCounter(prometheus.CounterOpts{Name: "ducktail_ingest_bytes_total", Help: "Request body bytes of committed ingest requests."}),
		ingestRejects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ducktail_ingest_rejects_total",
			Help: "Refused ingest requests by reason (error code)."}, []string{"reason"}),
		ingestDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ducktail_ingest_duration_seconds",
			Help: "Time from ingest request to acknowledged commit.", Buckets: latencyBuckets}),
		queries: prometheus.NewCounter(prometheus.CounterOpts{Name: "ducktail_queries_total", Help: "Queries answered."}),
		queryRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ducktail_query_refusals_total",
			Help: "Refused or failed queries by reason (error code)."}, []string{"reason"}),
		queryDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ducktail_query_duration_seconds",
			Help: "Time to answer a query, refused ones included.", Buckets: latencyBuckets}),
		replayCommits: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ducktail_stream_replay_commits",
			Help: "Commits replayed by one resumed stream.", Buckets: prometheus.ExponentialBuckets(1, 4, 10)}),
		streamsActive: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ducktail_streams_active", Help: "Open streams."}),
		streamRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ducktail_stream_refusals_total",
			Help: "Streams refused before they started, by reason: token, table, origin, scope, last_event_id, encoding, and the error code of a refusal by the hub (not_found, unavailable, too_many_streams)."}, []string{"reason"}),
		framesSent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ducktail_stream_frames_total",
			Help: "Stream events written, by event type."}, []string{"event"}),
		bytesSent: prometheus.NewCounter(prometheus.CounterOpts{Name: "ducktail_stream_bytes_total", Help: "Stream bytes written."}),
		streamEnds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ducktail_stream_terminal_events_total",
			Help: "Terminal stream events by event and reason: evictions (reconnect slow_consumer), refresh-required by reason, failures by code."}, []string{"event", "reason"}),
		commitToWrite: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ducktail_stream_commit_to_write_seconds",
			Help: "Time from a commit to the write of its live batch event to a subscriber.", Buckets: latencyBuckets}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.requestDuration, m.problems, m.authFailures,
		m.ingestCommits, m.ingestRows, m.ingestBytes, m.ingestRejects, m.ingestDuration,
		m.queries, m.queryRefusals, m.queryDuration, m.replayCommits, m.streamsActive, m.streamRefusals, m.framesSent, m.bytesSent, m.streamEnds, m.commitToWrite,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ducktail_ingest_memory_bytes",
			Help: "Bytes ingest requests in flight hold: their bodies' buffers and what the Arrow and Parquet readers allocated decoding them (at most --max-ingest-bytes)."},
			func() float64 { return float64(bodies.Held()) }),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	if db != nil { // a stream node has no store
		for _, c := range storeCollectors(db) {
			f(c)
		}
	}
	for _, c := range replayCollectors(hub) {
		f(c)
	}
	for _, c := range logCollectors(hub) {
		f(c)
	}
	m.dataFrames = map[string]prometheus.Counter{}
	for _, e := range []string{stream.EventBatch, stream.EventSchema, stream.EventHeartbeat} {
		m.dataFrames[e] = m.framesSent.WithLabelValues(e)
	}
	return m
}

// replayCollectors read the replay of resumed streams at each scrape (stream.Hub.ReplayStats).
func replayCollectors(hub *stream.Hub) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ducktail_stream_replays_active",
			Help: "Resumed streams whose replay is in progress."},
			func() float64 { return float64(hub.ReplayStats().Active) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ducktail_stream_replay_bytes",
			Help: "Bytes of replayed frames held for resumed streams, shared by those that replay the same commits (at most --max-replay-bytes)."},
			func() float64 { return float64(hub.ReplayStats().Bytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ducktail_stream_replay_read_commits_total",
			Help: "Commits replay read from the tables: once per commit for all the streams replaying it at about the same time."},
			func() float64 { return float64(hub.ReplayStats().Read) }),
	}
}

// logCollectors read the tables' live logs at each scrape (stream.Hub.LogStats): what they
// hold and how far behind the slowest live stream reads.
func logCollectors(hub *stream.Hub) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ducktail_stream_log_bytes",
			Help: "Bytes of commits the live logs of tables with subscribers hold (at most --max-buffered-bytes per table)."},
			func() float64 { return float64(hub.LogStats().Bytes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ducktail_stream_max_lag_events",
			Help: "Events the slowest live stream has yet to take from its table's log; past --max-buffered-batches it gets reconnect slow_consumer."},
			func() float64 { return float64(hub.LogStats().MaxLag) }),
	}
}

// storeCollectors read the store's resources at each scrape (store.DB.Stats): the WAL and
// its checkpoints, and DuckDB connection use.
func storeCollectors(db *store.DB) []prometheus.Collector {
	stat := func(v func(store.Stats) float64) func() float64 {
		return func() float64 { return v(db.Stats()) }
	}
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ducktail_store_wal_bytes",
			Help: "Size of DuckDB's write-ahead log file, as the writer last saw it."},
			stat(func(s store.Stats) float64 { return float64(s.WALBytes) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ducktail_store_checkpoints_total",
			Help: "CHECKPOINTs run by the writer, by result.", ConstLabels: prometheus.Labels{"result": "ok"}},
			stat(func(s store.Stats) float64 { return float64(s.Checkpoints) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ducktail_store_checkpoints_total",
			Help: "CHECKPOINTs run by the writer, by result.", ConstLabels: prometheus.Labels{"result": "failed"}},
			stat(func(s store.Stats) float64 { return float64(s.CheckpointsFailed) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ducktail_store_readers_busy",
			Help: "DuckDB read connections in use (snapshots, queries, replays)."},
			stat(func(s store.Stats) float64 { return float64(s.ReadersBusy) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ducktail_store_readers_max",
			Help: "DuckDB read connections at most (--read-conns)."},
			stat(func(s store.Stats) float64 { return float64(s.ReadConns) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ducktail_store_commits_total",
			Help: "Appends committed (each its own seq)."},
			stat(func(s store.Stats) float64 { return float64(s.Commits) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ducktail_store_commit_transactions_total",
			Help: "DuckDB transactions that committed appends: commits ÷ transactions is the mean group commit."},
			stat(func(s store.Stats) float64 { return float64(s.CommitTransactions) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ducktail_store_writer_queue",
			Help: "Writes (appends and catalog changes) waiting for the writer."},
			stat(func(s store.Stats) float64 { return float64(s.WriterQueue) })),
	}
}

// observeWrite counts the frames of one write: the frames by event, their bytes, the
// terminal events, and the commit-to-write latency of each live batch event, all of them
// written at the one time read here.
func (m *metrics) observeWrite(frames []stream.Frame) {
	var now time.Time
	var bytes, batches int
	for _, f := range frames {
		bytes += len(f.Bytes)
		switch c, ok := m.dataFrames[f.Event]; {
		case f.Event == stream.EventBatch:
			batches++
			if !f.Commit.Replayed && !f.Commit.CommittedAt.IsZero() {
				if now.IsZero() {
					now = time.Now()
				}
				m.commitToWrite.Observe(now.Sub(f.Commit.CommittedAt).Seconds())
			}
		case ok:
			c.Inc()
		default:
			m.framesSent.WithLabelValues(f.Event).Inc()
		}
		if f.Terminal {
			m.streamEnds.WithLabelValues(f.Event, f.Reason).Inc()
		}
	}
	if batches > 0 {
		m.dataFrames[stream.EventBatch].Add(float64(batches))
	}
	m.bytesSent.Add(float64(bytes))
}

// metricsHandler serves GET /metrics in the Prometheus text format.
func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{Registry: s.metrics.registry})
}
