package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/ducktail/ducktail/api"
	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/stream"
)

// addStoreFlags binds the store's limits; docs/operations.md lists every flag.
func addStoreFlags(f *pflag.FlagSet, db *store.DB) {
	f.StringVar(&db.MemoryLimit, "memory-limit", "", "DuckDB memory_limit, e.g. 4GB (default: DuckDB's, 80% of RAM)")
	f.IntVar(&db.Threads, "threads", 0, "DuckDB threads (default: one per core)")
	f.IntVar(&db.ReadConns, "read-conns", db.ReadConns, "concurrent read transactions (snapshots, queries, replays)")
	f.Int64Var(&db.CheckpointBytes, "checkpoint-bytes", db.CheckpointBytes, "size of DuckDB's WAL file that makes the writer checkpoint (the WAL stays under twice it)")
	f.Int64Var(&db.CheckpointCommits, "checkpoint-commits", db.CheckpointCommits, "commits since the last checkpoint that make the writer checkpoint (bounds the WAL replay after a crash)")
	f.DurationVar(&db.CommitDelay, "commit-delay", db.CommitDelay, "how long the writer waits at most for the commits it expects to join a group commit: one for each commit of the last group whose connection came back within this long (0: never)")
}

func addStreamFlags(f *pflag.FlagSet, h *stream.Hub) {
	f.DurationVar(&h.HeartbeatInterval, "heartbeat-interval", h.HeartbeatInterval, "heartbeat after this long without an event")
	f.DurationVar(&h.IdleTimeout, "idle-timeout", h.IdleTimeout, "end a stream with no schema or batch event for this long (0: never)")
	f.DurationVar(&h.MaxStreamAge, "max-stream-age", h.MaxStreamAge, "end every stream after this long, minus up to 10% jitter (0: never)")
	f.IntVar(&h.MaxBufferedBatches, "max-buffered-batches", h.MaxBufferedBatches, "events each table's live log keeps; a subscriber further behind is evicted (reconnect, slow_consumer)")
	f.Int64Var(&h.MaxBufferedBytes, "max-buffered-bytes", h.MaxBufferedBytes, "commit bytes each table's live log keeps; a subscriber further behind is evicted")
	f.Int64Var(&h.MaxReplayCommits, "max-replay-commits", h.MaxReplayCommits, "commits one resume may replay (past it: refresh-required, replay_limit)")
	f.Int64Var(&h.MaxReplayRows, "max-replay-rows", h.MaxReplayRows, "rows one resume may replay")
	f.Int64Var(&h.MaxReplayBytes, "max-replay-bytes", h.MaxReplayBytes, "bytes of replayed frames all resumed streams hold together (shared by streams replaying the same commits); past it a stream ends with reconnect replay_capacity")
	f.Int64Var(&h.ReplayRate, "replay-rate", h.ReplayRate, "bytes per second all resumed streams replay together while more than four replay at once, so that a storm of replays leaves the writer its share of the CPU (0: no limit)")
	f.IntVar(&h.MaxStreams, "max-streams", h.MaxStreams, "open streams admitted (past it: 503 with Retry-After)")
	f.IntVar(&h.MaxStreamsPerToken, "max-streams-per-token", h.MaxStreamsPerToken, "open streams per token (past it: 429)")
	f.DurationVar(&h.Retry, "retry", h.Retry, "base reconnect delay sent to clients, plus up to as much jitter")
}

func addReaderFlags(f *pflag.FlagSet, r *snapshot.Reader) {
	f.DurationVar(&r.QueryTimeout, "query-timeout", r.QueryTimeout, "time limit of one query (cancelled past it)")
	f.Int64Var(&r.MaxResultBytes, "max-result-bytes", r.MaxResultBytes, "encoded size limit of one query result")
}

func addAPIFlags(f *pflag.FlagSet, c *api.Config) {
	f.Int64Var(&c.MaxBodyBytes, "max-body-bytes", api.DefaultMaxBodyBytes, "size limit of one ingest request body (413 past it)")
	f.Int64Var(&c.MaxIngestBytes, "max-ingest-bytes", api.DefaultMaxIngestBytes, "bytes all ingest requests in flight hold at once, their bodies and the memory decoding Arrow and Parquet bodies takes, at least --max-body-bytes (503 with Retry-After past it)")
	f.DurationVar(&c.StreamWriteTimeout, "stream-write-timeout", api.DefaultStreamWriteTimeout, "deadline of each write to a stream or snapshot")
	f.StringSliceVar(&c.CORSOrigins, "cors-origin", nil, "browser origin allowed to call the API and open streams (repeatable; * for any)")
	f.Float64Var(&c.RateLimit, "rate-limit", api.DefaultRateLimit, "requests per second per token (negative: unlimited)")
	f.IntVar(&c.RateBurst, "rate-burst", api.DefaultRateBurst, "request burst per token")
	f.IntVar(&c.MaxSnapshots, "max-snapshots", api.DefaultMaxSnapshots, "table snapshots served at once (past it: 503 with Retry-After)")
	f.IntVar(&c.MaxQueries, "max-queries", api.DefaultMaxQueries, "queries run at once (past it: 503 with Retry-After); keep --max-snapshots + --max-queries below --read-conns")
}

// newLogger returns a slog logger writing to w at level in format text or json.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// signalContext is cancelled by the next SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
