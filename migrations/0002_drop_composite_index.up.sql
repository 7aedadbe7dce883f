-- DuckDB does not use a two-column ART index for the Idempotency-Key lookup
-- (table_id = ? AND idempotency_key IN (...)): it scans the commit log with zone maps
-- either way, so the index only cost insert time and memory. The writer now looks up all
-- the keys of a group commit in one scan.
DROP INDEX IF EXISTS ducktail_catalog.commits_idempotency;
