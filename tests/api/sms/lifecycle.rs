//! The message state machine through the sandbox's magic numbers (contract: Message status;
//! docs/api.md "Sandbox magic numbers", "Message states"): timestamps, `checking_delivery`,
//! outbox events, inline and queued dispatch, throughput deferral, and never sending twice.

use api_tests::{json, spawn};
use serde_json::Value;

use super::sms_account;
use super::support::{
    balance, e164, event_names, events_of, read, sandbox_channel, send, set_rate, status_of, str_of, time_of, tz,
};

fn seconds(n: i64) -> time::Duration {
    time::Duration::seconds(n)
}

fn numbers(first: u32, count: u32) -> Vec<String> {
    (first..first + count).map(|n| tz(&format!("{n:04}"))).collect()
}

fn statuses(messages: &[Value]) -> Vec<String> {
    messages.iter().map(|m| str_of(m, "status").to_owned()).collect()
}

#[actix_web::test]
async fn an_ordinary_number_is_sent_then_delivered_with_its_timestamps() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let sent_clock = app.clock.now();
    let messages = send(&app, acme.key(), json!({"recipient": tz("0011"), "message": "Hello"})).await;
    let uid = str_of(&messages[0], "uid").to_owned();
    let m = read(&app, acme.key(), &uid).await;
    assert_eq!(m["status"], "sent");
    assert_eq!(time_of(&m, "sent_at"), sent_clock);
    assert!(m["delivered_at"].is_null() && m["read_at"].is_null(), "{m}");
    assert_eq!(m["gateway_message_id"], messages[0]["gateway_message_id"]);

    // The receipt comes after the sandbox's delay (1 s), not before.
    app.run_jobs().await;
    assert_eq!(read(&app, acme.key(), &uid).await["status"], "sent");
    app.advance(seconds(2)).await;
    let m = read(&app, acme.key(), &uid).await;
    assert_eq!(m["status"], "delivered", "{m}");
    assert_eq!(time_of(&m, "sent_at"), sent_clock, "sent_at is kept");
    assert_eq!(time_of(&m, "delivered_at"), sent_clock + seconds(2));
    assert!(m["error_message"].is_null());
    assert_eq!(event_names(&app.pool, acme.tenant(), &messages[0]).await, ["message.sent", "message.delivered"]);
    // Delivered is where an SMS stays.
    app.advance(seconds(3601)).await;
    assert_eq!(read(&app, acme.key(), &uid).await["status"], "delivered");
    assert_eq!(app.sandbox().calls(), 1);
}

#[actix_web::test]
async fn message_events_carry_the_flat_payload() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(
        &app,
        acme.key(),
        json!({"recipient": tz("0011"), "message": "Hello", "media_url": "https://x.example/a.png"}),
    )
    .await;
    app.advance(seconds(2)).await;
    let m = &messages[0];
    let events = events_of(&app.pool, acme.tenant(), m).await;
    assert_eq!(events.len(), 2, "{events:?}");
    for ((name, payload), status) in events.iter().zip(["sent", "delivered"]) {
        assert_eq!(name, &format!("message.{status}"));
        assert_eq!(payload["message_id"], m["id"]);
        assert_eq!(payload["direction"], "outbound");
        assert_eq!(payload["sender"], "ACME");
        assert_eq!(payload["recipient"], e164("0011"));
        assert_eq!(payload["status"], status);
        assert_eq!(payload["body"], "Hello");
        assert_eq!(payload["media_url"], "https://x.example/a.png");
        assert_eq!(payload["channel_type"], "sms");
        assert_eq!(payload["uid"], m["uid"]);
        assert_eq!(payload["gateway_message_id"], m["gateway_message_id"]);
    }
}

