//! Helpers of the data-table tests: the routes, the CRM definition of docs/api.md (an `agents`
//! table and a `customers` table with every column type), and an account to use it.

#![allow(dead_code)]

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Account, Resp, TestApp};
use serde_json::{Value, json};
use uuid::Uuid;

pub const TABLES: &str = "/api/v3/data/tables";
pub const GROUPS: &str = "/api/v3/data/groups";
/// Reads and writes every table of the fixture, masks included.
pub const EDITOR: &str = "data.view,data.records.edit,data.customers.pii,data.customers.close";
/// Reads only, without the PII permission: `email` is masked.
pub const VIEWER: &str = "data.view";

pub fn schema_path(table: Uuid) -> String {
    format!("{TABLES}/{table}/schema")
}

pub fn states_path(table: Uuid) -> String {
    format!("{TABLES}/{table}/states")
}

pub fn records_path(table: Uuid) -> String {
    format!("{TABLES}/{table}/records")
}

pub fn record_path(table: Uuid, record: &str) -> String {
    format!("{TABLES}/{table}/records/{record}")
}

pub fn history_path(table: Uuid, record: &str) -> String {
    format!("{TABLES}/{table}/records/{record}/history")
}

/// A list path with the query pairs URL-encoded.
pub fn list_path(table: Uuid, query: &[(&str, &str)]) -> String {
    let query = serde_urlencoded::to_string(query).expect("query");
    format!("{}?{query}", records_path(table))
}

#[track_caller]
pub fn assert_status(res: &Resp, status: u16) {
    assert_eq!(res.status, status, "expected {status}, got {}: {}", res.status, res.body);
}

/// The data envelope of a refusal: `{error:{code, message, retryable}, message, code}`.
#[track_caller]
pub fn assert_data_error(res: &Resp, status: u16, code: &str) {
    assert_status(res, status);
    assert_eq!(res.body["code"], code, "{}", res.body);
    assert_eq!(res.body["error"]["code"], code, "{}", res.body);
    assert!(res.body["message"].is_string() && res.body["error"]["message"].is_string(), "{}", res.body);
    assert!(res.body["error"]["retryable"].is_boolean(), "{}", res.body);
    assert!(res.body.get("status").is_none(), "no v3 status member: {}", res.body);
}

/// The CRM of docs/api.md: `agents` and `customers` (every column type).
pub fn crm() -> Value {
    json!({
        "group": {"slug": "crm", "name": "CRM", "description": "Customers and the agents who serve them",
                  "reports": [{"key": "active", "name": "Active customers", "table": "customers",
                               "filter": {"all": [{"column": "stage", "op": "equals", "value": "active"}]}}]},
        "tables": [
            {"slug": "agents", "name": "Agents", "columns": [{"key": "name", "type": "text", "required": true}]},
            {"slug": "customers", "name": "Customers", "description": "People who buy", "icon": "users",
             "access": {"read": "data.view", "write": "data.records.edit",
                        "columns": {"email": {"read": "data.customers.pii"}}},
             "sort_index_threshold": 10000,
             "columns": [
                {"key": "name",   "label": "Name", "type": "text", "required": true, "config": {"max_length": 120}},
                {"key": "phone",  "type": "phone", "unique": true},
                {"key": "email",  "type": "email"},
                {"key": "score",  "type": "number", "indexed": true, "config": {"min": 0, "max": 100, "precision": 1}},
                {"key": "credit", "type": "currency", "config": {"currency": "TZS", "decimals": 0}},
                {"key": "segment","type": "select", "config": {"options": ["retail", "wholesale"]}},
                {"key": "tags",   "type": "multi_select", "config": {"options": ["vip", "late"]}},
                {"key": "stage",  "type": "status", "required": true, "config": {
                    "states": [{"key": "new", "label": "New"}, {"key": "active"}, {"key": "closed"}],
                    "initial": ["new"], "strict": true,
                    "moves": [{"from": "new", "to": "active"},
                              {"from": "active", "to": "closed", "permission": "data.customers.close"}]}},
                {"key": "joined", "type": "date"}, {"key": "seen", "type": "datetime"},
                {"key": "vip", "type": "boolean"}, {"key": "notes", "type": "long_text"},
                {"key": "agent", "type": "relation", "config": {"table": "agents"}},
                {"key": "contract", "type": "file"}, {"key": "ref", "type": "auto_number"}],
             "unique_sets": [["name", "joined"]]}
        ]
    })
}

/// A tenant with the CRM applied and an editor's key.
pub struct Crm {
    pub account: Account,
    pub group: Uuid,
    pub agents: Uuid,
    pub customers: Uuid,
}

/// Applies `definition` for `account`'s tenant: the group id and the table ids by slug.
pub async fn apply<S, B>(app: &TestApp<S>, account: &Account, definition: Value) -> data_tables::Applied
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.data.apply(account.tenant, definition).await.expect("apply")
}

/// A fresh tenant with the CRM, and a key with `permissions`.
pub async fn crm_with<S, B>(app: &TestApp<S>, permissions: &str) -> Crm
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let account = app.account(permissions).await;
    let applied = apply(app, &account, crm()).await;
    let table = |slug: &str| applied.tables.iter().find(|t| t.slug == slug).expect("table").id;
    Crm { group: applied.group.id, agents: table("agents"), customers: table("customers"), account }
}

/// `POST .../records` expecting 201: the record.
pub async fn create<S, B>(app: &TestApp<S>, key: &str, table: Uuid, data: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(&records_path(table), key, json!({ "data": data })).await;
    assert_status(&res, 201);
    res.body["record"].clone()
}

#[track_caller]
pub fn record_id(record: &Value) -> String {
    record["id"].as_str().unwrap_or_else(|| panic!("id in {record}")).to_owned()
}

/// `POST .../records` with `data`, whatever the answer.
pub async fn post_data<S, B>(app: &TestApp<S>, key: &str, table: Uuid, data: Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.post(&records_path(table), key, json!({ "data": data })).await
}

/// `PATCH .../records/{record}` with `data`, whatever the answer.
pub async fn patch_data<S, B>(app: &TestApp<S>, key: &str, table: Uuid, record: &str, data: Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.patch(&record_path(table, record), key, json!({ "data": data })).await
}
