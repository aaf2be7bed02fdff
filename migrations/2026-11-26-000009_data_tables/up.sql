-- Data tables: account-defined groups and tables, their records (JSONB keyed by column key),
-- unique values, history, per-column index states and stored files.

-- `q` searches use a trigram index per table.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE data_groups (
    id          UUID PRIMARY KEY,
    tenant_id   BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    slug        TEXT NOT NULL,
    name        TEXT NOT NULL,
    description TEXT,
    -- saved reports of the definition file: [{key, name, description, table, filter}]
    reports     JSONB NOT NULL DEFAULT '[]',
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    UNIQUE (tenant_id, slug)
);

CREATE TABLE data_tables (
    id                   UUID PRIMARY KEY,
    tenant_id            BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    group_id             UUID NOT NULL REFERENCES data_groups (id) ON DELETE CASCADE,
    slug                 TEXT NOT NULL,
    name                 TEXT NOT NULL,
    description          TEXT,
    icon                 TEXT,
    position             INTEGER NOT NULL DEFAULT 0,
    -- the validated definition: {columns, access, unique_sets, limits}
    definition           JSONB NOT NULL,
    sort_index_threshold BIGINT NOT NULL DEFAULT 10000,
    created_at           TIMESTAMPTZ NOT NULL,
    updated_at           TIMESTAMPTZ NOT NULL,
    UNIQUE (tenant_id, slug)
);
CREATE INDEX data_tables_group ON data_tables (group_id, position);

CREATE TABLE data_records (
    id         UUID PRIMARY KEY,
    tenant_id  BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    table_id   UUID NOT NULL REFERENCES data_tables (id) ON DELETE CASCADE,
    -- column key -> value; an empty value is an absent key, never JSON null
    data       JSONB NOT NULL,
    source     TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    deleted_at TIMESTAMPTZ
);
-- the default pages (newest created or changed first, either direction) and counts
CREATE INDEX data_records_created ON data_records (table_id, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX data_records_updated ON data_records (table_id, updated_at, id) WHERE deleted_at IS NULL;

-- Unique values of live records: one row per unique column or set with a value. A soft delete
-- removes the record's rows, so its values are free again.
CREATE TABLE data_record_keys (
    table_id  UUID NOT NULL REFERENCES data_tables (id) ON DELETE CASCADE,
    name      TEXT NOT NULL,
    value     TEXT NOT NULL,
    record_id UUID NOT NULL REFERENCES data_records (id) ON DELETE CASCADE,
    PRIMARY KEY (table_id, name, value)
);
CREATE INDEX data_record_keys_record ON data_record_keys (record_id);

CREATE TABLE data_record_history (
    id         BIGSERIAL PRIMARY KEY,
    tenant_id  BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    table_id   UUID NOT NULL REFERENCES data_tables (id) ON DELETE CASCADE,
    record_id  UUID NOT NULL,
    action     TEXT NOT NULL CHECK (action IN ('created', 'updated', 'deleted')),
    -- {column: {from, to}}
    changes    JSONB NOT NULL,
    source     TEXT NOT NULL,
    -- {kind, id, name}
    actor      JSONB NOT NULL,
    at         TIMESTAMPTZ NOT NULL
);
CREATE INDEX data_record_history_record ON data_record_history (record_id, id);

-- Indexes built concurrently for indexed columns (`column_key`) and each table's search (`$q`).
CREATE TABLE data_indexes (
    table_id   UUID NOT NULL REFERENCES data_tables (id) ON DELETE CASCADE,
    column_key TEXT NOT NULL,
    index_name TEXT NOT NULL,
    -- the expression the index was built for; a changed definition builds a new one
    expression TEXT NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('building', 'ready', 'failed')),
    error      TEXT,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (table_id, column_key)
);

CREATE TABLE data_files (
    id         UUID PRIMARY KEY,
    tenant_id  BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    mime_type  TEXT NOT NULL,
    size       BIGINT NOT NULL,
    content    BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX data_files_tenant ON data_files (tenant_id, id);
