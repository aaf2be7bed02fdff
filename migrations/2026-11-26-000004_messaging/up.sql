-- Messaging: channels and sender identities, the SMS rate card, messages, campaigns, the
-- opt-out blacklist, the provider callback log and per-channel throughput accounting.

-- A tenant's route to a provider (contract: Message `tenant_channel_id`, `channel_code`).
CREATE TABLE channels (
    id                     BIGSERIAL PRIMARY KEY,
    tenant_id              BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    kind                   TEXT NOT NULL CHECK (kind IN ('sms', 'chat')),
    provider               TEXT NOT NULL CHECK (provider IN ('sandbox', 'africastalking')),
    code                   TEXT NOT NULL,
    -- base_url, username, api_key: read only by the provider client, never answered
    credentials            JSONB NOT NULL DEFAULT '{}',
    throughput_per_second  INTEGER NOT NULL CHECK (throughput_per_second > 0),
    status                 TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    -- lower routes first
    priority               INTEGER NOT NULL DEFAULT 100,
    -- the secret in the provider's callback URLs
    callback_token         TEXT NOT NULL UNIQUE,
    created_at             TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at             TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, code)
);
CREATE INDEX channels_tenant ON channels (tenant_id, kind, status, priority, id);

-- Sender identities (contract: `GET /sms/senders`): only `approved` ones are usable.
CREATE TABLE senders (
    id          BIGSERIAL PRIMARY KEY,
    tenant_id   BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    channel_id  BIGINT NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    type        TEXT NOT NULL CHECK (type IN ('sender_id', 'phone_number', 'short_code')),
    value       TEXT NOT NULL CHECK (char_length(value) BETWEEN 1 AND 64),
    label       TEXT,
    status      TEXT NOT NULL DEFAULT 'approved' CHECK (status IN ('approved', 'pending', 'rejected', 'inactive')),
    -- a phone number may be assigned for voice or chat only
    sms_capable BOOLEAN NOT NULL DEFAULT true,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (channel_id, type, value)
);
CREATE INDEX senders_tenant_value ON senders (tenant_id, value);

-- Price per segment by destination prefix (E.164 digits); the empty prefix is the tenant's
-- default, and the service's configured default applies when a tenant has no row at all.
CREATE TABLE sms_rates (
    tenant_id    BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    prefix       TEXT NOT NULL DEFAULT '' CHECK (prefix ~ '^[0-9]*$'),
    price_minor  BIGINT NOT NULL CHECK (price_minor >= 0),
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, prefix)
);

CREATE TABLE campaigns (
    id                 BIGSERIAL PRIMARY KEY,
    uid                TEXT NOT NULL UNIQUE,
    tenant_id          BIGINT NOT NULL,
    name               TEXT NOT NULL,
    status             TEXT NOT NULL CHECK (status IN ('draft', 'scheduled', 'running', 'paused', 'completed', 'cancelled')),
    channel_type       TEXT NOT NULL DEFAULT 'sms',
    tenant_channel_id  BIGINT REFERENCES channels (id) ON DELETE SET NULL,
    channel_code       TEXT,
    message            TEXT NOT NULL,
    sender             TEXT,
    scheduled_at       TIMESTAMPTZ,
    contact_group_id   BIGINT REFERENCES contact_groups (id) ON DELETE SET NULL,
    total_recipients   INTEGER NOT NULL DEFAULT 0,
    sent_count         INTEGER NOT NULL DEFAULT 0,
    failed_count       INTEGER NOT NULL DEFAULT 0,
    -- dispatch progress: contacts with an id above `cursor` and up to `last_contact_id` are next
    cursor             BIGINT NOT NULL DEFAULT 0,
    last_contact_id    BIGINT,
    -- messages written so far; dispatch is over when every one of them left the queue
    dispatched         INTEGER NOT NULL DEFAULT 0,
    status_reason      TEXT,
    -- only dispatch jobs carrying the current token run; resuming issues a new one, so a
    -- campaign never has two dispatch chains
    dispatch_token     UUID NOT NULL,
    created_at         TIMESTAMPTZ NOT NULL,
    updated_at         TIMESTAMPTZ NOT NULL,
    completed_at       TIMESTAMPTZ
);
CREATE INDEX campaigns_tenant ON campaigns (tenant_id, id);
CREATE INDEX campaigns_paused ON campaigns (tenant_id) WHERE status = 'paused';

