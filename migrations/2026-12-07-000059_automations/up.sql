-- Automations (issue 20; contract: Automations, Automation subscription callbacks): the outbox
-- read as the workspace's business-event log, subscriptions that post matching events to a
-- callback (signed, retried on a bounded schedule), and schedules that emit an event on a cron
-- expression. Subscriptions and schedules are made by the operator and by MCP, never by keys.

CREATE INDEX events_log ON events (tenant_id, occurred_at DESC, id DESC);

CREATE TABLE automation_subscriptions (
    id          BIGSERIAL,
    tenant_id   BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    events      TEXT[] NOT NULL CHECK (cardinality(events) BETWEEN 1 AND 100),
    url         TEXT NOT NULL,
    -- `whsec_...`, sealed with the keyring
    secret      TEXT NOT NULL,
    -- `operator` or `mcp`
    created_by  TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (id, tenant_id)
);
CREATE INDEX automation_subscriptions_tenant ON automation_subscriptions (tenant_id, id DESC);
SELECT svc_tenant_rls('automation_subscriptions');

-- One callback of one event to one subscription, and what became of it.
CREATE TABLE automation_deliveries (
    id               UUID NOT NULL,
    tenant_id        BIGINT NOT NULL,
    subscription_id  BIGINT NOT NULL,
    event_id         UUID NOT NULL,
    event            TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_status      INTEGER,
    last_error       TEXT,
    next_attempt_at  TIMESTAMPTZ,
    delivered_at     TIMESTAMPTZ,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (id, tenant_id),
    FOREIGN KEY (subscription_id, tenant_id) REFERENCES automation_subscriptions (id, tenant_id) ON DELETE CASCADE
);
CREATE INDEX automation_deliveries_subscription ON automation_deliveries (tenant_id, subscription_id, state);
SELECT svc_tenant_rls('automation_deliveries');

-- Every event a subscription names gets its delivery, and a job that makes its first attempt,
-- in the event's own transaction (house rule 5).
CREATE FUNCTION automations_fan_out() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    fanned BIGINT;
BEGIN
    WITH made AS (
        INSERT INTO automation_deliveries (id, tenant_id, subscription_id, event_id, event, state,
                                           next_attempt_at, created_at, updated_at)
        SELECT gen_random_uuid(), e.tenant_id, s.id, e.id, e.name, 'pending', e.occurred_at, e.occurred_at,
               e.occurred_at
        FROM new_events e
        JOIN automation_subscriptions s ON s.tenant_id = e.tenant_id AND e.name = ANY (s.events)
        RETURNING id, tenant_id
    )
    INSERT INTO jobs (name, payload, tenant_id, max_attempts)
    SELECT 'automations.deliver', jsonb_build_object('delivery', id), tenant_id, 3 FROM made;
    GET DIAGNOSTICS fanned = ROW_COUNT;
    IF fanned > 0 THEN
        PERFORM pg_notify('svc_jobs', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_automations_fan_out AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION automations_fan_out();

-- A business event on a cron expression (UTC), at most once per due time.
CREATE TABLE automation_schedules (
    id           UUID NOT NULL,
    tenant_id    BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    cron         TEXT NOT NULL,
    -- what it does when due: emit `event`, or run the named `operation` with `input`
    event        TEXT,
    operation    TEXT,
    input        JSONB,
    CHECK ((event IS NULL) <> (operation IS NULL)),
    next_run_at  TIMESTAMPTZ NOT NULL,
    last_run_at  TIMESTAMPTZ,
    runs         BIGINT NOT NULL DEFAULT 0,
    created_by   TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (id, tenant_id)
);
CREATE INDEX automation_schedules_tenant ON automation_schedules (tenant_id, created_at DESC);
SELECT svc_tenant_rls('automation_schedules');
