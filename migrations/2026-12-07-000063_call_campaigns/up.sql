-- Call campaigns (issue 22; contract: Call campaigns): a contact group called with a voice
-- message or a menu, at a calling rate, within calling hours, unanswered numbers retried. Each
-- callee is a target row, so a restarted dispatch calls nobody twice.

CREATE TABLE call_campaigns (
    id                  BIGSERIAL,
    uid                 TEXT NOT NULL,
    tenant_id           BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name                TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN
                            ('scheduled', 'running', 'paused', 'completed', 'cancelled', 'failed')),
    status_reason       TEXT,
    contact_group_id    BIGINT NOT NULL,
    -- what each call does (messaging::voice::plan), its language and the number it calls from
    plan                JSONB NOT NULL,
    language            TEXT NOT NULL,
    sender_id           TEXT,
    calls_per_minute    INTEGER NOT NULL CHECK (calls_per_minute BETWEEN 1 AND 600),
    -- calling hours, minutes after local midnight at the UTC offset
    hours_start         SMALLINT NOT NULL CHECK (hours_start BETWEEN 0 AND 1439),
    hours_end           SMALLINT NOT NULL CHECK (hours_end BETWEEN 1 AND 1440),
    utc_offset_minutes  SMALLINT NOT NULL CHECK (utc_offset_minutes BETWEEN -720 AND 840),
    max_attempts        SMALLINT NOT NULL CHECK (max_attempts BETWEEN 1 AND 3),
    retry_minutes       INTEGER NOT NULL CHECK (retry_minutes BETWEEN 5 AND 1440),
    total_targets       INTEGER NOT NULL DEFAULT 0,
    completed_targets   INTEGER NOT NULL DEFAULT 0,
    failed_targets      INTEGER NOT NULL DEFAULT 0,
    -- only the dispatch chain holding the current token runs (resume issues a new one)
    token               UUID NOT NULL,
    metadata            JSONB,
    scheduled_at        TIMESTAMPTZ,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    started_at          TIMESTAMPTZ,
    ended_at            TIMESTAMPTZ,
    PRIMARY KEY (id, tenant_id),
    UNIQUE (uid, tenant_id)
);
CREATE INDEX call_campaigns_tenant ON call_campaigns (tenant_id, id DESC);
SELECT svc_tenant_rls('call_campaigns');

CREATE TABLE call_campaign_targets (
    tenant_id    BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    campaign_id  BIGINT NOT NULL,
    contact_id   BIGINT NOT NULL,
    recipient    TEXT NOT NULL,
    -- pending (due at next_at) -> calling (its call live) -> completed or failed; cancelled
    status       TEXT NOT NULL DEFAULT 'pending' CHECK (status IN
                     ('pending', 'calling', 'completed', 'failed', 'cancelled')),
    attempts     SMALLINT NOT NULL DEFAULT 0,
    next_at      TIMESTAMPTZ NOT NULL,
    call_id      BIGINT,
    PRIMARY KEY (tenant_id, campaign_id, recipient),
    FOREIGN KEY (campaign_id, tenant_id) REFERENCES call_campaigns (id, tenant_id) ON DELETE CASCADE
);
CREATE INDEX call_campaign_targets_due ON call_campaign_targets (campaign_id, next_at) WHERE status = 'pending';
SELECT svc_tenant_rls('call_campaign_targets');

ALTER TABLE calls ADD COLUMN call_campaign_id BIGINT,
    ADD FOREIGN KEY (call_campaign_id, tenant_id) REFERENCES call_campaigns (id, tenant_id)
        ON DELETE SET NULL (call_campaign_id);
