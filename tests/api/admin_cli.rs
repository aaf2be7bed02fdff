//! The admin CLI (issue 2, Accounts and the admin CLI): what an operator does, one value per
//! line on stdout or a JSON object with `--json`, and its effect seen through HTTP.
//!
//! The commands are built as clap would parse them and run through `gateway::cli::admin::run`
//! against the test's database (this crate does not depend on clap, so argument parsing
//! itself is not exercised here).

use accounts::modules::Module;
use api_tests::{json, spawn};
use gateway::cli::admin::{
    Admin, AdminCommand, AutomationCommand, KeyCommand, McpConnectionCommand, OperationCommand, PaymentCommand, Switch,
    TenantCommand, UserCommand, WalletCommand, run,
};
use kernel::{ErrorKind, TenantId};
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

use crate::framework::assert_error;

const ME: &str = "/api/v3/me";
const GROUPS: &str = "/api/v3/contact-groups";

/// The environment's configuration, pointed at the test's database.
pub fn config(url: &str) -> gateway::config::Config {
    let mut config = gateway::config::Config::from_env().expect("configuration");
    config.database_url = url.to_owned();
    config
}

pub async fn admin(url: &str, command: AdminCommand) -> Result<String, kernel::Error> {
    run(Admin { json: false, command }, &config(url)).await
}

pub async fn admin_json(url: &str, command: AdminCommand) -> Value {
    let out = run(Admin { json: true, command }, &config(url)).await.expect("command");
    serde_json::from_str(&out).unwrap_or_else(|_| panic!("--json prints JSON, got {out:?}"))
}

/// The single value a plain command prints, as an id.
fn id(out: &str) -> i64 {
    assert_eq!(out.lines().count(), 1, "one value per line: {out:?}");
    out.trim().parse().unwrap_or_else(|_| panic!("an id, got {out:?}"))
}

fn tenant_create(name: &str) -> AdminCommand {
    AdminCommand::Tenant(TenantCommand::Create { name: name.to_owned(), currency: "TZS".to_owned() })
}

fn user_create(tenant: i64, permissions: &str) -> AdminCommand {
    AdminCommand::User(UserCommand::Create { tenant, name: "Operator".to_owned(), permissions: permissions.to_owned() })
}

fn key_create(tenant: i64, issuer: Option<i64>) -> AdminCommand {
    AdminCommand::Key(KeyCommand::Create {
        tenant,
        issuer,
        legacy: issuer.is_none(),
        name: "API key".to_owned(),
        expires_at: None,
    })
}

/// A tenant, a user with every permission and their key, all made with the CLI.
async fn setup(url: &str) -> (i64, i64, Value) {
    let tenant = id(&admin(url, tenant_create("Acme")).await.expect("tenant"));
    let user = id(&admin(url, user_create(tenant, "all")).await.expect("user"));
    let key = admin_json(url, key_create(tenant, Some(user))).await;
    (tenant, user, key)
}

#[actix_web::test]
async fn tenant_create_prints_the_id_or_json() {
    let app = spawn().await;
    let url = app.db.url();
    let out = admin(url, tenant_create("Acme")).await.expect("tenant create");
    let tenant = id(&out);
    let mut conn = app.conn().await;
    let stored = accounts::tenants::get(&mut conn, TenantId(tenant)).await.expect("tenant exists");
    assert_eq!((stored.name.as_str(), stored.currency.as_str(), stored.status.as_str()), ("Acme", "TZS", "active"));

    let value = admin_json(url, tenant_create("Globex")).await;
    let other = value["id"].as_i64().expect("id in the JSON");
    assert_ne!(other, tenant);
    assert_eq!(value["name"], "Globex");
    assert_eq!(value["currency"], "TZS");

    let err = admin(url, AdminCommand::Tenant(TenantCommand::Create { name: "X".into(), currency: "tzs".into() }))
        .await
        .expect_err("a bad currency is refused");
    assert_eq!(err.kind, ErrorKind::Validation);
}

