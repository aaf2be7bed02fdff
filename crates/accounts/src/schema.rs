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
        email -> Nullable<Text>,
        password_hash -> Nullable<Text>,
        failed_sign_ins -> Integer,
        last_failed_sign_in_at -> Nullable<Timestamptz>,
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

// migrations/2026-11-28-000050_oauth

diesel::table! {
    oauth_clients (id) {
        id -> BigInt,
        client_id -> Text,
        kind -> Text,
        client_name -> Text,
        redirect_uris -> Array<Text>,
        metadata -> Jsonb,
        fetched_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    sign_ins (id) {
        id -> BigInt,
        token_hash -> Bytea,
        user_id -> BigInt,
        expires_at -> Timestamptz,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    oauth_grants (id) {
        id -> BigInt,
        client_id -> BigInt,
        tenant_id -> BigInt,
        user_id -> BigInt,
        scopes -> Array<Text>,
        resource -> Text,
        redirect_uri -> Text,
        code_challenge -> Text,
        revoked_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    oauth_tokens (id) {
        id -> BigInt,
        grant_id -> BigInt,
        kind -> Text,
        token_hash -> Bytea,
        scopes -> Nullable<Array<Text>>,
        expires_at -> Timestamptz,
        used_at -> Nullable<Timestamptz>,
        revoked_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::joinable!(api_keys -> tenants (tenant_id));
diesel::joinable!(users -> tenants (tenant_id));
diesel::joinable!(sign_ins -> users (user_id));
diesel::joinable!(oauth_grants -> oauth_clients (client_id));
diesel::joinable!(oauth_grants -> tenants (tenant_id));
diesel::joinable!(oauth_grants -> users (user_id));
diesel::joinable!(oauth_tokens -> oauth_grants (grant_id));
diesel::joinable!(mcp_connections -> tenants (tenant_id));
diesel::joinable!(mcp_connections -> users (user_id));
diesel::joinable!(api_keys -> users (user_id));
diesel::allow_tables_to_appear_in_same_query!(
    tenants,
    users,
    api_keys,
    mcp_connections,
    oauth_clients,
    sign_ins,
    oauth_grants,
    oauth_tokens,
    wallets,
    wallet_ledger,
    tenant_modules
);
