-- Tenancy in the schema: every tenant-owned table carries tenant_id, and its primary key,
-- unique keys and foreign keys to other tenant tables include it, so the database can be
-- distributed by tenant (Citus: tenant tables distributed and co-located on tenant_id).
-- The global tables (reference tables) are listed in docs/operations.md, "Tenancy and
-- distribution", and checked by the store's tests (tenancy.rs).
--
-- tenant_id joins each existing key as its last column: a lookup by id (or by the key's old
-- columns) keeps using the key's index, and a lookup by tenant and id uses it too.

-- 1. tenant_id where it was missing, taken from the parent row.

ALTER TABLE lead_label_links ADD COLUMN tenant_id BIGINT REFERENCES tenants (id) ON DELETE CASCADE;
UPDATE lead_label_links k SET tenant_id = l.tenant_id FROM leads l WHERE l.id = k.lead_id;
ALTER TABLE lead_label_links ALTER COLUMN tenant_id SET NOT NULL;

ALTER TABLE product_listings ADD COLUMN tenant_id BIGINT REFERENCES tenants (id) ON DELETE CASCADE;
UPDATE product_listings k SET tenant_id = p.tenant_id FROM products p WHERE p.id = k.product_id;
ALTER TABLE product_listings ALTER COLUMN tenant_id SET NOT NULL;

ALTER TABLE order_lines ADD COLUMN tenant_id BIGINT REFERENCES tenants (id) ON DELETE CASCADE;
UPDATE order_lines k SET tenant_id = o.tenant_id FROM orders o WHERE o.id = k.order_id;
ALTER TABLE order_lines ALTER COLUMN tenant_id SET NOT NULL;

ALTER TABLE data_record_keys ADD COLUMN tenant_id BIGINT REFERENCES tenants (id) ON DELETE CASCADE;
UPDATE data_record_keys k SET tenant_id = t.tenant_id FROM data_tables t WHERE t.id = k.table_id;
ALTER TABLE data_record_keys ALTER COLUMN tenant_id SET NOT NULL;

ALTER TABLE data_indexes ADD COLUMN tenant_id BIGINT REFERENCES tenants (id) ON DELETE CASCADE;
UPDATE data_indexes k SET tenant_id = t.tenant_id FROM data_tables t WHERE t.id = k.table_id;
ALTER TABLE data_indexes ALTER COLUMN tenant_id SET NOT NULL;

ALTER TABLE channel_usage ADD COLUMN tenant_id BIGINT REFERENCES tenants (id) ON DELETE CASCADE;
UPDATE channel_usage k SET tenant_id = c.tenant_id FROM channels c WHERE c.id = k.channel_id;
ALTER TABLE channel_usage ALTER COLUMN tenant_id SET NOT NULL;

-- A callback arrives at a URL carrying its channel's token, and a channel belongs to one
-- tenant, so the tenant of a callback is always known (channel_id is NOT NULL too).
ALTER TABLE provider_callbacks ADD COLUMN tenant_id BIGINT REFERENCES tenants (id) ON DELETE CASCADE;
UPDATE provider_callbacks k SET tenant_id = c.tenant_id FROM channels c WHERE c.id = k.channel_id;
ALTER TABLE provider_callbacks ALTER COLUMN tenant_id SET NOT NULL;

ALTER TABLE webhook_attempts ADD COLUMN tenant_id BIGINT REFERENCES tenants (id) ON DELETE CASCADE;
UPDATE webhook_attempts k SET tenant_id = d.tenant_id FROM webhook_deliveries d WHERE d.id = k.delivery_id;
ALTER TABLE webhook_attempts ALTER COLUMN tenant_id SET NOT NULL;

-- 2. Foreign keys between tenant tables go, to come back with tenant_id once the keys they
-- point at include it.

