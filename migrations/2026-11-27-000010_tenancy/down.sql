-- Back to the keys of before: tenant_id leaves the keys and the tables that lacked it.

ALTER TABLE contacts DROP CONSTRAINT contacts_tenant_id_group_id_fkey;
ALTER TABLE campaigns DROP CONSTRAINT campaigns_tenant_id_contact_group_id_fkey;
ALTER TABLE messages DROP CONSTRAINT messages_tenant_id_campaign_id_fkey;
ALTER TABLE sms_blacklist DROP CONSTRAINT sms_blacklist_tenant_id_source_message_id_fkey;
ALTER TABLE provider_callbacks DROP CONSTRAINT provider_callbacks_tenant_id_message_id_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_tenant_id_webhook_id_fkey;
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_tenant_id_delivery_id_fkey;
ALTER TABLE lead_identities DROP CONSTRAINT lead_identities_tenant_id_lead_id_fkey;
ALTER TABLE lead_label_links DROP CONSTRAINT lead_label_links_tenant_id_lead_id_fkey;
ALTER TABLE lead_label_links DROP CONSTRAINT lead_label_links_tenant_id_label_id_fkey;
ALTER TABLE lead_activities DROP CONSTRAINT lead_activities_tenant_id_lead_id_fkey;
ALTER TABLE lead_pending_updates DROP CONSTRAINT lead_pending_updates_tenant_id_lead_id_fkey;
ALTER TABLE catalogue_brands DROP CONSTRAINT catalogue_brands_tenant_id_catalogue_id_fkey;
ALTER TABLE catalogue_categories DROP CONSTRAINT catalogue_categories_tenant_id_catalogue_id_fkey;
ALTER TABLE products DROP CONSTRAINT products_tenant_id_catalogue_id_fkey;
ALTER TABLE products DROP CONSTRAINT products_tenant_id_brand_id_fkey;
ALTER TABLE products DROP CONSTRAINT products_tenant_id_category_id_fkey;
ALTER TABLE product_listings DROP CONSTRAINT product_listings_tenant_id_product_id_fkey;
ALTER TABLE stock_movements DROP CONSTRAINT stock_movements_tenant_id_product_id_fkey;
ALTER TABLE catalogue_syncs DROP CONSTRAINT catalogue_syncs_tenant_id_catalogue_id_fkey;
ALTER TABLE orders DROP CONSTRAINT orders_tenant_id_catalogue_id_fkey;
ALTER TABLE order_lines DROP CONSTRAINT order_lines_tenant_id_order_id_fkey;
ALTER TABLE order_lines DROP CONSTRAINT order_lines_tenant_id_product_id_fkey;
ALTER TABLE data_tables DROP CONSTRAINT data_tables_tenant_id_group_id_fkey;
ALTER TABLE data_records DROP CONSTRAINT data_records_tenant_id_table_id_fkey;
ALTER TABLE data_record_keys DROP CONSTRAINT data_record_keys_tenant_id_table_id_fkey;
ALTER TABLE data_record_keys DROP CONSTRAINT data_record_keys_tenant_id_record_id_fkey;
ALTER TABLE data_record_history DROP CONSTRAINT data_record_history_tenant_id_table_id_fkey;
ALTER TABLE data_indexes DROP CONSTRAINT data_indexes_tenant_id_table_id_fkey;

ALTER TABLE contact_groups DROP CONSTRAINT contact_groups_uid_tenant_id_key, ADD UNIQUE (uid);
ALTER TABLE contacts DROP CONSTRAINT contacts_uid_tenant_id_key, ADD UNIQUE (uid);
ALTER TABLE contacts DROP CONSTRAINT contacts_group_id_full_phone_number_tenant_id_key, ADD UNIQUE (group_id, full_phone_number);
ALTER TABLE senders DROP CONSTRAINT senders_channel_id_type_value_tenant_id_key, ADD UNIQUE (channel_id, type, value);
ALTER TABLE campaigns DROP CONSTRAINT campaigns_uid_tenant_id_key, ADD UNIQUE (uid);
ALTER TABLE messages DROP CONSTRAINT messages_uid_tenant_id_key, ADD UNIQUE (uid);
DROP INDEX messages_campaign_contact;
CREATE UNIQUE INDEX messages_campaign_contact ON messages (campaign_id, contact_id)
    WHERE campaign_id IS NOT NULL;
DROP INDEX messages_inbound_once;
CREATE UNIQUE INDEX messages_inbound_once ON messages (tenant_channel_id, gateway_message_id)
    WHERE direction = 'inbound' AND gateway_message_id IS NOT NULL;
DROP INDEX catalogue_brands_name;
CREATE UNIQUE INDEX catalogue_brands_name ON catalogue_brands (catalogue_id, lower(name));
DROP INDEX catalogue_categories_name;
CREATE UNIQUE INDEX catalogue_categories_name ON catalogue_categories (catalogue_id, lower(name));
DROP INDEX products_sku;
CREATE UNIQUE INDEX products_sku ON products (catalogue_id, sku);
DROP INDEX catalogue_syncs_key;
CREATE UNIQUE INDEX catalogue_syncs_key ON catalogue_syncs (catalogue_id, idempotency_key);

