//! Contact groups and contacts through HTTP on a real database: shared helpers and the test modules.
//!
//! Contract: "Contact group", "Contact", "Contact groups and contacts", "Identifiers and list
//! conventions", "Errors".

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Resp, TestApp, json};
use serde_json::Value;

mod access;
mod batch;
mod create;
mod groups;
mod lists;
mod read_write;

// --- support shared with contacts_original.rs ----------------------------------------------------

/// A valid Tanzanian mobile number in national form with the trunk 0 (`0712000042`).
pub(crate) fn tz(n: u32) -> String {
    format!("0712{n:06}")
}

/// The national number of [`tz`]: digits, no trunk 0.
pub(crate) fn tz_national(n: u32) -> String {
    format!("712{n:06}")
}

/// The full number of [`tz`] with the default country code 255.
pub(crate) fn tz_full(n: u32) -> String {
    format!("255712{n:06}")
}

/// Asserts the status, printing the body when it differs.
#[track_caller]
pub(crate) fn assert_status(res: &Resp, status: u16) {
    assert_eq!(res.status, status, "expected {status}, got {}: {}", res.status, res.body);
}

/// Asserts a success envelope with `status` and returns `data`.
#[track_caller]
pub(crate) fn success(res: &Resp, status: u16) -> Value {
    assert_status(res, status);
    assert_eq!(res.body["status"], "success", "{}", res.body);
    assert!(res.body.get("data").is_some(), "no data member: {}", res.body);
    res.body["data"].clone()
}

/// Asserts the v3 error envelope `{status:'error', message}` with `status`.
#[track_caller]
pub(crate) fn error(res: &Resp, status: u16) {
    assert_status(res, status);
    assert_eq!(res.body["status"], "error", "{}", res.body);
    assert!(res.body["message"].as_str().is_some_and(|m| !m.is_empty()), "no message: {}", res.body);
}

/// Asserts a 422 whose `errors` names `field` with at least one message.
#[track_caller]
pub(crate) fn field_error(res: &Resp, field: &str) {
    error_on(res, 422, field);
}

/// Asserts a 409 (a unique value taken) whose `errors` names `field`.
#[track_caller]
pub(crate) fn conflict_on(res: &Resp, field: &str) {
    error_on(res, 409, field);
}

#[track_caller]
fn error_on(res: &Resp, status: u16, field: &str) {
    error(res, status);
    let messages = &res.body["errors"][field];
    assert!(
        messages.as_array().is_some_and(|m| !m.is_empty() && m.iter().all(Value::is_string)),
        "errors should name {field:?}: {}",
        res.body
    );
}

/// The uids of a list's items, in order.
pub(crate) fn uids(data: &Value) -> Vec<String> {
    data["items"].as_array().expect("items").iter().map(|c| c["uid"].as_str().expect("uid").to_owned()).collect()
}

pub(crate) fn items(data: &Value) -> &Vec<Value> {
    data["items"].as_array().expect("items array")
}

/// `{current_page, per_page, last_page, total, has_more_pages}` as a tuple.
#[track_caller]
pub(crate) fn pagination(data: &Value) -> (i64, i64, i64, i64, bool) {
    let p = &data["pagination"];
    let int = |k: &str| p[k].as_i64().unwrap_or_else(|| panic!("pagination.{k} missing: {data}"));
    (
        int("current_page"),
        int("per_page"),
        int("last_page"),
        int("total"),
        p["has_more_pages"].as_bool().expect("has_more_pages"),
    )
}

/// Creates a group (201 expected) and returns its data.
pub(crate) async fn make_group<S, B>(app: &TestApp<S>, key: &str, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post("/api/v3/contact-groups", key, body).await;
    success(&res, 201)
}

/// Creates a contact (201 expected) in a group and returns its data.
pub(crate) async fn make_contact<S, B>(app: &TestApp<S>, key: &str, group: &Value, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(&format!("/api/v3/contact-groups/{}/contacts", group["id"]), key, body).await;
    success(&res, 201)
}

/// Adds `count` contacts numbered from `first` through one batch (200 expected).
pub(crate) async fn fill<S, B>(app: &TestApp<S>, key: &str, group: &Value, first: u32, count: u32) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let rows: Vec<Value> =
        (first..first + count).map(|n| json!({"PHONE": tz(n), "name": format!("Person {n}")})).collect();
    let res = app
        .post(&format!("/api/v3/contact-groups/{}/contacts/batch", group["id"]), key, json!({"contacts": rows}))
        .await;
    let data = success(&res, 200);
    assert_eq!(data["created"], json!(count), "{data}");
    data
}

pub(super) fn is_rfc3339(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).is_ok())
}

pub(super) fn groups_path(group: &Value) -> String {
    format!("/api/v3/contact-groups/{}", group["id"])
}

pub(super) fn contacts_path(group: &Value) -> String {
    format!("/api/v3/contact-groups/{}/contacts", group["id"])
}

pub(super) fn contact_path(group: &Value, contact: &Value) -> String {
    format!("/api/v3/contact-groups/{}/contacts/{}", group["id"], contact["uid"].as_str().expect("uid"))
}

pub(super) fn batch_path(group: &Value) -> String {
    format!("/api/v3/contact-groups/{}/contacts/batch", group["id"])
}

/// Percent-encodes a query value.
pub(crate) fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
