//! A call campaign survives a crash (issue 22): the real `gateway` binary is killed with SIGKILL
//! twice while it places a campaign's calls with a local fake of Africa's Talking Voice, started
//! again on the same database, and in the end no callee was called twice: the fake got each
//! number at most once, each callee has one call, a call cut off in the provider's hands is
//! failed "outcome unknown" (never placed again), the rest complete through the provider's
//! callbacks, and the wallet paid one minute per completed call and nothing else.
//!
//! Everything stays on 127.0.0.1: the test's database, the gateways' ports and the fake.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use api_tests::{json, spawn, sql_rows};
use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Respond, ResponseTemplate};

use super::ALL_DAY;
use crate::process::{Gateway, gateway_bin, log_path};
use crate::sms::crash::make_group;

/// The default price of a started minute (`SVC_VOICE_PRICE_MINOR`).
const MINUTE: i64 = 5_000;

/// Africa's Talking Voice, slowly: each call request is queued after `delay` with session
/// `ATVId_<n>`; remembers `(to, clientRequestId, sessionId)` of every request it answered.
#[derive(Clone)]
struct FakeVoice {
    requests: Arc<Mutex<Vec<(String, String, String)>>>,
    delay: Duration,
}

impl Respond for FakeVoice {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let form: HashMap<String, String> = serde_urlencoded::from_bytes(&request.body).unwrap_or_default();
        let field = |name: &str| form.get(name).cloned().unwrap_or_default();
        let mut requests = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        let session = format!("ATVId_{}", requests.len());
        requests.push((field("to"), field("clientRequestId"), session.clone()));
        ResponseTemplate::new(201)
            .set_body_json(json!({
                "entries": [{"phoneNumber": field("to"), "status": "Queued", "sessionId": session}],
                "errorMessage": "None"
            }))
            .set_delay(self.delay)
    }
}

/// `status -> count` of the campaign's calls, and how many reached the provider.
async fn calls(pool: &store::Pool, campaign: i64) -> (BTreeMap<String, i64>, i64) {
    let rows = sql_rows(
        pool,
        &format!(
            "SELECT status, count(*) AS n, count(provider_call_id) AS placed FROM calls
             WHERE call_campaign_id = {campaign} GROUP BY status"
        ),
    )
    .await;
    let by_status =
        rows.iter().map(|r| (r["status"].as_str().unwrap_or_default().to_owned(), r["n"].as_i64().unwrap_or(0)));
    (by_status.collect(), rows.iter().map(|r| r["placed"].as_i64().unwrap_or(0)).sum())
}

