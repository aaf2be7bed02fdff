-- The publish claims drifted listings too (sent back after a drift check): the index of what
-- waits must hold them, or the claim reads every listing of the shop.
DROP INDEX product_listings_waiting;
CREATE INDEX product_listings_waiting ON product_listings (tenant_id, platform, state)
    WHERE state IN ('pending', 'syncing', 'failed', 'drifted');
