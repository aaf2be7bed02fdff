//! The groups and forms workloads (issue 19): 19, `POST /api/v3/chat/groups/{id}/messages`
//! with one text to an active group whose window is open, and 20, signed Cloud API `messages`
//! deliveries to `POST /hooks/chat/{token}`, each carrying one customer's flow reply (an
//! inbound `interactive` message of type `nfm_reply`) that becomes a form answer. Each against
//! raw SQL writing what the request must, on the same database, like every other row; both are
//! closed loops from 32 connections, one gateway serving both sides of a row.
//!
//! Both use a chat account of their own, made once per run with the admin CLI (`gateway admin
//! chat-account add`, then `chat-account phone add`): the sandbox chat provider, a known app
//! secret (the bench signs 20's deliveries with it) and one business number. 15's account is
//! not shared: its secret is `chat`'s own, and 15 and 16 keep their conversations to themselves.
//!
//! 19's group is made through the API (`POST /api/v3/chat/groups`) on a gateway whose sandbox
//! confirms a creation at once (`SVC_SANDBOX_GROUP_DELAY_MS=0`); once its confirmation job has
//! made it `active` (with the sandbox's group id), its window is opened by SQL
//! (`last_participant_message_at = now()`, as a participant's message would). The raw side is
//! the authentication lookup, the group read (every column), the window check in the client and
//! the `chat_group_messages` row, `sent`, with a provider id.
//!
//! 20's form is made and published through the API (`POST /api/v3/chat/forms`, then
//! `.../publish`), and [`FORM_SENDS`] sends' tokens are written by SQL (no messages sent);
//! delivery `n` answers send `n mod FORM_SENDS`. The raw side is 16's inbound message (the
//! channel by its token, the conversation, the message, the window, `message.received`), then
//! the send by its token, the form, the version's definition, the answers read against it in
//! the client, the answer (`ON CONFLICT DO NOTHING`) with its `form.submitted` event, and the
//! callback log's row.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::StatusCode;
use ring::hmac;
use serde_json::{Map, Value, json};
use tokio::time::Instant;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use super::load::{Measured, OpError, OpResult, drive};
use super::report::Outcome;
use super::{Gateway, Run, Workload, data, sql, sys};
use crate::Result;

/// The business account of 19 and 20, and its one number.
const WABA_ID: &str = "100000000000019";
const ACCOUNT_NAME: &str = "Bench groups and forms";
/// Known to the bench, which signs 20's deliveries with it as the provider would.
const APP_SECRET: &str = "bench-groups-forms-app-secret-0123456789";
const VERIFY_TOKEN: &str = "bench-groups-forms-verify-token";
const PHONE_NUMBER_ID: &str = "200000000000019";
/// The business number, E.164 and as the provider displays it.
const BUSINESS_NUMBER: &str = "+255222000119";
const DISPLAY_NUMBER: &str = "255222000119";
/// Distinct customers 20's replies come from: conversations spread over as many rows.
const CUSTOMERS: u64 = 3_000;
/// The first customer's national number, `712401000`: every ending from 1000 up, none of the
/// chat sandbox's magic endings (`0001` to `0005`).
const FIRST_CUSTOMER: u64 = 712_401_000;
/// The customer's profile name in every delivery.
const PROFILE_NAME: &str = "Amina";
/// 19's group.
const GROUP_SUBJECT: &str = "Bench group";
/// The sandbox confirms 19's group at once on the bench's gateway.
const GROUP_DELAY: (&str, &str) = ("SVC_SANDBOX_GROUP_DELAY_MS", "0");
/// How long the group may take to become active, and how often it is read meanwhile.
const GROUP_WAIT: Duration = Duration::from_secs(60);
const GROUP_POLL: Duration = Duration::from_millis(50);
/// A group's window (a participant's message within it lets free-form messages through).
const WINDOW_SECONDS: f64 = 24.0 * 3600.0;
/// 20's form.
const FORM_NAME: &str = "Bench form";
/// Sends written by SQL for 20; delivery `n` answers send `n mod FORM_SENDS`.
pub const FORM_SENDS: u64 = 100_000;
/// The flow message a reply answers (`context.id`).
const FLOW_MESSAGE: &str = "wamid.benchflow";
/// The answers of every reply, as the provider sends them (strings).
const ANSWER_NAME: &str = "Amina";
const ANSWER_QTY: &str = "3";

/// What the raw side of 19 does.
pub const RAW_GROUP_SEND: &str = "authentication lookup; the group (SELECT every column FROM chat_groups WHERE tenant_id \
                                  AND id); status active with a provider group id, and the window (a participant's message \
                                  within 24 hours) checked in the client; INSERT INTO chat_group_messages (outbound, text, \
                                  content, 'sent', a provider id) RETURNING the message";
/// What the raw side of 20 does.
pub const RAW_FORM_ANSWER: &str = "16's: the channel by its path token; BEGIN; INSERT conversations ... ON CONFLICT DO UPDATE \
                                   RETURNING id; INSERT messages (inbound interactive, received, metadata with the raw \
                                   message) ON CONFLICT DO NOTHING RETURNING id; UPDATE conversations (window, last message, \
                                   unread + 1); INSERT events ('message.received'); COMMIT; then SELECT form_id, version, \
                                   source FROM chat_form_sends WHERE tenant_id AND token; the form (every column); the \
                                   version's definition; the answers read against it in the client; BEGIN; INSERT INTO \
                                   chat_form_answers ... ON CONFLICT DO NOTHING; INSERT events ('form.submitted'); COMMIT; \
                                   INSERT provider_callbacks ('chat', 'applied', the body)";

