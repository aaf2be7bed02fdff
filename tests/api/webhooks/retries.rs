//! Delivery over time (contract: Events, Delivery): the retry schedule on the test clock, which
//! answers are retried, timeouts and `Retry-After`, single-attempt message callbacks, pausing
//! after fifty consecutive failures, replay and recovery, the fan-out rules with lead filters,
//! no event lost or invented by a transaction, and the bound on attempts in flight per receiver.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::TestApp;
use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::ResponseTemplate;

use super::support::*;

/// The contract's waits between attempts, in seconds: 1 min, 5 min, 30 min, 2 h, 6 h.
const SCHEDULE: [i64; 5] = [60, 300, 1_800, 7_200, 21_600];

/// A lead event's payload; answers the lead's id, which tells the receivers' bodies apart.
fn lead(stage: &str, labels: &[&str], channel: &str) -> (String, Value) {
    let id = uuid::Uuid::new_v4().to_string();
    let labels: Vec<Value> = labels.iter().map(|name| json!({"id": 1, "name": name})).collect();
    let payload = json!({
        "lead": {"id": id, "name": "Asha", "stage": stage, "labels": labels, "source_channel": channel},
        "reason": null,
        "actor": {"kind": "api", "id": null, "label": "API"},
        "source": {"kind": "api", "id": null, "channel": channel},
    });
    (id, payload)
}

fn new_lead() -> Value {
    lead("new", &[], "whatsapp").1
}

/// A `message.sent` payload as messaging writes it.
fn message_sent(id: i64) -> Value {
    json!({
        "message_id": id, "direction": "outbound", "sender": "ACME", "recipient": "+255712345678",
        "status": "sent", "body": "x", "media_url": null, "channel_type": "sms",
    })
}

fn time_of(value: &Value, field: &str) -> OffsetDateTime {
    let raw = value[field].as_str().unwrap_or_else(|| panic!("{field} in {value}"));
    OffsetDateTime::parse(raw, &Rfc3339).unwrap_or_else(|e| panic!("{field} {raw}: {e}"))
}

fn str_of<'a>(value: &'a Value, field: &str) -> &'a str {
    value[field].as_str().unwrap_or_else(|| panic!("{field} in {value}"))
}

/// `GET /webhooks/{id}/deliveries` with a query (`?state=held`...): `{items, pagination}`.
async fn log<S, B>(app: &TestApp<S>, key: &str, webhook: i64, query: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("{WEBHOOKS}/{webhook}/deliveries{query}"), key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.data().clone()
}

/// The receiver's deliveries, newest first.
async fn deliveries<S, B>(app: &TestApp<S>, key: &str, webhook: i64) -> Vec<Value>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    log(app, key, webhook, "?per_page=100").await["items"].as_array().expect("items").clone()
}

/// The receiver's one delivery.
async fn only_delivery<S, B>(app: &TestApp<S>, key: &str, webhook: i64) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let items = deliveries(app, key, webhook).await;
    assert_eq!(items.len(), 1, "one delivery: {items:?}");
    items[0].clone()
}

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

/// `POST /webhooks` with filters, 201 expected: the receiver's id.
async fn register_filtered<S, B>(app: &TestApp<S>, key: &str, url: &str, events: &[&str], filters: Value) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(WEBHOOKS, key, json!({"url": url, "events": events, "filters": filters})).await;
    assert_eq!(res.status, 201, "{}", res.body);
    res.data()["id"].as_i64().expect("id")
}

/// The `X-Event-Id`s a receiver got, sorted.
async fn event_ids(receiver: &Receiver) -> Vec<String> {
    let mut ids: Vec<String> = receiver.requests().await.iter().map(|r| header(r, "x-event-id").to_owned()).collect();
    ids.sort();
    ids
}

/// The lead ids a receiver got, sorted.
async fn lead_ids(receiver: &Receiver) -> Vec<String> {
    let mut ids: Vec<String> = receiver.bodies().await.iter().map(|b| str_of(&b["lead"], "id").to_owned()).collect();
    ids.sort();
    ids
}

