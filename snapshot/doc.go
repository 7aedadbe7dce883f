// Package snapshot serves ducktail's canonical reads: a whole table (Reader.Table, for
// GET /v1/tables/{t}/snapshot) or one sandboxed SQL SELECT (Reader.Query, for
// POST /v1/query), each inside one read-only DuckDB transaction that also yields the
// cursor position of every table it read, so that a subscriber starting from that cursor
// continues exactly after the rows it got (docs/design.md, "The atomic hand-off"). It reads
// through package store only and knows no HTTP (docs/design.md, "Packages and who owns what").
//
// # Output formats
//
// Results come from DuckDB's Arrow record reader, never from COPY … TO (file access is
// disabled, docs/design.md, "Limits and safety"), in one of five formats (Format, Negotiate):
//
//	arrow    application/vnd.apache.arrow.stream   Arrow IPC stream: the schema message
//	                                               (always, even for 0 rows), one record
//	                                               batch message per DuckDB chunk, EOS
//	json     application/json                      one object, described below
//	ndjson   application/x-ndjson                  one JSON object per row, each ended by
//	                                               "\n"; 0 rows is an empty body
//	csv      text/csv; charset=utf-8; header=present  RFC 4180, described below
//	parquet  application/vnd.apache.parquet        one Parquet file (Snappy, row groups of
//	                                               at most 122,880 rows, the Arrow schema
//	                                               stored under ARROW:schema)
//
// The JSON object of Reader.Table, on one line and ended by "\n":
//
//	{"columns":[{"name":"date","type":"DATE"},{"name":"temp_max","type":"DOUBLE"}],
//	 "rows":[{"date":"2012-01-01","temp_max":12.8}],
//	 "cursor":"r1.…"}
//
// Reader.Query writes "cursors" instead of "cursor": an object from each table the query
// read (canonical name) to its cursor, {} when it read none. "type" is the DuckDB SQL
// type name of the column (store.Type spellings such as "DECIMAL(18,3)" or
// "TIMESTAMPTZ"; "INTEGER[]", "STRUCT(…)", "INTERVAL" and so on for query results of
// other types). Row objects hold every column in order; values are encoded by
// valuetext.AppendJSONValue with integers as exact JSON numbers (even beyond 2^53: parse
// with a big-number-aware decoder when that matters). When a query returns several
// columns of the same name, the JSON, NDJSON and CSV outputs name the second "name_1",
// the third "name_2" (DuckDB's own convention), so that keys stay unique; Arrow and
// Parquet keep DuckDB's names. The cursor members are left out when Reader.Cursor is nil.
//
// CSV (RFC 4180): a header row with the column names, then one record per row, fields
// separated by "," and records ended by CRLF. A field is quoted (with '"' doubled) when
// it is empty, holds ',', '"', CR or LF, or starts with a space or tab. NULL is an empty
// unquoted field, the empty string is "". Values are the text of valuetext.AppendTextValue:
// the JSON text unquoted (2012-01-01, 2023-11-14T22:13:20.12Z, NaN, base64 for BLOB).
//
// The other formats carry no cursor in the body: the caller sends it in a header
// (Ducktail-Cursor).
//
// # The sandbox
//
// Reader.Query never hands user SQL to DuckDB for preparation before vetting it (the
// driver executes every statement but the last of a multi-statement string while
// preparing). It first parses the SQL with DuckDB's own parser, json_serialize_sql(?), the
// SQL bound as a parameter, and walks the syntax tree:
//
//   - exactly one statement, and a SELECT: SELECT, FROM-first, WITH (CTEs, recursive
//     CTEs), UNION/INTERSECT/EXCEPT, VALUES, subqueries, DESCRIBE/SUMMARIZE of a query;
//     anything else (INSERT, COPY, EXPORT, ATTACH, INSTALL, LOAD, SET, RESET, PRAGMA,
//     CALL, CREATE, DROP, SHOW, …) is refused;
//   - every table reference is a CTE in scope or a live user table (schema main, catalog
//     the database itself); the schemas ducktail_catalog, ducktail_data,
//     ducktail_migrations, information_schema and pg_catalog, the system views
//     (duckdb_*, sqlite_master, …), other catalogs and file paths are refused; CTE scope
//     follows DuckDB's binding (a recursive CTE's anchor does not see its own name); a
//     table the caller may not read answers exactly as a missing one;
//   - at most MaxQueryDepth nested subqueries, MaxQueryNodes SELECTs and MaxTableRefs
//     table references: DuckDB plans deep nesting in exponential time, uninterruptibly;
//   - table functions come from an allow-list (AllowedTableFunctions);
//   - scalar, aggregate and window functions that read configuration, the environment,
//     sequences, the catalog or files, plan or run SQL given as a string, sleep, write
//     logs, recurse without a depth limit (a crash), take quadratic time the timeout
//     cannot interrupt, or reveal other sessions' activity are refused (DeniedFunctions,
//     DeniedFunctionPrefixes), and so is EXPORT_STATE, whose states hold uninitialized
//     memory;
//   - names are compared ignoring ASCII case only, as DuckDB compares them (store.FoldName),
//     and a CTE may not take a system view's name (duckdb_*, pg_*, sqlite_*, pragma_*).
//
// What the sandbox does not bound: --query-timeout is checked by DuckDB between chunks of
// work, so one costly call on huge values can run past it, and DuckDB's memory_limit
// covers its buffer manager, not every allocation. Where query tokens go to untrusted
// callers, run ducktail under an OS memory limit (a cgroup, systemd's MemoryMax).
//
// The statement then runs in the same read-only transaction with a time limit
// (Reader.QueryTimeout, enforced by DuckDB's interrupt) and a limit on the encoded
// result size (Reader.MaxResultBytes). The database-wide enable_external_access=false
// Package snapshot serves ducktail's canonical reads: a whole table (Reader.Table, for
// GET /v1/tables/{t}/snapshot) or one sandboxed SQL SELECT (Reader.Query, for
// POST /v1/query), each inside one read-only DuckDB transaction that also yields the
// cursor position of every table it read, so that a subscriber starting from that cursor
// continues exactly after the rows it got (docs/design.md, "The atomic hand-off"). It reads
// through package store only and knows no HTTP (docs/design.md, "Packages and who owns what").
//
// # Output formats
//
// Results come from DuckDB's Arrow record reader, never from COPY … TO (file access is
// disabled, docs/design.md, "Limits and safety"), in one of five formats (Format, Negotiate):
//
//	arrow    application/vnd.apache.arrow.stream   Arrow IPC stream: the schema message
//	                                               (always, even for 0 rows), one record
//	                                               batch message per DuckDB chunk, EOS
//	json     application/json                      one object, described below
//	ndjson   application/x-ndjson                  one JSON object per row, each ended by
//	                                               "\n"; 0 rows is an empty body
//	csv      text/csv; charset=utf-8; header=present  RFC 4180, described below
//	parquet  application/vnd.apache.parquet        one Parquet file (Snappy, row groups of
//	                                               at most 122,880 rows, the Arrow schema
//	                                               stored under ARROW:schema)
//
// The JSON object of Reader.Table, on one line and ended by "\n":
//
//	{"columns":[{"name":"date","type":"DATE"},{"name":"temp_max","type":"DOUBLE"}],
//	 "rows":[{"date":"2012-01-01","temp_max":12.8}],
//	 "cursor":"r1.…"}
//
// Reader.Query writes "cursors" instead of "cursor": an object from each table the query
// read (canonical name) to its cursor, {} when it read none. "type" is the DuckDB SQL
// type name of the column (store.Type spellings such as "DECIMAL(18,3)" or
// "TIMESTAMPTZ"; "INTEGER[]", "STRUCT(…)", "INTERVAL" and so on for query results of
// other types). Row objects hold every column in order; values are encoded by
// valuetext.AppendJSONValue with integers as exact JSON numbers (even beyond 2^53: parse
// with a big-number-aware decoder when that matters). When a query returns several
// columns of the same name, the JSON, NDJSON and CSV outputs name the second "name_1",
// the third "name_2" (DuckDB's own convention), so that keys stay unique; Arrow and
// Parquet keep DuckDB's names. The cursor members are left out when Reader.Cursor is nil.
//
// CSV (RFC 4180): a header row with the column names, then one record per row, fields
// separated by "," and records ended by CRLF. A field is quoted (with '"' doubled) when
// it is empty, holds ',', '"', CR or LF, or starts with a space or tab. NULL is an empty
// unquoted field, the empty string is "". Values are the text of valuetext.AppendTextValue:
// the JSON text unquoted (2012-01-01, 2023-11-14T22:13:20.12Z, NaN, base64 for BLOB).
//
// The other formats carry no cursor in the body: the caller sends it in a header
// (Ducktail-Cursor).
//
// # The sandbox
//
// Reader.Query never hands user SQL to DuckDB for preparation before vetting it (the
// driver executes every statement but the last of a multi-statement string while
// preparing). It first parses the SQL with DuckDB's own parser, json_serialize_sql(?), the
// SQL bound as a parameter, and walks the syntax tree:
//
//   - exactly one statement, and a SELECT: SELECT, FROM-first, WITH (CTEs, recursive
//     CTEs), UNION/INTERSECT/EXCEPT, VALUES, subqueries, DESCRIBE/SUMMARIZE of a query;
//     anything else (INSERT, COPY, EXPORT, ATTACH, INSTALL, LOAD, SET, RESET, PRAGMA,
//     CALL, CREATE, DROP, SHOW, …) is refused;
//   - every table reference is a CTE in scope or a live user table (schema main, catalog
//     the database itself); the schemas ducktail_catalog, ducktail_data,
//     ducktail_migrations, information_schema and pg_catalog, the system views
//     (duckdb_*, sqlite_master, …), other catalogs and file paths are refused; CTE scope
//     follows DuckDB's binding (a recursive CTE's anchor does not see its own name); a
//     table the caller may not read answers exactly as a missing one;
//   - at most MaxQueryDepth nested subqueries, MaxQueryNodes SELECTs and MaxTableRefs
//     table references: DuckDB plans deep nesting in exponential time, uninterruptibly;
//   - table functions come from an allow-list (AllowedTableFunctions);
//   - scalar, aggregate and window functions that read configuration, the environment,
//     sequences, the catalog or files, plan or run SQL given as a string, sleep, write
//     logs, recurse without a depth limit (a crash), take quadratic time the timeout
//     cannot interrupt, or reveal other sessions' activity are refused (DeniedFunctions,
//     DeniedFunctionPrefixes), and so is EXPORT_STATE, whose states hold uninitialized
//     memory;
//   - names are compared ignoring ASCII case only, as DuckDB compares them (store.FoldName),
//     and a CTE may not take a system view's name (duckdb_*, pg_*, sqlite_*, pragma_*).
//
// What the sandbox does not bound: --query-timeout is checked by DuckDB between chunks of
// work, so one costly call on huge values can run past it, and DuckDB's memory_limit
// covers its buffer manager, not every allocation. Where query tokens go to untrusted
// callers, run ducktail under an OS memory limit (a cgroup, systemd's MemoryMax).
//
// The statement then runs in the same read-only transaction with a time limit
// (Reader.QueryTimeout, enforced by DuckDB's interrupt) and a limit on the encoded
// result size (Reader.MaxResultBytes). The database-wide enable_external_access=false
// and lock_configuration=true remain the second line of defence.
//
// Through a token with a policy (PolicyQuery), every FROM item naming the policy's table
// reads its policy view instead (policy.go), and shapes (Shape, ShapedTable) are checked
// by the same parser with a stricter walk of their one expression (shape.go;
// docs/design.md, "Shapes and policies").
package snapshot
