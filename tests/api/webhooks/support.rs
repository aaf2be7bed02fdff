//! Helpers of the webhook tests: a receiver on this machine's loopback (wiremock, real HTTP),
//! registration and the delivery log through the API, a check of every signature with an HMAC
//! computed here, independently of the service's signing code, and the payloads the tests emit.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Resp, TestApp};
use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use kernel::TenantId;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::framework::assert_error;

pub const WEBHOOKS: &str = "/api/v3/webhooks";
/// Every permission the webhook routes need, and sending to make events.
pub const MANAGER: &str = "webhooks.view,webhooks.manage";

/// A public https target: registration only parses it, nothing connects to it.
pub const PUBLIC: &str = "https://hooks.example.com/in";

/// A receiver's own route, `/webhooks/{id}`.
pub fn path(id: i64) -> String {
    format!("{WEBHOOKS}/{id}")
}

/// A receiver on 127.0.0.1 that answers every POST with one response.
pub struct Receiver {
    pub server: MockServer,
}

impl Receiver {
    pub async fn answering(status: u16) -> Self {
        Self::with(ResponseTemplate::new(status).set_body_string("thanks")).await
    }

    pub async fn with(response: ResponseTemplate) -> Self {
        let server = MockServer::start().await;
        Mock::given(method("POST")).respond_with(response).mount(&server).await;
        Self { server }
    }

    /// Answers differently from now on.
    pub async fn answer(&self, response: ResponseTemplate) {
        self.server.reset().await;
        Mock::given(method("POST")).respond_with(response).mount(&self.server).await;
    }

    pub fn url(&self) -> String {
        format!("{}/hooks/in", self.server.uri())
    }

    pub async fn requests(&self) -> Vec<Request> {
        self.server.received_requests().await.unwrap_or_default()
    }

    /// The bodies received, parsed.
    pub async fn bodies(&self) -> Vec<Value> {
        self.requests().await.iter().map(|r| serde_json::from_slice(&r.body).expect("JSON body")).collect()
    }
}

/// A URL nothing listens on: a port that was just bound and released.
pub fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    format!("http://127.0.0.1:{port}/hooks/in")
}

pub fn header<'a>(request: &'a Request, name: &str) -> &'a str {
    request
        .headers
        .get(name)
        .unwrap_or_else(|| panic!("{name} missing"))
        .to_str()
        .unwrap_or_else(|_| panic!("{name} is text"))
}

/// HMAC-SHA256 from its definition (RFC 2104) over ring's plain SHA-256, so the service's
/// signing code is checked against something it does not share.
pub fn hmac_hex(key: &[u8], message: &[u8]) -> String {
    let sha = |data: &[u8]| ring::digest::digest(&ring::digest::SHA256, data).as_ref().to_vec();
    let mut block = [0_u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&sha(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let inner: Vec<u8> = block.iter().map(|b| b ^ 0x36).chain(message.iter().copied()).collect();
    let outer: Vec<u8> = block.iter().map(|b| b ^ 0x5c).chain(sha(&inner)).collect();
    hex::encode(sha(&outer))
}

/// What a customer's receiver does: both signatures over the raw bytes with the secret, and a
/// timestamp no older than five minutes by the receiver's clock.
#[track_caller]
pub fn assert_signed(request: &Request, secret: &str, now: OffsetDateTime) {
    let timestamp = header(request, "x-timestamp");
    let delivery = header(request, "x-delivery-id");
    assert_eq!(header(request, "x-signature"), hmac_hex(secret.as_bytes(), &request.body), "X-Signature");
    let mut signed = format!("{timestamp}.{delivery}.").into_bytes();
    signed.extend_from_slice(&request.body);
    assert_eq!(
        header(request, "x-signature-v2"),
        format!("sha256={}", hmac_hex(secret.as_bytes(), &signed)),
        "X-Signature-V2"
    );
    let sent: i64 = timestamp.parse().expect("X-Timestamp is Unix seconds");
    assert!((now.unix_timestamp() - sent).abs() <= 300, "X-Timestamp {sent} is within five minutes of {now}");
    assert_eq!(header(request, "content-type"), "application/json");
}

/// `POST /webhooks`, 201 expected: the receiver's id and its secret.
pub async fn register<S, B>(app: &TestApp<S>, key: &str, url: &str, events: &[&str]) -> (i64, String)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(WEBHOOKS, key, json!({"url": url, "events": events})).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let id = res.data()["id"].as_i64().expect("id");
    let secret = res.data()["secret"].as_str().expect("secret").to_owned();
    (id, secret)
}

/// Writes an event to the outbox as a domain would (the fan-out does the rest).
pub async fn emit<S>(app: &TestApp<S>, tenant: kernel::TenantId, name: &str, payload: Value) -> uuid::Uuid {
    let mut conn = store::connect_system(&app.pool).await.expect("connection");
    store::outbox::emit(&mut conn, tenant, name, payload, app.clock.now()).await.expect("emit")
}

/// Asserts a 422 in the standard envelope whose `errors` names `field`.
#[track_caller]
pub fn assert_field_error(res: &Resp, field: &str) {
    assert_error(res, 422);
    assert!(
        res.body["errors"][field].as_array().is_some_and(|m| !m.is_empty()),
        "errors should name {field:?}: {}",
        res.body
    );
}

#[track_caller]
pub fn assert_status(res: &Resp, status: u16) {
    assert_eq!(res.status, status, "expected {status}, got {}: {}", res.status, res.body);
}

/// `POST /webhooks` with a whole body, 201 expected: the answer's data.
pub async fn create<S, B>(app: &TestApp<S>, key: &str, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(WEBHOOKS, key, body).await;
    assert_status(&res, 201);
    res.data().clone()
}

/// Emits a `message.sent` for the tenant, runs the deliveries and answers the last request the
/// receiver got (which must be a new one).
pub async fn deliver<S, B>(app: &TestApp<S>, tenant: TenantId, receiver: &Receiver) -> Request
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let before = receiver.requests().await.len();
    emit(app, tenant, "message.sent", json!({"message_id": 7, "status": "sent"})).await;
    app.run_jobs().await;
    let mut requests = receiver.requests().await;
    assert_eq!(requests.len(), before + 1, "one more delivery arrived");
    requests.pop().expect("a request")
}

