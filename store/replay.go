package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/google/uuid"
)

// Activation describes one activation of a table as of a read transaction.
type Activation struct {
	ID      uuid.UUID
	TableID int64
	// TableName is the name of the activation's table, live or dropped.
	TableName string
	// Head is the seq of the activation's last commit (0 before the first).
	Head int64
	// Ended is true once the table was reset or dropped; Reason says which.
	Ended  bool
	Reason string

	physical string
}

// CommitInfo is one row of the commit log.
type CommitInfo struct {
	Seq           int64
	SchemaVersion int
	Rows          int64
	// Bytes is the commit's size: the larger of its request body and its decoded Arrow
	// buffers (store.RecordBytes), as the writer recorded it.
	Bytes       int64
	CommittedAt time.Time
}

// Activation returns the activation id of table tableID. Errors: a CodeNotFound *Error
// when no such activation of that table exists.
func (tx *ReadTx) Activation(ctx context.Context, tableID int64, id uuid.UUID) (Activation, error) {
	a := Activation{ID: id, TableID: tableID}
	var reason sql.NullString
	var ended sql.NullTime
	err := tx.conn.QueryRowContext(ctx, `
		SELECT a.head_seq, a.physical, a.ended_at, a.end_reason, t.name
		FROM ducktail_catalog.activations a JOIN ducktail_catalog.tables t ON t.id = a.table_id
		WHERE a.id = ?::UUID AND a.table_id = ?`,
		id.String(), tableID).Scan(&a.Head, &a.physical, &ended, &reason, &a.TableName)
	if errors.Is(err, sql.ErrNoRows) {
		return a, &Error{Code: CodeNotFound, Message: "no such activation"}
	}
	if err != nil {
		return a, fmt.Errorf("read activation: %w", err)
	}
	a.Ended, a.Reason = ended.Valid, reason.String
	a.Head = tx.head(id, a.Head)
	return a, nil
}

// Commits returns the commit log of activation a for after < seq ≤ through, in seq order:
// the rows on disk, then those still waiting in memory (unlogged.go).
func (tx *ReadTx) Commits(ctx context.Context, a Activation, after, through int64) ([]CommitInfo, error) {
	rows, err := tx.conn.QueryContext(ctx, `
		SELECT seq, schema_version, rows, bytes, committed_at FROM ducktail_catalog.commits
		WHERE activation = ?::UUID AND seq > ? AND seq <= ? ORDER BY seq`, a.ID.String(), after, through)
	if err != nil {
		return nil, fmt.Errorf("read commits: %w", err)
	}
	defer rows.Close()
	var out []CommitInfo
	for rows.Next() {
		var c CommitInfo
		if err := rows.Scan(&c.Seq, &c.SchemaVersion, &c.Rows, &c.Bytes, &c.CommittedAt); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return append(out, tx.unloggedCommits(a.ID, after, through)...), nil
}

// Schemas returns every schema version of activation a, by version.
func (tx *ReadTx) Schemas(ctx context.Context, a Activation) (map[int]*Schema, error) {
	rows, err := tx.conn.QueryContext(ctx, `SELECT version, from_seq, columns FROM ducktail_catalog.schema_versions WHERE activation = ?::UUID`, a.ID.String())
	if err != nil {
		return nil, fmt.Errorf("read schemas: %w", err)
	}
	defer rows.Close()
	out := map[int]*Schema{}
	for rows.Next() {
		s := &Schema{}
		var cols string
		if err := rows.Scan(&s.Version, &s.FromSeq, &cols); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(cols), &s.Columns); err != nil {
			return nil, fmt.Errorf("read schemas: %w", err)
		}
		out[s.Version] = s
	}
	return out, rows.Err()
}

// ReadCommits reads the rows of commits (consecutive entries of a's commit log, as
// returned by Commits) from the table itself and calls fn once per commit, in seq order,
// with the commit's schema version and its rows as one or more record batches shaped by
// that version's Schema.Arrow() (an empty slice for a commit without rows). Columns added
// later are not invented and renamed columns keep the name they had (docs/design.md, "The
// stream"). The batches are valid only during fn. Errors: DuckDB's, fn's.
func (tx *ReadTx) ReadCommits(ctx context.Context, a Activation, schemas map[int]*Schema, commits []CommitInfo, fn func(CommitInfo, *Schema, []arrow.RecordBatch) error) error {
	if len(commits) == 0 {
		return nil
	}
	// Select every physical column any of the commits' versions uses.
	ids := map[int]bool{}
	var cols []string
	for _, c := range commits {
		s, ok := schemas[c.SchemaVersion]
		if !ok {
			return fmt.Errorf("commit %d: schema version %d missing", c.Seq, c.SchemaVersion)
		}
		for _, col := range s.Columns {
			if !ids[col.ID] {
				ids[col.ID] = true
				cols = append(cols, QuoteIdent(physicalColumn(col.ID)))
			}
		}
	}
	query := "SELECT " + QuoteIdent(SeqColumn) + ", " + strings.Join(cols, ", ") +
		" FROM ducktail_data." + QuoteIdent(a.physical) + " WHERE " + QuoteIdent(SeqColumn) + " > ? AND " + QuoteIdent(SeqColumn) + " <= ?"
	from, through := commits[0].Seq-1, commits[len(commits)-1].Seq
	return tx.QueryArrow(ctx, query, []any{from, through}, func(rr array.RecordReader) error {
		s := &commitSplitter{commits: commits, schemas: schemas, fn: fn}
		for rr.Next() {
			if err := s.add(rr.RecordBatch()); err != nil {
				s.release()
				return err
			}
		}
		if err := rr.Err(); err != nil {
			s.release()
			return err
		}
		return s.finish()
	})
}