#[actix_web::test]
async fn a_0001_number_is_refused_failed_at_once_with_a_reason_and_refunded() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0001"), "message": "Hi"})).await;
    let m = &messages[0];
    assert_eq!(m["status"], "failed", "a refusal is no HTTP error: {m}");
    assert!(m["gateway_message_id"].is_null());
    let error = str_of(m, "error_message").to_lowercase();
    assert!(error.contains("refused"), "{error}");
    let stored = read(&app, acme.key(), str_of(m, "uid")).await;
    assert!(stored["sent_at"].is_null() && stored["delivered_at"].is_null(), "{stored}");
    assert_eq!(balance(&app, acme.key()).await, 100_000);
    let events = events_of(&app.pool, acme.tenant(), m).await;
    assert_eq!(events.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["message.failed"]);
    assert_eq!(events[0].1["status"], "failed");
    assert_eq!(events[0].1["error_message"], stored["error_message"]);
    // Never resent, whatever runs later.
    app.advance(seconds(301)).await;
    app.advance(seconds(3601)).await;
    assert_eq!(status_of(&app, acme.key(), m).await, "failed");
    assert_eq!((app.sandbox().calls(), app.sandbox().count()), (1, 1));
}

#[actix_web::test]
async fn a_0002_number_stays_sent_then_moves_to_checking_delivery_after_the_receipt_wait() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0002")})).await;
    let m = &messages[0];
    assert_eq!(m["status"], "sent");
    app.advance(seconds(2)).await;
    assert_eq!(status_of(&app, acme.key(), m).await, "sent");
    app.advance(seconds(3590)).await;
    assert_eq!(status_of(&app, acme.key(), m).await, "sent", "the wait is an hour");
    app.advance(seconds(10)).await;
    let stored = read(&app, acme.key(), str_of(m, "uid")).await;
    assert_eq!(stored["status"], "checking_delivery", "{stored}");
    assert!(stored["delivered_at"].is_null());
    // The sandbox cannot say what became of it: it stays there.
    app.advance(time::Duration::days(2)).await;
    assert_eq!(status_of(&app, acme.key(), m).await, "checking_delivery");
    assert_eq!(event_names(&app.pool, acme.tenant(), m).await, ["message.sent"], "checking_delivery emits nothing");
    assert_eq!(app.sandbox().calls(), 1, "asking for a status is no resend");
}

#[actix_web::test]
async fn a_0003_number_is_sent_then_failed_by_its_receipt() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let sent_clock = app.clock.now();
    let messages = send(&app, acme.key(), json!({"recipient": tz("0003")})).await;
    let m = &messages[0];
    assert_eq!(m["status"], "sent");
    assert!(m["error_message"].is_null());
    app.advance(seconds(2)).await;
    let stored = read(&app, acme.key(), str_of(m, "uid")).await;
    assert_eq!(stored["status"], "failed", "{stored}");
    assert!(str_of(&stored, "error_message").contains("0003"), "the receipt's reason: {stored}");
    assert_eq!(time_of(&stored, "sent_at"), sent_clock);
    assert!(stored["delivered_at"].is_null());
    assert_eq!(stored["gateway_message_id"], m["gateway_message_id"]);
    assert_eq!(event_names(&app.pool, acme.tenant(), m).await, ["message.sent", "message.failed"]);
    app.advance(seconds(3601)).await;
    assert_eq!(status_of(&app, acme.key(), m).await, "failed");
}

#[actix_web::test]
async fn each_magic_number_in_one_send_takes_its_own_path() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let recipients = ["0011", "0001", "0002", "0003"].map(tz);
    let messages = send(&app, acme.key(), json!({"recipients": recipients})).await;
    assert_eq!(statuses(&messages), ["sent", "failed", "sent", "sent"]);
    app.advance(seconds(2)).await;
    let mut now = Vec::new();
    for m in &messages {
        now.push(status_of(&app, acme.key(), m).await);
    }
    assert_eq!(now, ["delivered", "failed", "sent", "failed"]);
    app.advance(seconds(3601)).await;
    assert_eq!(status_of(&app, acme.key(), &messages[2]).await, "checking_delivery");
    assert_eq!(app.sandbox().calls(), 4);
}

