package stream

import (
	"context"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ducktail/ducktail/store"
	"github.com/ducktail/ducktail/valuetext"
)

// Reasons a shaped stream ends with refresh-required, besides the schema changes of
// store.Shape.Check (store.ReasonShapeColumnDropped, store.ReasonShapeColumnRenamed).
const (
	// ReasonShapeMismatch: the cursor was read through another shape (or none), so the
	// stream cannot continue it exactly (docs/design.md, "Shapes and policies").
	ReasonShapeMismatch = "shape_mismatch"
)

// FailureShape is the code of the failure event that ends a shaped stream whose
// predicate failed on a value of a commit (a cast): the message names no value, since
// the value may be in a row outside the token's policy.
const FailureShape = "shape_failed"

// shapedCommits holds one commit's rows through each distinct shape its subscribers use,
// by shape key: each is filtered once, by the first session that needs it, and encoded
// once per framing × encoding, shared by every session of that shape (docs/design.md,
// "Shapes and policies": cost grows with shapes, not subscribers).
type shapedCommits struct {
	mu    sync.Mutex
	byKey map[string]*shapedCommit
	// batchOnce filters the commit through every shape in use, once; batch holds those
	// results until each shape's entry takes its own.
	batchOnce sync.Once
	batch     map[string]shapeResult
}

// shapeResult is one shape's rows of a commit, or its error.
type shapeResult struct {
	recs []arrow.RecordBatch
	err  error
}

// filterAll filters commit c through shape and every other shape in use that applies to
// the commit's schema, in one query, and keeps the results for the shapes' entries.
func (sc *shapedCommits) filterAll(db Shaper, c *sharedCommit, inUse []shapeUse, shape *store.Shape, key string) {
	shapes, keys := []*store.Shape{shape}, []string{key}
	for _, u := range inUse {
		if reason, _ := u.shape.Check(c.event.Schema); u.key != key && reason == "" {
			shapes, keys = append(shapes, u.shape), append(keys, u.key)
		}
	}
	recs, errs := db.ShapeRecordsEach(context.Background(), c.event.Schema, c.records(), shapes)
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.batch = make(map[string]shapeResult, len(keys))
	for i, k := range keys {
		sc.batch[k] = shapeResult{recs: recs[i], err: errs[i]}
	}
}

// take returns, and forgets, the batch result of the shape of key.
func (sc *shapedCommits) take(key string) (shapeResult, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	r, ok := sc.batch[key]
	delete(sc.batch, key)
	return r, ok
}

// shapedCommit is one commit through one shape.
type shapedCommit struct {
	once   sync.Once
	recs   []arrow.RecordBatch
	schema *arrow.Schema
	rows   int64
	err    error

	cursor   string
	payloads [2]lazyPayload // by Encoding
	frames   [3][2]lazyFrame
}

// get returns the shaped commit of key, made on first use.
func (sc *shapedCommits) get(key string) *shapedCommit {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.byKey == nil {
		sc.byKey = map[string]*shapedCommit{}
	}
	c := sc.byKey[key]
	if c == nil {
		c = &shapedCommit{}
		sc.byKey[key] = c
	}
	return c
}

// shapeUse is one distinct shape in use on a table, with the number of sessions using it.
type shapeUse struct {
	shape *store.Shape
	key   string
	n     int
}

// shapesInUse is every distinct shape the sessions of each table use, so that the first
// session needing a commit through its shape filters the commit through all of them in
// one query (store.DB.ShapeRecordsEach). It is safe for concurrent use.
type shapesInUse struct {
	mu      sync.Mutex
	byTable map[int64]map[string]*shapeUse
}

// add counts one more session of table using shape.
func (u *shapesInUse) add(table int64, shape *store.Shape, key string) {
	if shape.Empty() {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byTable == nil {
		u.byTable = map[int64]map[string]*shapeUse{}
	}
	m := u.byTable[table]
	if m == nil {
		m = map[string]*shapeUse{}
		u.byTable[table] = m
	}
	if m[key] == nil {
		m[key] = &shapeUse{shape: shape, key: key}
	}
	m[key].n++
}

// remove counts one session fewer of table using the shape of key.
func (u *shapesInUse) remove(table int64, key string) {
	if key == "" {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	m := u.byTable[table]
	if use := m[key]; use != nil {
		if use.n--; use.n <= 0 {
			delete(m, key)
		}
		if len(m) == 0 {
			delete(u.byTable, table)
		}
	}
}

// of returns the shapes in use on table.
func (u *shapesInUse) of(table int64) []shapeUse {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]shapeUse, 0, len(u.byTable[table]))
	for _, use := range u.byTable[table] {
		out = append(out, *use)
	}
	return out
}

// set fills sc with one shape's rows of commit c.
func (sc *shapedCommit) set(c *sharedCommit, shape *store.Shape, recs []arrow.RecordBatch, err error) {
	sc.recs, sc.err = recs, err
	sc.schema = shape.Project(c.event.Schema).Arrow()
	for _, r := range recs {
		sc.rows += r.NumRows()
	}
	sc.cursor = c.codec.EncodeShaped(c.event.Position, shape.Tag())
}

