-- The delivery queue's index of due rows keys on `next_attempt_at` being set rather than on
-- `state` (docs/benchmarks.md, "Issue 24"): the queue's statistics always lag a burst, and with
-- `state = 'pending'` as the index's predicate the planner took every `state = 'pending'` check
-- as a reason to read that whole index (a claim of 50 rows read 20,000 entries, per row). A row
-- has a next attempt exactly when it is pending; the constraint says so, so that the index
-- serves every question about the waiting rows.
UPDATE webhook_deliveries SET next_attempt_at = updated_at WHERE state = 'pending' AND next_attempt_at IS NULL;
UPDATE webhook_deliveries SET next_attempt_at = NULL WHERE state <> 'pending' AND next_attempt_at IS NOT NULL;
ALTER TABLE webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_due_when_pending CHECK ((state = 'pending') = (next_attempt_at IS NOT NULL));
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
