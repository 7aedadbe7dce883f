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

// AllowedTableFunctions are the only table functions a query may call (FROM f(…)): they
// compute rows from their arguments alone. Every other table function is refused:
// file readers (read_csv, read_parquet, read_text, read_blob, glob, …), catalog and
// system views (duckdb_tables, duckdb_settings, pragma_*, sql_auto_complete, …), SQL
// runners (query, query_table, json_execute_serialized_sql), table macros that read a
// table named by a string (histogram) and functions with side effects (checkpoint,
// enable_logging, …).
var AllowedTableFunctions = []string{"generate_series", "json_each", "json_tree", "range", "repeat", "unnest"}

// DeniedFunctions are scalar, aggregate and window functions (and DuckDB's built-in
// macros) a query may not call, with the reason. They are the ones that read what a
// query must not see, reach outside the query's rows, or hold a reader connection idle.
// The table functions that run SQL or read files are listed too, as a second net behind
// AllowedTableFunctions: every function call in the tree is checked against this list.
var DeniedFunctions = map[string]string{
	"current_setting":             "reads server configuration",
	"getenv":                      "reads the server's environment",
	"nextval":                     "reads the catalog's sequences",
	"currval":                     "reads the catalog's sequences",
	"query":                       "runs SQL outside the sandbox",
	"query_table":                 "reads tables named by a string",
	"json_execute_serialized_sql": "runs SQL outside the sandbox",
	"read_blob":                   "reads files",
	"read_text":                   "reads files",
	"sql_auto_complete":           "lists catalog names",
	"col_description":             "reads the catalog",
	"obj_description":             "reads the catalog",
	"shobj_description":           "reads the catalog",
	"format_type":                 "reads the catalog",
	"get_block_size":              "reads storage information",
	"write_log":                   "writes to the database log",
	"sleep_ms":                    "holds a reader connection idle",
	"json_serialize_plan":         "plans SQL given as a string, outside the sandbox",
	"json_serialize_sql":          "parses SQL given as a string",
	"json_deserialize_sql":        "builds SQL text",
	"getvariable":                 "reads session variables",
	"current_query":               "reads the session",
	"current_schemas":             "reads the catalog",
	"in_search_path":              "reads the catalog",
	"json_structure":              "recurses without a depth limit on nested input, which can crash the server",
	"json_contains":               "recurses without a depth limit on nested input, which can crash the server",
	"json_transform":              "recurses without a depth limit on nested input, which can crash the server",
	"json_transform_strict":       "recurses without a depth limit on nested input, which can crash the server",
	"from_json":                   "recurses without a depth limit on nested input, which can crash the server",
	"from_json_strict":            "recurses without a depth limit on nested input, which can crash the server",
	"levenshtein":                 "takes time quadratic in its inputs, which the query timeout cannot interrupt",
	"editdist3":                   "takes time quadratic in its inputs, which the query timeout cannot interrupt",
	"damerau_levenshtein":         "takes time quadratic in its inputs, which the query timeout cannot interrupt",
	"jaro_similarity":             "takes time quadratic in its inputs, which the query timeout cannot interrupt",
	"jaro_winkler_similarity":     "takes time quadratic in its inputs, which the query timeout cannot interrupt",
	"txid_current":                "reveals other sessions' activity",
	"current_transaction_id":      "reveals other sessions' activity",
	"current_query_id":            "reveals other sessions' activity",
	"current_connection_id":       "reveals other sessions' activity",
}

// systemNamePrefixes start the names of DuckDB's system views (duckdb_tables,
// pg_settings, sqlite_master, pragma_*): a CTE may not take such a name, so that no
// query depends on where DuckDB binds it.
var systemNamePrefixes = []string{"duckdb_", "pg_", "sqlite_", "pragma_", "information_schema"}