#[actix_web::test]
async fn up_to_five_recipients_are_sent_before_the_answer() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipients": numbers(11, 5)})).await;
    assert_eq!(statuses(&messages), vec!["sent"; 5]);
    assert!(messages.iter().all(|m| m["gateway_message_id"].is_string()));
    assert_eq!(app.sandbox().count(), 5);
}

#[actix_web::test]
async fn a_send_of_more_than_five_is_queued_then_dispatched_by_jobs() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipients": numbers(11, 6), "message": "Batch"})).await;
    assert_eq!(statuses(&messages), vec!["queued"; 6]);
    assert!(messages.iter().all(|m| m["gateway_message_id"].is_null()));
    assert_eq!(app.sandbox().count(), 0, "nothing sent before the jobs run");
    assert_eq!(status_of(&app, acme.key(), &messages[0]).await, "queued");
    assert!(event_names(&app.pool, acme.tenant(), &messages[0]).await.is_empty());

    app.run_jobs().await;
    for m in &messages {
        let stored = read(&app, acme.key(), str_of(m, "uid")).await;
        assert_eq!(stored["status"], "sent", "{stored}");
        assert!(stored["sent_at"].is_string());
        assert_eq!(event_names(&app.pool, acme.tenant(), m).await, ["message.sent"]);
    }
    assert_eq!(app.sandbox().count(), 6);
    app.advance(seconds(2)).await;
    for m in &messages {
        assert_eq!(status_of(&app, acme.key(), m).await, "delivered");
    }
}

#[actix_web::test]
async fn the_provider_is_called_once_per_message_however_often_jobs_run() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let inline = send(&app, acme.key(), json!({"recipients": [tz("0011"), tz("0001"), tz("0002")]})).await;
    let mut big = numbers(21, 6);
    big.extend([tz("0001").replace("0712", "0713"), tz("0003")]);
    let queued = send(&app, acme.key(), json!({"recipients": big})).await;
    assert_eq!(queued.len(), 8);
    for _ in 0..3 {
        app.run_jobs().await;
    }
    app.advance(seconds(2)).await;
    // The inline send's fallback job is due now; the receipt checks an hour later.
    app.advance(seconds(301)).await;
    app.advance(seconds(3601)).await;
    app.advance(time::Duration::days(1)).await;
    let sandbox = app.sandbox();
    assert_eq!(sandbox.count(), 11);
    assert_eq!(sandbox.calls(), 11, "a message handed to the provider twice");
    let mut references: Vec<String> = sandbox.sent().into_iter().map(|s| s.reference).collect();
    references.sort();
    let mut uids: Vec<String> = inline.iter().chain(&queued).map(|m| str_of(m, "uid").to_owned()).collect();
    uids.sort();
    assert_eq!(references, uids, "our message uid is the client reference");
    for m in inline.iter().chain(&queued) {
        let status = status_of(&app, acme.key(), m).await;
        assert!(["delivered", "failed", "checking_delivery"].contains(&status.as_str()), "{status}");
    }
}

#[actix_web::test]
async fn throughput_defers_a_queued_send_second_by_second() {
    let app = spawn().await;
    let account = app.account("all").await;
    sandbox_channel(&app.pool, account.tenant, "slow", Some(2)).await;
    set_rate(&app.pool, account.tenant, None, 1).await;
    let mut conn = app.conn().await;
    accounts::wallet::credit(&mut conn, account.tenant, 1_000, None).await.expect("credit");
    drop(conn);
    let messages = send(&app, &account.key, json!({"recipients": numbers(11, 7)})).await;
    assert_eq!(statuses(&messages), vec!["queued"; 7]);
    app.run_jobs().await;
    assert_eq!(app.sandbox().count(), 2, "two a second");
    let mut current = Vec::new();
    for m in &messages {
        current.push(status_of(&app, &account.key, m).await);
    }
    assert_eq!(current.iter().filter(|s| *s == "queued").count(), 5, "the rest stay queued: {current:?}");
    app.advance(seconds(1)).await;
    assert_eq!(app.sandbox().count(), 4);
    app.advance(seconds(1)).await;
    assert_eq!(app.sandbox().count(), 6);
    app.advance(seconds(1)).await;
    assert_eq!(app.sandbox().count(), 7);
    assert_eq!(app.sandbox().calls(), 7);
}