// ---------------------------------------------------------------------------------------------
// Reading answers and the delivery log

pub fn time_of(value: &Value, field: &str) -> OffsetDateTime {
    let raw = value[field].as_str().unwrap_or_else(|| panic!("{field} in {value}"));
    OffsetDateTime::parse(raw, &Rfc3339).unwrap_or_else(|e| panic!("{field} {raw}: {e}"))
}

pub fn str_of<'a>(value: &'a Value, field: &str) -> &'a str {
    value[field].as_str().unwrap_or_else(|| panic!("{field} in {value}"))
}

/// `GET /webhooks/{id}/deliveries` with a query (`?state=held`...): `{items, pagination}`.
pub async fn log<S, B>(app: &TestApp<S>, key: &str, webhook: i64, query: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("{WEBHOOKS}/{webhook}/deliveries{query}"), key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.data().clone()
}

/// The receiver's deliveries, newest first.
pub async fn deliveries<S, B>(app: &TestApp<S>, key: &str, webhook: i64) -> Vec<Value>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    log(app, key, webhook, "?per_page=100").await["items"].as_array().expect("items").clone()
}

/// The receiver's one delivery.
pub async fn only_delivery<S, B>(app: &TestApp<S>, key: &str, webhook: i64) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let items = deliveries(app, key, webhook).await;
    assert_eq!(items.len(), 1, "one delivery: {items:?}");
    items[0].clone()
}

/// A `SELECT count(*) AS n` row, for the checks that look into the database.
#[derive(QueryableByName)]
pub struct Count {
    #[diesel(sql_type = BigInt)]
    pub n: i64,
}

/// Ids as a sorted list, to compare what arrived regardless of order.
pub fn sorted(ids: &[&String]) -> Vec<String> {
    let mut ids: Vec<String> = ids.iter().map(|s| (*s).clone()).collect();
    ids.sort();
    ids
}

// ---------------------------------------------------------------------------------------------
// Payloads as the domains write them

/// A lead event's payload; answers the lead's id, which tells the receivers' bodies apart.
pub fn lead(stage: &str, labels: &[&str], channel: &str) -> (String, Value) {
    let id = uuid::Uuid::new_v4().to_string();
    let labels: Vec<Value> = labels.iter().map(|name| json!({"id": 1, "name": name})).collect();
    let payload = json!({
        "lead": {"id": id, "name": "Asha", "stage": stage, "labels": labels, "source_channel": channel},
        "reason": null,
        "actor": {"kind": "api", "id": null, "label": "API"},
        "source": {"kind": "api", "id": null, "channel": channel},
    });
    (id, payload)
}

pub fn new_lead() -> Value {
    lead("new", &[], "whatsapp").1
}

/// A `message.sent` payload as messaging writes it.
pub fn message_sent(id: i64) -> Value {
    json!({
        "message_id": id, "direction": "outbound", "sender": "ACME", "recipient": "+255712345678",
        "status": "sent", "body": "x", "media_url": null, "channel_type": "sms",
    })
}
