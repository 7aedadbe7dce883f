package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ducktail/ducktail/store"
)

// ShapeSpec is a shape as a request names it (docs/design.md, "Shapes and policies"): a
// row predicate (?where=) and column names (?columns=), both optional.
type ShapeSpec struct {
	Where   string
	Columns []string
}

// Bounds of a shape's predicate, checked before DuckDB plans it.
const (
	// MaxPredicateBytes bounds the text of a predicate.
	MaxPredicateBytes = 4096
	// MaxPredicateDepth bounds how deeply its expressions nest.
	MaxPredicateDepth = 32
	// MaxPredicateNodes bounds how many expressions it holds.
	MaxPredicateNodes = 512
)

// ShapeFunctions are the scalar functions a shape's predicate may call: pure functions of
// their arguments, deterministic, without state, each bounded in its work by its input.
// Every other function is refused (aggregates, window functions, now(), random(),
// nextval(), table functions, …).
var ShapeFunctions = []string{
	"abs", "ascii", "bit_length", "cbrt", "ceil", "ceiling", "char_length", "character_length", "chr",
	"coalesce", "concat", "concat_ws", "contains", "date_add", "date_diff", "date_part", "date_sub",
	"date_trunc", "datediff", "datepart", "datesub", "datetrunc", "day", "dayofmonth", "dayofweek",
	"dayofyear", "ends_with", "epoch", "epoch_ms", "epoch_us", "exp", "floor", "greatest", "hour",
	"ifnull", "ilike_escape", "instr", "isfinite", "isinf", "isnan", "isodow", "last_day", "lcase",
	"least", "left", "len", "length", "like_escape", "ln", "log", "log10", "log2", "lower", "ltrim",
	"make_date", "make_time", "make_timestamp", "microsecond", "millisecond", "minute", "mod",
	"month", "not_ilike_escape", "not_like_escape", "nullif", "octet_length", "position", "pow",
	"power", "prefix", "quarter", "regexp_extract", "regexp_full_match", "regexp_matches",
	"regexp_replace", "replace", "reverse", "right", "round", "rtrim", "second", "sign", "sqrt",
	"starts_with", "strftime", "strlen", "strpos", "strptime", "substr", "substring", "suffix",
	"to_timestamp", "trim", "trunc", "ucase", "upper", "week", "weekofyear", "year", "yearweek",
}

// shapeOperators are the operators (functions DuckDB marks is_operator) a predicate may
// use: arithmetic, concatenation, LIKE / ILIKE and their negations (~~, ~~*, !~~, !~~*),
// bitwise operators and regular expression matches.
var shapeOperators = []string{
	"+", "-", "*", "/", "//", "%", "^", "**", "||", "~~", "!~~", "~~*", "!~~*", "&", "|", "<<", ">>", "~", "!~",
}

// shapeClasses are the expression classes a predicate may hold: comparisons, AND / OR /
// NOT, IN, BETWEEN, IS [NOT] NULL, CASE, casts, constants, column names and allowed
// function calls. Subqueries, window functions, lambdas, parameters and * are refused.
var shapeClasses = map[string]bool{
	"BETWEEN": true, "CASE": true, "CAST": true, "COLLATE": true, "COLUMN_REF": true, "COMPARISON": true,
	"CONJUNCTION": true, "CONSTANT": true, "FUNCTION": true, "OPERATOR": true,
}

// Shape compiles the shape spec asks for on table, as seen by a token with policy
// (docs/design.md, "Shapes and policies"): the rows both the policy's predicate and the
// spec's match (AND), the spec's columns that the policy allows, in the spec's order
// (all the policy allows when the spec names none). A column outside the policy is
// refused exactly as a column the table does not have, so that a token learns nothing
// of what its policy hides. It returns nil for the whole table. Errors (*store.Error):
// CodeNotFound for an unknown table; CodeInvalid, with Field "where" or "columns", for a
// predicate the check refuses (too long or deep, a syntax error, a subquery, a function
// not in ShapeFunctions, a column the token cannot see, a type error DuckDB's binder
// finds) or an unknown column; CodeUnprocessable when the policy itself no longer
// applies to the table (a column it names was dropped or renamed).
func (r *Reader) Shape(ctx context.Context, table string, spec ShapeSpec, policy store.TokenPolicy) (*store.Shape, error) {
	if spec.Where == "" && spec.Columns == nil && policy.Empty() {
		return nil, nil
	}
	var shape *store.Shape
	err := r.DB.Read(ctx, func(tx *store.ReadTx) error {
		info, err := tx.Table(ctx, table)
		if err != nil {
			return err
		}
		shape, err = compileShape(ctx, tx, info, spec, policy)
		return err
	})
	return shape, err
}

