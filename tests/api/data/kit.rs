//! Helpers of the listing, schema, group, file and admin tests (support.rs holds the shared
//! ones): an app without a practical rate limit, list reads, the operator table of docs/api.md,
//! and three customers whose values exercise every column type.

#![allow(dead_code)]

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Limiter, Resp, TestApp, json, spawn_with};
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use super::support::*;

/// The ten operator names of docs/api.md.
pub const OPERATORS: [&str; 10] = [
    "equals",
    "not_equals",
    "contains",
    "starts_with",
    "greater_than",
    "less_than",
    "between",
    "in",
    "is_empty",
    "is_not_empty",
];

/// Every column type of docs/api.md.
pub const TYPES: [&str; 15] = [
    "text",
    "long_text",
    "number",
    "currency",
    "boolean",
    "date",
    "datetime",
    "phone",
    "email",
    "select",
    "multi_select",
    "status",
    "relation",
    "file",
    "auto_number",
];

/// The operators a type advertises (docs/api.md, Listing records).
pub fn advertised(ty: &str) -> &'static [&'static str] {
    match ty {
        "text" | "long_text" | "email" | "phone" => {
            &["equals", "not_equals", "contains", "starts_with", "in", "is_empty", "is_not_empty"]
        }
        "number" | "currency" | "auto_number" | "date" | "datetime" => {
            &["equals", "not_equals", "greater_than", "less_than", "between", "in", "is_empty", "is_not_empty"]
        }
        "boolean" => &["equals", "not_equals", "is_empty", "is_not_empty"],
        "select" | "status" | "relation" => &["equals", "not_equals", "in", "is_empty", "is_not_empty"],
        "multi_select" => &["contains", "in", "is_empty", "is_not_empty"],
        "file" => &["is_empty", "is_not_empty"],
        other => panic!("no such type {other}"),
    }
}

/// The columns of the CRM's `customers` table, in definition order, with their types.
pub const CUSTOMER_COLUMNS: [(&str, &str); 15] = [
    ("name", "text"),
    ("phone", "phone"),
    ("email", "email"),
    ("score", "number"),
    ("credit", "currency"),
    ("segment", "select"),
    ("tags", "multi_select"),
    ("stage", "status"),
    ("joined", "date"),
    ("seen", "datetime"),
    ("vip", "boolean"),
    ("notes", "long_text"),
    ("agent", "relation"),
    ("contract", "file"),
    ("ref", "auto_number"),
];

/// The app with a rate limit no test reaches (these tests make hundreds of requests).
pub async fn roomy()
-> TestApp<impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>> {
    spawn_with(Limiter::Memory(1_000_000)).await
}

#[track_caller]
pub fn time_of(value: &Value) -> OffsetDateTime {
    let text = value.as_str().unwrap_or_else(|| panic!("an RFC 3339 time, got {value}"));
    OffsetDateTime::parse(text, &Rfc3339).unwrap_or_else(|e| panic!("an RFC 3339 time, got {text:?}: {e}"))
}

pub fn rfc3339(at: OffsetDateTime) -> String {
    at.format(&Rfc3339).expect("format time")
}

/// A filter leaf; `value` Null leaves the member out (is_empty, is_not_empty).
pub fn leaf(column: &str, op: &str, value: Value) -> Value {
    if value.is_null() {
        json!({"column": column, "op": op})
    } else {
        json!({"column": column, "op": op, "value": value})
    }
}

/// `leaf` wrapped in alternating `all`/`any` nodes until the tree is `depth` deep (a bare leaf
/// is depth 1).
pub fn nest(leaf: Value, depth: usize) -> Value {
    let mut node = leaf;
    for level in 1..depth {
        node = if level % 2 == 1 { json!({"all": [node]}) } else { json!({"any": [node]}) };
    }
    node
}

/// `GET .../records?query`, answered whatever the status.
pub async fn list_raw<S, B>(app: &TestApp<S>, key: &str, table: Uuid, query: &[(&str, &str)]) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.get(&list_path(table, query), key).await
}

/// `GET .../records?query`, 200 expected: the body `{records, next_cursor, has_more, count,
/// served_at}`.
pub async fn list<S, B>(app: &TestApp<S>, key: &str, table: Uuid, query: &[(&str, &str)]) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = list_raw(app, key, table, query).await;
    assert_status(&res, 200);
    assert!(res.body["records"].is_array(), "records in {}", res.body);
    res.body
}

/// `GET .../records?filter=..&limit=200`, answered whatever the status.
pub async fn filter_raw<S, B>(app: &TestApp<S>, key: &str, table: Uuid, filter: &Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let filter = filter.to_string();
    list_raw(app, key, table, &[("filter", &filter), ("limit", "200")]).await
}

#[track_caller]
pub fn records(body: &Value) -> &Vec<Value> {
    body["records"].as_array().unwrap_or_else(|| panic!("records in {body}"))
}

/// The record ids of a page, in order.
#[track_caller]
pub fn ids(body: &Value) -> Vec<String> {
    records(body).iter().map(record_id).collect()
}

/// `data.name` of a page's records, in order (null names read as "").
#[track_caller]
pub fn names(body: &Value) -> Vec<String> {
    records(body).iter().map(|r| r["data"]["name"].as_str().unwrap_or_default().to_owned()).collect()
}

/// `GET .../schema`, 200 expected.
pub async fn read_schema<S, B>(app: &TestApp<S>, key: &str, table: Uuid) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&schema_path(table), key).await;
    assert_status(&res, 200);
    res.body
}

