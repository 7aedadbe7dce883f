package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// CreateTable creates a table with the given columns (at least one), a new activation and
// schema version 1; its first commit will be seq 1.
// Errors: CodeInvalid for a bad name or type or duplicate column, CodeConflict when a live
// table has that name (case-insensitive), ErrClosed.
func (db *DB) CreateTable(ctx context.Context, name string, specs []ColumnSpec) (TableInfo, error) {
	if err := ValidateTableName(name); err != nil {
		return TableInfo{}, err
	}
	schema, err := NewSchema(specs)
	if err != nil {
		return TableInfo{}, err
	}
	v, err := db.change(ctx, func(ctx context.Context, tx *writeTx) (func(), []Event, any, error) {
		db.mu.RLock()
		_, exists := db.tables[FoldName(name)]
		db.mu.RUnlock()
		if exists {
			return nil, nil, nil, &Error{Code: CodeConflict, Message: "a table named " + quoteForMessage(name) + " already exists", Field: "name"}
		}
		var id int64
		if err := tx.conn.QueryRowContext(ctx, "SELECT nextval('ducktail_catalog.table_ids')").Scan(&id); err != nil {
			return nil, nil, nil, fmt.Errorf("next table id: %w", err)
		}
		now := db.Now().UTC()
		t := &table{id: id, name: name, createdAt: now}
		if err := tx.exec(ctx, `INSERT INTO ducktail_catalog.tables (id, name, activation, created_at) VALUES (?, ?, ?::UUID, ?)`,
			id, name, uuid.Nil.String(), now); err != nil {
			return nil, nil, nil, err
		}
		if err := db.startActivation(ctx, tx, t, schema, len(schema.Columns)+1); err != nil {
			return nil, nil, nil, err
		}
		apply := func() { db.tables[FoldName(name)] = t }
		return apply, []Event{t.started()}, t, nil
	})
	if err != nil {
		return TableInfo{}, err
	}
	return db.tableInfoAfter(v.(*table)), nil
}

// tableInfoAfter reads t's info under the lock, after the writer applied a change to it.
func (db *DB) tableInfoAfter(t *table) TableInfo {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return t.info()
}

// startActivation gives t a new activation with a new, empty physical table holding the
// columns of schema, points the table row and the user view at it, and records schema
// as version 1 of the activation. It fills t's activation fields; the caller applies t.
func (db *DB) startActivation(ctx context.Context, tx *writeTx, t *table, schema *Schema, nextColumn int) error {
	act := uuid.New()
	physical := "a_" + strings.ReplaceAll(act.String(), "-", "")
	defs := []string{QuoteIdent(SeqColumn) + " BIGINT NOT NULL"}
	for _, c := range schema.Columns {
		defs = append(defs, QuoteIdent(physicalColumn(c.ID))+" "+string(c.Type))
	}
	now := db.Now().UTC()
	if err := tx.exec(ctx, "CREATE TABLE ducktail_data."+QuoteIdent(physical)+" ("+strings.Join(defs, ", ")+")"); err != nil {
		return err
	}
	if err := tx.exec(ctx, `INSERT INTO ducktail_catalog.activations (id, table_id, physical, started_at, head_seq, next_column) VALUES (?::UUID, ?, ?, ?, 0, ?)`,
		act.String(), t.id, physical, now, nextColumn); err != nil {
		return err
	}
	if err := tx.exec(ctx, `UPDATE ducktail_catalog.tables SET activation = ?::UUID WHERE id = ?`, act.String(), t.id); err != nil {
		return err
	}
	t.activation, t.physical, t.head, t.rows, t.nextColumn = act, physical, 0, 0, nextColumn
	return db.writeSchema(ctx, tx, t, schema)
}

// writeSchema records schema as a new version of t's activation and points t's user view
// at its columns.
func (db *DB) writeSchema(ctx context.Context, tx *writeTx, t *table, schema *Schema) error {
	cols, err := json.Marshal(schema.Columns)
	if err != nil {
		return err
	}
	if err := tx.exec(ctx, `INSERT INTO ducktail_catalog.schema_versions VALUES (?, ?::UUID, ?, ?, ?, ?)`,
		t.id, t.activation.String(), schema.Version, schema.FromSeq, string(cols), db.Now().UTC()); err != nil {
		return err
	}
	sel := make([]string, len(schema.Columns))
	for i, c := range schema.Columns {
		sel[i] = QuoteIdent(physicalColumn(c.ID)) + " AS " + QuoteIdent(c.Name)
	}
	view := "CREATE OR REPLACE VIEW main." + QuoteIdent(t.name) + " AS SELECT " + strings.Join(sel, ", ") +
		" FROM ducktail_data." + QuoteIdent(t.physical)
	if err := tx.exec(ctx, view); err != nil {
		return err
	}
	t.schema = schema.withArrow()
	return nil
}