/// docs/api.md: "Throughput limits defer messages: they stay `queued` and go in the next second."
/// An inline send is no exception.
#[actix_web::test]
async fn throughput_defers_the_rest_of_an_inline_send_to_the_next_second() {
    let app = spawn().await;
    let account = app.account("all").await;
    sandbox_channel(&app.pool, account.tenant, "slow", Some(2)).await;
    set_rate(&app.pool, account.tenant, None, 1).await;
    let mut conn = app.conn().await;
    accounts::wallet::credit(&mut conn, account.tenant, 1_000, None).await.expect("credit");
    drop(conn);
    let messages = send(&app, &account.key, json!({"recipients": numbers(11, 4)})).await;
    let mut answered = statuses(&messages);
    answered.sort();
    assert_eq!(answered, ["queued", "queued", "sent", "sent"]);
    assert_eq!(app.sandbox().count(), 2);
    app.advance(seconds(1)).await;
    let mut current = Vec::new();
    for m in &messages {
        current.push(status_of(&app, &account.key, m).await);
    }
    // the first two were delivered meanwhile (the sandbox's one-second receipts)
    assert!(
        current.iter().all(|s| s == "sent" || s == "delivered"),
        "the deferred half should go in the next second: {current:?}"
    );
    assert_eq!(app.sandbox().calls(), 4);
}

#[actix_web::test]
async fn a_message_read_after_dispatch_shows_the_route_and_price() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipients": numbers(11, 6)})).await;
    app.run_jobs().await;
    let m = read(&app, acme.key(), str_of(&messages[5], "uid")).await;
    assert_eq!(m["tenant_channel_id"], acme.channel.id);
    assert_eq!(m["channel_code"], "main");
    assert_eq!(m["sender"], "ACME");
    assert_eq!(m["price_minor"], 100);
    assert_eq!(app.sandbox().sent_to(&e164("0016"))[0].from.as_deref(), Some("ACME"));
}

/// docs/api.md: a message left `processing` by a sender that died during the provider call is
/// failed with "Send outcome unknown", not resent, and refunded (most such messages never
/// reached the provider).
#[actix_web::test]
async fn a_message_left_processing_by_a_dead_sender_is_failed_not_resent() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipients": numbers(11, 6)})).await;
    let stuck = &messages[2];
    // Another sender claimed it and died before recording the provider's answer.
    let now = app.clock.now().format(&time::format_description::well_known::Rfc3339).expect("format");
    api_tests::sql_exec(
        &app.pool,
        &format!("UPDATE messages SET status = 'processing', updated_at = '{now}' WHERE id = {}", stuck["id"]),
    )
    .await;
    app.run_jobs().await;
    assert_eq!(app.sandbox().count(), 5, "the claimed one is left to its sender");
    assert_eq!(status_of(&app, acme.key(), stuck).await, "processing");
    app.advance(seconds(301)).await;
    let stored = read(&app, acme.key(), str_of(stuck, "uid")).await;
    assert_eq!(stored["status"], "failed", "{stored}");
    assert!(str_of(&stored, "error_message").contains("Send outcome unknown"), "{stored}");
    assert!(app.sandbox().sent_to(&e164("0013")).is_empty(), "never handed to the provider by us");
    assert_eq!(app.sandbox().calls(), 5);
    assert_eq!(event_names(&app.pool, acme.tenant(), stuck).await, ["message.failed"]);
    assert_eq!(balance(&app, acme.key()).await, 100_000 - 500, "refunded");
}

