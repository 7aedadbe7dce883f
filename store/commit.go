package store

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Batch is one ingest request, to be committed as one commit (docs/design.md, "Ingest": one
// request = one commit = one batch event).
type Batch struct {
	// Table names the target table.
	Table string
	// TableID, when not 0, is the id of the table the record was shaped for: if the
	// table was dropped and created again under the same name, Append fails with
	// ErrSchemaChanged instead of writing into the new table by position.
	TableID int64
	// SchemaVersion is the version Record was shaped for (TableInfo.Schema.Version). If
	// the table's schema changed since, Append fails with ErrSchemaChanged.
	SchemaVersion int
	// Record holds the rows with exactly the fields of that version's Schema.Arrow(). It
	// may have zero rows: an empty commit still gets its own seq.
	Record arrow.RecordBatch
	// IdempotencyKey, when not empty, makes a retry of the same request return the first
	// commit instead of committing again. Keys are scoped to the table.
	IdempotencyKey string
	// RequestHash identifies the request body (SHA-256); a retry with the same key and a
	// different hash is refused with CodeConflict.
	RequestHash []byte
	// Bytes is the request body size, recorded in the commit log.
	Bytes int64
	// Writer names the connection the append came from (the api passes the request's
	// remote address), or is empty. Group commit waits for the appends of its last group
	// whose writer had come back promptly before, never for an append without one
	// (DB.CommitDelay).
	Writer string
}

// Commit is the result of one committed Batch.
type Commit struct {
	Position      Position
	TableName     string
	SchemaVersion int
	Rows          int64
	Bytes         int64
	CommittedAt   time.Time
	// Duplicate is true when the IdempotencyKey matched an earlier commit: nothing new was
	// committed and the other fields describe the earlier commit.
	Duplicate bool
}

// Append commits b as the next commit of its table: rows and the commit log row in one
// DuckDB transaction, acknowledged only after DuckDB's commit returned (durable against
// kill -9), then published. Appends to one table are serialized; concurrent appends may
// share one transaction (group commit), each keeping its own seq.
// Errors: CodeNotFound (ErrTableNotFound), CodeConflict (ErrSchemaChanged, or an
// IdempotencyKey reused with another body), CodeInvalid (Record does not match the
// schema), ErrClosed, ctx errors, and CodeInternal for DuckDB failures.
func (db *DB) Append(ctx context.Context, b Batch) (Commit, error) {
	if err := db.checkOpen(); err != nil {
		return Commit{}, err
	}
	if b.Record == nil {
		return Commit{}, Errorf(CodeInvalid, "no record")
	}
	o := &op{ctx: ctx, batch: &b, submitted: db.Now(), done: make(chan opResult, 1)}
	res, err := db.writer.submit(ctx, o)
	return res.commit, err
}

// checkRecord verifies that rec has exactly the fields of s (s.Arrow(), compared column by
// column without building it).
func checkRecord(rec arrow.RecordBatch, s *Schema) error {
	got := rec.Schema()
	if got.NumFields() != len(s.Columns) {
		return Errorf(CodeInvalid, "record has %d columns, table schema version %d has %d", got.NumFields(), s.Version, len(s.Columns))
	}
	for i, c := range s.Columns {
		if want := c.Type.Arrow(); !arrow.TypeEqual(got.Field(i).Type, want) {
			return &Error{Code: CodeInvalid, Column: c.Name,
				Message: fmt.Sprintf("record column type %s does not match table type %s", got.Field(i).Type, want)}
		}
	}
	return nil
}

// RecordBytes is the size, in bytes, of rec's buffers: close to what its rows add to
// DuckDB's WAL, and to what holding it costs in memory.
func RecordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, col := range rec.Columns() {
		for _, b := range col.Data().Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
	}
	return n
}
