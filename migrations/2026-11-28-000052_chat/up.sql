-- Chat messaging (contract: Chat messages): business accounts on a `chat` channel, their phone
-- numbers, and one conversation per customer and business number with its 24-hour window.

-- `cloud`: the WhatsApp Cloud API.
ALTER TABLE channels DROP CONSTRAINT channels_provider_check,
    ADD CONSTRAINT channels_provider_check CHECK (provider IN ('sandbox', 'africastalking', 'cloud'));

-- A business account (WABA) of a tenant. Its provider, sealed credentials (access token, app
-- secret, verify token) and webhook token are its channel's.
CREATE TABLE chat_accounts (
    id              BIGSERIAL,
    tenant_id       BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    channel_id      BIGINT NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    waba_id         TEXT NOT NULL CHECK (char_length(waba_id) BETWEEN 1 AND 64),
    name            TEXT NOT NULL CHECK (char_length(name) BETWEEN 1 AND 160),
    is_default      BOOLEAN NOT NULL DEFAULT false,
    quality_rating  TEXT,
    messaging_tier  TEXT,
    -- as the provider counted them at the last refresh
    templates_count   INTEGER NOT NULL DEFAULT 0,
    catalogues_count  INTEGER NOT NULL DEFAULT 0,
    last_synced_at  TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (id, tenant_id),
    UNIQUE (channel_id, tenant_id),
    UNIQUE (tenant_id, waba_id)
);
CREATE UNIQUE INDEX chat_accounts_one_default ON chat_accounts (tenant_id) WHERE is_default;

CREATE TABLE chat_phone_numbers (
    id               BIGSERIAL,
    tenant_id        BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    account_id       BIGINT NOT NULL,
    -- the provider's id: what `sender_id` names and what messages carry as `sender`
    phone_number_id  TEXT NOT NULL CHECK (char_length(phone_number_id) BETWEEN 1 AND 64),
    -- E.164
    phone_number     TEXT NOT NULL,
    display          TEXT,
    is_default       BOOLEAN NOT NULL DEFAULT false,
    quality_rating   TEXT,
    messaging_tier   TEXT,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (id, tenant_id),
    FOREIGN KEY (tenant_id, account_id) REFERENCES chat_accounts (tenant_id, id) ON DELETE CASCADE,
    UNIQUE (tenant_id, phone_number_id),
    UNIQUE (tenant_id, phone_number)
);
CREATE UNIQUE INDEX chat_phone_numbers_one_default ON chat_phone_numbers (account_id, tenant_id) WHERE is_default;

-- One per customer and business number. An inbound message opens (or extends) the customer
-- window until `window_expires_at`.
CREATE TABLE conversations (
    id                  BIGSERIAL,
    tenant_id           BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    account_id          BIGINT NOT NULL,
    phone_number_id     TEXT NOT NULL,
    -- E.164
    customer            TEXT NOT NULL,
    -- the customer's chat id (the provider's `wa_id`), once the customer has written
    chat_id             TEXT,
    customer_name       TEXT,
    last_inbound_at     TIMESTAMPTZ,
    window_expires_at   TIMESTAMPTZ,
    last_message_id     BIGINT,
    last_message_at     TIMESTAMPTZ NOT NULL,
    -- inbound messages since the business last wrote
    unread_count        INTEGER NOT NULL DEFAULT 0,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (id, tenant_id),
    FOREIGN KEY (tenant_id, account_id) REFERENCES chat_accounts (tenant_id, id) ON DELETE CASCADE,
    UNIQUE (tenant_id, phone_number_id, customer)
);
CREATE INDEX conversations_recent ON conversations (tenant_id, last_message_at DESC, id DESC);

ALTER TABLE messages ADD COLUMN conversation_id BIGINT,
    ADD FOREIGN KEY (tenant_id, conversation_id) REFERENCES conversations (tenant_id, id) ON DELETE SET NULL (conversation_id);
CREATE INDEX messages_conversation ON messages (conversation_id, id DESC) WHERE conversation_id IS NOT NULL;
-- An echo (a message the business sent from its own app) is stored once, like an inbound one.
CREATE UNIQUE INDEX messages_chat_echo_once ON messages (tenant_channel_id, gateway_message_id, tenant_id)
    WHERE channel_type = 'chat' AND direction = 'outbound' AND gateway_message_id IS NOT NULL
      AND metadata ? 'echo';

-- Message templates (contract: Message template, Template review state): one name + one language
-- + one business account. `components` is what the service holds (an edit held while a review is
-- ongoing included); `chat_status` is the provider's review state, null for a draft never sent.
CREATE TABLE chat_templates (
    id                  BIGSERIAL,
    tenant_id           BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    account_id          BIGINT NOT NULL,
    name                TEXT NOT NULL CHECK (name ~ '^[a-z0-9_]{1,191}$'),
    language            TEXT NOT NULL CHECK (char_length(language) BETWEEN 1 AND 20),
    category            TEXT NOT NULL CHECK (category IN ('utility', 'marketing', 'authentication')),
    display_name        TEXT,
    components          JSONB NOT NULL DEFAULT '[]',
    status              TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    chat_status         TEXT CHECK (chat_status IN ('in_review', 'rejected', 'pending', 'approved', 'paused', 'disabled')),
    rejection_reason    TEXT,
    chat_template_id    TEXT,
    submitted           BOOLEAN NOT NULL DEFAULT false,
    queued              BOOLEAN NOT NULL DEFAULT false,
    submission_message  TEXT,
    -- a change saved while a review was ongoing, sent on the next submit
    pending_edit        BOOLEAN NOT NULL DEFAULT false,
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (id, tenant_id),
    FOREIGN KEY (tenant_id, account_id) REFERENCES chat_accounts (tenant_id, id) ON DELETE CASCADE,
    UNIQUE (tenant_id, account_id, name, language)
);
CREATE INDEX chat_templates_updated ON chat_templates (tenant_id, updated_at, id);
CREATE INDEX chat_templates_provider_id ON chat_templates (account_id, chat_template_id) WHERE chat_template_id IS NOT NULL;

-- the callback log keeps the chat webhook's deliveries too
ALTER TABLE provider_callbacks DROP CONSTRAINT provider_callbacks_kind_check,
    ADD CONSTRAINT provider_callbacks_kind_check CHECK (kind IN ('delivery', 'inbound', 'chat'));

SELECT svc_tenant_rls('chat_accounts');
SELECT svc_tenant_rls('chat_phone_numbers');
SELECT svc_tenant_rls('conversations');
SELECT svc_tenant_rls('chat_templates');
