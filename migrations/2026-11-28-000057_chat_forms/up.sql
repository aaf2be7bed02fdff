-- In-chat forms (issue 19; contract: Forms, Form version state). A form keeps a working copy of
-- its definition; publishing makes it the next version, a flow of its own on each business
-- account the form is deployed to (a published flow cannot change). A send hands the customer
-- a token; their reply names it, and becomes an answer.
CREATE TABLE chat_forms (
    id               BIGSERIAL,
    tenant_id        BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name             TEXT NOT NULL CHECK (char_length(name) BETWEEN 1 AND 120),
    -- the business account the form was made on (`waba_id`): its `home`
    account_id       BIGINT NOT NULL,
    definition       JSONB NOT NULL,
    -- `draft` (never published), `published`, or `attention` (a provider blocked a version)
    status           TEXT NOT NULL CHECK (status IN ('draft', 'published', 'attention')),
    version          INTEGER NOT NULL DEFAULT 0,
    menu_shop_id     BIGINT,
    menu_language    TEXT CHECK (menu_language IN ('sw', 'en')),
    -- the data table (its slug) each answer is saved to, if any
    save_to_table    TEXT,
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (id, tenant_id),
    FOREIGN KEY (tenant_id, account_id) REFERENCES chat_accounts (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX chat_forms_recent ON chat_forms (tenant_id, id DESC);
SELECT svc_tenant_rls('chat_forms');

-- Published versions: what customers who have one open, until it retires.
CREATE TABLE chat_form_versions (
    tenant_id     BIGINT NOT NULL,
    form_id       BIGINT NOT NULL,
    version       INTEGER NOT NULL,
    definition    JSONB NOT NULL,
    published_at  TIMESTAMPTZ NOT NULL,
    -- set when a later version is published: it keeps opening until then
    retires_at    TIMESTAMPTZ,
    PRIMARY KEY (form_id, version, tenant_id),
    FOREIGN KEY (tenant_id, form_id) REFERENCES chat_forms (tenant_id, id) ON DELETE CASCADE
);
SELECT svc_tenant_rls('chat_form_versions');

-- The business accounts a form is on (`home`, or `added` by a deployment).
CREATE TABLE chat_form_accounts (
    tenant_id   BIGINT NOT NULL,
    form_id     BIGINT NOT NULL,
    account_id  BIGINT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('home', 'added')),
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (form_id, account_id, tenant_id),
    FOREIGN KEY (tenant_id, form_id) REFERENCES chat_forms (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, account_id) REFERENCES chat_accounts (tenant_id, id) ON DELETE CASCADE
);
SELECT svc_tenant_rls('chat_form_accounts');

-- A version's flow on one account, and the provider's word on it.
CREATE TABLE chat_form_flows (
    tenant_id    BIGINT NOT NULL,
    form_id      BIGINT NOT NULL,
    version      INTEGER NOT NULL,
    account_id   BIGINT NOT NULL,
    flow_id      TEXT,
    -- `PUBLISHED`, `THROTTLED`, `BLOCKED`, `DEPRECATED`; null until published
    live_status  TEXT,
    error        TEXT,
    updated_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (form_id, version, account_id, tenant_id),
    FOREIGN KEY (tenant_id, form_id) REFERENCES chat_forms (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX chat_form_flows_flow ON chat_form_flows (flow_id, tenant_id) WHERE flow_id IS NOT NULL;
SELECT svc_tenant_rls('chat_form_flows');

-- A form sent to a customer: the token their reply carries back.
CREATE TABLE chat_form_sends (
    token            TEXT NOT NULL,
    tenant_id        BIGINT NOT NULL,
    form_id          BIGINT NOT NULL,
    version          INTEGER NOT NULL,
    account_id       BIGINT NOT NULL,
    conversation_id  BIGINT,
    message_uid      TEXT,
    reference        TEXT,
    source           TEXT NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (token, tenant_id),
    FOREIGN KEY (tenant_id, form_id) REFERENCES chat_forms (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX chat_form_sends_recent ON chat_form_sends (form_id, tenant_id, created_at);
SELECT svc_tenant_rls('chat_form_sends');

-- Answers: one per reply message.
CREATE TABLE chat_form_answers (
    id                   BIGSERIAL,
    tenant_id            BIGINT NOT NULL,
    form_id              BIGINT NOT NULL,
    version              INTEGER NOT NULL,
    send_token           TEXT,
    conversation_id      BIGINT,
    customer             TEXT,
    source               TEXT NOT NULL,
    answers              JSONB NOT NULL,
    issues               JSONB NOT NULL DEFAULT '[]',
    record               JSONB,
    provider_message_id  TEXT,
    created_at           TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (id, tenant_id),
    FOREIGN KEY (tenant_id, form_id) REFERENCES chat_forms (tenant_id, id) ON DELETE CASCADE,
    UNIQUE (tenant_id, provider_message_id)
);
CREATE INDEX chat_form_answers_recent ON chat_form_answers (form_id, tenant_id, id DESC);
SELECT svc_tenant_rls('chat_form_answers');
