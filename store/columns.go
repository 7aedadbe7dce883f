package store

import (
	"context"
	"fmt"
)

// MaxColumns is the most columns a table may have. MaxStoredColumns bounds the columns
// an activation stores, dropped ones included (their values stay for replay).
const (
	MaxColumns       = 1024
	MaxStoredColumns = 4096
)

// AddColumn adds a column at the end of a table's schema. Existing rows hold NULL in it;
// commits before the change keep their own schema version, so replay never shows the new
// column in old batches (docs/design.md, "The stream": schema event before the first batch
// after a change). Errors: CodeNotFound, CodeInvalid (bad name or type), CodeConflict
// (name taken), ErrClosed.
func (db *DB) AddColumn(ctx context.Context, tableName string, spec ColumnSpec) (TableInfo, error) {
	return db.alterSchema(ctx, tableName, func(t *table, s *Schema) (string, error) {
		if _, i := s.Column(spec.Name); i >= 0 {
			return "", &Error{Code: CodeConflict, Message: "column " + quoteForMessage(spec.Name) + " already exists (names are case-insensitive)", Column: spec.Name}
		}
		if len(s.Columns) >= MaxColumns {
			return "", &Error{Code: CodeInvalid, Message: fmt.Sprintf("a table may have at most %d columns", MaxColumns), Column: spec.Name}
		}
		if t.nextColumn > MaxStoredColumns {
			return "", &Error{Code: CodeInvalid, Column: spec.Name, Message: fmt.Sprintf(
				"the table has stored %d columns in this activation (dropped columns keep their values for replay); reset it to start afresh", MaxStoredColumns)}
		}
		cols, err := buildColumns([]ColumnSpec{spec}, t.nextColumn)
		if err != nil {
			return "", err
		}
		s.Columns = append(s.Columns, cols[0])
		t.nextColumn++
		return "ALTER TABLE ducktail_data." + QuoteIdent(t.physical) + " ADD COLUMN " +
			QuoteIdent(physicalColumn(cols[0].ID)) + " " + string(cols[0].Type), nil
	})
}

// DropColumn removes a column from a table's schema. Its values stay stored for the
// commits written before the change, so replay of those commits still shows them under
// their own schema version; later commits never carry it. The last column cannot be
// dropped. Errors: CodeNotFound (table or column), CodeInvalid (last column), ErrClosed.
func (db *DB) DropColumn(ctx context.Context, tableName, column string) (TableInfo, error) {
	return db.alterSchema(ctx, tableName, func(t *table, s *Schema) (string, error) {
		_, i := s.Column(column)
		if i < 0 {
			return "", columnNotFound(t.name, column)
		}
		if len(s.Columns) == 1 {
			return "", &Error{Code: CodeInvalid, Message: "cannot drop the last column of table " + quoteForMessage(t.name), Column: column}
		}
		s.Columns = append(s.Columns[:i:i], s.Columns[i+1:]...)
		return "", nil
	})
}

// RenameColumn renames a column. Commits before the change keep the old name in replay;
// values never move between names, because a column is stored under its id.
// Errors: CodeNotFound, CodeInvalid (bad name), CodeConflict (name taken), ErrClosed.
func (db *DB) RenameColumn(ctx context.Context, tableName, column, newName string) (TableInfo, error) {
	if err := ValidateColumnName(newName); err != nil {
		return TableInfo{}, err
	}
	return db.alterSchema(ctx, tableName, func(t *table, s *Schema) (string, error) {
		_, i := s.Column(column)
		if i < 0 {
			return "", columnNotFound(t.name, column)
		}
		if _, j := s.Column(newName); j >= 0 && j != i {
			return "", &Error{Code: CodeConflict, Message: "column " + quoteForMessage(newName) + " already exists", Column: newName}
		}
		s.Columns[i].Name = newName
		return "", nil
	})
}

func columnNotFound(table, column string) error {
	return &Error{Code: CodeNotFound, Message: "table " + quoteForMessage(table) + " has no column " + quoteForMessage(column), Column: column}
}

// alterSchema runs edit on copies of a table and its current schema, then records the
// edited schema as the next version, effective from the next commit, and publishes it.
// edit returns DDL for the physical table, or "".
func (db *DB) alterSchema(ctx context.Context, tableName string, edit func(t *table, s *Schema) (string, error)) (TableInfo, error) {
	v, err := db.change(ctx, func(ctx context.Context, tx *writeTx) (func(), []Event, any, error) {
		live, err := db.liveTable(tableName)
		if err != nil {
			return nil, nil, nil, err
		}
		t := *live
		s := &Schema{Version: live.schema.Version + 1, FromSeq: live.head + 1,
			Columns: append([]Column(nil), live.schema.Columns...)}
		ddl, err := edit(&t, s)
		if err != nil {
			return nil, nil, nil, err
		}
		if ddl != "" {
			if err := tx.exec(ctx, ddl); err != nil {
				return nil, nil, nil, err
			}
		}
		if err := tx.exec(ctx, `UPDATE ducktail_catalog.activations SET next_column = ? WHERE id = ?::UUID`, t.nextColumn, t.activation.String()); err != nil {
			return nil, nil, nil, err
		}
		if err := db.writeSchema(ctx, tx, &t, s); err != nil {
			return nil, nil, nil, err
		}
		ev := SchemaEvent{TableName: t.name, Schema: s,
			Position: Position{TableID: t.id, Activation: t.activation, Seq: t.head}}
		apply := func() { *live = t }
		return apply, []Event{ev}, live, nil
	})
	if err != nil {
		return TableInfo{}, err
	}
	return db.tableInfoAfter(v.(*table)), nil
}
