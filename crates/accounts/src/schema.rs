// The accounts tables (migrations/2026-11-25-000002_accounts).

diesel::table! {
    tenants (id) {
        id -> BigInt,
        uid -> Uuid,
        name -> Text,
        status -> Text,
        currency -> Text,
        default_country_code -> Text,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    users (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        name -> Text,
        active -> Bool,
        all_permissions -> Bool,
        permissions -> Array<Text>,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    api_keys (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        user_id -> Nullable<BigInt>,
        legacy -> Bool,
        name -> Text,
        key_hash -> Bytea,
        prefix -> Text,
        expires_at -> Nullable<Timestamptz>,
        revoked_at -> Nullable<Timestamptz>,
        replaced_by -> Nullable<BigInt>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    wallets (tenant_id) {
        tenant_id -> BigInt,
        balance_minor -> BigInt,
        currency -> Text,
        billing_mode -> Text,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    wallet_ledger (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        kind -> Text,
        amount_minor -> BigInt,
        balance_after -> BigInt,
        note -> Nullable<Text>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    tenant_modules (tenant_id, module) {
        tenant_id -> BigInt,
        module -> Text,
        enabled -> Bool,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    mcp_connections (id) {
        id -> BigInt,
        tenant_id -> BigInt,
        user_id -> BigInt,
        name -> Text,
        token_hash -> Bytea,
        prefix -> Text,
        scopes -> Array<Text>,
        revoked_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::joinable!(api_keys -> tenants (tenant_id));
diesel::joinable!(mcp_connections -> tenants (tenant_id));
diesel::joinable!(mcp_connections -> users (user_id));
diesel::joinable!(api_keys -> users (user_id));
diesel::allow_tables_to_appear_in_same_query!(
    tenants,
    users,
    api_keys,
    mcp_connections,
    wallets,
    wallet_ledger,
    tenant_modules
);