// Querier runs a query returning one VARCHAR in DuckDB: a read transaction
// (store.ReadTx), or a shape engine of its own (store.ShapeEngine) on a stream node. Shapes
// are compiled with it; it reads no table.
type Querier interface {
	QueryString(ctx context.Context, query string, args ...any) (string, error)
}

// CompileShape is Shape against info, the table as a stream node's source has it, with q
// for DuckDB's parser and binder: a stream node compiles the shapes of its streams with a
// store.ShapeEngine, so that they are the writer's, to the byte (the same canonical
// predicate, the same cursor tag). Errors: Shape's, but for CodeNotFound.
func CompileShape(ctx context.Context, q Querier, info store.TableInfo, spec ShapeSpec, policy store.TokenPolicy) (*store.Shape, error) {
	if spec.Where == "" && spec.Columns == nil && policy.Empty() {
		return nil, nil
	}
	return compileShape(ctx, q, info, spec, policy)
}

// compileShape is Shape against info, parsed and bound with tx.
func compileShape(ctx context.Context, tx Querier, info store.TableInfo, spec ShapeSpec, policy store.TokenPolicy) (*store.Shape, error) {
	all := info.Schema.Columns
	visible := all
	if policy.Columns != nil {
		cols, err := resolveColumns(info.Name, all, policy.Columns, "columns")
		if err != nil {
			return nil, policyError(err)
		}
		visible = cols
	}
	where := spec.Where
	if policy.Where != "" && where != "" {
		// Both were checked alone first: the spec's against the columns the token sees.
		// The combination joins DuckDB's renderings, never the request's text: a rendering
		// is one balanced expression, so no text can reach past its parentheses.
		canonical, _, err := checkPredicate(ctx, tx, info.Name, visible, where)
		if err != nil {
			return nil, err
		}
		where = "(" + policy.Where + ") AND (" + canonical + ")"
		visible = all
	} else if policy.Where != "" {
		where, visible = policy.Where, all
	}
	shape := &store.Shape{}
	if where != "" {
		canonical, refs, err := checkPredicate(ctx, tx, info.Name, visible, where)
		if err != nil {
			if spec.Where == "" {
				return nil, policyError(err)
			}
			return nil, err
		}
		shape.Where, shape.Refs = canonical, refs
	}
	switch {
	case spec.Columns != nil:
		allowed := all
		if policy.Columns != nil {
			allowed, _ = resolveColumns(info.Name, all, policy.Columns, "columns")
		}
		cols, err := resolveColumns(info.Name, allowed, spec.Columns, "columns")
		if err != nil {
			return nil, err
		}
		shape.Columns = cols
	case policy.Columns != nil:
		shape.Columns, _ = resolveColumns(info.Name, all, policy.Columns, "columns")
	}
	if shape.Empty() {
		return nil, nil
	}
	return shape, nil
}

// policyError reports that a token's own policy no longer applies to its table.
func policyError(err error) error {
	var se *store.Error
	if errors.As(err, &se) {
		return &store.Error{Code: store.CodeUnprocessable, Column: se.Column, Message: "this token's policy no longer applies to the table: " + se.Message}
	}
	return err
}

// resolveColumns resolves names against cols (exact name first, then case-insensitive),
// without duplicates. Errors: CodeInvalid naming the first unknown column.
func resolveColumns(table string, cols []store.Column, names []string, field string) ([]store.Column, error) {
	if len(names) == 0 {
		return nil, &store.Error{Code: store.CodeInvalid, Field: field, Message: "columns names no column; leave it out for every column"}
	}
	schema := &store.Schema{Columns: cols}
	out := make([]store.Column, 0, len(names))
	for _, n := range names {
		c, i := schema.Column(n)
		if i < 0 {
			return nil, unknownColumn(table, n, field)
		}
		if !slices.ContainsFunc(out, func(o store.Column) bool { return o.ID == c.ID }) {
			out = append(out, c)
		}
	}
	return out, nil
}

