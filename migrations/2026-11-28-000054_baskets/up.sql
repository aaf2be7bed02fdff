-- Baskets (contract: Basket (cart), Shop links and baskets): a shop link opens a basket page
-- where the customer checks the items and submits them as an order.
CREATE TABLE carts (
    id              BIGSERIAL,
    tenant_id       BIGINT NOT NULL,
    catalogue_id    BIGINT NOT NULL,
    -- five characters people can read out (no 0/O, 1/I); what GET /carts/{ref} takes
    code            TEXT NOT NULL CHECK (char_length(code) = 5),
    -- the public page's secret (random: unique in practice)
    token           TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('open', 'sent', 'ordered', 'abandoned', 'expired')),
    items           JSONB NOT NULL DEFAULT '[]',
    -- products the customer may add on the page (a category's, or the one linked)
    offer           BIGINT[] NOT NULL DEFAULT '{}',
    subtotal_minor  BIGINT NOT NULL DEFAULT 0,
    currency        TEXT NOT NULL,
    note            TEXT,
    category        TEXT,
    problems        JSONB NOT NULL DEFAULT '[]',
    conversation_id BIGINT,
    customer        TEXT,
    message_id      TEXT,
    order_id        BIGINT,
    expires_at      TIMESTAMPTZ NOT NULL,
    submitted_at    TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (id, tenant_id),
    UNIQUE (tenant_id, code),
    UNIQUE (token, tenant_id),
    FOREIGN KEY (tenant_id, catalogue_id) REFERENCES catalogues (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX carts_newest ON carts (tenant_id, id DESC);
CREATE INDEX carts_conversation ON carts (tenant_id, conversation_id) WHERE conversation_id IS NOT NULL;
SELECT svc_tenant_rls('carts');
