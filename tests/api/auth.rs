//! The authentication and authorization matrix (contract: Authentication; issue 2, Gateway):
//! `Authorization: Bearer <key>` only; 401 for missing, malformed, unknown, revoked, expired
//! or wrong-kind credentials; 403 for a suspended or inactive account; legacy keys only on the
//! routes kept for them; permissions and issuers read at request time.

use accounts::keys::{self, KeyIssuer};
use accounts::tenants::TenantStatus;
use actix_web::test::TestRequest;
use api_tests::{json, spawn};
use kernel::{ApiKeyId, TenantId};
use time::{Duration, OffsetDateTime};

use crate::framework::assert_error;

const ME: &str = "/api/v3/me";
const GROUPS: &str = "/api/v3/contact-groups";
/// A route of the contract's Account family and one of the contacts family.
const ROUTES: [&str; 2] = [ME, GROUPS];

/// 64 characters no key has.
fn random_key() -> String {
    format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}

/// Issues a key through the accounts crate, returning its id as well as its plaintext.
async fn issue(
    pool: &store::Pool,
    tenant: TenantId,
    issuer: KeyIssuer,
    expires_at: Option<OffsetDateTime>,
) -> (ApiKeyId, String) {
    let mut conn = store::connect_system(pool).await.expect("connection");
    let issued = keys::create(&mut conn, tenant, issuer, "Integration", expires_at).await.expect("key");
    (ApiKeyId(issued.key.id), issued.plaintext)
}

async fn set_status(pool: &store::Pool, tenant: TenantId, status: TenantStatus) {
    let mut conn = store::connect_system(pool).await.expect("connection");
    accounts::tenants::set_status(&mut conn, tenant, status).await.expect("set status");
}

#[actix_web::test]
async fn a_missing_authorization_header_is_401() {
    let app = spawn().await;
    for path in ROUTES {
        let res = app.request("GET", path, None, None).await;
        assert_error(&res, 401);
    }
    // A write is refused the same way, and creates nothing.
    let res = app.request("POST", GROUPS, None, Some(json!({"name": "Customers"}))).await;
    assert_error(&res, 401);
}

#[actix_web::test]
async fn a_malformed_authorization_header_is_401_even_around_a_good_key() {
    let app = spawn().await;
    let account = app.account("all").await;
    let key = account.key.as_str();
    let values = [
        format!("Token {key}"),
        format!("Basic {key}"),
        key.to_owned(),
        format!("Bearer{key}"),
        "Bearer".to_owned(),
        "Bearer ".to_owned(),
        "Token x".to_owned(),
        String::new(),
    ];
    for path in ROUTES {
        for value in &values {
            let req = TestRequest::get().uri(path).insert_header(("Authorization", value.as_str()));
            let res = app.send(req).await;
            assert_error(&res, 401);
        }
    }
    // The same key, well sent, works.
    assert_eq!(app.get(ME, key).await.status, 200);
}

#[actix_web::test]
async fn an_unknown_key_is_401() {
    let app = spawn().await;
    app.account("all").await;
    for path in ROUTES {
        let res = app.get(path, &random_key()).await;
        assert_error(&res, 401);
    }
}

#[actix_web::test]
async fn a_key_of_the_wrong_length_is_401() {
    let app = spawn().await;
    let account = app.account("all").await;
    let key = &account.key;
    for wrong in [format!("{key}x"), key[..63].to_owned(), key[..8].to_owned(), format!("{key}{key}")] {
        for path in ROUTES {
            let res = app.get(path, &wrong).await;
            assert_error(&res, 401);
        }
    }
}

#[actix_web::test]
async fn a_key_in_the_query_string_is_ignored() {
    let app = spawn().await;
    let account = app.account("all").await;
    for path in ROUTES {
        for param in ["api_key", "token", "access_token", "key"] {
            let uri = format!("{path}?{param}={}", account.key);
            let res = app.request("GET", &uri, None, None).await;
            assert_error(&res, 401);
        }
    }
}

