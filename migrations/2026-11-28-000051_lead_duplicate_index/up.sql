-- The possible-duplicate probe of every lead read (`leads::lead::duplicate_of`): another lead
-- of the tenant with the same name in any case. Without an index it read all the tenant's
-- leads (10 ms at 10,000 leads: 95 % of a lead read's database time in the bench).
-- svc_lower is lower() declared LEAKPROOF when a superuser migrates (as svc_like is, in
-- 000043), so the condition stays an index condition under row-level security; under another
-- role it is plain SQL that PostgreSQL inlines back to lower().
DO $$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        CREATE FUNCTION svc_lower(TEXT) RETURNS TEXT LANGUAGE internal
            IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF AS 'lower';
    ELSE
        CREATE FUNCTION svc_lower(TEXT) RETURNS TEXT LANGUAGE sql
            IMMUTABLE STRICT PARALLEL SAFE AS 'SELECT lower($1)';
    END IF;
END $$;

CREATE INDEX leads_tenant_lower_name ON leads (tenant_id, svc_lower(name), created_at);
