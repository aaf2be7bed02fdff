//! The chat workloads (issue 17): 15, `POST /api/v3/chat/send` with one text to one customer,
//! and 16, signed Cloud API `messages` deliveries to `POST /hooks/chat/{token}`, each carrying
//! one new inbound text. Each against raw SQL writing what the request must, on the same
//! database, like every other row.
//!
//! The tenant's chat account is made once per run with the admin CLI (`gateway admin
//! chat-account add --json`, then `chat-account phone add`): the sandbox chat provider, a known
//! app secret (the bench signs the deliveries with it) and one business number, the account's
//! default, so sends name no `sender_id`. Customers are [`CUSTOMERS`] numbers `+2557123...`,
//! request `n` going to customer `n mod CUSTOMERS`, so conversations are spread over as many
//! rows; none ends in `0001` to `0005`, the sandbox's magic endings.
//!
//! 15 runs as the SMS send (6) does (`Run::api_side`, the raw side below, `Run::open_side`, one
//! gateway for the three): the raw side is the authentication lookup and, in one transaction,
//! what `messaging::chat::send` writes for one recipient, in its order. 16 is a closed loop on
//! both sides: the raw side is the channel's lookup by its path token (what authenticates a
//! hook) and what `messaging::chat::webhook` writes for one inbound text.

use std::sync::Arc;

use ring::hmac;
use serde_json::{Value, json};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use super::load::{Measured, OpError, OpResult, drive};
use super::report::Outcome;
use super::{Gateway, Run, Workload, data, sql, sys};
use crate::Result;

/// The bench tenant's chat business account and its one number.
const WABA_ID: &str = "100000000000001";
const ACCOUNT_NAME: &str = "Bench chat";
/// Known to the bench, which signs the deliveries with it as the provider would.
const APP_SECRET: &str = "bench-chat-app-secret-0123456789abcdef";
const VERIFY_TOKEN: &str = "bench-chat-verify-token";
const PHONE_NUMBER_ID: &str = "200000000000001";
/// The business number, E.164 and as the provider displays it.
const BUSINESS_NUMBER: &str = "+255222000111";
const DISPLAY_NUMBER: &str = "255222000111";
/// Distinct customers the requests go round: conversations spread over as many rows.
pub const CUSTOMERS: u64 = 3_000;
/// The first customer's national number, `712301000`: every ending from 1000 up.
const FIRST_CUSTOMER: u64 = 712_301_000;
/// The customer's profile name in every delivery.
const PROFILE_NAME: &str = "Amina";
/// What the chat price is when the environment does not set it (the service's default).
const DEFAULT_CHAT_PRICE_MINOR: i64 = 1_000;

/// What the raw side of 15 writes, in the service's order.
pub const RAW_SEND: &str = "authentication lookup; BEGIN; INSERT conversations ... ON CONFLICT (tenant_id, phone_number_id, \
                            customer) DO UPDATE RETURNING id; INSERT messages (chat, queued, priced, its conversation) \
                            RETURNING id; UPDATE conversations (last message, unread 0); INSERT jobs (messaging.send); \
                            UPDATE wallets (debit) RETURNING; INSERT wallet_ledger; COMMIT";
/// What the raw side of 16 writes.
pub const RAW_INBOUND: &str = "the channel by its path token; BEGIN; INSERT conversations ... ON CONFLICT DO UPDATE (chat id, \
                               name) RETURNING id; INSERT messages (inbound, received, metadata with the raw message) \
                               ON CONFLICT DO NOTHING RETURNING id; UPDATE conversations (window, last message, unread + 1); \
                               INSERT events ('message.received'); COMMIT; INSERT provider_callbacks ('chat', 'applied', the body)";

/// The customer of request `n`, E.164: `+2557123` and five digits.
pub fn recipient(n: u64) -> String {
    format!("+{}", customer_digits(n))
}

/// The customer of request `n` as the provider names them (`wa_id`, `from`): digits alone.
fn customer_digits(n: u64) -> String {
    format!("{}{}", data::COUNTRY_CODE, FIRST_CUSTOMER + n % CUSTOMERS)
}