// shapedFrame returns the batch frame of commit c through shape in framing f and
// encoding enc. The first session that needs any shape of the commit has DuckDB filter
// the commit's rows through every shape in use on the table that applies to its schema,
// in one query (store.DB.ShapeRecordsEach); a shape taken into use after that is filtered
// on its own when first needed. A commit none of whose rows match is an empty batch, so
// that the subscriber's cursor moves on with every commit.
func (c *sharedCommit) shapedFrame(db Shaper, inUse func() []shapeUse, shape *store.Shape, key string, f Framing, enc Encoding) (Frame, error) {
	c.shaped.batchOnce.Do(func() { c.shaped.filterAll(db, c, inUse(), shape, key) })
	sc := c.shaped.get(key)
	sc.once.Do(func() {
		if r, ok := c.shaped.take(key); ok {
			sc.set(c, shape, r.recs, r.err)
			return
		}
		recs, err := db.ShapeRecords(context.Background(), c.event.Schema, c.records(), shape)
		sc.set(c, shape, recs, err)
	})
	if sc.err != nil {
		return Frame{}, &shapeError{err: sc.err}
	}
	lf := &sc.frames[f][enc]
	lf.once.Do(func() {
		lp := &sc.payloads[enc]
		lp.once.Do(func() { lp.payload, lp.err = batchPayload(enc, sc.schema, sc.recs) })
		if lp.err != nil {
			lf.err = lp.err
			return
		}
		lf.frame, lf.err = dataFrame(f, EventBatch, sc.cursor, lp.payload,
			CommitMeta{Position: c.event.Position, Rows: sc.rows, CommittedAt: c.event.CommittedAt})
	})
	return lf.frame, lf.err
}

// shapeError is a shape's predicate failing on a commit's rows.
type shapeError struct{ err error }

func (e *shapeError) Error() string { return "shape: " + e.err.Error() }
func (e *shapeError) Unwrap() error { return e.err }

// commitFrame returns the session's batch frame of a live commit: the commit's own, or
// through the session's shape.
func (s *Session) commitFrame(c *sharedCommit) (Frame, error) {
	if s.shape.Empty() {
		return c.frame(s.framing, s.encoding)
	}
	inUse := func() []shapeUse { return s.hub.shapes.of(s.tableID) }
	return c.shapedFrame(s.hub.Shaper, inUse, s.shape, s.shapeKey, s.framing, s.encoding)
}

// shapeRecords returns one replayed commit's rows, of schema, through the session's
// shape, with the Arrow schema of the payload; release releases what it returned. A
// schema the shape does not apply to gets no rows: its schema event, which comes first,
// ends the stream (checkShape).
func (s *Session) shapeRecords(ctx context.Context, schema *store.Schema, recs []arrow.RecordBatch) (out []arrow.RecordBatch, as *arrow.Schema, release func(), err error) {
	if s.shape.Empty() {
		return recs, schema.Arrow(), func() {}, nil
	}
	as = s.shape.Project(schema).Arrow()
	if reason, _ := s.shape.Check(schema); reason != "" {
		return nil, as, func() {}, nil
	}
	out, err = s.hub.Shaper.ShapeRecords(ctx, schema, recs, s.shape)
	if err != nil {
		return nil, nil, nil, &shapeError{err: err}
	}
	return out, as, func() {
		for _, r := range out {
			r.Release()
		}
	}, nil
}

// checkShape ends the stream with refresh-required when schema no longer has a column
// the session's shape names, under that name; false when it did.
func (s *Session) checkShape(schema *store.Schema) bool {
	reason, column := s.shape.Check(schema)
	if reason == "" {
		return true
	}
	data := valuetext.AppendJSONString([]byte(`{"reason":`), reason)
	data = valuetext.AppendJSONString(append(data, `,"column":`...), column)
	data = append(data, '}')
	s.out = append(s.out, Frame{Event: EventRefreshRequired, Bytes: mustEncode(s.framing, EventRefreshRequired, data), Terminal: true, Reason: reason})
	return false
}

// encodeCursor returns the cursor of p for this session: bound to its shape.
func (s *Session) encodeCursor(p store.Position) string {
	return s.hub.cursors.EncodeShaped(p, s.shapeTag)
}

// shapeFailure is the terminal frame of a shape's predicate failing on a commit. The
// cause is not logged: DuckDB's message may quote a value outside the token's policy.
func (s *Session) shapeFailure() Frame {
	s.hub.Logger.Info("shaped stream failed: the predicate failed on a commit", "table", s.table)
	return terminalFrame(s.framing, EventFailure, FailureShape, 0, "the shape's predicate failed on a value of the table (a cast or a function's argument); guard it with TRY_CAST or CASE")
}