fn sorted(ids: &[&String]) -> Vec<String> {
    let mut ids: Vec<String> = ids.iter().map(|s| (*s).clone()).collect();
    ids.sort();
    ids
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn count(pool: &store::Pool, sql: &str, tenant: kernel::TenantId) -> i64 {
    use diesel_async::RunQueryDsl;
    let mut conn = store::connect(pool).await.expect("connection");
    let row: Count = diesel::sql_query(sql)
        .bind::<BigInt, _>(tenant.0)
        .get_result(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    row.n
}

#[actix_web::test]
async fn a_failing_receiver_is_retried_on_the_clock_after_1_5_30_minutes_2_and_6_hours_then_failed() {
    // Proves the schedule (1 min, 5 min, 30 min, 2 h, 6 h, at most 10% later), moved by the
    // clock alone; the same delivery and event ids and body bytes on every attempt; a fresh
    // signed timestamp each time, so a retry hours later still passes the five-minute rule.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let receiver = Receiver::answering(503).await;
    let (id, secret) = register(&app, &acme.key, &receiver.url(), &["lead.created"]).await;
    let event_id = emit(&app, acme.tenant, "lead.created", new_lead()).await;

    app.run_jobs().await;
    let mut sent_at = vec![app.clock.now()];
    let first = receiver.requests().await;
    assert_eq!(first.len(), 1, "the first attempt at once");
    assert_signed(&first[0], &secret, app.clock.now());

    for (i, wait) in SCHEDULE.into_iter().enumerate() {
        let wait = Duration::seconds(wait);
        let waiting = only_delivery(&app, &acme.key, id).await;
        assert_eq!(waiting["state"], "pending", "{waiting}");
        let attempted = time_of(&waiting["attempts"][i], "attempted_at");
        assert_eq!(attempted, sent_at[i]);
        let next = time_of(&waiting, "next_attempt_at") - attempted;
        assert!(next >= wait && next <= wait * 1.1, "attempt {} waits {next}, not {wait} + up to 10%", i + 2);

        app.advance(wait - Duration::seconds(1)).await;
        assert_eq!(receiver.requests().await.len(), i + 1, "nothing a second before {wait}");
        app.advance(wait / 10 + Duration::seconds(1)).await;
        let requests = receiver.requests().await;
        assert_eq!(requests.len(), i + 2, "attempt {} by {wait} + 10%", i + 2);
        let request = requests.last().expect("an attempt");
        assert_signed(request, &secret, app.clock.now());
        assert_eq!(header(request, "x-timestamp"), app.clock.now().unix_timestamp().to_string());
        sent_at.push(app.clock.now());
    }

    let requests = receiver.requests().await;
    let delivery = only_delivery(&app, &acme.key, id).await;
    assert_eq!(delivery["state"], "failed", "{delivery}");
    assert!(delivery["next_attempt_at"].is_null(), "{delivery}");
    assert_eq!(delivery["attempt_count"], 6);
    assert_eq!(delivery["last_status"], 503);
    let attempts = delivery["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 6);
    for (i, attempt) in attempts.iter().enumerate() {
        assert_eq!(attempt["number"], i + 1);
        assert_eq!(attempt["status"], 503);
        assert!(attempt["duration_ms"].is_i64(), "{attempt}");
        assert_eq!(time_of(attempt, "attempted_at"), sent_at[i]);
        let request = &requests[i];
        assert_eq!(header(request, "x-delivery-id"), str_of(&delivery, "id"), "same delivery id on every retry");
        assert_eq!(header(request, "x-event-id"), event_id.to_string(), "same event id on every retry");
        assert_eq!(request.body, requests[0].body, "the same bytes on every attempt");
        assert_eq!(header(request, "x-timestamp"), sent_at[i].unix_timestamp().to_string());
    }
    let body: Value = serde_json::from_slice(&requests[0].body).expect("JSON");
    assert_eq!(body["event_id"], event_id.to_string());

    app.advance(Duration::hours(7)).await;
    assert_eq!(receiver.requests().await.len(), 6, "nothing after the sixth attempt");
}

#[actix_web::test]
async fn server_errors_408_425_429_redirects_and_refused_connections_are_retried() {
    // Proves which failures are retried: 5xx, 408, 425, 429, a redirect (never followed) and a
    // connection that fails.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let elsewhere = Receiver::answering(200).await;
    let mut receivers = Vec::new();
    for status in [500, 502, 503, 408, 425, 429] {
        receivers.push((status, Receiver::answering(status).await));
    }
    for status in [301, 302] {
        let moved = ResponseTemplate::new(status).insert_header("Location", elsewhere.url().as_str());
        receivers.push((status, Receiver::with(moved).await));
    }
    let mut ids = Vec::new();
    for (_, receiver) in &receivers {
        ids.push(register(&app, &acme.key, &receiver.url(), &["lead.created"]).await.0);
    }
    let (dead, _) = register(&app, &acme.key, &dead_url(), &["lead.created"]).await;
    emit(&app, acme.tenant, "lead.created", new_lead()).await;

    app.run_jobs().await;
    for ((status, receiver), id) in receivers.iter().zip(&ids) {
        assert_eq!(receiver.requests().await.len(), 1, "{status}");
        let delivery = only_delivery(&app, &acme.key, *id).await;
        assert_eq!(delivery["state"], "pending", "{status} is retried: {delivery}");
        assert!(delivery["next_attempt_at"].is_string(), "{delivery}");
        assert_eq!(delivery["attempts"][0]["status"], *status);
    }
    let refused = only_delivery(&app, &acme.key, dead).await;
    assert_eq!(refused["state"], "pending", "a refused connection is retried: {refused}");
    assert!(refused["attempts"][0]["status"].is_null(), "{refused}");
    assert!(refused["attempts"][0]["error"].is_string(), "{refused}");

    app.advance(Duration::seconds(66)).await;
    for (status, receiver) in &receivers {
        assert_eq!(receiver.requests().await.len(), 2, "{status} tried again after a minute");
    }
    assert_eq!(only_delivery(&app, &acme.key, dead).await["attempt_count"], 2);
    assert!(elsewhere.requests().await.is_empty(), "redirects are not followed");
}

#[actix_web::test]
async fn other_client_errors_fail_at_once_after_one_attempt() {
    // Proves that 4xx other than 408, 425 and 429 are not retried.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let mut receivers = Vec::new();
    for status in [400, 401, 403, 404, 410, 422] {
        let receiver = Receiver::answering(status).await;
        let (id, _) = register(&app, &acme.key, &receiver.url(), &["lead.created"]).await;
        receivers.push((status, receiver, id));
    }
    emit(&app, acme.tenant, "lead.created", new_lead()).await;

    app.run_jobs().await;
    app.advance(Duration::hours(9)).await;
    for (status, receiver, id) in &receivers {
        assert_eq!(receiver.requests().await.len(), 1, "{status}: one attempt");
        let delivery = only_delivery(&app, &acme.key, *id).await;
        assert_eq!(delivery["state"], "failed", "{status}: {delivery}");
        assert!(delivery["next_attempt_at"].is_null(), "{delivery}");
        assert_eq!(delivery["attempts"].as_array().map(Vec::len), Some(1));
        assert_eq!(delivery["last_status"], *status);
    }
}

#[actix_web::test]
async fn a_receiver_that_answers_200_on_the_third_attempt_has_the_delivery_delivered() {
    // Proves that a 2xx ends the retries as delivered, with every attempt in the log.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let receiver = Receiver::answering(503).await;
    let (id, _) = register(&app, &acme.key, &receiver.url(), &["lead.created"]).await;
    emit(&app, acme.tenant, "lead.created", new_lead()).await;
    app.run_jobs().await;
    app.advance(Duration::seconds(66)).await;
    assert_eq!(receiver.requests().await.len(), 2);

    receiver.answer(ResponseTemplate::new(200)).await;
    app.advance(Duration::seconds(330)).await;
    app.advance(Duration::hours(9)).await;

    assert_eq!(receiver.requests().await.len(), 1, "one more attempt, then no other");
    let delivery = only_delivery(&app, &acme.key, id).await;
    assert_eq!(delivery["state"], "delivered", "{delivery}");
    assert!(delivery["next_attempt_at"].is_null());
    let statuses: Vec<&Value> =
        delivery["attempts"].as_array().expect("attempts").iter().map(|a| &a["status"]).collect();
    assert_eq!(statuses, [&json!(503), &json!(503), &json!(200)]);
}

#[actix_web::test]
async fn a_receiver_slower_than_the_timeout_is_retried_with_the_timeout_logged() {
    // Proves that a timeout (2 s in the tests) is a failed attempt without a status, retried.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let receiver = Receiver::with(ResponseTemplate::new(200).set_delay(std::time::Duration::from_secs(3))).await;
    let (id, _) = register(&app, &acme.key, &receiver.url(), &["lead.created"]).await;
    emit(&app, acme.tenant, "lead.created", new_lead()).await;

    app.run_jobs().await;

    let delivery = only_delivery(&app, &acme.key, id).await;
    assert_eq!(delivery["state"], "pending", "{delivery}");
    assert!(delivery["next_attempt_at"].is_string(), "{delivery}");
    let attempt = &delivery["attempts"][0];
    assert!(attempt["status"].is_null(), "{attempt}");
    let error = str_of(attempt, "error").to_lowercase();
    assert!(error.contains("timed out") || error.contains("timeout"), "{error}");
    assert!(attempt["duration_ms"].as_i64().is_some_and(|ms| ms >= 1_900), "{attempt}");
}

#[actix_web::test]
async fn a_longer_retry_after_is_honoured() {
    // Proves that `Retry-After: 1200` on a 429 puts the next attempt 20 minutes later, not 1.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let receiver = Receiver::with(ResponseTemplate::new(429).insert_header("Retry-After", "1200")).await;
    let (id, _) = register(&app, &acme.key, &receiver.url(), &["lead.created"]).await;
    emit(&app, acme.tenant, "lead.created", new_lead()).await;
    app.run_jobs().await;

    let delivery = only_delivery(&app, &acme.key, id).await;
    let wait = time_of(&delivery, "next_attempt_at") - time_of(&delivery["attempts"][0], "attempted_at");
    assert_eq!(wait, Duration::minutes(20), "{delivery}");
    app.advance(Duration::minutes(6)).await;
    assert_eq!(receiver.requests().await.len(), 1, "not at the schedule's minute");
    app.advance(Duration::minutes(14) - Duration::seconds(1)).await;
    assert_eq!(receiver.requests().await.len(), 1, "not before 20 minutes");
    app.advance(Duration::seconds(1)).await;
    assert_eq!(receiver.requests().await.len(), 2, "at 20 minutes");
}

#[actix_web::test]
async fn a_retry_after_given_as_an_http_date_is_honoured() {
    // Proves the other form of `Retry-After`: an IMF-fixdate 30 minutes ahead of the clock.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let date = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    let then = (app.clock.now() + Duration::minutes(30)).to_offset(time::UtcOffset::UTC);
    let retry_after = then.format(&date).expect("HTTP date");
    let receiver = Receiver::with(ResponseTemplate::new(503).insert_header("Retry-After", retry_after.as_str())).await;
    let (id, _) = register(&app, &acme.key, &receiver.url(), &["lead.created"]).await;
    emit(&app, acme.tenant, "lead.created", new_lead()).await;
    app.run_jobs().await;

    let delivery = only_delivery(&app, &acme.key, id).await;
    assert_eq!(time_of(&delivery, "next_attempt_at"), then, "{retry_after}: {delivery}");
    app.advance(Duration::minutes(30) - Duration::seconds(1)).await;
    assert_eq!(receiver.requests().await.len(), 1);
    app.advance(Duration::seconds(1)).await;
    assert_eq!(receiver.requests().await.len(), 2, "at the date asked");
}

#[actix_web::test]
async fn a_retry_after_beyond_six_hours_waits_six_hours() {
    // Proves the cap on `Retry-After`: a day asked is six hours waited.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let receiver = Receiver::with(ResponseTemplate::new(429).insert_header("Retry-After", "86400")).await;
    let (id, _) = register(&app, &acme.key, &receiver.url(), &["lead.created"]).await;
    emit(&app, acme.tenant, "lead.created", new_lead()).await;
    app.run_jobs().await;

    let delivery = only_delivery(&app, &acme.key, id).await;
    let wait = time_of(&delivery, "next_attempt_at") - time_of(&delivery["attempts"][0], "attempted_at");
    assert_eq!(wait, Duration::hours(6), "{delivery}");
    app.advance(Duration::hours(6) - Duration::seconds(1)).await;
    assert_eq!(receiver.requests().await.len(), 1);
    app.advance(Duration::seconds(1)).await;
    assert_eq!(receiver.requests().await.len(), 2, "at six hours");
}

#[actix_web::test]
async fn a_message_callback_is_attempted_once_and_never_retried() {
    // Proves the contract's exception: message callbacks are one attempt, even on a 503.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let receiver = Receiver::answering(503).await;
    let (id, _) = register(&app, &acme.key, &receiver.url(), &["message.sent"]).await;
    emit(&app, acme.tenant, "message.sent", message_sent(1)).await;

    app.run_jobs().await;
    assert_eq!(receiver.requests().await.len(), 1);
    app.advance(Duration::hours(7)).await;

    assert_eq!(receiver.requests().await.len(), 1, "no retry");
    let delivery = only_delivery(&app, &acme.key, id).await;
    assert_eq!(delivery["state"], "failed", "{delivery}");
    assert!(delivery["next_attempt_at"].is_null());
    assert_eq!(delivery["attempt_count"], 1);
    assert_eq!(delivery["last_status"], 503);
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
async fn a_pending_delivery_cannot_be_replayed_and_a_delivered_one_can() {
    // Proves the replay rules: a delivery still waiting for its next attempt answers 409; a
    // delivered one is sent again under a new id; another tenant's delivery is not found, and
    // viewing is not enough to replay.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let receiver = Receiver::answering(503).await;
    let (id, _) = register(&app, &acme.key, &receiver.url(), &["lead.created"]).await;
    let event_id = emit(&app, acme.tenant, "lead.created", new_lead()).await;
    app.run_jobs().await;
    let pending = only_delivery(&app, &acme.key, id).await;
    assert_eq!(pending["state"], "pending");
    let replay = format!("{WEBHOOKS}/{id}/deliveries/{}/replay", str_of(&pending, "id"));

    let res = app.post(&replay, &acme.key, json!({})).await;
    assert_eq!(res.status, 409, "{}", res.body);
    assert_eq!(res.body["status"], "error");

    let other = app.account(MANAGER).await;
    assert_eq!(app.post(&replay, &other.key, json!({})).await.status, 404, "another tenant's delivery");
    let sibling = Receiver::answering(200).await;
    let (sibling_id, _) = register(&app, &acme.key, &sibling.url(), &["lead.created"]).await;
    let through_sibling = format!("{WEBHOOKS}/{sibling_id}/deliveries/{}/replay", str_of(&pending, "id"));
    assert_eq!(app.post(&through_sibling, &acme.key, json!({})).await.status, 404, "another receiver's delivery");
    let viewer = app.key(acme.tenant, app.user(acme.tenant, "webhooks.view").await).await;
    assert_eq!(app.post(&replay, &viewer, json!({})).await.status, 403);

    receiver.answer(ResponseTemplate::new(200)).await;
    app.advance(Duration::seconds(66)).await;
    let delivered = only_delivery(&app, &acme.key, id).await;
    assert_eq!(delivered["state"], "delivered");

    let res = app.post(&replay, &acme.key, json!({})).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let again = res.data().clone();
    assert_ne!(again["id"], delivered["id"]);
    assert_eq!(again["replay_of"], delivered["id"]);
    app.run_jobs().await;
    let requests = receiver.requests().await;
    assert_eq!(requests.len(), 2, "the retry, then the replay");
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
async fn every_subscribed_receiver_of_the_tenant_gets_its_own_delivery_of_an_event() {
    // Proves the fan-out: one delivery per subscribed receiver of the event's tenant, one event
    // id across them and a delivery id each; no delivery to the unsubscribed or another tenant.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let other = app.account(MANAGER).await;
    let (one, two, unsubscribed, foreign) = (
        Receiver::answering(200).await,
        Receiver::answering(200).await,
        Receiver::answering(200).await,
        Receiver::answering(200).await,
    );
    register(&app, &acme.key, &one.url(), &["lead.created"]).await;
    register(&app, &acme.key, &two.url(), &["lead.created", "lead.updated"]).await;
    register(&app, &acme.key, &unsubscribed.url(), &["lead.updated", "message.sent"]).await;
    register(&app, &other.key, &foreign.url(), &["lead.created"]).await;
    let event_id = emit(&app, acme.tenant, "lead.created", new_lead()).await;

    app.run_jobs().await;

    let (one, two) = (one.requests().await, two.requests().await);
    assert_eq!((one.len(), two.len()), (1, 1));
    assert_eq!(header(&one[0], "x-event-id"), event_id.to_string());
    assert_eq!(header(&two[0], "x-event-id"), event_id.to_string());
    assert_ne!(header(&one[0], "x-delivery-id"), header(&two[0], "x-delivery-id"));
    assert!(unsubscribed.requests().await.is_empty(), "not subscribed");
    assert!(foreign.requests().await.is_empty(), "another tenant's receiver");
}

#[actix_web::test]
async fn lead_filters_choose_which_receivers_get_a_lead_event() {
    // Proves the lead filters: stages, labels (by name, any case) and channels (the lead's
    // source channel) each narrow, together they all must match, empty means any, and they
    // leave other events alone.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let receivers = [
        Receiver::answering(200).await,
        Receiver::answering(200).await,
        Receiver::answering(200).await,
        Receiver::answering(200).await,
        Receiver::answering(200).await,
        Receiver::answering(200).await,
    ];
    let [won, vip, whatsapp, any, empty, won_vip] = &receivers;
    let events = ["lead.created", "lead.stage_changed", "message.sent"];
    register_filtered(&app, &acme.key, &won.url(), &events, json!({"stages": ["won"]})).await;
    register_filtered(&app, &acme.key, &vip.url(), &events, json!({"labels": ["vip"]})).await;
    register_filtered(&app, &acme.key, &whatsapp.url(), &events, json!({"channels": ["whatsapp"]})).await;
    register_filtered(&app, &acme.key, &any.url(), &events, json!({})).await;
    let no_lists = json!({"stages": [], "labels": [], "channels": []});
    register_filtered(&app, &acme.key, &empty.url(), &events, no_lists).await;
    register_filtered(&app, &acme.key, &won_vip.url(), &events, json!({"stages": ["won"], "labels": ["VIP"]})).await;

    let (plain, p) = lead("new", &[], "sms");
    let (all, a) = lead("won", &["VIP"], "whatsapp");
    let (won_other, w) = lead("won", &["Other"], "sms");
    let (vip_new, v) = lead("new", &["Repeat", "vIp"], "web");
    let (from_whatsapp, c) = lead("qualified", &[], "whatsapp");
    emit(&app, acme.tenant, "lead.created", p).await;
    emit(&app, acme.tenant, "lead.stage_changed", a).await;
    emit(&app, acme.tenant, "lead.created", w).await;
    emit(&app, acme.tenant, "lead.created", v).await;
    emit(&app, acme.tenant, "lead.created", c).await;
    app.run_jobs().await;

    let everything = [&plain, &all, &won_other, &vip_new, &from_whatsapp];
    assert_eq!(lead_ids(won).await, sorted(&[&all, &won_other]), "stages");
    assert_eq!(lead_ids(vip).await, sorted(&[&all, &vip_new]), "labels, any case");
    assert_eq!(lead_ids(whatsapp).await, sorted(&[&all, &from_whatsapp]), "channels");
    assert_eq!(lead_ids(any).await, sorted(&everything), "{{}} is any");
    assert_eq!(lead_ids(empty).await, sorted(&everything), "empty lists are any");
    assert_eq!(lead_ids(won_vip).await, sorted(&[&all]), "every list must match");

    // not a lead event: the filters do not apply
    emit(&app, acme.tenant, "message.sent", message_sent(1)).await;
    app.run_jobs().await;
    for receiver in &receivers {
        let last = receiver.bodies().await.pop().expect("a body");
        assert_eq!(last["event"], "message.sent", "{last}");
    }
}

#[actix_web::test]
async fn an_event_rolled_back_is_never_delivered_and_a_committed_one_has_its_delivery_at_once() {
    // Proves the fan-out lives in the event's transaction: no delivery without a committed
    // event, and a delivery row as soon as one commits, before any worker runs.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let receiver = Receiver::answering(200).await;
    register(&app, &acme.key, &receiver.url(), &["lead.created"]).await;
    let deliveries_sql = "SELECT count(*) AS n FROM webhook_deliveries WHERE tenant_id = $1";
    let events_sql = "SELECT count(*) AS n FROM events WHERE tenant_id = $1";

    let mut conn = app.conn().await;
    let now = app.clock.now();
    let rolled_back = diesel_async::AsyncConnection::transaction::<(), kernel::Error, _>(&mut *conn, async |conn| {
        store::outbox::emit(conn, acme.tenant, "lead.created", new_lead(), now).await?;
        Err(kernel::Error::internal("the domain change failed"))
    })
    .await;
    drop(conn);
    assert!(rolled_back.is_err());
    assert_eq!(count(&app.pool, events_sql, acme.tenant).await, 0);
    assert_eq!(count(&app.pool, deliveries_sql, acme.tenant).await, 0, "no delivery for a rolled-back event");
    app.run_jobs().await;
    assert!(receiver.requests().await.is_empty());

    let event_id = emit(&app, acme.tenant, "lead.created", new_lead()).await;
    assert_eq!(count(&app.pool, deliveries_sql, acme.tenant).await, 1, "the delivery exists before any worker runs");
    app.run_jobs().await;
    let requests = receiver.requests().await;
    assert_eq!(requests.len(), 1);
    assert_eq!(header(&requests[0], "x-event-id"), event_id.to_string());
}

/// A receiver that holds every request for a while before answering 200, and counts how many
/// it holds at once (a plain HTTP/1.1 listener: wiremock's responders cannot see when an
/// answer is finished).
struct SlowReceiver {
    url: String,
    received: Arc<AtomicUsize>,
    most_at_once: Arc<AtomicUsize>,
}

impl SlowReceiver {
    async fn start(hold: std::time::Duration) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/hooks/in", listener.local_addr().expect("addr"));
        let received = Arc::new(AtomicUsize::new(0));
        let most_at_once = Arc::new(AtomicUsize::new(0));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let (r, m) = (received.clone(), most_at_once.clone());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (received, most_at_once, in_flight) = (r.clone(), m.clone(), in_flight.clone());
                tokio::spawn(async move {
                    if read_request(&mut stream).await.is_none() {
                        return;
                    }
                    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    most_at_once.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(hold).await;
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    received.fetch_add(1, Ordering::SeqCst);
                    let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                    let _ = stream.write_all(answer).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Self { url, received, most_at_once }
    }
}

/// Reads one request's head and body; None when the connection ends first.
async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<()> {
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return Some(());
            }
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[actix_web::test]
async fn a_slow_receiver_never_has_more_attempts_in_flight_than_its_bound() {
    // Proves the per-receiver bound: with two per receiver, a slow receiver holds at most two
    // attempts at once while the fast one gets everything in the same run.
    let config = webhooks::WebhooksConfig { per_receiver: 2, concurrency: 8, ..api_tests::webhooks_config() };
    let app = api_tests::spawn_with_webhooks(config).await;
    let acme = app.account(MANAGER).await;
    let slow = SlowReceiver::start(std::time::Duration::from_millis(300)).await;
    let fast = Receiver::answering(200).await;
    let (slow_id, _) = register(&app, &acme.key, &slow.url, &["lead.created"]).await;
    let (fast_id, _) = register(&app, &acme.key, &fast.url(), &["lead.updated"]).await;
    for _ in 0..6 {
        emit(&app, acme.tenant, "lead.created", new_lead()).await;
        emit(&app, acme.tenant, "lead.updated", new_lead()).await;
    }

    app.run_jobs().await;

    assert_eq!(fast.requests().await.len(), 6);
    assert_eq!(slow.received.load(Ordering::SeqCst), 6);
    assert_eq!(slow.most_at_once.load(Ordering::SeqCst), 2, "two at a time, never more");
    assert_eq!(log(&app, &acme.key, slow_id, "?state=delivered").await["pagination"]["total"], 6);
    assert_eq!(log(&app, &acme.key, fast_id, "?state=delivered").await["pagination"]["total"], 6);
}
