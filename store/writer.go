package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"
)

// writer is the store's single writing goroutine. Every change to the database goes
// through it, which serializes writers per table (docs/design.md, "Storage model") and lets
// queued appends share one transaction and one fsync (group commit).
type writer struct {
	db   *DB
	conn *sql.Conn
	ops  chan *op
	// stopped is closed when run returns: nothing answers an op after that.
	stopped chan struct{}
	// checkpoints is the checkpoint policy's state; only the writer goroutine uses it.
	checkpoints checkpointState
	// database is the catalog name DuckDB gives the database file.
	database string
	// commitLog appends the commit log's rows (commitlog.go); nil until the first commit
	// and after it failed.
	commitLog *duckdb.Appender
	// rowAppenders are the appenders of small groups' rows (rowappender.go), by table.
	rowAppenders map[*table]*duckdb.Appender
	// rowInserts and commitLogInserts are the prepared INSERTs of the smallest groups'
	// rows and commit-log rows (rowinsert.go).
	rowInserts       map[*table]*insertStatements
	commitLogInserts map[commitLogShape]*duckdb.Stmt
	// beginStmt, commitStmt and rollbackStmt are the transaction statements, prepared
	// once on conn: executed unprepared, each is parsed and planned again, about 50 µs
	// of a 1-row commit's CPU on the project's 2-core machine.
	beginStmt, commitStmt, rollbackStmt *sql.Stmt
	// returns is what gather expects of the appends to come (gather.go).
	returns returns
}

// op is one queued write: an append (batch != nil) or a catalog change (ddl != nil).
type op struct {
	ctx   context.Context
	batch *Batch
	// submitted is when the append was submitted (DB.Now), for gather.go.
	submitted time.Time
	ddl       ddlFunc
	done      chan opResult
}

// ddlFunc runs a catalog change inside the writer's open transaction. It returns apply,
// run under DB.mu after the commit to update the in-memory catalog, the events to publish,
// and a result value for the caller.
type ddlFunc func(ctx context.Context, tx *writeTx) (apply func(), events []Event, value any, err error)

type opResult struct {
	commit Commit
	value  any
	err    error
}

// writeTx is the writer's connection inside one transaction, with the Arrow views staged
// for it in the scratch database (stageRows): each is released after COMMIT or ROLLBACK.
type writeTx struct {
	conn     *sql.Conn
	staged   []stagedRows
	releases []func()
	// buffered are the tables whose rows wait in the writer's appenders (bufferRows).
	buffered []*table
	// bound are the prepared INSERTs bound to rows of this transaction (insertRowValues).
	bound []boundInsert
}

// stagedRows is one table's rows of a group commit, registered as a scratch view.
type stagedRows struct {
	t    *table
	view string
}

func (tx *writeTx) exec(ctx context.Context, query string, args ...any) error {
	if _, err := tx.conn.ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("%s: %w", firstLine(query), err)
	}
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

func newWriter(ctx context.Context, db *DB) (*writer, error) {
	conn, err := db.sqlDB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("open writer connection: %w", err)
	}
	w := &writer{db: db, conn: conn, ops: make(chan *op, 1024), stopped: make(chan struct{}),
		rowAppenders: map[*table]*duckdb.Appender{}, rowInserts: map[*table]*insertStatements{},
		commitLogInserts: map[commitLogShape]*duckdb.Stmt{}, returns: newReturns()}
	if err := conn.QueryRowContext(ctx, "SELECT current_database()").Scan(&w.database); err != nil {
		conn.Close()
		return nil, fmt.Errorf("open writer connection: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "ATTACH IF NOT EXISTS ':memory:' AS "+QuoteIdent(scratchCatalog)+"; USE "+QuoteIdent(scratchCatalog)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("attach the scratch database: %w", err)
	}
	for _, s := range []struct {
		stmt  **sql.Stmt
		query string
	}{{&w.beginStmt, "BEGIN TRANSACTION"}, {&w.commitStmt, "COMMIT"}, {&w.rollbackStmt, "ROLLBACK"}} {
		var err error
		if *s.stmt, err = conn.PrepareContext(ctx, s.query); err != nil {
			w.close()
			return nil, fmt.Errorf("prepare %s: %w", s.query, err)
		}
	}
	return w, nil
}