/// The text of send `n`.
pub fn text(n: u64) -> String {
    format!("Bench chat {n}")
}

/// The provider message id of delivery `n` of a side: unique per (salt, n), so every delivery
/// stores a message.
fn wamid(salt: u64, n: u64) -> String {
    format!("wamid.bench{salt:016x}{n:010x}")
}

/// The inbound message of delivery `n` as the Cloud API writes it.
fn inbound_message(salt: u64, n: u64) -> Value {
    json!({
        "from": customer_digits(n),
        "id": wamid(salt, n),
        "timestamp": "1764230400",
        "type": "text",
        "text": { "body": "Habari" },
    })
}

/// A Cloud API `messages` delivery carrying one inbound text, as the provider posts it.
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

/// The price of one chat message: `SVC_CHAT_PRICE_MINOR`, which the gateway reads too.
fn chat_price_minor() -> i64 {
    std::env::var("SVC_CHAT_PRICE_MINOR").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_CHAT_PRICE_MINOR)
}

/// The tenant's chat account, as the raw sides need it.
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

impl Run<'_> {
    /// The tenant's chat account: made with the admin CLI the first time a run needs it.
    async fn chat_account(&self) -> Result<Account> {
        let tenant = self.setup.tenant;
        if let Some(row) = self.db.query_opt(ACCOUNT, &[&tenant, &WABA_ID]).await? {
            return Ok(Account { id: row.get(0), channel_id: row.get(1), channel_code: row.get(2), token: row.get(3) });
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
            "--json",
        ];
        let added: Value = serde_json::from_str(&self.admin(&add).await?)?;
        let url =
            added.get("webhook_url").and_then(Value::as_str).ok_or_else(|| format!("no webhook_url in {added}"))?;
        let token = url.rsplit('/').next().unwrap_or_default().to_owned();
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
        self.admin(&phone).await?;
        let row = self.db.query_one(ACCOUNT, &[&tenant, &WABA_ID]).await?;
        let account = Account { id: row.get(0), channel_id: row.get(1), channel_code: row.get(2), token: row.get(3) };
        if account.token != token {
            return Err(format!("`chat-account add` printed the webhook {url}, the channel's token is another").into());
        }
        println!(
            "xtask: chat account {} (WABA {WABA_ID}, channel {} `{}`), number {BUSINESS_NUMBER} ({PHONE_NUMBER_ID}), \
             sandbox provider; webhook /hooks/chat/<token>",
            account.id, account.channel_id, account.channel_code
        );
        Ok(account)
    }

    /// `gateway admin ...`; the last line it printed.
    async fn admin(&self, args: &[&str]) -> Result<String> {
        let mut cmd = super::gateway_command(&self.setup.gateway, &self.setup.database_url, &self.setup.root, args);
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
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line = stdout.lines().map(str::trim).rfind(|line| !line.is_empty());
        Ok(line.ok_or_else(|| format!("`gateway {}` printed nothing", args.join(" ")))?.to_owned())
    }

    /// Workload 15: as the SMS send (6), with the chat account's raw statements.
    pub(super) async fn chat_send(&self, workload: &'static Workload) -> Result<Outcome> {
        let account = self.chat_account().await?;
        let gateway = Gateway::start(self.setup, workload.limiter(), self.api).await?;
        let api_side = self.api_side(workload, &gateway).await?;
        let (raw, raw_cpu) = self.raw_chat(workload, &gateway, &account, RawWork::Send).await?;
        let open = self.open_side(workload, raw.rate()).await?;
        gateway.stop().await?;
        self.chat_counts(workload).await?;
        Ok(Outcome {
            workload,
            api: api_side.measured,
            raw,
            rss_mb: api_side.rss_mb,
            api_cpu: api_side.cpu,
            raw_cpu,
            facts: None,
            open,
        })
    }

    /// Workload 16: signed deliveries from 32 connections, then the raw side, on one gateway.
    pub(super) async fn chat_inbound(&self, workload: &'static Workload) -> Result<Outcome> {
        let account = self.chat_account().await?;
        let gateway = Gateway::start(self.setup, workload.limiter(), self.api).await?;
        self.prepare(workload, "API").await?;
        let label = format!("{}. {} · API", workload.number, workload.name);
        let before = self.meter.read(gateway.pid);
        let (api, token, salt) = (Arc::clone(self.api), Arc::new(account.token.clone()), data::new_salt());
        let measured = drive(&label, workload.connections, self.timing, move |op| {
            let (api, token) = (Arc::clone(&api), Arc::clone(&token));
            async move {
                let body = delivery_body(&inbound_message(salt, op.seq), op.seq);
                let signature = signature(&body);
                api.chat_hook(&token, body, &signature).await
            }
        })
        .await?;
        let api_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        let rss_mb = sys::peak_rss_mb(gateway.pid).ok();
        super::print_run(&label, &measured, &api_cpu);
        let (raw, raw_cpu) = self.raw_chat(workload, &gateway, &account, RawWork::Inbound).await?;
        gateway.stop().await?;
        self.chat_counts(workload).await?;
        Ok(Outcome { workload, api: measured, raw, rss_mb, api_cpu, raw_cpu, facts: None, open: None })
    }

    /// The raw side of 15 or 16: 32 connections, every statement prepared on each.
    async fn raw_chat(
        &self,
        workload: &'static Workload,
        gateway: &Gateway,
        account: &Account,
        work: RawWork,
    ) -> Result<(Measured, sys::CpuShare)> {
        self.prepare(workload, "raw SQL").await?;
        let label = format!("{}. {} · raw SQL", workload.number, workload.name);
        let db = Arc::new(ChatDb::open(self, account, workload.connections).await?);
        // `db` keeps the connections, and so their backends' CPU time, until the meter has read it.
        let conns = Arc::clone(&db);
        let before = self.meter.read(gateway.pid);
        let measured = drive(&label, workload.connections, self.timing, move |op| {
            let db = Arc::clone(&conns);
            async move {
                match work {
                    RawWork::Send => db.send(op.worker, op.seq).await,
                    RawWork::Inbound => db.inbound(op.worker, op.seq).await,
                }
            }
        })
        .await?;
        let cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        drop(db);
        super::print_run(&label, &measured, &cpu);
        Ok((measured, cpu))
    }

    /// What the run left: the conversations, and the chat messages by direction and status.
    async fn chat_counts(&self, workload: &Workload) -> Result<()> {
        let tenant = self.setup.tenant;
        let conversations: i64 =
            self.db.query_one("SELECT count(*) FROM conversations WHERE tenant_id = $1", &[&tenant]).await?.get(0);
        let rows = self
            .db
            .query(
                "SELECT direction, status, count(*) FROM messages WHERE tenant_id = $1 AND channel_type = 'chat' \
                 GROUP BY 1, 2 ORDER BY 1, 2",
                &[&tenant],
            )
            .await?;
        let counts: Vec<String> = rows
            .iter()
            .map(|r| format!("{} {} {}", r.get::<_, i64>(2), r.get::<_, String>(0), r.get::<_, String>(1)))
            .collect();
        println!(
            "xtask: {}. {}: {conversations} conversations; chat messages so far: {}",
            workload.number,
            workload.name,
            counts.join(", ")
        );
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
enum RawWork {
    Send,
    Inbound,
}

/// A conversation found or opened for a send (`chat::conversations::open`, one number).
const OPEN_CONVERSATION: &str = "INSERT INTO conversations (tenant_id, account_id, phone_number_id, customer, \
                                 last_message_at, created_at, updated_at) VALUES ($1, $2, $3, $4, now(), now(), now()) \
                                 ON CONFLICT (tenant_id, phone_number_id, customer) DO UPDATE SET account_id = excluded.account_id \
                                 RETURNING id";
/// One queued outbound text, as `chat::send` writes it: from the business number, priced,
/// `ucs2`, one segment, its content kind in `metadata`, in its conversation.
const INSERT_SEND: &str = "INSERT INTO messages (uid, tenant_id, direction, channel_type, tenant_channel_id, channel_code, \
                           sender, recipient, body, status, segments, encoding, price_minor, metadata, conversation_id, \
                           created_at, updated_at) \
                           VALUES ($1, $2, 'outbound', 'chat', $3, $4, $5, $6, $7, 'queued', 1, 'ucs2', $8, \
                           '{\"message_type\": \"text\"}', $9, now(), now()) ON CONFLICT DO NOTHING RETURNING id";
/// The business wrote (`chat::conversations::wrote`).
const WROTE: &str = "UPDATE conversations SET last_message_id = $2, last_message_at = now(), unread_count = 0, \
                     updated_at = now() WHERE id = $1 AND tenant_id = $3";
/// The channel a hook's path names (`channels::by_callback_token`): every column, the sealed
/// credentials included.
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
/// `message.received` with the message's payload (`dispatch::settle`).
const RECEIVED_EVENT: &str = "INSERT INTO events (id, tenant_id, name, payload, occurred_at) \
                              VALUES (gen_random_uuid(), $1, 'message.received', $2::text::jsonb, now())";
/// The callback log's row (`receipts::log_chat`).
const CALLBACK_LOG: &str = "INSERT INTO provider_callbacks (tenant_id, channel_id, kind, provider_message_id, \
                            provider_status, message_id, outcome, body, received_at) \
                            VALUES ($1, $2, 'chat', NULL, NULL, NULL, 'applied', $3, now())";

struct Statements {
    auth: Statement,
    open_conversation: Statement,
    insert_send: Statement,
    wrote: Statement,
    send_job: Statement,
    wallet_debit: Statement,
    wallet_ledger: Statement,
    channel_by_token: Statement,
    customer_conversation: Statement,
    insert_inbound: Statement,
    customer_wrote: Statement,
    received_event: Statement,
    callback_log: Statement,
}

impl Statements {
    async fn prepare(client: &Client) -> Result<Self> {
        Ok(Self {
            auth: client.prepare(sql::AUTH).await?,
            open_conversation: client.prepare(OPEN_CONVERSATION).await?,
            insert_send: client.prepare(INSERT_SEND).await?,
            wrote: client.prepare(WROTE).await?,
            send_job: client.prepare(sql::INSERT_SEND_JOB).await?,
            wallet_debit: client.prepare(sql::WALLET_DEBIT).await?,
            wallet_ledger: client.prepare(sql::WALLET_LEDGER).await?,
            channel_by_token: client.prepare(CHANNEL_BY_TOKEN).await?,
            customer_conversation: client.prepare(CUSTOMER_CONVERSATION).await?,
            insert_inbound: client.prepare(INSERT_INBOUND).await?,
            customer_wrote: client.prepare(CUSTOMER_WROTE).await?,
            received_event: client.prepare(RECEIVED_EVENT).await?,
            callback_log: client.prepare(CALLBACK_LOG).await?,
        })
    }
}

/// One connection per load task, every statement prepared on each.
struct ChatDb {
    conns: Vec<(Client, Statements)>,
    tenant: i64,
    key_hash: Vec<u8>,
    account: Account,
    price: i64,
    /// Makes this side's message uids and provider ids unique.
    salt: u64,
}

impl ChatDb {
    async fn open(run: &Run<'_>, account: &Account, connections: usize) -> Result<Self> {
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
            account: account.clone(),
            price: chat_price_minor(),
            salt: data::new_salt(),
        })
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

    /// Authentication, then in one transaction what `POST /chat/send` writes for one recipient
    /// (`messaging::chat::send`), in its order: the conversation, the message, the
    /// conversation's last message, the dispatch job (due after the job lease, as an inline
    /// send's), the debit with its ledger entry last.
    async fn send(&self, worker: usize, n: u64) -> OpResult {
        let (client, st) = &self.conns[worker];
        client.query_one(&st.auth, &[&self.key_hash]).await?;
        Self::transaction(client, async {
            let (tenant, account) = (&self.tenant, &self.account);
            let (customer, body, uid) = (recipient(n), text(n), data::message_uid(self.salt, n));
            let params: [&(dyn ToSql + Sync); 4] = [tenant, &account.id, &PHONE_NUMBER_ID, &customer];
            let conversation: i64 = client.query_one(&st.open_conversation, &params).await?.get(0);
            let params: [&(dyn ToSql + Sync); 9] = [
                &uid,
                tenant,
                &account.channel_id,
                &account.channel_code,
                &PHONE_NUMBER_ID,
                &customer,
                &body,
                &self.price,
                &conversation,
            ];
            let Some(message) = client.query_opt(&st.insert_send, &params).await? else {
                return Err(format!("message uid {uid} exists already").into());
            };
            let id: i64 = message.get(0);
            client.execute(&st.wrote, &[&conversation, &id, tenant]).await?;
            client.query_one(&st.send_job, &[&id, tenant]).await?;
            let Some(wallet) = client.query_opt(&st.wallet_debit, &[tenant, &self.price]).await? else {
                return Err("the wallet cannot pay for a message".into());
            };
            let balance: i64 = wallet.get(1);
            let note = "Chat send to 1 recipient(s)";
            client.execute(&st.wallet_ledger, &[tenant, &self.price, &balance, &note]).await?;
            Ok(())
        })
        .await
    }

    /// The channel by its token, then in one transaction what a delivery with one new inbound
    /// text writes (`messaging::chat::webhook`): the conversation, the message, the window,
    /// the `message.received` event; then the callback log's row, as the service writes it
    /// after its transaction. The body is the API side's (the log keeps it); it is not signed,
    /// as nothing checks it here.
    async fn inbound(&self, worker: usize, n: u64) -> OpResult {
        let (client, st) = &self.conns[worker];
        let channel = client.query_opt(&st.channel_by_token, &[&self.account.token]).await?;
        let Some(channel) = channel else { return Err("no channel has the webhook's token".into()) };
        let (channel_id, tenant): (i64, i64) = (channel.get(0), channel.get(1));
        let message = inbound_message(self.salt, n);
        let delivery = String::from_utf8(delivery_body(&message, n))?;
        let (customer, chat_id, wamid) = (recipient(n), customer_digits(n), wamid(self.salt, n));
        let body = "Habari";
        Self::transaction(client, async {
            let params: [&(dyn ToSql + Sync); 6] =
                [&tenant, &self.account.id, &PHONE_NUMBER_ID, &customer, &chat_id, &PROFILE_NAME];
            let conversation: i64 = client.query_one(&st.customer_conversation, &params).await?.get(0);
            let metadata = json!({
                "message_type": "text",
                "source": "customer",
                "message": message,
                "profile_name": PROFILE_NAME,
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
            client.execute(&st.received_event, &[&tenant, &payload]).await?;
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
    fn customers_are_spread_mobiles_without_magic_endings() {
        assert_eq!(recipient(0), "+255712301000");
        assert_eq!(recipient(CUSTOMERS - 1), "+255712303999");
        assert_eq!(recipient(CUSTOMERS), recipient(0), "round the customers");
        assert!((0..CUSTOMERS).all(|n| (FIRST_CUSTOMER + n) % 10_000 >= 1_000));
        assert!(recipient(7).starts_with("+2557123"));
    }

    #[test]
    fn a_delivery_carries_one_inbound_text_signed_as_the_provider_signs() {
        let body = delivery_body(&inbound_message(1, 42), 42);
        let value: Value = serde_json::from_slice(&body).expect("json");
        let change = &value["entry"][0]["changes"][0];
        assert_eq!(change["field"], "messages");
        let message = &change["value"]["messages"][0];
        assert_eq!(message["from"], "255712301042");
        assert_eq!(message["id"], wamid(1, 42));
        assert_eq!(change["value"]["contacts"][0]["wa_id"], "255712301042");
        assert_eq!(change["value"]["metadata"]["phone_number_id"], PHONE_NUMBER_ID);
        assert_ne!(wamid(1, 42), wamid(2, 42));
        assert_ne!(wamid(1, 42), wamid(1, 43));
        // RFC 4231, test case 2
        let key = hmac::Key::new(hmac::HMAC_SHA256, b"Jefe");
        let mac = hex::encode(hmac::sign(&key, b"what do ya want for nothing?").as_ref());
        assert_eq!(mac, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        assert!(signature(&body).starts_with("sha256=") && signature(&body).len() == 7 + 64);
    }
}