async fn wait_for(
    pool: &store::Pool,
    campaign: i64,
    within: Duration,
    what: &str,
    done: impl Fn(&BTreeMap<String, i64>, i64) -> bool,
) -> BTreeMap<String, i64> {
    let deadline = Instant::now() + within;
    loop {
        let (by_status, placed) = calls(pool, campaign).await;
        if done(&by_status, placed) {
            return by_status;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}: {by_status:?}, {placed} placed");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A dead process's jobs come back after 2 s; few requests at a time, so that placing the
/// campaign's calls takes seconds and each kill lands in the middle of it.
const SETTINGS: &[(&str, &str)] = &[
    ("SVC_JOB_LEASE_SECONDS", "2"),
    ("SVC_WORKER_CONCURRENCY", "2"),
    ("SVC_SMS_SEND_CONCURRENCY", "2"),
    ("SVC_SMS_SEND_CHUNK", "20"),
    ("SVC_DB_POOL_SIZE", "6"),
];

#[actix_web::test]
async fn a_call_campaign_killed_twice_while_placing_calls_nobody_twice() {
    const CALLEES: u32 = 150;
    const CREDIT: i64 = 10_000_000;
    let bin = gateway_bin();
    let fake = FakeVoice { requests: Arc::default(), delay: Duration::from_millis(200) };
    let provider = MockServer::start().await;
    assert!(provider.address().ip().is_loopback(), "the fake provider listens on 127.0.0.1");
    Mock::given(method("POST")).and(path("/call")).respond_with(fake.clone()).mount(&provider).await;

    let app = spawn().await;
    let acme = app.account("all").await;
    let channel = app.voice_route(acme.tenant, "at-voice", Some(&provider.uri()), "+255222110000").await;
    let mut conn = app.conn().await;
    accounts::wallet::credit(&mut conn, acme.tenant, CREDIT, None).await.expect("credit");
    drop(conn);
    let url = app.db.url().to_owned();

    // First process: the group and the campaign through its API, killed once calls are placed.
    let first = Gateway::start(&bin, &url, 51, SETTINGS).await;
    let (group, numbers) = make_group(&first, &app.pool, &acme.key, CALLEES).await;
    let client = providers::http_client().expect("client");
    let body = json!({
        "contact_group_id": group.to_string(), "message": "Our Kariakoo shop opens on Saturday.",
        "calls_per_minute": 600, "max_attempts": 1,
        "calling_hours": serde_json::from_str::<Value>(ALL_DAY).expect("hours"),
    });
    let res = client
        .post(format!("{}/api/v3/call-campaigns", first.url))
        .bearer_auth(&acme.key)
        .json(&body)
        .send()
        .await
        .expect("create the campaign");
    assert_eq!(res.status().as_u16(), 201);
    let campaign: Value = res.json::<Value>().await.expect("JSON")["data"].clone();
    assert_eq!(campaign["total_targets"], CALLEES);
    let (id, uid) = (campaign["id"].as_i64().expect("id"), campaign["uid"].as_str().expect("uid").to_owned());
    let at_first = wait_for(&app.pool, id, Duration::from_secs(60), "calls placed", |_, placed| placed >= 20).await;
    first.kill().await;
    eprintln!("first kill: {at_first:?}");

    let second = Gateway::start(&bin, &url, 52, SETTINGS).await;
    let at_second = wait_for(&app.pool, id, Duration::from_secs(60), "more calls placed", |s, placed| {
        placed >= 80 && s.get("initiated").is_some_and(|n| *n > 0) || placed >= 120
    })
    .await;
    second.kill().await;
    eprintln!("second kill: {at_second:?}");

    // Third process: places the rest; every call then ends through the provider's callback.
    let third = Gateway::start(&bin, &url, 53, SETTINGS).await;
    // (a placed call stays `initiated` until the provider calls back)
    let placed = wait_for(&app.pool, id, Duration::from_secs(120), "every call placed or failed", |s, placed| {
        placed + s.get("failed").copied().unwrap_or(0) == i64::from(CALLEES)
    })
    .await;
    eprintln!("placed: {placed:?}");
    let requests = fake.requests.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let hook = format!("{}/hooks/voice/{}", third.url, channel.callback_token);
    for (_, reference, session) in &requests {
        let end = format!(
            "isActive=0&sessionId={session}&clientRequestId={reference}&status=Success\
             &hangupCause=NORMAL_CLEARING&durationInSeconds=30&currencyCode=TZS&amount=50"
        );
        let res = client
            .post(&hook)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(end)
            .send()
            .await
            .expect("callback");
        assert_eq!(res.status().as_u16(), 200);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let done = loop {
        let res = client
            .get(format!("{}/api/v3/call-campaigns/{uid}", third.url))
            .bearer_auth(&acme.key)
            .send()
            .await
            .expect("campaign");
        let done: Value = res.json::<Value>().await.expect("JSON")["data"].clone();
        if done["status"] == "completed" {
            break done;
        }
        assert!(Instant::now() < deadline, "the campaign never completed: {done}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };

    // Nobody called twice: at the provider, and one call per callee.
    let mut received: BTreeMap<&str, usize> = BTreeMap::new();
    for (to, _, _) in &requests {
        *received.entry(to).or_default() += 1;
    }
    let twice: Vec<_> = received.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "numbers the provider got more than once: {twice:?}");
    let group_numbers: BTreeSet<&str> = numbers.values().map(String::as_str).collect();
    assert!(received.keys().all(|to| group_numbers.contains(to)), "only the group's numbers");
    let rows = sql_rows(
        &app.pool,
        &format!("SELECT recipient, status, error AS error_message FROM calls WHERE call_campaign_id = {id} ORDER BY recipient"),
    )
    .await;
    let callees: Vec<&str> = rows.iter().map(|r| r["recipient"].as_str().expect("recipient")).collect();
    assert_eq!(callees, group_numbers.iter().copied().collect::<Vec<_>>(), "one call per callee");
    // each call completed through its callback, or failed because a kill cut off its request
    let completed = rows.iter().filter(|r| r["status"] == "completed").count();
    for row in rows.iter().filter(|r| r["status"] != "completed") {
        assert_eq!(row["status"], "failed", "{row}");
        assert_eq!(row["error_message"].as_str(), Some(messaging::voice::place::OUTCOME_UNKNOWN), "{row}");
    }
    let failed = rows.len() - completed;
    assert!(completed <= received.len() && received.len() <= completed + failed, "{completed} {failed} {received:?}");
    assert_eq!(
        (done["completed_targets"].as_u64(), done["failed_targets"].as_u64()),
        (Some(completed as u64), Some(failed as u64)),
        "{done}"
    );

    // One minute paid per completed call; a failed call's held minute came back.
    let res = client.get(format!("{}/api/v3/balance", third.url)).bearer_auth(&acme.key).send().await.expect("balance");
    let balance: Value = res.json().await.expect("JSON");
    assert_eq!(balance["data"]["balance_minor"], CREDIT - completed as i64 * MINUTE, "{balance}");
    let events = sql_rows(
        &app.pool,
        &format!(
            "SELECT name, count(*) AS n FROM events WHERE tenant_id = {} AND name LIKE 'call_campaign.%' GROUP BY name",
            acme.tenant.0
        ),
    )
    .await;
    let count = |name: &str| events.iter().find(|e| e["name"] == name).and_then(|e| e["n"].as_i64()).unwrap_or(0);
    assert_eq!(
        (count("call_campaign.started"), count("call_campaign.completed"), count("call_campaign.target_completed")),
        (1, 1, i64::from(CALLEES)),
        "{events:?}"
    );

    third.kill().await;
    for run in 51..=53 {
        let _ = std::fs::remove_file(log_path(run));
    }
}
