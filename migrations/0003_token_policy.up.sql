-- Row and column policies on tokens (docs/design.md, "Shapes and policies"): the row
-- predicate as DuckDB renders it, and the column names as a JSON array; NULL for a token
-- without a policy.
ALTER TABLE ducktail_catalog.tokens ADD COLUMN policy_where VARCHAR;
ALTER TABLE ducktail_catalog.tokens ADD COLUMN policy_columns VARCHAR;
