-- Chat groups (issue 19; contract: Chat group, Chat group status, Chat groups). A group belongs
-- to one business number (`sender_id`); the provider confirms its creation later, under the
-- request id it answered, with its own group id and invite link.
CREATE TABLE chat_groups (
    id                           BIGSERIAL,
    tenant_id                    BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    account_id                   BIGINT NOT NULL,
    -- the business number's provider id (`sender_id`)
    phone_number_id              TEXT NOT NULL,
    subject                      TEXT NOT NULL CHECK (char_length(subject) BETWEEN 1 AND 128),
    description                  TEXT CHECK (char_length(description) <= 2048),
    join_approval_mode           TEXT NOT NULL CHECK (join_approval_mode IN ('auto_approve', 'approval_required')),
    status                       TEXT NOT NULL
        CHECK (status IN ('creating', 'active', 'suspended', 'deleted', 'failed')),
    request_id                   TEXT,
    provider_group_id            TEXT,
    invite_link                  TEXT,
    -- a stored template's name the invitations go out with (outside a customer's window)
    invite_template              TEXT,
    -- the first invitations, sent once the group is active, and what became of each
    invitees                     JSONB NOT NULL DEFAULT '[]',
    invites                      JSONB NOT NULL DEFAULT '[]',
    failure                      TEXT,
    participants_count           INTEGER NOT NULL DEFAULT 0,
    -- the last message a participant wrote: free-form messages need one within 24 hours
    last_participant_message_at  TIMESTAMPTZ,
    created_at                   TIMESTAMPTZ NOT NULL,
    updated_at                   TIMESTAMPTZ NOT NULL,
    deleted_at                   TIMESTAMPTZ,
    PRIMARY KEY (id, tenant_id),
    FOREIGN KEY (tenant_id, account_id) REFERENCES chat_accounts (tenant_id, id) ON DELETE CASCADE,
    UNIQUE (tenant_id, provider_group_id),
    UNIQUE (tenant_id, request_id)
);
CREATE INDEX chat_groups_recent ON chat_groups (tenant_id, id DESC);
SELECT svc_tenant_rls('chat_groups');

-- Who is in a group now (the business is not a row): a row is deleted when its person leaves.
CREATE TABLE chat_group_participants (
    tenant_id  BIGINT NOT NULL,
    group_id   BIGINT NOT NULL,
    -- the customer's chat id (digits)
    wa_id      TEXT NOT NULL,
    joined_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (group_id, wa_id, tenant_id),
    FOREIGN KEY (tenant_id, group_id) REFERENCES chat_groups (tenant_id, id) ON DELETE CASCADE
);
SELECT svc_tenant_rls('chat_group_participants');

-- Requests to join a group whose mode is `approval_required`.
CREATE TABLE chat_group_join_requests (
    tenant_id        BIGINT NOT NULL,
    group_id         BIGINT NOT NULL,
    join_request_id  TEXT NOT NULL,
    wa_id            TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'rejected', 'revoked')),
    created_at       TIMESTAMPTZ NOT NULL,
    updated_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (group_id, join_request_id, tenant_id),
    FOREIGN KEY (tenant_id, group_id) REFERENCES chat_groups (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX chat_group_join_requests_pending ON chat_group_join_requests (group_id, tenant_id, created_at)
    WHERE state = 'pending';
SELECT svc_tenant_rls('chat_group_join_requests');

-- Messages written in a group, by the business (`outbound`, a local `uid` to pin by) or by a
-- participant (`inbound`, stored once by the provider's id).
CREATE TABLE chat_group_messages (
    id                   BIGSERIAL,
    tenant_id            BIGINT NOT NULL,
    group_id             BIGINT NOT NULL,
    uid                  TEXT NOT NULL,
    direction            TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    -- the participant who wrote an inbound message
    participant          TEXT,
    kind                 TEXT NOT NULL,
    body                 TEXT,
    media_url            TEXT,
    content              JSONB NOT NULL,
    status               TEXT NOT NULL CHECK (status IN ('received', 'sent', 'failed')),
    error                TEXT,
    provider_message_id  TEXT,
    pinned_until         TIMESTAMPTZ,
    created_at           TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (id, tenant_id),
    FOREIGN KEY (tenant_id, group_id) REFERENCES chat_groups (tenant_id, id) ON DELETE CASCADE,
    UNIQUE (tenant_id, uid),
    UNIQUE (tenant_id, group_id, provider_message_id)
);
SELECT svc_tenant_rls('chat_group_messages');
