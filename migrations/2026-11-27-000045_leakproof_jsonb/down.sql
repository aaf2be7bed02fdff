DO $$
DECLARE
    f TEXT;
BEGIN
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        RETURN;
    END IF;
    FOREACH f IN ARRAY ARRAY[
        'jsonb_object_field(jsonb, text)', 'jsonb_object_field_text(jsonb, text)',
        'jsonb_eq(jsonb, jsonb)', 'jsonb_ne(jsonb, jsonb)', 'jsonb_lt(jsonb, jsonb)',
        'jsonb_gt(jsonb, jsonb)', 'jsonb_le(jsonb, jsonb)', 'jsonb_ge(jsonb, jsonb)',
        'jsonb_cmp(jsonb, jsonb)', 'jsonb_contains(jsonb, jsonb)', 'jsonb_exists_any(jsonb, text[])'
    ] LOOP
        EXECUTE format('ALTER FUNCTION %s NOT LEAKPROOF', f);
    END LOOP;
END
$$;