CREATE TABLE messages (
    id                  BIGSERIAL PRIMARY KEY,
    uid                 TEXT NOT NULL UNIQUE,
    tenant_id           BIGINT NOT NULL,
    direction           TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    channel_type        TEXT NOT NULL CHECK (channel_type IN ('sms', 'chat')),
    tenant_channel_id   BIGINT REFERENCES channels (id) ON DELETE SET NULL,
    channel_code        TEXT,
    sender              TEXT,
    recipient           TEXT NOT NULL,
    body                TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN ('queued', 'processing', 'sent', 'checking_delivery', 'delivered', 'read', 'failed', 'received')),
    media_url           TEXT,
    media_type          TEXT,
    gateway_message_id  TEXT,
    error_message       TEXT,
    metadata            JSONB,
    template_params     JSONB,
    segments            INTEGER NOT NULL DEFAULT 1,
    encoding            TEXT NOT NULL DEFAULT 'gsm7',
    -- what the wallet was charged for this message (refunded when the provider refuses it)
    price_minor         BIGINT NOT NULL DEFAULT 0,
    provider_cost       TEXT,
    campaign_id         BIGINT REFERENCES campaigns (id) ON DELETE SET NULL,
    contact_id          BIGINT,
    scheduled_at        TIMESTAMPTZ,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    sent_at             TIMESTAMPTZ,
    delivered_at        TIMESTAMPTZ,
    read_at             TIMESTAMPTZ
);
CREATE INDEX messages_tenant ON messages (tenant_id, id DESC);
CREATE INDEX messages_tenant_status ON messages (tenant_id, status, id DESC);
CREATE INDEX messages_campaign ON messages (campaign_id, status) WHERE campaign_id IS NOT NULL;
CREATE INDEX messages_gateway_id ON messages (tenant_channel_id, gateway_message_id) WHERE gateway_message_id IS NOT NULL;
-- a campaign writes at most one message per contact, however often dispatch runs
CREATE UNIQUE INDEX messages_campaign_contact ON messages (campaign_id, contact_id) WHERE campaign_id IS NOT NULL;

-- Numbers that opted out (contract: "numbers on the account blacklist").
CREATE TABLE sms_blacklist (
    tenant_id          BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    number             TEXT NOT NULL,
    reason             TEXT,
    source_message_id  BIGINT REFERENCES messages (id) ON DELETE SET NULL,
    created_at         TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, number)
);

-- Every provider callback, matched or not: unknown and late receipts are kept, not errors.
CREATE TABLE provider_callbacks (
    id                  BIGSERIAL PRIMARY KEY,
    channel_id          BIGINT NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    kind                TEXT NOT NULL CHECK (kind IN ('delivery', 'inbound')),
    provider_message_id TEXT,
    provider_status     TEXT,
    message_id          BIGINT REFERENCES messages (id) ON DELETE SET NULL,
    -- applied, late (the message had moved on), unknown (no such message), duplicate (an
    -- inbound message stored before) or invalid
    outcome             TEXT NOT NULL,
    body                TEXT NOT NULL,
    received_at         TIMESTAMPTZ NOT NULL
);
CREATE INDEX provider_callbacks_channel ON provider_callbacks (channel_id, id);

-- Sends per channel per second, shared by every gateway and worker process.
CREATE TABLE channel_usage (
    channel_id  BIGINT NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    second      TIMESTAMPTZ NOT NULL,
    used        INTEGER NOT NULL,
    PRIMARY KEY (channel_id, second)
);

-- Refunds of refused messages are their own kind of ledger entry.
ALTER TABLE wallet_ledger DROP CONSTRAINT wallet_ledger_kind_check;
ALTER TABLE wallet_ledger ADD CONSTRAINT wallet_ledger_kind_check CHECK (kind IN ('credit', 'debit', 'refund'));

-- Takes up to p_want sends of a channel's per-second allowance and says how many it got;
-- the row lock makes concurrent senders in any process share one budget.
CREATE FUNCTION channel_take(p_channel BIGINT, p_second TIMESTAMPTZ, p_want INTEGER, p_limit INTEGER)
RETURNS INTEGER
LANGUAGE plpgsql AS $$
DECLARE
    current INTEGER;
    granted INTEGER;
BEGIN
    INSERT INTO channel_usage (channel_id, second, used) VALUES (p_channel, p_second, 0) ON CONFLICT DO NOTHING;
    SELECT u.used INTO current FROM channel_usage u WHERE u.channel_id = p_channel AND u.second = p_second FOR UPDATE;
    granted := LEAST(p_want, GREATEST(p_limit - current, 0));
    UPDATE channel_usage u SET used = current + granted WHERE u.channel_id = p_channel AND u.second = p_second;
    -- Now and then, forget seconds long gone, so the table stays small.
    IF random() < 0.01 THEN
        DELETE FROM channel_usage u WHERE u.second < p_second - interval '1 minute';
    END IF;
    RETURN granted;
END;
$$;
