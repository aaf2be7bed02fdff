-- Leads: one lead per person, found again by any of its identities; labels; the timeline.

CREATE TABLE leads (
    id               UUID PRIMARY KEY,
    tenant_id        BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name             TEXT,
    title            TEXT,
    company          TEXT,
    -- E.164 with '+'
    phone            TEXT,
    -- lower case
    email            TEXT,
    location         TEXT,
    stage            TEXT NOT NULL DEFAULT 'new'
        CHECK (stage IN ('new', 'contacted', 'qualified', 'opportunity', 'won', 'lost', 'unqualified')),
    closed_at        TIMESTAMPTZ,
    archived_at      TIMESTAMPTZ,
    lost_reason      TEXT,
    interest         TEXT,
    -- hundredths of the main unit; the API shows a number in main units (contract: Lead)
    estimated_value_cents BIGINT,
    currency         TEXT NOT NULL,
    score            INTEGER CHECK (score BETWEEN 0 AND 100),
    score_reason     TEXT,
    summary          TEXT,
    source_channel   TEXT,
    source_detail    TEXT,
    assigned_to      BIGINT REFERENCES users (id) ON DELETE SET NULL,
    next_action      TEXT,
    next_action_at   TIMESTAMPTZ,
    -- `api`, `ai`, `user`...; for `api` the key's issuer (a user id)
    created_by_kind  TEXT NOT NULL,
    created_by_id    BIGINT,
    last_activity_at TIMESTAMPTZ NOT NULL,
    -- [{kind, id, channel, at}]
    sources          JSONB NOT NULL DEFAULT '[]',
    custom_fields    JSONB NOT NULL DEFAULT '{}',
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX leads_tenant_updated ON leads (tenant_id, updated_at DESC, id);
CREATE INDEX leads_tenant_stage ON leads (tenant_id, stage);
CREATE INDEX leads_tenant_assignee ON leads (tenant_id, assigned_to);
CREATE INDEX leads_search ON leads USING gin ((coalesce(name, '') || ' ' || coalesce(company, '') || ' ' ||
    coalesce(phone, '') || ' ' || coalesce(email, '')) gin_trgm_ops);

-- How a person is found again: a phone (digits of E.164), an email (lower case), a chat id.
-- One identity names one lead of a workspace.
CREATE TABLE lead_identities (
    tenant_id   BIGINT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('phone', 'email', 'chat')),
    value       TEXT NOT NULL,
    lead_id     UUID NOT NULL REFERENCES leads (id) ON DELETE CASCADE,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, kind, value)
);
CREATE INDEX lead_identities_lead ON lead_identities (lead_id);

CREATE TABLE lead_labels (
    id             BIGSERIAL PRIMARY KEY,
    tenant_id      BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    color          TEXT NOT NULL,
    description    TEXT,
    ai_assignable  BOOLEAN NOT NULL DEFAULT false,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL
);
-- label names are matched without case
CREATE UNIQUE INDEX lead_labels_name ON lead_labels (tenant_id, lower(name));

CREATE TABLE lead_label_links (
    lead_id     UUID NOT NULL REFERENCES leads (id) ON DELETE CASCADE,
    label_id    BIGINT NOT NULL REFERENCES lead_labels (id) ON DELETE CASCADE,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (lead_id, label_id)
);
CREATE INDEX lead_label_links_label ON lead_label_links (label_id);

-- The timeline: every change, with who made it and through what.
CREATE TABLE lead_activities (
    id           BIGSERIAL PRIMARY KEY,
    tenant_id    BIGINT NOT NULL,
    lead_id      UUID NOT NULL REFERENCES leads (id) ON DELETE CASCADE,
    -- created, updated, stage_changed, label_added, label_removed, note_added, assigned
    kind         TEXT NOT NULL,
    -- {field: {from, to}} for changes; {body} for notes; {label} for labels
    details      JSONB NOT NULL DEFAULT '{}',
    reason       TEXT,
    actor_kind   TEXT NOT NULL,
    actor_id     BIGINT,
    source_kind  TEXT NOT NULL,
    source_id    TEXT,
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX lead_activities_lead ON lead_activities (lead_id, id DESC);

-- Custom fields a workspace defines for its leads (managed with the admin CLI).
CREATE TABLE lead_fields (
    tenant_id   BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    key         TEXT NOT NULL,
    label       TEXT NOT NULL,
    -- text, number, date, boolean, select
    type        TEXT NOT NULL CHECK (type IN ('text', 'number', 'date', 'boolean', 'select')),
    options     TEXT[] NOT NULL DEFAULT '{}',
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, key)
);

-- `lead.updated` folding: the changes of a burst of updates to one lead wait here (the first
-- `from`, the last `to` of each field) until a job sends them as one event.
CREATE TABLE lead_pending_updates (
    lead_id     UUID PRIMARY KEY REFERENCES leads (id) ON DELETE CASCADE,
    tenant_id   BIGINT NOT NULL,
    changes     JSONB NOT NULL,
    actor       JSONB NOT NULL,
    first_at    TIMESTAMPTZ NOT NULL
);
