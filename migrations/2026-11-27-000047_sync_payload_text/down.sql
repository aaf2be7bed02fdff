ALTER TABLE catalogue_syncs ALTER COLUMN payload SET STORAGE EXTENDED;
ALTER TABLE catalogue_syncs ALTER COLUMN payload TYPE JSONB USING payload::jsonb;
