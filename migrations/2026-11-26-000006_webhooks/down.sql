DROP TRIGGER IF EXISTS events_fan_out ON events;
DROP FUNCTION IF EXISTS webhooks_fan_out();
DROP FUNCTION IF EXISTS webhook_lead_matches(JSONB, JSONB);
DROP TABLE IF EXISTS service_keys;
DROP TABLE IF EXISTS webhook_notifications;
DROP TABLE IF EXISTS webhook_attempts;
DROP TABLE IF EXISTS webhook_deliveries;
DROP TABLE IF EXISTS webhooks;
