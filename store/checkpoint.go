package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"
)

// The checkpoint policy. DuckDB appends every commit to the write-ahead log (the file
// Path + ".wal") and folds the log into the database file at a CHECKPOINT; after a kill -9
// it replays the whole log before the database opens, at 0.1 to 0.2 ms per small commit
// on the project's 2-core machine (docs/design.md, "Measured facts about DuckDB"). So the
// writer checkpoints on what the log holds, not on row bytes:
//
//   - when the log file reaches CheckpointBytes, or CheckpointCommits commits were
//     made since the last checkpoint, at the first moment no write is queued, or at once
//     when twice either bound is reached with writes still queued;
//   - when the writer has been idle for IdleCheckpoint and the log is not empty.
//
// So the log stays under 2 × CheckpointBytes plus one group commit, and restart replays
// at most 2 × CheckpointCommits commits. A checkpoint fails only while a read transaction
// older than an UPDATE of a catalog row is open (only catalog changes UPDATE rows; see
// ReadTx.pinSnapshot); it is retried every checkpointRetry, counted in Stats, and logged
// when the failures start, every checkpointLogEvery while they last, and when they end.
const (
	checkpointRetry    = time.Second
	checkpointLogEvery = time.Minute
)

// checkpointState is the writer's bookkeeping for the checkpoint policy.
type checkpointState struct {
	commits   int64     // commits and catalog changes since the last checkpoint
	nextTry   time.Time // after a failure, the earliest time to try again
	failures  int       // consecutive failures
	loggedAt  time.Time // when the current run of failures was last logged
	firstFail time.Time // when the current run of failures started
}

// noteCommitted counts n commits towards the next checkpoint.
func (w *writer) noteCommitted(n int64) { w.checkpoints.commits += n }

// maybeCheckpoint runs CHECKPOINT when the policy above says it is due. idle says that the
// writer has had nothing to do for IdleCheckpoint.
func (w *writer) maybeCheckpoint(ctx context.Context, idle bool) {
	db, st := w.db, &w.checkpoints
	wal := db.walSize()
	db.stats.walBytes.Store(wal)
	over := wal >= db.CheckpointBytes || st.commits >= db.CheckpointCommits
	urgent := wal >= 2*db.CheckpointBytes || st.commits >= 2*db.CheckpointCommits
	switch {
	case wal <= 0 && st.commits == 0:
		return
	case !over && !(idle && (wal > 0 || st.commits > 0)):
		return
	case !urgent && !idle && len(w.ops) > 0:
		return
	case db.Now().Before(st.nextTry):
		return
	}
	start := db.Now()
	_, err := w.conn.ExecContext(ctx, "CHECKPOINT "+QuoteIdent(w.database))
	if err != nil {
		db.stats.checkpointsFailed.Add(1)
		db.setCheckpointError(err.Error())
		st.nextTry = start.Add(checkpointRetry)
		if st.failures == 0 {
			st.firstFail = start
		}
		st.failures++
		if st.failures == 1 || start.Sub(st.loggedAt) >= checkpointLogEvery {
			st.loggedAt = start
			db.Logger.LogAttrs(ctx, slog.LevelWarn, "checkpoint could not run; retrying",
				slog.String("reason", err.Error()), slog.Int("attempts", st.failures),
				slog.Int64("wal_bytes", wal), slog.Duration("failing_for", start.Sub(st.firstFail)))
		}
		return
	}
	db.stats.checkpoints.Add(1)
	db.setCheckpointError("")
	after := db.walSize()
	db.stats.walBytes.Store(after)
	if st.failures > 0 {
		db.Logger.LogAttrs(ctx, slog.LevelInfo, "checkpoint ran again",
			slog.Int("failed_attempts", st.failures), slog.Duration("failed_for", start.Sub(st.firstFail)),
			slog.Int64("wal_bytes_before", wal))
	}
	if db.Logger.Enabled(ctx, slog.LevelDebug) {
		db.Logger.LogAttrs(ctx, slog.LevelDebug, "checkpoint", slog.Int64("wal_bytes_before", wal),
			slog.Int64("commits", st.commits), slog.Duration("duration", db.Now().Sub(start)))
	}
	*st = checkpointState{}
}

// walPath is the file DuckDB keeps the write-ahead log of Path in, or "" for an in-memory
// database.
func (db *DB) walPath() string {
	if db.Path == "" || db.Path == ":memory:" {
		return ""
	}
	return db.Path + ".wal"
}

// walSize returns the size of the write-ahead log file in bytes: 0 when there is none.
func (db *DB) walSize() int64 {
	p := db.walPath()
	if p == "" {
		return 0
	}
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// walProbe is one write whose log entry has the same size each time it is made. main is
// used because the catalog schema may not exist yet; the view lives for one transaction,
// under the reserved prefix user names may not take.
const walProbe = "BEGIN TRANSACTION; CREATE VIEW main." + ReservedPrefix + "_wal_probe AS SELECT 1; DROP VIEW main." + ReservedPrefix + "_wal_probe; COMMIT"

// checkReplayedWAL runs right after DuckDB opened a database whose log held before bytes
// (it replayed them while opening). DuckDB stops replaying at a torn or corrupt entry and
// cuts the file there at its next write; two writes of the same size show where: the first
// starts at the end of what was replayed. A torn tail is a write that was in progress when
// the process died, so nothing acknowledged is in it (an ingest is answered after its
// COMMIT, and so after its log entry, was synced). It is logged as a warning with the sizes;
// then a checkpoint folds the replayed log, so the next start replays nothing.
func (db *DB) checkReplayedWAL(ctx context.Context, before int64, opened time.Duration) error {
	var sizes [2]int64
	for i := range sizes {
		if _, err := db.sqlDB.ExecContext(ctx, walProbe); err != nil {
			return fmt.Errorf("open %s: probe the replayed WAL: %w", db.Path, err)
		}
		sizes[i] = db.walSize()
	}
	replayed := sizes[0] - (sizes[1] - sizes[0])
	attrs := []slog.Attr{slog.Int64("wal_bytes_before", before), slog.Int64("wal_bytes_replayed", replayed),
		slog.Duration("open_duration", opened)}
	if replayed < before {
		db.Logger.LogAttrs(ctx, slog.LevelWarn, "the WAL ended in a torn write, which DuckDB dropped on replay "+
			"(a write in progress when the process died)", append(attrs, slog.Int64("torn_bytes", before-replayed))...)
	} else {
		db.Logger.LogAttrs(ctx, slog.LevelInfo, "replayed the WAL of an unclean shutdown", attrs...)
	}
	if _, err := db.sqlDB.ExecContext(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("open %s: checkpoint the replayed WAL: %w", db.Path, err)
	}
	return nil
}

// walSizeBeforeOpen returns the size of the log file before DuckDB opens the database, or
// 0 when there is none.
func (db *DB) walSizeBeforeOpen() (int64, error) {
	p := db.walPath()
	if p == "" {
		return 0, nil
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", db.Path, err)
	}
	return fi.Size(), nil
}
