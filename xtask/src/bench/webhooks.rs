//! The webhook workload: outbox events fanned out into deliveries and posted, signed, by the
//! gateway's delivery loop to a receiver in this process, against the same signed POSTs sent
//! to the same receiver by a plain reqwest loop. One operation per side, timed whole, so its
//! rates are deliveries per second.
//!
//! The API side writes every event in one `INSERT ... SELECT` (the fan-out trigger writes the
//! deliveries in the same statement) and ends when the receiver has counted every request; the
//! raw side is 32 tasks posting bodies of the same shape with the same headers, HMACs computed
//! per request as the gateway computes them, and ends at the last answer. The receiver is the
//! same on both sides and does as little as HTTP allows: it reads the body, counts the request
//! and answers 200 with an empty body on a kept-alive connection. It checks no signature and
//! parses no JSON, so what the two sides differ by is the sender.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use indicatif::{ProgressBar, ProgressStyle};
use ring::hmac;
use serde_json::json;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use uuid::Uuid;

use super::load::{Measured, OpError};
use super::report::{Facts, Outcome, WebhookFacts};
use super::{Gateway, Run, Workload};
use crate::Result;

/// The event every delivery carries: the receiver subscribes to it alone.
pub const EVENT: &str = "message.sent";
/// Deliveries in flight in the gateway, to the one receiver, and raw tasks.
pub const CONCURRENCY: usize = 32;
/// What the gateway runs with for this workload only.
pub const GATEWAY_ENV: [(&str, &str); 3] = [
    // The receiver is 127.0.0.1 over http: refused by the address guard without it.
    ("SVC_WEBHOOKS_ALLOW_LOOPBACK", "1"),
    ("SVC_WEBHOOKS_CONCURRENCY", "32"),
    ("SVC_WEBHOOKS_PER_RECEIVER", "32"),
];

/// How often the API side reads the receiver's count.
const POLL: Duration = Duration::from_millis(10);
/// No request received for this long: the delivered/failed state is looked at, once a second.
const DIAGNOSE_AFTER: Duration = Duration::from_secs(2);
/// No request received for this long: the run fails.
const STALLED_AFTER: Duration = Duration::from_secs(60);
/// How long the gateway may take to record the last attempts once the receiver has them all.
const RECORDED_WITHIN: Duration = Duration::from_secs(30);

/// N `message.sent` events of the bench tenant in one statement, each with a flat payload of
/// about 300 bytes shaped like the service's own message events.
const INSERT_EVENTS: &str = "INSERT INTO events (id, tenant_id, name, payload, occurred_at) \
    SELECT gen_random_uuid(), $1, 'message.sent', jsonb_build_object( \
        'message_id', g, 'uid', 'msg_' || g, 'direction', 'outbound', 'sender', 'ACME', \
        'recipient', '+2557123' || lpad(g::text, 5, '0'), 'status', 'sent', \
        'body', 'Your order is ready for pickup.', 'media_url', null, 'channel_type', 'sms', \
        'gateway_message_id', 'AT' || g, 'error_message', null), now() \
    FROM generate_series(1, $2::bigint) AS g";
/// A delivery that was attempted and is neither delivered nor in flight: failed, or waiting
/// for a retry a minute or more away.
const FIRST_UNDELIVERED: &str = "SELECT state, attempts, last_status, last_error FROM webhook_deliveries \
    WHERE webhook_id = $1 AND state <> 'delivered' AND attempts > 0 AND locked_by IS NULL LIMIT 1";
/// Each batch of attempts the gateway records is one statement with one `updated_at`.
const RECORD_STATEMENTS: &str = "SELECT count(DISTINCT updated_at) FROM webhook_deliveries WHERE webhook_id = $1";
/// Transactions committed on the bench database so far (backends report theirs at the latest
/// when they exit, so read it again after the gateway has stopped).
const COMMITS: &str = "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()";
const STATES: &str = "SELECT count(*) FILTER (WHERE state = 'delivered'), count(*) \
    FROM webhook_deliveries WHERE webhook_id = $1";

/// A minimal HTTP/1.1 server on 127.0.0.1: every POST is read, counted and answered 200 with
/// an empty body; connections are kept alive. Stops when dropped.
pub struct Receiver {
    addr: SocketAddr,
    received: Arc<AtomicU64>,
    /// Connections accepted: few when senders keep theirs alive.
    connections: Arc<AtomicU64>,
    accept: JoinHandle<()>,
}

