//! PostgreSQL stopped for 10 seconds under load and started again (issue 15, Faults). The test
//! owns its cluster (initdb'd in a temporary folder from the system's server binaries, as
//! `cargo xtask` does for its own) so that stopping it touches no other test. A real
//! `gateway serve` runs on it; clients create leads without pause, and a receiver on 127.0.0.1
//! takes every `lead.created` event.
//!
//! What must hold: during the outage every request is answered within the request timeout, 503
//! in its route family's envelope (v3 `{status, message}`, the data routes' `temporary_failure`),
//! never a 500 and never a hang; once the server is back, requests succeed again within 5
//! seconds; every lead answered 2xx exists exactly once, and each one's event reaches the
//! receiver exactly once (the fan-out job and the deliveries in flight resume).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use api_tests::{json, sql_rows};
use pg_cluster::{Cluster, Server};
use serde_json::Value;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::process::{Gateway, gateway_bin};

const OUTAGE: Duration = Duration::from_secs(10);
/// The request timeout the gateway runs with here; an answer later than this is a hang.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Writers going at once, like a few busy clients.
const WRITERS: u32 = 6;

/// A cluster of the test's own, stopped and removed when the test ends, whatever way it ends.
struct OwnCluster(Cluster);

impl Drop for OwnCluster {
    fn drop(&mut self) {
        if self.0.is_running() {
            let _ = self.0.stop();
        }
        let _ = std::fs::remove_dir_all(self.0.dir());
    }
}

