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
// through it sees one snapshot, fixed by its first statement (DESIGN.md, "Measured facts");
// a slow reader never blocks the writer. It is not safe for concurrent use.
type ReadTx struct {
	db   *DB
	conn *sql.Conn
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
	ferr := fn(&ReadTx{db: db, conn: conn})
	if err := endRead(conn); err != nil {
		return errors.Join(ferr, fmt.Errorf("end read: %w", err))
	}
	return ferr
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
