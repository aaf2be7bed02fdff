-- Agent tasks (issue 21; contract: Automations, agent tasks, operations; `/api/engine`): a run
-- is a task given to a language model with the workspace's own tools; each model turn and each
-- tool call is a step, recorded as it starts and as it ends, so a run resumes after a restart at
-- its last finished step and never executes a step twice.

CREATE TABLE agent_runs (
    id                UUID NOT NULL,
    tenant_id         BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    status            TEXT NOT NULL CHECK (status IN
                          ('queued', 'running', 'requires_action', 'completed', 'failed', 'cancelled', 'expired')),
    instructions      TEXT NOT NULL,
    -- a string or an object, as given
    input             JSONB NOT NULL,
    -- the tools it may call, resolved from the server and tool names it was given
    tools             TEXT[] NOT NULL,
    -- the tool names that wait for a person's approval before they run
    require_approval  TEXT[] NOT NULL DEFAULT '{}',
    model             TEXT NOT NULL,
    max_steps         INTEGER NOT NULL,
    max_seconds       INTEGER NOT NULL,
    max_spend_minor   BIGINT,
    metadata          JSONB NOT NULL DEFAULT '{}',
    mode              TEXT NOT NULL CHECK (mode IN ('async', 'sync')),
    output            TEXT,
    -- why it did not complete: {code, message}
    error             JSONB,
    input_tokens      BIGINT NOT NULL DEFAULT 0,
    output_tokens     BIGINT NOT NULL DEFAULT 0,
    tool_calls        INTEGER NOT NULL DEFAULT 0,
    cost_minor        BIGINT NOT NULL DEFAULT 0,
    currency          TEXT NOT NULL,
    -- who submitted it: {kind, key_id, user_id, label}; the credential is read again before
    -- every step, so its issuer's current permissions bound every tool call
    created_by        JSONB NOT NULL,
    credential        TEXT NOT NULL,
    credential_id     BIGINT NOT NULL,
    -- an MCP client's granted scopes; NULL for a REST key
    scopes            TEXT[],
    created_at        TIMESTAMPTZ NOT NULL,
    started_at        TIMESTAMPTZ,
    -- time spent waiting for approvals, which the time limit does not count
    waited_ms         BIGINT NOT NULL DEFAULT 0,
    finished_at       TIMESTAMPTZ,
    -- a run waiting for an approval expires at this time
    expires_at        TIMESTAMPTZ,
    PRIMARY KEY (id, tenant_id)
);
CREATE INDEX agent_runs_tenant ON agent_runs (tenant_id, created_at DESC, id DESC);
SELECT svc_tenant_rls('agent_runs');

CREATE TABLE agent_steps (
    tenant_id      BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    run_id         UUID NOT NULL,
    -- 1, 2, ... in the order they started
    seq            INTEGER NOT NULL,
    kind           TEXT NOT NULL CHECK (kind IN ('model_turn', 'tool_call')),
    status         TEXT NOT NULL CHECK (status IN
                       ('running', 'completed', 'failed', 'interrupted', 'awaiting_approval', 'approved', 'denied')),
    -- the model of a turn, the tool of a call
    name           TEXT NOT NULL,
    -- a tool call's id as the model gave it
    call_id        TEXT,
    arguments      JSONB,
    -- a turn's text, a call's result
    output         JSONB,
    -- a turn's tool calls: [{id, name, arguments}]
    tool_calls     JSONB,
    error          JSONB,
    input_tokens   BIGINT NOT NULL DEFAULT 0,
    output_tokens  BIGINT NOT NULL DEFAULT 0,
    cost_minor     BIGINT NOT NULL DEFAULT 0,
    started_at     TIMESTAMPTZ NOT NULL,
    finished_at    TIMESTAMPTZ,
    PRIMARY KEY (tenant_id, run_id, seq),
    FOREIGN KEY (run_id, tenant_id) REFERENCES agent_runs (id, tenant_id) ON DELETE CASCADE
);
SELECT svc_tenant_rls('agent_steps');