ALTER TABLE contacts DROP CONSTRAINT contacts_group_id_fkey;
ALTER TABLE campaigns DROP CONSTRAINT campaigns_contact_group_id_fkey;
ALTER TABLE messages DROP CONSTRAINT messages_campaign_id_fkey;
ALTER TABLE sms_blacklist DROP CONSTRAINT sms_blacklist_source_message_id_fkey;
ALTER TABLE provider_callbacks DROP CONSTRAINT provider_callbacks_message_id_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_webhook_id_fkey;
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_delivery_id_fkey;
ALTER TABLE lead_identities DROP CONSTRAINT lead_identities_lead_id_fkey;
ALTER TABLE lead_label_links DROP CONSTRAINT lead_label_links_lead_id_fkey;
ALTER TABLE lead_label_links DROP CONSTRAINT lead_label_links_label_id_fkey;
ALTER TABLE lead_activities DROP CONSTRAINT lead_activities_lead_id_fkey;
ALTER TABLE lead_pending_updates DROP CONSTRAINT lead_pending_updates_lead_id_fkey;
ALTER TABLE catalogue_brands DROP CONSTRAINT catalogue_brands_catalogue_id_fkey;
ALTER TABLE catalogue_categories DROP CONSTRAINT catalogue_categories_catalogue_id_fkey;
ALTER TABLE products DROP CONSTRAINT products_catalogue_id_fkey;
ALTER TABLE products DROP CONSTRAINT products_brand_id_fkey;
ALTER TABLE products DROP CONSTRAINT products_category_id_fkey;
ALTER TABLE product_listings DROP CONSTRAINT product_listings_product_id_fkey;
ALTER TABLE stock_movements DROP CONSTRAINT stock_movements_product_id_fkey;
ALTER TABLE catalogue_syncs DROP CONSTRAINT catalogue_syncs_catalogue_id_fkey;
ALTER TABLE orders DROP CONSTRAINT orders_catalogue_id_fkey;
ALTER TABLE order_lines DROP CONSTRAINT order_lines_order_id_fkey;
ALTER TABLE order_lines DROP CONSTRAINT order_lines_product_id_fkey;
ALTER TABLE data_tables DROP CONSTRAINT data_tables_group_id_fkey;
ALTER TABLE data_records DROP CONSTRAINT data_records_table_id_fkey;
ALTER TABLE data_record_keys DROP CONSTRAINT data_record_keys_table_id_fkey;
ALTER TABLE data_record_keys DROP CONSTRAINT data_record_keys_record_id_fkey;
ALTER TABLE data_record_history DROP CONSTRAINT data_record_history_table_id_fkey;
ALTER TABLE data_indexes DROP CONSTRAINT data_indexes_table_id_fkey;

-- 3. Primary keys with tenant_id.

ALTER TABLE events DROP CONSTRAINT events_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE wallet_ledger DROP CONSTRAINT wallet_ledger_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE contact_groups DROP CONSTRAINT contact_groups_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE contacts DROP CONSTRAINT contacts_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE senders DROP CONSTRAINT senders_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE campaigns DROP CONSTRAINT campaigns_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE messages DROP CONSTRAINT messages_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE provider_callbacks DROP CONSTRAINT provider_callbacks_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE channel_usage DROP CONSTRAINT channel_usage_pkey, ADD PRIMARY KEY (channel_id, second, tenant_id);
ALTER TABLE webhooks DROP CONSTRAINT webhooks_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_pkey, ADD PRIMARY KEY (delivery_id, number, tenant_id);
ALTER TABLE webhook_notifications DROP CONSTRAINT webhook_notifications_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE leads DROP CONSTRAINT leads_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE lead_labels DROP CONSTRAINT lead_labels_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE lead_label_links DROP CONSTRAINT lead_label_links_pkey, ADD PRIMARY KEY (lead_id, label_id, tenant_id);
ALTER TABLE lead_activities DROP CONSTRAINT lead_activities_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE lead_pending_updates DROP CONSTRAINT lead_pending_updates_pkey, ADD PRIMARY KEY (lead_id, tenant_id);
ALTER TABLE catalogues DROP CONSTRAINT catalogues_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE catalogue_brands DROP CONSTRAINT catalogue_brands_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE catalogue_categories DROP CONSTRAINT catalogue_categories_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE products DROP CONSTRAINT products_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE product_listings DROP CONSTRAINT product_listings_pkey, ADD PRIMARY KEY (product_id, platform, tenant_id);
ALTER TABLE stock_movements DROP CONSTRAINT stock_movements_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE catalogue_syncs DROP CONSTRAINT catalogue_syncs_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE orders DROP CONSTRAINT orders_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE order_lines DROP CONSTRAINT order_lines_pkey, ADD PRIMARY KEY (order_id, position, tenant_id);
ALTER TABLE data_groups DROP CONSTRAINT data_groups_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE data_tables DROP CONSTRAINT data_tables_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE data_records DROP CONSTRAINT data_records_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE data_record_keys DROP CONSTRAINT data_record_keys_pkey, ADD PRIMARY KEY (table_id, name, value, tenant_id);
ALTER TABLE data_record_history DROP CONSTRAINT data_record_history_pkey, ADD PRIMARY KEY (id, tenant_id);
ALTER TABLE data_indexes DROP CONSTRAINT data_indexes_pkey, ADD PRIMARY KEY (table_id, column_key, tenant_id);
ALTER TABLE data_files DROP CONSTRAINT data_files_pkey, ADD PRIMARY KEY (id, tenant_id);

