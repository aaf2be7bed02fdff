-- Payments (issue 20; contract: Payment, Payment state, Payments (read only)). A payment asks a
-- payer for money for a subject (an order); a refund is a payment of its own pointing at the
-- one it gives back (`refund_of`). Every money movement writes balanced ledger entries in the
-- same transaction as the state change.
CREATE SEQUENCE payment_references;

CREATE TABLE payments (
    id                   UUID NOT NULL,
    tenant_id            BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- `PAY-<yyyymmdd>-<number>`: what people read out and the provider shows the payer
    reference            TEXT NOT NULL,
    state                TEXT NOT NULL CHECK (state IN
        ('draft', 'pending', 'authorised', 'paid', 'partly_refunded', 'refunded', 'failed', 'expired', 'cancelled')),
    amount_minor         BIGINT NOT NULL CHECK (amount_minor > 0),
    currency             TEXT NOT NULL,
    -- given back by settled refunds
    refunded_minor       BIGINT NOT NULL DEFAULT 0 CHECK (refunded_minor >= 0),
    -- asked back by refunds the provider has not answered yet: not refundable meanwhile
    refunding_minor      BIGINT NOT NULL DEFAULT 0 CHECK (refunding_minor >= 0),
    CHECK (refunded_minor + refunding_minor <= amount_minor),
    -- the payer's number (E.164)
    payer                TEXT,
    method               TEXT NOT NULL CHECK (method IN ('mobile_money')),
    provider             TEXT NOT NULL,
    -- the provider's id of the push (M-Pesa's CheckoutRequestID) and of the money (its receipt)
    provider_request_id  TEXT,
    provider_receipt     TEXT,
    attempts             INTEGER NOT NULL DEFAULT 0,
    last_error           TEXT,
    expires_at           TIMESTAMPTZ,
    settled_at           TIMESTAMPTZ,
    subject_type         TEXT,
    subject_id           TEXT,
    -- the public checkout page's secret (`/pay/{token}`); refunds have none
    checkout_token       TEXT,
    -- the provider's result callback carries it in its URL
    callback_token       TEXT NOT NULL,
    refund_of            UUID,
    reason               TEXT,
    created_by           JSONB NOT NULL,
    created_at           TIMESTAMPTZ NOT NULL,
    updated_at           TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (id, tenant_id),
    UNIQUE (tenant_id, reference),
    UNIQUE (checkout_token, tenant_id),
    UNIQUE (callback_token, tenant_id),
    FOREIGN KEY (refund_of, tenant_id) REFERENCES payments (id, tenant_id)
);
CREATE INDEX payments_newest ON payments (tenant_id, created_at DESC, id DESC);
CREATE INDEX payments_subject ON payments (tenant_id, subject_id, created_at DESC, id DESC) WHERE subject_id IS NOT NULL;
CREATE INDEX payments_open ON payments (tenant_id, created_at DESC)
    WHERE state IN ('draft', 'pending', 'authorised');
-- one payment at a time asks for a subject's money (a failed one may be tried again)
CREATE UNIQUE INDEX payments_one_open ON payments (tenant_id, subject_type, subject_id)
    WHERE refund_of IS NULL AND state IN ('draft', 'pending', 'authorised', 'failed');
CREATE INDEX payments_refunds ON payments (tenant_id, refund_of) WHERE refund_of IS NOT NULL;
SELECT svc_tenant_rls('payments');

-- What happened to a payment, oldest first (contract: Payment detail `timeline[]`).
CREATE TABLE payment_timeline (
    id          BIGSERIAL,
    tenant_id   BIGINT NOT NULL,
    payment_id  UUID NOT NULL,
    old_state   TEXT,
    new_state   TEXT NOT NULL,
    -- `api`, `operator`, `checkout`, `provider`, `expiry`
    source      TEXT NOT NULL,
    message     TEXT,
    at          TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (id, tenant_id),
    FOREIGN KEY (payment_id, tenant_id) REFERENCES payments (id, tenant_id) ON DELETE CASCADE
);
CREATE INDEX payment_timeline_payment ON payment_timeline (tenant_id, payment_id, id);
SELECT svc_tenant_rls('payment_timeline');

-- The double-entry ledger: each movement is two or more entries whose debits equal their
-- credits, written with the state change that moved the money.
CREATE TABLE ledger_entries (
    entry_no    BIGSERIAL,
    tenant_id   BIGINT NOT NULL,
    payment_id  UUID NOT NULL,
    -- `settlement`, `refund`
    kind        TEXT NOT NULL,
    direction   TEXT NOT NULL CHECK (direction IN ('debit', 'credit')),
    account     TEXT NOT NULL,
    amount_minor BIGINT NOT NULL CHECK (amount_minor > 0),
    currency    TEXT NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (entry_no, tenant_id),
    FOREIGN KEY (payment_id, tenant_id) REFERENCES payments (id, tenant_id) ON DELETE CASCADE
);
CREATE INDEX ledger_entries_payment ON ledger_entries (tenant_id, payment_id, entry_no);
SELECT svc_tenant_rls('ledger_entries');

-- What an order's payments have done to it.
ALTER TABLE orders ADD COLUMN payment_status TEXT NOT NULL DEFAULT 'unpaid'
    CHECK (payment_status IN ('unpaid', 'pending', 'paid', 'partly_refunded', 'refunded'));
