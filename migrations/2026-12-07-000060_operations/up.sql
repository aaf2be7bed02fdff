-- Named operations (issue 20; contract: Automations, agent tasks, operations): a workspace's
-- own definitions (inputs and steps over the domain services, applied by the operator) and
-- every run of one, with its steps, outcome and timing.

CREATE TABLE operations (
    tenant_id    BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    -- 1 when first applied, one more for each change
    version      INTEGER NOT NULL,
    -- the validated definition: {name, description, inputs, steps}
    definition   JSONB NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
SELECT svc_tenant_rls('operations');

CREATE TABLE operation_runs (
    id               UUID NOT NULL,
    tenant_id        BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    operation        TEXT NOT NULL,
    version          INTEGER NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'compensated', 'failed')),
    input            JSONB NOT NULL,
    -- each step as it ran: {id, action, status, started_at, finished_at, duration_ms, result,
    -- error, compensation}
    steps            JSONB NOT NULL,
    -- why it did not succeed: {code, message, errors, step}
    error            JSONB,
    created_by       JSONB NOT NULL,
    -- a repeat of the same key and input answers this run (24 hours)
    idempotency_key  TEXT,
    fingerprint      TEXT,
    started_at       TIMESTAMPTZ NOT NULL,
    finished_at      TIMESTAMPTZ,
    PRIMARY KEY (id, tenant_id)
);
CREATE INDEX operation_runs_tenant ON operation_runs (tenant_id, started_at DESC);
CREATE UNIQUE INDEX operation_runs_key ON operation_runs (tenant_id, operation, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
SELECT svc_tenant_rls('operation_runs');
