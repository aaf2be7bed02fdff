-- A data table's filters and cursors compare `jsonb` values (docs/operations.md, "Searches
-- under row-level security"): PostgreSQL's own functions for them raise no error for any
-- value, so they cannot leak a row through one, but they are not declared LEAKPROOF, and under
-- row-level security a filter on them can then be neither an index condition nor estimated
-- from the statistics. A superuser declares them so here (a plain role cannot: the filters
-- then read the tenant's records, as before). These are properties of built-in functions:
-- pg_dump and pg_upgrade do not carry them, so after a restore or a major upgrade a superuser
-- runs this file again (the store's schema test checks them).
DO $$
DECLARE
    f TEXT;
BEGIN
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RAISE NOTICE 'not a superuser: data-table filters under row-level security read the tenant''s records';
        RETURN;
    END IF;
    FOREACH f IN ARRAY ARRAY[
        'jsonb_object_field(jsonb, text)', 'jsonb_object_field_text(jsonb, text)',
        'jsonb_eq(jsonb, jsonb)', 'jsonb_ne(jsonb, jsonb)', 'jsonb_lt(jsonb, jsonb)',
        'jsonb_gt(jsonb, jsonb)', 'jsonb_le(jsonb, jsonb)', 'jsonb_ge(jsonb, jsonb)',
        'jsonb_cmp(jsonb, jsonb)', 'jsonb_contains(jsonb, jsonb)', 'jsonb_exists_any(jsonb, text[])'
    ] LOOP
        EXECUTE format('ALTER FUNCTION %s LEAKPROOF', f);
    END LOOP;
END
$$;
