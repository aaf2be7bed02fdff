-- Webhooks: receivers, their deliveries (the delivery queue and its log), attempts, the
-- notifications a pause leaves for the tenant, and the fan-out of the outbox into deliveries.

CREATE TABLE webhooks (
    id                    BIGSERIAL PRIMARY KEY,
    tenant_id             BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    url                   TEXT NOT NULL,
    events                TEXT[] NOT NULL,
    -- lead events only: {"stages": [], "labels": [], "channels": []}
    filters               JSONB,
    -- [{"name": "...", "sealed": "<hex nonce || ciphertext>"}]: values never leave encrypted
    headers               JSONB NOT NULL DEFAULT '[]',
    secret                TEXT NOT NULL,
    consecutive_failures  INTEGER NOT NULL DEFAULT 0,
    paused_at             TIMESTAMPTZ,
    paused_reason         TEXT,
    created_at            TIMESTAMPTZ NOT NULL,
    updated_at            TIMESTAMPTZ NOT NULL,
    -- when `url` last changed: an http endpoint registered before 26 September 2026 keeps
    -- receiving until then
    url_changed_at        TIMESTAMPTZ NOT NULL
);
CREATE INDEX webhooks_tenant ON webhooks (tenant_id, id);

CREATE TABLE webhook_deliveries (
    id               UUID PRIMARY KEY,
    tenant_id        BIGINT NOT NULL,
    webhook_id       BIGINT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id         UUID NOT NULL,
    event            TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed', 'held')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TIMESTAMPTZ,
    locked_by        UUID,
    locked_until     TIMESTAMPTZ,
    last_status      INTEGER,
    last_error       TEXT,
    -- the delivery this one replays (a new id, the same event)
    replay_of        UUID,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL
-- room in each page, so a claim (no indexed column changes) is a HOT update
) WITH (fillfactor = 80);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_held ON webhook_deliveries (webhook_id) WHERE state = 'held';
-- recover skips failures already replayed
CREATE INDEX webhook_deliveries_replays ON webhook_deliveries (replay_of) WHERE replay_of IS NOT NULL;

CREATE TABLE webhook_attempts (
    delivery_id       UUID NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    number            INTEGER NOT NULL,
    attempted_at      TIMESTAMPTZ NOT NULL,
    status            INTEGER,
    duration_ms       INTEGER NOT NULL,
    error             TEXT,
    response_excerpt  TEXT,
    PRIMARY KEY (delivery_id, number)
);

CREATE TABLE webhook_notifications (
    id          BIGSERIAL PRIMARY KEY,
    tenant_id   BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- kept after the receiver is deleted: the note is history
    webhook_id  BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    message     TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX webhook_notifications_tenant ON webhook_notifications (tenant_id, created_at DESC, id DESC);

-- Keys the service generates for itself when the operator gives none (the custom-header key).
CREATE TABLE service_keys (
    name        TEXT PRIMARY KEY,
    key         BYTEA NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- A lead event matches a receiver's filters when each non-empty list names the lead as it is
-- after the change: its stage, one of its labels (by name, any case), its source channel (any
-- case).
CREATE FUNCTION webhook_lead_matches(filters JSONB, lead JSONB) RETURNS BOOLEAN
LANGUAGE sql IMMUTABLE AS $$
    SELECT filters IS NULL OR (
        (COALESCE(jsonb_array_length(filters -> 'stages'), 0) = 0
            OR COALESCE(filters -> 'stages' ? (lead ->> 'stage'), false))
        AND (COALESCE(jsonb_array_length(filters -> 'channels'), 0) = 0
            OR EXISTS (
                SELECT 1 FROM jsonb_array_elements_text(filters -> 'channels') AS f (channel)
                WHERE lower(f.channel) = lower(lead ->> 'source_channel')))
        AND (COALESCE(jsonb_array_length(filters -> 'labels'), 0) = 0
            OR EXISTS (
                SELECT 1
                FROM jsonb_array_elements_text(filters -> 'labels') AS f (name),
                     jsonb_array_elements(COALESCE(lead -> 'labels', '[]')) AS l (label)
                WHERE jsonb_typeof(l.label) = 'object' AND lower(f.name) = lower(l.label ->> 'name')))
    )
$$;

-- The fan-out: every event becomes one delivery per subscribed receiver of its tenant, in the
-- transaction that wrote the event, so no event is lost between the two. A paused receiver's
-- deliveries are held; `webhook.paused` is not sent to the receiver it is about.
CREATE FUNCTION webhooks_fan_out() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    fanned BIGINT;
BEGIN
    INSERT INTO webhook_deliveries (id, tenant_id, webhook_id, event_id, event, state, next_attempt_at,
                                    created_at, updated_at)
    SELECT gen_random_uuid(), e.tenant_id, w.id, e.id, e.name,
           CASE WHEN w.paused_at IS NULL THEN 'pending' ELSE 'held' END,
           CASE WHEN w.paused_at IS NULL THEN e.occurred_at END,
           e.occurred_at, e.occurred_at
    FROM new_events e
    JOIN webhooks w ON w.tenant_id = e.tenant_id AND e.name = ANY (w.events)
    WHERE (e.name NOT LIKE 'lead.%' OR webhook_lead_matches(w.filters, e.payload -> 'lead'))
      AND NOT (e.name = 'webhook.paused' AND (e.payload -> 'webhook' ->> 'id') = w.id::text);
    GET DIAGNOSTICS fanned = ROW_COUNT;
    IF fanned > 0 THEN
        PERFORM pg_notify('svc_webhooks', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_fan_out AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION webhooks_fan_out();
