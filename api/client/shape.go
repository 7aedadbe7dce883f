package client

import (
	"encoding/csv"
	"net/url"
	"strings"
)

// Shape is what a stream and its snapshots carry of a table (docs/design.md, "Shapes and
// policies"): the rows a DuckDB boolean expression over the table's columns matches, and
// some of the columns. The server evaluates both, with the same engine for the snapshot
// and for every commit, so that a shaped snapshot and the shaped batches after its cursor
// are exactly the shaped table. The zero Shape is the whole table.
type Shape struct {
	// Where is the row predicate (?where=), "" for every row.
	Where string
	// Columns are the columns to carry, in order (?columns=); nil for every column.
	Columns []string
}

// IsZero reports whether s is the whole table.
func (s Shape) IsZero() bool { return s.Where == "" && s.Columns == nil }

// query returns u with the shape's parameters added.
func (s Shape) query(u string) string {
	if s.IsZero() {
		return u
	}
	q := url.Values{}
	if s.Where != "" {
		q.Set("where", s.Where)
	}
	if s.Columns != nil {
		q.Set("columns", columnsParam(s.Columns))
	}
	return u + "?" + q.Encode()
}

// columnsParam writes names as the server reads ?columns=: separated by commas, a name
// holding a comma or a quote in double quotes (RFC 4180).
func columnsParam(names []string) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(names) // a strings.Builder does not fail
	w.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}
