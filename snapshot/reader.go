package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/valuetext"
)

// Defaults for Reader fields left zero.
const (
	// DefaultQueryTimeout bounds one Query, from parsing to the last encoded byte.
	DefaultQueryTimeout = 30 * time.Second
	// DefaultMaxResultBytes bounds the encoded body of one Query: 64 MiB.
	DefaultMaxResultBytes = 64 << 20
)

// Log attribute keys (docs/design.md, "Code conventions").
const (
	logKeyTable    = "table"
	logKeyTables   = "tables"
	logKeyFormat   = "format"
	logKeyBytes    = "bytes"
	logKeyDuration = "duration"
	logKeyCode     = "code"
	logKeyError    = "error"
)

// Reader serves snapshot reads and sandboxed queries from a store. Set the fields (or use
// NewReader); the zero values of QueryTimeout, MaxResultBytes and Logger mean their
// defaults. Its methods are safe for concurrent use; each holds one of the store's reader
// connections while it runs (store.DB.ReadConns bounds them).
type Reader struct {
	// DB is the store read from.
	DB *store.DB
	// Cursor encodes a position as the opaque cursor string clients see: the store's
	// codec, DB.Cursors().Encode, in the server (api.OpenStack sets it). Nil leaves
	// cursors out of JSON bodies.
	Cursor func(store.Position) string
	// QueryTimeout bounds one Query; past it DuckDB is interrupted and Query fails with
	// CodeTimeout.
	QueryTimeout time.Duration
	// MaxResultBytes bounds the encoded body of one Query, in bytes; past it Query fails
	// with CodeTooLarge.
	MaxResultBytes int64
	// Logger defaults to slog.Default() with component=snapshot.
	Logger *slog.Logger
}

// NewReader returns a Reader of db with the defaults filled in.
func NewReader(db *store.DB) *Reader {
	return &Reader{
		DB:             db,
		QueryTimeout:   DefaultQueryTimeout,
		MaxResultBytes: DefaultMaxResultBytes,
		Logger:         slog.Default().With("component", "snapshot"),
	}
}

// Open checks the Reader's required fields: DB must be set and open. It returns an
// error naming what is missing; a Reader that fails Open must not be used.
func (r *Reader) Open() error {
	if r.DB == nil || r.DB.Cursors() == nil {
		return errors.New("snapshot: Reader.Open: DB is nil or not open")
	}
	return nil
}

// Result is the encoded answer of one Query.
type Result struct {
	// Body is the encoded result, at most MaxResultBytes long.
	Body []byte
	// ContentType is the media type of Body (Format.ContentType).
	ContentType string
	// Cursors holds, for each user table the query read (by its canonical name), the
	// table's head position in the query's own read transaction: subscribing from it
	// continues exactly after the rows the query saw (docs/design.md, "The atomic hand-off").
	// It is empty, not nil, for a query that reads no table.
	Cursors map[string]store.Position
}

// Table writes a consistent snapshot of one table to w in format f (package comment).
// One read transaction reads the table's head position first (which fixes the
// transaction's snapshot), then every row of the table (store.ReadTx.ScanTable), so the
// rows are exactly those of the commits up to that position. head, when not nil, is
// called with the position after the rows were read and before the first byte is
// written, so that the caller can send the cursor as a header; JSON bodies also carry it
// as "cursor". Errors returned before head was called: CodeNotFound (unknown table),
// CodeInvalid (unknown format), ctx errors, store errors. An error after head was called
// means the body written so far is incomplete, although a truncated NDJSON, CSV or Arrow
// body can look complete: the caller must abort the response, not end it normally.
// DuckDB materializes one chunk of rows at a time (scanChunkRows), and the encoded bytes
// reach w through a writeAhead of at most 5 MiB, so a snapshot of any size streams with
// bounded memory.
func (r *Reader) Table(ctx context.Context, table string, f Format, w io.Writer, head func(store.Position)) error {
	return r.ShapedTable(ctx, table, ShapeSpec{}, store.TokenPolicy{}, f, w, func(p store.Position, _ store.ShapeTag) {
		if head != nil {
			head(p)
		}
	})
}

