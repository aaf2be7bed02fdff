-- Contacts: groups and their contacts (contract: Contact group, Contact).
CREATE TABLE contact_groups (
    id             BIGSERIAL PRIMARY KEY,
    uid            UUID NOT NULL UNIQUE,
    tenant_id      BIGINT NOT NULL,
    name           TEXT NOT NULL,
    status         TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive')),
    custom_fields  JSONB NOT NULL DEFAULT '[]',
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX contact_groups_tenant ON contact_groups (tenant_id, id);

CREATE TABLE contacts (
    id                   BIGSERIAL PRIMARY KEY,
    uid                  TEXT NOT NULL UNIQUE,
    tenant_id            BIGINT NOT NULL,
    group_id             BIGINT NOT NULL REFERENCES contact_groups (id) ON DELETE CASCADE,
    name                 TEXT NOT NULL,
    country_code         TEXT NOT NULL,
    phone_number         TEXT NOT NULL,
    full_phone_number    TEXT NOT NULL,
    is_subscribed        BOOLEAN NOT NULL DEFAULT true,
    custom_field_values  JSONB NOT NULL DEFAULT '{}',
    created_at           TIMESTAMPTZ NOT NULL,
    updated_at           TIMESTAMPTZ NOT NULL,
    UNIQUE (group_id, full_phone_number)
);
CREATE INDEX contacts_tenant_group ON contacts (tenant_id, group_id, id);
-- search: name, national number and full number, as substrings
CREATE INDEX contacts_name_trgm ON contacts USING gin (name gin_trgm_ops);
CREATE INDEX contacts_full_phone_trgm ON contacts USING gin (full_phone_number gin_trgm_ops);