// Complexity bounds of one query. DuckDB's planner is exponential in the nesting of
// subqueries and cannot be interrupted while planning, so a short query nested deeply
// enough would hold a reader connection for hours past QueryTimeout: such queries are
// refused before they reach the planner.
const (
	// MaxQueryDepth bounds how deeply query nodes (SELECTs, set operations, CTE bodies,
	// subqueries) nest.
	MaxQueryDepth = 12
	// MaxQueryNodes bounds how many query nodes one query holds.
	MaxQueryNodes = 256
	// MaxTableRefs bounds how many tables, CTEs and table functions one query names.
	MaxTableRefs = 64
)

// DeniedFunctionPrefixes deny whole families of functions by name prefix, with the
// reason: duckdb_* and pragma_* report on the system, pg_* are the PostgreSQL
// compatibility macros (pg_get_viewdef reads view definitions, pg_sleep sleeps). Names
// ending in "_privilege" (has_table_privilege, …) are denied too.
var DeniedFunctionPrefixes = map[string]string{
	"duckdb_": "reads system information",
	"pragma_": "reads system information",
	"pg_":     "reads the catalog or holds a reader connection idle",
}

// userSchema is the schema holding the users' table views (store package comment).
const userSchema = "main"

// vetted is what vetting learned about a query.
type vetted struct {
	// tables are the user tables the query reads, each once, by lower-case name, as of
	// the read transaction.
	tables map[string]store.TableInfo
	// params is the number of positional parameters the query takes.
	params int
	// sql is the statement to run instead of the request's when policy views replaced
	// some of its tables (policy.go); "" to run the request's own.
	sql string
}

