-- Gateways keep the callers of recently seen keys (docs/operations.md, "Authentication
-- cache"); every change that could alter what a key may do tells them at once, whatever made
-- it (the service, an admin command, an operator's SQL): the tenant's id on channel svc_auth.
-- A gateway drops every cached key of that tenant when the message arrives.
CREATE FUNCTION svc_auth_changed() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
    row JSONB := to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END);
BEGIN
    PERFORM pg_notify('svc_auth', row ->> TG_ARGV[0]);
    IF TG_OP = 'UPDATE' AND to_jsonb(OLD) ->> TG_ARGV[0] IS DISTINCT FROM row ->> TG_ARGV[0] THEN
        PERFORM pg_notify('svc_auth', to_jsonb(OLD) ->> TG_ARGV[0]);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER auth_changed AFTER UPDATE OR DELETE ON tenants
    FOR EACH ROW EXECUTE FUNCTION svc_auth_changed('id');
CREATE TRIGGER auth_changed AFTER UPDATE OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION svc_auth_changed('tenant_id');
CREATE TRIGGER auth_changed AFTER UPDATE OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION svc_auth_changed('tenant_id');