// ShapedTable is Table through a shape: the rows and columns spec selects, as seen by a
// token with policy (Shape compiles both, in the snapshot's own read transaction), and
// DuckDB filters the rows as it reads them (store.ReadTx.ScanShaped). head also gets the
// tag of the shape, which binds the snapshot's cursor to it (store.Cursors.EncodeShaped;
// the zero tag for the whole table): subscribing with the same shape from that cursor
// continues exactly after the snapshot (docs/design.md, "Shapes and policies"). Errors:
// Table's and Shape's; a predicate that fails on a row's value (a cast) is CodeUnprocessable,
// with a message that names no value, before head was called when it fails in the first
// chunk.
func (r *Reader) ShapedTable(ctx context.Context, table string, spec ShapeSpec, policy store.TokenPolicy, f Format, w io.Writer, head func(store.Position, store.ShapeTag)) error {
	if err := f.check(); err != nil {
		return err
	}
	start := time.Now()
	err := r.DB.Read(ctx, func(tx *store.ReadTx) error {
		info, err := tx.Table(ctx, table)
		if err != nil {
			return err
		}
		var shape *store.Shape
		if spec.Where != "" || spec.Columns != nil || !policy.Empty() {
			if shape, err = compileShape(ctx, tx, info, spec, policy); err != nil {
				return err
			}
		}
		err = tx.ScanShaped(ctx, info, shape, scanChunkRows(&info.Schema), func(rr array.RecordReader) error {
			head(info.Head, shape.Tag())
			var cursor []byte
			if r.Cursor != nil {
				c := r.Cursor(info.Head)
				if !shape.Empty() {
					c = r.DB.Cursors().EncodeShaped(info.Head, shape.Tag())
				}
				cursor = valuetext.AppendJSONString([]byte(`"cursor":`), c)
			}
			types := make([]string, len(info.Schema.Columns))
			for i, c := range info.Schema.Columns {
				types[i] = string(c.Type)
			}
			return encodeAhead(w, f, rr, cursor, types)
		})
		if err != nil && !shape.Empty() && store.ErrorCode(err) == store.CodeInternal && ctx.Err() == nil && valueError(err) {
			// DuckDB's message may quote a value of a row outside the token's policy.
			return &store.Error{Code: store.CodeUnprocessable, Message: "where: the predicate failed on a value of the table (a cast or a function's argument); guard it with TRY_CAST or CASE"}
		}
		return err
	})
	if err != nil {
		r.logger().LogAttrs(ctx, slog.LevelDebug, "snapshot failed", slog.String(logKeyTable, table),
			slog.String(logKeyFormat, string(f)), slog.String(logKeyCode, string(store.ErrorCode(err))))
		return err
	}
	if l := r.logger(); l.Enabled(ctx, slog.LevelDebug) {
		l.LogAttrs(ctx, slog.LevelDebug, "snapshot", slog.String(logKeyTable, table), slog.String(logKeyFormat, string(f)),
			slog.Duration(logKeyDuration, time.Since(start)))
	}
	return nil
}

// A snapshot has DuckDB read as many whole row groups (store.DefaultScanChunkRows rows)
// of its table at once as take about scanChunkBytes, one at least and maxScanGroups at
// most: DuckDB scans one row group on one thread, several on as many threads.
const (
	scanChunkBytes = 32 << 20
	maxScanGroups  = 8
)

// scanChunkRows is the chunk size of a snapshot of a table of schema s, by the rule above,
// its rows sized as DuckDB materializes them: a fixed-width value by its width, any other
// by 16 bytes (a string's header; short strings are inline).
func scanChunkRows(s *store.Schema) int64 {
	width := int64(0)
	for _, c := range s.Columns {
		if fw, ok := c.Type.Arrow().(arrow.FixedWidthDataType); ok {
			width += max(1, int64(fw.BitWidth()/8))
		} else {
			width += 16
		}
	}
	groups := scanChunkBytes / max(1, width) / store.DefaultScanChunkRows
	return min(max(groups, 1), maxScanGroups) * store.DefaultScanChunkRows
}

