package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/google/uuid"
)

// ReadTx is one read-only DuckDB transaction on a reader connection. Everything read
// through it sees one snapshot, fixed by its first statement (docs/design.md, "Measured
// facts about DuckDB"); a slow reader never blocks the writer. It is not safe for
// concurrent use.
type ReadTx struct {
	db   *DB
	conn *sql.Conn
	// heads is the head seq of every live activation as of the transaction's snapshot:
	// commits update no catalog row (an UPDATE that commits while an older read
	// transaction is open makes every CHECKPOINT fail until that reader ends, so heads
	// live in memory and in the commit log; see pinSnapshot).
	heads map[uuid.UUID]int64
	// unlogged are the commit-log rows that waited in memory as of the snapshot
	// (unlogged.go).
	unlogged []commitLogRow
}

// Read runs fn inside one read-only transaction and rolls it back afterwards. It waits
// for a free reader connection (at most ReadConns run at once) while ctx allows.
// Errors: fn's error, ctx errors, ErrClosed, DuckDB errors.
func (db *DB) Read(ctx context.Context, fn func(*ReadTx) error) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	conn, err := db.sqlDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION READ ONLY"); err != nil {
		// A BEGIN interrupted by ctx may still have opened the transaction.
		endRead(conn)
		return fmt.Errorf("begin read: %w", err)
	}
	tx := &ReadTx{db: db, conn: conn}
	ferr := tx.pinSnapshot(ctx)
	if ferr == nil {
		ferr = fn(tx)
	}
	if err := endRead(conn); err != nil {
		return errors.Join(ferr, fmt.Errorf("end read: %w", err))
	}
	return ferr
}

// pinSnapshot fixes the transaction's snapshot with its first statement and copies the
// in-memory heads of the live activations, both while no commit can complete (the writer
// holds DB.commitMu around COMMIT and the in-memory update that follows it), so the heads
// are exactly those of the snapshot.
func (tx *ReadTx) pinSnapshot(ctx context.Context) error {
	tx.db.commitMu.RLock()
	defer tx.db.commitMu.RUnlock()
	var n int64
	if err := tx.conn.QueryRowContext(ctx, "SELECT count(*) FROM ducktail_catalog.settings").Scan(&n); err != nil {
		return fmt.Errorf("begin read: %w", err)
	}
	tx.unlogged = tx.db.unlogged
	tx.db.mu.RLock()
	tx.heads = make(map[uuid.UUID]int64, len(tx.db.tables))
	for _, t := range tx.db.tables {
		tx.heads[t.activation] = t.head
	}
	tx.db.mu.RUnlock()
	return nil
}

// head returns the head seq of activation id as of the snapshot: the pinned in-memory head
// of a live activation, or stored, the head_seq its catalog row got when it ended.
func (tx *ReadTx) head(id uuid.UUID, stored int64) int64 {
	if h, ok := tx.heads[id]; ok {
		return h
	}
	return stored
}

// endRead rolls back whatever transaction conn has open, even when the request's context
// is gone. A connection whose transaction could not end must not go back to the pool, so
// on failure it is discarded.
func endRead(conn *sql.Conn) error {
	_, err := conn.ExecContext(context.Background(), "ROLLBACK")
	if err != nil && !strings.Contains(err.Error(), "no transaction is active") {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		return err
	}
	return nil
}

// Table returns the live table named name as of this transaction's snapshot, with Rows
// left 0. Errors: a CodeNotFound *Error wrapping ErrTableNotFound.
func (tx *ReadTx) Table(ctx context.Context, name string) (TableInfo, error) {
	var info TableInfo
	var act, cols string
	err := tx.conn.QueryRowContext(ctx, `
		SELECT t.id, t.name, t.created_at, a.id::VARCHAR, a.head_seq, s.version, s.from_seq, s.columns
		FROM ducktail_catalog.tables t
		JOIN ducktail_catalog.activations a ON a.id = t.activation
		JOIN ducktail_catalog.schema_versions s ON s.activation = a.id
		WHERE lower(t.name) = ? AND t.dropped_at IS NULL
		ORDER BY s.version DESC LIMIT 1`, FoldName(name)).
		Scan(&info.ID, &info.Name, &info.CreatedAt, &act, &info.Head.Seq, &info.Schema.Version, &info.Schema.FromSeq, &cols)
	if errors.Is(err, sql.ErrNoRows) {
		return TableInfo{}, tableNotFound(name)
	}
	if err != nil {
		return TableInfo{}, fmt.Errorf("read table %s: %w", name, err)
	}
	info.Head.TableID = info.ID
	if info.Head.Activation, err = uuid.Parse(act); err != nil {
		return TableInfo{}, err
	}
	info.Head.Seq = tx.head(info.Head.Activation, info.Head.Seq)
	if err := json.Unmarshal([]byte(cols), &info.Schema.Columns); err != nil {
		return TableInfo{}, fmt.Errorf("read table %s: columns: %w", name, err)
	}
	return info, nil
}

// QueryArrow runs one query and hands fn its result as an Arrow record reader; the
// reader is valid only during fn. The caller is responsible for what the query may do:
// user SQL must be vetted first (package snapshot does). Errors: DuckDB's, fn's.
func (tx *ReadTx) QueryArrow(ctx context.Context, query string, args []any, fn func(array.RecordReader) error) error {
	return tx.conn.Raw(func(dc any) error {
		ar, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		rr, err := ar.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rr.Release()
		if err := fn(rr); err != nil {
			return err
		}
		return rr.Err()
	})
}

// QueryString runs a query returning one VARCHAR value, such as
// json_serialize_sql(?::VARCHAR)::VARCHAR (without the casts duckdb-go scans a map).
func (tx *ReadTx) QueryString(ctx context.Context, query string, args ...any) (string, error) {
	var s string
	err := tx.conn.QueryRowContext(ctx, query, args...).Scan(&s)
	return s, err
}
