//! A campaign survives a crash (issue 3, Campaigns): the real `gateway` binary is killed with
//! SIGKILL in the middle of a campaign, started again on the same database, and in the end
//! every contact has exactly one message, the counts add up, the wallet was charged once per
//! message, and the provider (a local fake of Africa's Talking) never got a number twice.
//! With the default lease (issue 14, crash recovery in seconds), a 3,000-recipient campaign is
//! `completed` within 60 seconds of the restart.
//!
//! Everything stays on 127.0.0.1: the database of `cargo xtask test`, the gateway's port, and
//! the fake provider. `cargo xtask test` builds the binary and names it in `SVC_GATEWAY_BIN`
//! (`crate::process`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use api_tests::{Account, FakeAfricasTalking, TestApp, json, spawn, sql_rows};
use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use super::campaigns::CAMPAIGN;
use crate::process::{Gateway, gateway_bin, log_path};

const PRICE: i64 = 100;

/// `status -> count` of the campaign's messages, plus the campaign row.
async fn progress(pool: &store::Pool, campaign: i64) -> (BTreeMap<String, i64>, Value) {
    let statuses = sql_rows(
        pool,
        &format!("SELECT status, count(*) AS n FROM messages WHERE campaign_id = {campaign} GROUP BY status"),
    )
    .await;
    let by_status = statuses
        .iter()
        .map(|r| (r["status"].as_str().unwrap_or_default().to_owned(), r["n"].as_i64().unwrap_or_default()))
        .collect();
    let row = sql_rows(
        pool,
        &format!(
            "SELECT status, cursor, last_contact_id, dispatched, total_recipients, sent_count, failed_count
             FROM campaigns WHERE id = {campaign}"
        ),
    )
    .await
    .remove(0);
    (by_status, row)
}

fn n(by_status: &BTreeMap<String, i64>, status: &str) -> i64 {
    by_status.get(status).copied().unwrap_or(0)
}

