-- Commerce core: shops (catalogues), products, stock with reservations, sync runs and orders.

CREATE TABLE catalogues (
    id                    BIGSERIAL PRIMARY KEY,
    tenant_id             BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name                  TEXT NOT NULL,
    description           TEXT,
    vertical              TEXT,
    default_currency      TEXT,
    -- fixed after creation (contract: Catalogue)
    sku_prefix            TEXT,
    stock_policy          TEXT NOT NULL CHECK (stock_policy IN ('external', 'svc')),
    source_of_truth       TEXT NOT NULL CHECK (source_of_truth IN ('api', 'svc', 'platform')),
    allow_backorder       BOOLEAN NOT NULL DEFAULT false,
    reservation_ttl_hours INTEGER NOT NULL DEFAULT 48 CHECK (reservation_ttl_hours > 0),
    low_stock_threshold   INTEGER CHECK (low_stock_threshold >= 0),
    meta_catalogue_id     TEXT,
    is_connected_to_waba  BOOLEAN NOT NULL DEFAULT false,
    is_catalogue_visible  BOOLEAN NOT NULL DEFAULT true,
    is_cart_enabled       BOOLEAN NOT NULL DEFAULT true,
    channels              JSONB NOT NULL DEFAULT '[]',
    -- the last number used for an issued code `<PREFIX>-<5 digits>`
    sku_counter           BIGINT NOT NULL DEFAULT 0,
    last_synced_at        TIMESTAMPTZ,
    created_at            TIMESTAMPTZ NOT NULL,
    updated_at            TIMESTAMPTZ NOT NULL
);
CREATE INDEX catalogues_tenant ON catalogues (tenant_id, id);

