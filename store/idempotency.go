package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// duplicateOf answers an idempotent retry with the first commit, or a conflict when the
// retry's body differs from the first request's.
func duplicateOf(first Commit, firstHash []byte, b *Batch) (Commit, error) {
	if len(firstHash) > 0 && len(b.RequestHash) > 0 && !bytes.Equal(firstHash, b.RequestHash) {
		return Commit{}, &Error{Code: CodeConflict, Field: "Idempotency-Key",
			Message: "Idempotency-Key " + quoteForMessage(b.IdempotencyKey) + " was already used with a different request body"}
	}
	first.Duplicate = true
	return first, nil
}

type idempotentCommit struct {
	commit Commit
	hash   []byte
}

// lookupIdempotent finds the earlier commits of the keyed appends among plans, with one
// query per table (the commit log is scanned, so one scan serves a whole group), keyed
// by table id and Idempotency-Key as commitAppends keys them.
func (w *writer) lookupIdempotent(ctx context.Context, plans []appendPlan) (map[string]idempotentCommit, error) {
	keys := map[*table][]string{}
	for _, p := range plans {
		if p.t != nil && p.op.batch.IdempotencyKey != "" {
			keys[p.t] = append(keys[p.t], p.op.batch.IdempotencyKey)
		}
	}
	found := map[string]idempotentCommit{}
	for t, ks := range keys {
		if err := lookupIdempotent(ctx, w.conn, w.database, t.id, t.name, ks, func(key string, c idempotentCommit) {
			found[fmt.Sprintf("%d\x00%s", t.id, key)] = c
		}); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// lookupIdempotent calls fn with each of keys that names a commit in table tableID. catalog
// is the database file's catalog name: the writer's connection has another default.
func lookupIdempotent(ctx context.Context, conn *sql.Conn, catalog string, tableID int64, tableName string, keys []string, fn func(key string, c idempotentCommit)) error {
	args := []any{tableID}
	for _, k := range keys {
		args = append(args, k)
	}
	rows, err := conn.QueryContext(ctx, `
		SELECT idempotency_key, activation::VARCHAR, seq, schema_version, rows, bytes, committed_at, request_hash
		FROM `+QuoteIdent(catalog)+`.ducktail_catalog.commits WHERE table_id = ? AND idempotency_key IN (?`+strings.Repeat(", ?", len(keys)-1)+`)`, args...)
	if err != nil {
		return fmt.Errorf("idempotency lookup: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key, act string
		var r idempotentCommit
		if err := rows.Scan(&key, &act, &r.commit.Position.Seq, &r.commit.SchemaVersion, &r.commit.Rows, &r.commit.Bytes, &r.commit.CommittedAt, &r.hash); err != nil {
			return fmt.Errorf("idempotency lookup: %w", err)
		}
		r.commit.Position.TableID = tableID
		if r.commit.Position.Activation, err = uuid.Parse(act); err != nil {
			return err
		}
		r.commit.TableName = tableName
		fn(key, r)
	}
	return rows.Err()
}

// IdempotentCommit returns the commit that an earlier request with Idempotency-Key key
// made in table, if any: the answer to a retry, found before the retry's body is even
// decoded (its columns may have changed since). requestHash is compared with the first
// request's: a different body under the same key is a CodeConflict *Error. found is
// false when the table or the key is unknown. Append checks keys again, under the
// writer, for retries that race their first request.
func (db *DB) IdempotentCommit(ctx context.Context, table, key string, requestHash []byte) (c Commit, found bool, err error) {
	info, err := db.Table(table)
	if err != nil {
		return Commit{}, false, nil
	}
	err = db.Read(ctx, func(tx *ReadTx) error {
		var first *idempotentCommit
		if err := lookupIdempotent(ctx, tx.conn, db.writer.database, info.ID, info.Name, []string{key}, func(_ string, r idempotentCommit) { first = &r }); err != nil || first == nil {
			return err
		}
		found = true
		c, err = duplicateOf(first.commit, first.hash, &Batch{IdempotencyKey: key, RequestHash: requestHash})
		return err
	})
	return c, found, err
}