#[actix_web::test]
async fn user_create_refuses_unknown_permissions() {
    let app = spawn().await;
    let url = app.db.url();
    let tenant = id(&admin(url, tenant_create("Acme")).await.expect("tenant"));
    let err = admin(url, user_create(tenant, "contacts.view,bogus")).await.expect_err("bogus is refused");
    assert_eq!(err.kind, ErrorKind::Validation);
    assert!(err.errors.contains_key("permissions"), "{err:?}");

    let value = admin_json(url, user_create(tenant, "contacts.view,contacts.create")).await;
    assert!(value["id"].is_i64(), "{value}");
    assert_eq!(value["tenant_id"], tenant);
    let err = admin(url, user_create(999_999, "all")).await.expect_err("an unknown tenant is refused");
    assert_eq!(err.kind, ErrorKind::NotFound);
}

#[actix_web::test]
async fn key_create_with_an_issuer_prints_a_key_that_authenticates() {
    let app = spawn().await;
    let url = app.db.url();
    let tenant = id(&admin(url, tenant_create("Acme")).await.expect("tenant"));
    let user = id(&admin(url, user_create(tenant, "all")).await.expect("user"));

    let key = admin(url, key_create(tenant, Some(user))).await.expect("key create");
    assert_eq!(key.lines().count(), 1);
    assert_eq!(key.len(), 64, "{key:?}");
    assert!(key.bytes().all(|b| b.is_ascii_alphanumeric()), "{key:?}");
    let me = app.get(ME, &key).await;
    assert_eq!(me.status, 200, "{:?}", me.body);
    assert_eq!(me.data()["id"], tenant);
    assert_eq!(me.data()["issuer"]["id"], user);
    assert_eq!(me.data()["key"]["legacy"], false);
    assert_eq!(app.get(GROUPS, &key).await.status, 200);

    let value = admin_json(url, key_create(tenant, Some(user))).await;
    let plaintext = value["key"].as_str().expect("the key in the JSON");
    assert_eq!(plaintext.len(), 64);
    let me = app.get(ME, plaintext).await;
    assert_eq!(me.data()["key"]["id"], value["id"], "JSON id is the key's id");
    assert!(value.get("key_hash").is_none(), "the hash is never printed: {value}");
}

#[actix_web::test]
async fn key_create_legacy_and_with_an_expiry() {
    let app = spawn().await;
    let url = app.db.url();
    let tenant = id(&admin(url, tenant_create("Acme")).await.expect("tenant"));
    let user = id(&admin(url, user_create(tenant, "all")).await.expect("user"));

    let legacy = admin(url, key_create(tenant, None)).await.expect("legacy key");
    assert_eq!(legacy.len(), 64);
    let me = app.get(ME, &legacy).await;
    assert_eq!(me.status, 200, "{:?}", me.body);
    assert_eq!(me.data()["key"]["legacy"], true);
    assert_error(&app.get(GROUPS, &legacy).await, 403);

    let expiry = |at: OffsetDateTime| {
        AdminCommand::Key(KeyCommand::Create {
            tenant,
            issuer: Some(user),
            legacy: false,
            name: "Temporary".to_owned(),
            expires_at: Some(at.format(&Rfc3339).expect("rfc3339")),
        })
    };
    let soon = admin(url, expiry(app.clock.now() + Duration::hours(1))).await.expect("key");
    let past = admin(url, expiry(app.clock.now() - Duration::hours(1))).await.expect("key");
    assert_eq!(app.get(ME, &soon).await.status, 200);
    assert_error(&app.get(ME, &past).await, 401);
    app.clock.advance(Duration::hours(2));
    assert_error(&app.get(ME, &soon).await, 401);

    let err = admin(
        url,
        AdminCommand::Key(KeyCommand::Create {
            tenant,
            issuer: Some(user),
            legacy: false,
            name: "Bad".to_owned(),
            expires_at: Some("tomorrow".to_owned()),
        }),
    )
    .await
    .expect_err("not RFC 3339");
    assert!(err.errors.contains_key("expires_at"), "{err:?}");
}

#[actix_web::test]
async fn key_revoke_stops_the_key() {
    let app = spawn().await;
    let url = app.db.url();
    let (_, _, key) = setup(url).await;
    let plaintext = key["key"].as_str().expect("key");
    let key_id = key["id"].as_i64().expect("id");
    assert_eq!(app.get(ME, plaintext).await.status, 200);
    let out = admin(url, AdminCommand::Key(KeyCommand::Revoke { key: key_id })).await.expect("revoke");
    assert_eq!(id(&out), key_id);
    assert_error(&app.get(ME, plaintext).await, 401);
}

