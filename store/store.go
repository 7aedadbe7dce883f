// Package store owns ducktail's DuckDB database: the catalog (tables, activations, schema
// versions, the commit log, tokens at rest, the cursor key), the user tables, and the one
// writer that commits to them. It is the only package that imports the DuckDB driver, and
// it owns the vocabulary the packages above share: Commit, Position, Schema, Event and the
// coded Error (docs/design.md, "Packages and who owns what").
//
// Layout inside the DuckDB file (docs/design.md, "Storage model"):
//
//	ducktail_catalog.*     the catalog, created by package migrations
//	ducktail_data.a_<hex>  one physical table per activation: "__ducktail_seq" BIGINT,
//	                       then one column "c<id>" per column ever added
//	main.<table>           one view per user table selecting the current columns under
//	                       their current names: the only names user SQL can see
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/ducktail/ducktail/migrations"
)

// Defaults for DB fields left zero.
const (
	// DefaultReadConns bounds concurrent read transactions (snapshots, queries, replays).
	DefaultReadConns = 16
	// DefaultCheckpointBytes is the size of the write-ahead log file that makes the writer
	// checkpoint (checkpoint.go): a WAL of bulk commits replays at about 21 ms per MiB, so
	// twice this is about 1.4 s of restart; DuckDB's own automatic checkpoint is pushed
	// above it, because it stalls the committing transaction (docs/design.md, "Measured
	// facts about DuckDB").
	DefaultCheckpointBytes = 32 << 20
	// DefaultCheckpointCommits is how many commits since the last checkpoint make the
	// writer checkpoint: restart replays 0.1 to 0.2 ms per small commit on a 2-core
	// machine, so twice this bounds the replay after a kill -9 to under 2 s.
	DefaultCheckpointCommits = 4096
	// DefaultIdleCheckpoint is how long the writer waits idle before it folds a non-empty
	// write-ahead log.
	DefaultIdleCheckpoint = time.Second
	// DefaultMaxGroupCommits bounds how many queued appends one DuckDB transaction takes
	// (group commit).
	DefaultMaxGroupCommits = 256
	// DefaultMaxGroupRows bounds the rows one group-commit transaction takes.
	DefaultMaxGroupRows = 1 << 20
	// DefaultCommitDelay is how long the writer waits at most for the appends it expects
	// to join a group commit (CommitDelay). Measured on the project's 2-core machine with 8
	// clients of 1-row commits and 100 subscribers, expecting back the writers that come
	// back within 2 ms took the mean group from 4.2 to 7.6–7.8 commits, the deliveries per
	// second from 185k to 208k–224k and the server's CPU per delivery from 6.9 to 5.0–5.4 µs
	// (runs of the old and new writer in turn), with a lower p50 (docs/benchmarks.md,
	// BenchmarkSaturation); at 64 clients the groups went from 30 to 50–53 commits and the
	// CPU per commit from 134–139 to 116–123 µs.
	DefaultCommitDelay = 2 * time.Millisecond
)

// SeqColumn is the system column of every physical table holding the commit sequence of
// its row. Users never see it (docs/design.md, "Storage model").
const SeqColumn = ReservedPrefix + "_seq"

