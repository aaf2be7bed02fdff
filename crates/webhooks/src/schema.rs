// The webhooks tables (migrations/2026-11-26-000006_webhooks).

diesel::table! {
    webhooks (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        url -> Text,
        events -> Array<Text>,
        filters -> Nullable<Jsonb>,
        headers -> Jsonb,
        secret -> Text,
        consecutive_failures -> Integer,
        paused_at -> Nullable<Timestamptz>,
        paused_reason -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        url_changed_at -> Timestamptz,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> Uuid,
        tenant_id -> BigInt,
        webhook_id -> BigInt,
        event_id -> Uuid,
        event -> Text,
        state -> Text,
        attempts -> Integer,
        next_attempt_at -> Nullable<Timestamptz>,
        locked_by -> Nullable<Uuid>,
        locked_until -> Nullable<Timestamptz>,
        last_status -> Nullable<Integer>,
        last_error -> Nullable<Text>,
        replay_of -> Nullable<Uuid>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    webhook_attempts (delivery_id, number) {
        delivery_id -> Uuid,
        number -> Integer,
        attempted_at -> Timestamptz,
        status -> Nullable<Integer>,
        duration_ms -> Integer,
        error -> Nullable<Text>,
        response_excerpt -> Nullable<Text>,
        tenant_id -> BigInt,
    }
}

diesel::table! {
    webhook_notifications (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        webhook_id -> BigInt,
        kind -> Text,
        message -> Text,
        created_at -> Timestamptz,
    }
}

diesel::joinable!(webhook_deliveries -> webhooks (webhook_id));
diesel::joinable!(webhook_attempts -> webhook_deliveries (delivery_id));
diesel::allow_tables_to_appear_in_same_query!(webhooks, webhook_deliveries, webhook_attempts);