/// Polls (every 5 ms) until `done` says so, or panics after `within`.
async fn wait_for(
    pool: &store::Pool,
    campaign: i64,
    within: Duration,
    what: &str,
    done: impl Fn(&BTreeMap<String, i64>, &Value) -> bool,
) -> (BTreeMap<String, i64>, Value) {
    let deadline = Instant::now() + within;
    loop {
        let (by_status, row) = progress(pool, campaign).await;
        if done(&by_status, &row) {
            return (by_status, row);
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}: {by_status:?} {row}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The account's Africa's Talking channel (pointed at the fake, `throughput` sends a second),
/// its sender id `ACME`, the price of a message and `credit` in the wallet.
async fn provision<S, B>(app: &TestApp<S>, acme: &Account, provider: &MockServer, throughput: i32, credit: i64)
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    app.africastalking_route(acme.tenant, "at", &provider.uri(), "ACME", Some(throughput)).await;
    let mut conn = app.conn().await;
    messaging::channels::set_rate(&mut conn, acme.tenant, None, PRICE).await.expect("rate");
    accounts::wallet::credit(&mut conn, acme.tenant, credit, None).await.expect("credit");
}

/// A contact group of `contacts` people, made through the real gateway's API (in batches of the
/// contract's 500); answers its id and each contact's number by contact id.
pub(crate) async fn make_group(
    gateway: &Gateway,
    pool: &store::Pool,
    key: &str,
    contacts: u32,
) -> (Value, BTreeMap<i64, String>) {
    let client = providers::http_client().expect("client");
    let res = client
        .post(format!("{}/api/v3/contact-groups", gateway.url))
        .bearer_auth(key)
        .json(&json!({"name": "Everyone"}))
        .send()
        .await
        .expect("create the group");
    assert_eq!(res.status().as_u16(), 201);
    let body: Value = res.json().await.expect("JSON");
    let group = body["data"]["id"].clone();
    for first in (0..contacts).step_by(500) {
        let rows: Vec<Value> = (first..contacts.min(first + 500))
            .map(|i| json!({"PHONE": format!("0712{:06}", 5000 + i), "name": format!("Person {i}")}))
            .collect();
        let res = client
            .post(format!("{}/api/v3/contact-groups/{group}/contacts/batch", gateway.url))
            .bearer_auth(key)
            .json(&json!({"contacts": rows}))
            .send()
            .await
            .expect("add contacts");
        assert_eq!(res.status().as_u16(), 200, "{}", res.text().await.unwrap_or_default());
    }
    let rows =
        sql_rows(pool, &format!("SELECT id, full_phone_number FROM contacts WHERE group_id = {group} ORDER BY id"))
            .await;
    assert_eq!(rows.len(), contacts as usize);
    let numbers = rows
        .iter()
        .map(|c| (c["id"].as_i64().expect("id"), format!("+{}", c["full_phone_number"].as_str().expect("number"))))
        .collect();
    (group, numbers)
}

/// Creates the campaign through the gateway's API; answers its id and uid.
async fn create_campaign(gateway: &Gateway, key: &str, group: &Value, contacts: u32) -> (i64, String) {
    let client = providers::http_client().expect("client");
    let res = client
        .post(format!("{}{CAMPAIGN}", gateway.url))
        .bearer_auth(key)
        .json(&json!({"contact_list_id": group.to_string(), "message": "Hello {{name}}, 20% off today"}))
        .send()
        .await
        .expect("create the campaign");
    assert_eq!(res.status().as_u16(), 201);
    let body: Value = res.json().await.expect("JSON");
    let campaign = body["data"]["campaigns"][0].clone();
    assert_eq!(campaign["total_recipients"], contacts);
    (campaign["id"].as_i64().expect("id"), campaign["uid"].as_str().expect("uid").to_owned())
}

/// What the world looks like once the campaign completed: one message per contact, each final,
/// only sends cut off by a kill failed ("outcome unknown"), no number twice at the provider,
/// the counts and the wallet right, `campaign.completed` once.
struct Outcome<'a> {
    pool: &'a store::Pool,
    provider: &'a MockServer,
    fake: &'a FakeAfricasTalking,
    gateway: &'a Gateway,
    acme: &'a Account,
    campaign: (i64, &'a str),
    numbers: &'a BTreeMap<i64, String>,
    credit: i64,
}

impl Outcome<'_> {
    async fn check(&self, at_end: &BTreeMap<String, i64>) {
        let (id, uid) = self.campaign;
        let contacts = self.numbers.len();
        let messages = sql_rows(
            self.pool,
            &format!(
                "SELECT contact_id, recipient, status, gateway_message_id, error_message FROM messages
                 WHERE campaign_id = {id} ORDER BY contact_id"
            ),
        )
        .await;
        let mut per_contact: BTreeMap<i64, usize> = BTreeMap::new();
        for m in &messages {
            *per_contact.entry(m["contact_id"].as_i64().expect("contact_id")).or_default() += 1;
        }
        let twice: Vec<_> = per_contact.iter().filter(|(_, k)| **k != 1).collect();
        assert!(twice.is_empty(), "contacts messaged other than once: {twice:?}");
        assert_eq!(per_contact.keys().copied().collect::<Vec<_>>(), self.numbers.keys().copied().collect::<Vec<_>>());
        for m in &messages {
            let contact = m["contact_id"].as_i64().expect("contact_id");
            assert_eq!(m["recipient"].as_str(), Some(self.numbers[&contact].as_str()), "{m}");
        }
        let sent: Vec<&Value> =
            messages.iter().filter(|m| m["status"] == "sent" || m["status"] == "delivered").collect();
        let failed: Vec<&Value> = messages.iter().filter(|m| m["status"] == "failed").collect();
        assert_eq!(sent.len() + failed.len(), messages.len(), "nothing left queued or processing: {at_end:?}");
        for m in &failed {
            let error = m["error_message"].as_str().unwrap_or_default();
            assert!(error.contains("outcome unknown"), "only a send cut off by the kill may fail: {m}");
        }

        // Nothing sent twice: the fake got each number at most once, and every message we call
        // sent is one it answered.
        let requests = self.provider.received_requests().await.expect("requests are recorded");
        let mut received: BTreeMap<String, usize> = BTreeMap::new();
        for request in &requests {
            let form: HashMap<String, String> = serde_urlencoded::from_bytes(&request.body).expect("a form body");
            assert_eq!(form.get("from").map(String::as_str), Some("ACME"));
            *received.entry(form.get("to").cloned().unwrap_or_default()).or_default() += 1;
        }
        let twice: Vec<(&String, &usize)> = received.iter().filter(|(_, k)| **k > 1).collect();
        assert!(twice.is_empty(), "numbers the provider got more than once: {twice:?}");
        let known: BTreeSet<&String> = self.numbers.values().collect();
        assert!(received.keys().all(|to| known.contains(to)), "only the group's numbers");
        let answered: BTreeSet<(String, String)> =
            self.fake.answered.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect();
        for m in &sent {
            let pair = (
                m["recipient"].as_str().expect("recipient").to_owned(),
                m["gateway_message_id"].as_str().unwrap_or("").to_owned(),
            );
            assert!(answered.contains(&pair), "a sent message the provider did not answer: {m}");
        }
        let sent_count = sent.len();
        assert!(
            sent_count <= received.len() && received.len() <= sent_count + failed.len(),
            "the provider got {} numbers; {sent_count} sent, {} outcome unknown",
            received.len(),
            failed.len()
        );

        // The counts, through the API of the last process.
        let client = providers::http_client().expect("client");
        let base = &self.gateway.url;
        let key = &self.acme.key;
        let res = client.get(format!("{base}/api/v3/campaign/{uid}/view")).bearer_auth(key).send().await.expect("view");
        assert_eq!(res.status().as_u16(), 200);
        let view: Value = res.json().await.expect("JSON");
        let c = &view["data"];
        assert_eq!(c["status"], "completed", "{c}");
        assert!(c["completed_at"].is_string(), "{c}");
        assert_eq!(c["total_recipients"], contacts, "{c}");
        assert_eq!(c["sent_count"], json!(sent_count), "{c}");
        assert_eq!(c["failed_count"], json!(failed.len()), "{c}");
        let res = client
            .get(format!("{base}/api/v3/messages?campaign={uid}&limit=1"))
            .bearer_auth(key)
            .send()
            .await
            .expect("messages");
        let list: Value = res.json().await.expect("JSON");
        assert_eq!(list["data"]["pagination"]["total"], contacts, "{list}");

        // Charged once per message: one debit per batch however often a batch ran; a send with
        // an unknown outcome is refunded (docs/api.md), and nothing else is.
        let debits = sql_rows(
            self.pool,
            &format!("SELECT amount_minor FROM wallet_ledger WHERE kind = 'debit' AND note LIKE 'Campaign {uid}:%'"),
        )
        .await;
        let charged: i64 = debits.iter().map(|d| d["amount_minor"].as_i64().expect("amount")).sum();
        assert_eq!(charged, contacts as i64 * PRICE, "{debits:?}");
        let res = client.get(format!("{base}/api/v3/balance")).bearer_auth(key).send().await.expect("balance");
        let balance: Value = res.json().await.expect("JSON");
        let unknown = failed.len() as i64;
        assert_eq!(balance["data"]["balance_minor"], self.credit - (contacts as i64 - unknown) * PRICE, "{balance}");

        // campaign.completed, once.
        let completed = sql_rows(
            self.pool,
            &format!(
                "SELECT payload FROM events WHERE tenant_id = {} AND name = 'campaign.completed'",
                self.acme.tenant.0
            ),
        )
        .await;
        assert_eq!(completed.len(), 1, "{completed:?}");
        assert_eq!(completed[0]["payload"]["campaign"]["uid"], json!(uid));
    }
}

