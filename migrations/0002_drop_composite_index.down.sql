CREATE INDEX commits_idempotency ON ducktail_catalog.commits (table_id, idempotency_key);
