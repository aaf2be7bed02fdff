ALTER TABLE catalogue_syncs ADD COLUMN idempotency_key TEXT;
CREATE UNIQUE INDEX catalogue_syncs_key ON catalogue_syncs (catalogue_id, idempotency_key, tenant_id);