// Query runs one SELECT, with params bound to its positional parameters (? or $1, $2, …;
// the JSON values of a request: string, float64, json.Number, bool or nil), inside one
// read-only transaction, and returns its result encoded in format f with the head
// position of every user table it read, taken in that same transaction (docs/design.md, "The
// atomic hand-off"). The SQL is vetted by DuckDB's parser before anything runs (package
// comment, "The sandbox"); allowTable reports whether the caller's token may read a
// table, given its canonical name (or the name as written when no such table exists, so
// that a refusal does not reveal whether it does); a nil allowTable allows no table.
//
// Errors, all *store.Error except ctx errors and internal failures:
//   - CodeInvalid: unknown format, bad parameter, wrong parameter count, syntax error,
//     empty query;
//   - CodeUnprocessable: refused by the sandbox (not one SELECT, a system relation, a
//     file, a denied function), or failed in DuckDB because of the query (binder,
//     conversion, …; DuckDB's message);
//   - CodeForbidden: a table the token may not read, named;
//   - CodeNotFound: an unknown table, named;
//   - CodeTimeout: ran past QueryTimeout (named) and was interrupted;
//   - CodeTooLarge: the encoded result passed MaxResultBytes (named), or DuckDB ran out of
//     memory.
//
// DuckDB materializes the whole result before encoding starts, so QueryTimeout and
// DuckDB's memory_limit, not MaxResultBytes, bound the work of a huge result.
func (r *Reader) Query(ctx context.Context, sqlText string, params []any, f Format, allowTable func(string) bool) (*Result, error) {
	return r.PolicyQuery(ctx, sqlText, params, f, allowTable, nil)
}

// PolicyQuery is Query for a token with policies: policy returns the token's policy on a
// table, given its canonical name (nil: no table has one). Wherever the query names a
// table with a policy, it reads the table's policy view instead, the policy's rows and
// columns only, so that no SQL reaches a row or column outside it (docs/design.md, "Shapes
// and policies"). Errors: Query's, and CodeUnprocessable for a policy that no longer
// applies to its table.
func (r *Reader) PolicyQuery(ctx context.Context, sqlText string, params []any, f Format, allowTable func(string) bool, policy func(string) store.TokenPolicy) (*Result, error) {
	start := time.Now()
	res, err := r.query(ctx, sqlText, params, f, allowTable, policy)
	l := r.logger()
	if err != nil {
		// Refusals are worth noticing; internal errors are logged by the caller, which
		// turns them into a generic message (docs/design.md, "Errors").
		level := slog.LevelInfo
		if store.ErrorCode(err) == store.CodeInternal {
			level = slog.LevelDebug
		}
		l.LogAttrs(ctx, level, "query refused or failed", slog.String(logKeyFormat, string(f)),
			slog.String(logKeyCode, string(store.ErrorCode(err))), slog.String(logKeyError, err.Error()),
			slog.Duration(logKeyDuration, time.Since(start)))
		return nil, err
	}
	if l.Enabled(ctx, slog.LevelDebug) {
		l.LogAttrs(ctx, slog.LevelDebug, "query", slog.String(logKeyFormat, string(f)),
			slog.Any(logKeyTables, slices.Sorted(maps.Keys(res.Cursors))), slog.Int(logKeyBytes, len(res.Body)),
			slog.Duration(logKeyDuration, time.Since(start)))
	}
	return res, nil
}

func (r *Reader) query(ctx context.Context, sqlText string, params []any, f Format, allowTable func(string) bool, policy func(string) store.TokenPolicy) (*Result, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	args, err := queryArgs(params)
	if err != nil {
		return nil, err
	}
	var res *Result
	err = r.DB.Read(ctx, func(tx *store.ReadTx) error {
		qctx, cancel := context.WithTimeout(ctx, r.queryTimeout())
		defer cancel()
		v, err := vet(qctx, tx, sqlText, allowTable, policy)
		if err != nil {
			return r.queryError(ctx, qctx, err)
		}
		if v.params != len(args) {
			return store.Errorf(store.CodeInvalid, "the query takes %d parameters, the request gave %d", v.params, len(args))
		}
		cursors := make(map[string]store.Position, len(v.tables))
		for _, t := range v.tables {
			cursors[t.Name] = t.Head
		}
		body := &limitedBuffer{max: r.maxResultBytes()}
		run := sqlText
		if v.sql != "" {
			run = v.sql
		}
		err = tx.QueryArrow(qctx, run, args, func(rr array.RecordReader) error {
			return encode(body, f, rr, r.cursorsJSON(cursors), nil)
		})
		if err != nil {
			err = r.queryError(ctx, qctx, err)
			var se *store.Error
			if v.sql != "" && errors.As(err, &se) && se.Err != nil && se.Code == store.CodeUnprocessable && !strings.HasPrefix(se.Message, "Binder Error") {
				// DuckDB's message may quote a value of a row outside the token's policy.
				err = store.Errorf(store.CodeUnprocessable, "the query failed on a value of a table (a cast or a function's argument); guard it with TRY_CAST or CASE")
			}
			return err
		}
		res = &Result{Body: body.buf.Bytes(), ContentType: f.ContentType(), Cursors: cursors}
		return nil
	})
	return res, err
}

