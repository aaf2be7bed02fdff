//! Accounts against a real database: keys, issuers, tenants, wallet, modules, demo.

use accounts::keys::{self, KeyIssuer};
use accounts::modules::{self, Module};
use accounts::{demo, tenants, users, wallet};
use kernel::caller::Permissions;
use kernel::{ErrorKind, Issuer, TenantId, UserId};
use store::testing::TestDb;
use time::{Duration, OffsetDateTime};

async fn setup() -> (TestDb, store::Pool) {
    let db = TestDb::new().await;
    let pool = db.pool();
    (db, pool)
}

#[tokio::test]
async fn a_key_is_shown_once_and_stored_only_as_a_hash() {
    let (_db, pool) = setup().await;
    let mut conn = store::connect_system(&pool).await.expect("conn");
    let tenant = TenantId(tenants::create(&mut conn, "Acme", "TZS").await.expect("tenant").id);
    let user = UserId(users::create(&mut conn, tenant, "Ann", &Permissions::All).await.expect("user").id);
    let issued = keys::create(&mut conn, tenant, KeyIssuer::User(user), "CI key", None).await.expect("key");
    assert_eq!(issued.plaintext.len(), 64);
    let stored: Vec<u8> = {
        use diesel::prelude::*;
        use diesel_async::RunQueryDsl;
        accounts::schema::api_keys::table
            .find(issued.key.id)
            .select(accounts::schema::api_keys::key_hash)
            .first(&mut conn)
            .await
            .expect("row")
    };
    assert_eq!(stored, keys::hash(&issued.plaintext));
    assert_ne!(stored, issued.plaintext.as_bytes());
    let caller = keys::authenticate(&mut conn, &issued.plaintext, OffsetDateTime::now_utc()).await.expect("auth");
    assert_eq!(caller.tenant_id, tenant);
    assert!(matches!(caller.issuer, Issuer::User { id, .. } if id == user));
}

#[tokio::test]
async fn key_names_are_limited_to_160_characters() {
    let (_db, pool) = setup().await;
    let mut conn = store::connect_system(&pool).await.expect("conn");
    let tenant = TenantId(tenants::create(&mut conn, "Acme", "TZS").await.expect("tenant").id);
    let ok = "k".repeat(160);
    assert!(keys::create(&mut conn, tenant, KeyIssuer::Legacy, &ok, None).await.is_ok());
    let long = "k".repeat(161);
    let error = keys::create(&mut conn, tenant, KeyIssuer::Legacy, &long, None).await.expect_err("too long");
    assert_eq!(error.kind, ErrorKind::Validation);
    assert!(error.errors.contains_key("name"));
}

#[tokio::test]
async fn an_issuer_of_another_tenant_is_refused() {
    let (_db, pool) = setup().await;
    let mut conn = store::connect_system(&pool).await.expect("conn");
    let a = TenantId(tenants::create(&mut conn, "A", "TZS").await.expect("tenant").id);
    let b = TenantId(tenants::create(&mut conn, "B", "TZS").await.expect("tenant").id);
    let user_b = UserId(users::create(&mut conn, b, "Bo", &Permissions::All).await.expect("user").id);
    let error = keys::create(&mut conn, a, KeyIssuer::User(user_b), "x", None).await.expect_err("foreign issuer");
    assert!(error.errors.contains_key("issuer"));
}

#[tokio::test]
async fn rotation_revokes_the_old_key_and_brings_a_legacy_key_under_an_issuer() {
    let (_db, pool) = setup().await;
    let mut conn = store::connect_system(&pool).await.expect("conn");
    let now = OffsetDateTime::now_utc();
    let tenant = TenantId(tenants::create(&mut conn, "Acme", "TZS").await.expect("tenant").id);
    let user = UserId(users::create(&mut conn, tenant, "Ann", &Permissions::All).await.expect("user").id);
    let legacy = keys::create(&mut conn, tenant, KeyIssuer::Legacy, "old", None).await.expect("key");
    assert!(keys::authenticate(&mut conn, &legacy.plaintext, now).await.expect("auth").is_legacy());
    let rotated = keys::rotate(&mut conn, kernel::ApiKeyId(legacy.key.id), user, now).await.expect("rotate");
    assert_eq!(rotated.key.name, "old");
    let refused = keys::authenticate(&mut conn, &legacy.plaintext, now).await.expect_err("old key");
    assert_eq!(refused.kind, ErrorKind::Unauthenticated);
    let caller = keys::authenticate(&mut conn, &rotated.plaintext, now).await.expect("new key");
    assert!(!caller.is_legacy());
    // A revoked key cannot be rotated again.
    let again = keys::rotate(&mut conn, kernel::ApiKeyId(legacy.key.id), user, now).await.expect_err("revoked");
    assert_eq!(again.kind, ErrorKind::Conflict);
}