#[actix_web::test]
async fn mcp_connection_create_prints_the_token_and_revoke_stops_it() {
    let app = spawn().await;
    let url = app.db.url();
    let (tenant, user, _) = setup(url).await;
    let create = |scopes: &str| {
        AdminCommand::McpConnection(McpConnectionCommand::Create {
            tenant,
            issuer: user,
            scopes: scopes.to_owned(),
            name: "Claude".to_owned(),
        })
    };
    let refused = admin(url, create("mcp:contacts")).await.expect_err("no mcp:use");
    assert_eq!(refused.kind, ErrorKind::Validation);
    let refused = admin(url, create("mcp:use mcp:everything")).await.expect_err("unknown scope");
    assert!(refused.errors.contains_key("scopes"), "{refused:?}");

    let token = admin(url, create("mcp:use mcp:contacts")).await.expect("create");
    assert!(token.trim().starts_with("svc_mcp_") && token.lines().count() == 1, "{token:?}");
    let made = admin_json(url, create("mcp:contacts,mcp:use mcp:write")).await;
    let secret = made["token"].as_str().expect("token");
    assert!(secret.starts_with("svc_mcp_") && made["id"].is_i64(), "{made}");
    assert_eq!(made["scopes"], json!(["mcp:contacts", "mcp:use", "mcp:write"]));
    let stored = api_tests::sql_rows(&app.pool, "SELECT encode(token_hash, 'hex') AS hash FROM mcp_connections").await;
    assert!(stored.iter().all(|row| row["hash"].as_str().is_some_and(|h| h.len() == 64)), "only hashes are kept");

    let out =
        admin(url, AdminCommand::McpConnection(McpConnectionCommand::Revoke { id: made["id"].as_i64().expect("id") }))
            .await
            .expect("revoke");
    assert_eq!(id(&out), made["id"].as_i64().expect("id"));
    let refused = accounts::mcp_connections::authenticate(&mut *app.conn().await, secret, app.clock.now())
        .await
        .expect_err("revoked");
    assert_eq!(refused.kind, ErrorKind::Unauthenticated);
}

#[actix_web::test]
async fn key_rotate_issues_a_new_key_and_stops_the_old() {
    let app = spawn().await;
    let url = app.db.url();
    let (tenant, user, _) = setup(url).await;
    let legacy = admin_json(url, key_create(tenant, None)).await;
    let old = legacy["key"].as_str().expect("key");
    let out =
        admin(url, AdminCommand::Key(KeyCommand::Rotate { key: legacy["id"].as_i64().expect("id"), issuer: user }))
            .await
            .expect("rotate");
    assert_eq!(out.len(), 64, "the new plaintext: {out:?}");
    assert_ne!(out, old);
    assert_error(&app.get(ME, old).await, 401);
    let res = app.get(GROUPS, &out).await;
    assert_eq!(res.status, 200, "the new key is under the permission model: {:?}", res.body);
    assert_eq!(app.get(ME, &out).await.data()["issuer"]["id"], user);
}

#[actix_web::test]
async fn tenant_set_status_applies_to_the_next_request() {
    let app = spawn().await;
    let url = app.db.url();
    let (tenant, _, key) = setup(url).await;
    let key = key["key"].as_str().expect("key");
    let set = |status: &str| AdminCommand::Tenant(TenantCommand::SetStatus { tenant, status: status.to_owned() });

    assert_eq!(admin(url, set("suspended")).await.expect("suspend"), "suspended");
    assert_error(&app.get(ME, key).await, 403);
    assert_eq!(admin(url, set("inactive")).await.expect("deactivate"), "inactive");
    assert_error(&app.get(ME, key).await, 403);
    assert_eq!(admin(url, set("active")).await.expect("activate"), "active");
    assert_eq!(app.get(ME, key).await.status, 200);

    let err = admin(url, set("paused")).await.expect_err("unknown status");
    assert_eq!(err.kind, ErrorKind::Validation);
    assert_eq!(app.get(ME, key).await.status, 200, "a refused command changes nothing");
}