-- 4. Unique keys and unique indexes with tenant_id (the ON CONFLICT targets name them so).

ALTER TABLE contact_groups DROP CONSTRAINT contact_groups_uid_key, ADD UNIQUE (uid, tenant_id);
ALTER TABLE contacts DROP CONSTRAINT contacts_uid_key, ADD UNIQUE (uid, tenant_id);
ALTER TABLE contacts DROP CONSTRAINT contacts_group_id_full_phone_number_key,
    ADD UNIQUE (group_id, full_phone_number, tenant_id);
ALTER TABLE senders DROP CONSTRAINT senders_channel_id_type_value_key, ADD UNIQUE (channel_id, type, value, tenant_id);
ALTER TABLE campaigns DROP CONSTRAINT campaigns_uid_key, ADD UNIQUE (uid, tenant_id);
ALTER TABLE messages DROP CONSTRAINT messages_uid_key, ADD UNIQUE (uid, tenant_id);

DROP INDEX messages_campaign_contact;
CREATE UNIQUE INDEX messages_campaign_contact ON messages (campaign_id, contact_id, tenant_id)
    WHERE campaign_id IS NOT NULL;
DROP INDEX messages_inbound_once;
CREATE UNIQUE INDEX messages_inbound_once ON messages (tenant_channel_id, gateway_message_id, tenant_id)
    WHERE direction = 'inbound' AND gateway_message_id IS NOT NULL;
DROP INDEX catalogue_brands_name;
CREATE UNIQUE INDEX catalogue_brands_name ON catalogue_brands (catalogue_id, lower(name), tenant_id);
DROP INDEX catalogue_categories_name;
CREATE UNIQUE INDEX catalogue_categories_name ON catalogue_categories (catalogue_id, lower(name), tenant_id);
DROP INDEX products_sku;
CREATE UNIQUE INDEX products_sku ON products (catalogue_id, sku, tenant_id);
DROP INDEX catalogue_syncs_key;
CREATE UNIQUE INDEX catalogue_syncs_key ON catalogue_syncs (catalogue_id, idempotency_key, tenant_id);

-- 5. The foreign keys again, each pairing tenant_id with tenant_id. A SET NULL clears the
-- reference only, never tenant_id.

