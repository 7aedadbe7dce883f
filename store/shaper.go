package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"
)

// shaperConns bounds the connections of the shape engine: filters run by the sessions
// that first need a commit's shape, a few at a time.
const shaperConns = 4

// shaper is the shape engine: an in-memory DuckDB database of its own, with the file's
// settings (no external access, the same TimeZone, a locked configuration), where each
// commit's rows are filtered through a shape's predicate (docs/design.md, "Shapes and
// policies"). It holds no table and is never reachable from user SQL: a query connection
// reads the file's database only. It opens on first use.
type shaper struct {
	once sync.Once
	db   *sql.DB
	err  error
}

func (sh *shaper) open(ctx context.Context) (*sql.DB, error) {
	sh.once.Do(func() {
		q := url.Values{}
		q.Set("enable_external_access", "false")
		q.Set("autoinstall_known_extensions", "false")
		q.Set("autoload_known_extensions", "false")
		q.Set("threads", "1")
		c, err := duckdb.NewConnector(":memory:?"+q.Encode(), nil)
		if err != nil {
			sh.err = fmt.Errorf("open the shape engine: %w", err)
			return
		}
		db := sql.OpenDB(c)
		db.SetMaxOpenConns(shaperConns)
		db.SetMaxIdleConns(shaperConns)
		for _, stmt := range []string{
			"SET GLOBAL TimeZone = " + quoteString(TimeZone),
			"SET GLOBAL lock_configuration = true",
		} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				db.Close()
				sh.err = fmt.Errorf("open the shape engine: %s: %w", stmt, err)
				return
			}
		}
		sh.db = db
	})
	return sh.db, sh.err
}

func (sh *shaper) close() error {
	if sh.db == nil {
		return nil
	}
	return sh.db.Close()
}

// ShapeRecords returns the rows of recs (one commit's rows, shaped by schema.Arrow())
// that match shape, with the shape's columns: records shaped by shape.Project(schema)
// .Arrow(), in Go memory, which the caller may hold as long as it likes. A shape with a
// predicate is evaluated by DuckDB, in the shape engine (shaper), over the records
// registered as an Arrow view: SELECT <columns> FROM <the rows> WHERE (<predicate>). A
// shape without one only picks columns. recs themselves are neither modified nor
// released. Errors: DuckDB's (a predicate failing on a value, such as a bad cast),
// ErrClosed.
func (db *DB) ShapeRecords(ctx context.Context, schema *Schema, recs []arrow.RecordBatch, shape *Shape) ([]arrow.RecordBatch, error) {
	proj := shape.Project(schema)
	if shape.Empty() || shape.Where == "" {
		return projectRecords(recs, schema, proj), nil
	}
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	rows := int64(0)
	for _, r := range recs {
		rows += r.NumRows()
	}
	if rows == 0 {
		return nil, nil
	}
	sdb, err := db.shaper.open(ctx)
	if err != nil {
		return nil, err
	}
	conn, err := sdb.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var out []arrow.RecordBatch
	err = conn.Raw(func(dc any) error {
		ar, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		rdr, err := array.NewRecordReader(schema.Arrow(), recs)
		if err != nil {
			return err
		}
		defer rdr.Release()
		view := ReservedPrefix + "_shape_" + randomHex(12)
		release, err := ar.RegisterView(rdr, view)
		if err != nil {
			return fmt.Errorf("shape: register rows: %w", err)
		}
		// A registered view scans once and must be dropped before it is released
		// (docs/design.md, "Measured facts about DuckDB").
		defer release()
		defer dc.(driver.ExecerContext).ExecContext(context.WithoutCancel(ctx), "DROP VIEW IF EXISTS "+QuoteIdent(view), nil)
		rr, err := ar.QueryContext(ctx, "SELECT "+shape.SelectList(schema)+" FROM "+QuoteIdent(view)+shape.whereClause())
		if err != nil {
			return err
		}
		defer rr.Release()
		want := proj.Arrow()
		for rr.Next() {
			rec, err := copyRecord(rr.RecordBatch(), want)
			if err != nil {
				return err
			}
			out = append(out, rec)
		}
		return rr.Err()
	})
	if err != nil {
		for _, r := range out {
			r.Release()
		}
		return nil, err
	}
	return out, nil
}

// projectRecords returns recs (shaped by schema) with the columns of proj only, sharing
// their buffers.
func projectRecords(recs []arrow.RecordBatch, schema, proj *Schema) []arrow.RecordBatch {
	out := make([]arrow.RecordBatch, 0, len(recs))
	want := proj.Arrow()
	for _, r := range recs {
		if proj == schema {
			r.Retain()
			out = append(out, r)
			continue
		}
		cols := make([]arrow.Array, len(proj.Columns))
		for i, c := range proj.Columns {
			cols[i] = r.Column(columnByID(schema, c.ID))
		}
		out = append(out, array.NewRecordBatch(want, cols, r.NumRows()))
	}
	return out
}

// copyRecord copies rec, which DuckDB allocated, into Go memory, typed as want.
func copyRecord(rec arrow.RecordBatch, want *arrow.Schema) (arrow.RecordBatch, error) {
	if int(rec.NumCols()) != want.NumFields() {
		return nil, errors.New("shape: the result has the wrong columns")
	}
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, col := range rec.Columns() {
		typed, err := retype(col, want.Field(i).Type)
		if err != nil {
			return nil, fmt.Errorf("shape: column %s: %w", want.Field(i).Name, err)
		}
		cols[i], err = array.Concatenate([]arrow.Array{typed}, memory.DefaultAllocator)
		typed.Release()
		if err != nil {
			return nil, fmt.Errorf("shape: copy column %s: %w", want.Field(i).Name, err)
		}
	}
	return array.NewRecordBatch(want, cols, rec.NumRows()), nil
}
