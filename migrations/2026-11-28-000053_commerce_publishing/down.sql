ALTER TABLE catalogue_syncs DROP COLUMN feed_id;
DROP TABLE catalogue_feeds;
DROP TABLE sandbox_catalogue_items;
DROP INDEX product_listings_sync;
DROP INDEX product_listings_waiting;
ALTER TABLE product_listings DROP COLUMN blocked_reported, DROP COLUMN sync_id;
DROP INDEX catalogues_storefront;
ALTER TABLE catalogues DROP COLUMN storefront_token, DROP COLUMN waba_id;
