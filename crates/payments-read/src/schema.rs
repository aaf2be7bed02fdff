// The payments tables (migration 000058).

diesel::table! {
    payments (id) {
        id -> Uuid,
        tenant_id -> BigInt,
        reference -> Text,
        state -> Text,
        amount_minor -> BigInt,
        currency -> Text,
        refunded_minor -> BigInt,
        refunding_minor -> BigInt,
        payer -> Nullable<Text>,
        method -> Text,
        provider -> Text,
        provider_request_id -> Nullable<Text>,
        provider_receipt -> Nullable<Text>,
        attempts -> Integer,
        last_error -> Nullable<Text>,
        expires_at -> Nullable<Timestamptz>,
        settled_at -> Nullable<Timestamptz>,
        subject_type -> Nullable<Text>,
        subject_id -> Nullable<Text>,
        checkout_token -> Nullable<Text>,
        callback_token -> Text,
        refund_of -> Nullable<Uuid>,
        reason -> Nullable<Text>,
        created_by -> Jsonb,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    payment_timeline (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        payment_id -> Uuid,
        old_state -> Nullable<Text>,
        new_state -> Text,
        source -> Text,
        message -> Nullable<Text>,
        at -> Timestamptz,
    }
}

diesel::table! {
    ledger_entries (entry_no) {
        entry_no -> BigInt,
        tenant_id -> BigInt,
        payment_id -> Uuid,
        kind -> Text,
        direction -> Text,
        account -> Text,
        amount_minor -> BigInt,
        currency -> Text,
        at -> Timestamptz,
    }
}

diesel::allow_tables_to_appear_in_same_query!(payments, payment_timeline, ledger_entries);