// commitSplitter cuts the scanned record batches (in insertion order, which is seq order
// because one writer appends) into commits, emitting commits without rows in between.
type commitSplitter struct {
	commits []CommitInfo
	schemas map[int]*Schema
	fn      func(CommitInfo, *Schema, []arrow.RecordBatch) error
	next    int                 // index in commits of the commit being gathered
	pending []arrow.RecordBatch // its batches so far
}

func (s *commitSplitter) add(rec arrow.RecordBatch) error {
	seqs := rec.Column(0).(*array.Int64).Int64Values()
	start := 0
	for start < len(seqs) {
		seq := seqs[start]
		end := start + 1
		for end < len(seqs) && seqs[end] == seq {
			end++
		}
		// Emit every commit before seq, including commits without rows.
		for s.next < len(s.commits) && s.commits[s.next].Seq < seq {
			if err := s.emit(); err != nil {
				return err
			}
		}
		if s.next >= len(s.commits) || s.commits[s.next].Seq != seq {
			return fmt.Errorf("replay: rows of seq %d found outside the commit log", seq)
		}
		c := s.commits[s.next]
		part, err := project(rec.NewSlice(int64(start), int64(end)), s.schemas[c.SchemaVersion])
		if err != nil {
			return err
		}
		s.pending = append(s.pending, part)
		start = end
	}
	return nil
}

func (s *commitSplitter) emit() error {
	c := s.commits[s.next]
	err := s.fn(c, s.schemas[c.SchemaVersion], s.pending)
	s.release()
	s.next++
	return err
}

func (s *commitSplitter) finish() error {
	for s.next < len(s.commits) {
		if err := s.emit(); err != nil {
			return err
		}
	}
	return nil
}

func (s *commitSplitter) release() {
	for _, r := range s.pending {
		r.Release()
	}
	s.pending = nil
}

// project returns the columns of schema s from a scanned slice whose fields are named by
// physical column, as a record shaped by s.Arrow(). It takes ownership of slice.
func project(slice arrow.RecordBatch, s *Schema) (arrow.RecordBatch, error) {
	defer slice.Release()
	byName := map[string]int{}
	for i, f := range slice.Schema().Fields() {
		byName[f.Name] = i
	}
	want := s.Arrow()
	cols := make([]arrow.Array, len(s.Columns))
	for i, c := range s.Columns {
		j, ok := byName[physicalColumn(c.ID)]
		if !ok {
			return nil, fmt.Errorf("replay: column %s not scanned", c.Name)
		}
		arr, err := retype(slice.Column(j), want.Field(i).Type)
		if err != nil {
			return nil, fmt.Errorf("replay: column %s: %w", c.Name, err)
		}
		cols[i] = arr
	}
	rec := array.NewRecordBatch(want, cols, slice.NumRows())
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}

// retype returns arr as type dt: arr itself (retained) when the types are equal, or the
// same buffers relabelled when only metadata differs (a time zone's spelling).
func retype(arr arrow.Array, dt arrow.DataType) (arrow.Array, error) {
	if arrow.TypeEqual(arr.DataType(), dt) {
		arr.Retain()
		return arr, nil
	}
	if arr.DataType().ID() != dt.ID() || arr.DataType().ID() != arrow.TIMESTAMP {
		return nil, fmt.Errorf("stored as %s, schema says %s", arr.DataType(), dt)
	}
	data := arr.Data()
	return array.MakeFromData(array.NewData(dt, data.Len(), data.Buffers(), data.Children(), data.NullN(), data.Offset())), nil
}

// CommitStats returns how many commits and rows activation a has for after < seq ≤
// through, from the commit log alone.
func (tx *ReadTx) CommitStats(ctx context.Context, a Activation, after, through int64) (commits, rows int64, err error) {
	err = tx.conn.QueryRowContext(ctx, `
		SELECT count(*), coalesce(sum(rows), 0)::BIGINT FROM ducktail_catalog.commits
		WHERE activation = ?::UUID AND seq > ? AND seq <= ?`, a.ID.String(), after, through).Scan(&commits, &rows)
	if err != nil {
		return 0, 0, fmt.Errorf("read commit stats: %w", err)
	}
	for _, c := range tx.unloggedCommits(a.ID, after, through) {
		commits, rows = commits+1, rows+c.Rows
	}
	return commits, rows, nil
}
