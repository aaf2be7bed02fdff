//! Helpers of the SMS tests: sending and reading through HTTP, provider callbacks, and looking
//! at what the service wrote where HTTP does not show it (outbox events, the wallet ledger, the
//! callback log).

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::test::TestRequest;
use api_tests::{Resp, TestApp};
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Jsonb, Nullable, Text};
use diesel_async::RunQueryDsl;
use kernel::TenantId;
use messaging::channels::{Channel, NewChannel, NewSender};
use serde_json::Value;

use super::SEND;

/// A valid Tanzanian mobile number, national form, ending in the four digits given; the
/// sandbox decides on those (`0001` refused, `0002` no receipt, `0003` failed receipt).
pub fn tz(last4: &str) -> String {
    format!("071234{last4}")
}

/// The E.164 form of [`tz`].
pub fn e164(last4: &str) -> String {
    format!("+25571234{last4}")
}

/// Asserts the status, printing the body when it differs.
#[track_caller]
pub fn assert_status(res: &Resp, status: u16) {
    assert_eq!(res.status, status, "expected {status}, got {}: {}", res.status, res.body);
}

/// Asserts a 422 in the standard envelope whose `errors` names `field`.
#[track_caller]
pub fn assert_field_error(res: &Resp, field: &str) {
    crate::framework::assert_error(res, 422);
    let messages = &res.body["errors"][field];
    assert!(
        messages.as_array().is_some_and(|m| !m.is_empty() && m.iter().all(Value::is_string)),
        "errors should name {field:?}: {}",
        res.body
    );
}

/// The messages of a 201 send answer.
#[track_caller]
pub fn sent_messages(res: &Resp) -> Vec<Value> {
    assert_status(res, 201);
    assert_eq!(res.body["status"], "success", "{}", res.body);
    res.data()["messages"].as_array().unwrap_or_else(|| panic!("data.messages in {}", res.body)).clone()
}

pub fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_else(|| panic!("{key} is a string in {value}"))
}

pub fn time_of(value: &Value, key: &str) -> time::OffsetDateTime {
    time::OffsetDateTime::parse(str_of(value, key), &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("{key} is RFC 3339 in {value}: {e}"))
}

/// `POST /sms/send`, 201 expected; the messages of the answer.
pub async fn send<S, B>(app: &TestApp<S>, key: &str, body: Value) -> Vec<Value>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(SEND, key, body).await;
    sent_messages(&res)
}

/// `GET /sms/{uid}`, 200 expected; the message.
pub async fn read<S, B>(app: &TestApp<S>, key: &str, uid_or_id: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("/api/v3/sms/{uid_or_id}"), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// The status of a message now, read through HTTP.
pub async fn status_of<S, B>(app: &TestApp<S>, key: &str, message: &Value) -> String
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    str_of(&read(app, key, str_of(message, "uid")).await, "status").to_owned()
}

/// `GET /balance`: `balance_minor`.
pub async fn balance<S, B>(app: &TestApp<S>, key: &str) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get("/api/v3/balance", key).await;
    assert_status(&res, 200);
    res.data()["balance_minor"].as_i64().unwrap_or_else(|| panic!("balance_minor in {}", res.body))
}

/// A provider callback with a raw body and content type.
pub async fn hook<S, B>(app: &TestApp<S>, path: &str, content_type: &str, body: &str) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let req = TestRequest::post()
        .uri(path)
        .insert_header(("Content-Type", content_type.to_owned()))
        .set_payload(body.to_owned());
    app.send(req).await
}

pub fn delivery_hook(channel: &Channel) -> String {
    format!("/hooks/sms/{}/delivery", channel.callback_token)
}

pub fn inbound_hook(channel: &Channel) -> String {
    format!("/hooks/sms/{}/inbound", channel.callback_token)
}

/// A sandbox JSON callback.
pub async fn sandbox_hook<S, B>(app: &TestApp<S>, path: &str, body: Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    hook(app, path, "application/json", &body.to_string()).await
}

