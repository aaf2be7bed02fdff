-- Voice and calls (issue 22; contract: Voice, Calls, Call campaigns): a voice channel is a
-- channel of kind `voice` whose numbers (senders of type `phone_number`) are the caller ids.
-- A call is one outbound call of a plan: an OTP spoken, a message spoken or played, or a call
-- that connects the callee to an agent or runs an IVR menu. Billed per started minute.

ALTER TABLE channels DROP CONSTRAINT channels_kind_check,
    ADD CONSTRAINT channels_kind_check CHECK (kind IN ('sms', 'chat', 'voice'));

-- Price per started minute by destination prefix, as `sms_rates` per segment.
CREATE TABLE voice_rates (
    tenant_id    BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    prefix       TEXT NOT NULL DEFAULT '' CHECK (prefix ~ '^[0-9]*$'),
    price_minor  BIGINT NOT NULL CHECK (price_minor >= 0),
    updated_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, prefix)
);
SELECT svc_tenant_rls('voice_rates');

CREATE TABLE calls (
    id                BIGSERIAL,
    uid               TEXT NOT NULL,
    tenant_id         BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    kind              TEXT NOT NULL CHECK (kind IN ('otp', 'message', 'call')),
    direction         TEXT NOT NULL DEFAULT 'outbound' CHECK (direction IN ('outbound', 'inbound')),
    channel_id        BIGINT NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    -- our number the callee sees; NULL: the provider account's default
    caller            TEXT,
    recipient         TEXT NOT NULL,
    -- queued -> initiated (the provider took it) -> in_progress (answered) -> an end
    status            TEXT NOT NULL CHECK (status IN
                          ('queued', 'initiated', 'in_progress', 'completed', 'busy', 'no_answer', 'failed')),
    -- why it failed, in words (busy and no_answer say it by their status)
    error             TEXT,
    -- what the call does (messaging::voice::plan); an OTP's code is blanked when the call ends
    plan              JSONB NOT NULL,
    language          TEXT NOT NULL,
    -- where a live call is in its plan (an IVR menu's path, `voicemail`, `feedback`) and how
    -- many times it asked there
    position          TEXT,
    attempts          SMALLINT NOT NULL DEFAULT 0,
    -- the keys pressed, in order, comma-separated per prompt
    digits            TEXT,
    provider_call_id  TEXT,
    provider_cost     TEXT,
    duration_seconds  INTEGER NOT NULL DEFAULT 0,
    billed_minutes    INTEGER NOT NULL DEFAULT 0,
    -- the price of one started minute to this number, fixed when the call was asked for
    rate_minor        BIGINT NOT NULL,
    -- what the wallet gave so far: one minute held when asked for, settled when it ends
    price_minor       BIGINT NOT NULL DEFAULT 0,
    recording_url     TEXT,
    feedback_score    SMALLINT CHECK (feedback_score BETWEEN 1 AND 5),
    metadata          JSONB,
    scheduled_at      TIMESTAMPTZ,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    answered_at       TIMESTAMPTZ,
    ended_at          TIMESTAMPTZ,
    -- distributable by tenant (store's tenancy test): every key carries it
    PRIMARY KEY (id, tenant_id),
    UNIQUE (uid, tenant_id)
);
CREATE INDEX calls_tenant ON calls (tenant_id, id DESC);
CREATE INDEX calls_provider ON calls (channel_id, provider_call_id) WHERE provider_call_id IS NOT NULL;
SELECT svc_tenant_rls('calls');