// vet parses sqlText with DuckDB's parser inside tx, without executing it, and checks it
// against the sandbox rules (package comment). allowTable reports whether the caller
// may read a table. Errors (*store.Error): CodeInvalid for an empty query, a syntax error
// or named parameters; CodeUnprocessable for anything the sandbox refuses; CodeForbidden
// for a table the caller may not read; CodeNotFound for an unknown table.
func vet(ctx context.Context, tx *store.ReadTx, sqlText string, allowTable func(string) bool, policy func(string) store.TokenPolicy) (*vetted, error) {
	out, err := tx.QueryString(ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", sqlText)
	if err != nil {
		return nil, fmt.Errorf("parse query: %w", err)
	}
	var parsed struct {
		Error        bool              `json:"error"`
		ErrorType    string            `json:"error_type"`
		ErrorMessage string            `json:"error_message"`
		Position     string            `json:"position"`
		Statements   []json.RawMessage `json:"statements"`
	}
	if err := json.Unmarshal([]byte(out), &parsed); err != nil {
		return nil, fmt.Errorf("parse query: json_serialize_sql output: %w", err)
	}
	switch {
	case parsed.Error && parsed.ErrorType == "parser":
		msg := "SQL syntax error: " + parsed.ErrorMessage
		if parsed.Position != "" {
			msg += " (at byte " + parsed.Position + ")"
		}
		return nil, store.Errorf(store.CodeInvalid, "%s", msg)
	case parsed.Error:
		return nil, notASelect(sqlText)
	case len(parsed.Statements) == 0:
		return nil, store.Errorf(store.CodeInvalid, "the query is empty")
	case len(parsed.Statements) > 1:
		return nil, store.Errorf(store.CodeUnprocessable, "only one SELECT statement per request (got %d statements)", len(parsed.Statements))
	}
	var stmt struct {
		NamedParamMap []struct {
			Key string `json:"key"`
		} `json:"named_param_map"`
	}
	var full map[string]any
	dec := json.NewDecoder(strings.NewReader(string(parsed.Statements[0])))
	dec.UseNumber()
	if err := dec.Decode(&full); err != nil {
		return nil, fmt.Errorf("parse query: statement: %w", err)
	}
	if err := json.Unmarshal(parsed.Statements[0], &stmt); err != nil {
		return nil, fmt.Errorf("parse query: statement: %w", err)
	}
	w := &walker{ctx: ctx, tx: tx, allowTable: allowTable, policy: policy, tables: map[string]store.TableInfo{}}
	if err := w.walk(full["node"], nil); err != nil {
		return nil, err
	}
	v := &vetted{tables: w.tables}
	if v.sql, err = w.applyPolicyViews(full); err != nil {
		return nil, err
	}
	for _, p := range stmt.NamedParamMap {
		n, err := strconv.Atoi(p.Key)
		if err != nil {
			return nil, store.Errorf(store.CodeInvalid, "named parameter $%s is not supported; use ? or $1, $2, …", p.Key)
		}
		v.params = max(v.params, n)
	}
	return v, nil
}

// notASelect explains why DuckDB would not serialize sqlText, which parsed: a statement in
// it is not a SELECT. The first keyword tells the common case, a single other statement.
func notASelect(sqlText string) error {
	switch kw := firstKeyword(sqlText); kw {
	case "", "SELECT", "WITH", "FROM", "VALUES", "TABLE", "(":
		return store.Errorf(store.CodeUnprocessable, "only one SELECT statement per request, and only SELECT: the query holds a statement that is not a SELECT")
	default:
		return store.Errorf(store.CodeUnprocessable, "only SELECT is allowed (got %s)", kw)
	}
}

// firstKeyword returns the first word of sqlText in upper case, skipping white space and
// comments, or "(" when it opens with a parenthesis.
func firstKeyword(sqlText string) string {
	s := sqlText
	for {
		s = strings.TrimLeft(s, " \t\r\n\f")
		switch {
		case strings.HasPrefix(s, "--"):
			_, s, _ = strings.Cut(s, "\n")
		case strings.HasPrefix(s, "/*"):
			_, s, _ = strings.Cut(s[2:], "*/")
		case strings.HasPrefix(s, "("):
			return "("
		default:
			end := strings.IndexFunc(s, func(r rune) bool {
				return !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
			})
			if end < 0 {
				end = len(s)
			}
			return strings.ToUpper(s[:end])
		}
	}
}

// walker checks a statement's syntax tree, as serialized by json_serialize_sql, and
// collects the user tables it reads.
type walker struct {
	ctx        context.Context
	tx         *store.ReadTx
	allowTable func(string) bool
	// policy returns the policy of the caller's token on a table (by canonical name), nil
	// when none has any; views holds the FROM items policy views replace (policy.go).
	policy func(string) store.TokenPolicy
	views  []policyView
	tables map[string]store.TableInfo
	// database is the name of the attached database file's catalog, read when needed.
	database string
	// depth is the nesting of query nodes at the current point; nodes and refs count
	// query nodes and FROM items seen so far.
	depth, nodes, refs int
}

// scope is the CTE names visible at a point of the tree, innermost first.
type scope struct {
	names  []string
	parent *scope
}

// has reports whether name is a visible CTE; DuckDB matches CTE names case-insensitively.
func (s *scope) has(name string) bool {
	for ; s != nil; s = s.parent {
		for _, n := range s.names {
			if store.SameName(n, name) {
				return true
			}
		}
	}
	return false
}

// plainTableRefTypes are the FROM items that name nothing themselves and are checked
// through their children. BASE_TABLE, TABLE_FUNCTION and SHOW_REF have their own checks;
// any other FROM item is refused.
var plainTableRefTypes = map[string]bool{"SUBQUERY": true, "JOIN": true, "EXPRESSION_LIST": true, "EMPTY": true, "PIVOT": true}

// walk checks node and everything below it. Object keys are visited in sorted order, so
// that a query breaking several rules always gets the same answer.
func (w *walker) walk(node any, sc *scope) error {
	switch n := node.(type) {
	case []any:
		for _, child := range n {
			if err := w.walk(child, sc); err != nil {
				return err
			}
		}
	case map[string]any:
		if _, query := n["modifiers"]; query {
			w.depth++
			w.nodes++
			defer func() { w.depth-- }()
			if w.depth > MaxQueryDepth || w.nodes > MaxQueryNodes {
				return store.Errorf(store.CodeUnprocessable, "the query is too complex: at most %d nested subqueries and %d SELECTs in all", MaxQueryDepth, MaxQueryNodes)
			}
		}
		if cteMap, ok := n["cte_map"].(map[string]any); ok {
			var err error
			if sc, err = w.walkCTEs(cteMap, sc); err != nil {
				return err
			}
		}
		if err := w.checkTableRef(n, sc); err != nil {
			return err
		}
		if name, ok := n["function_name"].(string); ok {
			if _, expr := n["class"]; expr {
				if err := checkFunction(name); err != nil {
					return err
				}
				if n["export_state"] == true {
					return store.Errorf(store.CodeUnprocessable, "EXPORT_STATE is not allowed: an exported aggregate state holds uninitialized server memory")
				}
			}
		}
		for _, k := range slices.Sorted(maps.Keys(n)) {
			if k == "cte_map" {
				continue
			}
			if err := w.walk(n[k], sc); err != nil {
				return err
			}
		}
	}
	return nil
}

// walkCTEs checks the CTE definitions of one query node and returns the scope of the
// node's body. As DuckDB binds them, a CTE's body sees the CTEs defined before it; a
// recursive CTE (a RECURSIVE_CTE_NODE of its own name) sees itself in its recursive term
// only, while the name in its anchor term is still the table or CTE of that name.
func (w *walker) walkCTEs(cteMap map[string]any, sc *scope) (*scope, error) {
	inner := &scope{parent: sc}
	entries, _ := cteMap["map"].([]any)
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		name, _ := entry["key"].(string)
		if node := recursiveCTE(entry["value"], name); node != nil {
			anchor := maps.Clone(node)
			delete(anchor, "right")
			if err := w.walk(anchor, inner); err != nil {
				return nil, err
			}
			if err := w.walk(node["right"], &scope{names: []string{name}, parent: inner}); err != nil {
				return nil, err
			}
		} else if err := w.walk(entry["value"], inner); err != nil {
			return nil, err
		}
		inner.names = append(inner.names, name)
	}
	return inner, nil
}

