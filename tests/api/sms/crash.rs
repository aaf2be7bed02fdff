//! A campaign survives a crash (issue 3, Campaigns): the real `gateway` binary is killed with
//! SIGKILL in the middle of a campaign, started again on the same database, and in the end
//! every contact has exactly one message, the counts add up, the wallet was charged once per
//! message, and the provider (a local fake of Africa's Talking) never got a number twice.
//!
//! Everything stays on 127.0.0.1: the database of `cargo xtask test`, the gateway's port, and
//! the fake provider. `cargo xtask test` builds the binary and names it in `SVC_GATEWAY_BIN`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use api_tests::{json, spawn};
use messaging::channels::{NewChannel, NewSender};
use serde_json::Value;
use tokio::process::{Child, Command};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::campaigns::{CAMPAIGN, sql_rows};

const CONTACTS: u32 = 300;
const PRICE: i64 = 100;
const CREDIT: i64 = 100_000;
/// Sends a second the channel allows: dispatch takes several seconds.
const THROUGHPUT: i32 = 40;

/// A fake of Africa's Talking's `POST /version1/messaging`: accepts every message after a
/// short delay with a fresh `messageId`, and remembers `(to, messageId)` of each answer.
#[derive(Clone, Default)]
struct FakeAfricasTalking {
    next: Arc<AtomicU64>,
    answered: Arc<Mutex<Vec<(String, String)>>>,
}

impl Respond for FakeAfricasTalking {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let form: HashMap<String, String> = serde_urlencoded::from_bytes(&request.body).unwrap_or_default();
        let to = form.get("to").cloned().unwrap_or_default();
        let id = format!("ATXid_{}", self.next.fetch_add(1, Ordering::SeqCst));
        self.answered.lock().unwrap_or_else(|p| p.into_inner()).push((to.clone(), id.clone()));
        ResponseTemplate::new(201)
            .set_body_json(json!({"SMSMessageData": {
                "Message": "Sent to 1/1 Total Cost: TZS 20.0000",
                "Recipients": [{"statusCode": 101, "number": to, "status": "Success",
                                "cost": "TZS 20.0000", "messageId": id}]
            }}))
            .set_delay(Duration::from_millis(40))
    }
}

/// One `gateway serve` process on its own port, killed when dropped.
struct Gateway {
    child: Child,
    url: String,
    log: PathBuf,
}

fn gateway_bin() -> String {
    let bin = std::env::var("SVC_GATEWAY_BIN").unwrap_or_else(|_| {
        panic!(
            "SVC_GATEWAY_BIN must name the gateway binary; run the tests with `cargo xtask test`, which builds \
             target/debug/gateway and sets it"
        )
    });
    assert!(std::path::Path::new(&bin).is_file(), "SVC_GATEWAY_BIN={bin} is not a file; build it first");
    bin
}

/// Where the gateway of `run` writes its log (kept when the test fails).
fn log_path(run: u32) -> PathBuf {
    std::env::temp_dir().join(format!("svc-crash-test-{}-{run}.log", std::process::id()))
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("address").port()
}