// DB is the ducktail store. Set the exported fields, then call Open; Close undoes Open.
// All methods are safe for concurrent use.
type DB struct {
	// Path is the DuckDB database file, or ":memory:" for tests.
	Path string
	// MemoryLimit is DuckDB's memory_limit ("4GB"); empty leaves DuckDB's default.
	MemoryLimit string
	// Threads is DuckDB's thread count; 0 leaves DuckDB's default (one per core).
	Threads int
	// ReadConns bounds concurrent read transactions; 0 means DefaultReadConns.
	ReadConns int
	// CheckpointBytes is the write-ahead log size, in bytes, that makes the writer
	// checkpoint; 0 means DefaultCheckpointBytes. The log stays under twice it plus one
	// group commit (checkpoint.go).
	CheckpointBytes int64
	// CheckpointCommits is how many commits since the last checkpoint make the writer
	// checkpoint; 0 means DefaultCheckpointCommits.
	CheckpointCommits int64
	// IdleCheckpoint is how long the writer is idle before it folds a non-empty log; 0
	// means DefaultIdleCheckpoint.
	IdleCheckpoint time.Duration
	// MaxGroupCommits and MaxGroupRows bound one group commit; 0 means the defaults.
	MaxGroupCommits int
	MaxGroupRows    int64
	// CommitDelay is how long the writer waits at most for the appends it expects to join
	// a group commit: one for each append of the group it answered less than CommitDelay
	// ago that its writer (Batch.Writer) had sent within CommitDelay of the writer's
	// previous answer (a client that sends its next append once the last one is
	// acknowledged; one HTTP/2 connection may carry several such clients), as
	// PostgreSQL's commit_delay waits only when other transactions are active. Each commit
	// of a group shares its DuckDB transaction and fsync. The wait ends as soon as they
	// came, the group is full or a catalog change is queued; a lone writer, a writer that
	// pauses between appends and an append without a Writer are never waited for. 0
	// disables it; NewDB sets DefaultCommitDelay.
	CommitDelay time.Duration
	// Publisher receives every durable change in commit order; nil publishes nothing.
	// Set it before Open.
	Publisher Publisher
	// Logger defaults to slog.Default() with component=store.
	Logger *slog.Logger
	// Now returns the current time; tests may replace it. Defaults to time.Now.
	Now func() time.Time

	connector *duckdb.Connector
	sqlDB     *sql.DB
	writer    *writer
	cursors   *Cursors
	shaper    ShapeEngine // the shape engine (shaper.go)

	stats storeStats

	// commitMu is held by the writer around each COMMIT and the in-memory catalog update
	// after it, and shared by a read transaction while it fixes its snapshot (pinSnapshot).
	commitMu sync.RWMutex
	// unlogged are the commit-log rows of committed commits not yet written to the
	// commit log, in commit order (unlogged.go); the writer changes them under commitMu.
	unlogged []commitLogRow
	mu       sync.RWMutex
	tables   map[string]*table // by lower-case name, live tables only
	tokens   map[string]Token  // by token id

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewDB returns a DB for the database file at path with defaults filled in.
func NewDB(path string) *DB {
	return &DB{
		Path:              path,
		ReadConns:         DefaultReadConns,
		CheckpointBytes:   DefaultCheckpointBytes,
		CheckpointCommits: DefaultCheckpointCommits,
		IdleCheckpoint:    DefaultIdleCheckpoint,
		MaxGroupCommits:   DefaultMaxGroupCommits,
		MaxGroupRows:      DefaultMaxGroupRows,
		CommitDelay:       DefaultCommitDelay,
		Logger:            slog.Default().With("component", "store"),
		Now:               time.Now,
	}
}

// Open opens (or creates) the database, locks its configuration against file and network
// access, applies catalog migrations, loads the catalog and starts the writer. It fails
// when Path is empty, and when the catalog is dirty (migrations.ErrDirty), naming the
// version.
func (db *DB) Open(ctx context.Context) (err error) {
	if db.Path == "" {
		return errors.New(`store: Open: Path is empty (name a database file, or ":memory:")`)
	}
	if strings.ContainsAny(db.Path, "?#") {
		// duckdb-go takes the file name up to the first '?' and the settings from the DSN
		// parsed as a URL: a '#' would make the settings a fragment, and DuckDB would
		// open the file without them (external access allowed included).
		return fmt.Errorf("store: Open: %s: a database path cannot hold '?' or '#' (they delimit DuckDB's settings); move the data directory", db.Path)
	}
	if db.Logger == nil {
		db.Logger = slog.Default().With("component", "store")
	}
	if db.Now == nil {
		db.Now = time.Now
	}
	if db.ReadConns <= 0 {
		db.ReadConns = DefaultReadConns
	}
	if db.CheckpointBytes <= 0 {
		db.CheckpointBytes = DefaultCheckpointBytes
	}
	if db.CheckpointCommits <= 0 {
		db.CheckpointCommits = DefaultCheckpointCommits
	}
	if db.IdleCheckpoint <= 0 {
		db.IdleCheckpoint = DefaultIdleCheckpoint
	}
	if db.MaxGroupCommits <= 0 {
		db.MaxGroupCommits = DefaultMaxGroupCommits
	}
	if db.MaxGroupRows <= 0 {
		db.MaxGroupRows = DefaultMaxGroupRows
	}
	if db.Publisher == nil {
		db.Publisher = nopPublisher{}
	}
	walBefore, err := db.walSizeBeforeOpen()
	if err != nil {
		return err
	}
	opening := time.Now()
	db.connector, err = duckdb.NewConnector(db.dsn(), nil)
	if err != nil {
		return fmt.Errorf("open %s: %w", db.Path, err)
	}
	db.sqlDB = sql.OpenDB(db.connector)
	defer func() {
		if err != nil {
			db.sqlDB.Close()
		}
	}()
	// One writer connection plus ReadConns readers; idle readers stay open.
	db.sqlDB.SetMaxOpenConns(db.ReadConns + 1)
	db.sqlDB.SetMaxIdleConns(db.ReadConns + 1)
	if walBefore > 0 {
		if err := db.checkReplayedWAL(ctx, walBefore, time.Since(opening)); err != nil {
			return err
		}
	}
	if err := db.lockConfiguration(ctx); err != nil {
		return err
	}
	if err := migrations.Up(db.sqlDB); err != nil {
		return fmt.Errorf("open %s: %w", db.Path, err)
	}
	if err := db.loadSettings(ctx); err != nil {
		return err
	}
	if err := db.recoverCommitLog(ctx); err != nil {
		return err
	}
	if err := db.loadCatalog(ctx); err != nil {
		return err
	}
	if err := db.loadTokens(ctx); err != nil {
		return err
	}
	db.ctx, db.cancel = context.WithCancel(context.Background())
	db.writer, err = newWriter(ctx, db)
	if err != nil {
		return err
	}
	db.wg.Add(1)
	go func() {
		defer db.wg.Done()
		db.writer.run(db.ctx)
	}()
	return nil
}

// Close stops the writer (queued writes fail with ErrClosed), checkpoints, and closes the
// database. Readers still running get errors from DuckDB.
func (db *DB) Close() error {
	if db.cancel == nil {
		return nil
	}
	db.cancel()
	db.wg.Wait()
	var errs []error
	if _, err := db.sqlDB.ExecContext(context.Background(), "CHECKPOINT"); err != nil {
		errs = append(errs, fmt.Errorf("checkpoint: %w", err))
	}
	errs = append(errs, db.writer.close(), db.sqlDB.Close(), db.shaper.Close())
	return errors.Join(errs...)
}

// dsn builds the DuckDB DSN. enable_external_access=false must be set when the database
// is created: it applies to the whole database and cannot be set per connection
// (docs/design.md, "Measured facts about DuckDB"). DuckDB's own checkpoint threshold is pushed far above
// CheckpointBytes so that checkpoints happen off the commit path.
func (db *DB) dsn() string {
	q := url.Values{}
	q.Set("enable_external_access", "false")
	q.Set("autoinstall_known_extensions", "false")
	q.Set("autoload_known_extensions", "false")
	q.Set("checkpoint_threshold", strconv.FormatInt(4*db.CheckpointBytes, 10)+"B")
	if db.MemoryLimit != "" {
		q.Set("memory_limit", db.MemoryLimit)
	}
	if db.Threads > 0 {
		q.Set("threads", strconv.Itoa(db.Threads))
	}
	return db.Path + "?" + q.Encode()
}

// lockConfiguration pins the session time zone to UTC (the ICU extension, which owns the
// TimeZone setting, is not loaded when the DSN is applied, so it cannot go there) and then
// locks the configuration database-wide, so that user SQL can change no setting at all.
func (db *DB) lockConfiguration(ctx context.Context) error {
	for _, stmt := range []string{
		"SET GLOBAL TimeZone = " + quoteString(TimeZone),
		"SET GLOBAL lock_configuration = true",
	} {
		if _, err := db.sqlDB.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("open %s: %s: %w", db.Path, stmt, err)
		}
	}
	return nil
}

func (db *DB) checkOpen() error {
	if db.ctx == nil || db.ctx.Err() != nil {
		return ErrClosed
	}
	return nil
}

// Ping checks that the database answers a query. Errors: ErrClosed, DuckDB's.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	var one int
	return db.sqlDB.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}