/// The quick settings of the three-kill test: a dead process's jobs come back after 2 s; its
/// `processing` messages fail then.
const SHORT_LEASE: &[(&str, &str)] = &[
    ("SVC_JOB_LEASE_SECONDS", "2"),
    ("SVC_WORKER_CONCURRENCY", "4"),
    ("SVC_SMS_SEND_CHUNK", "20"),
    ("SVC_CAMPAIGN_BATCH_SIZE", "50"),
    ("SVC_DB_POOL_SIZE", "6"),
];

#[actix_web::test]
async fn a_campaign_survives_sigkill_of_the_gateway_in_the_middle_of_dispatch() {
    const CONTACTS: u32 = 300;
    const CREDIT: i64 = 100_000;
    // Sends a second the channel allows: dispatch takes several seconds.
    const THROUGHPUT: i32 = 40;
    let bin = gateway_bin();
    let fake = FakeAfricasTalking::new(Duration::from_millis(40));
    let provider = MockServer::start().await;
    assert!(provider.address().ip().is_loopback(), "the fake provider listens on 127.0.0.1");
    Mock::given(method("POST")).and(path("/version1/messaging")).respond_with(fake.clone()).mount(&provider).await;

    // The account and its Africa's Talking channel (pointed at the fake), made in process on the
    // database the real gateway will use; the 300 contacts and the campaign through its API.
    let app = spawn().await;
    let acme = app.account("all").await;
    provision(&app, &acme, &provider, THROUGHPUT, CREDIT).await;
    let url = app.db.url().to_owned();

    // First process: killed as soon as the first batch is written (the batch chain is then
    // usually still going).
    let first = Gateway::start(&bin, &url, 1, SHORT_LEASE).await;
    let (group, numbers) = make_group(&first, &app.pool, &acme.key, CONTACTS).await;
    let (id, uid) = create_campaign(&first, &acme.key, &group, CONTACTS).await;
    let (at_first, row) =
        wait_for(&app.pool, id, Duration::from_secs(60), "a first batch", |s, _| s.values().sum::<i64>() > 0).await;
    first.kill().await;
    eprintln!("first kill: {at_first:?} {row}");

    // Second process: killed mid-send, with messages in the provider's hands when possible.
    let second = Gateway::start(&bin, &url, 2, SHORT_LEASE).await;
    let (at_second, row) = wait_for(&app.pool, id, Duration::from_secs(90), "sending under way", |s, _| {
        let sent = n(s, "sent");
        (sent >= 60 && n(s, "processing") > 0) || sent >= 200
    })
    .await;
    second.kill().await;
    eprintln!("second kill: {at_second:?} {row}");
    assert!(n(&at_second, "sent") < i64::from(CONTACTS), "killed before the end: {at_second:?}");

    // Third process: runs it to the end.
    let third = Gateway::start(&bin, &url, 3, SHORT_LEASE).await;
    let (at_end, row) =
        wait_for(&app.pool, id, Duration::from_secs(120), "completion", |_, row| row["status"] == "completed").await;
    eprintln!("completed: {at_end:?} {row}");

    let outcome = Outcome {
        pool: &app.pool,
        provider: &provider,
        fake: &fake,
        gateway: &third,
        acme: &acme,
        campaign: (id, &uid),
        numbers: &numbers,
        credit: CREDIT,
    };
    outcome.check(&at_end).await;

    third.kill().await;
    for run in 1..=3 {
        let _ = std::fs::remove_file(log_path(run));
    }
}

