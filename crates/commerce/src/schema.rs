// The commerce tables (migrations/2026-11-26-000008_commerce).

diesel::table! {
    catalogues (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        name -> Text,
        description -> Nullable<Text>,
        vertical -> Nullable<Text>,
        default_currency -> Nullable<Text>,
        sku_prefix -> Nullable<Text>,
        stock_policy -> Text,
        source_of_truth -> Text,
        allow_backorder -> Bool,
        reservation_ttl_hours -> Integer,
        low_stock_threshold -> Nullable<Integer>,
        meta_catalogue_id -> Nullable<Text>,
        is_connected_to_waba -> Bool,
        is_catalogue_visible -> Bool,
        is_cart_enabled -> Bool,
        channels -> Jsonb,
        sku_counter -> BigInt,
        last_synced_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        waba_id -> Nullable<Text>,
        storefront_token -> Nullable<Text>,
    }
}

diesel::table! {
    catalogue_brands (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        catalogue_id -> BigInt,
        name -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    catalogue_categories (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        catalogue_id -> BigInt,
        name -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    products (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        catalogue_id -> BigInt,
        sku -> Text,
        name -> Text,
        price -> BigInt,
        sale_price -> Nullable<BigInt>,
        description -> Nullable<Text>,
        currency -> Text,
        image_url -> Nullable<Text>,
        inventory -> Nullable<Integer>,
        reserved -> Integer,
        availability -> Nullable<Text>,
        brand_id -> Nullable<BigInt>,
        category_id -> Nullable<BigInt>,
        low_stock_alerted_on -> Nullable<Date>,
        retired_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    product_listings (product_id, platform) {
        product_id -> BigInt,
        platform -> Text,
        state -> Text,
        problem -> Nullable<Text>,
        updated_at -> Timestamptz,
        tenant_id -> BigInt,
        sync_id -> Nullable<BigInt>,
        blocked_reported -> Bool,
    }
}

diesel::table! {
    stock_movements (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        product_id -> BigInt,
        kind -> Text,
        quantity -> Integer,
        inventory -> Nullable<Integer>,
        reserved -> Integer,
        cause -> Text,
        order_id -> Nullable<BigInt>,
        sync_id -> Nullable<BigInt>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    catalogue_syncs (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        catalogue_id -> BigInt,
        kind -> Text,
        mode -> Text,
        status -> Text,
        payload -> Nullable<Text>,
        received -> Integer,
        created -> Integer,
        updated -> Integer,
        unchanged -> Integer,
        rejected -> Integer,
        retired -> Integer,
        platforms -> Jsonb,
        problems -> Jsonb,
        problems_truncated -> Bool,
        failure -> Nullable<Text>,
        created_at -> Timestamptz,
        started_at -> Nullable<Timestamptz>,
        finished_at -> Nullable<Timestamptz>,
        feed_id -> Nullable<BigInt>,
    }
}

diesel::table! {
    catalogue_feeds (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        catalogue_id -> BigInt,
        url -> Text,
        schedule -> Text,
        mapping -> Jsonb,
        mode -> Text,
        enabled -> Bool,
        consecutive_failures -> Integer,
        last_sync_id -> Nullable<BigInt>,
        last_pulled_at -> Nullable<Timestamptz>,
        last_failure -> Nullable<Text>,
        next_pull_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    orders (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        catalogue_id -> BigInt,
        platform -> Text,
        status -> Text,
        stock_policy -> Text,
        hold -> Text,
        hold_expires_at -> Nullable<Timestamptz>,
        reservation_ttl_hours -> Integer,
        allow_backorder -> Bool,
        customer_handle -> Nullable<Text>,
        customer_name -> Nullable<Text>,
        total_minor -> BigInt,
        currency -> Text,
        conversation_id -> Nullable<BigInt>,
        priced_at -> Timestamptz,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        payment_status -> Text,
    }
}

diesel::table! {
    order_lines (order_id, position) {
        order_id -> BigInt,
        position -> Integer,
        product_id -> Nullable<BigInt>,
        sku -> Text,
        name -> Nullable<Text>,
        quantity -> Integer,
        unit_price_minor -> Nullable<BigInt>,
        line_total_minor -> Nullable<BigInt>,
        currency -> Nullable<Text>,
        reserved -> Integer,
        stock_short -> Bool,
        unresolved -> Bool,
        tenant_id -> BigInt,
    }
}

diesel::table! {
    carts (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        catalogue_id -> BigInt,
        code -> Text,
        token -> Text,
        status -> Text,
        items -> Jsonb,
        offer -> Array<BigInt>,
        subtotal_minor -> BigInt,
        currency -> Text,
        note -> Nullable<Text>,
        category -> Nullable<Text>,
        problems -> Jsonb,
        conversation_id -> Nullable<BigInt>,
        customer -> Nullable<Text>,
        message_id -> Nullable<Text>,
        order_id -> Nullable<BigInt>,
        expires_at -> Timestamptz,
        submitted_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::joinable!(products -> catalogues (catalogue_id));
diesel::joinable!(order_lines -> orders (order_id));
diesel::allow_tables_to_appear_in_same_query!(
    catalogues,
    catalogue_brands,
    catalogue_categories,
    products,
    product_listings,
    stock_movements,
    catalogue_syncs,
    catalogue_feeds,
    carts,
    orders,
    order_lines,
);

diesel::joinable!(products -> catalogue_brands (brand_id));
diesel::joinable!(products -> catalogue_categories (category_id));
