-- MCP connections (contract: Authentication, point 5): an `svc_mcp_` credential of one tenant,
-- answering to the user who issued it, limited to its scopes. Read before the tenant is known,
-- like api_keys, so it is one of the global tables (no row-level policy).
CREATE TABLE mcp_connections (
    id          BIGSERIAL PRIMARY KEY,
    tenant_id   BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    user_id     BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name        TEXT NOT NULL CHECK (char_length(name) <= 160),
    token_hash  BYTEA NOT NULL UNIQUE,
    -- the first characters after the prefix, to recognise a credential without storing it
    prefix      TEXT NOT NULL,
    scopes      TEXT[] NOT NULL,
    revoked_at  TIMESTAMPTZ,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX mcp_connections_tenant ON mcp_connections (tenant_id);
