//! A database that answers, but not in time (issue 15, Faults), against a real `gateway serve`
//! with one pooled connection: a row lock held elsewhere keeps a handler waiting, which is
//! answered 503 when the request timeout ends; a request that meanwhile waits for the pool's
//! only connection is answered 503 when the pool's wait ends. Both carry `Retry-After` and the
//! v3 envelope, and once the lock goes every request is served again: the connection the
//! timed-out handler held is not handed on mid-transaction.

use std::time::{Duration, Instant};

use api_tests::spawn;
use serde_json::{Value, json};

use crate::process::{Gateway, gateway_bin};

/// Longer than the pool's wait for a connection (10 s), so that the waiting request meets the
/// pool's limit first.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(12);
const POOL_WAIT: Duration = Duration::from_secs(10);

async fn answer(res: reqwest::Response, sent: Instant) -> (u16, Option<String>, Value, Duration) {
    let status = res.status().as_u16();
    let retry = res.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = res.json().await.unwrap_or(Value::Null);
    (status, retry, body, sent.elapsed())
}

#[tokio::test]
async fn a_handler_or_a_pool_wait_that_runs_out_of_time_is_a_503() {
    let app = spawn().await;
    let acme = app.account("all").await;
    let group = app.post("/api/v3/contact-groups", &acme.key, json!({"name": "Locked"})).await;
    let uid = group.body["data"]["uid"].as_str().expect("uid").to_owned();
    let timeout_ms = REQUEST_TIMEOUT.as_millis().to_string();
    let gateway = Gateway::start(
        &gateway_bin(),
        app.db.url(),
        71,
        &[("SVC_REQUEST_TIMEOUT_MS", timeout_ms.as_str()), ("SVC_DB_POOL_SIZE", "1")],
    )
    .await;
    let client = reqwest::Client::builder().timeout(REQUEST_TIMEOUT * 2).build().expect("client");

    // Another session holds the group's row.
    let (mut holder, connection) = tokio_postgres::connect(app.db.url(), tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    let lock = holder.transaction().await.expect("begin");
    lock.execute("SELECT 1 FROM contact_groups WHERE uid::text = $1 FOR UPDATE", &[&uid])
        .await
        .expect("lock the group");

    // The rename waits for the row, holding the pool's one connection.
    let rename = {
        let (client, url, key) =
            (client.clone(), format!("{}/api/v3/contact-groups/{uid}", gateway.url), acme.key.clone());
        tokio::spawn(async move {
            let sent = Instant::now();
            let res = client.patch(url).bearer_auth(key).json(&json!({"name": "Renamed"})).send().await;
            answer(res.expect("an answer to the rename"), sent).await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Meanwhile a read waits for that connection, until the pool's wait ends.
    let sent = Instant::now();
    let me = client.get(format!("{}/api/v3/me", gateway.url)).bearer_auth(&acme.key).send().await;
    let (status, retry, body, took) = answer(me.expect("an answer to /me"), sent).await;
    assert_eq!(status, 503, "{body}");
    assert!(took >= POOL_WAIT - Duration::from_millis(500) && took < REQUEST_TIMEOUT, "answered after {took:?}");
    assert!(retry.is_some(), "Retry-After on the pool's 503");
    assert_eq!(body["status"], "error", "{body}");

    // The rename is answered when its time is up, the handler still waiting.
    let (status, retry, body, took) = rename.await.expect("rename task");
    assert_eq!(status, 503, "{body}");
    assert!(took >= REQUEST_TIMEOUT - Duration::from_millis(500), "answered after {took:?}");
    assert!(took < REQUEST_TIMEOUT + Duration::from_secs(2), "answered after {took:?}");
    assert!(retry.is_some(), "Retry-After on the timeout's 503");
    assert_eq!(body["status"], "error", "{body}");

    // The lock goes; the next requests are served, on a connection in a clean state.
    lock.rollback().await.expect("release");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let res = client.get(format!("{}/api/v3/me", gateway.url)).bearer_auth(&acme.key).send().await;
        if res.as_ref().is_ok_and(|r| r.status() == 200) {
            break;
        }
        assert!(Instant::now() < deadline, "not served again within 5 s: {res:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let url = format!("{}/api/v3/contact-groups/{uid}", gateway.url);
    let res = client.patch(&url).bearer_auth(&acme.key).json(&json!({"name": "Renamed again"})).send().await;
    assert_eq!(res.expect("rename").status().as_u16(), 200);
    let read: Value = client.get(&url).bearer_auth(&acme.key).send().await.expect("read").json().await.expect("JSON");
    assert_eq!(read["data"]["name"], "Renamed again", "{read}");
    // (as the superuser: the service role does not see other sessions' state)
    let open: i64 = holder
        .query_one(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
            &[],
        )
        .await
        .expect("sessions")
        .get(0);
    assert_eq!(open, 0, "no session left inside a transaction");
}
