package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Deferred commit-log rows (docs/design.md, "Storage model"). A transaction that touches
// a second table pays DuckDB's per-table work again (its local append, its WAL entry, its
// merge at COMMIT), whatever the rows: measured on the project's 2-core machine, the
// commit-log INSERT of a small group was about a seventh of the server's CPU per delivery
// at 100 subscribers. So the commit-log rows of commits that carry rows and no
// Idempotency-Key wait in memory (DB.unlogged) and are written with a later transaction's,
// at most maxUnloggedCommits of them and for at most maxUnloggedAge:
//
//   - a group that has a commit without rows or with a key, or that would exceed either
//     bound, writes the waiting rows with its own in its transaction;
//   - the writer writes them alone when it has been idle until the oldest reaches
//     maxUnloggedAge, before every catalog change, and when it stops. A CHECKPOINT
//     needs no write first: the rebuild reads the tables, not the WAL.
//
// So the commit log on disk is always a prefix of the commits in commit order, and a
// commit whose log row was not written yet has its rows in its table under its seq. A read
// transaction sees the waiting rows as of its snapshot (pinSnapshot copies them under
// commitMu, which the writer holds while it commits and updates them). After kill -9, Open
// rebuilds the missing rows from the tables (recoverCommitLog): rows and schema version
// exactly, bytes as an estimate and committed_at as the time of the rebuild. Keyed
// commits are never deferred, so an idempotent retry always finds its first commit on disk.
const (
	maxUnloggedCommits = 64
	maxUnloggedAge     = 250 * time.Millisecond
)

// deferLog reports whether rows, the commit-log rows of a group about to commit, can
// wait in DB.unlogged instead of being written in the group's transaction.
func (w *writer) deferLog(rows []commitLogRow) bool {
	waiting := w.db.unlogged
	if len(waiting)+len(rows) > maxUnloggedCommits {
		return false
	}
	if len(waiting) > 0 && len(rows) > 0 && rows[0].committedAt.Sub(waiting[0].committedAt) >= maxUnloggedAge {
		return false
	}
	for _, r := range rows {
		if r.key != "" || r.rows == 0 {
			return false
		}
	}
	return true
}

// idleWait is how long the idle writer waits for an op: until the oldest waiting
// commit-log row reaches maxUnloggedAge (forLog) when that comes before IdleCheckpoint.
func (w *writer) idleWait() (wait time.Duration, forLog bool) {
	if len(w.db.unlogged) == 0 {
		return w.db.IdleCheckpoint, false
	}
	wait = max(maxUnloggedAge-w.db.Now().Sub(w.db.unlogged[0].committedAt), 0)
	if wait >= w.db.IdleCheckpoint {
		return w.db.IdleCheckpoint, false
	}
	return wait, true
}

// unloggedDue reports whether the oldest waiting commit-log row is maxUnloggedAge old.
func (w *writer) unloggedDue() bool {
	return len(w.db.unlogged) > 0 && w.db.Now().Sub(w.db.unlogged[0].committedAt) >= maxUnloggedAge
}

// logUnlogged updates DB.unlogged after a transaction committed: the group's rows wait
// when deferred, and every waiting row was written when not. The writer calls it under
// commitMu.
func (db *DB) logUnlogged(rows []commitLogRow, deferred bool) {
	if deferred {
		// Appending past a reader's length never touches the elements it holds.
		db.unlogged = append(db.unlogged, rows...)
		return
	}
	// A new array next time: readers may hold this one.
	db.unlogged = nil
}

