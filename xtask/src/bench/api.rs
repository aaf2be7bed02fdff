//! The HTTP side: one shared reqwest client, one method per API operation the bench drives.
//! Operations check the status and read the whole body, but parse no JSON: the load generator
//! shares the machine with the gateway, and what it spends is taken from the gateway.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use tokio::task::JoinSet;

use super::load::{OpError, OpResult};
use super::{chat, data};
use crate::Result;

/// How a failed message shows in a send's answer.
const FAILED: &[u8] = b"\"status\":\"failed\"";
/// How a refused tool call shows in its answer.
const IS_ERROR: &[u8] = b"\"isError\":true";
/// A JSON-RPC answer that is no error.
const RESULT: &[u8] = b"\"result\"";
/// How a chat webhook delivery that stored its one inbound message answers.
const STORED_ONE: &[u8] = b"\"messages_received\":1,";

pub struct Api {
    client: Client,
    base: String,
    authorization: String,
    /// The MCP connection's, for workload 14.
    mcp_authorization: String,
}

impl Api {
    /// `connections` is how many requests may be in flight at once; each keeps its connection.
    pub fn new(addr: &str, key: &str, connections: usize) -> Result<Self> {
        let client = Client::builder()
            .pool_max_idle_per_host(connections)
            .tcp_nodelay(true)
            .no_proxy()
            .timeout(Duration::from_secs(60))
            .build()?;
        Ok(Self {
            client,
            base: format!("http://{addr}"),
            authorization: format!("Bearer {key}"),
            mcp_authorization: String::new(),
        })
    }

    /// The same client, MCP calls made with the connection `token`.
    pub fn with_mcp(self, token: &str) -> Self {
        Self { mcp_authorization: format!("Bearer {token}"), ..self }
    }

    /// Whether `GET /ready` answers 200.
    pub async fn is_ready(&self) -> bool {
        let response = self.client.get(format!("{}/ready", self.base)).send().await;
        response.is_ok_and(|r| r.status() == StatusCode::OK)
    }

    /// Sends a request and reads the whole body; Err unless the status is `expected`.
    async fn call(
        &self,
        request: reqwest::RequestBuilder,
        expected: StatusCode,
    ) -> std::result::Result<impl AsRef<[u8]>, OpError> {
        self.call_as(request, expected, &self.authorization).await
    }