impl Receiver {
    pub async fn start() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let received = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let (counter, accepted) = (Arc::clone(&received), Arc::clone(&connections));
        let accept = tokio::spawn(async move {
            // Dropped with the accept task: that closes every connection.
            let mut serving = JoinSet::new();
            loop {
                let stream = match listener.accept().await {
                    Ok((stream, _)) => stream,
                    Err(_) => {
                        // Out of descriptors or similar: let some connections end first.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                accepted.fetch_add(1, Ordering::Relaxed);
                let _ = stream.set_nodelay(true);
                let counter = Arc::clone(&counter);
                serving.spawn(async move {
                    let service = service_fn(move |request| answer(request, Arc::clone(&counter)));
                    // A connection that ends badly ends; the sender sees it.
                    let _ =
                        http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(stream), service).await;
                });
                while serving.try_join_next().is_some() {}
            }
        });
        Ok(Self { addr, received, connections, accept })
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    /// POSTs received so far.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Reads the body frame by frame (nothing is kept), then counts the request: a POST is
/// counted once the receiver has all of it, before the answer leaves.
async fn answer(request: Request<Incoming>, received: Arc<AtomicU64>) -> hyper::Result<Response<Empty<Bytes>>> {
    let post = request.method() == Method::POST;
    let mut body = request.into_body();
    while let Some(frame) = body.frame().await {
        frame?;
    }
    let mut response = Response::new(Empty::new());
    if post {
        received.fetch_add(1, Ordering::Relaxed);
    } else {
        *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    }
    Ok(response)
}

/// What the API side saw.
struct ApiRun {
    /// From the INSERT until the receiver had counted every delivery.
    elapsed: Duration,
    /// The INSERT statement alone.
    inserted: Duration,
}

impl Run<'_> {
    /// Workload 8 on both sides: a fresh gateway with the webhook settings, one receiver
    /// registered through the API, the events written and delivered; the gateway stopped; then
    /// the raw loop to the same receiver.
    pub(super) async fn webhooks(&self, workload: &'static Workload) -> Result<Outcome> {
        let n = self.setup.webhook_deliveries;
        self.prepare(workload, "both sides").await?;
        let receiver = Receiver::start().await?;
        let gateway = Gateway::start_with(self.setup, workload.limiter(), &GATEWAY_ENV, self.api).await?;
        let (webhook, secret) = self.api.create_webhook(&receiver.url(), EVENT).await?;
        println!("xtask: receiver {} registered as webhook {webhook} for {EVENT}", receiver.url());

        let label = format!("{}. {} of {n} events · API", workload.number, workload.name);
        let commits: i64 = self.db.query_one(COMMITS, &[]).await?.get(0);
        let before = self.meter.read(gateway.pid);
        let api = self.api_webhooks(&label, &receiver, webhook, n).await;
        let api_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        let recorded = match &api {
            Ok(_) => self.delivered(webhook, n).await,
            Err(_) => Ok(Duration::ZERO),
        };
        let rss_mb = super::sys::peak_rss_mb(gateway.pid).ok();
        let pid = gateway.pid;
        gateway.stop().await?;
        let api = api?;
        let commits = self.db.query_one(COMMITS, &[]).await?.get::<_, i64>(0) - commits;
        let statements: i64 = self.db.query_one(RECORD_STATEMENTS, &[&webhook]).await?.get(0);
        let recorded = api.elapsed + recorded?;
        let (received, api_connections) = (receiver.received(), receiver.connections());
        if received != n {
            return Err(format!("{label}: the receiver got {received} requests for {n} deliveries").into());
        }
        let api_measured = Measured::single(api.elapsed, n);
        super::print_run(&label, &api_measured, &api_cpu);
        println!(
            "xtask: {label}: events and deliveries written in {:.2} s, all received after {:.2} s, all recorded \
             delivered after {:.2} s, over {api_connections} connection(s); gateway peak RSS {}",
            api.inserted.as_secs_f64(),
            api.elapsed.as_secs_f64(),
            recorded.as_secs_f64(),
            rss_mb.map_or_else(|| "?".to_owned(), |mb| format!("{mb:.1} MB")),
        );
        println!(
            "xtask: {label}: attempts recorded in {statements} statements ({:.1} deliveries each); {commits} \
             transactions committed on the database from the INSERT to the gateway's exit ({:.2} per delivery)",
            n as f64 / statements.max(1) as f64,
            commits as f64 / n as f64,
        );

        let label = format!("{}. {} of {n} events · raw reqwest", workload.number, workload.name);
        let before = self.meter.read(pid);
        let raw = raw_posts(&receiver.url(), &secret, n).await?;
        let raw_cpu = self.meter.share(&before, &self.meter.read(pid));
        let received = receiver.received() - n;
        if received != n {
            return Err(format!("{label}: the receiver got {received} requests for {n} POSTs").into());
        }
        let raw_measured = Measured::single(raw.elapsed, n);
        super::print_run(&label, &raw_measured, &raw_cpu);
        println!("xtask: {label}: over {} connection(s)", receiver.connections() - api_connections);
        // A later gateway on the kept database would deliver new events to a receiver that is gone.
        self.db.execute("DELETE FROM webhooks WHERE id = $1", &[&webhook]).await?;

        let facts = WebhookFacts {
            deliveries: n,
            concurrency: CONCURRENCY,
            body_bytes: raw.body_bytes,
            insert_seconds: api.inserted.as_secs_f64(),
            api_seconds: api.elapsed.as_secs_f64(),
            recorded_after_s: recorded.as_secs_f64(),
            raw_seconds: raw.elapsed.as_secs_f64(),
            record_statements: statements,
            transactions: commits,
        };
        Ok(Outcome {
            workload,
            api: api_measured,
            raw: raw_measured,
            rss_mb,
            api_cpu,
            raw_cpu,
            facts: Some(Facts::Webhooks(facts)),
            open: None,
        })
    }

    /// From the INSERT until the receiver has counted `n` requests; the count is read every
    /// 10 ms. A minute without a request fails the run, and so does a delivery that was
    /// attempted and not delivered (looked for once a second after two quiet seconds).
    async fn api_webhooks(&self, label: &str, receiver: &Receiver, webhook: i64, n: u64) -> Result<ApiRun> {
        let bar = ProgressBar::new(n).with_message(label.to_owned());
        bar.set_style(
            ProgressStyle::with_template("{msg:<44} [{bar:30}] {pos}/{len} received ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        let base = receiver.received();
        let started = Instant::now();
        let written = self.db.execute(INSERT_EVENTS, &[&self.setup.tenant, &i64::try_from(n)?]).await?;
        let inserted = started.elapsed();
        if written != n {
            bar.abandon();
            return Err(format!("{label}: the INSERT wrote {written} events, not {n}").into());
        }
        let mut tick = tokio::time::interval(POLL);
        let (mut last, mut last_progress, mut next_diagnosis) = (0, Instant::now(), Instant::now());
        loop {
            tick.tick().await;
            let received = receiver.received() - base;
            let now = Instant::now();
            if received >= n {
                let elapsed = started.elapsed();
                bar.finish_and_clear();
                return Ok(ApiRun { elapsed, inserted });
            }
            if received != last {
                (last, last_progress) = (received, now);
                bar.set_position(received);
                continue;
            }
            if now - last_progress > DIAGNOSE_AFTER && now >= next_diagnosis {
                next_diagnosis = now + Duration::from_secs(1);
                if let Some(row) = self.db.query_opt(FIRST_UNDELIVERED, &[&webhook]).await? {
                    bar.abandon();
                    let (state, attempts, status, error): (String, i32, Option<i32>, Option<String>) =
                        (row.get(0), row.get(1), row.get(2), row.get(3));
                    return Err(format!(
                        "{label}: a delivery is {state} after {attempts} attempt(s): status {status:?}, error {error:?} \
                         ({received} of {n} received)"
                    )
                    .into());
                }
            }
            if now - last_progress > STALLED_AFTER {
                bar.abandon();
                return Err(format!(
                    "{label}: stalled: {received} of {n} received, none in the last {} s",
                    STALLED_AFTER.as_secs()
                )
                .into());
            }
        }
    }

    /// Waits until the gateway has recorded every delivery `delivered`, and answers how long
    /// that took from the call (the receiver had every request by then).
    async fn delivered(&self, webhook: i64, n: u64) -> Result<Duration> {
        let started = Instant::now();
        let target = i64::try_from(n)?;
        loop {
            let row = self.db.query_one(STATES, &[&webhook]).await?;
            let (delivered, total): (i64, i64) = (row.get(0), row.get(1));
            if delivered == target && total == target {
                return Ok(started.elapsed());
            }
            if total != target || started.elapsed() > RECORDED_WITHIN {
                return Err(format!(
                    "webhook {webhook}: {delivered} of {total} deliveries recorded delivered, {n} expected \
                     (after {:.1} s)",
                    started.elapsed().as_secs_f64()
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// What the raw side saw.
struct RawRun {
    /// From the first send to the last answer.
    elapsed: Duration,
    /// The first body's size.
    body_bytes: usize,
}

/// `n` signed POSTs from [`CONCURRENCY`] tasks through one plain reqwest client (no address
/// guard), each built as a delivery is: the envelope serialized, both HMACs computed.
async fn raw_posts(url: &str, secret: &str, n: u64) -> Result<RawRun> {
    let client = reqwest::Client::builder()
        .user_agent("svc-bench")
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()?;
    let body_bytes = signed_post(0).0.len();
    let (url, secret): (Arc<str>, Arc<str>) = (url.into(), secret.into());
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for _ in 0..CONCURRENCY {
        let (client, url, secret, next) = (client.clone(), Arc::clone(&url), Arc::clone(&secret), Arc::clone(&next));
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok::<_, OpError>(());
                }
                let (body, delivery_id, event_id) = signed_post(i + 1);
                let headers = signature_headers(&secret, &delivery_id, &body);
                let response = client
                    .post(&*url)
                    .header("content-type", "application/json")
                    .header("x-signature", headers.v1)
                    .header("x-signature-v2", headers.v2)
                    .header("x-timestamp", headers.timestamp.to_string())
                    .header("x-delivery-id", delivery_id)
                    .header("x-event", EVENT)
                    .header("x-event-id", event_id)
                    .body(body)
                    .send()
                    .await?;
                let status = response.status();
                response.bytes().await?;
                if status != reqwest::StatusCode::OK {
                    return Err(format!("POST {url} answered {status}").into());
                }
            }
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined?.map_err(|e| format!("raw webhook POST: {e}"))?;
    }
    Ok(RawRun { elapsed: started.elapsed(), body_bytes })
}

/// The body of the `g`th raw POST, as the gateway builds a delivery of the API side's `g`th
/// event: the envelope (`event`, `event_id`, `timestamp`), then the payload's fields in the
/// order jsonb keeps them; and its delivery and event ids.
fn signed_post(g: u64) -> (Vec<u8>, String, String) {
    let (delivery_id, event_id) = (Uuid::new_v4().to_string(), Uuid::new_v4().to_string());
    let timestamp = OffsetDateTime::now_utc().replace_nanosecond(0).ok().and_then(|t| t.format(&Rfc3339).ok());
    let body = json!({
        "event": EVENT,
        "event_id": event_id,
        "timestamp": timestamp,
        "uid": format!("msg_{g}"),
        "body": "Your order is ready for pickup.",
        "sender": "ACME",
        "status": "sent",
        "direction": "outbound",
        "media_url": null,
        "recipient": format!("+2557123{g:05}"),
        "message_id": g,
        "channel_type": "sms",
        "error_message": null,
        "gateway_message_id": format!("AT{g}"),
    });
    (serde_json::to_vec(&body).unwrap_or_default(), delivery_id, event_id)
}

struct Signature {
    timestamp: i64,
    v1: String,
    v2: String,
}

/// The signature headers of one delivery, as the gateway signs it: `X-Signature` is the hex
/// HMAC-SHA256 of the body, `X-Signature-V2` `sha256=` and the hex HMAC of
/// `<timestamp>.<delivery id>.<body>`, the key made from the secret on every request.
fn signature_headers(secret: &str, delivery_id: &str, body: &[u8]) -> Signature {
    let timestamp = OffsetDateTime::now_utc().unix_timestamp();
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let v1 = hex::encode(hmac::sign(&key, body).as_ref());
    let mut signed = format!("{timestamp}.{delivery_id}.").into_bytes();
    signed.extend_from_slice(body);
    let v2 = format!("sha256={}", hex::encode(hmac::sign(&key, &signed).as_ref()));
    Signature { timestamp, v1, v2 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signatures_are_rfc_4231_hmacs() {
        // RFC 4231, test case 2, through the v1 header (HMAC of the body alone).
        let s = signature_headers("Jefe", "d", b"what do ya want for nothing?");
        assert_eq!(s.v1, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        let key = hmac::Key::new(hmac::HMAC_SHA256, b"Jefe");
        let signed = format!("{}.d.what do ya want for nothing?", s.timestamp);
        assert_eq!(s.v2, format!("sha256={}", hex::encode(hmac::sign(&key, signed.as_bytes()).as_ref())));
    }

    #[test]
    fn a_raw_body_is_the_envelope_of_a_flat_message_payload() {
        let (body, _, event_id) = signed_post(42);
        let value: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(value["event"], EVENT);
        assert_eq!(value["event_id"], event_id.as_str());
        assert_eq!(value["recipient"], "+255712300042");
        assert_eq!(value["message_id"], 42);
        assert!(value["timestamp"].as_str().is_some_and(|t| t.ends_with('Z') && t.len() == 20), "{value}");
        assert!((300..450).contains(&body.len()), "{} bytes", body.len());
    }

    #[tokio::test]
    async fn the_receiver_counts_posts_on_kept_alive_connections() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let receiver = Receiver::start().await.expect("starts");
        let client = reqwest::Client::builder().no_proxy().build().expect("client");
        for _ in 0..3 {
            let response = client.post(receiver.url()).body("{}").send().await.expect("posts");
            assert_eq!(response.status(), reqwest::StatusCode::OK);
            assert!(response.bytes().await.expect("body").is_empty());
        }
        let response = client.get(receiver.url()).send().await.expect("gets");
        assert_eq!(response.status(), reqwest::StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(receiver.received(), 3);
        assert_eq!(receiver.connections(), 1, "one kept-alive connection");
    }
}
