-- Commerce publishing (issue 18): shops on their platforms (the chat catalogue, the storefront),
-- listings that remember which run asked for them and whether their refusal was announced,
-- the sandbox platform's own copy of products, feeds, and baskets.

-- The business account a shop publishes to, and the storefront page's public token.
ALTER TABLE catalogues ADD COLUMN waba_id TEXT CHECK (char_length(waba_id) BETWEEN 1 AND 64),
    ADD COLUMN storefront_token TEXT;
-- random, so unique in practice; the tenant in the key keeps the table distributable by tenant
CREATE UNIQUE INDEX catalogues_storefront ON catalogues (storefront_token, tenant_id);

-- `sync_id`: the run whose write asked for this publish (its report counts the outcome).
-- `blocked_reported`: `product.blocked` was sent for this product and platform (once ever).
ALTER TABLE product_listings ADD COLUMN sync_id BIGINT,
    ADD COLUMN blocked_reported BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX product_listings_waiting ON product_listings (tenant_id, platform, state)
    WHERE state IN ('pending', 'syncing', 'failed');
CREATE INDEX product_listings_sync ON product_listings (sync_id, tenant_id) WHERE sync_id IS NOT NULL;

-- The sandbox chat catalogue: what the pretend platform shows of each product, so that a
-- merchant's edit in "the platform's own tool" (`gateway admin sandbox catalogue-edit`) can
-- drift from the shop's copy. The Cloud API keeps its own.
CREATE TABLE sandbox_catalogue_items (
    tenant_id     BIGINT NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    catalogue_ref TEXT NOT NULL,
    retailer_id   TEXT NOT NULL,
    item          JSONB NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (catalogue_ref, retailer_id, tenant_id)
);
SELECT svc_tenant_rls('sandbox_catalogue_items');

-- A merchant's product file pulled on a schedule into sync runs (contract: Sync run and feed).
CREATE TABLE catalogue_feeds (
    id                   BIGSERIAL,
    tenant_id            BIGINT NOT NULL,
    catalogue_id         BIGINT NOT NULL,
    url                  TEXT NOT NULL,
    schedule             TEXT NOT NULL CHECK (schedule IN ('hourly', 'daily', 'weekly', 'manual')),
    mapping              JSONB NOT NULL DEFAULT '{}',
    mode                 TEXT NOT NULL CHECK (mode IN ('upsert', 'replace')),
    enabled              BOOLEAN NOT NULL DEFAULT true,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    last_sync_id         BIGINT,
    last_pulled_at       TIMESTAMPTZ,
    last_failure         TEXT,
    next_pull_at         TIMESTAMPTZ,
    created_at           TIMESTAMPTZ NOT NULL,
    updated_at           TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (id, tenant_id),
    FOREIGN KEY (tenant_id, catalogue_id) REFERENCES catalogues (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX catalogue_feeds_shop ON catalogue_feeds (catalogue_id, tenant_id);
SELECT svc_tenant_rls('catalogue_feeds');

-- A feed pull is a sync run of kind `feed`.
ALTER TABLE catalogue_syncs ADD COLUMN feed_id BIGINT;
