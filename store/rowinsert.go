package store

import (
	"cmp"
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
)

// The rows of the smallest group commits, and their commit-log rows, are written with one
// prepared INSERT of bound parameters per table instead of an appender's flush: measured on
// the project's 2-core machine with DuckDB 1.5, a flush of one row into a 4-column table
// took about 0.30 ms, whatever its row count up to a vector, and a prepared INSERT of one
// row 0.15 ms, of 8 rows 0.22 ms and of 16 rows 0.25 ms, growing with its parameters. So a
// statement takes at most maxInsertRows rows and maxInsertParams parameters; larger groups
// use the appenders (bufferRows, insertCommitLog). 96 parameters let a group of eight 1-row
// commits into a 10-column table (88 with the seq column) take the statement: in process,
// 8 writers committing such rows spent 2.25 ms of CPU per group commit against 2.59 ms
// when 64 parameters sent groups of more than five rows to the appender.
//
// A prepared statement keeps the values last bound to it until they are bound again
// (duckdb-go does not clear them), so only rows of at most maxInsertBytes (RecordBytes)
// take one: the cached statements hold at most maxRowAppenders × maxInsertRows × 64 KiB.
const (
	maxInsertRows   = 8
	maxInsertParams = 96
	maxInsertBytes  = 64 << 10
	// commitLogColumns is the number of columns of ducktail_catalog.commits.
	commitLogColumns = 9
)

// insertStatements are the writer's prepared INSERTs of 1 to maxInsertRows rows into one
// table (index: rows-1), prepared when first needed.
type insertStatements [maxInsertRows]*duckdb.Stmt

// boundInsert is a prepared INSERT with its parameters bound, executed inside the group's
// transaction by flushBuffered.
type boundInsert struct {
	t    *table
	stmt *duckdb.Stmt
}

// insertFits reports whether rows rows of cols columns, size bytes in all, fit one
// prepared INSERT.
func insertFits(rows int64, cols int, size int64) bool {
	return rows >= 1 && rows <= maxInsertRows && rows*int64(cols) <= maxInsertParams && size <= maxInsertBytes
}

// prepare prepares query on the writer's connection.
func (w *writer) prepare(query string) (*duckdb.Stmt, error) {
	var stmt *duckdb.Stmt
	err := w.conn.Raw(func(dc any) error {
		s, err := dc.(driver.ConnPrepareContext).PrepareContext(context.Background(), query)
		if err != nil {
			return err
		}
		stmt = s.(*duckdb.Stmt)
		return nil
	})
	return stmt, err
}

// rowInsert returns the writer's prepared INSERT of rows rows into t's physical table,
// over its seq column and the columns of t's current schema, preparing it when there is
// none. Like the appenders, the statements of at most maxRowAppenders tables are kept
// between groups (trimRowCaches).
func (w *writer) rowInsert(t *table, rows int) (*duckdb.Stmt, error) {
	stmts := w.rowInserts[t]
	if stmts == nil {
		stmts = &insertStatements{}
		w.rowInserts[t] = stmts
	}
	if stmts[rows-1] == nil {
		cols := []string{QuoteIdent(SeqColumn)}
		for _, c := range t.schema.Columns {
			cols = append(cols, QuoteIdent(physicalColumn(c.ID)))
		}
		row := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
		stmt, err := w.prepare("INSERT INTO " + w.file("ducktail_data."+QuoteIdent(t.physical)) + " (" + strings.Join(cols, ", ") + ") VALUES " +
			strings.TrimSuffix(strings.Repeat(row+", ", rows), ", "))
		if err != nil {
			return nil, err
		}
		stmts[rows-1] = stmt
	}
	return stmts[rows-1], nil
}

// dropRowInserts closes the writer's prepared INSERTs into t.
func (w *writer) dropRowInserts(t *table) {
	stmts := w.rowInserts[t]
	if stmts == nil {
		return
	}
	delete(w.rowInserts, t)
	w.closeStatements(stmts)
}

