//! `Idempotency-Key` on `POST /leads` (contract: Leads; issue 5): the first answer replayed with
//! `X-Idempotent-Replay: 1` and no second lead, another body with the same key refused, a
//! refused request not holding its key, and keys kept per workspace.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::test::TestRequest;
use api_tests::{Resp, TestApp, json, spawn};
use serde_json::Value;

use super::support::*;
use crate::framework::assert_error;

/// `POST /leads` with an `Idempotency-Key`.
async fn upsert_with_key<S, B>(app: &TestApp<S>, key: &str, idempotency_key: &str, body: Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let req = TestRequest::post()
        .uri(LEADS)
        .insert_header(("Authorization", format!("Bearer {key}")))
        .insert_header(("Idempotency-Key", idempotency_key))
        .set_json(body);
    app.send(req).await
}

#[actix_web::test]
async fn the_same_key_and_body_replay_the_first_answer_without_a_second_lead() {
    // Proves the replay: same status and body, `X-Idempotent-Replay: 1` on the replay only, one
    // lead in the database, and that lead found again by a plain upsert.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let body = json!({"phone": "0712345678", "name": "Amina", "note": "first contact"});

    let first = upsert_with_key(&app, &acme.key, "order-42", body.clone()).await;
    assert_status(&first, 201);
    assert_eq!(first.header("x-idempotent-replay"), None);
    let again = upsert_with_key(&app, &acme.key, "order-42", body).await;
    assert_status(&again, 201);
    assert_eq!(again.header("x-idempotent-replay"), Some("1"));
    assert_eq!(again.body, first.body);

    assert_eq!(lead_count(&app, acme.tenant).await, 1);
    let id = id_of(&first.data()["lead"]);
    assert_eq!(read(&app, &acme.key, &id).await["id"], id.as_str());
    let data = upsert(&app, &acme.key, json!({"phone": "+255712345678"}), 200).await;
    assert_eq!((&data["created"], &data["lead"]["id"]), (&json!(false), &json!(id)));
}

#[actix_web::test]
async fn the_same_key_with_another_body_is_refused() {
    // Proves the changed-body refusal (422), which writes nothing.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let first = upsert_with_key(&app, &acme.key, "k1", json!({"phone": "0712345678"})).await;
    assert_status(&first, 201);
    let other = upsert_with_key(&app, &acme.key, "k1", json!({"phone": "0754321987"})).await;
    assert_error(&other, 422);
    assert_eq!(other.header("x-idempotent-replay"), None);
    assert_eq!(lead_count(&app, acme.tenant).await, 1);
}

#[actix_web::test]
async fn a_refused_request_does_not_hold_its_key() {
    // Proves a refusal is not recorded: the same refused body is refused again (not replayed),
    // and the corrected body with the same key is done.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let refused = upsert_with_key(&app, &acme.key, "k2", json!({"name": "Amina"})).await;
    assert_refused(&refused, 422, "nothing_to_identify");
    let again = upsert_with_key(&app, &acme.key, "k2", json!({"name": "Amina"})).await;
    assert_refused(&again, 422, "nothing_to_identify");
    assert_eq!(again.header("x-idempotent-replay"), None);

    let corrected = upsert_with_key(&app, &acme.key, "k2", json!({"name": "Amina", "phone": "0712345678"})).await;
    assert_status(&corrected, 201);
    assert_eq!(corrected.header("x-idempotent-replay"), None);
    assert_eq!(corrected.data()["lead"]["name"], "Amina");
}

#[actix_web::test]
async fn keys_belong_to_one_workspace() {
    // Proves another tenant's use of the same key is its own request, not a replay of ours.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let other = app.account(EDITOR).await;
    let body = json!({"phone": "0712345678"});
    let ours = upsert_with_key(&app, &acme.key, "shared", body.clone()).await;
    let theirs = upsert_with_key(&app, &other.key, "shared", body).await;
    assert_status(&theirs, 201);
    assert_eq!(theirs.header("x-idempotent-replay"), None);
    assert_ne!(theirs.data()["lead"]["id"], ours.data()["lead"]["id"]);
    assert_eq!(lead_count(&app, other.tenant).await, 1);
}