#[actix_web::test]
async fn a_revoked_key_is_401_on_the_very_next_request() {
    let app = spawn().await;
    let account = app.account("all").await;
    let (id, key) = issue(&app.pool, account.tenant, KeyIssuer::User(account.user), None).await;
    for path in ROUTES {
        assert_eq!(app.get(path, &key).await.status, 200);
    }
    {
        let mut conn = app.conn().await;
        keys::revoke(&mut conn, id, app.clock.now()).await.expect("revoke");
    }
    for path in ROUTES {
        let res = app.get(path, &key).await;
        assert_error(&res, 401);
    }
    // Other keys of the tenant are unaffected.
    assert_eq!(app.get(ME, &account.key).await.status, 200);
}

#[actix_web::test]
async fn an_expired_key_is_401() {
    let app = spawn().await;
    let account = app.account("all").await;
    let expires = app.clock.now() + Duration::minutes(1);
    let (_, key) = issue(&app.pool, account.tenant, KeyIssuer::User(account.user), Some(expires)).await;
    for path in ROUTES {
        assert_eq!(app.get(path, &key).await.status, 200, "works before its expiry");
    }
    app.clock.advance(Duration::minutes(2));
    for path in ROUTES {
        let res = app.get(path, &key).await;
        assert_error(&res, 401);
    }
    // A key without expiry still works at the same moment.
    assert_eq!(app.get(ME, &account.key).await.status, 200);
}

#[actix_web::test]
async fn an_mcp_credential_is_401_on_rest() {
    let app = spawn().await;
    app.account("all").await;
    let token = format!("svc_mcp_{}", &random_key()[..56]);
    assert_eq!(token.len(), 64);
    for path in ROUTES {
        for token in [token.as_str(), "svc_mcp_abc"] {
            let res = app.get(path, token).await;
            assert_error(&res, 401);
        }
    }
}

#[actix_web::test]
async fn a_suspended_or_inactive_account_is_403_until_reactivated() {
    let app = spawn().await;
    let account = app.account("all").await;
    for status in [TenantStatus::Suspended, TenantStatus::Inactive] {
        set_status(&app.pool, account.tenant, status).await;
        for path in ROUTES {
            let res = app.get(path, &account.key).await;
            assert_error(&res, 403);
        }
        set_status(&app.pool, account.tenant, TenantStatus::Active).await;
        for path in ROUTES {
            let res = app.get(path, &account.key).await;
            assert_eq!(res.status, 200, "{status:?} then active again: {:?}", res.body);
        }
    }
}

#[actix_web::test]
async fn a_suspended_account_does_not_affect_another() {
    let app = spawn().await;
    let suspended = app.account("all").await;
    let other = app.account("all").await;
    set_status(&app.pool, suspended.tenant, TenantStatus::Suspended).await;
    assert_error(&app.get(ME, &suspended.key).await, 403);
    assert_eq!(app.get(ME, &other.key).await.status, 200);
}

