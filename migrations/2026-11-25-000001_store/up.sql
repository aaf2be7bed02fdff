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

-- One accepted-or-refused decision per call, serialized per token by an advisory lock so
-- concurrent gateways never let more than p_limit requests into any rolling window.
CREATE FUNCTION rate_limit_hit(p_key BYTEA, p_now TIMESTAMPTZ, p_window INTERVAL, p_limit INTEGER)
RETURNS TABLE (allowed BOOLEAN, used INTEGER, oldest TIMESTAMPTZ)
LANGUAGE plpgsql AS $$
DECLARE
    n INTEGER;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(encode(p_key, 'hex'), 0));
    DELETE FROM rate_limit_hits h WHERE h.key_hash = p_key AND h.at <= p_now - p_window;
    SELECT count(*) INTO n FROM rate_limit_hits h WHERE h.key_hash = p_key;
    IF n < p_limit THEN
        INSERT INTO rate_limit_hits (key_hash, at) VALUES (p_key, p_now);
        allowed := true;
        used := n + 1;
    ELSE
        allowed := false;
        used := n;
    END IF;
    SELECT min(h.at) INTO oldest FROM rate_limit_hits h WHERE h.key_hash = p_key;
    -- Now and then, forget tokens that went quiet, so the table stays small.
    IF random() < 0.001 THEN
        DELETE FROM rate_limit_hits h WHERE h.at <= p_now - p_window;
    END IF;
    RETURN NEXT;
END
$$;