-- Brand and category text creates its record on first use; names match without case.
CREATE TABLE catalogue_brands (
    id           BIGSERIAL PRIMARY KEY,
    tenant_id    BIGINT NOT NULL,
    catalogue_id BIGINT NOT NULL REFERENCES catalogues (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX catalogue_brands_name ON catalogue_brands (catalogue_id, lower(name));

CREATE TABLE catalogue_categories (
    id           BIGSERIAL PRIMARY KEY,
    tenant_id    BIGINT NOT NULL,
    catalogue_id BIGINT NOT NULL REFERENCES catalogues (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX catalogue_categories_name ON catalogue_categories (catalogue_id, lower(name));

CREATE TABLE products (
    id                   BIGSERIAL PRIMARY KEY,
    tenant_id            BIGINT NOT NULL,
    catalogue_id         BIGINT NOT NULL REFERENCES catalogues (id) ON DELETE CASCADE,
    sku                  TEXT NOT NULL,
    name                 TEXT NOT NULL,
    -- minor units of `currency`
    price                BIGINT NOT NULL CHECK (price >= 0),
    sale_price           BIGINT CHECK (sale_price >= 0),
    description          TEXT,
    currency             TEXT NOT NULL,
    image_url            TEXT,
    -- on hand; NULL means stock is not tracked
    inventory            INTEGER,
    -- units held by orders (pending ones, and committed ones are no longer counted)
    reserved             INTEGER NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    -- an explicit availability; NULL means derived from stock
    availability         TEXT,
    brand_id             BIGINT REFERENCES catalogue_brands (id) ON DELETE SET NULL,
    category_id          BIGINT REFERENCES catalogue_categories (id) ON DELETE SET NULL,
    -- the day (UTC) of the last stock.low, so it is sent once a day
    low_stock_alerted_on DATE,
    -- deleted, or retired by a replace sync; the row keeps its history and comes back when its
    -- code is sent again
    retired_at           TIMESTAMPTZ,
    created_at           TIMESTAMPTZ NOT NULL,
    updated_at           TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX products_sku ON products (catalogue_id, sku);
CREATE INDEX products_shelf ON products (catalogue_id, id) WHERE retired_at IS NULL;
CREATE INDEX products_name ON products (catalogue_id, lower(name)) WHERE retired_at IS NULL;

-- One row per publishing platform (contract: Product listing); filled by publishing.
CREATE TABLE product_listings (
    product_id  BIGINT NOT NULL REFERENCES products (id) ON DELETE CASCADE,
    platform    TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('pending', 'syncing', 'synced', 'failed', 'blocked', 'drifted')),
    problem     TEXT,
    updated_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (product_id, platform)
);

-- The stock audit trail (contract: Inventory level and movement).
CREATE TABLE stock_movements (
    id          BIGSERIAL PRIMARY KEY,
    tenant_id   BIGINT NOT NULL,
    product_id  BIGINT NOT NULL REFERENCES products (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('reserve', 'release', 'commit', 'adjust', 'sync')),
    quantity    INTEGER NOT NULL,
    inventory   INTEGER,
    reserved    INTEGER NOT NULL,
    cause       TEXT NOT NULL,
    order_id    BIGINT,
    sync_id     BIGINT,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX stock_movements_product ON stock_movements (product_id, id DESC);

-- Sync runs: product batches now; feed pulls and spreadsheet imports later.
CREATE TABLE catalogue_syncs (
    id                 BIGSERIAL PRIMARY KEY,
    tenant_id          BIGINT NOT NULL,
    catalogue_id       BIGINT NOT NULL REFERENCES catalogues (id) ON DELETE CASCADE,
    kind               TEXT NOT NULL DEFAULT 'batch' CHECK (kind IN ('batch', 'feed', 'import')),
    mode               TEXT NOT NULL CHECK (mode IN ('upsert', 'replace')),
    status             TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    idempotency_key    TEXT,
    -- the rows as sent, until the run has used them
    payload            JSONB,
    received           INTEGER NOT NULL,
    created            INTEGER NOT NULL DEFAULT 0,
    updated            INTEGER NOT NULL DEFAULT 0,
    unchanged          INTEGER NOT NULL DEFAULT 0,
    rejected           INTEGER NOT NULL DEFAULT 0,
    retired            INTEGER NOT NULL DEFAULT 0,
    platforms          JSONB NOT NULL DEFAULT '{}',
    problems           JSONB NOT NULL DEFAULT '[]',
    problems_truncated BOOLEAN NOT NULL DEFAULT false,
    failure            TEXT,
    created_at         TIMESTAMPTZ NOT NULL,
    started_at         TIMESTAMPTZ,
    finished_at        TIMESTAMPTZ
);
CREATE INDEX catalogue_syncs_catalogue ON catalogue_syncs (catalogue_id, id DESC);
CREATE UNIQUE INDEX catalogue_syncs_key ON catalogue_syncs (catalogue_id, idempotency_key);

CREATE TABLE orders (
    id                     BIGSERIAL PRIMARY KEY,
    tenant_id              BIGINT NOT NULL,
    catalogue_id           BIGINT NOT NULL REFERENCES catalogues (id) ON DELETE CASCADE,
    platform               TEXT NOT NULL CHECK (platform IN ('chat', 'storefront', 'ivr', 'manual')),
    status                 TEXT NOT NULL CHECK (status IN
        ('pending', 'confirmed', 'processing', 'shipped', 'delivered', 'cancelled', 'refunded')),
    -- the shop's policy when the order was made
    stock_policy           TEXT NOT NULL CHECK (stock_policy IN ('external', 'svc')),
    -- what the order does to stock now: held (pending), committed, released
    hold                   TEXT NOT NULL CHECK (hold IN ('held', 'committed', 'released')),
    hold_expires_at        TIMESTAMPTZ,
    reservation_ttl_hours  INTEGER NOT NULL,
    allow_backorder        BOOLEAN NOT NULL,
    customer_handle        TEXT,
    customer_name          TEXT,
    total_minor            BIGINT NOT NULL,
    currency               TEXT NOT NULL,
    conversation_id        BIGINT,
    priced_at              TIMESTAMPTZ NOT NULL,
    created_at             TIMESTAMPTZ NOT NULL,
    updated_at             TIMESTAMPTZ NOT NULL
);
CREATE INDEX orders_tenant_updated ON orders (tenant_id, updated_at DESC, id DESC);
CREATE INDEX orders_catalogue ON orders (catalogue_id);

-- Lines are frozen at creation; `reserved` is what the line holds (or committed) now.
CREATE TABLE order_lines (
    order_id          BIGINT NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    position          INTEGER NOT NULL,
    product_id        BIGINT REFERENCES products (id) ON DELETE SET NULL,
    sku               TEXT NOT NULL,
    name              TEXT,
    quantity          INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_minor  BIGINT,
    line_total_minor  BIGINT,
    currency          TEXT,
    reserved          INTEGER NOT NULL DEFAULT 0,
    stock_short       BOOLEAN NOT NULL DEFAULT false,
    unresolved        BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (order_id, position)
);