/// An inbound SMS through the sandbox channel's hook, 200 expected.
pub async fn inbound<S, B>(app: &TestApp<S>, channel: &Channel, from: &str, text: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let body = serde_json::json!({"from": from, "to": "15000", "text": text, "id": uuid::Uuid::new_v4().to_string()});
    let res = sandbox_hook(app, &inbound_hook(channel), body).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// Adds a channel to a tenant.
pub async fn add_channel(pool: &store::Pool, tenant: TenantId, new: NewChannel) -> Channel {
    let secrets = gateway::config::Config::from_env().expect("configuration").secrets;
    let keyring = gateway::keyring(pool, &secrets).await.expect("keyring");
    let mut conn = store::connect_system(pool).await.expect("connection");
    messaging::channels::add(&mut conn, &keyring, tenant, new).await.expect("channel")
}

/// A sandbox SMS channel with `code`.
pub async fn sandbox_channel(pool: &store::Pool, tenant: TenantId, code: &str, throughput: Option<i32>) -> Channel {
    let new = NewChannel {
        kind: "sms".into(),
        provider: "sandbox".into(),
        code: Some(code.into()),
        throughput_per_second: throughput,
        ..Default::default()
    };
    add_channel(pool, tenant, new).await
}

/// Adds a sender identity to a channel (by code).
pub async fn add_sender(pool: &store::Pool, tenant: TenantId, channel: &str, kind: &str, value: &str, status: &str) {
    let mut conn = store::connect_system(pool).await.expect("connection");
    let sender = NewSender {
        channel: channel.into(),
        kind: kind.into(),
        value: value.into(),
        label: Some(format!("{kind} {value}")),
        status: Some(status.into()),
    };
    messaging::channels::add_sender(&mut conn, tenant, sender).await.expect("sender");
}

pub async fn set_rate(pool: &store::Pool, tenant: TenantId, prefix: Option<&str>, price: i64) {
    let mut conn = store::connect_system(pool).await.expect("connection");
    messaging::channels::set_rate(&mut conn, tenant, prefix, price).await.expect("rate");
}

#[derive(QueryableByName)]
struct EventRow {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Jsonb)]
    payload: Value,
}

/// The tenant's outbox events, `(name, payload)`, in the order written.
pub async fn events(pool: &store::Pool, tenant: TenantId) -> Vec<(String, Value)> {
    let mut conn = store::connect_system(pool).await.expect("connection");
    let rows: Vec<EventRow> = diesel::sql_query(
        "SELECT name, payload FROM events WHERE tenant_id = $1 ORDER BY occurred_at, created_at, name",
    )
    .bind::<BigInt, _>(tenant.0)
    .load(&mut conn)
    .await
    .expect("events");
    rows.into_iter().map(|r| (r.name, r.payload)).collect()
}

/// The events of one message (by numeric id), `(name, payload)`.
pub async fn events_of(pool: &store::Pool, tenant: TenantId, message: &Value) -> Vec<(String, Value)> {
    let id = message["id"].as_i64().unwrap_or_else(|| panic!("id in {message}"));
    events(pool, tenant).await.into_iter().filter(|(_, p)| p["message_id"].as_i64() == Some(id)).collect()
}

/// The names of the events of one message.
pub async fn event_names(pool: &store::Pool, tenant: TenantId, message: &Value) -> Vec<String> {
    events_of(pool, tenant, message).await.into_iter().map(|(n, _)| n).collect()
}

#[derive(QueryableByName)]
struct LedgerRow {
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = BigInt)]
    amount_minor: i64,
}

/// The tenant's wallet ledger, `(kind, amount_minor)`, oldest first.
pub async fn ledger(pool: &store::Pool, tenant: TenantId) -> Vec<(String, i64)> {
    let mut conn = store::connect_system(pool).await.expect("connection");
    let rows: Vec<LedgerRow> =
        diesel::sql_query("SELECT kind, amount_minor FROM wallet_ledger WHERE tenant_id = $1 ORDER BY id")
            .bind::<BigInt, _>(tenant.0)
            .load(&mut conn)
            .await
            .expect("ledger");
    rows.into_iter().map(|r| (r.kind, r.amount_minor)).collect()
}

/// One row of the provider callback log.
#[derive(Debug, Clone, QueryableByName)]
pub struct Callback {
    #[diesel(sql_type = Text)]
    pub kind: String,
    #[diesel(sql_type = Text)]
    pub outcome: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub provider_message_id: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub message_id: Option<i64>,
    #[diesel(sql_type = Text)]
    pub body: String,
}

/// The callback log of a channel, oldest first.
pub async fn callbacks(pool: &store::Pool, channel: &Channel) -> Vec<Callback> {
    let mut conn = store::connect_system(pool).await.expect("connection");
    diesel::sql_query(
        "SELECT kind, outcome, provider_message_id, message_id, body FROM provider_callbacks
         WHERE channel_id = $1 ORDER BY id",
    )
    .bind::<BigInt, _>(channel.id)
    .load(&mut conn)
    .await
    .expect("callbacks")
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Rows of `messages` of a tenant, whatever their state (what HTTP cannot hide).
pub async fn message_rows(pool: &store::Pool, tenant: TenantId) -> i64 {
    let mut conn = store::connect_system(pool).await.expect("connection");
    let count: Count = diesel::sql_query("SELECT count(*) AS n FROM messages WHERE tenant_id = $1")
        .bind::<BigInt, _>(tenant.0)
        .get_result(&mut conn)
        .await
        .expect("count");
    count.n
}
