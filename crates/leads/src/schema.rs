// The leads tables (migrations/2026-11-26-000007_leads).

diesel::table! {
    leads (id) {
        id -> Uuid,
        tenant_id -> BigInt,
        name -> Nullable<Text>,
        title -> Nullable<Text>,
        company -> Nullable<Text>,
        phone -> Nullable<Text>,
        email -> Nullable<Text>,
        location -> Nullable<Text>,
        stage -> Text,
        closed_at -> Nullable<Timestamptz>,
        archived_at -> Nullable<Timestamptz>,
        lost_reason -> Nullable<Text>,
        interest -> Nullable<Text>,
        estimated_value_cents -> Nullable<BigInt>,
        currency -> Text,
        score -> Nullable<Integer>,
        score_reason -> Nullable<Text>,
        summary -> Nullable<Text>,
        source_channel -> Nullable<Text>,
        source_detail -> Nullable<Text>,
        assigned_to -> Nullable<BigInt>,
        next_action -> Nullable<Text>,
        next_action_at -> Nullable<Timestamptz>,
        created_by_kind -> Text,
        created_by_id -> Nullable<BigInt>,
        last_activity_at -> Timestamptz,
        sources -> Jsonb,
        custom_fields -> Jsonb,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    lead_identities (tenant_id, kind, value) {
        tenant_id -> BigInt,
        kind -> Text,
        value -> Text,
        lead_id -> Uuid,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    lead_labels (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        name -> Text,
        color -> Text,
        description -> Nullable<Text>,
        ai_assignable -> Bool,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    lead_label_links (lead_id, label_id) {
        lead_id -> Uuid,
        label_id -> BigInt,
        created_at -> Timestamptz,
        tenant_id -> BigInt,
    }
}

diesel::table! {
    lead_activities (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        lead_id -> Uuid,
        kind -> Text,
        details -> Jsonb,
        reason -> Nullable<Text>,
        actor_kind -> Text,
        actor_id -> Nullable<BigInt>,
        source_kind -> Text,
        source_id -> Nullable<Text>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    lead_fields (tenant_id, key) {
        tenant_id -> BigInt,
        key -> Text,
        label -> Text,
        #[sql_name = "type"]
        kind -> Text,
        options -> Array<Text>,
        created_at -> Timestamptz,
    }
}

diesel::joinable!(lead_label_links -> leads (lead_id));
diesel::joinable!(lead_label_links -> lead_labels (label_id));
diesel::allow_tables_to_appear_in_same_query!(leads, lead_identities, lead_labels, lead_label_links, lead_activities);

diesel::table! {
    lead_pending_updates (lead_id) {
        lead_id -> Uuid,
        tenant_id -> BigInt,
        changes -> Jsonb,
        actor -> Jsonb,
        first_at -> Timestamptz,
    }
}