/// Crash recovery in seconds (issue 14): a message `processing` under a process whose heartbeat
/// stopped a lease ago (30 s by default) is failed as "outcome unknown" at once, without the
/// five minutes; one whose process still beats is left to it, and failed a lease after its last
/// beat.
#[actix_web::test]
async fn a_message_held_by_a_process_whose_heartbeat_stopped_is_failed_within_a_lease() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipients": numbers(11, 6)})).await;
    let (dead, alive) = (&messages[2], &messages[3]);
    let rfc3339 = |t: time::OffsetDateTime| t.format(&time::format_description::well_known::Rfc3339).expect("format");
    let now = app.clock.now();
    let (dead_process, live_process) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
    api_tests::sql_exec(
        &app.pool,
        &format!(
            "INSERT INTO workers (id, started_at, last_seen_at) VALUES
                 ('{dead_process}', '{started}', '{dead_seen}'), ('{live_process}', '{started}', '{now}')",
            started = rfc3339(now - seconds(600)),
            dead_seen = rfc3339(now - seconds(31)),
            now = rfc3339(now),
        ),
    )
    .await;
    for (message, process) in [(dead, dead_process), (alive, live_process)] {
        api_tests::sql_exec(
            &app.pool,
            &format!(
                "UPDATE messages SET status = 'processing', updated_at = '{}', claimed_by = '{process}' WHERE id = {}",
                rfc3339(now),
                message["id"]
            ),
        )
        .await;
    }
    app.run_jobs().await;
    let stored = read(&app, acme.key(), str_of(dead, "uid")).await;
    assert_eq!(stored["status"], "failed", "{stored}");
    assert!(str_of(&stored, "error_message").contains("Send outcome unknown"), "{stored}");
    assert!(app.sandbox().sent_to(&e164("0013")).is_empty(), "never handed to the provider by us");
    assert_eq!(status_of(&app, acme.key(), alive).await, "processing", "its process still beats");
    assert_eq!(app.sandbox().count(), 4);

    // The live process stops beating: a lease (and a second) after its last beat, failed too.
    app.advance(seconds(31)).await;
    let stored = read(&app, acme.key(), str_of(alive, "uid")).await;
    assert_eq!(stored["status"], "failed", "{stored}");
    assert!(str_of(&stored, "error_message").contains("Send outcome unknown"), "{stored}");
    assert!(app.sandbox().sent_to(&e164("0014")).is_empty());
    assert_eq!(app.sandbox().calls(), 4);
    assert_eq!(balance(&app, acme.key()).await, 100_000 - 400, "both refunded");
}

/// The consent ledger applies to every send (issue 3): a number that opts out while a message
/// to it waits for its schedule_time does not get it.
#[actix_web::test]
async fn a_scheduled_message_to_a_number_that_opted_out_meanwhile_is_not_sent() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let at = (app.clock.now() + time::Duration::hours(1))
        .format(&time::format_description::well_known::Rfc3339)
        .expect("format");
    let messages = send(&app, acme.key(), json!({"recipients": [tz("0011"), tz("0012")], "schedule_time": at})).await;
    super::support::inbound(&app, &acme.channel, &tz("0011"), "STOP").await;
    app.advance(time::Duration::minutes(61)).await;
    assert!(app.sandbox().sent_to(&e164("0011")).is_empty(), "a message reached a number that had opted out");
    assert_eq!(app.sandbox().sent_to(&e164("0012")).len(), 1);
    let stored = read(&app, acme.key(), str_of(&messages[0], "uid")).await;
    assert_eq!(stored["status"], "failed", "{stored}");
    assert!(str_of(&stored, "error_message").contains("opted out"), "{stored}");
    assert_eq!(balance(&app, acme.key()).await, 100_000 - 100, "opted-out records cost nothing");
}