#[tokio::test]
async fn expiry_revocation_and_tenant_status_apply_at_once() {
    let (_db, pool) = setup().await;
    let mut conn = store::connect_system(&pool).await.expect("conn");
    let now = OffsetDateTime::now_utc();
    let tenant = TenantId(tenants::create(&mut conn, "Acme", "TZS").await.expect("tenant").id);
    let user = UserId(users::create(&mut conn, tenant, "Ann", &Permissions::All).await.expect("user").id);
    let expiring =
        keys::create(&mut conn, tenant, KeyIssuer::User(user), "x", Some(now + Duration::hours(1))).await.expect("key");
    assert!(keys::authenticate(&mut conn, &expiring.plaintext, now).await.is_ok());
    let expired =
        keys::authenticate(&mut conn, &expiring.plaintext, now + Duration::hours(1)).await.expect_err("expired");
    assert_eq!(expired.kind, ErrorKind::Unauthenticated);

    let key = keys::create(&mut conn, tenant, KeyIssuer::User(user), "y", None).await.expect("key");
    tenants::set_status(&mut conn, tenant, tenants::TenantStatus::Suspended).await.expect("suspend");
    let suspended = keys::authenticate(&mut conn, &key.plaintext, now).await.expect_err("suspended");
    assert_eq!(suspended.kind, ErrorKind::Forbidden);
    tenants::set_status(&mut conn, tenant, tenants::TenantStatus::Active).await.expect("activate");
    keys::revoke(&mut conn, kernel::ApiKeyId(key.key.id), now).await.expect("revoke");
    let revoked = keys::authenticate(&mut conn, &key.plaintext, now).await.expect_err("revoked");
    assert_eq!(revoked.kind, ErrorKind::Unauthenticated);
    assert!(keys::authenticate(&mut conn, "svc_mcp_abc", now).await.is_err());
}

#[tokio::test]
async fn permissions_are_read_fresh_and_unknown_names_refused() {
    let (_db, pool) = setup().await;
    let mut conn = store::connect_system(&pool).await.expect("conn");
    let now = OffsetDateTime::now_utc();
    let tenant = TenantId(tenants::create(&mut conn, "Acme", "TZS").await.expect("tenant").id);
    assert!(users::parse_permissions("contacts.view,contacts.fly").is_err());
    let perms = users::parse_permissions("contacts.view, data.customers.pii").expect("valid");
    let user = UserId(users::create(&mut conn, tenant, "Ann", &perms).await.expect("user").id);
    let key = keys::create(&mut conn, tenant, KeyIssuer::User(user), "k", None).await.expect("key");
    let caller = keys::authenticate(&mut conn, &key.plaintext, now).await.expect("auth");
    assert!(caller.require(kernel::Permission::CONTACTS_VIEW).is_ok());
    assert!(caller.require(kernel::Permission::CONTACTS_EDIT).is_err());
    users::set_permissions(&mut conn, user, &users::parse_permissions("contacts.edit").expect("valid"))
        .await
        .expect("set");
    let caller = keys::authenticate(&mut conn, &key.plaintext, now).await.expect("auth");
    assert!(caller.require(kernel::Permission::CONTACTS_VIEW).is_err());
    assert!(caller.require(kernel::Permission::CONTACTS_EDIT).is_ok());
    users::deactivate(&mut conn, user).await.expect("deactivate");
    let caller = keys::authenticate(&mut conn, &key.plaintext, now).await.expect("auth");
    assert_eq!(caller.require(kernel::Permission::CONTACTS_EDIT).expect_err("inactive").kind, ErrorKind::Forbidden);
    assert!(caller.require_issuer().is_err());
}

