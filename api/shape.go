package api

import (
	"encoding/csv"
	"net/http"
	"strings"

	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
)

// MaxColumnsParamBytes bounds the ?columns= parameter.
const MaxColumnsParamBytes = 16 << 10

// shapeSpec reads the shape a request asks for (docs/design.md, "Shapes and policies"):
// ?where=, a DuckDB boolean expression, and ?columns=, a comma-separated list of column
// names in which a name holding a comma or a quote is written in double quotes, as in
// CSV (RFC 4180). Errors: CodeInvalid with Field "columns" for a list that does not
// parse, is empty or is over MaxColumnsParamBytes; the predicate is checked when the
// shape is compiled (snapshot.Reader.Shape).
func shapeSpec(r *http.Request) (snapshot.ShapeSpec, error) {
	q := r.URL.Query()
	spec := snapshot.ShapeSpec{Where: q.Get("where")}
	if !q.Has("columns") {
		return spec, nil
	}
	list := q.Get("columns")
	if len(list) > MaxColumnsParamBytes {
		return spec, &store.Error{Code: store.CodeInvalid, Field: "columns", Message: "columns is longer than 16 KiB"}
	}
	cr := csv.NewReader(strings.NewReader(list))
	cr.LazyQuotes = false
	names, err := cr.Read()
	if err != nil || strings.ContainsAny(list, "\r\n") {
		return spec, &store.Error{Code: store.CodeInvalid, Field: "columns", Message: `columns must be column names separated by commas, a name holding a comma or a quote in double quotes ("a,b",c)`}
	}
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
		if names[i] == "" {
			return spec, &store.Error{Code: store.CodeInvalid, Field: "columns", Message: "columns holds an empty column name"}
		}
	}
	spec.Columns = names
	return spec, nil
}

// policyOn returns the policy tok has on table: its own policy when table is its table,
// none otherwise (a token with a policy reads no other table).
func policyOn(tok store.Token, table string) store.TokenPolicy {
	if tok.Table != "" && store.SameName(tok.Table, table) {
		return tok.Policy
	}
	return store.TokenPolicy{}
}

// shapedCursor returns the cursor of p through shape: bound to it, so that resuming with
// another shape is refresh-required (store.Cursors.EncodeShaped).
func (s *Server) shapedCursor(p store.Position, tag store.ShapeTag) string {
	return s.codec.EncodeShaped(p, tag)
}