func unknownColumn(table, column, field string) error {
	return &store.Error{Code: store.CodeInvalid, Field: field, Column: column,
		Message: fmt.Sprintf("%s: table %s has no column %s", field, strconv.Quote(table), strconv.Quote(column))}
}

// checkPredicate checks where, a DuckDB boolean expression over the columns visible, and
// returns it as DuckDB renders it back from its parse tree, with the columns it reads.
// DuckDB parses it inside SELECT * FROM <store.ShapeRelation> WHERE (…): the statement
// must come back as exactly that, one SELECT of that relation with that WHERE clause and
// nothing else, so that no text in where can reach outside the expression. Then DuckDB's
// binder checks it over an empty relation of the visible columns, which finds type
// errors before any row is read.
func checkPredicate(ctx context.Context, tx Querier, table string, visible []store.Column, where string) (string, []store.Column, error) {
	invalid := func(format string, args ...any) error {
		return &store.Error{Code: store.CodeInvalid, Field: "where", Message: "where: " + fmt.Sprintf(format, args...)}
	}
	if len(where) > MaxPredicateBytes {
		return "", nil, invalid("the predicate is longer than %d bytes", MaxPredicateBytes)
	}
	if strings.TrimSpace(where) == "" {
		return "", nil, invalid("the predicate is empty")
	}
	relation := store.QuoteIdent(store.ShapeRelation)
	prefix := "SELECT * FROM " + relation + " WHERE "
	out, err := tx.QueryString(ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", prefix+"(\n"+where+"\n)")
	if err != nil {
		return "", nil, fmt.Errorf("parse predicate: %w", err)
	}
	var parsed struct {
		Error        bool             `json:"error"`
		ErrorType    string           `json:"error_type"`
		ErrorMessage string           `json:"error_message"`
		Statements   []map[string]any `json:"statements"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&parsed); err != nil {
		return "", nil, fmt.Errorf("parse predicate: %w", err)
	}
	switch {
	case parsed.Error && parsed.ErrorType == "parser":
		return "", nil, invalid("SQL syntax error: %s", parsed.ErrorMessage)
	case parsed.Error || len(parsed.Statements) != 1:
		return "", nil, invalid("not one boolean expression")
	}
	node, _ := parsed.Statements[0]["node"].(map[string]any)
	whereClause, err := selectOfShape(node)
	if err != nil {
		return "", nil, invalid("%s", err.Error())
	}
	c := &predicateCheck{table: table, visible: visible}
	if err := c.walk(whereClause, 1); err != nil {
		return "", nil, err
	}
	rendered, err := tx.QueryString(ctx, "SELECT json_deserialize_sql(?::JSON)::VARCHAR", out)
	if err != nil {
		return "", nil, fmt.Errorf("render predicate: %w", err)
	}
	canonical, ok := strings.CutPrefix(rendered, "SELECT * FROM "+store.ShapeRelation+" WHERE ")
	if !ok {
		return "", nil, fmt.Errorf("render predicate: unexpected form %q", rendered)
	}
	if err := bindPredicate(ctx, tx, visible, canonical); err != nil {
		return "", nil, err
	}
	return canonical, c.refs, nil
}

// selectOfShape checks that node is SELECT * FROM <store.ShapeRelation> WHERE … and
// nothing more, and returns its WHERE clause.
func selectOfShape(node map[string]any) (any, error) {
	from, _ := node["from_table"].(map[string]any)
	list, _ := node["select_list"].([]any)
	star, _ := func() (map[string]any, bool) {
		if len(list) != 1 {
			return nil, false
		}
		m, ok := list[0].(map[string]any)
		return m, ok
	}()
	cte, _ := node["cte_map"].(map[string]any)
	ctes, _ := cte["map"].([]any)
	empty := func(k string) bool {
		v, ok := node[k]
		if !ok || v == nil {
			return true
		}
		l, isList := v.([]any)
		return isList && len(l) == 0
	}
	ok := node["type"] == "SELECT_NODE" && len(ctes) == 0 && star["class"] == "STAR" &&
		from["type"] == "BASE_TABLE" && from["table_name"] == store.ShapeRelation && from["schema_name"] == "" && from["catalog_name"] == "" &&
		empty("modifiers") && empty("group_expressions") && empty("group_sets") && empty("having") &&
		empty("sample") && empty("qualify") && node["aggregate_handling"] == "STANDARD_HANDLING" && node["where_clause"] != nil
	if !ok {
		return nil, fmt.Errorf("not one boolean expression: the text reaches outside the WHERE clause it is checked in")
	}
	return node["where_clause"], nil
}

// predicateCheck walks a predicate's expression tree.
type predicateCheck struct {
	table   string
	visible []store.Column
	refs    []store.Column
	nodes   int
}

func (c *predicateCheck) walk(v any, depth int) error {
	switch n := v.(type) {
	case []any:
		for _, child := range n {
			if err := c.walk(child, depth); err != nil {
				return err
			}
		}
	case map[string]any:
		if class, ok := n["class"].(string); ok {
			if err := c.check(n, class, depth); err != nil {
				return err
			}
			depth++
		}
		for _, k := range slices.Sorted(maps.Keys(n)) {
			if err := c.walk(n[k], depth); err != nil {
				return err
			}
		}
	}
	return nil
}

// check checks one expression node of class class.
func (c *predicateCheck) check(n map[string]any, class string, depth int) error {
	invalid := func(format string, args ...any) error {
		return &store.Error{Code: store.CodeInvalid, Field: "where", Message: "where: " + fmt.Sprintf(format, args...)}
	}
	if c.nodes++; c.nodes > MaxPredicateNodes || depth > MaxPredicateDepth {
		return invalid("the predicate is too complex: at most %d expressions, nested at most %d deep", MaxPredicateNodes, MaxPredicateDepth)
	}
	if !shapeClasses[class] {
		return invalid("%s is not allowed in a predicate; use comparisons, AND/OR/NOT, IN, BETWEEN, LIKE/ILIKE, IS [NOT] NULL, CASE, casts and pure scalar functions",
			strings.ToLower(strings.ReplaceAll(class, "_", " ")))
	}
	switch class {
	case "COLUMN_REF":
		names, _ := n["column_names"].([]any)
		if len(names) != 1 {
			return invalid("name columns without a table or schema (got %d names)", len(names))
		}
		name, _ := names[0].(string)
		col, i := (&store.Schema{Columns: c.visible}).Column(name)
		if i < 0 {
			return unknownColumn(c.table, name, "where")
		}
		if !slices.ContainsFunc(c.refs, func(r store.Column) bool { return r.ID == col.ID }) {
			c.refs = append(c.refs, col)
		}
	case "FUNCTION":
		name, _ := n["function_name"].(string)
		schema, _ := n["schema"].(string)
		catalog, _ := n["catalog"].(string)
		allowed := ShapeFunctions
		if n["is_operator"] == true {
			allowed = shapeOperators
		}
		if schema != "" || catalog != "" || !slices.Contains(allowed, strings.ToLower(name)) {
			return invalid("function %s() is not allowed in a predicate: only pure scalar functions are (docs/api.md lists them)", name)
		}
		orders, _ := n["order_bys"].(map[string]any)
		if list, _ := orders["orders"].([]any); len(list) > 0 || n["distinct"] == true || n["filter"] != nil || n["export_state"] == true {
			return invalid("DISTINCT, ORDER BY and FILTER are not allowed in a predicate's function calls")
		}
	}
	return nil
}

// bindPredicate has DuckDB bind the predicate over an empty relation of the visible
// columns, typed as in the table: type errors (a comparison of a number with text that
// is no number, an unknown function signature) are found before any row is read.
func bindPredicate(ctx context.Context, tx Querier, visible []store.Column, canonical string) error {
	cols := make([]string, len(visible))
	for i, c := range visible {
		cols[i] = "CAST(NULL AS " + string(c.Type) + ") AS " + store.QuoteIdent(c.Name)
	}
	if len(cols) == 0 {
		cols = []string{"NULL AS " + store.QuoteIdent(store.ShapeRelation)}
	}
	q := "SELECT count(*)::VARCHAR FROM (SELECT " + strings.Join(cols, ", ") + " LIMIT 0) AS " +
		store.QuoteIdent(store.ShapeRelation) + " WHERE (\n" + canonical + "\n)"
	if _, err := tx.QueryString(ctx, q); err != nil {
		msg := err.Error()
		for prefix := range duckdbErrorCodes {
			if strings.HasPrefix(msg, prefix+": ") {
				return &store.Error{Code: store.CodeInvalid, Field: "where", Message: "where: " + msg, Err: err}
			}
		}
		return fmt.Errorf("bind predicate: %w", err)
	}
	return nil
}
