-- Accounts: tenants, users (key issuers), API keys, wallet and ledger, module switches.
CREATE TABLE tenants (
    id                    BIGSERIAL PRIMARY KEY,
    uid                   UUID NOT NULL UNIQUE,
    name                  TEXT NOT NULL,
    status                TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended', 'inactive')),
    currency              TEXT NOT NULL DEFAULT 'TZS',
    -- the calling code used when a contact is created without one
    default_country_code  TEXT NOT NULL DEFAULT '255',
    created_at            TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at            TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE users (
    id               BIGSERIAL PRIMARY KEY,
    tenant_id        BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name             TEXT NOT NULL,
    active           BOOLEAN NOT NULL DEFAULT true,
    -- every present and future permission
    all_permissions  BOOLEAN NOT NULL DEFAULT false,
    permissions      TEXT[] NOT NULL DEFAULT '{}',
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX users_tenant ON users (tenant_id);

CREATE TABLE api_keys (
    id           BIGSERIAL PRIMARY KEY,
    tenant_id    BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- null: a key from before the permission model (no recorded issuer)
    user_id      BIGINT REFERENCES users (id) ON DELETE SET NULL,
    legacy       BOOLEAN NOT NULL DEFAULT false,
    name         TEXT NOT NULL CHECK (char_length(name) <= 160),
    key_hash     BYTEA NOT NULL UNIQUE,
    -- the first characters, to recognise a key in a list without storing it
    prefix       TEXT NOT NULL,
    expires_at   TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ,
    replaced_by  BIGINT REFERENCES api_keys (id),
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- a legacy key never has an issuer
    CHECK (NOT legacy OR user_id IS NULL)
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id);

CREATE TABLE wallets (
    tenant_id      BIGINT PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    balance_minor  BIGINT NOT NULL DEFAULT 0,
    currency       TEXT NOT NULL,
    billing_mode   TEXT NOT NULL DEFAULT 'prepaid' CHECK (billing_mode IN ('prepaid', 'postpaid')),
    updated_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE wallet_ledger (
    id             BIGSERIAL PRIMARY KEY,
    tenant_id      BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    kind           TEXT NOT NULL CHECK (kind IN ('credit', 'debit')),
    amount_minor   BIGINT NOT NULL CHECK (amount_minor > 0),
    balance_after  BIGINT NOT NULL,
    note           TEXT,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX wallet_ledger_tenant ON wallet_ledger (tenant_id, id);

CREATE TABLE tenant_modules (
    tenant_id   BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    module      TEXT NOT NULL CHECK (module IN ('leads', 'forms')),
    enabled     BOOLEAN NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, module)
);
