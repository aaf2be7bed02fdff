//! Changing a receiver (contract: Webhooks management, Versioning): PATCH checks a new URL
//! again, replaces events, keeps or removes filters and header values, and lets a legacy http
//! endpoint keep its URL until it is edited; DELETE takes the deliveries with it; rotate-secret
//! signs the next delivery with the new secret only.

use api_tests::TestApp;
use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use diesel_async::RunQueryDsl;
use serde_json::{Value, json};
use wiremock::Request;

use super::support::*;
use crate::framework::assert_error;

/// The request's value of a header, if it carries it.
fn header_of<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    request.headers.get(name).and_then(|v| v.to_str().ok())
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

async fn count<S>(app: &TestApp<S>, sql: &str) -> i64 {
    let mut conn = store::connect_system(&app.pool).await.expect("connection");
    let row: Count = diesel::sql_query(sql).get_result(&mut conn).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    row.n
}

// ---------------------------------------------------------------------------------------------
// Updates

/// A new URL goes through the same checks as at registration, and a refused one changes
/// nothing.
#[actix_web::test]
async fn a_changed_url_is_checked_again() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let (id, _) = register(&app, &account.key, PUBLIC, &["message.sent"]).await;
    for url in ["http://hooks.example.com/in", "https://10.0.0.1/in", "https://user:pass@hooks.example.com/"] {
        assert_field_error(&app.patch(&path(id), &account.key, json!({"url": url})).await, "url");
    }
    assert_eq!(app.get(&path(id), &account.key).await.data()["url"], PUBLIC);
    let res = app.patch(&path(id), &account.key, json!({"url": "https://other.example.com/hooks"})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["url"], "https://other.example.com/hooks");
}

/// `events` is replaced as a whole, filters are kept until `filters: null` removes them, and
/// stored filters cannot be left without a lead event.
#[actix_web::test]
async fn update_replaces_events_and_null_removes_filters() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let key = &account.key;
    let filters = json!({"stages": ["won"], "labels": ["VIP"], "channels": ["whatsapp"]});
    let created = create(&app, key, json!({"url": PUBLIC, "events": ["lead.created"], "filters": filters})).await;
    let id = created["id"].as_i64().expect("id");

    let res = app.patch(&path(id), key, json!({"events": ["lead.stage_changed", "message.sent"]})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["events"], json!(["lead.stage_changed", "message.sent"]));
    assert_eq!(res.data()["filters"], filters, "kept when not sent");

    let res = app.patch(&path(id), key, json!({"events": ["message.sent"]})).await;
    assert_field_error(&res, "filters");
    let res = app.patch(&path(id), key, json!({"events": ["lead.exploded"]})).await;
    assert_field_error(&res, "events[0]");

    let res = app.patch(&path(id), key, json!({"filters": null})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["filters"], Value::Null);
    assert_eq!(res.data()["events"], json!(["lead.stage_changed", "message.sent"]));
    assert_eq!(app.get(&path(id), key).await.data()["filters"], Value::Null);
    // without filters, a receiver may drop its lead events
    let res = app.patch(&path(id), key, json!({"events": ["message.sent"]})).await;
    assert_status(&res, 200);
}

/// Headers left out of an update are kept; a name sent as null keeps its stored value (the
/// delivery still carries it) while names not sent go; `{}` removes them all; null for a name
/// never stored is refused.
#[actix_web::test]
async fn a_header_sent_as_null_keeps_its_value_and_an_empty_set_removes_all() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let key = &account.key;
    let receiver = Receiver::answering(200).await;
    let headers = json!({"X-A": "alpha-value", "X-B": "beta-value"});
    let created =
        create(&app, key, json!({"url": receiver.url(), "events": ["message.sent"], "headers": headers})).await;
    let id = created["id"].as_i64().expect("id");

    let res = app.patch(&path(id), key, json!({"events": ["message.sent", "message.failed"]})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["headers"], json!({"X-A": null, "X-B": null}));
    let request = deliver(&app, account.tenant, &receiver).await;
    assert_eq!((header(&request, "x-a"), header(&request, "x-b")), ("alpha-value", "beta-value"));

    let res = app.patch(&path(id), key, json!({"headers": {"X-A": null, "X-Never": null}})).await;
    assert_field_error(&res, "headers.X-Never");
    let request = deliver(&app, account.tenant, &receiver).await;
    assert_eq!(header_of(&request, "x-b"), Some("beta-value"), "a refused update changes nothing");

    let res = app.patch(&path(id), key, json!({"headers": {"X-A": null}})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["headers"], json!({"X-A": null}));
    let request = deliver(&app, account.tenant, &receiver).await;
    assert_eq!(header_of(&request, "x-a"), Some("alpha-value"), "the stored value was kept");
    assert_eq!(header_of(&request, "x-b"), None, "X-B was not sent, so it went");

    let res = app.patch(&path(id), key, json!({"headers": {"X-A": "alpha-new", "X-C": "gamma"}})).await;
    assert_status(&res, 200);
    let request = deliver(&app, account.tenant, &receiver).await;
    assert_eq!((header_of(&request, "x-a"), header_of(&request, "x-c")), (Some("alpha-new"), Some("gamma")));

    let res = app.patch(&path(id), key, json!({"headers": {}})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["headers"], json!({}));
    let request = deliver(&app, account.tenant, &receiver).await;
    for name in ["x-a", "x-b", "x-c"] {
        assert_eq!(header_of(&request, name), None, "{name} was removed");
    }
    assert_signed(&request, created["secret"].as_str().expect("secret"), app.clock.now());
}

