-- Back to the stock trigram indexes and LIKE/ILIKE (a data table's search index is rebuilt
-- on its old expression when its table is next applied).
DROP INDEX IF EXISTS contacts_name_trgm;
DROP INDEX IF EXISTS contacts_full_phone_trgm;
DROP INDEX IF EXISTS leads_search;
CREATE INDEX contacts_name_trgm ON contacts USING gin (name gin_trgm_ops);
CREATE INDEX contacts_full_phone_trgm ON contacts USING gin (full_phone_number gin_trgm_ops);
CREATE INDEX leads_search ON leads USING gin ((coalesce(name, '') || ' ' || coalesce(company, '') || ' ' ||
    coalesce(phone, '') || ' ' || coalesce(email, '')) gin_trgm_ops);
DO $$
DECLARE
    ix RECORD;
BEGIN
    FOR ix IN SELECT index_name FROM data_indexes WHERE column_key = '$q' LOOP
        EXECUTE format('DROP INDEX IF EXISTS %I', ix.index_name);
    END LOOP;
    DELETE FROM data_indexes WHERE column_key = '$q';
END
$$;
DROP OPERATOR FAMILY IF EXISTS svc_trgm_ops USING gin;
DROP OPERATOR ~~~* (TEXT, TEXT);
DROP OPERATOR ~~~ (TEXT, TEXT);
DROP FUNCTION svc_words(TEXT[]);
DROP FUNCTION svc_record_text(JSONB, TEXT[]);
DROP FUNCTION svc_ilike(TEXT, TEXT);
DROP FUNCTION svc_like(TEXT, TEXT);
