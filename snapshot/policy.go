package snapshot

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ducktail/ducktail/store"
)

// policyView is a FROM item of a query that names a table the caller's token has a
// policy on, with the parse tree of the table's policy view that replaces it.
type policyView struct {
	ref  map[string]any
	name string // the table's name as written, the view's alias when the item has none
	node any    // SELECT <policy columns> FROM main.<table> WHERE (<policy predicate>)
}

// policyView notes that FROM item n, which names table info (as name), is to read the
// table's policy view when the caller's token has a policy on it: through POST /v1/query
// such a table is seen only as the rows and columns of its policy, wherever the query
// names it (docs/design.md, "Shapes and policies"). The items are replaced once the whole
// tree is checked (applyPolicyViews), so that the walker never checks the view itself.
func (w *walker) policyView(n map[string]any, name string, info store.TableInfo) error {
	if w.policy == nil {
		return nil
	}
	policy := w.policy(info.Name)
	if policy.Empty() {
		return nil
	}
	if n["at_clause"] != nil {
		return store.Errorf(store.CodeUnprocessable, "AT (time travel) is not allowed on table %q", name)
	}
	shape, err := compileShape(w.ctx, w.tx, info, ShapeSpec{}, policy)
	if err != nil {
		return err
	}
	sqlText := "SELECT " + shape.SelectList(&info.Schema) + " FROM main." + store.QuoteIdent(info.Name)
	if shape.Where != "" {
		sqlText += " WHERE (\n" + shape.Where + "\n)"
	}
	out, err := w.tx.QueryString(w.ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", sqlText)
	if err != nil {
		return fmt.Errorf("policy view: %w", err)
	}
	var parsed struct {
		Error      bool             `json:"error"`
		Statements []map[string]any `json:"statements"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&parsed); err != nil || parsed.Error || len(parsed.Statements) != 1 {
		return fmt.Errorf("policy view: %s does not parse: %v", sqlText, err)
	}
	w.views = append(w.views, policyView{ref: n, name: name, node: parsed.Statements[0]["node"]})
	return nil
}

// applyPolicyViews replaces every noted FROM item by a subquery of its policy view, under
// the item's alias (or the table's name as written, so that qualified column names still
// bind), and returns the statement as DuckDB renders the edited tree; "" when no item was
// replaced, to run the request's own text.
func (w *walker) applyPolicyViews(stmt map[string]any) (string, error) {
	if len(w.views) == 0 {
		return "", nil
	}
	for _, v := range w.views {
		alias, _ := v.ref["alias"].(string)
		if alias == "" {
			alias = v.name
		}
		sample, loc, names := v.ref["sample"], v.ref["query_location"], v.ref["column_name_alias"]
		clear(v.ref)
		v.ref["type"] = "SUBQUERY"
		v.ref["alias"] = alias
		v.ref["sample"] = sample
		v.ref["query_location"] = loc
		v.ref["subquery"] = map[string]any{"node": v.node, "named_param_map": []any{}}
		v.ref["column_name_alias"] = names
	}
	b, err := json.Marshal(map[string]any{"error": false, "statements": []any{stmt}})
	if err != nil {
		return "", fmt.Errorf("policy view: %w", err)
	}
	sqlText, err := w.tx.QueryString(w.ctx, "SELECT json_deserialize_sql(?::JSON)::VARCHAR", string(b))
	if err != nil {
		return "", fmt.Errorf("policy view: render: %w", err)
	}
	return sqlText, nil
}