#[actix_web::test]
async fn tenant_set_country_code_prints_the_code_and_refuses_nonsense() {
    let app = spawn().await;
    let url = app.db.url();
    let (tenant, _, key) = setup(url).await;
    let key = key["key"].as_str().expect("key");
    let set = |code: &str| AdminCommand::Tenant(TenantCommand::SetCountryCode { tenant, code: code.to_owned() });
    assert_eq!(admin(url, set("254")).await.expect("set"), "254");
    assert_eq!(app.get(ME, key).await.data()["default_country_code"], "254");
    let err = admin(url, set("2x")).await.expect_err("not digits");
    assert_eq!(err.kind, ErrorKind::Validation);
}

#[actix_web::test]
async fn user_set_permissions_and_deactivate_apply_to_the_users_keys() {
    let app = spawn().await;
    let url = app.db.url();
    let (_, user, key) = setup(url).await;
    let key = key["key"].as_str().expect("key");
    assert_eq!(app.get(GROUPS, key).await.status, 200);

    let set =
        |permissions: &str| AdminCommand::User(UserCommand::SetPermissions { user, permissions: permissions.into() });
    assert_eq!(id(&admin(url, set("contacts.create")).await.expect("set permissions")), user);
    assert_error(&app.get(GROUPS, key).await, 403);
    assert!(admin(url, set("contacts.view,bogus")).await.is_err());
    assert_error(&app.get(GROUPS, key).await, 403);
    admin(url, set("contacts.view")).await.expect("set permissions");
    assert_eq!(app.get(GROUPS, key).await.status, 200);

    assert_eq!(id(&admin(url, AdminCommand::User(UserCommand::Deactivate { user })).await.expect("deactivate")), user);
    assert_error(&app.get(GROUPS, key).await, 403);
}

#[actix_web::test]
async fn wallet_credit_shows_in_the_balance() {
    let app = spawn().await;
    let url = app.db.url();
    let (tenant, _, key) = setup(url).await;
    let key = key["key"].as_str().expect("key");
    let credit = |amount_minor: i64| {
        AdminCommand::Wallet(WalletCommand::Credit { tenant, amount_minor, note: Some("top-up".to_owned()) })
    };
    assert_eq!(admin(url, credit(150_050)).await.expect("credit"), "150050");
    let res = app.get("/api/v3/balance", key).await;
    assert_eq!(res.data()["balance_minor"], 150_050);
    assert_eq!(res.data()["balance"], "1500.50");
    assert_eq!(admin(url, credit(50)).await.expect("credit"), "150100");

    for bad in [0, -5] {
        let err = admin(url, credit(bad)).await.expect_err("a non-positive credit");
        assert!(err.errors.contains_key("amount_minor"), "{err:?}");
    }
    let res = app.get("/api/v3/balance", key).await;
    assert_eq!(res.data()["balance_minor"], 150_100);
}

#[actix_web::test]
async fn module_disable_and_enable() {
    let app = spawn().await;
    let url = app.db.url();
    let (tenant, _, _) = setup(url).await;
    let switch = |action: Switch, module: &str| AdminCommand::Module { action, tenant, module: module.to_owned() };
    let enabled = |module: Module| {
        let pool = app.pool.clone();
        async move {
            let mut conn = store::connect_system(&pool).await.expect("connection");
            accounts::modules::is_enabled(&mut conn, TenantId(tenant), module).await.expect("module state")
        }
    };
    assert!(enabled(Module::Leads).await, "on until switched off");

    assert_eq!(admin(url, switch(Switch::Disable, "leads")).await.expect("disable"), "false");
    assert!(!enabled(Module::Leads).await);
    assert!(enabled(Module::Forms).await, "other modules untouched");
    assert_eq!(admin(url, switch(Switch::Enable, "leads")).await.expect("enable"), "true");
    assert!(enabled(Module::Leads).await);

    let value = admin_json(url, switch(Switch::Disable, "forms")).await;
    assert_eq!(value, json!({"tenant_id": tenant, "module": "forms", "enabled": false}));
    assert!(!enabled(Module::Forms).await);

    let err = admin(url, switch(Switch::Disable, "crm")).await.expect_err("unknown module");
    assert_eq!(err.kind, ErrorKind::Validation);
}

