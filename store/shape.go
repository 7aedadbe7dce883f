package store

import (
	"crypto/sha256"
	"strconv"
	"strings"
)

// Shape is a compiled shape: the rows of a table that match a row predicate, with some of
// its columns (docs/design.md, "Shapes and policies"). Package snapshot compiles it
// (Reader.Shape), checking the predicate with its sandbox and resolving every column
// name against the table's schema; DuckDB evaluates it, for a snapshot (ReadTx.ScanShaped)
// and for the rows of each commit (DB.ShapeRecords) alike. A nil *Shape, or one with no
// predicate and no columns, is the whole table.
type Shape struct {
	// Where is the row predicate as DuckDB renders it back from its parse tree (so that
	// two spellings of one predicate are one shape), "" for every row. It names columns
	// by their names in the schema the shape was compiled against.
	Where string
	// Columns are the projected columns, in order; nil means every column of the schema,
	// as it changes.
	Columns []Column
	// Refs are the columns Where reads.
	Refs []Column
}

// ShapeRelation is the name of the relation a shape's predicate is checked over (by
// package snapshot) and evaluated over (ScanShaped): a reserved name no table can take.
const ShapeRelation = ReservedPrefix + "_shape"

// ShapeTagSize is the size of a ShapeTag in bytes.
const ShapeTagSize = 8

// ShapeTag identifies a shape inside the cursors read through it: the first
// ShapeTagSize bytes of the SHA-256 of its Key, never all zero. The zero tag is no shape.
type ShapeTag [ShapeTagSize]byte

// Empty reports whether s is the whole table: nil, or neither a predicate nor columns.
func (s *Shape) Empty() bool { return s == nil || (s.Where == "" && s.Columns == nil) }

// Key returns the identity of s: equal for shapes that select the same rows and columns
// of the same columns (by id and name), "" for an empty shape. Live delivery encodes each
// commit once per distinct key.
func (s *Shape) Key() string {
	if s.Empty() {
		return ""
	}
	var b strings.Builder
	b.WriteString(s.Where)
	for _, cols := range [][]Column{s.Refs, s.Columns} {
		b.WriteByte(0)
		for _, c := range cols {
			b.WriteString(strconv.Itoa(c.ID))
			b.WriteByte(':')
			b.WriteString(c.Name)
			b.WriteByte(0x1f)
		}
	}
	if s.Columns == nil {
		b.WriteString("*")
	}
	return b.String()
}

// Tag returns the tag of s; the zero tag for an empty shape.
func (s *Shape) Tag() ShapeTag {
	var t ShapeTag
	if s.Empty() {
		return t
	}
	sum := sha256.Sum256([]byte(s.Key()))
	copy(t[:], sum[:])
	if t == (ShapeTag{}) {
		t[ShapeTagSize-1] = 1
	}
	return t
}

// Project returns schema as seen through s: the shape's columns, in its order and under
// their names in schema, or schema itself when s projects no columns. Call it only for a
// schema Check accepts.
func (s *Shape) Project(schema *Schema) *Schema {
	if s.Empty() || s.Columns == nil {
		return schema
	}
	out := &Schema{Version: schema.Version, FromSeq: schema.FromSeq, Columns: make([]Column, 0, len(s.Columns))}
	for _, c := range s.Columns {
		if i := columnByID(schema, c.ID); i >= 0 {
			out.Columns = append(out.Columns, schema.Columns[i])
		}
	}
	return out
}

// Reasons a shaped stream ends with refresh-required when its table's schema changes
// under the shape (docs/design.md, "Shapes and policies").
const (
	ReasonShapeColumnDropped = "shape_column_dropped"
	ReasonShapeColumnRenamed = "shape_column_renamed"
)

// Check reports whether s still applies to schema: every column it names (in Where or
// Columns) is in schema, under the same name. Otherwise it returns
// ReasonShapeColumnDropped or ReasonShapeColumnRenamed and the column's name in the shape.
// A column added to schema is fine.
func (s *Shape) Check(schema *Schema) (reason, column string) {
	if s.Empty() {
		return "", ""
	}
	for _, cols := range [][]Column{s.Refs, s.Columns} {
		for _, c := range cols {
			i := columnByID(schema, c.ID)
			switch {
			case i < 0:
				return ReasonShapeColumnDropped, c.Name
			case schema.Columns[i].Name != c.Name:
				return ReasonShapeColumnRenamed, c.Name
			}
		}
	}
	return "", ""
}

// columnByID returns the index in schema of the column with id, or -1.
func columnByID(schema *Schema, id int) int {
	for i, c := range schema.Columns {
		if c.ID == id {
			return i
		}
	}
	return -1
}

// SelectList returns the SELECT list of s over relation columns named as in schema: the
// projected columns, quoted, or * for every column.
func (s *Shape) SelectList(schema *Schema) string {
	p := s.Project(schema)
	if p == schema {
		return "*"
	}
	cols := make([]string, len(p.Columns))
	for i, c := range p.Columns {
		cols[i] = QuoteIdent(c.Name)
	}
	return strings.Join(cols, ", ")
}

// whereClause returns " WHERE (<predicate>)", or "" for every row. The predicate is on a
// line of its own, as package snapshot checked it.
func (s *Shape) whereClause() string {
	if s.Empty() || s.Where == "" {
		return ""
	}
	return " WHERE (\n" + s.Where + "\n)"
}
