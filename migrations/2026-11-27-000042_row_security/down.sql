-- The role stays: it belongs to the cluster, and other databases may use it.
DO $$
DECLARE
    t REGCLASS;
BEGIN
    FOR t IN
        SELECT p.polrelid::REGCLASS FROM pg_policy p WHERE p.polname = 'tenant_scope'
    LOOP
        EXECUTE format('DROP POLICY tenant_scope ON %s', t);
        EXECUTE format('ALTER TABLE %s NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY', t);
    END LOOP;
END
$$;

DO $$
DECLARE
    s TEXT;
BEGIN
    FOR s IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = 'data_sequences' AND c.relkind = 'S'
    LOOP
        EXECUTE format('ALTER SEQUENCE data_sequences.%I SET SCHEMA public', s);
    END LOOP;
END
$$;
REVOKE ALL ON SCHEMA data_sequences FROM svc_app;
DROP SCHEMA data_sequences;

DROP FUNCTION svc_tenant_rls(REGCLASS);
DROP FUNCTION svc_system_scope();
DROP FUNCTION svc_tenant();

ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON TABLES FROM svc_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON SEQUENCES FROM svc_app;
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM svc_app;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM svc_app;
REVOKE USAGE ON SCHEMA public FROM svc_app;
