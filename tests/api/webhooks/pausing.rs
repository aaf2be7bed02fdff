//! Pausing and getting deliveries back (contract: Delivery): fifty consecutive failures pause a
//! receiver, leave a notification, tell the other receivers and hold its new events; replay
//! sends a delivery again under a new id and resumes the receiver; recover replays the failures
//! since a time, once, and releases what was held.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::TestApp;
use serde_json::{Value, json};
use time::Duration;
use time::format_description::well_known::Rfc3339;
use wiremock::ResponseTemplate;

use super::support::*;

/// `GET /webhooks/{id}`.
async fn receiver_state<S, B>(app: &TestApp<S>, key: &str, webhook: i64) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("{WEBHOOKS}/{webhook}"), key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.data().clone()
}

/// The `X-Event-Id`s a receiver got, sorted.
async fn event_ids(receiver: &Receiver) -> Vec<String> {
    let mut ids: Vec<String> = receiver.requests().await.iter().map(|r| header(r, "x-event-id").to_owned()).collect();
    ids.sort();
    ids
}

#[actix_web::test]
async fn fifty_consecutive_failures_pause_the_receiver_and_tell_the_managers_and_the_other_receivers() {
    // Proves the pause: counted over consecutive failed attempts (a success starts again, test
    // sends do not count), at fifty the receiver is paused, a notification is left, the other
    // receivers get `webhook.paused` (not the paused one), and its new events are held.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let a = Receiver::answering(500).await;
    let b = Receiver::answering(200).await;
    let (a_id, _) = register(&app, &acme.key, &a.url(), &["message.sent", "webhook.paused"]).await;
    let (b_id, b_secret) = register(&app, &acme.key, &b.url(), &["webhook.paused"]).await;
    let failures = async || receiver_state(&app, &acme.key, a_id).await["consecutive_failures"].clone();
    let mut message = 0;
    let mut send = async |n: usize| {
        for _ in 0..n {
            message += 1;
            emit(&app, acme.tenant, "message.sent", message_sent(message)).await;
        }
        app.run_jobs().await;
    };

    let res = app.post(&format!("{WEBHOOKS}/{a_id}/test"), &acme.key, json!({})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["delivered"], false, "{}", res.body);
    assert_eq!(failures().await, 0, "a failed test send does not count");

    send(3).await;
    assert_eq!(failures().await, 3);
    a.answer(ResponseTemplate::new(200)).await;
    send(1).await;
    assert_eq!(failures().await, 0, "a success starts the count again");
    a.answer(ResponseTemplate::new(500)).await;
    send(2).await;
    assert_eq!(failures().await, 2, "counted from the success");
    send(47).await;
    let state = receiver_state(&app, &acme.key, a_id).await;
    assert_eq!((&state["consecutive_failures"], &state["status"]), (&json!(49), &json!("active")), "{state}");
    assert!(state["paused_at"].is_null());

    a.answer(ResponseTemplate::new(200)).await;
    let res = app.post(&format!("{WEBHOOKS}/{a_id}/test"), &acme.key, json!({})).await;
    assert_eq!(res.data()["delivered"], true, "{}", res.body);
    assert_eq!(failures().await, 49, "a successful test send does not reset the count");
    a.answer(ResponseTemplate::new(500)).await;
    assert!(b.requests().await.is_empty(), "no pause yet");

    send(1).await;
    let state = receiver_state(&app, &acme.key, a_id).await;
    assert_eq!(state["status"], "paused", "{state}");
    assert_eq!(time_of(&state, "paused_at"), app.clock.now());
    assert_eq!(state["consecutive_failures"], 50);
    assert!(str_of(&state, "paused_reason").contains("500"), "the reason names the last failure: {state}");
    assert_eq!(receiver_state(&app, &acme.key, b_id).await["status"], "active");

    let told = b.requests().await;
    assert_eq!(told.len(), 1, "B is told once");
    assert_signed(&told[0], &b_secret, app.clock.now());
    assert_eq!(header(&told[0], "x-event"), "webhook.paused");
    let body: Value = serde_json::from_slice(&told[0].body).expect("JSON");
    assert_eq!(body["event"], "webhook.paused");
    assert_eq!(body["webhook"]["id"], a_id, "{body}");
    assert_eq!(body["webhook"]["status"], "paused", "{body}");
    assert_eq!(body["webhook"]["consecutive_failures"], 50, "{body}");
    assert!(
        a.requests().await.iter().all(|r| header(r, "x-event") != "webhook.paused"),
        "the paused receiver is not told about itself"
    );
    let own = log(&app, &acme.key, a_id, "?event=webhook.paused").await;
    assert_eq!(own["pagination"]["total"], 0, "{own}");

    let res = app.get(&format!("{WEBHOOKS}/notifications"), &acme.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let notes = res.data()["items"].as_array().expect("items");
    assert_eq!(notes.len(), 1, "{}", res.body);
    assert_eq!(notes[0]["kind"], "webhook.paused");
    assert_eq!(notes[0]["webhook_id"], a_id);
    assert!(str_of(&notes[0], "message").contains(&a_id.to_string()), "{}", notes[0]);
    let other = app.account(MANAGER).await;
    let theirs = app.get(&format!("{WEBHOOKS}/notifications"), &other.key).await;
    assert_eq!(theirs.data()["items"], json!([]), "another tenant is not told: {}", theirs.body);

    let before = a.requests().await.len();
    send(1).await;
    app.advance(Duration::hours(1)).await;
    assert_eq!(a.requests().await.len(), before, "nothing is sent to a paused receiver");
    let held = log(&app, &acme.key, a_id, "?state=held").await;
    assert_eq!(held["pagination"]["total"], 1, "{held}");
    let held = &held["items"][0];
    assert_eq!(held["attempt_count"], 0, "{held}");
    assert!(held["next_attempt_at"].is_null(), "{held}");
    assert_eq!(b.requests().await.len(), 1, "paused once, told once");
}

#[actix_web::test]
async fn replaying_a_failed_delivery_resumes_the_receiver_and_releases_what_it_held() {
    // Proves replay: a new delivery id for the same event, the receiver active again with its
    // count at zero, and the deliveries held during the pause sent too.
    let config = webhooks::WebhooksConfig { pause_after: 3, ..api_tests::webhooks_config() };
    let app = api_tests::spawn_with_webhooks(config).await;
    let acme = app.account(MANAGER).await;
    let a = Receiver::answering(500).await;
    let (a_id, secret) = register(&app, &acme.key, &a.url(), &["message.sent"]).await;
    for n in 1..=3 {
        emit(&app, acme.tenant, "message.sent", message_sent(n)).await;
    }
    app.run_jobs().await;
    assert_eq!(receiver_state(&app, &acme.key, a_id).await["status"], "paused");
    for n in 4..=5 {
        emit(&app, acme.tenant, "message.sent", message_sent(n)).await;
    }
    app.run_jobs().await;
    let held: Vec<Value> = log(&app, &acme.key, a_id, "?state=held").await["items"].as_array().expect("items").clone();
    assert_eq!(held.len(), 2);
    let failed = log(&app, &acme.key, a_id, "?state=failed").await["items"][0].clone();
    let failed_id = str_of(&failed, "id");

    let res = app.post(&format!("{WEBHOOKS}/{a_id}/deliveries/{failed_id}/replay"), &acme.key, json!({})).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let replay = res.data().clone();
    let replay_id = str_of(&replay, "id");
    assert_ne!(replay_id, failed_id, "a new delivery id");
    assert_eq!(replay["replay_of"], failed["id"]);
    assert_eq!(replay["event_id"], failed["event_id"]);
    assert_eq!(replay["state"], "pending");
    let state = receiver_state(&app, &acme.key, a_id).await;
    assert_eq!((&state["status"], &state["consecutive_failures"]), (&json!("active"), &json!(0)), "{state}");
    assert!(state["paused_at"].is_null(), "{state}");
    assert_eq!(log(&app, &acme.key, a_id, "?state=held").await["pagination"]["total"], 0, "released");

    a.answer(ResponseTemplate::new(200)).await;
    app.run_jobs().await;

    let requests = a.requests().await;
    assert_eq!(requests.len(), 3, "the replay and the two held deliveries");
    let sent = requests.iter().find(|r| header(r, "x-delivery-id") == replay_id).expect("the replay is sent");
    assert_eq!(header(sent, "x-event-id"), str_of(&failed, "event_id"));
    assert_signed(sent, &secret, app.clock.now());
    for delivery in &held {
        let id = str_of(delivery, "id");
        let request = requests.iter().find(|r| header(r, "x-delivery-id") == id).expect("a held delivery is sent");
        assert_eq!(header(request, "x-event-id"), str_of(delivery, "event_id"));
    }
    let delivered = log(&app, &acme.key, a_id, "?state=delivered").await;
    assert_eq!(delivered["pagination"]["total"], 3, "{delivered}");
    assert_eq!(
        log(&app, &acme.key, a_id, "?state=failed").await["pagination"]["total"],
        3,
        "the originals stay failed"
    );
}

#[actix_web::test]
async fn a_pending_delivery_is_replayed_at_once_and_a_delivered_one_can_be_too() {
    // Proves the replay rules: a delivery waiting for its next automatic attempt is sent at once
    // as a new delivery (new `X-Delivery-Id`, same `X-Event-Id`) and its automatic attempt is
    // cancelled (it never fires); a delivered one is sent again under a new id; another
    // tenant's delivery is not found, and viewing is not enough to replay.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let receiver = Receiver::answering(503).await;
    let (id, _) = register(&app, &acme.key, &receiver.url(), &["lead.created"]).await;
    let event_id = emit(&app, acme.tenant, "lead.created", new_lead()).await;
    app.run_jobs().await;
    let pending = only_delivery(&app, &acme.key, id).await;
    assert_eq!(pending["state"], "pending");
    assert!(pending["next_attempt_at"].is_string(), "{pending}");
    let replay = format!("{WEBHOOKS}/{id}/deliveries/{}/replay", str_of(&pending, "id"));

    let other = app.account(MANAGER).await;
    assert_eq!(app.post(&replay, &other.key, json!({})).await.status, 404, "another tenant's delivery");
    let sibling = Receiver::answering(200).await;
    let (sibling_id, _) = register(&app, &acme.key, &sibling.url(), &["lead.created"]).await;
    let through_sibling = format!("{WEBHOOKS}/{sibling_id}/deliveries/{}/replay", str_of(&pending, "id"));
    assert_eq!(app.post(&through_sibling, &acme.key, json!({})).await.status, 404, "another receiver's delivery");
    let viewer = app.key(acme.tenant, app.user(acme.tenant, "webhooks.view").await).await;
    assert_eq!(app.post(&replay, &viewer, json!({})).await.status, 403);

    // an attempt in flight this moment (a worker holds the row) is left to finish: 409
    let hold = |until: Option<time::OffsetDateTime>| {
        let (app, delivery) = (&app, str_of(&pending, "id"));
        async move {
            use diesel_async::RunQueryDsl;
            diesel::sql_query("UPDATE webhook_deliveries SET locked_until = $1 WHERE id = $2::uuid")
                .bind::<diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>, _>(until)
                .bind::<diesel::sql_types::Text, _>(delivery)
                .execute(&mut *app.conn().await)
                .await
                .expect("lock");
        }
    };
    hold(Some(app.clock.now() + Duration::minutes(1))).await;
    let res = app.post(&replay, &acme.key, json!({})).await;
    assert_eq!(res.status, 409, "{}", res.body);
    hold(None).await;

    // the receiver is back: the replay goes now, not at the next automatic attempt (`answer`
    // starts a new record of requests)
    assert_eq!(receiver.requests().await.len(), 1, "the first attempt");
    receiver.answer(ResponseTemplate::new(200)).await;
    let res = app.post(&replay, &acme.key, json!({})).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let now = res.data().clone();
    assert_ne!(now["id"], pending["id"]);
    assert_eq!((&now["replay_of"], &now["event_id"]), (&pending["id"], &pending["event_id"]));
    app.run_jobs().await;
    let requests = receiver.requests().await;
    assert_eq!(requests.len(), 1, "the replay, at once");
    assert_eq!(header(&requests[0], "x-delivery-id"), str_of(&now, "id"));
    assert_eq!(header(&requests[0], "x-event-id"), event_id.to_string());
    let original = app.get(&format!("{WEBHOOKS}/{id}/deliveries/{}", str_of(&pending, "id")), &acme.key).await;
    assert_eq!(original.data()["state"], "failed", "{}", original.body);
    assert!(original.data()["next_attempt_at"].is_null(), "its automatic attempt is cancelled: {}", original.body);
    app.advance(Duration::hours(7)).await;
    assert_eq!(receiver.requests().await.len(), 1, "the cancelled attempt never fires");

    let delivered = app.get(&format!("{WEBHOOKS}/{id}/deliveries/{}", str_of(&now, "id")), &acme.key).await;
    assert_eq!(delivered.data()["state"], "delivered");
    let again_path = format!("{WEBHOOKS}/{id}/deliveries/{}/replay", str_of(&now, "id"));
    let res = app.post(&again_path, &acme.key, json!({})).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let again = res.data().clone();
    assert_ne!(again["id"], now["id"]);
    assert_eq!(again["replay_of"], now["id"]);
    app.run_jobs().await;
    let requests = receiver.requests().await;
    assert_eq!(requests.len(), 2, "the replay, then the replay of the replay");
    assert_eq!(header(&requests[1], "x-delivery-id"), str_of(&again, "id"));
    assert_eq!(header(&requests[1], "x-event-id"), event_id.to_string());
    assert_eq!(requests[1].body, requests[0].body, "the same event body");
}

#[actix_web::test]
async fn recover_replays_the_failures_since_a_time_once_and_releases_what_was_held() {
    // Proves recover: only failed deliveries created at or after `since` are replayed, each
    // once; held deliveries are released; the answer counts both.
    let config = webhooks::WebhooksConfig { pause_after: 3, ..api_tests::webhooks_config() };
    let app = api_tests::spawn_with_webhooks(config).await;
    let acme = app.account(MANAGER).await;
    let a = Receiver::answering(500).await;
    let (a_id, _) = register(&app, &acme.key, &a.url(), &["message.sent"]).await;
    let mut events = Vec::new();
    for n in 1..=3 {
        events.push((app.clock.now(), emit(&app, acme.tenant, "message.sent", message_sent(n)).await));
        app.run_jobs().await;
        app.advance(Duration::minutes(10)).await;
    }
    assert_eq!(receiver_state(&app, &acme.key, a_id).await["status"], "paused");
    let held = emit(&app, acme.tenant, "message.sent", message_sent(4)).await;
    app.run_jobs().await;
    let since = events[1].0.format(&Rfc3339).expect("RFC 3339");
    let recover = format!("{WEBHOOKS}/{a_id}/recover");

    let res = app.post(&recover, &acme.key, json!({"since": since})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data(), &json!({"replayed": 2, "released": 1}));
    let res = app.post(&recover, &acme.key, json!({"since": since})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data(), &json!({"replayed": 0, "released": 0}), "already replayed");
    assert_eq!(receiver_state(&app, &acme.key, a_id).await["status"], "active");

    a.answer(ResponseTemplate::new(200)).await;
    app.run_jobs().await;
    let expected = [events[1].1.to_string(), events[2].1.to_string(), held.to_string()];
    assert_eq!(event_ids(&a).await, sorted(&expected.iter().collect::<Vec<_>>()));
}

#[actix_web::test]
async fn recover_needs_an_rfc3339_since() {
    // Proves the validation of `since`: missing, empty or unreadable is a 422 naming the field.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let receiver = Receiver::answering(200).await;
    let (id, _) = register(&app, &acme.key, &receiver.url(), &["lead.created"]).await;
    let recover = format!("{WEBHOOKS}/{id}/recover");
    for body in
        [json!({}), json!({"since": ""}), json!({"since": "yesterday"}), json!({"since": "2026-13-45T00:00:00Z"})]
    {
        let res = app.post(&recover, &acme.key, body.clone()).await;
        assert_eq!(res.status, 422, "{body}: {}", res.body);
        assert!(res.body["errors"]["since"].is_array(), "{body}: {}", res.body);
    }
    let other = app.account(MANAGER).await;
    let res = app.post(&recover, &other.key, json!({"since": "2026-01-01T00:00:00Z"})).await;
    assert_eq!(res.status, 404, "another tenant's receiver: {}", res.body);
}

#[actix_web::test]
async fn a_burst_of_failures_pauses_at_fifty_and_holds_the_rest() {
    // Proves a failing receiver is not given more attempts than would pause it: sixty events
    // queued at once meet a receiver that is down. It has no failures yet, so one claim takes
    // all sixty; exactly fifty attempts are made before the pause (the answers counted as they
    // arrive, before they are recorded), and the other ten are given back and wait, held, with
    // no attempt.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let down = Receiver::answering(503).await;
    let (id, _) = register(&app, &acme.key, &down.url(), &["message.sent"]).await;
    for n in 1..=60 {
        emit(&app, acme.tenant, "message.sent", message_sent(n)).await;
    }
    app.run_jobs().await;

    assert_eq!(down.requests().await.len(), 50);
    let state = receiver_state(&app, &acme.key, id).await;
    assert_eq!((&state["status"], &state["consecutive_failures"]), (&json!("paused"), &json!(50)), "{state}");
    let held = log(&app, &acme.key, id, "?state=held").await;
    assert_eq!(held["pagination"]["total"], 10, "{held}");
    assert!(held["items"].as_array().expect("items").iter().all(|d| d["attempt_count"] == 0), "{held}");
    let failed = log(&app, &acme.key, id, "?state=failed").await;
    assert_eq!(failed["pagination"]["total"], 50, "{failed}");
}