ALTER TABLE contacts ADD FOREIGN KEY (tenant_id, group_id)
    REFERENCES contact_groups (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE campaigns ADD FOREIGN KEY (tenant_id, contact_group_id)
    REFERENCES contact_groups (tenant_id, id) ON DELETE SET NULL (contact_group_id);
ALTER TABLE messages ADD FOREIGN KEY (tenant_id, campaign_id)
    REFERENCES campaigns (tenant_id, id) ON DELETE SET NULL (campaign_id);
ALTER TABLE sms_blacklist ADD FOREIGN KEY (tenant_id, source_message_id)
    REFERENCES messages (tenant_id, id) ON DELETE SET NULL (source_message_id);
ALTER TABLE provider_callbacks ADD FOREIGN KEY (tenant_id, message_id)
    REFERENCES messages (tenant_id, id) ON DELETE SET NULL (message_id);
ALTER TABLE webhook_deliveries ADD FOREIGN KEY (tenant_id, webhook_id)
    REFERENCES webhooks (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE webhook_attempts ADD FOREIGN KEY (tenant_id, delivery_id)
    REFERENCES webhook_deliveries (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE lead_identities ADD FOREIGN KEY (tenant_id, lead_id)
    REFERENCES leads (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE lead_label_links ADD FOREIGN KEY (tenant_id, lead_id)
    REFERENCES leads (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE lead_label_links ADD FOREIGN KEY (tenant_id, label_id)
    REFERENCES lead_labels (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE lead_activities ADD FOREIGN KEY (tenant_id, lead_id)
    REFERENCES leads (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE lead_pending_updates ADD FOREIGN KEY (tenant_id, lead_id)
    REFERENCES leads (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE catalogue_brands ADD FOREIGN KEY (tenant_id, catalogue_id)
    REFERENCES catalogues (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE catalogue_categories ADD FOREIGN KEY (tenant_id, catalogue_id)
    REFERENCES catalogues (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE products ADD FOREIGN KEY (tenant_id, catalogue_id)
    REFERENCES catalogues (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE products ADD FOREIGN KEY (tenant_id, brand_id)
    REFERENCES catalogue_brands (tenant_id, id) ON DELETE SET NULL (brand_id);
ALTER TABLE products ADD FOREIGN KEY (tenant_id, category_id)
    REFERENCES catalogue_categories (tenant_id, id) ON DELETE SET NULL (category_id);
ALTER TABLE product_listings ADD FOREIGN KEY (tenant_id, product_id)
    REFERENCES products (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE stock_movements ADD FOREIGN KEY (tenant_id, product_id)
    REFERENCES products (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE catalogue_syncs ADD FOREIGN KEY (tenant_id, catalogue_id)
    REFERENCES catalogues (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE orders ADD FOREIGN KEY (tenant_id, catalogue_id)
    REFERENCES catalogues (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE order_lines ADD FOREIGN KEY (tenant_id, order_id)
    REFERENCES orders (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE order_lines ADD FOREIGN KEY (tenant_id, product_id)
    REFERENCES products (tenant_id, id) ON DELETE SET NULL (product_id);
ALTER TABLE data_tables ADD FOREIGN KEY (tenant_id, group_id)
    REFERENCES data_groups (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE data_records ADD FOREIGN KEY (tenant_id, table_id)
    REFERENCES data_tables (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE data_record_keys ADD FOREIGN KEY (tenant_id, table_id)
    REFERENCES data_tables (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE data_record_keys ADD FOREIGN KEY (tenant_id, record_id)
    REFERENCES data_records (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE data_record_history ADD FOREIGN KEY (tenant_id, table_id)
    REFERENCES data_tables (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE data_indexes ADD FOREIGN KEY (tenant_id, table_id)
    REFERENCES data_tables (tenant_id, id) ON DELETE CASCADE;

-- 6. A channel's per-second budget is kept under its tenant.
DROP FUNCTION channel_take(BIGINT, TIMESTAMPTZ, INTEGER, INTEGER);
CREATE FUNCTION channel_take(p_tenant BIGINT, p_channel BIGINT, p_second TIMESTAMPTZ, p_want INTEGER, p_limit INTEGER)
RETURNS INTEGER
LANGUAGE plpgsql AS $$
DECLARE
    current INTEGER;
    granted INTEGER;
BEGIN
    INSERT INTO channel_usage (tenant_id, channel_id, second, used) VALUES (p_tenant, p_channel, p_second, 0)
        ON CONFLICT DO NOTHING;
    SELECT u.used INTO current FROM channel_usage u
        WHERE u.tenant_id = p_tenant AND u.channel_id = p_channel AND u.second = p_second FOR UPDATE;
    granted := LEAST(p_want, GREATEST(p_limit - current, 0));
    UPDATE channel_usage u SET used = current + granted
        WHERE u.tenant_id = p_tenant AND u.channel_id = p_channel AND u.second = p_second;
    -- Now and then, forget this tenant's seconds long gone, so the table stays small.
    IF random() < 0.01 THEN
        DELETE FROM channel_usage u WHERE u.tenant_id = p_tenant AND u.second < p_second - interval '1 minute';
    END IF;
    RETURN granted;
END;
$$;
