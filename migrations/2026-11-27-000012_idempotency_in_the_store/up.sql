-- A batch's Idempotency-Key lives in idempotency_keys now (store::idempotency, the one
-- mechanism of every creating write); the run no longer carries its own.
ALTER TABLE catalogue_syncs DROP COLUMN idempotency_key;
