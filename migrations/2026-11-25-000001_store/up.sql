-- The store: job queue, event outbox, idempotency records, shared rate-limit log.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE jobs (
    id            BIGSERIAL PRIMARY KEY,
    name          TEXT NOT NULL,
    payload       JSONB NOT NULL DEFAULT '{}',
    tenant_id     BIGINT,
    dedupe_key    TEXT,
    priority      SMALLINT NOT NULL DEFAULT 0,
    -- '-infinity' means "as soon as a worker is free"
    run_at        TIMESTAMPTZ NOT NULL DEFAULT '-infinity',
    state         TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'dead')),
    attempts      INTEGER NOT NULL DEFAULT 0,
    max_attempts  INTEGER NOT NULL DEFAULT 10 CHECK (max_attempts >= 1),
    locked_until  TIMESTAMPTZ,
    locked_by     UUID,
    last_error    TEXT,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX jobs_ready ON jobs (priority DESC, run_at, id) WHERE state = 'queued';
CREATE INDEX jobs_leased ON jobs (locked_until) WHERE state = 'running';
CREATE UNIQUE INDEX jobs_dedupe ON jobs (name, dedupe_key)
    WHERE dedupe_key IS NOT NULL AND state <> 'dead';

CREATE TABLE events (
    id           UUID PRIMARY KEY,
    tenant_id    BIGINT NOT NULL,
    name         TEXT NOT NULL,
    payload      JSONB NOT NULL,
    occurred_at  TIMESTAMPTZ NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX events_tenant ON events (tenant_id, occurred_at);

CREATE TABLE idempotency_keys (
    tenant_id    BIGINT NOT NULL,
    scope        TEXT NOT NULL,
    key          TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    -- null while the first request is still being worked on
    status       SMALLINT,
    response     JSONB,
    created_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, scope, key)
);

-- Sliding log of accepted requests per token hash, for the PostgreSQL-backed rate limiter.
CREATE TABLE rate_limit_hits (
    key_hash     BYTEA NOT NULL,
    at           TIMESTAMPTZ NOT NULL
);
CREATE INDEX rate_limit_hits_key ON rate_limit_hits (key_hash, at);