// recursiveCTE returns the RECURSIVE_CTE_NODE of a CTE named name, or nil.
func recursiveCTE(value any, name string) map[string]any {
	v, _ := value.(map[string]any)
	q, _ := v["query"].(map[string]any)
	node, _ := q["node"].(map[string]any)
	cteName, _ := node["cte_name"].(string)
	if node["type"] == "RECURSIVE_CTE_NODE" && store.SameName(cteName, name) {
		return node
	}
	return nil
}

// checkTableRef checks a tree object that is a FROM item (a DuckDB TableRef) and ignores
// any other. The three types that name something are recognized by their type alone, so
// that they are checked wherever they appear.
func (w *walker) checkTableRef(n map[string]any, sc *scope) error {
	typ, _ := n["type"].(string)
	if typ == "BASE_TABLE" || typ == "TABLE_FUNCTION" {
		if w.refs++; w.refs > MaxTableRefs {
			return store.Errorf(store.CodeUnprocessable, "the query is too complex: it names more than %d tables", MaxTableRefs)
		}
	}
	switch typ {
	case "BASE_TABLE":
		return w.checkBaseTable(n, sc)
	case "TABLE_FUNCTION":
		fn, _ := n["function"].(map[string]any)
		name, _ := fn["function_name"].(string)
		if !slices.Contains(AllowedTableFunctions, strings.ToLower(name)) {
			return store.Errorf(store.CodeUnprocessable, "table function %s() is not allowed; queries may use only %s()",
				name, strings.Join(AllowedTableFunctions, "(), "))
		}
	case "SHOW_REF":
		if table, _ := n["table_name"].(string); table != "" || n["query"] == nil {
			return store.Errorf(store.CodeUnprocessable, "SHOW is not allowed; DESCRIBE and SUMMARIZE are, on a table or query")
		}
	default:
		if isTableRef(n) && !plainTableRefTypes[typ] {
			return store.Errorf(store.CodeUnprocessable, "unsupported FROM item (%s)", strings.ToLower(typ))
		}
	}
	return nil
}