// scratchCatalog is an in-memory database attached next to the file, where the writer
// registers the Arrow views it inserts rows from. A view registered in the file's own
// catalog is a catalog change, logged in the WAL, and DuckDB refuses every CHECKPOINT while
// a read transaction older than a committed catalog change is open; in memory it is
// neither. User SQL cannot name it: the sandbox reads only schema main of the file.
//
// It is the writer connection's default database, because RegisterView creates its view
// in the default one: so staging rows costs no USE statement, and the writer names the
// file's tables with the file's catalog (w.file), except in catalog changes (runDDL).
const scratchCatalog = ReservedPrefix + "_scratch"

// file returns the schema-qualified name of an object of the database file, qualified by
// the file's catalog as the writer connection must name it.
func (w *writer) file(name string) string {
	return QuoteIdent(w.database) + "." + name
}

// use makes catalog the writer connection's default database.
func (w *writer) use(ctx context.Context, catalog string) error {
	if _, err := w.conn.ExecContext(ctx, "USE "+QuoteIdent(catalog)); err != nil {
		return fmt.Errorf("use %s: %w", catalog, err)
	}
	return nil
}

func (w *writer) close() error {
	w.closeCommitLog()
	w.dropRowAppenders()
	for _, s := range w.commitLogInserts {
		s.Close()
	}
	clear(w.commitLogInserts)
	for _, s := range []*sql.Stmt{w.beginStmt, w.commitStmt, w.rollbackStmt} {
		if s != nil {
			s.Close()
		}
	}
	return w.conn.Close()
}

// submit queues o and waits for its result. If ctx ends while o is queued or running,
// submit returns ctx's error; o may still commit.
func (w *writer) submit(ctx context.Context, o *op) (opResult, error) {
	select {
	case w.ops <- o:
	case <-ctx.Done():
		return opResult{}, ctx.Err()
	case <-w.db.ctx.Done():
		return opResult{}, ErrClosed
	}
	select {
	case r := <-o.done:
		return r, r.err
	case <-ctx.Done():
		return opResult{}, ctx.Err()
	case <-w.stopped:
		select {
		case r := <-o.done:
			return r, r.err
		default:
			return opResult{}, ErrClosed
		}
	}
}

func (w *writer) run(ctx context.Context) {
	defer close(w.stopped)
	defer func() {
		if err := w.writeUnlogged(ctx); err != nil {
			w.db.Logger.Error("could not write the waiting commit-log rows at stop; the next Open rebuilds them", "err", err)
		}
	}()
	var next *op
	for {
		o := next
		next = nil
		if o == nil {
			w.maybeCheckpoint(ctx, false)
			select {
			case o = <-w.ops:
			case <-ctx.Done():
				w.failQueued()
				return
			default:
				// Nothing queued: wait, writing the waiting commit-log rows when the
				// oldest reaches maxUnloggedAge and folding the WAL once the writer has
				// been idle for IdleCheckpoint.
				wait, forLog := w.idleWait()
				idle := time.NewTimer(wait)
				select {
				case o = <-w.ops:
				case <-idle.C:
				case <-ctx.Done():
					idle.Stop()
					w.failQueued()
					return
				}
				idle.Stop()
				if o == nil && forLog {
					if !w.unloggedDue() {
						continue
					}
					if err := w.writeUnlogged(ctx); err != nil {
						w.db.Logger.Warn("could not write the waiting commit-log rows; the next commit writes them", "err", err)
					}
					continue
				}
				if o == nil {
					w.maybeCheckpoint(ctx, true)
					continue
				}
			}
		}
		if o.batch == nil {
			w.runDDL(ctx, o)
			continue
		}
		var group []*op
		group, next = w.gather(ctx, o)
		if ctx.Err() != nil {
			// Closed while the group waited for more appends.
			for _, o := range group {
				o.done <- opResult{err: ErrClosed}
			}
			if next != nil {
				next.done <- opResult{err: ErrClosed}
			}
			w.failQueued()
			return
		}
		w.commitGroup(ctx, group)
	}
}

