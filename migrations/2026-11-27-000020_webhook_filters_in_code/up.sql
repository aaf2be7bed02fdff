-- A receiver's filters are applied by the code of the domain that owns the events
-- (`leads::filters::matches` for lead events, given to the webhooks catalogue at composition),
-- no longer by SQL here. The fan-out still writes every delivery in the event's transaction:
-- one bound for a receiver with filters starts as `screening`, and the delivery loop passes it
-- through the event group's filter before anything else (it becomes `pending`, or `held` when
-- the receiver is paused) or deletes it.

ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_state_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_state_check
    CHECK (state IN ('screening', 'pending', 'delivered', 'failed', 'held'));
CREATE INDEX webhook_deliveries_screening ON webhook_deliveries (created_at) WHERE state = 'screening';

CREATE OR REPLACE FUNCTION webhooks_fan_out() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    fanned BIGINT;
BEGIN
    INSERT INTO webhook_deliveries (id, tenant_id, webhook_id, event_id, event, state, next_attempt_at,
                                    created_at, updated_at)
    SELECT gen_random_uuid(), e.tenant_id, w.id, e.id, e.name,
           CASE WHEN w.filters IS NOT NULL THEN 'screening' WHEN w.paused_at IS NULL THEN 'pending' ELSE 'held' END,
           CASE WHEN w.filters IS NULL AND w.paused_at IS NULL THEN e.occurred_at END,
           e.occurred_at, e.occurred_at
    FROM new_events e
    JOIN webhooks w ON w.tenant_id = e.tenant_id AND e.name = ANY (w.events)
    WHERE NOT (e.name = 'webhook.paused' AND (e.payload -> 'webhook' ->> 'id') = w.id::text);
    GET DIAGNOSTICS fanned = ROW_COUNT;
    IF fanned > 0 THEN
        PERFORM pg_notify('svc_webhooks', '');
    END IF;
    RETURN NULL;
END
$$;

DROP FUNCTION webhook_lead_matches(JSONB, JSONB);