#[actix_web::test]
async fn a_key_is_replayed_for_24_hours_only() {
    // Proves the replay window: a day and an hour later the same key and body are a new
    // request (the person is matched: 200, no replay header).
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let body = json!({"phone": "0712345678"});
    assert_status(&upsert_with_key(&app, &acme.key, "daily", body.clone()).await, 201);
    app.clock.advance(time::Duration::hours(23));
    assert_eq!(upsert_with_key(&app, &acme.key, "daily", body.clone()).await.header("x-idempotent-replay"), Some("1"));

    app.clock.advance(time::Duration::hours(2));
    let later = upsert_with_key(&app, &acme.key, "daily", body).await;
    assert_status(&later, 200);
    assert_eq!(later.header("x-idempotent-replay"), None);
    assert_eq!(later.data()["created"], false);
}

#[actix_web::test]
async fn a_replay_is_refused_when_the_module_is_off() {
    // Proves the module switch holds for replays too: with the module off every leads
    // endpoint answers 403, an `Idempotency-Key` seen before included.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let body = json!({"phone": "0712345678", "name": "Amina"});
    assert_status(&upsert_with_key(&app, &acme.key, "k3", body.clone()).await, 201);
    set_module(&app, acme.tenant, false).await;

    let replay = upsert_with_key(&app, &acme.key, "k3", body).await;
    assert_error(&replay, 403);
}

#[actix_web::test]
async fn a_replay_is_refused_to_an_issuer_who_may_not_upsert() {
    // Proves permissions hold for replays: a key whose issuer lacks `leads.edit` (or any leads
    // permission) gets 403, not another issuer's recorded answer with its lead.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let body = json!({"phone": "0712345678", "name": "Amina"});
    assert_status(&upsert_with_key(&app, &acme.key, "k4", body.clone()).await, 201);
    for permissions in ["leads.view", "webhooks.view"] {
        let user = app.user(acme.tenant, permissions).await;
        let key = app.key(acme.tenant, user).await;
        let replay = upsert_with_key(&app, &key, "k4", body.clone()).await;
        assert_error(&replay, 403);
    }
}

#[actix_web::test]
async fn a_replay_never_shows_a_lead_outside_the_issuer_s_visibility() {
    // Proves another issuer's recorded answer is not handed to a restricted issuer: the same
    // key and body from them is their own upsert, which matches a lead they may not see (409).
    let app = spawn().await;
    let boss = app.account(MANAGER).await;
    let colleague = app.user(boss.tenant, EDITOR).await;
    let restricted = app.user(boss.tenant, EDITOR).await;
    let restricted = app.key(boss.tenant, restricted).await;
    let body = json!({"phone": "0712345678", "name": "Amina"});
    let first = upsert_with_key(&app, &boss.key, "k5", body.clone()).await;
    assert_status(&first, 201);
    assign(&app, &id_of(&first.data()["lead"]), colleague).await;

    let theirs = upsert_with_key(&app, &restricted, "k5", body).await;
    assert_error(&theirs, 409);
}

#[actix_web::test]
async fn a_replay_is_refused_once_the_lead_is_out_of_the_issuer_s_sight() {
    // Proves visibility is checked before a replay: an editor's answer (a match of the boss's
    // unassigned lead) is not replayed after the lead went to a colleague; the repeat answers
    // what a fresh upsert matching a hidden lead answers (409), and shows no lead.
    let app = spawn().await;
    let boss = app.account(MANAGER).await;
    let editor = app.user(boss.tenant, EDITOR).await;
    let editor_key = app.key(boss.tenant, editor).await;
    let colleague = app.user(boss.tenant, EDITOR).await;
    let created = upsert_with_key(&app, &boss.key, "boss", json!({"phone": "0712345678", "name": "Amina"})).await;
    assert_status(&created, 201);
    let body = json!({"phone": "+255712345678", "company": "Duka"});
    let matched = upsert_with_key(&app, &editor_key, "k6", body.clone()).await;
    assert_status(&matched, 200);
    assert_eq!(upsert_with_key(&app, &editor_key, "k6", body.clone()).await.header("x-idempotent-replay"), Some("1"));
    assign(&app, &id_of(&created.data()["lead"]), colleague).await;

    let replay = upsert_with_key(&app, &editor_key, "k6", body).await;
    assert_error(&replay, 409);
    assert_eq!(replay.header("x-idempotent-replay"), None);
    assert!(replay.body.get("data").is_none(), "{}", replay.body);
}
