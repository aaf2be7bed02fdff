DROP TRIGGER auth_changed ON api_keys;
DROP TRIGGER auth_changed ON users;
DROP TRIGGER auth_changed ON tenants;
DROP FUNCTION svc_auth_changed();