/// Issue 14, crash recovery in seconds: with the default lease and heartbeat (nothing shortened
/// by the environment), the only gateway is killed in the middle of sending a 3,000-recipient
/// campaign; started again, it finishes the campaign within 60 seconds, and no message is sent
/// twice or lost. Before heartbeats it stayed `running` until the five-minute lease ran out.
#[actix_web::test]
async fn with_the_default_lease_a_campaign_completes_within_a_minute_of_a_restart_after_sigkill() {
    const CONTACTS: u32 = 3_000;
    const CREDIT: i64 = 1_000_000;
    // About ten seconds of sending: long enough to be killed in the middle of it.
    const THROUGHPUT: i32 = 300;
    // Throughput, chunk and batch sizes are the defaults' shape, scaled to the test; the lease
    // and heartbeat are the defaults.
    const SETTINGS: &[(&str, &str)] =
        &[("SVC_SMS_SEND_CHUNK", "250"), ("SVC_CAMPAIGN_BATCH_SIZE", "500"), ("SVC_DB_POOL_SIZE", "8")];
    let bin = gateway_bin();
    let fake = FakeAfricasTalking::new(Duration::from_millis(20));
    let provider = MockServer::start().await;
    Mock::given(method("POST")).and(path("/version1/messaging")).respond_with(fake.clone()).mount(&provider).await;
    let app = spawn().await;
    let acme = app.account("all").await;
    provision(&app, &acme, &provider, THROUGHPUT, CREDIT).await;
    let url = app.db.url().to_owned();

    let first = Gateway::start(&bin, &url, 11, SETTINGS).await;
    let (group, numbers) = make_group(&first, &app.pool, &acme.key, CONTACTS).await;
    let (id, uid) = create_campaign(&first, &acme.key, &group, CONTACTS).await;
    let (at_kill, row) = wait_for(&app.pool, id, Duration::from_secs(90), "sending under way", |s, _| {
        let sent = n(s, "sent");
        (sent >= 600 && n(s, "processing") > 0) || sent >= 1_500
    })
    .await;
    first.kill().await;
    eprintln!("killed: {at_kill:?} {row}");
    assert!(n(&at_kill, "sent") < i64::from(CONTACTS), "killed before the end: {at_kill:?}");

    let restarted = Instant::now();
    let second = Gateway::start(&bin, &url, 12, SETTINGS).await;
    let (at_end, row) =
        wait_for(&app.pool, id, Duration::from_secs(60), "completion within a minute of the restart", |_, row| {
            row["status"] == "completed"
        })
        .await;
    let took = restarted.elapsed();
    eprintln!("completed {took:?} after the restart: {at_end:?} {row}");
    assert!(took < Duration::from_secs(60), "completed {took:?} after the restart");

    let outcome = Outcome {
        pool: &app.pool,
        provider: &provider,
        fake: &fake,
        gateway: &second,
        acme: &acme,
        campaign: (id, &uid),
        numbers: &numbers,
        credit: CREDIT,
    };
    outcome.check(&at_end).await;

    second.kill().await;
    for run in [11, 12] {
        let _ = std::fs::remove_file(log_path(run));
    }
}