#[tokio::test]
async fn the_wallet_starts_prepaid_and_keeps_a_ledger() {
    let (_db, pool) = setup().await;
    let mut conn = store::connect_system(&pool).await.expect("conn");
    let tenant = TenantId(tenants::create(&mut conn, "Acme", "KES").await.expect("tenant").id);
    let w = wallet::get(&mut conn, tenant).await.expect("wallet");
    assert_eq!((w.balance_minor, w.currency.as_str(), w.billing_mode.as_str()), (0, "KES", "prepaid"));
    wallet::credit(&mut conn, tenant, 1000, Some("top-up")).await.expect("credit");
    let w = wallet::credit(&mut conn, tenant, 250, None).await.expect("credit");
    assert_eq!(w.balance_minor, 1250);
    assert!(wallet::credit(&mut conn, tenant, 0, None).await.is_err());
    let ledger: Vec<(String, i64, i64)> = {
        use accounts::schema::wallet_ledger::dsl::*;
        use diesel::prelude::*;
        use diesel_async::RunQueryDsl;
        wallet_ledger
            .filter(tenant_id.eq(tenant.0))
            .order(id)
            .select((kind, amount_minor, balance_after))
            .load(&mut conn)
            .await
            .expect("ledger")
    };
    assert_eq!(ledger, vec![("credit".into(), 1000, 1000), ("credit".into(), 250, 1250)]);
    assert!(tenants::create(&mut conn, "Bad", "tzs").await.is_err());
}

#[tokio::test]
async fn modules_are_on_until_switched_off() {
    let (_db, pool) = setup().await;
    let mut conn = store::connect_system(&pool).await.expect("conn");
    let tenant = TenantId(tenants::create(&mut conn, "Acme", "TZS").await.expect("tenant").id);
    assert!(modules::is_enabled(&mut conn, tenant, Module::Leads).await.expect("read"));
    modules::set(&mut conn, tenant, Module::Leads, false).await.expect("off");
    assert!(!modules::is_enabled(&mut conn, tenant, Module::Leads).await.expect("read"));
    assert!(modules::is_enabled(&mut conn, tenant, Module::Forms).await.expect("read"));
    modules::set(&mut conn, tenant, Module::Leads, true).await.expect("on");
    assert!(modules::is_enabled(&mut conn, tenant, Module::Leads).await.expect("read"));
}

#[tokio::test]
async fn the_demo_account_is_made_once_and_its_key_reused() {
    let (_db, pool) = setup().await;
    let mut conn = store::connect_system(&pool).await.expect("conn");
    let now = OffsetDateTime::now_utc();
    let first = demo::ensure(&mut conn, None, now).await.expect("demo");
    assert!(first.new_key);
    let second = demo::ensure(&mut conn, Some(&first.key), now).await.expect("demo");
    assert_eq!(
        (second.tenant_id, second.user_id, second.key.as_str()),
        (first.tenant_id, first.user_id, first.key.as_str())
    );
    assert!(!second.new_key);
    let third = demo::ensure(&mut conn, Some("not-a-key"), now).await.expect("demo");
    assert_eq!(third.tenant_id, first.tenant_id);
    assert!(third.new_key);
    let caller = keys::authenticate(&mut conn, &third.key, now).await.expect("auth");
    assert!(caller.require(kernel::Permission::WEBHOOKS_MANAGE).is_ok());
}

#[tokio::test]
async fn the_default_calling_code_is_255_until_set() {
    let (_db, pool) = setup().await;
    let mut conn = store::connect_system(&pool).await.expect("conn");
    let tenant = tenants::create(&mut conn, "Acme", "TZS").await.expect("tenant");
    assert_eq!(tenant.default_country_code, "255");
    let tenant = TenantId(tenant.id);
    let changed = tenants::set_default_country_code(&mut conn, tenant, "+254").await.expect("set");
    assert_eq!(changed.default_country_code, "254");
    for bad in ["", "0255", "2555", "25a"] {
        assert!(tenants::set_default_country_code(&mut conn, tenant, bad).await.is_err(), "{bad:?}");
    }
}

#[tokio::test]
async fn a_user_is_read_within_its_tenant_only() {
    let (_db, pool) = setup().await;
    let mut conn = store::connect_system(&pool).await.expect("conn");
    let acme = TenantId(tenants::create(&mut conn, "Acme", "TZS").await.expect("tenant").id);
    let globex = TenantId(tenants::create(&mut conn, "Globex", "TZS").await.expect("tenant").id);
    let ann = users::create(&mut conn, acme, "Ann", &Permissions::All).await.expect("user").id;
    let bob = users::create(&mut conn, globex, "Bob", &Permissions::All).await.expect("user").id;

    assert_eq!(users::of_tenant(&mut conn, acme, UserId(ann)).await.expect("ann").name, "Ann");
    let other = users::of_tenant(&mut conn, acme, UserId(bob)).await.expect_err("another tenant's user");
    assert_eq!(other.kind, ErrorKind::NotFound);

    let names = users::names(&mut conn, acme, &[ann, bob, 999_999]).await.expect("names");
    assert_eq!(names.into_iter().collect::<Vec<_>>(), vec![(ann, "Ann".to_owned())]);
    assert!(users::names(&mut conn, acme, &[]).await.expect("names").is_empty());
}