ALTER TABLE events DROP CONSTRAINT events_pkey, ADD PRIMARY KEY (id);
ALTER TABLE wallet_ledger DROP CONSTRAINT wallet_ledger_pkey, ADD PRIMARY KEY (id);
ALTER TABLE contact_groups DROP CONSTRAINT contact_groups_pkey, ADD PRIMARY KEY (id);
ALTER TABLE contacts DROP CONSTRAINT contacts_pkey, ADD PRIMARY KEY (id);
ALTER TABLE senders DROP CONSTRAINT senders_pkey, ADD PRIMARY KEY (id);
ALTER TABLE campaigns DROP CONSTRAINT campaigns_pkey, ADD PRIMARY KEY (id);
ALTER TABLE messages DROP CONSTRAINT messages_pkey, ADD PRIMARY KEY (id);
ALTER TABLE provider_callbacks DROP CONSTRAINT provider_callbacks_pkey, ADD PRIMARY KEY (id);
ALTER TABLE channel_usage DROP CONSTRAINT channel_usage_pkey, ADD PRIMARY KEY (channel_id, second);
ALTER TABLE webhooks DROP CONSTRAINT webhooks_pkey, ADD PRIMARY KEY (id);
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_pkey, ADD PRIMARY KEY (id);
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_pkey, ADD PRIMARY KEY (delivery_id, number);
ALTER TABLE webhook_notifications DROP CONSTRAINT webhook_notifications_pkey, ADD PRIMARY KEY (id);
ALTER TABLE leads DROP CONSTRAINT leads_pkey, ADD PRIMARY KEY (id);
ALTER TABLE lead_labels DROP CONSTRAINT lead_labels_pkey, ADD PRIMARY KEY (id);
ALTER TABLE lead_label_links DROP CONSTRAINT lead_label_links_pkey, ADD PRIMARY KEY (lead_id, label_id);
ALTER TABLE lead_activities DROP CONSTRAINT lead_activities_pkey, ADD PRIMARY KEY (id);
ALTER TABLE lead_pending_updates DROP CONSTRAINT lead_pending_updates_pkey, ADD PRIMARY KEY (lead_id);
ALTER TABLE catalogues DROP CONSTRAINT catalogues_pkey, ADD PRIMARY KEY (id);
ALTER TABLE catalogue_brands DROP CONSTRAINT catalogue_brands_pkey, ADD PRIMARY KEY (id);
ALTER TABLE catalogue_categories DROP CONSTRAINT catalogue_categories_pkey, ADD PRIMARY KEY (id);
ALTER TABLE products DROP CONSTRAINT products_pkey, ADD PRIMARY KEY (id);
ALTER TABLE product_listings DROP CONSTRAINT product_listings_pkey, ADD PRIMARY KEY (product_id, platform);
ALTER TABLE stock_movements DROP CONSTRAINT stock_movements_pkey, ADD PRIMARY KEY (id);
ALTER TABLE catalogue_syncs DROP CONSTRAINT catalogue_syncs_pkey, ADD PRIMARY KEY (id);
ALTER TABLE orders DROP CONSTRAINT orders_pkey, ADD PRIMARY KEY (id);
ALTER TABLE order_lines DROP CONSTRAINT order_lines_pkey, ADD PRIMARY KEY (order_id, position);
ALTER TABLE data_groups DROP CONSTRAINT data_groups_pkey, ADD PRIMARY KEY (id);
ALTER TABLE data_tables DROP CONSTRAINT data_tables_pkey, ADD PRIMARY KEY (id);
ALTER TABLE data_records DROP CONSTRAINT data_records_pkey, ADD PRIMARY KEY (id);
ALTER TABLE data_record_keys DROP CONSTRAINT data_record_keys_pkey, ADD PRIMARY KEY (table_id, name, value);
ALTER TABLE data_record_history DROP CONSTRAINT data_record_history_pkey, ADD PRIMARY KEY (id);
ALTER TABLE data_indexes DROP CONSTRAINT data_indexes_pkey, ADD PRIMARY KEY (table_id, column_key);
ALTER TABLE data_files DROP CONSTRAINT data_files_pkey, ADD PRIMARY KEY (id);

