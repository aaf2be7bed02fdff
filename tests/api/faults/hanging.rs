//! Outside systems that hang (issue 15, Faults): an SMS provider that never answers is cut off by
//! the provider timeout, its messages fail (refunded, never resent) while another channel keeps
//! sending; webhook receivers that accept the connection and never answer, or trickle their
//! answer, are cut off by the delivery timeout, logged as timeouts and retried on the schedule,
//! while a healthy receiver is served at once.
//!
//! The chat and payments providers come with their domains (issues 17 and 20); their clients
//! take the same `SVC_PROVIDER_TIMEOUT_MS` and get the same test.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use api_tests::{FakeAfricasTalking, json, spawn, sql_rows};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::process::{Gateway, gateway_bin};

/// `status -> count` of the messages sent with `sender`.
async fn statuses(pool: &store::Pool, sender: &str) -> BTreeMap<String, i64> {
    let rows = sql_rows(
        pool,
        &format!("SELECT status, count(*) AS n FROM messages WHERE sender = '{sender}' GROUP BY status"),
    )
    .await;
    rows.iter().map(|r| (r["status"].as_str().unwrap_or_default().to_owned(), r["n"].as_i64().unwrap_or(0))).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_sms_provider_is_cut_off_while_another_channel_keeps_sending() {
    let app = spawn().await;
    let acme = app.account("all").await;
    let hanging = MockServer::start().await;
    let stalled = FakeAfricasTalking::new(Duration::from_secs(600));
    Mock::given(method("POST")).respond_with(stalled).mount(&hanging).await;
    let prompt = MockServer::start().await;
    Mock::given(method("POST")).respond_with(FakeAfricasTalking::new(Duration::ZERO)).mount(&prompt).await;
    for (code, provider, sender) in [("slow", &hanging, "SLOW"), ("fast", &prompt, "FAST")] {
        app.africastalking_route(acme.tenant, code, &provider.uri(), sender, None).await;
    }
    {
        let mut conn = app.conn().await;
        messaging::channels::set_rate(&mut conn, acme.tenant, None, 100).await.expect("rate");
        accounts::wallet::credit(&mut conn, acme.tenant, 1_000_000, None).await.expect("credit");
    }
    let gateway = Gateway::start(
        &gateway_bin(),
        app.db.url(),
        61,
        &[("SVC_PROVIDER_TIMEOUT_MS", "2000"), ("SVC_SMS_INLINE_MAX", "0")],
    )
    .await;
    let client = reqwest::Client::new();
    let send = |sender: &'static str, recipients: Vec<String>| {
        let request = client
            .post(format!("{}/api/v3/sms/send", gateway.url))
            .bearer_auth(&acme.key)
            .json(&json!({"recipients": recipients, "message": "Hello", "sender_id": sender}));
        async move {
            let res = request.send().await.expect("send");
            assert_eq!(res.status().as_u16(), 201);
        }
    };

    let started = Instant::now();
    send("SLOW", (0..40).map(|i| format!("0713{:06}", i)).collect()).await;
    let fast_sent_within = |within: Duration, first: u32| {
        let pool = app.pool.clone();
        async move {
            let asked = Instant::now();
            loop {
                let fast = statuses(&pool, "FAST").await;
                if fast.get("sent").copied().unwrap_or(0) == i64::from(first + 5) {
                    return;
                }
                assert!(asked.elapsed() < within, "the fast channel waited on the slow one: {fast:?}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    for i in 0..5 {
        send("FAST", vec![format!("0714{:06}", i)]).await;
    }
    // The other channel sends while the slow one's calls are still hanging.
    fast_sent_within(Duration::from_secs(2), 0).await;
    assert_eq!(statuses(&app.pool, "SLOW").await.get("failed"), None, "the slow calls are still hanging");

    // Once a call has timed out, more sends on the hanging channel (more jobs than the worker
    // runs at once) wait for it instead of filling the worker: the other channel still sends.
    let deadline = Instant::now() + Duration::from_secs(5);
    while hanging.received_requests().await.unwrap_or_default().len() < 32 {
        assert!(Instant::now() < deadline, "the first calls never reached the hanging provider");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(2300)).await;
    for i in 0..10 {
        send("SLOW", vec![format!("0715{:06}", i)]).await;
    }
    for i in 5..10 {
        send("FAST", vec![format!("0714{:06}", i)]).await;
    }
    fast_sent_within(Duration::from_millis(1500), 5).await;

    // The slow channel's calls end at the timeout: failed, refunded, each number called once.
    let slow = loop {
        let slow = statuses(&app.pool, "SLOW").await;
        if slow.get("failed").copied().unwrap_or(0) == 50 {
            break slow;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the hanging calls were never cut off: {slow:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(slow.len(), 1, "{slow:?}");
    let failed = sql_rows(&app.pool, "SELECT error_message FROM messages WHERE sender = 'SLOW'").await;
    for row in &failed {
        let reason = row["error_message"].as_str().unwrap_or_default();
        assert!(reason.contains("did not answer in time"), "{reason}");
    }
    let calls = hanging.received_requests().await.unwrap_or_default();
    let mut numbers: Vec<String> = calls
        .iter()
        .map(|r| {
            let form: BTreeMap<String, String> = serde_urlencoded::from_bytes(&r.body).unwrap_or_default();
            form.get("to").cloned().unwrap_or_default()
        })
        .collect();
    numbers.sort();
    numbers.dedup();
    assert_eq!(numbers.len(), calls.len(), "a number was sent twice");
    let balance =
        sql_rows(&app.pool, &format!("SELECT balance_minor FROM wallets WHERE tenant_id = {}", acme.tenant.0)).await;
    assert_eq!(balance[0]["balance_minor"], 1_000_000 - 10 * 100, "the failed sends were refunded");
}

/// A receiver on 127.0.0.1 that reads each request and then holds the connection, answering
/// nothing (`head: None`), or sends `head` and then its body a byte every 300 ms. Counts the
/// requests it got.
async fn stalling(head: Option<&'static str>) -> (String, Arc<AtomicU32>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/in", listener.local_addr().expect("addr"));
    let requests = Arc::new(AtomicU32::new(0));
    let counted = requests.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut buf = [0_u8; 16 * 1024];
                if stream.read(&mut buf).await.is_ok_and(|n| n > 0) {
                    counted.fetch_add(1, Ordering::SeqCst);
                }
                if let Some(head) = head {
                    let _ = stream.write_all(head.as_bytes()).await;
                    while stream.write_all(b"k").await.is_ok() {
                        tokio::time::sleep(Duration::from_millis(300)).await;
                    }
                }
                // hold the connection until the other side gives up
                let _ = stream.read(&mut buf).await;
            });
        }
    });
    (url, requests)
}

/// A receiver that answers 200 at once and notes when each request arrived.
#[derive(Clone, Default)]
struct Noting(Arc<Mutex<Vec<Instant>>>);

impl Respond for Noting {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(Instant::now());
        ResponseTemplate::new(200)
    }
}

