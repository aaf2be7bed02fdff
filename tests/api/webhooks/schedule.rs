//! The retry schedule (contract: Delivery): attempts after 1 min, 5 min, 30 min, 2 h and 6 h on
//! the test clock, which answers are retried (5xx, 408, 425, 429, redirects, refused connections,
//! timeouts) and which fail at once, `Retry-After` in seconds or as a date and capped at six
//! hours, and message callbacks attempted once.

use serde_json::{Value, json};
use time::Duration;
use wiremock::ResponseTemplate;

use super::support::*;

/// The contract's waits between attempts, in seconds: 1 min, 5 min, 30 min, 2 h, 6 h.
const SCHEDULE: [i64; 5] = [60, 300, 1_800, 7_200, 21_600];

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