// isTableRef reports whether a tree object is a FROM item: it has a type, an alias, a
// sample and a query location, and is not an expression (class) or a query node
// (modifiers).
func isTableRef(n map[string]any) bool {
	_, typed := n["type"].(string)
	_, alias := n["alias"]
	_, sample := n["sample"]
	_, loc := n["query_location"]
	_, class := n["class"]
	_, modifiers := n["modifiers"]
	return typed && alias && sample && loc && !class && !modifiers
}

// checkBaseTable checks a table name: a CTE in scope, or a live user table the caller
// may read, in schema main of this database. A CTE may not take the name of a table the
// caller may not read: where DuckDB binds such a name is subtle (recursive anchors), so
// the sandbox does not rely on it.
func (w *walker) checkBaseTable(n map[string]any, sc *scope) error {
	name, _ := n["table_name"].(string)
	schema, _ := n["schema_name"].(string)
	catalog, _ := n["catalog_name"].(string)
	if schema == "" && catalog == "" && sc.has(name) {
		for _, p := range systemNamePrefixes {
			if strings.HasPrefix(store.FoldName(name), p) {
				return store.Errorf(store.CodeUnprocessable, "a CTE may not be named %s: names starting with %s belong to DuckDB's system views", strconv.Quote(name), p)
			}
		}
		// A CTE may take any other name, also that of a table the caller may not read:
		// refusing it would tell the caller that such a table exists. Every name the
		// walker does not take for a CTE in scope is checked as a table (recursive
		// anchors do not see their own name), as DuckDB binds them.
		return nil
	}
	relation := qualifiedName(catalog, schema, name)
	refuse := func() error {
		return store.Errorf(store.CodeUnprocessable, "reading %s is not allowed: queries may read only ducktail tables", relation)
	}
	if schema != "" && !store.SameName(schema, userSchema) {
		return refuse()
	}
	if catalog != "" {
		db, err := w.databaseName()
		if err != nil {
			return err
		}
		if !store.SameName(catalog, db) {
			return refuse()
		}
	}
	if store.ValidateTableName(name) != nil {
		return refuse()
	}
	info, err := w.tx.Table(w.ctx, name)
	canonical := name
	if err == nil {
		canonical = info.Name
	}
	// A table the token may not read answers exactly as a missing one, under the name
	// as written: the token learns nothing about whether it exists, nor how its name is
	// spelled (docs/design.md, "Shapes and policies").
	if w.allowTable == nil || !w.allowTable(canonical) {
		return store.Errorf(store.CodeNotFound, "no table named %s; queries may read only ducktail tables", strconv.Quote(name))
	}
	if err != nil {
		var se *store.Error
		if errors.As(err, &se) && se.Code == store.CodeNotFound {
			return store.Errorf(store.CodeNotFound, "no table named %s; queries may read only ducktail tables", strconv.Quote(name))
		}
		return err
	}
	w.tables[store.FoldName(info.Name)] = info
	return w.policyView(n, name, info)
}

// databaseName returns the catalog name of the database file, as DuckDB names it.
func (w *walker) databaseName() (string, error) {
	if w.database == "" {
		db, err := w.tx.QueryString(w.ctx, "SELECT current_database()")
		if err != nil {
			return "", fmt.Errorf("read database name: %w", err)
		}
		w.database = db
	}
	return w.database, nil
}

// qualifiedName quotes a relation name for messages: "catalog"."schema"."name".
func qualifiedName(parts ...string) string {
	var quoted []string
	for _, p := range parts {
		if p != "" {
			quoted = append(quoted, strconv.Quote(p))
		}
	}
	return strings.Join(quoted, ".")
}

// checkFunction refuses a denied scalar, aggregate or window function.
func checkFunction(name string) error {
	lower := strings.ToLower(name)
	why, denied := DeniedFunctions[lower]
	for prefix, reason := range DeniedFunctionPrefixes {
		if strings.HasPrefix(lower, prefix) {
			why, denied = reason, true
		}
	}
	if strings.HasSuffix(lower, "_privilege") {
		why, denied = "reads the catalog", true
	}
	if denied {
		return store.Errorf(store.CodeUnprocessable, "function %s() is not allowed: it %s", name, why)
	}
	return nil
}