// cursorsJSON encodes the "cursors" member of a Query's JSON body, names sorted.
func (r *Reader) cursorsJSON(cursors map[string]store.Position) []byte {
	if r.Cursor == nil {
		return nil
	}
	out := []byte(`"cursors":{`)
	for i, name := range slices.Sorted(maps.Keys(cursors)) {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(valuetext.AppendJSONString(out, name), ':')
		out = valuetext.AppendJSONString(out, r.Cursor(cursors[name]))
	}
	return append(out, '}')
}

// queryError classifies an error of a query run under qctx, a child of ctx.
func (r *Reader) queryError(ctx, qctx context.Context, err error) error {
	var se *store.Error
	switch {
	case errors.As(err, &se):
		return err
	case errors.Is(err, errTooLarge):
		return store.Errorf(store.CodeTooLarge, "the query result is larger than the limit of %s (the server's --max-result-bytes)", byteSize(r.maxResultBytes()))
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(qctx.Err(), context.DeadlineExceeded):
		return store.Errorf(store.CodeTimeout, "the query ran longer than the limit of %s and was cancelled", r.queryTimeout())
	}
	msg := err.Error()
	for prefix, code := range duckdbErrorCodes {
		if strings.HasPrefix(msg, prefix+": ") {
			return &store.Error{Code: code, Message: msg, Err: err}
		}
	}
	return fmt.Errorf("query: %w", err)
}

// valueError reports whether err is DuckDB's about the query's input (a failed cast, a
// function's argument), whose message may quote a value.
func valueError(err error) bool {
	msg := err.Error()
	for prefix, code := range duckdbErrorCodes {
		if code == store.CodeUnprocessable && strings.Contains(msg, prefix+": ") {
			return true
		}
	}
	return false
}

// duckdbErrorCodes maps the DuckDB error types that a query itself causes (DuckDB's
// ExceptionType names, which start its messages) to codes; any other DuckDB error (I/O,
// internal, connection, …) is an internal error.
var duckdbErrorCodes = map[string]store.Code{
	"Parser Error":                 store.CodeInvalid,
	"Syntax Error":                 store.CodeInvalid,
	"Binder Error":                 store.CodeUnprocessable,
	"Catalog Error":                store.CodeUnprocessable,
	"Conversion Error":             store.CodeUnprocessable,
	"Out of Range Error":           store.CodeUnprocessable,
	"Invalid Input Error":          store.CodeUnprocessable,
	"Mismatch Type Error":          store.CodeUnprocessable,
	"Invalid type Error":           store.CodeUnprocessable,
	"Divide by Zero Error":         store.CodeUnprocessable,
	"Decimal Error":                store.CodeUnprocessable,
	"Expression Error":             store.CodeUnprocessable,
	"Not implemented Error":        store.CodeUnprocessable,
	"Permission Error":             store.CodeUnprocessable,
	"Parameter Not Resolved Error": store.CodeUnprocessable,
	"Parameter Not Allowed Error":  store.CodeUnprocessable,
	"Missing Extension Error":      store.CodeUnprocessable,
	"Extension Autoloading Error":  store.CodeUnprocessable,
	"Sequence Error":               store.CodeUnprocessable,
	"TransactionContext Error":     store.CodeUnprocessable,
	"Out of Memory Error":          store.CodeTooLarge,
	"Object Size Error":            store.CodeTooLarge,
}

func (r *Reader) queryTimeout() time.Duration {
	if r.QueryTimeout > 0 {
		return r.QueryTimeout
	}
	return DefaultQueryTimeout
}

// byteSize writes n bytes for a person: in MiB from 1 MiB up, in KiB from 1 KiB up, else
// in bytes, with at most one decimal.
func byteSize(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size {
			return strconv.FormatFloat(math.Round(float64(n)*10/float64(u.size))/10, 'f', -1, 64) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

func (r *Reader) maxResultBytes() int64 {
	if r.MaxResultBytes > 0 {
		return r.MaxResultBytes
	}
	return DefaultMaxResultBytes
}

func (r *Reader) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default().With("component", "snapshot")
}

// errTooLarge is returned by limitedBuffer.Write past its limit.
var errTooLarge = errors.New("result too large")

// limitedBuffer is a bytes.Buffer that refuses to grow past max bytes.
type limitedBuffer struct {
	buf bytes.Buffer
	max int64
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if int64(b.buf.Len())+int64(len(p)) > b.max {
		return 0, errTooLarge
	}
	return b.buf.Write(p)
}
