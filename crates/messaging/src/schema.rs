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
        conversation_id -> Nullable<BigInt>,
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

diesel::table! {
    chat_accounts (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        channel_id -> BigInt,
        waba_id -> Text,
        name -> Text,
        is_default -> Bool,
        quality_rating -> Nullable<Text>,
        messaging_tier -> Nullable<Text>,
        templates_count -> Integer,
        catalogues_count -> Integer,
        last_synced_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    chat_phone_numbers (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        account_id -> BigInt,
        phone_number_id -> Text,
        phone_number -> Text,
        display -> Nullable<Text>,
        is_default -> Bool,
        quality_rating -> Nullable<Text>,
        messaging_tier -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    conversations (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        account_id -> BigInt,
        phone_number_id -> Text,
        customer -> Text,
        chat_id -> Nullable<Text>,
        customer_name -> Nullable<Text>,
        last_inbound_at -> Nullable<Timestamptz>,
        window_expires_at -> Nullable<Timestamptz>,
        last_message_id -> Nullable<BigInt>,
        last_message_at -> Timestamptz,
        unread_count -> Integer,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    chat_templates (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        account_id -> BigInt,
        name -> Text,
        language -> Text,
        category -> Text,
        display_name -> Nullable<Text>,
        components -> Jsonb,
        status -> Text,
        chat_status -> Nullable<Text>,
        rejection_reason -> Nullable<Text>,
        chat_template_id -> Nullable<Text>,
        submitted -> Bool,
        queued -> Bool,
        submission_message -> Nullable<Text>,
        pending_edit -> Bool,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    sandbox_catalogue_items (catalogue_ref, retailer_id, tenant_id) {
        tenant_id -> BigInt,
        catalogue_ref -> Text,
        retailer_id -> Text,
        item -> Jsonb,
        updated_at -> Timestamptz,
    }
}

diesel::joinable!(senders -> channels (channel_id));
diesel::joinable!(chat_templates -> chat_accounts (account_id));
diesel::joinable!(chat_accounts -> channels (channel_id));
diesel::joinable!(chat_phone_numbers -> chat_accounts (account_id));
diesel::joinable!(chat_form_accounts -> chat_accounts (account_id));
diesel::table! {
    chat_groups (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        account_id -> BigInt,
        phone_number_id -> Text,
        subject -> Text,
        description -> Nullable<Text>,
        join_approval_mode -> Text,
        status -> Text,
        request_id -> Nullable<Text>,
        provider_group_id -> Nullable<Text>,
        invite_link -> Nullable<Text>,
        invite_template -> Nullable<Text>,
        invitees -> Jsonb,
        invites -> Jsonb,
        failure -> Nullable<Text>,
        participants_count -> Integer,
        last_participant_message_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        deleted_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    chat_group_participants (group_id, wa_id) {
        tenant_id -> BigInt,
        group_id -> BigInt,
        wa_id -> Text,
        joined_at -> Timestamptz,
    }
}

diesel::table! {
    chat_group_join_requests (group_id, join_request_id) {
        tenant_id -> BigInt,
        group_id -> BigInt,
        join_request_id -> Text,
        wa_id -> Text,
        state -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    chat_group_messages (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        group_id -> BigInt,
        uid -> Text,
        direction -> Text,
        participant -> Nullable<Text>,
        kind -> Text,
        body -> Nullable<Text>,
        media_url -> Nullable<Text>,
        content -> Jsonb,
        status -> Text,
        error -> Nullable<Text>,
        provider_message_id -> Nullable<Text>,
        pinned_until -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    chat_forms (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        name -> Text,
        account_id -> BigInt,
        definition -> Jsonb,
        status -> Text,
        version -> Integer,
        menu_shop_id -> Nullable<BigInt>,
        menu_language -> Nullable<Text>,
        save_to_table -> Nullable<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    chat_form_versions (form_id, version) {
        tenant_id -> BigInt,
        form_id -> BigInt,
        version -> Integer,
        definition -> Jsonb,
        published_at -> Timestamptz,
        retires_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    chat_form_accounts (form_id, account_id) {
        tenant_id -> BigInt,
        form_id -> BigInt,
        account_id -> BigInt,
        role -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    chat_form_flows (form_id, version, account_id) {
        tenant_id -> BigInt,
        form_id -> BigInt,
        version -> Integer,
        account_id -> BigInt,
        flow_id -> Nullable<Text>,
        live_status -> Nullable<Text>,
        error -> Nullable<Text>,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    chat_form_sends (token) {
        token -> Text,
        tenant_id -> BigInt,
        form_id -> BigInt,
        version -> Integer,
        account_id -> BigInt,
        conversation_id -> Nullable<BigInt>,
        message_uid -> Nullable<Text>,
        reference -> Nullable<Text>,
        source -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    chat_form_answers (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        form_id -> BigInt,
        version -> Integer,
        send_token -> Nullable<Text>,
        conversation_id -> Nullable<BigInt>,
        customer -> Nullable<Text>,
        source -> Text,
        answers -> Jsonb,
        issues -> Jsonb,
        record -> Nullable<Jsonb>,
        provider_message_id -> Nullable<Text>,
        created_at -> Timestamptz,
    }
}

// Voice (migrations/2026-12-07-000062_voice).

diesel::table! {
    voice_rates (tenant_id, prefix) {
        tenant_id -> BigInt,
        prefix -> Text,
        price_minor -> BigInt,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    calls (id) {
        id -> BigInt,
        uid -> Text,
        tenant_id -> BigInt,
        kind -> Text,
        direction -> Text,
        channel_id -> BigInt,
        caller -> Nullable<Text>,
        recipient -> Text,
        status -> Text,
        error -> Nullable<Text>,
        plan -> Jsonb,
        language -> Text,
        position -> Nullable<Text>,
        attempts -> SmallInt,
        digits -> Nullable<Text>,
        provider_call_id -> Nullable<Text>,
        provider_cost -> Nullable<Text>,
        duration_seconds -> Integer,
        billed_minutes -> Integer,
        rate_minor -> BigInt,
        price_minor -> BigInt,
        recording_url -> Nullable<Text>,
        feedback_score -> Nullable<SmallInt>,
        metadata -> Nullable<Jsonb>,
        scheduled_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        answered_at -> Nullable<Timestamptz>,
        ended_at -> Nullable<Timestamptz>,
        call_campaign_id -> Nullable<BigInt>,
    }
}

diesel::table! {
    call_campaigns (id) {
        id -> BigInt,
        uid -> Text,
        tenant_id -> BigInt,
        name -> Text,
        status -> Text,
        status_reason -> Nullable<Text>,
        contact_group_id -> BigInt,
        plan -> Jsonb,
        language -> Text,
        sender_id -> Nullable<Text>,
        calls_per_minute -> Integer,
        hours_start -> SmallInt,
        hours_end -> SmallInt,
        utc_offset_minutes -> SmallInt,
        max_attempts -> SmallInt,
        retry_minutes -> Integer,
        total_targets -> Integer,
        completed_targets -> Integer,
        failed_targets -> Integer,
        token -> Uuid,
        metadata -> Nullable<Jsonb>,
        scheduled_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        started_at -> Nullable<Timestamptz>,
        ended_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    call_campaign_targets (tenant_id, campaign_id, recipient) {
        tenant_id -> BigInt,
        campaign_id -> BigInt,
        contact_id -> BigInt,
        recipient -> Text,
        status -> Text,
        attempts -> SmallInt,
        next_at -> Timestamptz,
        call_id -> Nullable<BigInt>,
    }
}

diesel::joinable!(calls -> channels (channel_id));

diesel::allow_tables_to_appear_in_same_query!(
    channels,
    senders,
    sms_rates,
    campaigns,
    messages,
    sms_blacklist,
    chat_accounts,
    chat_phone_numbers,
    conversations,
    chat_templates,
    chat_groups,
    chat_group_participants,
    chat_group_join_requests,
    chat_group_messages,
    chat_forms,
    chat_form_versions,
    chat_form_accounts,
    chat_form_flows,
    chat_form_sends,
    chat_form_answers,
    voice_rates,
    calls,
    call_campaigns,
    call_campaign_targets
);
