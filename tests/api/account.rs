//! The Account family (contract: Endpoints, Account; issue 2, Gateway): `GET /me` answers the
//! key's own account, the key, its issuer and current permissions; `GET /balance` the wallet.

use accounts::keys::{self, KeyIssuer};
use api_tests::{json, spawn};
use kernel::TenantId;
use serde_json::Value;

const ME: &str = "/api/v3/me";
const BALANCE: &str = "/api/v3/balance";

fn sorted(names: &Value) -> Vec<String> {
    let mut names: Vec<String> = names
        .as_array()
        .unwrap_or_else(|| panic!("permissions is a list: {names:?}"))
        .iter()
        .map(|n| n.as_str().expect("a permission name").to_owned())
        .collect();
    names.sort();
    names
}

#[actix_web::test]
async fn me_describes_the_account_the_key_and_its_issuer() {
    let app = spawn().await;
    let account = app.account("all").await;
    let issued = {
        let mut conn = app.conn().await;
        keys::create(&mut conn, account.tenant, KeyIssuer::User(account.user), "Billing export", None)
            .await
            .expect("key")
    };
    let res = app.get(ME, &issued.plaintext).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    assert_eq!(res.body["status"], "success");
    let me = res.data();
    assert_eq!(me["id"], json!(account.tenant.0));
    assert_eq!(me["name"], "Acme");
    assert_eq!(me["status"], "active");
    assert_eq!(me["currency"], "TZS");
    assert_eq!(me["key"], json!({"id": issued.key.id, "name": "Billing export", "legacy": false}));
    assert_eq!(me["issuer"], json!({"id": account.user.0, "name": "Test user", "active": true}));
    assert_eq!(me["permissions"], json!(["*"]));
    // Never the key itself, nor its hash.
    let text = res.body.to_string();
    assert!(!text.contains(&issued.plaintext));
    assert!(me["key"].get("key_hash").is_none());
}

#[actix_web::test]
async fn me_lists_the_issuers_current_permissions() {
    let app = spawn().await;
    let account = app.account("contacts.view,contacts.create").await;
    let res = app.get(ME, &account.key).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    assert_eq!(sorted(&res.data()["permissions"]), ["contacts.create", "contacts.view"]);

    app.set_permissions(account.user, "contacts.view,contacts.import").await;
    let res = app.get(ME, &account.key).await;
    assert_eq!(sorted(&res.data()["permissions"]), ["contacts.import", "contacts.view"]);

    app.set_permissions(account.user, "all").await;
    let res = app.get(ME, &account.key).await;
    assert_eq!(res.data()["permissions"], json!(["*"]));
}

#[actix_web::test]
async fn me_is_always_the_keys_own_account() {
    let app = spawn().await;
    let acme = app.account("all").await;
    let globex = app.tenant("Globex").await;
    let globex_user = app.user(globex, "all").await;
    let globex_key = app.key(globex, globex_user).await;

    let res = app.get(ME, &acme.key).await;
    assert_eq!(res.data()["id"], json!(acme.tenant.0));
    assert_eq!(res.data()["name"], "Acme");
    let res = app.get(ME, &globex_key).await;
    assert_eq!(res.data()["id"], json!(globex.0));
    assert_eq!(res.data()["name"], "Globex");
    // A tenant_id in the request never selects another account: it is a member /me does not
    // read, refused.
    let res = app.get(&format!("{ME}?tenant_id={}", globex.0), &acme.key).await;
    assert_eq!(res.status, 422, "{:?}", res.body);
    assert!(res.body["errors"]["tenant_id"].is_array(), "{:?}", res.body);
    assert!(!res.body.to_string().contains("Globex"), "{:?}", res.body);
}

#[actix_web::test]
async fn me_for_a_legacy_key_has_no_issuer() {
    let app = spawn().await;
    let tenant = app.tenant("Acme").await;
    let key = app.legacy_key(tenant).await;
    let res = app.get(ME, &key).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    assert_eq!(res.data()["id"], json!(tenant.0));
    assert_eq!(res.data()["key"]["legacy"], true);
    assert_eq!(res.data()["key"]["name"], "Legacy key");
    assert_eq!(res.data()["issuer"], Value::Null);
}

#[actix_web::test]
async fn a_new_tenant_has_an_empty_prepaid_wallet() {
    let app = spawn().await;
    let account = app.account("all").await;
    let res = app.get(BALANCE, &account.key).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    assert_eq!(res.body["status"], "success");
    assert_eq!(
        res.data(),
        &json!({"balance_minor": 0, "balance": "0.00", "currency": "TZS", "billing_mode": "prepaid"})
    );
    assert!(res.data()["balance_minor"].is_i64(), "an integer, not a string or float");
}

async fn credit(pool: &store::Pool, tenant: TenantId, amount: i64) {
    let mut conn = store::connect_system(pool).await.expect("connection");
    accounts::wallet::credit(&mut conn, tenant, amount, Some("top-up")).await.expect("credit");
}

#[actix_web::test]
async fn credits_show_in_the_balance_of_that_tenant_only() {
    let app = spawn().await;
    let account = app.account("all").await;
    let other = app.account("all").await;
    credit(&app.pool, account.tenant, 150_050).await;

    let res = app.get(BALANCE, &account.key).await;
    assert_eq!(res.data()["balance_minor"], 150_050);
    assert_eq!(res.data()["balance"], "1500.50");
    assert_eq!(res.data()["currency"], "TZS");
    assert_eq!(res.data()["billing_mode"], "prepaid");

    let res = app.get(BALANCE, &other.key).await;
    assert_eq!(res.data()["balance_minor"], 0);
    assert_eq!(res.data()["balance"], "0.00");

    credit(&app.pool, account.tenant, 50).await;
    let res = app.get(BALANCE, &account.key).await;
    assert_eq!(res.data()["balance_minor"], 150_100);
    assert_eq!(res.data()["balance"], "1501.00");
}

/// Contacts sent without `country_code` take the account's calling code: 255 until an operator
/// sets another, then that one (and `GET /me` shows it).
#[actix_web::test]
async fn the_accounts_calling_code_is_used_for_contacts_without_one() {
    let app = spawn().await;
    let account = app.account("all").await;
    let group = app.post("/api/v3/contact-groups", &account.key, json!({"name": "Kenya"})).await;
    let contacts = format!("/api/v3/contact-groups/{}/contacts", group.data()["id"]);
    let res = app.post(&contacts, &account.key, json!({"PHONE": "0712345678"})).await;
    assert_eq!(res.data()["full_phone_number"], "255712345678", "{:?}", res.body);

    let mut conn = app.conn().await;
    accounts::tenants::set_default_country_code(&mut conn, account.tenant, "254").await.expect("set");
    let res = app.post(&contacts, &account.key, json!({"PHONE": "0712345678"})).await;
    assert_eq!(res.status, 201, "{:?}", res.body);
    assert_eq!(
        (res.data()["country_code"].as_str(), res.data()["full_phone_number"].as_str()),
        (Some("254"), Some("254712345678"))
    );
    assert_eq!(app.get(ME, &account.key).await.data()["default_country_code"], "254");
}
