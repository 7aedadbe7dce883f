package snapshot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ducktail/ducktail/snapshot"
	"github.com/ducktail/ducktail/store"
)

// TestSandboxAttacks runs queries that try to reach files, settings, the catalog, other
// tables or the write path, and checks that each is refused before execution with the
// right code and a message naming what was refused, and that nothing changed.
func TestSandboxAttacks(t *testing.T) {
	db := openDB(t)
	rows, weather := loadWeather(t, db, "weather", 500)
	if _, err := db.CreateTable(context.Background(), "secret", []store.ColumnSpec{{Name: "x", Type: "BIGINT"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.CreateToken(context.Background(), store.PurposeAdmin, "", 0); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }
	canary := out("canary.csv")
	if err := os.WriteFile(canary, []byte("secret\nfrom-the-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	threads := setting(t, db, "threads")
	tokens := catalogCount(t, db, "tokens")

	r := newReader(t, db)
	r.QueryTimeout = 500 * time.Millisecond
	r.MaxResultBytes = 1 << 20
	onlyWeather := func(name string) bool { return name == "weather" }
	cases := []struct {
		name  string
		sql   string
		code  store.Code
		msg   string // the message must hold this
		allow func(string) bool
	}{
		{"read_csv", "SELECT * FROM read_csv('/etc/passwd')", store.CodeUnprocessable, "table function read_csv() is not allowed", nil},
		{"read_csv of a readable file", "SELECT * FROM read_csv('" + canary + "')", store.CodeUnprocessable, "read_csv()", nil},
		{"read_text", "SELECT * FROM read_text('/etc/hosts')", store.CodeUnprocessable, "read_text()", nil},
		{"read_parquet", "SELECT * FROM read_parquet('x.parquet')", store.CodeUnprocessable, "read_parquet()", nil},
		{"glob", "SELECT * FROM glob('/etc/*')", store.CodeUnprocessable, "glob()", nil},
		{"file as a table", "SELECT * FROM '/etc/passwd'", store.CodeUnprocessable, `reading "/etc/passwd" is not allowed`, nil},
		{"file as a table in a subquery", "SELECT (SELECT count(*) FROM '" + canary + "') AS n", store.CodeUnprocessable, "is not allowed", nil},
		{"COPY TO", "COPY weather TO '" + out("x.csv") + "'", store.CodeUnprocessable, "only SELECT is allowed (got COPY)", nil},
		{"COPY query TO", "COPY (SELECT * FROM weather) TO '" + out("y.csv") + "'", store.CodeUnprocessable, "(got COPY)", nil},
		{"EXPORT DATABASE", "EXPORT DATABASE '" + out("export") + "'", store.CodeUnprocessable, "(got EXPORT)", nil},
		{"ATTACH", "ATTACH '" + out("x.db") + "'", store.CodeUnprocessable, "(got ATTACH)", nil},
		{"INSTALL", "INSTALL httpfs", store.CodeUnprocessable, "(got INSTALL)", nil},
		{"LOAD", "LOAD httpfs", store.CodeUnprocessable, "(got LOAD)", nil},
		{"SET", "SET threads=1", store.CodeUnprocessable, "(got SET)", nil},
		{"RESET", "RESET threads", store.CodeUnprocessable, "(got RESET)", nil},
		{"PRAGMA", "PRAGMA version", store.CodeUnprocessable, "(got PRAGMA)", nil},
		{"getenv", "SELECT getenv('HOME')", store.CodeUnprocessable, "function getenv() is not allowed", nil},
		{"current_setting", "SELECT current_setting('threads')", store.CodeUnprocessable, "function current_setting() is not allowed", nil},
		{"current_setting in a WHERE", "SELECT * FROM weather WHERE current_setting('threads') = '2'", store.CodeUnprocessable, "current_setting()", nil},
		{"SELECT then DROP", "SELECT 1; DROP TABLE weather", store.CodeUnprocessable, "only one SELECT statement per request", nil},
		{"two SELECTs", "SELECT 1; SELECT 2", store.CodeUnprocessable, "only one SELECT statement per request (got 2 statements)", nil},
		{"DROP VIEW", "DROP VIEW weather", store.CodeUnprocessable, "(got DROP)", nil},
		{"INSERT", "INSERT INTO weather VALUES ('2020-01-01', 0, 0, 0, 0, 'sun')", store.CodeUnprocessable, "(got INSERT)", nil},
		{"DELETE", "DELETE FROM weather", store.CodeUnprocessable, "(got DELETE)", nil},
		{"CREATE TABLE AS", "CREATE TABLE x AS SELECT 1", store.CodeUnprocessable, "(got CREATE)", nil},
		{"CALL", "CALL duckdb_tables()", store.CodeUnprocessable, "(got CALL)", nil},
		{"COMMIT", "COMMIT", store.CodeUnprocessable, "(got COMMIT)", nil},
		{"EXPLAIN", "EXPLAIN SELECT 1", store.CodeUnprocessable, "(got EXPLAIN)", nil},
		{"CHECKPOINT", "CHECKPOINT", store.CodeUnprocessable, "(got CHECKPOINT)", nil},
		{"duckdb_tables()", "SELECT * FROM duckdb_tables()", store.CodeUnprocessable, "table function duckdb_tables() is not allowed", nil},
		{"duckdb_settings view", "FROM duckdb_settings", store.CodeNotFound, `no table named "duckdb_settings"`, nil},
		{"sqlite_master", "SELECT * FROM main.sqlite_master", store.CodeNotFound, `"sqlite_master"`, nil},
		{"system catalog", "SELECT * FROM system.main.duckdb_settings", store.CodeUnprocessable, `reading "system"."main"."duckdb_settings" is not allowed`, nil},
		{"catalog tokens", "SELECT * FROM ducktail_catalog.tokens", store.CodeUnprocessable, `reading "ducktail_catalog"."tokens" is not allowed`, nil},
		{"physical table", "SELECT * FROM ducktail_data.a_0", store.CodeUnprocessable, `"ducktail_data"."a_0"`, nil},
		{"migrations", "SELECT * FROM ducktail_migrations.schema_migrations", store.CodeUnprocessable, `"ducktail_migrations"`, nil},
		{"information_schema", "SELECT * FROM information_schema.tables", store.CodeUnprocessable, `reading "information_schema"."tables" is not allowed`, nil},
		{"pg_catalog", "SELECT * FROM pg_catalog.pg_settings", store.CodeUnprocessable, `"pg_catalog"."pg_settings"`, nil},
		{"SHOW TABLES", "SHOW TABLES", store.CodeUnprocessable, "SHOW is not allowed", nil},
		{"UNION with the catalog", "SELECT weather FROM weather UNION ALL SELECT id FROM ducktail_catalog.tokens", store.CodeUnprocessable, `"ducktail_catalog"."tokens"`, nil},
		{"catalog in LIMIT", "SELECT * FROM weather LIMIT (SELECT count(*) FROM ducktail_catalog.tokens)", store.CodeUnprocessable, `"ducktail_catalog"."tokens"`, nil},
		{"catalog in a table function argument", "SELECT * FROM range((SELECT count(*) FROM ducktail_catalog.tokens))", store.CodeUnprocessable, `"ducktail_catalog"."tokens"`, nil},
		{"query()", "SELECT * FROM query('SELECT * FROM ducktail_catalog.tokens')", store.CodeUnprocessable, "table function query() is not allowed", nil},
		{"query_table()", "SELECT * FROM query_table('ducktail_catalog.tokens')", store.CodeUnprocessable, "query_table()", nil},
		{"histogram table macro", "SELECT * FROM histogram(weather, temp_max)", store.CodeUnprocessable, "histogram()", nil},
		{"json_execute_serialized_sql", "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))", store.CodeUnprocessable, "json_execute_serialized_sql()", nil},
		{"nextval", "SELECT nextval('ducktail_catalog.table_ids')", store.CodeUnprocessable, "function nextval() is not allowed", nil},
		{"pg_get_viewdef", "SELECT pg_get_viewdef(1)", store.CodeUnprocessable, "function pg_get_viewdef() is not allowed", nil},
		{"has_table_privilege", "SELECT has_table_privilege('x', 'y')", store.CodeUnprocessable, "has_table_privilege()", nil},
		{"sleep", "SELECT sleep_ms(100000)", store.CodeUnprocessable, "sleep_ms()", nil},
		{"denied function in a lambda", "SELECT list_transform([1], x -> current_setting('threads'))", store.CodeUnprocessable, "current_setting()", nil},
		{"CTE named like a catalog table, reading it", "WITH tokens AS (SELECT * FROM ducktail_catalog.tokens) SELECT * FROM tokens", store.CodeUnprocessable, `"ducktail_catalog"."tokens"`, nil},
		{"CTE name used outside its scope, not a system name", "SELECT * FROM (WITH my_cte AS (SELECT 1 AS x) SELECT * FROM my_cte), my_cte", store.CodeNotFound, `"my_cte"`, nil},
		{"CTE name used outside its scope", "SELECT * FROM (WITH duckdb_settings AS (SELECT 1 AS x) SELECT * FROM duckdb_settings), duckdb_settings", store.CodeUnprocessable, `a CTE may not be named "duckdb_settings"`, nil},
		{"CTE used before its definition", "WITH a AS (SELECT * FROM duckdb_settings), duckdb_settings AS (SELECT 1 AS x) SELECT * FROM a", store.CodeNotFound, `"duckdb_settings"`, nil},
		{"non-recursive CTE reading its own name", "WITH RECURSIVE duckdb_settings AS (SELECT * FROM duckdb_settings) SELECT * FROM duckdb_settings", store.CodeNotFound, `"duckdb_settings"`, nil},
		{"CTE shadowing a forbidden table for a scoped token, reading it", "WITH weather AS (SELECT * FROM secret) SELECT * FROM weather", store.CodeForbidden, `may not read table "secret"`, onlyWeather},
		{"subquery reading a table the token may not read", "SELECT * FROM weather WHERE temp_max > (SELECT max(x) FROM secret)", store.CodeForbidden, `may not read table "secret"`, onlyWeather},
		{"join reading a table the token may not read", "SELECT * FROM weather JOIN main.SECRET ON true", store.CodeForbidden, `"SECRET"`, onlyWeather},
		{"scoped token asking for a missing table", "SELECT * FROM nothing_here", store.CodeForbidden, `"nothing_here"`, onlyWeather},
		{"long-running query", "SELECT count(*) FROM range(10000000000)", store.CodeTimeout, "500ms", nil},
		{"huge result", "SELECT * FROM range(10000000)", store.CodeTooLarge, "limit of 1 MiB", nil},
	}
	for _, c := range cases {
		allow := c.allow
		if allow == nil {
			allow = allowAll
		}
		res, err := r.Query(context.Background(), c.sql, nil, snapshot.FormatJSON, allow)
		if err == nil {
			t.Errorf("%s: %q was allowed: %s", c.name, c.sql, res.Body)
			continue
		}
		se, ok := err.(*store.Error)
		if !ok || se.Code != c.code || !strings.Contains(se.Message, c.msg) {
			t.Errorf("%s: %q: err = %v, want code %s and a message with %q", c.name, c.sql, err, c.code, c.msg)
			continue
		}
		if strings.Contains(se.Message, "Permission Error") || strings.Contains(se.Message, "root:") {
			t.Errorf("%s: %q reached DuckDB: %s", c.name, c.sql, se.Message)
		}
	}

	// Nothing changed: the rows, the head, the tables, the settings, the file system.
	after, err := db.Table("weather")
	if err != nil || after.Head != weather.Head {
		t.Fatalf("weather after the attacks: %+v, %v; want head %+v", after.Head, err, weather.Head)
	}
	res, err := r.Query(context.Background(), "SELECT count(*) AS n FROM weather", nil, snapshot.FormatJSON, allowAll)
	if err != nil || !strings.Contains(string(res.Body), `"rows":[{"n":1461}]`) || len(rows) != 1461 {
		t.Fatalf("weather rows after the attacks: %v, %s", err, res.Body)
	}
	if n := len(db.Tables()); n != 2 {
		t.Fatalf("%d tables after the attacks, want 2", n)
	}
	if got := setting(t, db, "threads"); got != threads {
		t.Fatalf("threads = %s after the attacks, was %s", got, threads)
	}
	if got := catalogCount(t, db, "tokens"); got != tokens || tokens != "1" {
		t.Fatalf("%s catalog tokens after the attacks, was %s (want 1)", got, tokens)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "canary.csv" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("files in the output directory after the attacks: %v, want only canary.csv", names)
	}
}

// TestSandboxAllows checks that the sandbox does not refuse ordinary read-only SQL.
func TestSandboxAllows(t *testing.T) {
	db := openDB(t)
	rows, _ := loadWeather(t, db, "weather", 2000)
	hot, kinds := 0, map[string]int{}
	for _, w := range rows {
		if w.tempMax > 33 {
			hot++
		}
		kinds[w.weather]++
	}
	r := newReader(t, db)
	database := readString(t, db, "SELECT current_database()")
	cases := []struct {
		sql     string
		want    string // the JSON rows
		cursors int
	}{
		{"SELECT count(*) AS n FROM weather", `[{"n":1461}]`, 1},
		{"FROM weather SELECT count(*) AS n", `[{"n":1461}]`, 1},
		{"SELECT count(*) AS n FROM main.weather", `[{"n":1461}]`, 1},
		{`SELECT count(*) AS n FROM "WEATHER"`, `[{"n":1461}]`, 1},
		{"SELECT count(*) AS n FROM " + database + ".main.weather", `[{"n":1461}]`, 1},
		{"WITH hot AS (SELECT * FROM weather WHERE temp_max > 33) SELECT count(*) AS n FROM hot", fmt.Sprintf(`[{"n":%d}]`, hot), 1},
		{"WITH a AS (SELECT 1 AS x), b AS (SELECT x + 1 AS y FROM a) SELECT y FROM b", `[{"y":2}]`, 0},
		{"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT sum(n) AS s FROM r", `[{"s":6}]`, 0},
		{"WITH weather AS (SELECT 1 AS x) SELECT x FROM weather", `[{"x":1}]`, 0},
		{"SELECT 1 AS x UNION ALL SELECT 2 ORDER BY x DESC", `[{"x":2},{"x":1}]`, 0},
		{"VALUES (1, 'a')", `[{"col0":1,"col1":"a"}]`, 0},
		{"SELECT * FROM range(3) t(x) WHERE x IN (SELECT 1 UNION SELECT 2)", `[{"x":1},{"x":2}]`, 0},
		{"SELECT * FROM generate_series(1, 2) g(x), unnest([10]) u(y)", `[{"x":1,"y":10},{"x":2,"y":10}]`, 0},
		{"SELECT weather, count(*) AS n, rank() OVER (ORDER BY count(*) DESC) AS r FROM weather GROUP BY weather ORDER BY n DESC LIMIT 2",
			fmt.Sprintf(`[{"weather":"rain","n":%d,"r":1},{"weather":"sun","n":%d,"r":2}]`, kinds["rain"], kinds["sun"]), 1},
		{"SELECT current_database() = current_database() AS same, upper('duck') AS u", `[{"same":true,"u":"DUCK"}]`, 0},
		{"SELECT column_name FROM (DESCRIBE weather) LIMIT 1", `[{"column_name":"date"}]`, 1},
		{"SELECT key FROM json_each('{\"a\":1}')", `[{"key":"a"}]`, 0},
		{"SELECT column_name, count FROM (SUMMARIZE weather) WHERE column_name = 'wind'", `[{"column_name":"wind","count":1461}]`, 1},
	}
	for _, c := range cases {
		res, err := r.Query(context.Background(), c.sql, nil, snapshot.FormatJSON, allowAll)
		if err != nil {
			t.Errorf("%q: %v", c.sql, err)
			continue
		}
		var b struct {
			Rows json.RawMessage `json:"rows"`
		}
		if err := json.Unmarshal(res.Body, &b); err != nil {
			t.Fatal(err)
		}
		if string(b.Rows) != c.want || len(res.Cursors) != c.cursors {
			t.Errorf("%q: rows %s with %d cursors, want %s with %d", c.sql, b.Rows, len(res.Cursors), c.want, c.cursors)
		}
	}
}

func TestQueryNilAllowTableAllowsNoTable(t *testing.T) {
	db := openDB(t)
	loadWeather(t, db, "weather", 2000)
	r := newReader(t, db)
	_, err := r.Query(context.Background(), "SELECT count(*) FROM weather", nil, snapshot.FormatJSON, nil)
	wantCode(t, "nil allowTable", err, store.CodeForbidden)
	if _, err := r.Query(context.Background(), "SELECT 1", nil, snapshot.FormatJSON, nil); err != nil {
		t.Fatalf("a query reading no table with a nil allowTable: %v", err)
	}
}

// setting reads a DuckDB setting through the store, outside the sandbox.
func setting(t *testing.T, db *store.DB, name string) string {
	t.Helper()
	return readString(t, db, "SELECT current_setting(?)::VARCHAR", name)
}

// catalogCount counts the rows of a catalog table through the store, outside the sandbox.
func catalogCount(t *testing.T, db *store.DB, table string) string {
	t.Helper()
	return readString(t, db, "SELECT count(*)::VARCHAR FROM ducktail_catalog."+store.QuoteIdent(table))
}

func readString(t *testing.T, db *store.DB, query string, args ...any) string {
	t.Helper()
	var v string
	err := db.Read(context.Background(), func(tx *store.ReadTx) error {
		var err error
		v, err = tx.QueryString(context.Background(), query, args...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}
