// The messaging tables (migrations/2026-11-26-000004_messaging).

diesel::table! {
    channels (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        kind -> Text,
        provider -> Text,
        code -> Text,
        credentials -> Jsonb,
        throughput_per_second -> Integer,
        status -> Text,
        priority -> Integer,
        callback_token -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    senders (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        channel_id -> BigInt,
        #[sql_name = "type"]
        kind -> Text,
        value -> Text,
        label -> Nullable<Text>,
        status -> Text,
        sms_capable -> Bool,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    sms_rates (tenant_id, prefix) {
        tenant_id -> BigInt,
        prefix -> Text,
        price_minor -> BigInt,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    campaigns (id) {
        id -> BigInt,
        uid -> Text,
        tenant_id -> BigInt,
        name -> Text,
        status -> Text,
        channel_type -> Text,
        tenant_channel_id -> Nullable<BigInt>,
        channel_code -> Nullable<Text>,
        message -> Text,
        sender -> Nullable<Text>,
        scheduled_at -> Nullable<Timestamptz>,
        contact_group_id -> Nullable<BigInt>,
        total_recipients -> Integer,
        sent_count -> Integer,
        failed_count -> Integer,
        cursor -> BigInt,
        last_contact_id -> Nullable<BigInt>,
        dispatched -> Integer,
        status_reason -> Nullable<Text>,
        dispatch_token -> Uuid,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        completed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    messages (id) {
        id -> BigInt,
        uid -> Text,
        tenant_id -> BigInt,
        direction -> Text,
        channel_type -> Text,
        tenant_channel_id -> Nullable<BigInt>,
        channel_code -> Nullable<Text>,
        sender -> Nullable<Text>,
        recipient -> Text,
        body -> Text,
        status -> Text,
        media_url -> Nullable<Text>,
        media_type -> Nullable<Text>,
        gateway_message_id -> Nullable<Text>,
        error_message -> Nullable<Text>,
        metadata -> Nullable<Jsonb>,
        template_params -> Nullable<Jsonb>,
        segments -> Integer,
        encoding -> Text,
        price_minor -> BigInt,
        provider_cost -> Nullable<Text>,
        campaign_id -> Nullable<BigInt>,
        contact_id -> Nullable<BigInt>,
        scheduled_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        sent_at -> Nullable<Timestamptz>,
        delivered_at -> Nullable<Timestamptz>,
        read_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    sms_blacklist (tenant_id, number) {
        tenant_id -> BigInt,
        number -> Text,
        reason -> Nullable<Text>,
        source_message_id -> Nullable<BigInt>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    provider_callbacks (id) {
        id -> BigInt,
        channel_id -> BigInt,
        kind -> Text,
        provider_message_id -> Nullable<Text>,
        provider_status -> Nullable<Text>,
        message_id -> Nullable<BigInt>,
        outcome -> Text,
        body -> Text,
        received_at -> Timestamptz,
        tenant_id -> BigInt,
    }
}

diesel::joinable!(senders -> channels (channel_id));
diesel::allow_tables_to_appear_in_same_query!(channels, senders, sms_rates, campaigns, messages, sms_blacklist);
