package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Position is a place in a table's commit history: after commit Seq of activation
// Activation of table TableID. Seq starts at 1 in each activation and grows by one per
// commit; Seq 0 means "before the first commit" and is never a commit's own position
// (docs/design.md, "Storage model"). The stream package encodes a Position as a cursor.
type Position struct {
	TableID    int64
	Activation uuid.UUID
	Seq        int64
}

// TableInfo describes a live table at one moment.
type TableInfo struct {
	ID        int64
	Name      string
	CreatedAt time.Time
	// Head is the position after the table's last commit.
	Head Position
	// Schema is the current schema version.
	Schema Schema
	// Rows is the number of rows in the current activation, as of Head.
	Rows int64
}

// table is the writer's in-memory copy of one live table's catalog rows. Fields change
// only in the writer goroutine, under DB.mu.
type table struct {
	id         int64
	name       string
	createdAt  time.Time
	activation uuid.UUID
	physical   string
	head       int64
	rows       int64
	nextColumn int
	schema     *Schema
}

func (t *table) info() TableInfo {
	s := *t.schema
	s.Columns = append([]Column(nil), t.schema.Columns...)
	return TableInfo{
		ID: t.id, Name: t.name, CreatedAt: t.createdAt,
		Head:   Position{TableID: t.id, Activation: t.activation, Seq: t.head},
		Schema: s, Rows: t.rows,
	}
}

// started is the ActivationStarted of t's activation, before its first commit.
func (t *table) started() ActivationStarted {
	return ActivationStarted{TableName: t.name, CreatedAt: t.createdAt, Schema: t.schema,
		Position: Position{TableID: t.id, Activation: t.activation}}
}

// Table returns the live table named name (case-insensitive, as DuckDB resolves names)
// from the in-memory catalog. The writer updates it after each commit or catalog change
// and before publishing the change, so a subscriber registered with the publisher before
// calling Table receives every change after the returned head.
// Errors: a CodeNotFound *Error wrapping ErrTableNotFound.
func (db *DB) Table(name string) (TableInfo, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	t, ok := db.tables[FoldName(name)]
	if !ok {
		return TableInfo{}, tableNotFound(name)
	}
	return t.info(), nil
}

// Tables returns every live table, ordered by name.
func (db *DB) Tables() []TableInfo {
	db.mu.RLock()
	defer db.mu.RUnlock()
	out := make([]TableInfo, 0, len(db.tables))
	for _, t := range db.tables {
		out = append(out, t.info())
	}
	slices.SortFunc(out, func(a, b TableInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// TableNotFound returns the error of a table named name that does not exist (CodeNotFound,
// wrapping ErrTableNotFound): the api answers it for a table outside a token's scope too,
// so that a token cannot tell the two apart (docs/design.md, "Shapes and policies").
func TableNotFound(name string) error { return tableNotFound(name) }

func tableNotFound(name string) error {
	return &Error{Code: CodeNotFound, Message: "no table named " + quoteForMessage(name), Err: ErrTableNotFound}
}

// loadCatalog reads every live table, its activation and current schema into memory. The
// head of a live activation is the highest seq of its commit log (commits write no head
// to the catalog; head_seq is set when an activation ends).
func (db *DB) loadCatalog(ctx context.Context) error {
	rows, err := db.sqlDB.QueryContext(ctx, `
		SELECT t.id, t.name, t.created_at, a.id::VARCHAR, a.physical,
		       greatest(a.head_seq, (SELECT coalesce(max(c.seq), 0) FROM ducktail_catalog.commits c WHERE c.activation = a.id)),
		       a.next_column, s.version, s.from_seq, s.columns,
		       (SELECT coalesce(sum(c.rows), 0) FROM ducktail_catalog.commits c WHERE c.activation = a.id)
		FROM ducktail_catalog.tables t
		JOIN ducktail_catalog.activations a ON a.id = t.activation
		JOIN ducktail_catalog.schema_versions s ON s.activation = a.id
		WHERE t.dropped_at IS NULL
		  AND s.version = (SELECT max(version) FROM ducktail_catalog.schema_versions v WHERE v.activation = a.id)`)
	if err != nil {
		return fmt.Errorf("load catalog: %w", err)
	}
	defer rows.Close()
	tables := map[string]*table{}
	for rows.Next() {
		var t table
		var act, cols string
		var s Schema
		if err := rows.Scan(&t.id, &t.name, &t.createdAt, &act, &t.physical, &t.head, &t.nextColumn,
			&s.Version, &s.FromSeq, &cols, &t.rows); err != nil {
			return fmt.Errorf("load catalog: %w", err)
		}
		if t.activation, err = uuid.Parse(act); err != nil {
			return fmt.Errorf("load catalog: table %s: %w", t.name, err)
		}
		if err := json.Unmarshal([]byte(cols), &s.Columns); err != nil {
			return fmt.Errorf("load catalog: table %s: columns: %w", t.name, err)
		}
		t.schema = s.withArrow()
		tables[FoldName(t.name)] = &t
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load catalog: %w", err)
	}
	db.mu.Lock()
	db.tables = tables
	db.mu.Unlock()
	return nil
}
