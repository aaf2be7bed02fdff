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
    let mut conn = store::connect(&app.pool).await.expect("connection");
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
    let mut conn = store::connect(&app.pool).await.expect("connection");
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
    let mut conn = store::connect(&app.pool).await.expect("connection");
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
