//! Helpers of the leads tests: the routes, upserts that expect an outcome, refusals with their
//! `reason`, reading times, and a webhook receiver on 127.0.0.1 (wiremock, real HTTP) for the
//! lead events.

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
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::framework::assert_error;

pub const LEADS: &str = "/api/v3/leads";
/// Reads and upserts, no settings, no `leads.data.all`.
pub const EDITOR: &str = "leads.view,leads.edit";
/// Every leads permission, `leads.data.all` included.
pub const MANAGER: &str = "leads.view,leads.edit,leads.assign,leads.delete,leads.settings,leads.data.all";

/// A lead's own route, `/leads/{id}`.
pub fn lead_path(id: &str) -> String {
    format!("{LEADS}/{id}")
}

/// A lead's stage operation, `/leads/{id}/stage`.
pub fn stage_path(id: &str) -> String {
    format!("{LEADS}/{id}/stage")
}

#[track_caller]
pub fn assert_status(res: &Resp, status: u16) {
    assert_eq!(res.status, status, "expected {status}, got {}: {}", res.status, res.body);
}

/// A leads refusal (contract: Errors): the standard error envelope plus a top-level `reason`.
#[track_caller]
pub fn assert_refused(res: &Resp, status: u16, reason: &str) {
    assert_error(res, status);
    assert_eq!(res.body["reason"], reason, "{}", res.body);
}

/// `POST /leads`, `status` expected: the answer's data.
pub async fn upsert<S, B>(app: &TestApp<S>, key: &str, body: Value, status: u16) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(LEADS, key, body).await;
    assert_status(&res, status);
    assert_eq!(res.body["status"], "success", "{}", res.body);
    res.data().clone()
}

/// `POST /leads` that creates (201): the new lead.
pub async fn create<S, B>(app: &TestApp<S>, key: &str, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let data = upsert(app, key, body, 201).await;
    assert_eq!(data["created"], true, "{data}");
    data["lead"].clone()
}

/// `GET /leads/{id}`, 200 expected: the lead.
pub async fn read<S, B>(app: &TestApp<S>, key: &str, id: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&lead_path(id), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// `POST /leads/{id}/stage`.
pub async fn set_stage<S, B>(app: &TestApp<S>, key: &str, id: &str, body: Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.post(&stage_path(id), key, body).await
}

pub fn id_of(lead: &Value) -> String {
    lead["id"].as_str().unwrap_or_else(|| panic!("id in {lead}")).to_owned()
}

pub fn time_of(value: &Value, field: &str) -> OffsetDateTime {
    let raw = value[field].as_str().unwrap_or_else(|| panic!("{field} in {value}"));
    OffsetDateTime::parse(raw, &Rfc3339).unwrap_or_else(|e| panic!("{field} {raw}: {e}"))
}

/// A `SELECT count(*) AS n` row.
#[derive(QueryableByName)]
pub struct Count {
    #[diesel(sql_type = BigInt)]
    pub n: i64,
}

/// How many leads the tenant has, straight from the database.
pub async fn lead_count<S>(app: &TestApp<S>, tenant: TenantId) -> i64 {
    use diesel_async::RunQueryDsl;
    let mut conn = store::connect_system(&app.pool).await.expect("connection");
    let row: Count = diesel::sql_query("SELECT count(*) AS n FROM leads WHERE tenant_id = $1")
        .bind::<BigInt, _>(tenant.0)
        .get_result(&mut conn)
        .await
        .expect("count");
    row.n
}

/// Assigns a lead to a user the way the assign operation will (it is not routed yet).
pub async fn assign<S>(app: &TestApp<S>, lead: &str, user: kernel::UserId) {
    use diesel_async::RunQueryDsl;
    let id: uuid::Uuid = lead.parse().expect("lead uuid");
    let mut conn = store::connect_system(&app.pool).await.expect("connection");
    let updated = diesel::sql_query("UPDATE leads SET assigned_to = $1 WHERE id = $2")
        .bind::<BigInt, _>(user.0)
        .bind::<diesel::sql_types::Uuid, _>(id)
        .execute(&mut conn)
        .await
        .expect("assign");
    assert_eq!(updated, 1, "one lead assigned");
}

/// Switches the tenant's leads module on or off.
pub async fn set_module<S>(app: &TestApp<S>, tenant: TenantId, enabled: bool) {
    let mut conn = store::connect_system(&app.pool).await.expect("connection");
    accounts::modules::set(&mut conn, tenant, accounts::modules::Module::Leads, enabled).await.expect("module");
}

/// A receiver on 127.0.0.1 that answers every POST with 200.
pub struct Receiver {
    pub server: MockServer,
}

impl Receiver {
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        Mock::given(method("POST")).respond_with(ResponseTemplate::new(200)).mount(&server).await;
        Self { server }
    }

    pub fn url(&self) -> String {
        format!("{}/hooks/in", self.server.uri())
    }

    /// The bodies received, parsed.
    pub async fn bodies(&self) -> Vec<Value> {
        let requests = self.server.received_requests().await.unwrap_or_default();
        requests.iter().map(|r| serde_json::from_slice(&r.body).expect("JSON body")).collect()
    }
}

