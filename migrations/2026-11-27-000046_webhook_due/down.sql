DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_due_when_pending;
