//! Who reaches a receiver (contract: Webhooks management): a view-only key reads and changes
//! nothing, a key without webhook permissions or from before the permission model is refused,
//! another tenant's receivers and deliveries answer 404 and its events never arrive, ids that
//! are not numbers name nothing, and the notifications list starts empty.

use serde_json::json;

use super::support::*;
use crate::framework::assert_error;

/// A key whose issuer may only view reads receivers, deliveries, events and notifications, and
/// is refused every change; a refused change changes nothing.
#[actix_web::test]
async fn a_view_only_key_reads_but_every_change_is_refused() {
    let app = api_tests::spawn().await;
    let manager = app.account(MANAGER).await;
    let viewer = {
        let user = app.user(manager.tenant, "webhooks.view").await;
        app.key(manager.tenant, user).await
    };
    let receiver = Receiver::answering(500).await;
    let (id, _) = register(&app, &manager.key, &receiver.url(), &["message.sent"]).await;
    deliver(&app, manager.tenant, &receiver).await;
    let log = app.get(&format!("{}/deliveries", path(id)), &viewer).await;
    assert_status(&log, 200);
    let delivery = log.data()["items"][0]["id"].as_str().expect("delivery id").to_owned();
    let before = app.get(&path(id), &viewer).await;
    assert_status(&before, 200);

    for read in [
        WEBHOOKS.to_owned(),
        path(id),
        format!("{WEBHOOKS}/events"),
        format!("{WEBHOOKS}/notifications"),
        format!("{}/deliveries/{delivery}", path(id)),
    ] {
        assert_status(&app.get(&read, &viewer).await, 200);
    }
    for (method, change, body) in [
        ("POST", WEBHOOKS.to_owned(), Some(json!({"url": PUBLIC, "events": ["message.sent"]}))),
        ("PATCH", path(id), Some(json!({"events": ["message.failed"]}))),
        ("DELETE", path(id), None),
        ("POST", format!("{}/test", path(id)), Some(json!({}))),
        ("POST", format!("{}/rotate-secret", path(id)), Some(json!({}))),
        ("POST", format!("{}/deliveries/{delivery}/replay", path(id)), Some(json!({}))),
        ("POST", format!("{}/recover", path(id)), Some(json!({"since": "2020-01-01T00:00:00Z"}))),
    ] {
        let res = app.request(method, &change, Some(&viewer), body).await;
        assert_eq!(res.status, 403, "{method} {change}: {}", res.body);
        assert_error(&res, 403);
    }
    assert_eq!(app.get(&path(id), &viewer).await.body, before.body, "nothing changed");
    assert_eq!(receiver.requests().await.len(), 1, "no test send, no replay");
    assert_eq!(app.get(WEBHOOKS, &viewer).await.data()["pagination"]["total"], 1);
}

/// A key whose issuer has neither webhook permission cannot even read.
#[actix_web::test]
async fn a_key_without_webhook_permissions_cannot_read() {
    let app = api_tests::spawn().await;
    let manager = app.account(MANAGER).await;
    let outsider = {
        let user = app.user(manager.tenant, "contacts.view").await;
        app.key(manager.tenant, user).await
    };
    let (id, _) = register(&app, &manager.key, PUBLIC, &["message.sent"]).await;
    for read in [
        WEBHOOKS.to_owned(),
        path(id),
        format!("{WEBHOOKS}/events"),
        format!("{WEBHOOKS}/notifications"),
        format!("{}/deliveries", path(id)),
    ] {
        let res = app.get(&read, &outsider).await;
        assert_eq!(res.status, 403, "GET {read}: {}", res.body);
        assert_error(&res, 403);
    }
    let res = app.post(WEBHOOKS, &outsider, json!({"url": PUBLIC, "events": ["message.sent"]})).await;
    assert_error(&res, 403);
}

/// A key from before the permission model (no issuer) is refused on every webhook route.
#[actix_web::test]
async fn a_legacy_key_is_refused_on_every_webhook_route() {
    let app = api_tests::spawn().await;
    let manager = app.account(MANAGER).await;
    let legacy = app.legacy_key(manager.tenant).await;
    let (id, _) = register(&app, &manager.key, PUBLIC, &["message.sent"]).await;
    let delivery = uuid::Uuid::new_v4();
    for (method, route, body) in [
        ("GET", WEBHOOKS.to_owned(), None),
        ("POST", WEBHOOKS.to_owned(), Some(json!({"url": PUBLIC, "events": ["message.sent"]}))),
        ("GET", format!("{WEBHOOKS}/events"), None),
        ("GET", format!("{WEBHOOKS}/notifications"), None),
        ("GET", path(id), None),
        ("PATCH", path(id), Some(json!({"events": ["message.failed"]}))),
        ("DELETE", path(id), None),
        ("POST", format!("{}/test", path(id)), Some(json!({}))),
        ("POST", format!("{}/rotate-secret", path(id)), Some(json!({}))),
        ("GET", format!("{}/deliveries", path(id)), None),
        ("GET", format!("{}/deliveries/{delivery}", path(id)), None),
        ("POST", format!("{}/deliveries/{delivery}/replay", path(id)), Some(json!({}))),
        ("POST", format!("{}/recover", path(id)), Some(json!({"since": "2020-01-01T00:00:00Z"}))),
    ] {
        let res = app.request(method, &route, Some(&legacy), body).await;
        assert_eq!(res.status, 403, "{method} {route}: {}", res.body);
        assert_error(&res, 403);
    }
    assert_status(&app.get(&path(id), &manager.key).await, 200);
    assert_eq!(app.get(WEBHOOKS, &manager.key).await.data()["pagination"]["total"], 1);
}

