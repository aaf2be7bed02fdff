DROP INDEX leads_tenant_lower_name;
DROP FUNCTION svc_lower(TEXT);