    async fn call_as(
        &self,
        request: reqwest::RequestBuilder,
        expected: StatusCode,
        authorization: &str,
    ) -> std::result::Result<impl AsRef<[u8]>, OpError> {
        let response = request.header("authorization", authorization).send().await?;
        let status = response.status();
        let body = response.bytes().await?;
        if status != expected {
            let body = String::from_utf8_lossy(&body);
            return Err(
                format!("expected {expected}, got {status}: {}", body.chars().take(300).collect::<String>()).into()
            );
        }
        Ok(body)
    }

    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.client.get(format!("{}/api/v3{path}", self.base))
    }

    fn post(&self, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.client.post(format!("{}/api/v3{path}", self.base)).json(body)
    }

    pub async fn create_group(&self, name: &str) -> Result<i64> {
        let body = self.call(self.post("/contact-groups", &json!({ "name": name })), StatusCode::CREATED).await;
        let body: Value = serde_json::from_slice(body.map_err(|e| format!("creating group {name:?}: {e}"))?.as_ref())?;
        body.pointer("/data/id").and_then(Value::as_i64).ok_or_else(|| format!("no data.id in {body}").into())
    }

    pub async fn me(&self) -> OpResult {
        self.call(self.get("/me"), StatusCode::OK).await?;
        Ok(())
    }

    pub async fn create_contact(&self, group: i64, n: u64) -> OpResult {
        let body = json!({ "PHONE": data::local(n), "name": data::name(n) });
        self.call(self.post(&format!("/contact-groups/{group}/contacts"), &body), StatusCode::CREATED).await?;
        Ok(())
    }

    fn search_page_request(&self, group: i64) -> reqwest::RequestBuilder {
        let (term, limit) = (data::SEARCH_TERM, data::PAGE_SIZE);
        self.get(&format!("/contact-groups/{group}/contacts?search={term}&limit={limit}"))
    }

    pub async fn search_page(&self, group: i64) -> OpResult {
        self.call(self.search_page_request(group), StatusCode::OK).await?;
        Ok(())
    }

    /// The number of contacts the search matches; Err unless a full page comes back.
    pub async fn check_search_page(&self, group: i64) -> Result<i64> {
        let body = self.call(self.search_page_request(group), StatusCode::OK).await.map_err(|e| e.to_string())?;
        let body: Value = serde_json::from_slice(body.as_ref())?;
        let items = body.pointer("/data/items").and_then(Value::as_array).map_or(0, Vec::len);
        let total = body.pointer("/data/pagination/total").and_then(Value::as_i64).unwrap_or(0);
        if items as i64 != data::PAGE_SIZE {
            return Err(
                format!("searching {:?} gave {items} contacts, not {}", data::SEARCH_TERM, data::PAGE_SIZE).into()
            );
        }
        Ok(total)
    }

    /// One SMS to one recipient from the bench's sender id; Err when the message failed (a
    /// send the provider refused still answers 201, so the body is searched, not parsed).
    pub async fn sms_send(&self, n: u64) -> OpResult {
        let body = json!({
            "recipient": data::sms_recipient(n),
            "message": data::sms_body(n),
            "sender_id": data::SMS_SENDER,
        });
        let answer = self.call(self.post("/sms/send", &body), StatusCode::CREATED).await?;
        let answer = answer.as_ref();
        if answer.windows(FAILED.len()).any(|w| w == FAILED) {
            let answer = String::from_utf8_lossy(answer);
            return Err(format!("the message failed: {}", answer.chars().take(300).collect::<String>()).into());
        }
        Ok(())
    }

    /// `POST /chat/send`: text `n` to one customer (see [`chat::recipient`]) from the chat
    /// account's default number; Err when the message failed (searched for, as for an SMS send).
    pub async fn chat_send(&self, n: u64) -> OpResult {
        let body = json!({ "recipient": chat::recipient(n), "message": chat::text(n) });
        let answer = self.call(self.post("/chat/send", &body), StatusCode::CREATED).await?;
        let answer = answer.as_ref();
        if answer.windows(FAILED.len()).any(|w| w == FAILED) {
            let answer = String::from_utf8_lossy(answer);
            return Err(format!("the message failed: {}", answer.chars().take(300).collect::<String>()).into());
        }
        Ok(())
    }

    /// `POST /hooks/chat/{token}` with `body` signed by `signature` (`X-Hub-Signature-256`), as
    /// the provider posts it: no API key. Err unless it answered 200 and stored one new message.
    pub async fn chat_hook(&self, token: &str, body: Vec<u8>, signature: &str) -> OpResult {
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
        if status != StatusCode::OK || !answer.windows(STORED_ONE.len()).any(|w| w == STORED_ONE) {
            let answer = String::from_utf8_lossy(&answer);
            return Err(format!(
                "expected 200 with one message received, got {status}: {}",
                answer.chars().take(300).collect::<String>()
            )
            .into());
        }
        Ok(())
    }

    /// `POST /leads`: upsert `n` (see [`data::lead_upsert`]); Err unless a new person was
    /// created (201) and a preloaded one found and updated (200).
    pub async fn lead_upsert(&self, n: u64) -> OpResult {
        let upsert = data::lead_upsert(n);
        let body = json!({ "name": upsert.name, "phone": upsert.phone, "company": upsert.company });
        let expected = if upsert.existing { StatusCode::OK } else { StatusCode::CREATED };
        self.call(self.post("/leads", &body), expected).await?;
        Ok(())
    }

    /// `GET /leads/{lead}`.
    pub async fn get_lead(&self, lead: &str) -> OpResult {
        self.call(self.get(&format!("/leads/{lead}")), StatusCode::OK).await?;
        Ok(())
    }

    /// `tools/call` of `tool` on the `contacts` MCP server, stateless (revision 2025-11-25, no
    /// session), as a remote MCP client sends it; Err unless the tool answered without error.
    pub async fn mcp_tool(&self, tool: &str, arguments: Value) -> OpResult {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments}});
        let request = self
            .client
            .post(format!("{}/mcp/v1/contacts", self.base))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        let answer = self.call_as(request, StatusCode::OK, &self.mcp_authorization).await?;
        let answer = answer.as_ref();
        let has = |part: &[u8]| answer.windows(part.len()).any(|w| w == part);
        if has(IS_ERROR) || !has(RESULT) {
            return Err(
                format!("{tool}: {}", String::from_utf8_lossy(answer).chars().take(300).collect::<String>()).into()
            );
        }
        Ok(())
    }

    /// `POST /sms/campaign` to `group`; the campaign's id.
    pub async fn create_campaign(&self, group: i64) -> Result<i64> {
        let request = json!({ "contact_list_id": group.to_string(), "message": data::CAMPAIGN_TEMPLATE });
        let body = self.call(self.post("/sms/campaign", &request), StatusCode::CREATED).await;
        let body: Value = serde_json::from_slice(body.map_err(|e| format!("creating the campaign: {e}"))?.as_ref())?;
        let campaign = body.pointer("/data/campaigns/0").ok_or_else(|| format!("no data.campaigns[0] in {body}"))?;
        if let Some(status) = campaign.get("status").and_then(Value::as_str)
            && !matches!(status, "draft" | "running" | "completed")
        {
            return Err(format!("the campaign was created {status}: {campaign}").into());
        }
        campaign.get("id").and_then(Value::as_i64).ok_or_else(|| format!("no id in {campaign}").into())
    }

    /// `POST /call-campaigns` to `group`: `message` read out, `calls_per_minute`, calling all
    /// day (UTC), one try per number; the campaign's id, once its answer says it has `callees`
    /// targets.
    pub async fn create_call_campaign(
        &self,
        group: i64,
        message: &str,
        calls_per_minute: i32,
        callees: u64,
    ) -> Result<i64> {
        let request = json!({
            "contact_group_id": group.to_string(),
            "message": message,
            "calls_per_minute": calls_per_minute,
            "calling_hours": { "start": "00:00", "end": "24:00", "utc_offset": "+00:00" },
            "max_attempts": 1,
        });
        let body = self.call(self.post("/call-campaigns", &request), StatusCode::CREATED).await;
        let body: Value =
            serde_json::from_slice(body.map_err(|e| format!("creating the call campaign: {e}"))?.as_ref())?;
        let campaign = body.get("data").ok_or_else(|| format!("no data in {body}"))?;
        let status = campaign.get("status").and_then(Value::as_str);
        let targets = campaign.get("total_targets").and_then(Value::as_u64);
        if !matches!(status, Some("scheduled" | "running")) || targets != Some(callees) {
            return Err(
                format!("the call campaign was created with {targets:?} targets, {status:?}: {campaign}").into()
            );
        }
        campaign.get("id").and_then(Value::as_i64).ok_or_else(|| format!("no id in {campaign}").into())
    }

    /// `POST /webhooks`: a receiver of `event` at `url`; its id and signing secret.
    pub async fn create_webhook(&self, url: &str, event: &str) -> Result<(i64, String)> {
        let request = json!({ "url": url, "events": [event] });
        let body = self.call(self.post("/webhooks", &request), StatusCode::CREATED).await;
        let body = body.map_err(|e| format!("registering the webhook receiver {url}: {e}"))?;
        let body: Value = serde_json::from_slice(body.as_ref())?;
        let id = body.pointer("/data/id").and_then(Value::as_i64);
        match (id, body.pointer("/data/secret").and_then(Value::as_str)) {
            (Some(id), Some(secret)) => Ok((id, secret.to_owned())),
            _ => Err(format!("no data.id and data.secret in {body}").into()),
        }
    }

    /// `POST /catalogues`: a shop pricing in [`data::SHOP_CURRENCY`] with `stock_policy`; its id.
    pub async fn create_shop(&self, name: &str, stock_policy: &str) -> Result<i64> {
        let request = json!({ "name": name, "default_currency": data::SHOP_CURRENCY, "stock_policy": stock_policy });
        let body = self.call(self.post("/catalogues", &request), StatusCode::CREATED).await;
        let body: Value = serde_json::from_slice(body.map_err(|e| format!("creating shop {name:?}: {e}"))?.as_ref())?;
        body.pointer("/data/id").and_then(Value::as_i64).ok_or_else(|| format!("no data.id in {body}").into())
    }

    /// `POST /catalogues/{shop}/products/batch` with a body serialized beforehand (so that the
    /// time taken is the service's); the new run's id.
    pub async fn product_batch(&self, shop: i64, body: Vec<u8>) -> Result<i64> {
        let request = self
            .client
            .post(format!("{}/api/v3/catalogues/{shop}/products/batch", self.base))
            .header("content-type", "application/json")
            .body(body);
        let body = self.call(request, StatusCode::ACCEPTED).await;
        let body: Value = serde_json::from_slice(body.map_err(|e| format!("sending a product batch: {e}"))?.as_ref())?;
        if body.pointer("/data/replayed").and_then(Value::as_bool) != Some(false) {
            return Err(format!("the batch was not accepted as a new run: {body}").into());
        }
        body.pointer("/data/id").and_then(Value::as_i64).ok_or_else(|| format!("no data.id in {body}").into())
    }

    /// `GET /catalogues/{shop}/syncs/{sync}`: the run's report (`data`).
    pub async fn sync_report(&self, shop: i64, sync: i64) -> Result<Value> {
        let body = self.call(self.get(&format!("/catalogues/{shop}/syncs/{sync}")), StatusCode::OK).await;
        let mut body: Value = serde_json::from_slice(body.map_err(|e| format!("reading sync {sync}: {e}"))?.as_ref())?;
        body.get_mut("data").map(Value::take).ok_or_else(|| format!("no data in {body}").into())
    }

    /// `POST /catalogues/{shop}/orders`: a manual order of `lines` (code, quantity); Err unless
    /// it was created (201). The answer is not parsed: the stock is checked in the tables.
    pub async fn create_order(&self, shop: i64, handle: &str, lines: &[(String, i32)]) -> OpResult {
        let lines: Vec<Value> =
            lines.iter().map(|(sku, quantity)| json!({ "sku": sku, "quantity": quantity })).collect();
        let body = json!({ "platform": "manual", "customer_handle": handle, "lines": lines });
        self.call(self.post(&format!("/catalogues/{shop}/orders"), &body), StatusCode::CREATED).await?;
        Ok(())
    }

    /// `GET /data/tables/{table}/records` with `query`, URL-encoded once: what
    /// [`Api::data_list`] and [`Api::data_list_json`] ask for.
    pub fn data_records_url(&self, table: &str, query: &[(&str, &str)]) -> Result<reqwest::Url> {
        let path = format!("{}/api/v3/data/tables/{table}/records", self.base);
        Ok(reqwest::Url::parse_with_params(&path, query)?)
    }

    /// A page of records (200); the answer is not parsed.
    pub async fn data_list(&self, url: &reqwest::Url) -> OpResult {
        self.call(self.client.get(url.clone()), StatusCode::OK).await?;
        Ok(())
    }

    /// A page of records, parsed: `{records, next_cursor, has_more, count, served_at}`.
    pub async fn data_list_json(&self, url: &reqwest::Url) -> Result<Value> {
        let body = self.call(self.client.get(url.clone()), StatusCode::OK).await;
        let body = body.map_err(|e| format!("GET {url}: {e}"))?;
        Ok(serde_json::from_slice(body.as_ref())?)
    }

    /// `GET /data/tables/{table}/schema`.
    pub async fn data_schema(&self, table: &str) -> Result<Value> {
        let body = self.call(self.get(&format!("/data/tables/{table}/schema")), StatusCode::OK).await;
        let body = body.map_err(|e| format!("reading the schema of data table {table}: {e}"))?;
        Ok(serde_json::from_slice(body.as_ref())?)
    }

    /// `POST /data/tables/{table}/records` `{data}`; Err unless it was created (201). The
    /// answer is not parsed: the records are counted in the tables afterwards.
    pub async fn data_create(&self, table: &str, data: &Value) -> OpResult {
        let body = json!({ "data": data });
        self.call(self.post(&format!("/data/tables/{table}/records"), &body), StatusCode::CREATED).await?;
        Ok(())
    }

    /// Creates the 500 contacts of batch `batch` in one request.
    pub async fn batch(&self, group: i64, batch: u64) -> OpResult {
        let contacts: Vec<Value> =
            data::batch_numbers(batch).map(|n| json!({ "PHONE": data::local(n), "name": data::name(n) })).collect();
        let body = json!({ "contacts": contacts });
        self.call(self.post(&format!("/contact-groups/{group}/contacts/batch"), &body), StatusCode::OK).await?;
        Ok(())
    }

    /// Sends batches `batches` (see [`data::batch_numbers`]) to `group`, `in_flight` at a time,
    /// counting the contacts on `bar`.
    pub async fn load(
        self: &Arc<Self>,
        group: i64,
        batches: Range<u64>,
        in_flight: usize,
        bar: &ProgressBar,
    ) -> Result<()> {
        let (next, end) = (batches.start, batches.end);
        let next = Arc::new(AtomicU64::new(next));
        let mut tasks = JoinSet::new();
        for _ in 0..in_flight {
            let (api, next, bar) = (Arc::clone(self), Arc::clone(&next), bar.clone());
            tasks.spawn(async move {
                loop {
                    let batch = next.fetch_add(1, Ordering::Relaxed);
                    if batch >= end {
                        return Ok::<_, OpError>(());
                    }
                    api.batch(group, batch).await.map_err(|e| format!("loading batch {batch}: {e}"))?;
                    bar.inc(data::BATCH_ROWS as u64);
                }
            });
        }
        while let Some(joined) = tasks.join_next().await {
            joined?.map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// A bar counting `contacts` loaded.
pub fn load_bar(contacts: u64) -> ProgressBar {
    let bar = ProgressBar::new(contacts).with_message("loading contacts through the API");
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({per_sec}, {eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar
}