func (w *writer) failQueued() {
	for {
		select {
		case o := <-w.ops:
			o.done <- opResult{err: ErrClosed}
		default:
			return
		}
	}
}

// commitGroup commits a group of appends in one transaction. If that transaction fails,
// each append is retried alone, so one bad append cannot fail the others.
func (w *writer) commitGroup(ctx context.Context, group []*op) {
	live := group[:0]
	for _, o := range group {
		if err := o.ctx.Err(); err != nil {
			o.done <- opResult{err: err}
			continue
		}
		live = append(live, o)
	}
	if len(live) == 0 {
		return
	}
	err := w.commitAppends(ctx, live)
	if err == nil || len(live) == 1 {
		if err != nil {
			live[0].done <- opResult{err: err}
		}
		return
	}
	w.db.Logger.Warn("group commit failed, retrying appends one by one", "appends", len(live), "err", err)
	for _, o := range live {
		if err := w.commitAppends(ctx, []*op{o}); err != nil {
			o.done <- opResult{err: err}
		}
	}
}

// appendPlan is what commitAppends decided for one op.
type appendPlan struct {
	op     *op
	t      *table
	commit Commit
	// size is RecordBytes of the op's record, measured once for the commit log and the
	// choice of how its rows are written.
	size int64
	err  error // answered to this op alone; the transaction goes on
}

// commitAppends commits ops in one transaction and answers each op, or returns the error
// that failed the whole transaction without answering any.
func (w *writer) commitAppends(ctx context.Context, ops []*op) (err error) {
	// Deferred first, so run last: after the rollback below, when the group's rows are
	// out of the caches it trims.
	defer w.trimRowCaches()
	tx := &writeTx{conn: w.conn}
	began := false
	defer func() {
		switch {
		case err != nil && began:
			w.rollback(tx)
		case err != nil:
			w.release(tx)
		}
	}()
	now := w.db.Now().UTC()
	plans := make([]appendPlan, len(ops))
	for i, o := range ops {
		plans[i].op = o
		w.db.mu.RLock()
		plans[i].t = w.db.tables[FoldName(o.batch.Table)]
		w.db.mu.RUnlock()
	}
	previous, err := w.lookupIdempotent(ctx, plans)
	if err != nil {
		return err
	}
	heads := map[*table]int64{}
	var order []*table
	byKey := map[string]*appendPlan{}
	for i := range plans {
		p := &plans[i]
		b := p.op.batch
		if p.t == nil {
			p.err = tableNotFound(b.Table)
			continue
		}
		if b.TableID != 0 && b.TableID != p.t.id {
			p.err = &Error{Code: CodeConflict, Message: fmt.Sprintf("table %s was dropped and created again; retry", p.t.name), Err: ErrSchemaChanged}
			continue
		}
		if b.SchemaVersion != p.t.schema.Version {
			p.err = &Error{Code: CodeConflict, Message: fmt.Sprintf("table %s changed schema (version %d, request shaped for %d); retry", p.t.name, p.t.schema.Version, b.SchemaVersion), Err: ErrSchemaChanged}
			continue
		}
		if p.err = checkRecord(b.Record, p.t.schema); p.err != nil {
			continue
		}
		if b.IdempotencyKey != "" {
			k := fmt.Sprintf("%d\x00%s", p.t.id, b.IdempotencyKey)
			if first, ok := byKey[k]; ok {
				p.commit, p.err = duplicateOf(first.commit, first.op.batch.RequestHash, b)
				p.commit.Duplicate = true
				continue
			}
			if prev, found := previous[k]; found {
				p.commit, p.err = duplicateOf(prev.commit, prev.hash, b)
				continue
			}
			byKey[k] = p
		}
		if _, ok := heads[p.t]; !ok {
			heads[p.t] = p.t.head
			order = append(order, p.t)
		}
		heads[p.t]++
		p.size = RecordBytes(b.Record)
		p.commit = Commit{
			Position:      Position{TableID: p.t.id, Activation: p.t.activation, Seq: heads[p.t]},
			TableName:     p.t.name,
			SchemaVersion: p.t.schema.Version,
			Rows:          b.Record.NumRows(),
			Bytes:         b.Bytes,
			CommittedAt:   now,
		}
	}
	for _, t := range order {
		if w.bufferRows(tx, t, plans) {
			continue
		}
		if err := w.stageRows(tx, t, plans); err != nil {
			return err
		}
	}
	if err := w.begin(ctx); err != nil {
		return err
	}
	began = true
	if err := w.insertRows(ctx, tx); err != nil {
		return err
	}
	if err := w.flushBuffered(tx); err != nil {
		return err
	}
	logRows := commitLogRows(plans)
	deferred := w.deferLog(logRows)
	if !deferred {
		if err := w.writeCommitLog(append(slices.Clone(w.db.unlogged), logRows...)); err != nil {
			return err
		}
	}
	// The heads are not written to the catalog: they are the commit log's seqs (see
	// ReadTx.pinSnapshot for why no commit may UPDATE a catalog row).
	var committed int64
	if err := w.commit(ctx, tx, func() {
		w.db.logUnlogged(logRows, deferred)
		for _, p := range plans {
			if p.err == nil && !p.commit.Duplicate {
				p.t.head = p.commit.Position.Seq
				p.t.rows += p.commit.Rows
				committed++
			}
		}
	}); err != nil {
		return err
	}
	for _, p := range plans {
		if p.err == nil && !p.commit.Duplicate {
			w.db.Publisher.Publish(CommitEvent{
				TableName: p.t.name, Position: p.commit.Position,
				Schema: p.t.schema, Record: p.op.batch.Record, Rows: p.commit.Rows, CommittedAt: now,
			})
		}
	}
	w.noteCommitted(committed)
	if committed > 0 {
		// Counted before the answers, so that Stats read after an append returned counts it.
		w.db.stats.commits.Add(committed)
		w.db.stats.commitTxs.Add(1)
	}
	w.noteAnswered(plans)
	for _, p := range plans {
		p.op.done <- opResult{commit: p.commit, err: p.err}
	}
	return nil
}