/// An http endpoint registered before 26 September 2026 keeps its URL through other edits and
/// a resend of the same URL, but cannot move to another http URL; once re-pointed to https it
/// cannot go back to http.
#[actix_web::test]
async fn a_legacy_http_endpoint_keeps_its_url_until_it_is_edited() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let key = &account.key;
    let legacy = "http://hooks.example.com/in";
    let id = {
        let mut conn = app.conn().await;
        let row: Id = diesel::sql_query(
            "INSERT INTO webhooks (tenant_id, url, events, secret, created_at, updated_at, url_changed_at)
             VALUES ($1, 'http://hooks.example.com/in', ARRAY['message.sent'], 'whsec_x', '2026-09-01', '2026-09-01',
                     '2026-09-01')
             RETURNING id",
        )
        .bind::<BigInt, _>(account.tenant.0)
        .get_result(&mut conn)
        .await
        .expect("legacy receiver");
        row.id
    };

    let res = app.patch(&path(id), key, json!({"events": ["message.sent", "message.delivered"]})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["url"], legacy);
    assert_eq!(res.data()["events"], json!(["message.sent", "message.delivered"]));
    let res = app.patch(&path(id), key, json!({"url": legacy})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["url"], legacy, "the same URL is not an edit");

    assert_field_error(&app.patch(&path(id), key, json!({"url": "http://hooks.example.com/other"})).await, "url");
    assert_eq!(app.get(&path(id), key).await.data()["url"], legacy);

    assert_status(&app.patch(&path(id), key, json!({"url": PUBLIC})).await, 200);
    assert_field_error(&app.patch(&path(id), key, json!({"url": legacy})).await, "url");
}

// ---------------------------------------------------------------------------------------------
// Deletion and rotation

/// DELETE answers 200, then the receiver is gone, with its deliveries and their attempts, and
/// a delivery that was waiting is never sent.
#[actix_web::test]
async fn deleting_a_receiver_removes_it_and_its_deliveries() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let receiver = Receiver::answering(200).await;
    let (id, _) = register(&app, &account.key, &receiver.url(), &["message.sent"]).await;
    deliver(&app, account.tenant, &receiver).await;
    let log = app.get(&format!("{}/deliveries", path(id)), &account.key).await;
    let delivery = log.data()["items"][0]["id"].as_str().expect("delivery id").to_owned();
    // one more, waiting when the receiver goes
    emit(&app, account.tenant, "message.sent", json!({"message_id": 8})).await;
    assert_eq!(count(&app, &format!("SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = {id}")).await, 2);

    let res = app.delete(&path(id), &account.key).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["id"], id);
    assert_error(&app.get(&path(id), &account.key).await, 404);
    assert_error(&app.get(&format!("{}/deliveries", path(id)), &account.key).await, 404);
    assert_error(&app.get(&format!("{}/deliveries/{delivery}", path(id)), &account.key).await, 404);
    assert_error(&app.delete(&path(id), &account.key).await, 404);
    assert_eq!(app.get(WEBHOOKS, &account.key).await.data()["pagination"]["total"], 0);
    assert_eq!(count(&app, &format!("SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = {id}")).await, 0);
    let attempts = format!("SELECT count(*) AS n FROM webhook_attempts WHERE delivery_id = '{delivery}'::uuid");
    assert_eq!(count(&app, &attempts).await, 0);

    app.run_jobs().await;
    assert_eq!(receiver.requests().await.len(), 1, "the waiting delivery was dropped");
}

/// rotate-secret answers a new secret; the next delivery is signed with it, and the old secret
/// no longer verifies it.
#[actix_web::test]
async fn a_rotated_secret_signs_the_next_delivery_and_the_old_one_stops_verifying() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let receiver = Receiver::answering(200).await;
    let (id, old) = register(&app, &account.key, &receiver.url(), &["message.sent"]).await;

    let res = app.post(&format!("{}/rotate-secret", path(id)), &account.key, json!({})).await;
    assert_status(&res, 200);
    let new = res.data()["secret"].as_str().expect("secret").to_owned();
    assert!(new.starts_with("whsec_"), "{new}");
    assert_ne!(new, old);
    assert_eq!(res.data()["id"], id);
    assert_eq!(app.get(&path(id), &account.key).await.data().get("secret"), None);

    let request = deliver(&app, account.tenant, &receiver).await;
    assert_signed(&request, &new, app.clock.now());
    assert_ne!(header(&request, "x-signature"), hmac_hex(old.as_bytes(), &request.body), "old secret, X-Signature");
    let mut signed = format!("{}.{}.", header(&request, "x-timestamp"), header(&request, "x-delivery-id")).into_bytes();
    signed.extend_from_slice(&request.body);
    assert_ne!(
        header(&request, "x-signature-v2"),
        format!("sha256={}", hmac_hex(old.as_bytes(), &signed)),
        "old secret, X-Signature-V2"
    );
}