#[actix_web::test]
async fn a_legacy_key_keeps_the_original_paths_and_the_tenant_families_only() {
    let app = spawn().await;
    let account = app.account("all").await;
    let legacy = app.legacy_key(account.tenant).await;
    let group = app.post(GROUPS, &account.key, json!({"name": "Customers"})).await;
    assert_eq!(group.status, 201, "{:?}", group.body);
    let group_id = group.data()["id"].as_i64().expect("group id");

    // Allowed: /me, /balance and the original contact paths (contacts.* checks do not apply).
    let me = app.get(ME, &legacy).await;
    assert_eq!(me.status, 200, "{:?}", me.body);
    assert_eq!(me.data()["id"], json!(account.tenant.0));
    assert_eq!(me.data()["key"]["legacy"], true);
    let res = app.get("/api/v3/balance", &legacy).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    let res = app.post(&format!("/api/v3/contacts/{group_id}/all"), &legacy, json!({})).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    assert_eq!(res.data()["pagination"]["total"], 0);
    let created = app
        .post(
            &format!("/api/v3/contacts/{group_id}/store"),
            &legacy,
            json!({"PHONE": "0712345678", "country_code": "255", "name": "Asha"}),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let uid = created.data()["uid"].as_str().expect("contact uid").to_owned();
    let res = app.post(&format!("/api/v3/contacts/{group_id}/search/{uid}"), &legacy, json!({})).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    let res = app.post(&format!("/api/v3/contacts/{group_id}/all"), &legacy, json!({})).await;
    assert_eq!(res.data()["pagination"]["total"], 1, "{:?}", res.body);

    // Refused on every route added since: 403 with the envelope.
    for (method, path, body) in [
        ("GET", GROUPS.to_owned(), None),
        ("POST", GROUPS.to_owned(), Some(json!({"name": "Other"}))),
        ("GET", format!("{GROUPS}/{group_id}"), None),
        ("GET", format!("{GROUPS}/{group_id}/contacts"), None),
        ("GET", format!("{GROUPS}/{group_id}/contacts/{uid}"), None),
        ("DELETE", format!("{GROUPS}/{group_id}?force=true"), None),
        ("GET", "/api/v3/contacts".to_owned(), None),
    ] {
        let res = app.request(method, &path, Some(&legacy), body).await;
        assert_error(&res, 403);
    }
    // The refused delete changed nothing.
    let res = app.get(&format!("{GROUPS}/{group_id}"), &account.key).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
}

#[actix_web::test]
async fn rotating_a_legacy_key_brings_it_under_the_permission_model() {
    let app = spawn().await;
    let account = app.account("all").await;
    let (legacy_id, legacy) = issue(&app.pool, account.tenant, KeyIssuer::Legacy, None).await;
    assert_error(&app.get(GROUPS, &legacy).await, 403);
    let rotated = {
        let mut conn = app.conn().await;
        keys::rotate(&mut conn, legacy_id, account.user, app.clock.now()).await.expect("rotate").plaintext
    };
    assert_ne!(rotated, legacy);
    // The old key stops at once, everywhere.
    for path in ROUTES {
        assert_error(&app.get(path, &legacy).await, 401);
    }
    // The new one works on the new paths, under its issuer.
    let res = app.get(GROUPS, &rotated).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    let me = app.get(ME, &rotated).await;
    assert_eq!(me.status, 200, "{:?}", me.body);
    assert_eq!(me.data()["key"]["legacy"], false);
    assert_eq!(me.data()["issuer"]["id"], json!(account.user.0));
}

#[actix_web::test]
async fn a_removed_permission_is_refused_on_the_next_request() {
    let app = spawn().await;
    let account = app.account("contacts.view,contacts.create").await;
    assert_eq!(app.get(GROUPS, &account.key).await.status, 200);

    app.set_permissions(account.user, "contacts.create").await;
    assert_error(&app.get(GROUPS, &account.key).await, 403);
    // What remains still works.
    let res = app.post(GROUPS, &account.key, json!({"name": "Customers"})).await;
    assert_eq!(res.status, 201, "{:?}", res.body);

    // A grant applies as soon, too.
    app.set_permissions(account.user, "contacts.view").await;
    assert_eq!(app.get(GROUPS, &account.key).await.status, 200);
    assert_error(&app.post(GROUPS, &account.key, json!({"name": "More"})).await, 403);
}

#[actix_web::test]
async fn a_deactivated_issuer_is_refused_on_contacts_routes() {
    let app = spawn().await;
    let account = app.account("all").await;
    assert_eq!(app.get(GROUPS, &account.key).await.status, 200);
    {
        let mut conn = app.conn().await;
        accounts::users::deactivate(&mut conn, account.user).await.expect("deactivate");
    }
    assert_error(&app.get(GROUPS, &account.key).await, 403);
    assert_error(&app.post(GROUPS, &account.key, json!({"name": "Customers"})).await, 403);
    assert_error(&app.get("/api/v3/contacts", &account.key).await, 403);
}

#[actix_web::test]
async fn credentials_are_checked_before_the_body() {
    // A caller without a valid key learns nothing about the body's shape: 401 (or the 403 of
    // a refused key) comes first, whatever the body. Every case is tried before failing.
    let app = spawn().await;
    let account = app.account("all").await;
    let unknown = random_key();
    let (revoked_id, revoked) = issue(&app.pool, account.tenant, KeyIssuer::User(account.user), None).await;
    {
        let mut conn = app.conn().await;
        keys::revoke(&mut conn, revoked_id, app.clock.now()).await.expect("revoke");
    }
    let legacy = app.legacy_key(account.tenant).await;
    let bodies = [
        ("malformed JSON", "application/json", "{not json"),
        ("a wrong type", "application/json", r#"{"name": 5}"#),
        ("another media type", "text/plain", "name=Customers"),
    ];
    let mut wrong = Vec::new();
    for (who, key, status) in
        [("unknown key", &unknown, 401), ("revoked key", &revoked, 401), ("legacy key", &legacy, 403)]
    {
        for (what, content_type, body) in bodies {
            let req = TestRequest::post()
                .uri(GROUPS)
                .insert_header(("Authorization", format!("Bearer {key}")))
                .insert_header(("Content-Type", content_type))
                .set_payload(body);
            let res = app.send(req).await;
            if res.status != status {
                wrong.push(format!("{who} with {what}: {} {}, expected {status}", res.status, res.body));
            }
        }
    }
    assert!(wrong.is_empty(), "the body was judged before the credential:\n{}", wrong.join("\n"));
    // Nothing was created.
    assert_eq!(app.get(GROUPS, &account.key).await.data()["pagination"]["total"], 0);
}

#[actix_web::test]
async fn every_response_carries_a_request_id_and_echoes_a_sane_one() {
    let app = spawn().await;
    let account = app.account("all").await;
    let legacy = app.legacy_key(account.tenant).await;
    let responses = [
        app.get(ME, &account.key).await,
        app.request("GET", ME, None, None).await,
        app.get(GROUPS, &legacy).await,
        app.get("/api/v3/nope", &account.key).await,
        app.request("PUT", ME, Some(&account.key), None).await,
        app.post(GROUPS, &account.key, json!({"name": 5})).await,
        app.request("GET", "/health", None, None).await,
    ];
    let ids: Vec<&str> = responses
        .iter()
        .map(|res| res.header("x-request-id").unwrap_or_else(|| panic!("no X-Request-Id on {}", res.status)))
        .collect();
    assert!(ids.iter().all(|id| !id.is_empty()));
    let mut distinct = ids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), ids.len(), "a fresh id per request: {ids:?}");

    // A sane client id is echoed back, on success and on error.
    for key in [Some(account.key.as_str()), None] {
        let mut req = TestRequest::get().uri(ME).insert_header(("X-Request-Id", "client-req-0042"));
        if let Some(key) = key {
            req = req.insert_header(("Authorization", format!("Bearer {key}")));
        }
        let res = app.send(req).await;
        assert_eq!(res.header("x-request-id"), Some("client-req-0042"), "status {}", res.status);
    }
    // An unreasonable one is replaced.
    let long = "x".repeat(500);
    for bad in ["two words", long.as_str()] {
        let req = TestRequest::get()
            .uri(ME)
            .insert_header(("Authorization", format!("Bearer {}", account.key)))
            .insert_header(("X-Request-Id", bad));
        let res = app.send(req).await;
        let id = res.header("x-request-id").expect("an id");
        assert!(!id.is_empty() && id != bad, "{bad:?} replaced, got {id:?}");
    }
}