// ResetTable truncates a table: it ends the current activation (every cursor of it then
// gets refresh-required, reason "table_reset") and starts a new one, empty, with the same
// columns; the next commit is seq 1 again. It returns the table after the reset.
// Errors: CodeNotFound, ErrClosed.
func (db *DB) ResetTable(ctx context.Context, name string) (TableInfo, error) {
	v, err := db.change(ctx, func(ctx context.Context, tx *writeTx) (func(), []Event, any, error) {
		old, err := db.liveTable(name)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := db.endActivation(ctx, tx, old, ReasonTableReset); err != nil {
			return nil, nil, nil, err
		}
		cols := make([]Column, len(old.schema.Columns))
		for i, c := range old.schema.Columns {
			cols[i] = Column{ID: i + 1, Name: c.Name, Type: c.Type}
		}
		t := &table{id: old.id, name: old.name, createdAt: old.createdAt}
		if err := db.startActivation(ctx, tx, t, &Schema{Version: 1, FromSeq: 1, Columns: cols}, len(cols)+1); err != nil {
			return nil, nil, nil, err
		}
		ended := ActivationEnded{TableName: old.name, Reason: ReasonTableReset, NewActivation: t.activation,
			Position: Position{TableID: old.id, Activation: old.activation, Seq: old.head}}
		apply := func() { db.tables[FoldName(name)] = t }
		return apply, []Event{ended, t.started()}, t, nil
	})
	if err != nil {
		return TableInfo{}, err
	}
	return db.tableInfoAfter(v.(*table)), nil
}

// DropTable drops a table, its rows and its view, and ends its activation (cursors get
// refresh-required, reason "table_dropped"). A table created later with the same name is a
// new table with a new id. Errors: CodeNotFound, ErrClosed.
func (db *DB) DropTable(ctx context.Context, name string) error {
	_, err := db.change(ctx, func(ctx context.Context, tx *writeTx) (func(), []Event, any, error) {
		t, err := db.liveTable(name)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := db.endActivation(ctx, tx, t, ReasonTableDropped); err != nil {
			return nil, nil, nil, err
		}
		if err := tx.exec(ctx, "DROP VIEW main."+QuoteIdent(t.name)); err != nil {
			return nil, nil, nil, err
		}
		if err := tx.exec(ctx, `UPDATE ducktail_catalog.tables SET dropped_at = ? WHERE id = ?`, db.Now().UTC(), t.id); err != nil {
			return nil, nil, nil, err
		}
		ended := ActivationEnded{TableName: t.name, Reason: ReasonTableDropped,
			Position: Position{TableID: t.id, Activation: t.activation, Seq: t.head}}
		apply := func() { delete(db.tables, FoldName(name)) }
		return apply, []Event{ended}, nil, nil
	})
	return err
}

// endActivation marks t's activation ended, recording its final head (live activations
// keep their head in memory and in the commit log only), and drops its physical table.
func (db *DB) endActivation(ctx context.Context, tx *writeTx, t *table, reason string) error {
	if err := tx.exec(ctx, `UPDATE ducktail_catalog.activations SET ended_at = ?, end_reason = ?, head_seq = ? WHERE id = ?::UUID`,
		db.Now().UTC(), reason, t.head, t.activation.String()); err != nil {
		return err
	}
	return tx.exec(ctx, "DROP TABLE ducktail_data."+QuoteIdent(t.physical))
}

// liveTable returns the writer's table named name; call only from the writer.
func (db *DB) liveTable(name string) (*table, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	t, ok := db.tables[FoldName(name)]
	if !ok {
		return nil, tableNotFound(name)
	}
	return t, nil
}

// NewSchema returns the schema a table created with specs gets: version 1, from seq 1,
// columns numbered from 1. Errors as CreateTable's for bad columns.
func NewSchema(specs []ColumnSpec) (*Schema, error) {
	cols, err := buildColumns(specs, 1)
	if err != nil {
		return nil, err
	}
	return &Schema{Version: 1, FromSeq: 1, Columns: cols}, nil
}

// buildColumns validates specs and numbers them from firstID.
func buildColumns(specs []ColumnSpec, firstID int) ([]Column, error) {
	if len(specs) == 0 {
		return nil, &Error{Code: CodeInvalid, Message: "a table needs at least one column", Field: "columns"}
	}
	if len(specs) > MaxColumns {
		return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf("a table may have at most %d columns, not %d", MaxColumns, len(specs)), Field: "columns"}
	}
	seen := map[string]bool{}
	cols := make([]Column, len(specs))
	for i, s := range specs {
		if err := ValidateColumnName(s.Name); err != nil {
			return nil, err
		}
		if seen[FoldName(s.Name)] {
			return nil, &Error{Code: CodeInvalid, Message: "duplicate column name " + quoteForMessage(s.Name) + " (names are case-insensitive)", Column: s.Name}
		}
		seen[FoldName(s.Name)] = true
		typ, err := ParseType(s.Type)
		if err != nil {
			e := err.(*Error)
			e.Column = s.Name
			return nil, e
		}
		cols[i] = Column{ID: firstID + i, Name: s.Name, Type: typ}
	}
	return cols, nil
}
