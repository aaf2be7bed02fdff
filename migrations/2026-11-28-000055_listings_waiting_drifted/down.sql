DROP INDEX product_listings_waiting;
CREATE INDEX product_listings_waiting ON product_listings (tenant_id, platform, state)
    WHERE state IN ('pending', 'syncing', 'failed');