/// The customer of delivery `n` as the provider names them (`wa_id`, `from`): digits alone.
fn customer_digits(n: u64) -> String {
    format!("{}{}", data::COUNTRY_CODE, FIRST_CUSTOMER + n % CUSTOMERS)
}

/// The text of group message `n`.
fn group_text(n: u64) -> String {
    format!("Bench group {n}")
}

/// SplitMix64's finalizer: scatters neighbouring inputs, as random tokens and ids are.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Send `k`'s token, shaped like the service's (`ft_` and 32 hex digits).
fn send_token(k: u64) -> String {
    format!("ft_{:016x}{:016x}", mix(k ^ 0x19), mix(k))
}

/// The provider message id of delivery `n` of a side: unique per (salt, n).
fn wamid(salt: u64, n: u64) -> String {
    format!("wamid.bench{salt:016x}{n:010x}")
}

/// A flow reply's `response_json`: the send's token and the answers, as a JSON string.
fn response_json(token: &str) -> String {
    json!({ "flow_token": token, "name": ANSWER_NAME, "qty": ANSWER_QTY }).to_string()
}

/// The inbound flow reply of delivery `n` as the Cloud API writes it.
fn reply_message(salt: u64, n: u64) -> Value {
    json!({
        "from": customer_digits(n),
        "id": wamid(salt, n),
        "timestamp": "1764230400",
        "type": "interactive",
        "context": { "from": DISPLAY_NUMBER, "id": FLOW_MESSAGE },
        "interactive": {
            "type": "nfm_reply",
            "nfm_reply": { "name": "flow", "body": "Sent", "response_json": response_json(&send_token(n % FORM_SENDS)) },
        },
    })
}

/// A Cloud API `messages` delivery carrying one inbound message, as the provider posts it.
fn delivery_body(message: &Value, n: u64) -> Vec<u8> {
    let body = json!({
        "object": "whatsapp_business_account",
        "entry": [{
            "id": WABA_ID,
            "changes": [{
                "field": "messages",
                "value": {
                    "messaging_product": "whatsapp",
                    "metadata": { "display_phone_number": DISPLAY_NUMBER, "phone_number_id": PHONE_NUMBER_ID },
                    "contacts": [{ "profile": { "name": PROFILE_NAME }, "wa_id": customer_digits(n) }],
                    "messages": [message],
                },
            }],
        }],
    });
    // A Value always serializes.
    serde_json::to_vec(&body).unwrap_or_default()
}

/// `X-Hub-Signature-256` of `body`: `sha256=` and the hex HMAC-SHA256 under the app secret.
fn signature(body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, APP_SECRET.as_bytes());
    format!("sha256={}", hex::encode(hmac::sign(&key, body).as_ref()))
}

/// 20's form: one page, a required short text and a number.
fn form_definition() -> Value {
    json!({
        "pages": [{ "title": "Oda", "questions": [
            { "key": "name", "type": "short_text", "label": "Jina lako", "required": true },
            { "key": "qty", "type": "number", "label": "Idadi", "min": 1, "max": 100 },
        ]}],
        "submit_label": "Tuma",
    })
}

/// Seconds since the epoch, as the window is compared.
fn epoch_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// The answers of a reply read against a definition (`definition` as JSON text), as
/// `forms::read_answers` reads the two types 20's form has: text trimmed, numbers (given as
/// strings or numbers) as JSON numbers within the bounds, whole ones as integers.
fn read_answers(definition: &str, response: &Value) -> std::result::Result<Map<String, Value>, OpError> {
    let definition: Value = serde_json::from_str(definition)?;
    let mut answers = Map::new();
    let pages = definition["pages"].as_array().ok_or("a definition without pages")?;
    for question in pages.iter().filter_map(|page| page["questions"].as_array()).flatten() {
        let key = question["key"].as_str().ok_or("a question without a key")?;
        let given = &response[key];
        let answer = match (question["type"].as_str(), given) {
            (_, Value::Null) if question["required"] == json!(true) => return Err(format!("{key} is required").into()),
            (_, Value::Null) => continue,
            (Some("short_text"), Value::String(text)) => Value::String(text.trim().to_owned()),
            (Some("number"), Value::String(_) | Value::Number(_)) => {
                let x = match given {
                    Value::String(text) => text.trim().parse::<f64>().map_err(|_| format!("{key}: not a number"))?,
                    _ => given.as_f64().ok_or_else(|| format!("{key}: not a number"))?,
                };
                let (min, max) = (question["min"].as_f64(), question["max"].as_f64());
                if !x.is_finite() || min.is_some_and(|m| x < m) || max.is_some_and(|m| x > m) {
                    return Err(format!("{key}: {x} is out of bounds").into());
                }
                if x.fract() == 0.0 { json!(x as i64) } else { json!(x) }
            }
            (kind, _) => return Err(format!("{key}: a {kind:?} answer the bench does not read: {given}").into()),
        };
        answers.insert(key.to_owned(), answer);
    }
    Ok(answers)
}