// writeUnlogged writes the waiting commit-log rows in a transaction of their own. ctx
// may be cancelled: the writer's stop writes them too. On failure the rows keep waiting
// (the next group writes them) and the error is returned.
func (w *writer) writeUnlogged(ctx context.Context) error {
	if len(w.db.unlogged) == 0 {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	if err := w.begin(ctx); err != nil {
		return err
	}
	tx := &writeTx{conn: w.conn}
	if err := w.writeCommitLog(slices.Clone(w.db.unlogged)); err != nil {
		w.rollback(tx)
		return err
	}
	return w.commit(ctx, tx, func() { w.db.logUnlogged(nil, false) })
}

// unloggedCommits returns the waiting commit-log rows of activation id for
// after < seq ≤ through as of tx's snapshot, in seq order: all of them come after every
// row of the activation on disk.
func (tx *ReadTx) unloggedCommits(id uuid.UUID, after, through int64) []CommitInfo {
	var out []CommitInfo
	for _, r := range tx.unlogged {
		if r.activation == id && r.seq > after && r.seq <= through {
			out = append(out, CommitInfo{Seq: r.seq, SchemaVersion: int(r.version), Rows: r.rows, Bytes: r.bytes, CommittedAt: r.committedAt})
		}
	}
	return out
}

// recoverCommitLog writes the commit-log rows a kill -9 lost while they waited
// (unlogged.go's rule): for each live activation, the seqs its table holds past the last
// one its commit log has. Rows and schema version are exact; bytes is the rows times the
// activation's mean bytes per row on disk, or 8 bytes per stored column when that is less
// (as when every logged commit was empty; bytes only sizes replay's reads), and
// committed_at the time of the rebuild. It runs at every Open, one query per live table
// that finds nothing after a clean stop, and logs and checkpoints what it rebuilt.
func (db *DB) recoverCommitLog(ctx context.Context) error {
	type live struct {
		tableID    int64
		activation uuid.UUID
		physical   string
		last       int64
		perRow     int64
	}
	var acts []live
	q, err := db.sqlDB.QueryContext(ctx, `
		SELECT t.id, a.id::VARCHAR, a.physical,
		       coalesce(max(c.seq), 0),
		       greatest(coalesce(sum(c.bytes) // nullif(sum(c.rows), 0), 0),
		                8 * (SELECT count(*) FROM duckdb_columns() k
		                     WHERE k.schema_name = 'ducktail_data' AND k.table_name = a.physical))::BIGINT
		FROM ducktail_catalog.tables t
		JOIN ducktail_catalog.activations a ON a.id = t.activation
		LEFT JOIN ducktail_catalog.commits c ON c.activation = a.id
		WHERE t.dropped_at IS NULL
		GROUP BY t.id, a.id, a.physical`)
	if err != nil {
		return fmt.Errorf("recover the commit log: %w", err)
	}
	for q.Next() {
		var l live
		var act string
		if err := q.Scan(&l.tableID, &act, &l.physical, &l.last, &l.perRow); err != nil {
			q.Close()
			return fmt.Errorf("recover the commit log: %w", err)
		}
		if l.activation, err = uuid.Parse(act); err != nil {
			q.Close()
			return fmt.Errorf("recover the commit log: %w", err)
		}
		acts = append(acts, l)
	}
	q.Close()
	if err := q.Err(); err != nil {
		return fmt.Errorf("recover the commit log: %w", err)
	}
	now := db.Now().UTC()
	var rows []commitLogRow
	for _, l := range acts {
		found, err := db.unloggedSeqs(ctx, l.activation, l.physical, l.last)
		if err != nil {
			return fmt.Errorf("recover the commit log of table %d: %w", l.tableID, err)
		}
		for _, f := range found {
			rows = append(rows, commitLogRow{tableID: l.tableID, activation: l.activation, seq: f.seq,
				version: f.version, rows: f.rows, bytes: f.rows * l.perRow, committedAt: now})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	tx, err := db.sqlDB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("recover the commit log: %w", err)
	}
	defer tx.Rollback()
	for _, r := range rows {
		if _, err := tx.ExecContext(ctx, `INSERT INTO ducktail_catalog.commits
			(table_id, activation, seq, schema_version, rows, bytes, committed_at) VALUES (?, ?::UUID, ?, ?, ?, ?, ?)`,
			r.tableID, r.activation.String(), r.seq, r.version, r.rows, r.bytes, r.committedAt); err != nil {
			return fmt.Errorf("recover the commit log: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("recover the commit log: %w", err)
	}
	// Folded at once, as the replayed WAL was (checkReplayedWAL): the next start replays
	// nothing.
	if _, err := db.sqlDB.ExecContext(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("recover the commit log: %w", err)
	}
	db.Logger.Warn("rebuilt the commit-log rows of commits made just before an unclean stop, from their tables",
		"commits", len(rows))
	return nil
}

// unloggedSeq is a commit found in its table with no commit-log row.
type unloggedSeq struct {
	seq, rows int64
	version   int32
}

// unloggedSeqs returns the commits of activation id, stored in the physical table
// physical, whose seq is past last, with their row counts and schema versions.
func (db *DB) unloggedSeqs(ctx context.Context, id uuid.UUID, physical string, last int64) ([]unloggedSeq, error) {
	q, err := db.sqlDB.QueryContext(ctx, `
		SELECT d.seq, d.n, (SELECT max(v.version) FROM ducktail_catalog.schema_versions v
		                    WHERE v.activation = ?::UUID AND v.from_seq <= d.seq)
		FROM (SELECT `+QuoteIdent(SeqColumn)+` AS seq, count(*) AS n FROM ducktail_data.`+QuoteIdent(physical)+`
		      WHERE `+QuoteIdent(SeqColumn)+` > ? GROUP BY ALL) d
		ORDER BY d.seq`, id.String(), last)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	var out []unloggedSeq
	for q.Next() {
		var s unloggedSeq
		if err := q.Scan(&s.seq, &s.rows, &s.version); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, q.Err()
}
