-- OAuth 2.1 for MCP clients (contract: Authentication, point 5). Every table here is read
-- before the tenant is known (by an email, a client id or a token's hash), so all are global
-- tables, like api_keys and mcp_connections.

-- Sign-in: a tenant user may sign in to the consent page with an email and a password.
ALTER TABLE users
    ADD COLUMN email TEXT CHECK (email = lower(email) AND char_length(email) <= 254),
    -- a PHC string (argon2id); never the password
    ADD COLUMN password_hash TEXT,
    -- failures in a row, and the last one: repeated failures are slowed down
    ADD COLUMN failed_sign_ins INT NOT NULL DEFAULT 0,
    ADD COLUMN last_failed_sign_in_at TIMESTAMPTZ;
CREATE UNIQUE INDEX users_email ON users (email) WHERE email IS NOT NULL;

-- Clients: registered (RFC 7591) or known by a Client ID Metadata Document (client_id is the
-- document's https URL, fetched again once the copy is older than an hour).
CREATE TABLE oauth_clients (
    id             BIGSERIAL PRIMARY KEY,
    client_id      TEXT NOT NULL UNIQUE,
    kind           TEXT NOT NULL CHECK (kind IN ('registered', 'metadata_document')),
    client_name    TEXT NOT NULL,
    redirect_uris  TEXT[] NOT NULL,
    -- the registration as answered, or the document as fetched
    metadata       JSONB NOT NULL,
    fetched_at     TIMESTAMPTZ,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Browser sessions of the sign-in page.
CREATE TABLE sign_ins (
    id          BIGSERIAL PRIMARY KEY,
    token_hash  BYTEA NOT NULL UNIQUE,
    user_id     BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    expires_at  TIMESTAMPTZ NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX sign_ins_user ON sign_ins (user_id);

-- One consent of one person to one client: the authorization code and every token issued
-- from it descend from it, so revoking it (reuse detected, or the refresh token revoked)
-- ends them all.
CREATE TABLE oauth_grants (
    id              BIGSERIAL PRIMARY KEY,
    client_id       BIGINT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    tenant_id       BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    user_id         BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    scopes          TEXT[] NOT NULL,
    -- RFC 8707: the resource the tokens are for, checked on every use
    resource        TEXT NOT NULL,
    redirect_uri    TEXT NOT NULL,
    code_challenge  TEXT NOT NULL,
    revoked_at      TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX oauth_grants_client ON oauth_grants (client_id);
CREATE INDEX oauth_grants_user ON oauth_grants (user_id);
CREATE INDEX oauth_grants_tenant ON oauth_grants (tenant_id);

-- Authorization codes, access tokens and refresh tokens: opaque, only their hash stored.
CREATE TABLE oauth_tokens (
    id          BIGSERIAL PRIMARY KEY,
    grant_id    BIGINT NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('code', 'access', 'refresh')),
    token_hash  BYTEA NOT NULL UNIQUE,
    -- what an access token may do: the grant's scopes, or fewer when a refresh asked for fewer
    scopes      TEXT[],
    expires_at  TIMESTAMPTZ NOT NULL,
    -- a code exchanged or a refresh token rotated: a second use is a replay
    used_at     TIMESTAMPTZ,
    revoked_at  TIMESTAMPTZ,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
