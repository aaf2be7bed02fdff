// The contacts tables (migrations/2026-11-25-000003_contacts).

diesel::table! {
    contact_groups (id) {
        id -> BigInt,
        uid -> Uuid,
        tenant_id -> BigInt,
        name -> Text,
        status -> Text,
        custom_fields -> Jsonb,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    contacts (id) {
        id -> BigInt,
        uid -> Text,
        tenant_id -> BigInt,
        group_id -> BigInt,
        name -> Text,
        country_code -> Text,
        phone_number -> Text,
        full_phone_number -> Text,
        is_subscribed -> Bool,
        custom_field_values -> Jsonb,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::joinable!(contacts -> contact_groups (group_id));
diesel::allow_tables_to_appear_in_same_query!(contact_groups, contacts);