/// The account's ids and its webhook's token, as the raw sides need them.
#[derive(Clone, Debug)]
struct Account {
    id: i64,
    channel_id: i64,
    channel_code: String,
    /// The webhook path's secret token.
    token: String,
}

const ACCOUNT: &str = "SELECT a.id, c.id, c.code, c.callback_token FROM chat_accounts a \
                       JOIN channels c ON c.id = a.channel_id WHERE a.tenant_id = $1 AND a.waba_id = $2";

/// `gateway admin ...`; Err with what it wrote when it fails.
async fn admin(run: &Run<'_>, args: &[&str]) -> Result<()> {
    let mut cmd = super::gateway_command(&run.setup.gateway, &run.setup.database_url, &run.setup.root, args);
    cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
    let output = cmd.output().await?;
    if !output.status.success() {
        return Err(format!(
            "`gateway {}` failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )
        .into());
    }
    Ok(())
}

/// The tenant's account of 19 and 20: made with the admin CLI the first time a run needs it.
async fn account(run: &Run<'_>) -> Result<Account> {
    let tenant = run.setup.tenant;
    let read = |row: tokio_postgres::Row| Account {
        id: row.get(0),
        channel_id: row.get(1),
        channel_code: row.get(2),
        token: row.get(3),
    };
    if let Some(row) = run.db.query_opt(ACCOUNT, &[&tenant, &WABA_ID]).await? {
        return Ok(read(row));
    }
    let tenant_arg = tenant.to_string();
    let add = [
        "admin",
        "chat-account",
        "add",
        "--tenant",
        &tenant_arg,
        "--waba-id",
        WABA_ID,
        "--name",
        ACCOUNT_NAME,
        "--app-secret",
        APP_SECRET,
        "--verify-token",
        VERIFY_TOKEN,
    ];
    admin(run, &add).await?;
    let phone = [
        "admin",
        "chat-account",
        "phone",
        "add",
        "--tenant",
        &tenant_arg,
        "--waba-id",
        WABA_ID,
        "--phone-number-id",
        PHONE_NUMBER_ID,
        "--phone-number",
        BUSINESS_NUMBER,
    ];
    admin(run, &phone).await?;
    let account = read(run.db.query_one(ACCOUNT, &[&tenant, &WABA_ID]).await?);
    println!(
        "xtask: chat account {} (WABA {WABA_ID}, channel {} `{}`), number {BUSINESS_NUMBER} ({PHONE_NUMBER_ID}), \
         sandbox provider",
        account.id, account.channel_id, account.channel_code
    );
    Ok(account)
}

/// How a sent group message shows in its answer.
const SENT: &[u8] = b"\"status\":\"sent\"";
/// How a delivery that stored its one message, and made it an answer, answers.
const STORED_ONE: &[u8] = b"\"messages_received\":1,";
const ANSWERED_ONE: &[u8] = b"\"form_answers\":1,";

fn has(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn shown(body: &[u8]) -> String {
    String::from_utf8_lossy(body).chars().take(300).collect()
}

/// The HTTP side of 19 and 20 (the shared [`super::api::Api`] has no call of theirs): one
/// client to 127.0.0.1, kept-alive connections, the body read whole, no JSON parsed on the
/// measured calls.
struct Http {
    client: reqwest::Client,
    base: String,
    authorization: String,
}

impl Http {
    fn new(run: &Run<'_>, connections: usize) -> Result<Self> {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(connections)
            .tcp_nodelay(true)
            .no_proxy()
            .timeout(Duration::from_secs(60))
            .build()?;
        Ok(Self {
            client,
            base: format!("http://{}", run.setup.addr),
            authorization: format!("Bearer {}", run.setup.key),
        })
    }

    /// A setup call: `POST /api/v3{path}` with `body`; its `data`, Err unless `expected`.
    async fn post(&self, path: &str, body: &Value, expected: StatusCode) -> Result<Value> {
        let response = self
            .client
            .post(format!("{}/api/v3{path}", self.base))
            .header("authorization", &self.authorization)
            .json(body)
            .send()
            .await?;
        let status = response.status();
        let answer = response.bytes().await?;
        if status != expected {
            return Err(format!("POST {path}: expected {expected}, got {status}: {}", shown(&answer)).into());
        }
        let mut answer: Value = serde_json::from_slice(&answer)?;
        answer.get_mut("data").map(Value::take).ok_or_else(|| format!("POST {path}: no data in {answer}").into())
    }

    /// `POST /chat/groups/{group}/messages`: text `n`; Err unless 201 and `sent`.
    async fn group_message(&self, group: i64, n: u64) -> OpResult {
        let response = self
            .client
            .post(format!("{}/api/v3/chat/groups/{group}/messages", self.base))
            .header("authorization", &self.authorization)
            .json(&json!({ "message": group_text(n) }))
            .send()
            .await?;
        let status = response.status();
        let answer = response.bytes().await?;
        if status != StatusCode::CREATED || !has(&answer, SENT) {
            return Err(format!("expected 201 with the message sent, got {status}: {}", shown(&answer)).into());
        }
        Ok(())
    }

    /// `POST /hooks/chat/{token}` with `body` signed, as the provider posts it: no API key.
    /// Err unless it answered 200, stored one new message and made it one answer.
    async fn form_reply(&self, token: &str, body: Vec<u8>) -> OpResult {
        let signature = signature(&body);
        let response = self
            .client
            .post(format!("{}/hooks/chat/{token}", self.base))
            .header("content-type", "application/json")
            .header("x-hub-signature-256", signature)
            .body(body)
            .send()
            .await?;
        let status = response.status();
        let answer = response.bytes().await?;
        if status != StatusCode::OK || !has(&answer, STORED_ONE) || !has(&answer, ANSWERED_ONE) {
            return Err(format!(
                "expected 200 with one message received and one form answer, got {status}: {}",
                shown(&answer)
            )
            .into());
        }
        Ok(())
    }
}

/// What the raw side runs per operation.
#[derive(Clone, Copy, Debug)]
enum RawWork {
    GroupSend,
    FormAnswer,
}

impl Run<'_> {
    /// Workload 19: the group made and confirmed through the API, its window opened, then
    /// 32 connections sending to it on each side.
    pub(super) async fn group_send(&self, workload: &'static Workload) -> Result<Outcome> {
        let account = account(self).await?;
        let gateway = Gateway::start_with(self.setup, workload.limiter(), &[GROUP_DELAY], self.api).await?;
        let http = Arc::new(Http::new(self, workload.connections)?);
        let group = active_group(self, &http).await?;
        // a participant wrote: the window is open for both sides' runs
        self.db
            .execute(
                "UPDATE chat_groups SET last_participant_message_at = now() WHERE tenant_id = $1 AND id = $2",
                &[&self.setup.tenant, &group],
            )
            .await?;
        self.prepare(workload, "API").await?;
        let label = format!("{}. {} · API", workload.number, workload.name);
        let before = self.meter.read(gateway.pid);
        let client = Arc::clone(&http);
        let measured = drive(&label, workload.connections, self.timing, move |op| {
            let http = Arc::clone(&client);
            async move { http.group_message(group, op.seq).await }
        })
        .await?;
        let api_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        let rss_mb = sys::peak_rss_mb(gateway.pid).ok();
        super::print_run(&label, &measured, &api_cpu);
        let target = Target { account, group };
        let (raw, raw_cpu) = raw_run(self, workload, &gateway, &target, RawWork::GroupSend).await?;
        gateway.stop().await?;
        let rows = self
            .db
            .query(
                "SELECT status, count(*) FROM chat_group_messages WHERE tenant_id = $1 AND group_id = $2 GROUP BY 1 \
                 ORDER BY 1",
                &[&self.setup.tenant, &group],
            )
            .await?;
        let counts: Vec<String> =
            rows.iter().map(|r| format!("{} {}", r.get::<_, i64>(1), r.get::<_, String>(0))).collect();
        println!("xtask: {}. {}: group {group}'s messages: {}", workload.number, workload.name, counts.join(", "));
        Ok(Outcome { workload, api: measured, raw, rss_mb, api_cpu, raw_cpu, facts: None, open: None })
    }

    /// Workload 20: a published form and its sends, then signed flow replies from 32
    /// connections on each side.
    pub(super) async fn form_answer(&self, workload: &'static Workload) -> Result<Outcome> {
        let account = account(self).await?;
        let gateway = Gateway::start(self.setup, workload.limiter(), self.api).await?;
        let http = Arc::new(Http::new(self, workload.connections)?);
        let form = published_form(self, &http, &account).await?;
        self.prepare(workload, "API").await?;
        let label = format!("{}. {} · API", workload.number, workload.name);
        let before = self.meter.read(gateway.pid);
        let (client, token, salt) = (Arc::clone(&http), Arc::new(account.token.clone()), data::new_salt());
        let measured = drive(&label, workload.connections, self.timing, move |op| {
            let (http, token) = (Arc::clone(&client), Arc::clone(&token));
            async move { http.form_reply(&token, delivery_body(&reply_message(salt, op.seq), op.seq)).await }
        })
        .await?;
        let api_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        let rss_mb = sys::peak_rss_mb(gateway.pid).ok();
        super::print_run(&label, &measured, &api_cpu);
        let target = Target { account, group: 0 };
        let (raw, raw_cpu) = raw_run(self, workload, &gateway, &target, RawWork::FormAnswer).await?;
        gateway.stop().await?;
        let (tenant, label) = (&self.setup.tenant, format!("{}. {}", workload.number, workload.name));
        let answers: i64 = self
            .db
            .query_one("SELECT count(*) FROM chat_form_answers WHERE tenant_id = $1 AND form_id = $2", &[tenant, &form])
            .await?
            .get(0);
        let events: i64 = self
            .db
            .query_one("SELECT count(*) FROM events WHERE tenant_id = $1 AND name = 'form.submitted'", &[tenant])
            .await?
            .get(0);
        let clean: i64 = self
            .db
            .query_one(
                "SELECT count(*) FROM chat_form_answers WHERE tenant_id = $1 AND form_id = $2 AND issues = '[]' \
                 AND answers = $3::text::jsonb",
                &[tenant, &form, &json!({ "name": ANSWER_NAME, "qty": 3 }).to_string()],
            )
            .await?
            .get(0);
        println!(
            "xtask: {label}: {answers} answers of form {form} ({clean} with the answers wanted and no issue), \
             {events} form.submitted events"
        );
        if clean != answers || events < answers {
            return Err(format!("{label}: the answers are not all as sent, or some have no event").into());
        }
        Ok(Outcome { workload, api: measured, raw, rss_mb, api_cpu, raw_cpu, facts: None, open: None })
    }
}

/// 19's group: `POST /chat/groups` from the account's number, then read until the sandbox's
/// confirmation (a job, due at once) has made it active.
async fn active_group(run: &Run<'_>, http: &Http) -> Result<i64> {
    let body = json!({ "subject": GROUP_SUBJECT, "sender_id": PHONE_NUMBER_ID });
    let created = http.post("/chat/groups", &body, StatusCode::CREATED).await?;
    let group = created["id"].as_i64().ok_or_else(|| format!("no id in the group made: {created}"))?;
    let started = Instant::now();
    loop {
        let row = run
            .db
            .query_one(
                "SELECT status, provider_group_id FROM chat_groups WHERE tenant_id = $1 AND id = $2",
                &[&run.setup.tenant, &group],
            )
            .await?;
        let (status, provider): (String, Option<String>) = (row.get(0), row.get(1));
        match (status.as_str(), provider) {
            ("active", Some(provider)) => {
                println!(
                    "xtask: group {group} active after {:.2} s (sandbox group {provider})",
                    started.elapsed().as_secs_f64()
                );
                return Ok(group);
            }
            ("creating", _) if started.elapsed() < GROUP_WAIT => tokio::time::sleep(GROUP_POLL).await,
            (status, _) => return Err(format!("group {group} is {status}, not active").into()),
        }
    }
}

/// 20's form: the tenant's earlier bench form deleted (its sends and answers with it), a new
/// one made and published through the API, and [`FORM_SENDS`] sends of its version 1 written
/// by SQL.
async fn published_form(run: &Run<'_>, http: &Http, account: &Account) -> Result<i64> {
    let tenant = run.setup.tenant;
    run.db.execute("DELETE FROM chat_forms WHERE tenant_id = $1 AND name = $2", &[&tenant, &FORM_NAME]).await?;
    let body = json!({ "name": FORM_NAME, "waba_id": WABA_ID, "definition": form_definition() });
    let created = http.post("/chat/forms", &body, StatusCode::CREATED).await?;
    let form = created["id"].as_i64().ok_or_else(|| format!("no id in the form made: {created}"))?;
    let published = http.post(&format!("/chat/forms/{form}/publish"), &json!({}), StatusCode::OK).await?;
    if published["version"] != json!(1) || published["status"] != json!("published") {
        return Err(format!("form {form} was not published as version 1: {published}").into());
    }
    let tokens: Vec<String> = (0..FORM_SENDS).map(send_token).collect();
    let written = run
        .db
        .execute(
            "INSERT INTO chat_form_sends (token, tenant_id, form_id, version, account_id, source, created_at) \
             SELECT t, $2, $3, 1, $4, 'api', now() FROM unnest($1::text[]) AS t",
            &[&tokens, &tenant, &form, &account.id],
        )
        .await?;
    run.db.batch_execute("ANALYZE chat_form_sends").await?;
    println!("xtask: form {form} published (version 1), {written} sends written");
    Ok(form)
}

/// What the raw side works on.
struct Target {
    account: Account,
    /// 19's group (0 for 20).
    group: i64,
}

/// The raw side of 19 or 20: 32 connections, every statement prepared on each.
async fn raw_run(
    run: &Run<'_>,
    workload: &'static Workload,
    gateway: &Gateway,
    target: &Target,
    work: RawWork,
) -> Result<(Measured, sys::CpuShare)> {
    run.prepare(workload, "raw SQL").await?;
    let label = format!("{}. {} · raw SQL", workload.number, workload.name);
    let db = Arc::new(RawDb::open(run, target, workload.connections).await?);
    // `db` keeps the connections, and so their backends' CPU time, until the meter has read it.
    let conns = Arc::clone(&db);
    let before = run.meter.read(gateway.pid);
    let measured = drive(&label, workload.connections, run.timing, move |op| {
        let db = Arc::clone(&conns);
        async move {
            match work {
                RawWork::GroupSend => db.group_send(op.worker, op.seq).await,
                RawWork::FormAnswer => db.form_answer(op.worker, op.seq).await,
            }
        }
    })
    .await?;
    let cpu = run.meter.share(&before, &run.meter.read(gateway.pid));
    drop(db);
    super::print_run(&label, &measured, &cpu);
    Ok((measured, cpu))
}

/// The group as `groups::row` reads it (every column), the window's time as seconds since
/// the epoch (the client has no time type).
const GROUP: &str = "SELECT id, tenant_id, account_id, phone_number_id, subject, description, join_approval_mode, status, \
                     provider_group_id, invite_link, invite_template, invitees, invites, failure, participants_count, \
                     extract(epoch FROM last_participant_message_at)::float8, created_at, updated_at, deleted_at \
                     FROM chat_groups WHERE tenant_id = $1 AND id = $2 LIMIT 1";
/// The message as `send_group_message` stores it, returned as it returns it.
const GROUP_MESSAGE: &str = "INSERT INTO chat_group_messages (tenant_id, group_id, uid, direction, kind, body, media_url, \
                             content, status, error, provider_message_id, created_at) \
                             VALUES ($1, $2, $3, 'outbound', 'text', $4, NULL, $5::text::jsonb, 'sent', NULL, $6, now()) \
                             RETURNING uid, group_id, direction, participant, kind, body, media_url, status, error, \
                             provider_message_id, pinned_until, created_at";
/// 16's statements (`chat.rs`), for this account: the channel by its token
/// (`channels::by_callback_token`).
const CHANNEL_BY_TOKEN: &str = "SELECT id, tenant_id, kind, provider, code, credentials, throughput_per_second, status, \
                                callback_token FROM channels WHERE callback_token = $1 LIMIT 1";
/// The customer wrote (`chat::conversations::of_customer`).
const CUSTOMER_CONVERSATION: &str = "INSERT INTO conversations (tenant_id, account_id, phone_number_id, customer, chat_id, \
                                     customer_name, last_message_at, created_at, updated_at) \
                                     VALUES ($1, $2, $3, $4, $5, $6, now(), now(), now()) \
                                     ON CONFLICT (tenant_id, phone_number_id, customer) DO UPDATE SET chat_id = excluded.chat_id, \
                                     customer_name = coalesce(excluded.customer_name, conversations.customer_name) \
                                     RETURNING id";
/// The inbound message, stored once by its provider id (`chat::webhook::insert_once`).
const INSERT_INBOUND: &str = "INSERT INTO messages (uid, tenant_id, direction, channel_type, tenant_channel_id, channel_code, \
                              sender, recipient, body, status, gateway_message_id, segments, encoding, price_minor, \
                              metadata, conversation_id, created_at, updated_at) \
                              VALUES ($1, $2, 'inbound', 'chat', $3, $4, $5, $6, $7, 'received', $8, 1, 'ucs2', 0, \
                              $9::text::jsonb, $10, now(), now()) ON CONFLICT DO NOTHING RETURNING id";
/// The window opens (`chat::conversations::customer_wrote`).
const CUSTOMER_WROTE: &str = "UPDATE conversations SET last_inbound_at = now(), window_expires_at = now() + interval '24 hours', \
                              last_message_id = $2, last_message_at = now(), unread_count = unread_count + 1, \
                              updated_at = now() WHERE id = $1 AND tenant_id = $3";
/// An event with its payload (`store::outbox::emit`).
const EVENT: &str = "INSERT INTO events (id, tenant_id, name, payload, occurred_at) \
                     VALUES (gen_random_uuid(), $1, $2, $3::text::jsonb, now())";
/// The send a reply names (`take_form_reply`).
const SEND: &str = "SELECT form_id, version, source FROM chat_form_sends WHERE tenant_id = $1 AND token = $2 LIMIT 1";
/// The form (`forms::row`, every column).
const FORM: &str = "SELECT id, tenant_id, name, account_id, definition, status, version, menu_shop_id, menu_language, \
                    save_to_table, created_at, updated_at FROM chat_forms WHERE tenant_id = $1 AND id = $2 LIMIT 1";
/// The version's definition (`answers::version_definition`).
const DEFINITION: &str = "SELECT definition::text FROM chat_form_versions \
                          WHERE tenant_id = $1 AND form_id = $2 AND version = $3 LIMIT 1";
/// The answer, once per reply message.
const INSERT_ANSWER: &str = "INSERT INTO chat_form_answers (tenant_id, form_id, version, send_token, conversation_id, \
                             customer, source, answers, issues, record, provider_message_id, created_at) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text::jsonb, '[]', NULL, $9, now()) \
                             ON CONFLICT DO NOTHING";
/// The callback log's row (`receipts::log_chat`).
const CALLBACK_LOG: &str = "INSERT INTO provider_callbacks (tenant_id, channel_id, kind, provider_message_id, \
                            provider_status, message_id, outcome, body, received_at) \
                            VALUES ($1, $2, 'chat', NULL, NULL, NULL, 'applied', $3, now())";

struct Statements {
    auth: Statement,
    group: Statement,
    group_message: Statement,
    channel_by_token: Statement,
    customer_conversation: Statement,
    insert_inbound: Statement,
    customer_wrote: Statement,
    event: Statement,
    send: Statement,
    form: Statement,
    definition: Statement,
    insert_answer: Statement,
    callback_log: Statement,
}

impl Statements {
    async fn prepare(client: &Client) -> Result<Self> {
        Ok(Self {
            auth: client.prepare(sql::AUTH).await?,
            group: client.prepare(GROUP).await?,
            group_message: client.prepare(GROUP_MESSAGE).await?,
            channel_by_token: client.prepare(CHANNEL_BY_TOKEN).await?,
            customer_conversation: client.prepare(CUSTOMER_CONVERSATION).await?,
            insert_inbound: client.prepare(INSERT_INBOUND).await?,
            customer_wrote: client.prepare(CUSTOMER_WROTE).await?,
            event: client.prepare(EVENT).await?,
            send: client.prepare(SEND).await?,
            form: client.prepare(FORM).await?,
            definition: client.prepare(DEFINITION).await?,
            insert_answer: client.prepare(INSERT_ANSWER).await?,
            callback_log: client.prepare(CALLBACK_LOG).await?,
        })
    }
}

/// Runs `body` between `BEGIN` and `COMMIT` on `client`, rolling back when it fails.
async fn transaction<T>(
    client: &Client,
    body: impl Future<Output = std::result::Result<T, OpError>>,
) -> std::result::Result<T, OpError> {
    client.batch_execute("BEGIN").await?;
    match body.await {
        Ok(value) => {
            client.batch_execute("COMMIT").await?;
            Ok(value)
        }
        Err(error) => {
            client.batch_execute("ROLLBACK").await?;
            Err(error)
        }
    }
}

/// One connection per load task, every statement prepared on each.
struct RawDb {
    conns: Vec<(Client, Statements)>,
    tenant: i64,
    key_hash: Vec<u8>,
    account: Account,
    group: i64,
    /// Makes this side's uids and provider ids unique.
    salt: u64,
}

impl RawDb {
    async fn open(run: &Run<'_>, target: &Target, connections: usize) -> Result<Self> {
        let mut conns = Vec::with_capacity(connections);
        for _ in 0..connections {
            let client = sql::connect(&run.setup.database_url).await?;
            let statements = Statements::prepare(&client).await?;
            conns.push((client, statements));
        }
        Ok(Self {
            conns,
            tenant: run.setup.tenant,
            key_hash: run.key_hash.to_vec(),
            account: target.account.clone(),
            group: target.group,
            salt: data::new_salt(),
        })
    }

    /// Authentication, the group, the window, then the message as `send_group_message`
    /// stores it once the sandbox has accepted it (`sent`, with its provider id).
    async fn group_send(&self, worker: usize, n: u64) -> OpResult {
        let (client, st) = &self.conns[worker];
        client.query_one(&st.auth, &[&self.key_hash]).await?;
        let Some(group) = client.query_opt(&st.group, &[&self.tenant, &self.group]).await? else {
            return Err(format!("no group {}", self.group).into());
        };
        let (status, provider_group, last): (&str, Option<&str>, Option<f64>) =
            (group.get(7), group.get(8), group.get(15));
        if status != "active" || provider_group.is_none() {
            return Err(format!("group {} is {status}", self.group).into());
        }
        if !last.is_some_and(|at| epoch_now() - at < WINDOW_SECONDS) {
            return Err(format!("group {}'s window is closed", self.group).into());
        }
        let (uid, text) = (data::message_uid(self.salt, n), group_text(n));
        let content = json!({ "type": "text", "body": text }).to_string();
        let provider_id = format!("wamid.sbx{:016x}{:016x}", mix(self.salt), mix(n));
        let params: [&(dyn ToSql + Sync); 6] = [&self.tenant, &self.group, &uid, &text, &content, &provider_id];
        client.query_one(&st.group_message, &params).await?;
        Ok(())
    }

    /// 16's inbound message (the channel by its token, then in one transaction the
    /// conversation, the message, the window and `message.received`), then what
    /// `take_form_reply` does: the send by its token, the form, the version's definition, the
    /// answers read against it, and in one transaction the answer and `form.submitted`; then
    /// the callback log's row, as the service writes it last.
    async fn form_answer(&self, worker: usize, n: u64) -> OpResult {
        let (client, st) = &self.conns[worker];
        let channel = client.query_opt(&st.channel_by_token, &[&self.account.token]).await?;
        let Some(channel) = channel else { return Err("no channel has the webhook's token".into()) };
        let (channel_id, tenant): (i64, i64) = (channel.get(0), channel.get(1));
        let message = reply_message(self.salt, n);
        let delivery = String::from_utf8(delivery_body(&message, n))?;
        let (customer, chat_id, wamid) = (format!("+{}", customer_digits(n)), customer_digits(n), wamid(self.salt, n));
        let body = "[interactive]";
        let conversation = transaction(client, async {
            let params: [&(dyn ToSql + Sync); 6] =
                [&tenant, &self.account.id, &PHONE_NUMBER_ID, &customer, &chat_id, &PROFILE_NAME];
            let conversation: i64 = client.query_one(&st.customer_conversation, &params).await?.get(0);
            let metadata = json!({
                "message_type": "interactive",
                "source": "customer",
                "message": message,
                "profile_name": PROFILE_NAME,
                "reply_to": FLOW_MESSAGE,
            })
            .to_string();
            let uid = data::message_uid(self.salt, n);
            let params: [&(dyn ToSql + Sync); 10] = [
                &uid,
                &tenant,
                &channel_id,
                &self.account.channel_code,
                &customer,
                &BUSINESS_NUMBER,
                &body,
                &wamid,
                &metadata,
                &conversation,
            ];
            let Some(stored) = client.query_opt(&st.insert_inbound, &params).await? else {
                return Err(format!("message {wamid} was stored already").into());
            };
            let id: i64 = stored.get(0);
            client.execute(&st.customer_wrote, &[&conversation, &id, &tenant]).await?;
            let payload = json!({
                "message_id": id,
                "uid": uid,
                "direction": "inbound",
                "sender": customer,
                "recipient": BUSINESS_NUMBER,
                "status": "received",
                "body": body,
                "media_url": null,
                "channel_type": "chat",
                "gateway_message_id": wamid,
                "error_message": null,
            })
            .to_string();
            client.execute(&st.event, &[&tenant, &"message.received", &payload]).await?;
            Ok(conversation)
        })
        .await?;
        // the reply: its token and answers
        let reply = &message["interactive"]["nfm_reply"]["response_json"];
        let response: Value = serde_json::from_str(reply.as_str().ok_or("no response_json")?)?;
        let token = response["flow_token"].as_str().ok_or("no flow_token")?;
        let Some(send) = client.query_opt(&st.send, &[&tenant, &token]).await? else {
            return Err(format!("no send has the token {token}").into());
        };
        let (form_id, version, source): (i64, i32, String) = (send.get(0), send.get(1), send.get(2));
        let Some(form) = client.query_opt(&st.form, &[&tenant, &form_id]).await? else {
            return Err(format!("no form {form_id}").into());
        };
        let (name, menu_shop): (String, Option<i64>) = (form.get(2), form.get(7));
        if menu_shop.is_some() {
            return Err(format!("form {form_id} is a menu form").into());
        }
        let Some(definition) = client.query_opt(&st.definition, &[&tenant, &form_id, &version]).await? else {
            return Err(format!("form {form_id} has no version {version}").into());
        };
        let answers = Value::Object(read_answers(definition.get(0), &response)?);
        transaction(client, async {
            let answers_text = answers.to_string();
            let params: [&(dyn ToSql + Sync); 9] =
                [&tenant, &form_id, &version, &token, &conversation, &customer, &source, &answers_text, &wamid];
            if client.execute(&st.insert_answer, &params).await? == 0 {
                return Err(format!("the answer of {wamid} was stored already").into());
            }
            let payload = json!({
                "form": { "id": form_id, "name": name },
                "version": version,
                "source": source,
                "conversation_id": conversation,
                "customer": customer,
                "answers": answers,
                "issues": [],
                "record": null,
            })
            .to_string();
            client.execute(&st.event, &[&tenant, &"form.submitted", &payload]).await?;
            Ok(())
        })
        .await?;
        client.execute(&st.callback_log, &[&tenant, &channel_id, &delivery]).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_carries_one_flow_reply_naming_a_written_send() {
        let body = delivery_body(&reply_message(1, 42), 42);
        let value: Value = serde_json::from_slice(&body).expect("json");
        let change = &value["entry"][0]["changes"][0];
        assert_eq!(change["field"], "messages");
        assert_eq!(change["value"]["metadata"]["phone_number_id"], PHONE_NUMBER_ID);
        let message = &change["value"]["messages"][0];
        assert_eq!(message["from"], "255712401042");
        assert_eq!(message["type"], "interactive");
        assert_eq!(message["interactive"]["type"], "nfm_reply");
        let response: Value =
            serde_json::from_str(message["interactive"]["nfm_reply"]["response_json"].as_str().expect("a string"))
                .expect("json");
        assert_eq!(response, json!({ "flow_token": send_token(42), "name": "Amina", "qty": "3" }));
        // delivery n answers send n mod FORM_SENDS, and each token is shaped like the service's
        let again: Value =
            serde_json::from_slice(&delivery_body(&reply_message(1, 42 + FORM_SENDS), 42)).expect("json");
        let again = &again["entry"][0]["changes"][0]["value"]["messages"][0];
        assert_eq!(again["interactive"], message["interactive"]);
        assert_ne!(again["id"], message["id"]);
        assert_eq!(send_token(7).len(), 35);
        assert!(send_token(7).starts_with("ft_"));
        assert_ne!(send_token(7), send_token(8));
        assert!(signature(&body).starts_with("sha256=") && signature(&body).len() == 7 + 64);
    }

    #[test]
    fn customers_are_spread_without_magic_endings() {
        assert_eq!(customer_digits(0), "255712401000");
        assert_eq!(customer_digits(CUSTOMERS - 1), "255712403999");
        assert!((0..CUSTOMERS).all(|n| (FIRST_CUSTOMER + n) % 10_000 >= 1_000));
    }

    #[test]
    fn answers_are_read_as_the_service_reads_them() {
        let definition = form_definition().to_string();
        let response: Value = serde_json::from_str(&response_json("ft_x")).expect("json");
        let answers = read_answers(&definition, &response).expect("answers");
        assert_eq!(Value::Object(answers), json!({ "name": "Amina", "qty": 3 }));
        let padded = json!({ "name": "  Amina ", "qty": 2.5 });
        assert_eq!(
            Value::Object(read_answers(&definition, &padded).expect("answers")),
            json!({"name": "Amina", "qty": 2.5})
        );
        assert!(read_answers(&definition, &json!({ "qty": "3" })).is_err(), "name is required");
        assert!(read_answers(&definition, &json!({ "name": "A", "qty": "300" })).is_err(), "qty is at most 100");
        assert!(read_answers(&definition, &json!({ "name": "A", "qty": "many" })).is_err());
    }
}
