-- The ducktail catalog (docs/design.md, "Storage model").
-- Schema ducktail_catalog holds the catalog; schema ducktail_data holds one physical table per
-- activation; schema main holds one view per user table, the only names user SQL sees.
CREATE SCHEMA IF NOT EXISTS ducktail_catalog;
CREATE SCHEMA IF NOT EXISTS ducktail_data;

CREATE SEQUENCE ducktail_catalog.table_ids START 1;

-- One row per table ever created; dropped tables keep their row with dropped_at set so
-- their ids are never reused.
CREATE TABLE ducktail_catalog.tables (
    id          BIGINT      NOT NULL,
    name        VARCHAR     NOT NULL,
    activation  UUID        NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    dropped_at  TIMESTAMPTZ
);

-- One row per activation. head_seq is the seq of the last commit (0 before the first);
-- next_column numbers physical columns c1, c2, ... of the physical table.
CREATE TABLE ducktail_catalog.activations (
    id          UUID        NOT NULL,
    table_id    BIGINT      NOT NULL,
    physical    VARCHAR     NOT NULL,
    started_at  TIMESTAMPTZ NOT NULL,
    ended_at    TIMESTAMPTZ,
    end_reason  VARCHAR,
    head_seq    BIGINT      NOT NULL,
    next_column INTEGER     NOT NULL
);

-- Schema versions of an activation: version v applies to commits from_seq and later,
-- until the next version. columns is a JSON array of {"id", "name", "type"}.
CREATE TABLE ducktail_catalog.schema_versions (
    table_id    BIGINT      NOT NULL,
    activation  UUID        NOT NULL,
    version     INTEGER     NOT NULL,
    from_seq    BIGINT      NOT NULL,
    columns     VARCHAR     NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);

-- The commit log: one row per commit, written in the same transaction as its rows.
CREATE TABLE ducktail_catalog.commits (
    table_id        BIGINT      NOT NULL,
    activation      UUID        NOT NULL,
    seq             BIGINT      NOT NULL,
    schema_version  INTEGER     NOT NULL,
    rows            BIGINT      NOT NULL,
    bytes           BIGINT      NOT NULL,
    committed_at    TIMESTAMPTZ NOT NULL,
    idempotency_key VARCHAR,
    request_hash    BLOB
);
CREATE INDEX commits_idempotency ON ducktail_catalog.commits (table_id, idempotency_key);

-- Tokens at rest: only the SHA-256 of the secret is kept.
CREATE TABLE ducktail_catalog.tokens (
    id            VARCHAR     NOT NULL,
    secret_sha256 BLOB        NOT NULL,
    purpose       VARCHAR     NOT NULL,
    table_name    VARCHAR,
    created_at    TIMESTAMPTZ NOT NULL,
    expires_at    TIMESTAMPTZ,
    revoked_at    TIMESTAMPTZ
);

-- Server-wide settings, such as the cursor MAC key.
CREATE TABLE ducktail_catalog.settings (
    name  VARCHAR NOT NULL,
    value BLOB    NOT NULL
);