// closeStatements closes every prepared statement of stmts.
func (w *writer) closeStatements(stmts *insertStatements) {
	for i, s := range stmts {
		if s == nil {
			continue
		}
		if err := s.Close(); err != nil {
			w.db.Logger.Warn("could not close a prepared INSERT", "err", err)
		}
		stmts[i] = nil
	}
}

// insertRowValues binds the rows of t's commits among plans (rows of them, each prefixed
// with its commit's seq) to the writer's prepared INSERT for t, before the transaction
// begins; flushBuffered executes it inside. It reports false, having bound nothing, for a
// NULL or a value the statement refuses; bufferRows then tries the appender.
func (w *writer) insertRowValues(tx *writeTx, t *table, plans []appendPlan, rows int64) bool {
	stmt, err := w.rowInsert(t, int(rows))
	if err != nil {
		w.db.Logger.Warn("could not prepare an INSERT; the rows take the appender", "table", t.name, "err", err)
		return false
	}
	args := make([]driver.NamedValue, 0, int(rows)*(1+len(t.schema.Columns)))
	for _, p := range plans {
		if p.t != t || p.err != nil || p.commit.Duplicate {
			continue
		}
		rec := p.op.batch.Record
		for i := range int(rec.NumRows()) {
			args = append(args, driver.NamedValue{Ordinal: len(args) + 1, Value: duckdb.Typed(p.commit.Position.Seq, duckdb.TYPE_BIGINT)})
			for j, col := range rec.Columns() {
				v, ok := appenderValue(col, i)
				if !ok || v == nil {
					// A bound NULL makes DuckDB plan the statement again
					// (commitLogShape): the appender takes such rows.
					return false
				}
				args = append(args, driver.NamedValue{Ordinal: len(args) + 1, Value: typedParam(t.schema.Columns[j].Type, v)})
			}
		}
	}
	if err := stmt.Bind(args); err != nil {
		return false
	}
	tx.bound = append(tx.bound, boundInsert{t: t, stmt: stmt})
	return true
}

// commitLogShape names a prepared INSERT of commit-log rows: rows rows, the first keyed of
// them with an Idempotency-Key, the others with NULL key and hash. NULLs are written as SQL,
// not bound: a bound NULL, or a value of another type than the column's, makes DuckDB
// plan the statement again at each execution (measured: a 1-row INSERT of one NULL took
// 0.26 ms, of one BIGINT 0.10 ms); for the same reason the activation is bound as a
// string under lower(…)::UUID, since duckdb-go binds a UUID as a string.
type commitLogShape struct{ rows, keyed int }

// commitLogInsertFits reports whether rows fit one prepared INSERT.
func commitLogInsertFits(rows []commitLogRow) bool {
	params := 0
	for _, r := range rows {
		params += commitLogParams(r)
	}
	return len(rows) <= maxInsertRows && params <= maxInsertParams
}

// commitLogParams is the number of parameters r binds.
func commitLogParams(r commitLogRow) int {
	if r.key == "" {
		return commitLogColumns - 2
	}
	return commitLogColumns
}