#[actix_web::test]
async fn receivers_that_never_answer_or_trickle_are_timed_out_and_retried_while_others_are_served() {
    // The tests' delivery timeout is 2 s (api_tests::webhooks_config).
    let app = spawn().await;
    let acme = app.account("webhooks.view,webhooks.manage").await;
    let (silent, silent_requests) = stalling(None).await;
    let (trickling, trickling_requests) = stalling(Some("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")).await;
    let healthy = MockServer::start().await;
    let noted = Noting::default();
    Mock::given(method("POST")).respond_with(noted.clone()).mount(&healthy).await;
    let mut ids = BTreeMap::new();
    for (name, url) in [("silent", silent), ("trickling", trickling), ("healthy", format!("{}/in", healthy.uri()))] {
        let res = app.post("/api/v3/webhooks", &acme.key, json!({"url": url, "events": ["lead.created"]})).await;
        assert_eq!(res.status, 201, "{}", res.body);
        ids.insert(name, res.data()["id"].as_i64().expect("id"));
    }
    let mut conn = app.conn().await;
    store::outbox::emit(&mut conn, acme.tenant, "lead.created", json!({"lead": {"id": "l1"}}), app.clock.now())
        .await
        .expect("emit");

    let started = Instant::now();
    app.run_jobs().await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(6), "the attempts were bounded: {took:?}");
    let arrived = noted.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(arrived.len(), 1);
    assert!(arrived[0] - started < Duration::from_secs(1), "the healthy receiver waited on the others");

    let delivery = |name: &'static str| {
        let id = ids[name];
        let app = &app;
        let key = acme.key.clone();
        async move {
            let res = app.get(&format!("/api/v3/webhooks/{id}/deliveries"), &key).await;
            assert_eq!(res.status, 200, "{}", res.body);
            res.data()["items"][0].clone()
        }
    };
    assert_eq!(delivery("healthy").await["state"], "delivered");
    for name in ["silent", "trickling"] {
        let log = delivery(name).await;
        assert_eq!(log["state"], "pending", "{name} is retried: {log}");
        let attempt = &log["attempts"][0];
        assert!(attempt["status"].is_null(), "{name}: {attempt}");
        assert!(attempt["error"].as_str().is_some_and(|e| e.contains("timed out")), "{name}: {attempt}");
        assert!(attempt["duration_ms"].as_i64().is_some_and(|ms| (1_900..4_000).contains(&ms)), "{name}: {attempt}");
        let next = log["next_attempt_at"].as_str().expect("a next attempt");
        let next = time::OffsetDateTime::parse(next, &time::format_description::well_known::Rfc3339).expect("time");
        let wait = next - app.clock.now();
        assert!(wait > time::Duration::seconds(50) && wait < time::Duration::seconds(70), "{name}: {wait}");
    }
    assert_eq!((silent_requests.load(Ordering::SeqCst), trickling_requests.load(Ordering::SeqCst)), (1, 1));

    // On schedule, a minute later, both are tried again; the healthy one is not.
    app.advance(time::Duration::seconds(70)).await;
    assert_eq!((silent_requests.load(Ordering::SeqCst), trickling_requests.load(Ordering::SeqCst)), (2, 2));
    assert_eq!(noted.0.lock().unwrap_or_else(|p| p.into_inner()).len(), 1);
    let _: Value = delivery("silent").await;
}
