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
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"
)

// shaperConns bounds the connections of the shape engine: filters run by the sessions
// that first need a commit's shape, a few at a time.
const shaperConns = 4

// ShapeEngine is the shape engine: an in-memory DuckDB database of its own, with the
// file's settings (no external access, the same TimeZone, a locked configuration), where
// each commit's rows are filtered through a shape's predicate (docs/design.md, "Shapes and
// policies"). It holds no table and is never reachable from user SQL: a query connection
// reads the file's database only. It opens on first use. Each DB has one; a stream node,
// which has no DB, makes its own (NewShapeEngine) to filter and to compile shapes with
// (QueryString). It is safe for concurrent use; Close it when done.
type ShapeEngine struct {
	once sync.Once
	db   *sql.DB
	err  error
}

// NewShapeEngine returns a shape engine of its own, not yet open.
func NewShapeEngine() *ShapeEngine { return &ShapeEngine{} }

func (sh *ShapeEngine) open(ctx context.Context) (*sql.DB, error) {
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

// Close closes the engine's database.
func (sh *ShapeEngine) Close() error {
	if sh.db == nil {
		return nil
	}
	return sh.db.Close()
}

// QueryString runs a query returning one VARCHAR in the engine, as ReadTx.QueryString
// does in a read transaction: what package snapshot compiles shapes with on a stream
// node. Errors: DuckDB's.
func (sh *ShapeEngine) QueryString(ctx context.Context, query string, args ...any) (string, error) {
	sdb, err := sh.open(ctx)
	if err != nil {
		return "", err
	}
	var out string
	err = sdb.QueryRowContext(ctx, query, args...).Scan(&out)
	return out, err
}

// ShapeRecords returns the rows of recs (one commit's rows, shaped by schema.Arrow())
// that match shape, with the shape's columns: records shaped by shape.Project(schema)
// .Arrow(), in Go memory, which the caller may hold as long as it likes. A shape with a
// predicate is evaluated by DuckDB, in the shape engine (ShapeEngine), over the records
// registered as an Arrow view; a shape without one only picks columns. recs themselves
// are neither modified nor released. Errors: DuckDB's (a predicate failing on a value,
// such as a bad cast), ErrClosed.
func (db *DB) ShapeRecords(ctx context.Context, schema *Schema, recs []arrow.RecordBatch, shape *Shape) ([]arrow.RecordBatch, error) {
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	return db.shaper.ShapeRecords(ctx, schema, recs, shape)
}

// ShapeRecordsEach is ShapeEngine.ShapeRecordsEach in the database's engine. Errors: its,
// and ErrClosed.
func (db *DB) ShapeRecordsEach(ctx context.Context, schema *Schema, recs []arrow.RecordBatch, shapes []*Shape) ([][]arrow.RecordBatch, []error) {
	if err := db.checkOpen(); err != nil {
		errs := make([]error, len(shapes))
		for i := range errs {
			errs[i] = err
		}
		return make([][]arrow.RecordBatch, len(shapes)), errs
	}
	return db.shaper.ShapeRecordsEach(ctx, schema, recs, shapes)
}

// ShapeRecords is ShapeRecordsEach for one shape (DB.ShapeRecords has the contract).
func (sh *ShapeEngine) ShapeRecords(ctx context.Context, schema *Schema, recs []arrow.RecordBatch, shape *Shape) ([]arrow.RecordBatch, error) {
	out, errs := sh.ShapeRecordsEach(ctx, schema, recs, []*Shape{shape})
	return out[0], errs[0]
}

// ShapeRecordsEach is ShapeRecords for several shapes of one commit at once, each shape's
// records and error at its index: DuckDB evaluates every predicate in one query over one
// registered view, so that a commit costs one view and one query however many shapes
// read it. When that query fails (a predicate failing on a value), each shape is
// evaluated alone, so that only the failing shape gets the error. Every shape must apply
// to schema (Shape.Check).
func (sh *ShapeEngine) ShapeRecordsEach(ctx context.Context, schema *Schema, recs []arrow.RecordBatch, shapes []*Shape) ([][]arrow.RecordBatch, []error) {
	out, errs := make([][]arrow.RecordBatch, len(shapes)), make([]error, len(shapes))
	rows := int64(0)
	for _, r := range recs {
		rows += r.NumRows()
	}
	var filtered []int // the shapes with a predicate
	for i, shape := range shapes {
		if shape.Empty() || shape.Where == "" || rows == 0 {
			out[i] = projectRecords(recs, schema, shape.Project(schema))
			if rows == 0 {
				out[i] = nil
			}
			continue
		}
		filtered = append(filtered, i)
	}
	if len(filtered) == 0 {
		return out, errs
	}
	if err := sh.filter(ctx, schema, recs, shapes, filtered, out); err == nil || len(filtered) == 1 {
		for _, i := range filtered {
			errs[i] = err
		}
		return out, errs
	}
	for _, i := range filtered {
		errs[i] = sh.filter(ctx, schema, recs, shapes, []int{i}, out)
	}
	return out, errs
}

// filter evaluates the predicates of shapes[which] over recs in one query and sets
// out[i] for each; on error it sets none.
func (sh *ShapeEngine) filter(ctx context.Context, schema *Schema, recs []arrow.RecordBatch, shapes []*Shape, which []int, out [][]arrow.RecordBatch) error {
	sdb, err := sh.open(ctx)
	if err != nil {
		return err
	}
	conn, err := sdb.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	got := make([][]arrow.RecordBatch, len(which))
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
		// DuckDB's scan of an Arrow view drops the comparisons pushed into it and
		// misreads the columns when it is asked for some of them only (docs/design.md,
		// "Measured facts about DuckDB"): the query reads every column, with no WHERE, and
		// DuckDB evaluates each predicate into a column that selects its shape's rows.
		query := "SELECT *"
		for _, i := range which {
			query += ", coalesce((\n" + shapes[i].Where + "\n), false)"
		}
		rr, err := ar.QueryContext(ctx, query+" FROM "+QuoteIdent(view))
		if err != nil {
			return err
		}
		defer rr.Release()
		for rr.Next() {
			for j, i := range which {
				rec, err := keepRows(ctx, rr.RecordBatch(), schema, shapes[i].Project(schema), len(schema.Columns)+j)
				if err != nil {
					return err
				}
				got[j] = append(got[j], rec)
			}
		}
		return rr.Err()
	})
	if err != nil {
		for _, recs := range got {
			for _, r := range recs {
				r.Release()
			}
		}
		return err
	}
	for j, i := range which {
		out[i] = got[j]
	}
	return nil
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

// keepRows returns the rows of rec (schema's columns, then the predicates' values) whose
// predicate in column keepCol is true, with the columns of proj, copied into Go memory.
func keepRows(ctx context.Context, rec arrow.RecordBatch, schema, proj *Schema, keepCol int) (arrow.RecordBatch, error) {
	if int(rec.NumCols()) <= keepCol {
		return nil, errors.New("shape: the result has the wrong columns")
	}
	keep, ok := rec.Column(keepCol).(*array.Boolean)
	if !ok {
		return nil, errors.New("shape: the result has the wrong columns")
	}
	want := proj.Arrow()
	cols := make([]arrow.Array, len(proj.Columns))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, c := range proj.Columns {
		var err error
		if cols[i], err = retype(rec.Column(columnByID(schema, c.ID)), want.Field(i).Type); err != nil {
			return nil, fmt.Errorf("shape: column %s: %w", c.Name, err)
		}
	}
	picked := array.NewRecordBatch(want, cols, rec.NumRows())
	defer picked.Release()
	return compute.FilterRecordBatch(compute.WithAllocator(ctx, memory.DefaultAllocator), picked, keep, compute.DefaultFilterOptions())
}