#[actix_web::test]
async fn demo_is_idempotent_and_reuses_a_working_key() {
    let app = spawn().await;
    let url = app.db.url();
    let first = admin_json(url, AdminCommand::Demo { key: None }).await;
    assert_eq!(first["new_key"], true);
    let key = first["key"].as_str().expect("key").to_owned();
    let me = app.get(ME, &key).await;
    assert_eq!(me.status, 200, "{:?}", me.body);
    assert_eq!(me.data()["id"], first["tenant_id"]);
    assert_eq!(me.data()["permissions"], json!(["*"]));

    let again = admin_json(url, AdminCommand::Demo { key: Some(key.clone()) }).await;
    assert_eq!(again["tenant_id"], first["tenant_id"]);
    assert_eq!(again["user_id"], first["user_id"]);
    assert_eq!(again["key"], key.as_str());
    assert_eq!(again["new_key"], false);

    // Without the earlier key (or with one that no longer works) a new key is issued for the same user.
    let fresh = admin_json(url, AdminCommand::Demo { key: Some("x".repeat(64)) }).await;
    assert_eq!((&fresh["tenant_id"], &fresh["user_id"]), (&first["tenant_id"], &first["user_id"]));
    assert_eq!(fresh["new_key"], true);
    assert_ne!(fresh["key"], key.as_str());
    assert_eq!(app.get(ME, fresh["key"].as_str().expect("key")).await.status, 200);

    // The plain output of demo is the JSON too.
    let plain = admin(url, AdminCommand::Demo { key: Some(key.clone()) }).await.expect("demo");
    let plain: Value = serde_json::from_str(&plain).expect("JSON");
    assert_eq!(plain["key"], key.as_str());
}

/// `gateway admin user set-login`, run as an operator would (the real binary, the password on
/// standard input, never on the command line); prints the email or `{id, tenant_id, email}`.
async fn set_login(url: &str, tenant: i64, user: i64, email: &str, password: &str, json: bool) -> std::process::Output {
    use tokio::io::AsyncWriteExt;
    let mut command = tokio::process::Command::new(crate::process::gateway_bin());
    command.args(["admin", "user", "set-login", "--tenant", &tenant.to_string(), "--user", &user.to_string()]);
    command.args(["--email", email]);
    if json {
        command.arg("--json");
    }
    let mut child = command
        .env("DATABASE_URL", url)
        .env("SVC_RUN_MIGRATIONS", "false")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the gateway binary");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(format!("{password}\n").as_bytes()).await.expect("write the password");
    drop(stdin);
    child.wait_with_output().await.expect("output")
}

#[actix_web::test]
async fn user_set_login_reads_the_password_from_stdin_and_keeps_only_its_hash() {
    let app = spawn().await;
    let url = app.db.url();
    let (tenant, user, _) = setup(url).await;
    let out = set_login(url, tenant, user, "Amina@Duka.example", "a long enough secret", true).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
    assert_eq!(printed, json!({"id": user, "tenant_id": tenant, "email": "amina@duka.example"}));
    let stored = api_tests::sql_rows(&app.pool, "SELECT email, password_hash FROM users WHERE email IS NOT NULL").await;
    assert_eq!(stored.len(), 1);
    let hash = stored[0]["password_hash"].as_str().expect("hash");
    assert!(hash.starts_with("$argon2id$") && !hash.contains("a long enough secret"), "{hash}");
    // the password signs in, case of the email aside
    let now = app.clock.now();
    let signed_in =
        accounts::sign_in::sign_in(&mut *app.conn().await, "AMINA@duka.example", "a long enough secret", now)
            .await
            .expect("sign in");
    assert_eq!(signed_in.user.id, user);

    // short passwords and another user's email are refused, with a non-zero exit
    let out = set_login(url, tenant, user, "amina@duka.example", "short", false).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("10 to 1024 characters"), "{out:?}");
    let other = id(&admin(url, user_create(tenant, "all")).await.expect("user"));
    let out = set_login(url, tenant, other, "amina@duka.example", "another long secret", false).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Another user signs in with this email"), "{out:?}");
    let out = set_login(url, tenant, other, "juma@duka.example", "another long secret", false).await;
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "juma@duka.example");
}