/// A schema column by key.
#[track_caller]
pub fn column<'a>(schema: &'a Value, key: &str) -> &'a Value {
    schema["columns"]
        .as_array()
        .unwrap_or_else(|| panic!("columns in {schema}"))
        .iter()
        .find(|c| c["key"] == key)
        .unwrap_or_else(|| panic!("column {key} in {schema}"))
}

/// `GET /data/tables`, 200 expected: the tables.
pub async fn tables<S, B>(app: &TestApp<S>, key: &str) -> Vec<Value>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(TABLES, key).await;
    assert_status(&res, 200);
    res.body["tables"].as_array().unwrap_or_else(|| panic!("tables in {}", res.body)).clone()
}

/// `PATCH .../records/{record}` with `data`, 200 expected: the record.
pub async fn update<S, B>(app: &TestApp<S>, key: &str, table: Uuid, record: &str, data: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.patch(&record_path(table, record), key, json!({ "data": data })).await;
    assert_status(&res, 200);
    res.body["record"].clone()
}

/// `GET .../records/{record}`, 200 expected: the record.
pub async fn read<S, B>(app: &TestApp<S>, key: &str, table: Uuid, record: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&record_path(table, record), key).await;
    assert_status(&res, 200);
    res.body["record"].clone()
}

/// `DELETE .../records/{record}`, 200 expected.
pub async fn remove<S, B>(app: &TestApp<S>, key: &str, table: Uuid, record: &str)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.delete(&record_path(table, record), key).await;
    assert_status(&res, 200);
}

/// A 501 `not_supported` refusal with `error.reason`.
#[track_caller]
pub fn assert_not_supported(res: &Resp, reason: &str) {
    assert_data_error(res, 501, "not_supported");
    assert_eq!(res.body["error"]["reason"], reason, "{}", res.body);
}

pub const AMINA: &str = "Amina Juma";
pub const BARAKA: &str = "Baraka Mushi";
pub const CHAUSIKU: &str = "Chausiku";

/// The CRM with two agents, a stored file and three customers made a minute apart:
/// Amina (every column set, `vip` set by a later PATCH, so changed last), Baraka (every column
/// but the file, moved to `active`), Chausiku (only a name; stage `new`).
pub struct People {
    pub crm: Crm,
    pub agent1: String,
    pub agent2: String,
    pub file: Uuid,
    pub amina: Value,
    pub baraka: Value,
    pub chausiku: Value,
}

impl People {
    pub fn key(&self) -> &str {
        &self.crm.account.key
    }

    /// The name of the customer with id `id`.
    #[track_caller]
    pub fn name_of(&self, id: &str) -> &'static str {
        [(&self.amina, AMINA), (&self.baraka, BARAKA), (&self.chausiku, CHAUSIKU)]
            .into_iter()
            .find(|(r, _)| r["id"] == id)
            .unwrap_or_else(|| panic!("no customer {id}"))
            .1
    }
}

pub async fn people<S, B>(app: &TestApp<S>) -> People
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let crm = crm_with(app, EDITOR).await;
    let key = crm.account.key.clone();
    let agent1 = record_id(&create(app, &key, crm.agents, json!({"name": "Neema"})).await);
    let agent2 = record_id(&create(app, &key, crm.agents, json!({"name": "Juma"})).await);
    let file = app
        .data
        .store_file(crm.account.tenant, "contract.pdf", "application/pdf", b"%PDF-1.4 contract".to_vec())
        .await
        .expect("store a file");
    app.advance(Duration::minutes(1)).await;
    let amina = create(
        app,
        &key,
        crm.customers,
        json!({"name": AMINA, "phone": "+255712000001", "email": "Amina@Example.com", "score": 80.5,
               "credit": 150000, "segment": "retail", "tags": ["vip"], "joined": "2026-01-15",
               "seen": "2026-03-01T10:00:00Z", "notes": "Pays on time", "agent": agent1,
               "contract": file.to_string()}),
    )
    .await;
    app.advance(Duration::minutes(1)).await;
    let baraka = create(
        app,
        &key,
        crm.customers,
        json!({"name": BARAKA, "phone": "+255713000002", "email": "baraka@shop.co.tz", "score": 40,
               "credit": 20000, "segment": "wholesale", "tags": ["late", "vip"], "joined": "2026-02-20",
               "seen": "2026-04-01T08:30:00Z", "vip": false, "notes": "Late payer", "agent": agent2}),
    )
    .await;
    let baraka = update(app, &key, crm.customers, &record_id(&baraka), json!({"stage": "active"})).await;
    app.advance(Duration::minutes(1)).await;
    let chausiku = create(app, &key, crm.customers, json!({"name": CHAUSIKU})).await;
    app.advance(Duration::minutes(1)).await;
    let amina = update(app, &key, crm.customers, &record_id(&amina), json!({"vip": true})).await;
    People { crm, agent1, agent2, file, amina, baraka, chausiku }
}

/// The path and query of a file URL (absolute or not), to send to the app under test.
#[track_caller]
pub fn local(url: &Value) -> String {
    let url = url.as_str().unwrap_or_else(|| panic!("a url, got {url}"));
    match url.find("://") {
        Some(scheme) => {
            let rest = &url[scheme + 3..];
            rest.find('/').map_or_else(|| "/".to_owned(), |path| rest[path..].to_owned())
        }
        None => url.to_owned(),
    }
}