/// Another tenant's receiver and its deliveries answer 404 on every route, even to a manager,
/// and stay as they were; the other tenant's list does not show them.
#[actix_web::test]
async fn another_tenant_s_receiver_and_deliveries_answer_404() {
    let app = api_tests::spawn().await;
    let a = app.account(MANAGER).await;
    let b = app.account(MANAGER).await;
    let receiver = Receiver::answering(200).await;
    let (id, secret) = register(&app, &a.key, &receiver.url(), &["message.sent"]).await;
    deliver(&app, a.tenant, &receiver).await;
    let log = app.get(&format!("{}/deliveries", path(id)), &a.key).await;
    let delivery = log.data()["items"][0]["id"].as_str().expect("delivery id").to_owned();
    let before = app.get(&path(id), &a.key).await;

    for (method, route, body) in [
        ("GET", path(id), None),
        ("PATCH", path(id), Some(json!({"events": ["message.failed"], "url": PUBLIC}))),
        ("DELETE", path(id), None),
        ("POST", format!("{}/test", path(id)), Some(json!({}))),
        ("POST", format!("{}/rotate-secret", path(id)), Some(json!({}))),
        ("GET", format!("{}/deliveries", path(id)), None),
        ("GET", format!("{}/deliveries/{delivery}", path(id)), None),
        ("POST", format!("{}/deliveries/{delivery}/replay", path(id)), Some(json!({}))),
        ("POST", format!("{}/recover", path(id)), Some(json!({"since": "2020-01-01T00:00:00Z"}))),
    ] {
        let res = app.request(method, &route, Some(&b.key), body).await;
        assert_eq!(res.status, 404, "{method} {route}: {}", res.body);
        assert_error(&res, 404);
    }
    let list = app.get(WEBHOOKS, &b.key).await;
    assert_status(&list, 200);
    assert_eq!(list.data()["items"], json!([]));

    // A's delivery is not reachable through a receiver of B's either
    let (own, _) = register(&app, &b.key, PUBLIC, &["message.sent"]).await;
    let res = app.get(&format!("{}/deliveries/{delivery}", path(own)), &b.key).await;
    assert_error(&res, 404);
    let res = app.post(&format!("{}/deliveries/{delivery}/replay", path(own)), &b.key, json!({})).await;
    assert_error(&res, 404);
    let list = app.get(WEBHOOKS, &b.key).await;
    assert_eq!(list.data()["pagination"]["total"], 1);
    assert_eq!(list.data()["items"][0]["id"], own);

    // A's receiver is untouched: same fields, same secret, one delivery, nothing more sent
    assert_eq!(app.get(&path(id), &a.key).await.body, before.body);
    app.run_jobs().await;
    assert_eq!(receiver.requests().await.len(), 1, "no test send, no replay");
    assert_eq!(app.get(&format!("{}/deliveries", path(id)), &a.key).await.data()["pagination"]["total"], 1);
    let request = deliver(&app, a.tenant, &receiver).await;
    assert_signed(&request, &secret, app.clock.now());
}

/// An event of one tenant reaches only that tenant's receivers.
#[actix_web::test]
async fn another_tenant_s_events_never_reach_a_receiver() {
    let app = api_tests::spawn().await;
    let a = app.account(MANAGER).await;
    let b = app.account(MANAGER).await;
    let a_receiver = Receiver::answering(200).await;
    let b_receiver = Receiver::answering(200).await;
    let (a_id, _) = register(&app, &a.key, &a_receiver.url(), &["message.sent"]).await;
    register(&app, &b.key, &b_receiver.url(), &["message.sent"]).await;

    deliver(&app, b.tenant, &b_receiver).await;
    assert_eq!(a_receiver.requests().await.len(), 0);
    let log = app.get(&format!("{}/deliveries", path(a_id)), &a.key).await;
    assert_eq!(log.data()["pagination"]["total"], 0);
}

/// A receiver id that is not a number, or a delivery id that is not a UUID, names nothing.
#[actix_web::test]
async fn ids_that_are_not_numbers_are_not_found() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let (id, _) = register(&app, &account.key, PUBLIC, &["message.sent"]).await;
    for (method, route, body) in [
        ("GET", format!("{WEBHOOKS}/abc"), None),
        ("GET", format!("{WEBHOOKS}/{id}x"), None),
        ("GET", format!("{WEBHOOKS}/99999999999999999999"), None),
        ("PATCH", format!("{WEBHOOKS}/abc"), Some(json!({"events": ["message.failed"]}))),
        ("DELETE", format!("{WEBHOOKS}/1.0"), None),
        ("POST", format!("{WEBHOOKS}/abc/test"), Some(json!({}))),
        ("POST", format!("{WEBHOOKS}/abc/rotate-secret"), Some(json!({}))),
        ("GET", format!("{WEBHOOKS}/abc/deliveries"), None),
        ("GET", format!("{WEBHOOKS}/{id}/deliveries/not-a-uuid"), None),
        ("POST", format!("{WEBHOOKS}/{id}/deliveries/not-a-uuid/replay"), Some(json!({}))),
        ("POST", format!("{WEBHOOKS}/abc/recover"), Some(json!({"since": "2020-01-01T00:00:00Z"}))),
    ] {
        let res = app.request(method, &route, Some(&account.key), body).await;
        assert_eq!(res.status, 404, "{method} {route}: {}", res.body);
        assert_error(&res, 404);
    }
    assert_status(&app.get(&path(id), &account.key).await, 200);
}

/// The notifications a pause leaves exist as a list, empty for a fresh account.
#[actix_web::test]
async fn a_fresh_account_has_no_notifications() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let res = app.get(&format!("{WEBHOOKS}/notifications"), &account.key).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["items"], json!([]));
    assert_eq!(res.data()["pagination"]["total"], 0);
}