ALTER TABLE contacts ADD FOREIGN KEY (group_id) REFERENCES contact_groups (id) ON DELETE CASCADE;
ALTER TABLE campaigns ADD FOREIGN KEY (contact_group_id) REFERENCES contact_groups (id) ON DELETE SET NULL;
ALTER TABLE messages ADD FOREIGN KEY (campaign_id) REFERENCES campaigns (id) ON DELETE SET NULL;
ALTER TABLE sms_blacklist ADD FOREIGN KEY (source_message_id) REFERENCES messages (id) ON DELETE SET NULL;
ALTER TABLE provider_callbacks ADD FOREIGN KEY (message_id) REFERENCES messages (id) ON DELETE SET NULL;
ALTER TABLE webhook_deliveries ADD FOREIGN KEY (webhook_id) REFERENCES webhooks (id) ON DELETE CASCADE;
ALTER TABLE webhook_attempts ADD FOREIGN KEY (delivery_id) REFERENCES webhook_deliveries (id) ON DELETE CASCADE;
ALTER TABLE lead_identities ADD FOREIGN KEY (lead_id) REFERENCES leads (id) ON DELETE CASCADE;
ALTER TABLE lead_label_links ADD FOREIGN KEY (lead_id) REFERENCES leads (id) ON DELETE CASCADE;
ALTER TABLE lead_label_links ADD FOREIGN KEY (label_id) REFERENCES lead_labels (id) ON DELETE CASCADE;
ALTER TABLE lead_activities ADD FOREIGN KEY (lead_id) REFERENCES leads (id) ON DELETE CASCADE;
ALTER TABLE lead_pending_updates ADD FOREIGN KEY (lead_id) REFERENCES leads (id) ON DELETE CASCADE;
ALTER TABLE catalogue_brands ADD FOREIGN KEY (catalogue_id) REFERENCES catalogues (id) ON DELETE CASCADE;
ALTER TABLE catalogue_categories ADD FOREIGN KEY (catalogue_id) REFERENCES catalogues (id) ON DELETE CASCADE;
ALTER TABLE products ADD FOREIGN KEY (catalogue_id) REFERENCES catalogues (id) ON DELETE CASCADE;
ALTER TABLE products ADD FOREIGN KEY (brand_id) REFERENCES catalogue_brands (id) ON DELETE SET NULL;
ALTER TABLE products ADD FOREIGN KEY (category_id) REFERENCES catalogue_categories (id) ON DELETE SET NULL;
ALTER TABLE product_listings ADD FOREIGN KEY (product_id) REFERENCES products (id) ON DELETE CASCADE;
ALTER TABLE stock_movements ADD FOREIGN KEY (product_id) REFERENCES products (id) ON DELETE CASCADE;
ALTER TABLE catalogue_syncs ADD FOREIGN KEY (catalogue_id) REFERENCES catalogues (id) ON DELETE CASCADE;
ALTER TABLE orders ADD FOREIGN KEY (catalogue_id) REFERENCES catalogues (id) ON DELETE CASCADE;
ALTER TABLE order_lines ADD FOREIGN KEY (order_id) REFERENCES orders (id) ON DELETE CASCADE;
ALTER TABLE order_lines ADD FOREIGN KEY (product_id) REFERENCES products (id) ON DELETE SET NULL;
ALTER TABLE data_tables ADD FOREIGN KEY (group_id) REFERENCES data_groups (id) ON DELETE CASCADE;
ALTER TABLE data_records ADD FOREIGN KEY (table_id) REFERENCES data_tables (id) ON DELETE CASCADE;
ALTER TABLE data_record_keys ADD FOREIGN KEY (table_id) REFERENCES data_tables (id) ON DELETE CASCADE;
ALTER TABLE data_record_keys ADD FOREIGN KEY (record_id) REFERENCES data_records (id) ON DELETE CASCADE;
ALTER TABLE data_record_history ADD FOREIGN KEY (table_id) REFERENCES data_tables (id) ON DELETE CASCADE;
ALTER TABLE data_indexes ADD FOREIGN KEY (table_id) REFERENCES data_tables (id) ON DELETE CASCADE;

ALTER TABLE lead_label_links DROP COLUMN tenant_id;
ALTER TABLE product_listings DROP COLUMN tenant_id;
ALTER TABLE order_lines DROP COLUMN tenant_id;
ALTER TABLE data_record_keys DROP COLUMN tenant_id;
ALTER TABLE data_indexes DROP COLUMN tenant_id;
ALTER TABLE channel_usage DROP COLUMN tenant_id;
ALTER TABLE provider_callbacks DROP COLUMN tenant_id;
ALTER TABLE webhook_attempts DROP COLUMN tenant_id;

DROP FUNCTION channel_take(BIGINT, BIGINT, TIMESTAMPTZ, INTEGER, INTEGER);
CREATE FUNCTION channel_take(p_channel BIGINT, p_second TIMESTAMPTZ, p_want INTEGER, p_limit INTEGER)
RETURNS INTEGER
LANGUAGE plpgsql AS $$
DECLARE
    current INTEGER;
    granted INTEGER;
BEGIN
    INSERT INTO channel_usage (channel_id, second, used) VALUES (p_channel, p_second, 0) ON CONFLICT DO NOTHING;
    SELECT u.used INTO current FROM channel_usage u WHERE u.channel_id = p_channel AND u.second = p_second FOR UPDATE;
    granted := LEAST(p_want, GREATEST(p_limit - current, 0));
    UPDATE channel_usage u SET used = current + granted WHERE u.channel_id = p_channel AND u.second = p_second;
    -- Now and then, forget seconds long gone, so the table stays small.
    IF random() < 0.01 THEN
        DELETE FROM channel_usage u WHERE u.second < p_second - interval '1 minute';
    END IF;
    RETURN granted;
END;
$$;