// insertCommitLogRows writes rows, the commit-log rows of one group (commitLogInsertFits),
// with the writer's prepared INSERT of their shape into ducktail_catalog.commits, inside
// the open transaction; it puts the keyed rows first (the log is read in seq order).
func (w *writer) insertCommitLogRows(rows []commitLogRow) error {
	slices.SortStableFunc(rows, func(a, b commitLogRow) int {
		return cmp.Compare(commitLogParams(b), commitLogParams(a))
	})
	shape := commitLogShape{rows: len(rows)}
	args := make([]driver.NamedValue, 0, maxInsertParams)
	bind := func(v driver.Value) { args = append(args, driver.NamedValue{Ordinal: len(args) + 1, Value: v}) }
	for _, r := range rows {
		bind(duckdb.Typed(r.tableID, duckdb.TYPE_BIGINT))
		bind(duckdb.Typed(r.activation.String(), duckdb.TYPE_VARCHAR))
		bind(duckdb.Typed(r.seq, duckdb.TYPE_BIGINT))
		bind(duckdb.Typed(r.version, duckdb.TYPE_INTEGER))
		bind(duckdb.Typed(r.rows, duckdb.TYPE_BIGINT))
		bind(duckdb.Typed(r.bytes, duckdb.TYPE_BIGINT))
		bind(duckdb.Typed(r.committedAt, duckdb.TYPE_TIMESTAMP_TZ))
		if r.key != "" {
			shape.keyed++
			bind(duckdb.Typed(r.key, duckdb.TYPE_VARCHAR))
			bind(r.hash)
		}
	}
	stmt := w.commitLogInserts[shape]
	if stmt == nil {
		var values []string
		for i := range shape.rows {
			key := "?, ?"
			if i >= shape.keyed {
				key = "NULL, NULL"
			}
			values = append(values, "(?, lower(?)::UUID, ?, ?, ?, ?, ?, "+key+")")
		}
		query := "INSERT INTO " + w.file("ducktail_catalog.commits") +
			" (table_id, activation, seq, schema_version, rows, bytes, committed_at, idempotency_key, request_hash) VALUES " + strings.Join(values, ", ")
		var err error
		if stmt, err = w.prepare(query); err != nil {
			return fmt.Errorf("prepare the commit-log insert: %w", err)
		}
		w.commitLogInserts[shape] = stmt
	}
	if err := stmt.Bind(args); err != nil {
		return fmt.Errorf("insert into the commit log: %w", err)
	}
	if err := w.execBound(stmt); err != nil {
		return fmt.Errorf("insert into the commit log: %w", err)
	}
	return nil
}

// execBound executes stmt, bound, on the writer's connection. It takes no context, as the
// appenders' flushes: a statement of at most maxInsertParams values.
func (w *writer) execBound(stmt *duckdb.Stmt) error {
	return w.conn.Raw(func(any) error {
		_, err := stmt.ExecBound(context.Background())
		return err
	})
}

// typedBinds are the column types whose values insertRowValues binds as duckdb.Typed, of
// the DuckDB type of the column, as insertCommitLogRows binds the commit-log values:
// duckdb-go binds an untyped value after asking DuckDB for the parameter's type and
// logical type (six cgo calls, two of which look the parameter up by name, before the
// bind), a typed one with three (create, bind and destroy a DuckDB value). Measured on the
// project's 2-core machine, binding 56 values (eight 7-column rows) took 83 us untyped and
// 53 us typed, and binding and executing that INSERT into an in-memory table 336-341 us
// against 279-294. The value's Go type is the one appenderValue gives for the column's
// Arrow type (Type.Arrow), which the Typed coercions accept; JSON, BLOB and the other
// types are bound untyped.
var typedBinds = map[Type]duckdb.Type{
	TypeBoolean: duckdb.TYPE_BOOLEAN, TypeTinyint: duckdb.TYPE_TINYINT, TypeSmallint: duckdb.TYPE_SMALLINT,
	TypeInteger: duckdb.TYPE_INTEGER, TypeBigint: duckdb.TYPE_BIGINT, TypeUTinyint: duckdb.TYPE_UTINYINT,
	TypeUSmallint: duckdb.TYPE_USMALLINT, TypeUInteger: duckdb.TYPE_UINTEGER, TypeUBigint: duckdb.TYPE_UBIGINT,
	TypeFloat: duckdb.TYPE_FLOAT, TypeDouble: duckdb.TYPE_DOUBLE, TypeVarchar: duckdb.TYPE_VARCHAR,
	TypeDate: duckdb.TYPE_DATE, TypeTimestamp: duckdb.TYPE_TIMESTAMP, TypeTimestampS: duckdb.TYPE_TIMESTAMP_S,
	TypeTimestampMS: duckdb.TYPE_TIMESTAMP_MS, TypeTimestampNS: duckdb.TYPE_TIMESTAMP_NS,
	TypeTimestampTZ: duckdb.TYPE_TIMESTAMP_TZ,
}

// typedParam is v, a value of a column of type t, as insertRowValues binds it.
func typedParam(t Type, v driver.Value) driver.Value {
	if dt, ok := typedBinds[t]; ok {
		return duckdb.Typed(v, dt)
	}
	return v
}
