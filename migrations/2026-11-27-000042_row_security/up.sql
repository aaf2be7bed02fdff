-- Row-level security (docs/operations.md, "Row-level security"): every tenant table shows a
-- connection only the rows of the tenant it was taken for, so a query that forgets its tenant
-- filter finds nothing of another tenant's.
--
-- The service's connections run as svc_app (`SET ROLE` when they open, whatever role
-- DATABASE_URL names): no superuser, no BYPASSRLS, and FORCE makes the policies hold for the
-- tables' owner too. Each checkout sets `svc.tenant_id` (one tenant) or `svc.scope = system`
-- (work across tenants: workers claiming, callbacks resolving whose they are). A connection
-- with neither sees no tenant rows at all.
--
-- A table made by a later migration calls svc_tenant_rls('<table>') (the store's schema test
-- fails on a tenant table without its policy).

-- Roles belong to the cluster, not the database: another database may have made it already.
DO $$
BEGIN
    CREATE ROLE svc_app NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END
$$;

-- A superuser may take on any role; any other role running the migrations must be a member.
DO $$
BEGIN
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('GRANT svc_app TO %I', current_user);
    END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO svc_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO svc_app;
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO svc_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO svc_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO svc_app;

-- An auto-number column's sequence is made when a data table is applied, by the service: in a
-- schema of its own, the one place the service role may create anything.
CREATE SCHEMA data_sequences;
GRANT USAGE, CREATE ON SCHEMA data_sequences TO svc_app;
DO $$
DECLARE
    s TEXT;
BEGIN
    FOR s IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'public' AND c.relkind = 'S' AND c.relname LIKE 'data\_seq\_%'
    LOOP
        EXECUTE format('ALTER SEQUENCE public.%I SET SCHEMA data_sequences', s);
    END LOOP;
END
$$;

-- The scope of the current connection. Policies call them inside `(SELECT ...)`, so each runs
-- once per statement rather than once per row.
CREATE FUNCTION svc_tenant() RETURNS BIGINT LANGUAGE sql STABLE AS $$
    SELECT nullif(current_setting('svc.tenant_id', true), '')::BIGINT
$$;

CREATE FUNCTION svc_system_scope() RETURNS BOOLEAN LANGUAGE sql STABLE AS $$
    SELECT coalesce(current_setting('svc.scope', true) = 'system', false)
$$;

-- Puts a tenant table under row-level security: reads, and what writes leave behind, are the
-- scope's tenant's rows.
CREATE FUNCTION svc_tenant_rls(t REGCLASS) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY', t);
    EXECUTE format(
        'CREATE POLICY tenant_scope ON %s
             USING (tenant_id = (SELECT svc_tenant()) OR (SELECT svc_system_scope()))
             WITH CHECK (tenant_id = (SELECT svc_tenant()) OR (SELECT svc_system_scope()))',
        t);
END
$$;

-- Every table with tenant_id but the global ones (docs/operations.md, "Tenancy and
-- distribution"): those are read before the tenant is known, or are no tenant's.
DO $$
DECLARE
    t REGCLASS;
BEGIN
    FOR t IN
        SELECT c.oid::REGCLASS
        FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
          AND c.relname NOT IN ('tenants', 'users', 'api_keys', 'channels', 'jobs', 'rate_limit_hits',
                                'service_keys', 'workers')
        ORDER BY c.relname
    LOOP
        PERFORM svc_tenant_rls(t);
    END LOOP;
END
$$;