/// What one request came to: when it was sent (since the test began), how long it took, its
/// status and body.
#[derive(Debug, Clone)]
struct Answer {
    sent: Duration,
    took: Duration,
    status: u16,
    body: Value,
    phone: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_is_answered_503_and_ridden_out() {
    let server = Server::locate().expect("the PostgreSQL server binaries");
    let dir = std::env::temp_dir().join(format!("svc-outage-{}", std::process::id()));
    let mut cluster = Cluster::new(&server, &dir).expect("cluster folder");
    cluster.init().expect("initdb");
    let port = pg_cluster::free_port().expect("a port");
    cluster.start(port, pg_cluster::TEST_SETTINGS).expect("start PostgreSQL");
    let own = OwnCluster(cluster.clone());
    cluster.create_database("svc").await.expect("database");
    let url = cluster.url("svc");

    let timeout_ms = REQUEST_TIMEOUT.as_millis().to_string();
    let gateway = Gateway::start(
        &gateway_bin(),
        &url,
        41,
        &[
            ("SVC_RUN_MIGRATIONS", "true"),
            ("SVC_WEBHOOKS_ALLOW_LOOPBACK", "1"),
            ("SVC_REQUEST_TIMEOUT_MS", timeout_ms.as_str()),
            ("SVC_RATE_LIMIT_PER_MINUTE", "1000000"),
        ],
    )
    .await;
    let pool = store::pool(&url, 2).expect("pool");
    let key = {
        let mut conn = store::connect_system(&pool).await.expect("connection");
        let tenant = accounts::tenants::create(&mut conn, "Acme", "TZS").await.expect("tenant");
        let everything = accounts::users::parse_permissions("all").expect("permissions");
        let user =
            accounts::users::create(&mut conn, kernel::TenantId(tenant.id), "Ops", &everything).await.expect("user");
        let issuer = accounts::keys::KeyIssuer::User(kernel::UserId(user.id));
        accounts::keys::create(&mut conn, kernel::TenantId(tenant.id), issuer, "Load", None)
            .await
            .expect("key")
            .plaintext
    };
    let receiver = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200)).mount(&receiver).await;
    let client = reqwest::Client::builder().timeout(REQUEST_TIMEOUT * 3).build().expect("client");
    let registered = client
        .post(format!("{}/api/v3/webhooks", gateway.url))
        .bearer_auth(&key)
        .json(&json!({"url": format!("{}/in", receiver.uri()), "events": ["lead.created"]}))
        .send()
        .await
        .expect("register the receiver");
    assert_eq!(registered.status().as_u16(), 201);

    // Writers: a new lead per request, without pause, until told to stop.
    let began = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let next = Arc::new(AtomicU32::new(0));
    let mut writers = Vec::new();
    for _ in 0..WRITERS {
        let (client, base, key, stop, next) =
            (client.clone(), gateway.url.clone(), key.clone(), stop.clone(), next.clone());
        writers.push(tokio::spawn(async move {
            let mut answers = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let phone = format!("+2557{:08}", next.fetch_add(1, Ordering::Relaxed));
                let sent = began.elapsed();
                let res = client
                    .post(format!("{base}/api/v3/leads"))
                    .bearer_auth(&key)
                    .json(&json!({"name": "Asha", "phone": phone, "company": "Duka"}))
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("a lead create sent at {sent:?} got no answer: {e:?}"));
                let status = res.status().as_u16();
                let body = res.json().await.unwrap_or(Value::Null);
                answers.push(Answer { sent, took: began.elapsed() - sent, status, body, phone });
                if status == 503 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            answers
        }));
    }

    tokio::time::sleep(Duration::from_secs(2)).await;
    let stopping = began.elapsed();
    cluster.stop().expect("stop PostgreSQL");
    // The data routes answer in their own envelope meanwhile.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let data = client
        .get(format!("{}/api/v3/data/tables", gateway.url))
        .bearer_auth(&key)
        .send()
        .await
        .expect("a data request during the outage");
    assert_eq!(data.status().as_u16(), 503);
    assert!(data.headers().contains_key("retry-after"));
    let data: Value = data.json().await.expect("JSON");
    assert_eq!(data["error"]["code"], "temporary_failure", "{data}");
    assert_eq!(data["error"]["retryable"], true, "{data}");
    tokio::time::sleep(OUTAGE - Duration::from_secs(1)).await;
    cluster.start(port, pg_cluster::TEST_SETTINGS).expect("start PostgreSQL again");
    let back = began.elapsed();
    tokio::time::sleep(Duration::from_secs(8)).await;
    stop.store(true, Ordering::Relaxed);
    let mut answers: Vec<Answer> = Vec::new();
    for writer in writers {
        answers.extend(writer.await.expect("writer"));
    }
    answers.sort_by_key(|a| a.sent);

    // Every answer in time, none a 500; the outage answered 503 in the v3 envelope.
    for answer in &answers {
        assert!(answer.took < REQUEST_TIMEOUT + Duration::from_secs(1), "too slow: {answer:?}");
        assert!(matches!(answer.status, 200 | 201 | 503), "{answer:?}");
    }
    let refused: Vec<&Answer> = answers.iter().filter(|a| a.status == 503).collect();
    assert!(refused.len() >= WRITERS as usize, "the outage was seen: {} refusals", refused.len());
    for answer in &refused {
        assert_eq!(answer.body["status"], "error", "{answer:?}");
        assert!(answer.body["message"].as_str().is_some_and(|m| m.contains("try again")), "{answer:?}");
        assert!(answer.sent + answer.took > stopping && answer.sent < back + Duration::from_secs(5), "{answer:?}");
    }
    // Back within 5 seconds of the server's return.
    let first_after = answers.iter().find(|a| a.sent > back && a.status == 201).expect("a lead created after");
    let recovered = (first_after.sent + first_after.took).saturating_sub(back);
    assert!(recovered < Duration::from_secs(5), "recovered {recovered:?} after the database came back");
    eprintln!(
        "outage: {} requests, {} answered 503, the first lead created {recovered:?} after the database's return",
        answers.len(),
        refused.len()
    );
    assert!(answers.iter().filter(|a| a.sent > back + Duration::from_secs(5)).all(|a| a.status == 201));

    // Nothing answered 2xx lost, nothing applied twice.
    let created: Vec<&Answer> = answers.iter().filter(|a| a.status == 201).collect();
    let rows =
        sql_rows(&pool, "SELECT value, count(*) AS n FROM lead_identities WHERE kind = 'phone' GROUP BY value").await;
    let stored: BTreeMap<String, i64> =
        rows.iter().map(|r| (r["value"].as_str().expect("value").to_owned(), r["n"].as_i64().expect("n"))).collect();
    assert!(stored.values().all(|n| *n == 1), "a lead applied twice");
    for answer in &created {
        assert!(stored.contains_key(answer.phone.trim_start_matches('+')), "lost: {answer:?}");
    }

    // Every stored lead's event reaches the receiver, once.
    let leads = sql_rows(&pool, "SELECT count(*) AS n FROM leads").await[0]["n"].as_u64().expect("count");
    assert!(leads >= created.len() as u64);
    let deadline = Instant::now() + Duration::from_secs(30);
    let by_event = loop {
        let requests = receiver.received_requests().await.unwrap_or_default();
        let mut by_event: BTreeMap<String, u32> = BTreeMap::new();
        for request in &requests {
            let event = request.headers.get("x-event-id").and_then(|v| v.to_str().ok()).unwrap_or_default();
            *by_event.entry(event.to_owned()).or_default() += 1;
        }
        if by_event.len() as u64 >= leads || Instant::now() > deadline {
            break by_event;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(by_event.len() as u64, leads, "every lead.created delivered");
    let twice: Vec<_> = by_event.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
    drop(own);
}