impl Gateway {
    /// Starts `gateway serve` on the test's database and waits until `/ready` answers 200.
    async fn start(bin: &str, database_url: &str, run: u32) -> Self {
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let log = log_path(run);
        let file = std::fs::File::create(&log).expect("log file");
        let child = Command::new(bin)
            .arg("serve")
            .env("DATABASE_URL", database_url)
            .env("SVC_ADDR", &addr)
            .env("SVC_PUBLIC_URL", format!("http://{addr}"))
            .env("SVC_RUN_MIGRATIONS", "false")
            // a dead process's jobs come back after 2 s; its `processing` messages fail then
            .env("SVC_JOB_LEASE_SECONDS", "2")
            .env("SVC_WORKER_CONCURRENCY", "4")
            .env("SVC_SMS_SEND_CHUNK", "20")
            .env("SVC_CAMPAIGN_BATCH_SIZE", "50")
            .env("SVC_DB_POOL_SIZE", "6")
            .env("SVC_HTTP_WORKERS", "1")
            .env("SVC_PROVIDER_TIMEOUT_MS", "5000")
            .env("SVC_LOG_FORMAT", "text")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(file))
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {bin} serve: {e}"));
        let mut gateway = Self { child, url: format!("http://{addr}"), log };
        gateway.wait_ready().await;
        gateway
    }

    async fn wait_ready(&mut self) {
        let client = providers::http_client().expect("client");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "the gateway exited before it was ready ({status}); log {}:\n{}",
                    self.log.display(),
                    self.logs()
                );
            }
            let ready = client.get(format!("{}/ready", self.url)).timeout(Duration::from_secs(2)).send().await;
            if ready.is_ok_and(|r| r.status().as_u16() == 200) {
                return;
            }
            assert!(Instant::now() < deadline, "the gateway never got ready; log:\n{}", self.logs());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// SIGKILL: no shutdown, no release of jobs, open transactions cut off.
    async fn kill(mut self) {
        self.child.start_kill().expect("SIGKILL");
        let status = self.child.wait().await.expect("wait");
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), Some(9), "killed by SIGKILL: {status}");
        }
        #[cfg(not(unix))]
        let _ = status;
    }

    fn logs(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

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

#[actix_web::test]
async fn a_campaign_survives_sigkill_of_the_gateway_in_the_middle_of_dispatch() {
    let bin = gateway_bin();
    let fake = FakeAfricasTalking::default();
    let provider = MockServer::start().await;
    assert!(provider.address().ip().is_loopback(), "the fake provider listens on 127.0.0.1");
    Mock::given(method("POST")).and(path("/version1/messaging")).respond_with(fake.clone()).mount(&provider).await;

    // The account, its Africa's Talking channel (pointed at the fake), 300 contacts; made
    // through the in-process app on the database the real gateway will use.
    let app = spawn().await;
    let acme = app.account("all").await;
    {
        let mut conn = app.conn().await;
        let channel = NewChannel {
            kind: "sms".into(),
            provider: "africastalking".into(),
            code: Some("at".into()),
            base_url: Some(provider.uri()),
            username: Some("sandbox".into()),
            api_key: Some("atsk_crash_test".into()),
            throughput_per_second: Some(THROUGHPUT),
        };
        messaging::channels::add(&mut conn, acme.tenant, channel).await.expect("channel");
        let sender = NewSender {
            channel: "at".into(),
            kind: "sender_id".into(),
            value: "ACME".into(),
            label: None,
            status: None,
        };
        messaging::channels::add_sender(&mut conn, acme.tenant, sender).await.expect("sender");
        messaging::channels::set_rate(&mut conn, acme.tenant, None, PRICE).await.expect("rate");
        accounts::wallet::credit(&mut conn, acme.tenant, CREDIT, None).await.expect("credit");
    }
    let res = app.post("/api/v3/contact-groups", &acme.key, json!({"name": "Everyone"})).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let group = res.data().clone();
    let rows: Vec<Value> = (0..CONTACTS)
        .map(|i| json!({"PHONE": format!("0712{:06}", 5000 + i), "name": format!("Person {i}")}))
        .collect();
    let res = app
        .post(&format!("/api/v3/contact-groups/{}/contacts/batch", group["id"]), &acme.key, json!({"contacts": rows}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let contacts = sql_rows(
        &app.pool,
        &format!("SELECT id, full_phone_number FROM contacts WHERE group_id = {} ORDER BY id", group["id"]),
    )
    .await;
    assert_eq!(contacts.len(), CONTACTS as usize);
    let numbers: BTreeMap<i64, String> = contacts
        .iter()
        .map(|c| (c["id"].as_i64().expect("id"), format!("+{}", c["full_phone_number"].as_str().expect("number"))))
        .collect();
    let url = app.db.url().to_owned();

    // First process: the campaign is created through its HTTP API; killed as soon as the first
    // batch is written (the batch chain is then usually still going).
    let first = Gateway::start(&bin, &url, 1).await;
    let client = providers::http_client().expect("client");
    let res = client
        .post(format!("{}{CAMPAIGN}", first.url))
        .bearer_auth(&acme.key)
        .json(&json!({"contact_list_id": group["id"].to_string(), "message": "Hello {{name}}, 20% off today"}))
        .send()
        .await
        .expect("create the campaign");
    assert_eq!(res.status().as_u16(), 201);
    let body: Value = res.json().await.expect("JSON");
    let campaign = body["data"]["campaigns"][0].clone();
    let uid = campaign["uid"].as_str().expect("uid").to_owned();
    let id = campaign["id"].as_i64().expect("id");
    assert_eq!(campaign["total_recipients"], CONTACTS);

    let (at_first, row) =
        wait_for(&app.pool, id, Duration::from_secs(60), "a first batch", |s, _| s.values().sum::<i64>() > 0).await;
    first.kill().await;
    eprintln!("first kill: {at_first:?} {row}");

    // Second process: killed mid-send, with messages in the provider's hands when possible.
    let second = Gateway::start(&bin, &url, 2).await;
    let (at_second, row) = wait_for(&app.pool, id, Duration::from_secs(90), "sending under way", |s, _| {
        let sent = n(s, "sent");
        (sent >= 60 && n(s, "processing") > 0) || sent >= 200
    })
    .await;
    second.kill().await;
    eprintln!("second kill: {at_second:?} {row}");
    assert!(n(&at_second, "sent") < i64::from(CONTACTS), "killed before the end: {at_second:?}");

    // Third process: runs it to the end.
    let third = Gateway::start(&bin, &url, 3).await;
    let (at_end, row) =
        wait_for(&app.pool, id, Duration::from_secs(120), "completion", |_, row| row["status"] == "completed").await;
    eprintln!("completed: {at_end:?} {row}");

    // Every contact exactly one message; every message in a final state.
    let messages = sql_rows(
        &app.pool,
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
    assert!(per_contact.values().all(|&k| k == 1), "a contact messaged twice: {per_contact:?}");
    assert_eq!(per_contact.keys().copied().collect::<Vec<_>>(), numbers.keys().copied().collect::<Vec<_>>());
    for m in &messages {
        let contact = m["contact_id"].as_i64().expect("contact_id");
        assert_eq!(m["recipient"].as_str(), Some(numbers[&contact].as_str()), "{m}");
    }
    let sent: Vec<&Value> = messages.iter().filter(|m| m["status"] == "sent" || m["status"] == "delivered").collect();
    let failed: Vec<&Value> = messages.iter().filter(|m| m["status"] == "failed").collect();
    assert_eq!(sent.len() + failed.len(), messages.len(), "nothing left queued or processing: {at_end:?}");
    for m in &failed {
        let error = m["error_message"].as_str().unwrap_or_default();
        assert!(error.contains("outcome unknown"), "only a send cut off by the kill may fail: {m}");
    }

    // Nothing sent twice: the fake got each number at most once, and every message we call
    // sent is one it answered.
    let requests = provider.received_requests().await.expect("requests are recorded");
    let mut received: BTreeMap<String, usize> = BTreeMap::new();
    for request in &requests {
        let form: HashMap<String, String> = serde_urlencoded::from_bytes(&request.body).expect("a form body");
        assert_eq!(form.get("from").map(String::as_str), Some("ACME"));
        *received.entry(form.get("to").cloned().unwrap_or_default()).or_default() += 1;
    }
    let twice: Vec<(&String, &usize)> = received.iter().filter(|(_, k)| **k > 1).collect();
    assert!(twice.is_empty(), "numbers the provider got more than once: {twice:?}");
    let known: BTreeSet<&String> = numbers.values().collect();
    assert!(received.keys().all(|to| known.contains(to)), "only the group's numbers");
    let answered: BTreeSet<(String, String)> =
        fake.answered.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect();
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
    let res = client
        .get(format!("{}/api/v3/campaign/{uid}/view", third.url))
        .bearer_auth(&acme.key)
        .send()
        .await
        .expect("view");
    assert_eq!(res.status().as_u16(), 200);
    let view: Value = res.json().await.expect("JSON");
    let c = &view["data"];
    assert_eq!(c["status"], "completed", "{c}");
    assert!(c["completed_at"].is_string(), "{c}");
    assert_eq!(c["total_recipients"], CONTACTS, "{c}");
    assert_eq!(c["sent_count"], json!(sent_count), "{c}");
    assert_eq!(c["failed_count"], json!(failed.len()), "{c}");
    let res = client
        .get(format!("{}/api/v3/messages?campaign={uid}&limit=1", third.url))
        .bearer_auth(&acme.key)
        .send()
        .await
        .expect("messages");
    let list: Value = res.json().await.expect("JSON");
    assert_eq!(list["data"]["pagination"]["total"], CONTACTS, "{list}");

    // Charged once per message: one debit per batch however often a batch ran; a send with an
    // unknown outcome is refunded (docs/api.md), and nothing else is.
    let debits = sql_rows(
        &app.pool,
        &format!("SELECT amount_minor FROM wallet_ledger WHERE kind = 'debit' AND note LIKE 'Campaign {uid}:%'"),
    )
    .await;
    let charged: i64 = debits.iter().map(|d| d["amount_minor"].as_i64().expect("amount")).sum();
    assert_eq!(charged, i64::from(CONTACTS) * PRICE, "{debits:?}");
    let res = client.get(format!("{}/api/v3/balance", third.url)).bearer_auth(&acme.key).send().await.expect("balance");
    let balance: Value = res.json().await.expect("JSON");
    let unknown = failed.len() as i64;
    assert_eq!(balance["data"]["balance_minor"], CREDIT - (i64::from(CONTACTS) - unknown) * PRICE, "{balance}");

    // campaign.completed, once.
    let completed = sql_rows(
        &app.pool,
        &format!("SELECT payload FROM events WHERE tenant_id = {} AND name = 'campaign.completed'", acme.tenant.0),
    )
    .await;
    assert_eq!(completed.len(), 1, "{completed:?}");
    assert_eq!(completed[0]["payload"]["campaign"]["uid"], json!(uid));

    third.kill().await;
    for run in 1..=3 {
        let _ = std::fs::remove_file(log_path(run));
    }
}