/// `POST /webhooks` (with `filters` unless null), 201 expected.
pub async fn subscribe<S, B>(app: &TestApp<S>, key: &str, url: &str, events: &[&str], filters: Value)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let mut body = json!({"url": url, "events": events});
    if !filters.is_null() {
        body["filters"] = filters;
    }
    let res = app.post("/api/v3/webhooks", key, body).await;
    assert_status(&res, 201);
}

/// The workspace's labels, `/lead-labels`.
pub const LABELS: &str = "/api/v3/lead-labels";
/// The workspace's custom fields, `/lead-fields`.
pub const FIELDS: &str = "/api/v3/lead-fields";
/// What a key needs to watch lead events on a receiver, on top of its leads permissions.
pub const WEBHOOKS: &str = "webhooks.view,webhooks.manage";

/// `/leads/{id}/{what}`: `notes`, `assign`, `activities`, `labels`.
pub fn sub_path(id: &str, what: &str) -> String {
    format!("{LEADS}/{id}/{what}")
}

/// A label's own route, `/lead-labels/{id}`.
pub fn label_path(id: i64) -> String {
    format!("{LABELS}/{id}")
}

/// `GET /leads` with `query` (URL-encoded here).
pub fn list_path(query: &[(&str, &str)]) -> String {
    let encoded = serde_urlencoded::to_string(query).expect("query");
    if encoded.is_empty() { LEADS.to_owned() } else { format!("{LEADS}?{encoded}") }
}

/// `GET /leads` with `query`, 200 expected: the page (`{items, pagination}`).
pub async fn list<S, B>(app: &TestApp<S>, key: &str, query: &[(&str, &str)]) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&list_path(query), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// The ids of a page's items, in order.
pub fn ids(page: &Value) -> Vec<String> {
    page["items"].as_array().unwrap_or_else(|| panic!("items in {page}")).iter().map(id_of).collect()
}

/// `ids`, sorted: for comparing sets.
pub fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort_unstable();
    ids
}

/// `PATCH /leads/{id}`.
pub async fn patch<S, B>(app: &TestApp<S>, key: &str, id: &str, body: Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.patch(&lead_path(id), key, body).await
}

/// `PATCH /leads/{id}`, 200 expected: the lead.
pub async fn patched<S, B>(app: &TestApp<S>, key: &str, id: &str, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = patch(app, key, id, body).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// `GET /leads/{id}/activities` (with `before` when given), 200 expected: `{items, next_before}`.
pub async fn activities<S, B>(app: &TestApp<S>, key: &str, id: &str, before: Option<&str>) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let path = match before {
        Some(before) => format!("{}?before={before}", sub_path(id, "activities")),
        None => sub_path(id, "activities"),
    };
    let res = app.get(&path, key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// The `kind` of each activity of a page, in order.
pub fn kinds(page: &Value) -> Vec<String> {
    let items = page["items"].as_array().unwrap_or_else(|| panic!("items in {page}"));
    items.iter().map(|a| a["kind"].as_str().unwrap_or_else(|| panic!("kind in {a}")).to_owned()).collect()
}

/// `POST /lead-labels`, 201 expected: the label.
pub async fn new_label<S, B>(app: &TestApp<S>, key: &str, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(LABELS, key, body).await;
    assert_status(&res, 201);
    res.data().clone()
}

pub fn label_id_of(label: &Value) -> i64 {
    label["id"].as_i64().unwrap_or_else(|| panic!("id in {label}"))
}

/// Defines a custom lead field the way the admin CLI does.
pub async fn define_field<S>(app: &TestApp<S>, tenant: TenantId, key: &str, kind: &str, options: &[&str]) {
    let mut conn = store::connect_system(&app.pool).await.expect("connection");
    let options: Vec<String> = options.iter().map(|o| (*o).to_owned()).collect();
    let label = format!("The {key}");
    leads::fields::set_field(&mut conn, tenant, key, &label, kind, &options).await.expect("field");
}

/// An RFC 3339 time as a query value.
pub fn stamp(at: OffsetDateTime) -> String {
    at.format(&Rfc3339).expect("format")
}

/// The bodies of `event` among `bodies`, in the order received.
pub fn events_named<'a>(bodies: &'a [Value], event: &str) -> Vec<&'a Value> {
    bodies.iter().filter(|b| b["event"] == event).collect()
}

/// A lead as lists and events show it: the single read without its additions.
pub fn record(mut lead: Value) -> Value {
    if let Some(fields) = lead.as_object_mut() {
        fields.remove("identities");
        fields.remove("possible_duplicate");
    }
    lead
}

/// `DELETE /leads/{id}/labels` with `{labels}`.
pub async fn remove_labels<S, B>(app: &TestApp<S>, key: &str, id: &str, labels: Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.request("DELETE", &sub_path(id, "labels"), Some(key), Some(json!({ "labels": labels }))).await
}
