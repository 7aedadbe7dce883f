ALTER TABLE ducktail_catalog.tokens DROP COLUMN policy_columns;
ALTER TABLE ducktail_catalog.tokens DROP COLUMN policy_where;
