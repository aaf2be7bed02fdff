-- Searches that stay indexed under row-level security (docs/operations.md, "Searches under
-- row-level security").
--
-- PostgreSQL checks a table's policy before any condition that is not LEAKPROOF, and such a
-- condition can then be neither an index condition nor estimated from the statistics: text
-- LIKE, ILIKE, lower() and the jsonb operators are not. So every search says what it matches
-- through the functions and operators below, and when a superuser runs the migrations they are
-- leakproof and a trigram operator class of our own serves them: the searches use their
-- indexes. Only a superuser may declare LEAKPROOF or make an operator class; under any other
-- role the same names are made as plain SQL, which PostgreSQL inlines back to LIKE and ILIKE:
-- every search still answers the same, through the stock trigram indexes when row security
-- is off and by a scan of the tenant's rows when it is on.
DO $$
DECLARE
    superuser BOOLEAN := (SELECT rolsuper FROM pg_roles WHERE rolname = current_user);
    leakproof TEXT := CASE WHEN superuser THEN 'LEAKPROOF' ELSE '' END;
BEGIN
    IF superuser THEN
        -- the stock functions under other names (LIKE and ILIKE raise no error of their own
        -- for any pattern but an invalid escape, which the service never writes)
        CREATE FUNCTION svc_like(TEXT, TEXT) RETURNS BOOLEAN LANGUAGE internal
            IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF AS 'textlike';
        CREATE FUNCTION svc_ilike(TEXT, TEXT) RETURNS BOOLEAN LANGUAGE internal
            IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF AS 'texticlike';
    ELSE
        CREATE FUNCTION svc_like(TEXT, TEXT) RETURNS BOOLEAN LANGUAGE sql
            IMMUTABLE STRICT PARALLEL SAFE AS 'SELECT $1 LIKE $2';
        CREATE FUNCTION svc_ilike(TEXT, TEXT) RETURNS BOOLEAN LANGUAGE sql
            IMMUTABLE STRICT PARALLEL SAFE AS 'SELECT $1 ILIKE $2';
    END IF;

    -- a record's search text: its search columns' values, lower-cased, joined by spaces
    -- (plpgsql, so that it is never inlined and its body is not what the planner checks)
    EXECUTE format($f$
        CREATE FUNCTION svc_record_text(data JSONB, keys TEXT[]) RETURNS TEXT LANGUAGE plpgsql
            IMMUTABLE STRICT PARALLEL SAFE %s AS $b$
        DECLARE
            key TEXT;
            out TEXT := NULL;
        BEGIN
            FOREACH key IN ARRAY keys LOOP
                out := CASE WHEN out IS NULL THEN '' ELSE out || ' ' END || coalesce(data ->> key, '');
            END LOOP;
            RETURN lower(coalesce(out, ''));
        END
        $b$ $f$, leakproof);

    -- text fields joined by spaces, a missing one as empty (a lead's search text)
    EXECUTE format($f$
        CREATE FUNCTION svc_words(VARIADIC parts TEXT[]) RETURNS TEXT LANGUAGE plpgsql
            IMMUTABLE STRICT PARALLEL SAFE %s AS $b$
        BEGIN
            RETURN array_to_string(parts, ' ', '');
        END
        $b$ $f$, leakproof);
END
$$;

CREATE OPERATOR ~~~ (LEFTARG = TEXT, RIGHTARG = TEXT, FUNCTION = svc_like,
    RESTRICT = likesel, JOIN = likejoinsel);
CREATE OPERATOR ~~~* (LEFTARG = TEXT, RIGHTARG = TEXT, FUNCTION = svc_ilike,
    RESTRICT = iclikesel, JOIN = iclikejoinsel);

-- pg_trgm's GIN support functions serving the two operators (strategies 3 and 4: LIKE and
-- ILIKE), and the search indexes on them; without a superuser, the stock ones stay.
DO $$
BEGIN
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RAISE NOTICE 'not a superuser: searches under row-level security scan the tenant''s rows';
        DROP INDEX leads_search;
        CREATE INDEX leads_search ON leads USING gin (svc_words(name, company, phone, email) gin_trgm_ops);
        RETURN;
    END IF;
    CREATE OPERATOR CLASS svc_trgm_ops FOR TYPE TEXT USING gin AS
        OPERATOR 3 ~~~ (TEXT, TEXT),
        OPERATOR 4 ~~~* (TEXT, TEXT),
        FUNCTION 1 btint4cmp (INT4, INT4),
        FUNCTION 2 gin_extract_value_trgm (TEXT, INTERNAL),
        FUNCTION 3 gin_extract_query_trgm (TEXT, INTERNAL, INT2, INTERNAL, INTERNAL, INTERNAL, INTERNAL),
        FUNCTION 4 gin_trgm_consistent (INTERNAL, INT2, TEXT, INT4, INTERNAL, INTERNAL, INTERNAL, INTERNAL),
        FUNCTION 6 gin_trgm_triconsistent (INTERNAL, INT2, TEXT, INT4, INTERNAL, INTERNAL, INTERNAL),
        STORAGE INT4;

    DROP INDEX contacts_name_trgm;
    DROP INDEX contacts_full_phone_trgm;
    CREATE INDEX contacts_name_trgm ON contacts USING gin (name svc_trgm_ops);
    CREATE INDEX contacts_full_phone_trgm ON contacts USING gin (full_phone_number svc_trgm_ops);
    DROP INDEX leads_search;
    CREATE INDEX leads_search ON leads USING gin (svc_words(name, company, phone, email) svc_trgm_ops);
END
$$;

-- The data tables' search indexes, on the new expression (the service names an index by a
-- digest of its expression, as apply.rs does).
DO $$
DECLARE
    ix RECORD;
    keys TEXT[];
    opclass TEXT := CASE WHEN EXISTS (SELECT 1 FROM pg_opclass WHERE opcname = 'svc_trgm_ops')
                         THEN 'svc_trgm_ops' ELSE 'gin_trgm_ops' END;
    new_expression TEXT;
    new_name TEXT;
BEGIN
    FOR ix IN SELECT table_id, index_name, expression FROM data_indexes WHERE column_key = '$q' LOOP
        keys := ARRAY(SELECT m[1] FROM regexp_matches(ix.expression, $r$data->>'([^']+)'$r$, 'g') AS m);
        new_expression := format('USING gin (svc_record_text(data, ''{%s}'') %s)', array_to_string(keys, ','), opclass);
        new_name := format('dx_%s_%s', replace(ix.table_id::TEXT, '-', ''),
                           left(encode(sha256(convert_to(new_expression, 'UTF8')), 'hex'), 8));
        EXECUTE format('DROP INDEX IF EXISTS %I', ix.index_name);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON data_records %s WHERE table_id = %L AND deleted_at IS NULL',
                       new_name, new_expression, ix.table_id);
        UPDATE data_indexes SET index_name = new_name, expression = new_expression, status = 'ready', error = NULL
        WHERE table_id = ix.table_id AND column_key = '$q';
    END LOOP;
END
$$;