#[actix_web::test]
async fn payment_request_prints_the_reference_and_refund_gives_money_back() {
    let app = spawn().await;
    let url = app.db.url();
    let acme = app.account("payments.view,communications.catalogue.view,communications.catalogue.manage").await;
    let shop = crate::commerce::support::shop(&app, &acme.key, "external").await;
    crate::commerce::support::put_product(&app, &acme.key, shop, "K-1", json!({"name": "Kahawa", "price": 450_000}))
        .await;
    let order = crate::commerce::support::order(&app, &acme.key, shop, json!([{"sku": "K-1", "quantity": 2}])).await;
    let order = order["id"].as_i64().expect("an order");
    let request = |phone: Option<&str>| {
        AdminCommand::Payment(PaymentCommand::Request { tenant: acme.tenant.0, order, phone: phone.map(str::to_owned) })
    };

    let draft = admin_json(url, request(None)).await;
    let reference = draft["reference"].as_str().expect("a reference").to_owned();
    assert!(draft["id"].as_str().is_some_and(|id| id.len() == 36), "{draft}");
    assert_eq!((draft["state"].as_str(), draft["amount_minor"].as_i64()), (Some("draft"), Some(900_000)));
    assert!(draft["checkout_url"].as_str().is_some_and(|u| u.contains("/pay/")), "{draft}");
    // asked again with a number: the same payment, now waiting for the payer
    let out = admin(url, request(Some("+255712345678"))).await.expect("request");
    assert_eq!(out, format!("{reference} pending"));
    app.run_jobs().await;
    app.advance(Duration::seconds(1)).await;
    let paid = app.get(&format!("/api/v3/payments/{reference}"), &acme.key).await;
    assert_eq!(paid.body["data"]["state"], "paid", "{}", paid.body);

    let refund = |amount_minor: i64| {
        AdminCommand::Payment(PaymentCommand::Refund {
            tenant: acme.tenant.0,
            payment: reference.clone(),
            amount_minor,
            reason: Some("one bag was torn".into()),
        })
    };
    let refunded = admin_json(url, refund(450_000)).await;
    assert_eq!(
        (refunded["state"].as_str(), refunded["refund_of"].as_str()),
        (Some("paid"), paid.body["data"]["id"].as_str())
    );
    let error = admin(url, refund(450_001)).await.expect_err("more than is left");
    assert_eq!(error.kind, ErrorKind::Validation);
    let read = app.get(&format!("/api/v3/payments/{reference}"), &acme.key).await.body["data"].clone();
    assert_eq!((read["state"].as_str(), read["refundable_minor"].as_i64()), (Some("partly_refunded"), Some(450_000)));
    assert_eq!(read["refunds"][0]["reason"], "one bag was torn");
    let other = app.account("payments.view").await;
    let error = admin(
        url,
        AdminCommand::Payment(PaymentCommand::Refund {
            tenant: other.tenant.0,
            payment: reference.clone(),
            amount_minor: 1,
            reason: None,
        }),
    )
    .await
    .expect_err("another tenant's payment");
    assert_eq!(error.kind, ErrorKind::NotFound);
}

