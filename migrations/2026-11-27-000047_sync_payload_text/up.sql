-- A product batch's rows wait in `catalogue_syncs.payload` for their run, are read once and
-- cleared. Nothing queries inside them, so they are kept as the JSON text the service wrote,
-- uncompressed: a 5,000-product batch (about 1 MB) no longer pays a jsonb parse and a pglz
-- compression on the way in and a jsonb rendering on the way out (docs/benchmarks.md, "Issue 24").
ALTER TABLE catalogue_syncs ALTER COLUMN payload TYPE TEXT USING payload::text;
ALTER TABLE catalogue_syncs ALTER COLUMN payload SET STORAGE EXTERNAL;