// stageRows registers the rows of t's commits among plans (each batch prefixed with a
// constant seq column, fields named by physical column) as one Arrow view in the scratch
// database, before the transaction begins: DuckDB writes to one database per
// transaction, and the view is a write to the scratch one. The view is named by its place
// among the transaction's staged views, and registering a name again replaces the view of
// an earlier transaction: that view was released after its COMMIT or ROLLBACK and is never
// queried again (docs/design.md, "Measured facts about DuckDB": a registered view scans
// once, and querying it after its release crashes the process).
func (w *writer) stageRows(tx *writeTx, t *table, plans []appendPlan) error {
	var recs []arrow.RecordBatch
	var viewSchema *arrow.Schema
	for _, p := range plans {
		if p.t != t || p.err != nil || p.commit.Duplicate || p.commit.Rows == 0 {
			continue
		}
		rec := withSeq(p.op.batch.Record, p.commit.Position.Seq, t.schema)
		viewSchema = rec.Schema()
		recs = append(recs, rowGroups(rec)...)
	}
	if len(recs) == 0 {
		return nil
	}
	recs = coalesceSmall(recs)
	view := ReservedPrefix + "_ingest_" + strconv.Itoa(len(tx.staged))
	return w.conn.Raw(func(dc any) error {
		ar, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err == nil {
			var rdr array.RecordReader
			if rdr, err = array.NewRecordReader(viewSchema, recs); err == nil {
				var release func()
				if release, err = ar.RegisterView(rdr, view); err == nil {
					tx.staged = append(tx.staged, stagedRows{t: t, view: view})
					tx.releases = append(tx.releases, release)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("stage rows of %s: %w", t.name, err)
		}
		return nil
	})
}

// insertRows copies every staged view into its table's physical table, inside the open
// transaction.
func (w *writer) insertRows(ctx context.Context, tx *writeTx) error {
	for _, st := range tx.staged {
		cols := []string{QuoteIdent(SeqColumn)}
		for _, c := range st.t.schema.Columns {
			cols = append(cols, QuoteIdent(physicalColumn(c.ID)))
		}
		insert := "INSERT INTO " + w.file("ducktail_data."+QuoteIdent(st.t.physical)) + " (" + strings.Join(cols, ", ") +
			") SELECT * FROM " + QuoteIdent(scratchCatalog) + ".main." + QuoteIdent(st.view)
		if _, err := tx.conn.ExecContext(ctx, insert); err != nil {
			return fmt.Errorf("insert rows into %s: %w", st.t.name, err)
		}
	}
	return nil
}

// withSeq returns rec with a leading int64 column holding seq in every row, fields named
// by physical column.
func withSeq(rec arrow.RecordBatch, seq int64, s *Schema) arrow.RecordBatch {
	n := int(rec.NumRows())
	vals := make([]int64, n)
	for i := range vals {
		vals[i] = seq
	}
	seqArr := array.NewInt64Data(array.NewData(arrow.PrimitiveTypes.Int64, n,
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(vals))}, nil, 0, 0))
	fields := []arrow.Field{{Name: SeqColumn, Type: arrow.PrimitiveTypes.Int64}}
	cols := []arrow.Array{seqArr}
	for i, c := range s.Columns {
		fields = append(fields, arrow.Field{Name: physicalColumn(c.ID), Type: rec.Column(i).DataType(), Nullable: true})
		cols = append(cols, rec.Column(i))
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n))
}

