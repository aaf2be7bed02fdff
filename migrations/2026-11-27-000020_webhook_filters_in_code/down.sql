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

CREATE OR REPLACE FUNCTION webhooks_fan_out() RETURNS trigger
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

DELETE FROM webhook_deliveries WHERE state = 'screening';
DROP INDEX webhook_deliveries_screening;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_state_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_state_check
    CHECK (state IN ('pending', 'delivered', 'failed', 'held'));