#[actix_web::test]
async fn automation_subscribe_prints_the_secret_once_and_schedule_the_next_run() {
    let app = spawn().await;
    let url = app.db.url();
    let acme = app.account("automations.view").await;
    let subscribe = AdminCommand::Automation(AutomationCommand::Subscribe {
        tenant: acme.tenant.0,
        events: "order.paid, lead.created".into(),
        url: "https://hooks.example.com/automations".into(),
    });
    let out = admin(url, subscribe).await.expect("subscribe");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "the id, then the secret: {out:?}");
    assert!(lines[1].starts_with("whsec_"), "{out}");
    let listed = app.get("/api/v3/automations/subscriptions", &acme.key).await.body;
    assert_eq!(listed["subscriptions"][0]["id"].as_i64(), lines[0].parse().ok());
    assert_eq!(listed["subscriptions"][0]["events"], json!(["order.paid", "lead.created"]));
    assert!(!listed.to_string().contains("whsec_"), "the secret is not read back");

    let schedule = AdminCommand::Automation(AutomationCommand::Schedule {
        tenant: acme.tenant.0,
        cron: "0 6 * * *".into(),
        operation: None,
        input: None,
        event: Some("scheduled.morning_report".into()),
    });
    let made = admin_json(url, schedule).await;
    assert_eq!((made["event"].as_str(), made["cron"].as_str()), (Some("scheduled.morning_report"), Some("0 6 * * *")));
    let next = OffsetDateTime::parse(made["next_run_at"].as_str().expect("next_run_at"), &Rfc3339).expect("a time");
    assert_eq!((next.hour(), next.minute(), next.second()), (6, 0, 0));
    assert!(next > OffsetDateTime::now_utc() && next <= OffsetDateTime::now_utc() + Duration::days(1));
    let operation = AdminCommand::Automation(AutomationCommand::Schedule {
        tenant: acme.tenant.0,
        cron: "0 6 * * *".into(),
        operation: Some("restock".into()),
        input: Some("{\"sku\": \"K-1\"}".into()),
        event: None,
    });
    assert_eq!(admin(url, operation).await.expect_err("no such operation").kind, ErrorKind::Validation);
    let id = made["id"].as_str().and_then(|id| id.parse().ok()).expect("a uuid");
    let removed = admin(url, AdminCommand::Automation(AutomationCommand::Unschedule { tenant: acme.tenant.0, id }))
        .await
        .expect("unschedule");
    assert_eq!(removed, id.to_string());
    assert_eq!(app.get("/api/v3/automations/schedules", &acme.key).await.body, json!({"schedules": []}));
}

#[actix_web::test]
async fn operation_apply_defines_an_operation_a_schedule_may_run_and_remove_removes_it() {
    let app = spawn().await;
    let url = app.db.url();
    let acme = app.account("operations.run,automations.view,leads.view,leads.edit").await;
    let dir = std::env::temp_dir().join(format!("operation-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let file = dir.join("qualify.json");
    let definition = json!({
        "name": "qualify", "inputs": [{"name": "phone", "type": "phone"}],
        "steps": [{"id": "lead", "action": "create_lead", "with": {"phone": "{{inputs.phone}}", "stage": "qualified"}}]
    });
    std::fs::write(&file, definition.to_string()).expect("written");
    let apply = || AdminCommand::Operation(OperationCommand::Apply { tenant: acme.tenant.0, file: file.clone() });
    assert_eq!(admin(url, apply()).await.expect("apply"), "qualify 1 created");
    assert_eq!(admin_json(url, apply()).await, json!({"name": "qualify", "version": 1, "outcome": "unchanged"}));
    let listed = app.get("/api/v3/operations", &acme.key).await;
    assert_eq!(listed.data()[0]["name"], "qualify", "{}", listed.body);

    // a definition naming a step that does not come before is refused by its path
    let bad = json!({"name": "qualify", "steps": [{"id": "a", "action": "set_lead_stage",
        "with": {"lead": "{{steps.b.id}}", "stage": "won"}}]});
    std::fs::write(&file, bad.to_string()).expect("written");
    let error = admin(url, apply()).await.expect_err("refused");
    assert!(error.errors.contains_key("steps[0].with.lead"), "{error:?}");
    std::fs::write(&file, "not json").expect("written");
    assert!(admin(url, apply()).await.expect_err("not JSON").errors.contains_key("file"));

    // a schedule may run it now
    let schedule = AdminCommand::Automation(AutomationCommand::Schedule {
        tenant: acme.tenant.0,
        cron: "0 6 * * *".into(),
        operation: Some("qualify".into()),
        input: Some("{\"phone\": \"0712345678\"}".into()),
        event: None,
    });
    let made = admin_json(url, schedule).await;
    assert_eq!((made["operation"].as_str(), made["input"].clone()), (Some("qualify"), json!({"phone": "0712345678"})));

    let remove = || AdminCommand::Operation(OperationCommand::Remove { tenant: acme.tenant.0, name: "qualify".into() });
    assert_eq!(admin(url, remove()).await.expect("removed"), "qualify");
    assert_eq!(admin(url, remove()).await.expect_err("gone").kind, ErrorKind::NotFound);
    assert_eq!(app.get("/api/v3/operations/qualify", &acme.key).await.status, 404);
    std::fs::remove_dir_all(&dir).ok();
}