func (w *writer) begin(ctx context.Context) error {
	if _, err := w.beginStmt.ExecContext(ctx); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	return nil
}

// commit commits tx and, when that succeeded, runs apply under DB.mu to update the
// in-memory catalog; both under DB.commitMu, so that a read transaction fixing its
// snapshot sees either neither or both.
func (w *writer) commit(ctx context.Context, tx *writeTx, apply func()) error {
	w.db.commitMu.Lock()
	defer w.db.commitMu.Unlock()
	_, err := w.commitStmt.ExecContext(ctx)
	w.release(tx)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if apply != nil {
		w.db.mu.Lock()
		apply()
		w.db.mu.Unlock()
	}
	return nil
}

func (w *writer) rollback(tx *writeTx) {
	if _, err := w.rollbackStmt.ExecContext(context.WithoutCancel(w.db.ctx)); err != nil {
		w.db.Logger.Error("rollback failed", "err", err)
	}
	w.release(tx)
}

// release runs the releases of tx's staged Arrow streams, after COMMIT or ROLLBACK. Their
// views stay in the scratch database until a later transaction registers the same names
// (stageRows), or the in-memory database goes at Close.
func (w *writer) release(tx *writeTx) {
	for _, t := range tx.buffered {
		w.dropRowAppender(t) // rows of a transaction that did not reach its flush
	}
	tx.buffered = nil
	tx.staged = nil
	for _, r := range tx.releases {
		r()
	}
	tx.releases = nil
}

// runDDL runs one catalog change in its own transaction, with the file as the writer
// connection's default database, so that the change names the file's objects as every
// other connection does.
func (w *writer) runDDL(ctx context.Context, o *op) {
	if err := o.ctx.Err(); err != nil {
		o.done <- opResult{err: err}
		return
	}
	w.dropRowAppenders()
	if err := w.writeUnlogged(ctx); err != nil {
		o.done <- opResult{err: err}
		return
	}
	if err := w.use(ctx, w.database); err != nil {
		o.done <- opResult{err: err}
		return
	}
	defer func() {
		if err := w.use(context.WithoutCancel(ctx), scratchCatalog); err != nil {
			w.db.Logger.Error("could not make the scratch database the writer's default again", "err", err)
		}
	}()
	if err := w.begin(ctx); err != nil {
		o.done <- opResult{err: err}
		return
	}
	tx := &writeTx{conn: w.conn}
	apply, events, value, err := o.ddl(ctx, tx)
	if err == nil {
		err = w.commit(ctx, tx, apply)
	} else {
		w.rollback(tx)
	}
	if err != nil {
		o.done <- opResult{err: err}
		return
	}
	w.noteCommitted(1)
	for _, e := range events {
		w.db.Publisher.Publish(e)
	}
	o.done <- opResult{value: value}
}

// change runs fn as a catalog change in the writer and returns its value.
func (db *DB) change(ctx context.Context, fn ddlFunc) (any, error) {
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	res, err := db.writer.submit(ctx, &op{ctx: ctx, ddl: fn, done: make(chan opResult, 1)})
	return res.value, err
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
