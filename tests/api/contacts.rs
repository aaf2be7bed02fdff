//! Contact groups and contacts (contract: "Contact group", "Contact", "Contact groups and
//! contacts", "Identifiers and list conventions", "Errors"), through HTTP on a real database.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Resp, TestApp, json, spawn};
use serde_json::Value;

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
    error(res, 422);
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

fn is_rfc3339(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).is_ok())
}

fn groups_path(group: &Value) -> String {
    format!("/api/v3/contact-groups/{}", group["id"])
}

fn contacts_path(group: &Value) -> String {
    format!("/api/v3/contact-groups/{}/contacts", group["id"])
}

fn contact_path(group: &Value, contact: &Value) -> String {
    format!("/api/v3/contact-groups/{}/contacts/{}", group["id"], contact["uid"].as_str().expect("uid"))
}

fn batch_path(group: &Value) -> String {
    format!("/api/v3/contact-groups/{}/contacts/batch", group["id"])
}

// --- groups -----------------------------------------------------------------------------------------

#[actix_web::test]
async fn group_create_answers_201_with_every_field() {
    let app = spawn().await;
    let a = app.account("all").await;
    let res = app
        .post(
            "/api/v3/contact-groups",
            &a.key,
            json!({
                "name": "Customers",
                "custom_fields": [
                    {"key": "city"},
                    {"key": "tier", "label": "Loyalty tier", "type": "number"},
                    "region"
                ]
            }),
        )
        .await;
    let group = success(&res, 201);
    assert!(group["id"].as_i64().is_some_and(|id| id > 0), "{group}");
    let uid = group["uid"].as_str().expect("uid string");
    assert!(uuid::Uuid::parse_str(uid).is_ok(), "uid is a UUID: {uid}");
    assert_eq!(group["name"], "Customers");
    assert_eq!(group["status"], "active");
    assert_eq!(group["contacts_count"], 0);
    assert_eq!(group["subscribed_count"], 0);
    assert_eq!(
        group["custom_fields"],
        json!([
            {"key": "city", "label": "city", "type": "text"},
            {"key": "tier", "label": "Loyalty tier", "type": "number"},
            {"key": "region", "label": "region", "type": "text"}
        ])
    );
    assert!(is_rfc3339(&group["created_at"]), "{group}");
    assert!(is_rfc3339(&group["updated_at"]), "{group}");

    // Without custom_fields the list is empty, never missing.
    let plain = make_group(&app, &a.key, json!({"name": "Plain"})).await;
    assert_eq!(plain["custom_fields"], json!([]));
    assert_ne!(plain["uid"], group["uid"]);
}

#[actix_web::test]
async fn group_custom_field_keys_use_letters_digits_underscore_dot_dash() {
    let app = spawn().await;
    let a = app.account("all").await;
    let good = make_group(
        &app,
        &a.key,
        json!({"name": "Keys", "custom_fields": [{"key": "Abc_1.x-y"}, {"key": "2nd"}, {"key": "a.b"}]}),
    )
    .await;
    assert_eq!(good["custom_fields"][0]["key"], "Abc_1.x-y");
    assert_eq!(good["custom_fields"].as_array().map(Vec::len), Some(3));

    for bad in ["has space", "slash/key", "colon:key", "accént", "emoji🙂", "semi;colon", "$dollar", "at@sign"] {
        let res = app
            .post(
                "/api/v3/contact-groups",
                &a.key,
                json!({"name": "Bad", "custom_fields": [{"key": "fine"}, {"key": bad}]}),
            )
            .await;
        field_error(&res, "custom_fields.1.key");
    }
    // A missing or empty key is refused the same way.
    let res =
        app.post("/api/v3/contact-groups", &a.key, json!({"name": "Bad", "custom_fields": [{"label": "x"}]})).await;
    field_error(&res, "custom_fields.0.key");
    let res = app.post("/api/v3/contact-groups", &a.key, json!({"name": "Bad", "custom_fields": [{"key": ""}]})).await;
    field_error(&res, "custom_fields.0.key");

    // Nothing was stored by the refused requests.
    let list = success(&app.get("/api/v3/contact-groups", &a.key).await, 200);
    assert_eq!(pagination(&list).3, 1, "{list}");
}

#[actix_web::test]
async fn group_duplicate_custom_field_keys_are_refused() {
    let app = spawn().await;
    let a = app.account("all").await;
    let res = app
        .post(
            "/api/v3/contact-groups",
            &a.key,
            json!({"name": "Dupes", "custom_fields": [{"key": "city"}, {"key": "tier"}, {"key": "city", "label": "Town"}]}),
        )
        .await;
    field_error(&res, "custom_fields.2.key");
    let list = success(&app.get("/api/v3/contact-groups", &a.key).await, 200);
    assert_eq!(pagination(&list).3, 0, "nothing created: {list}");

    // The same on PATCH.
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let res = app.patch(&groups_path(&group), &a.key, json!({"custom_fields": ["a", "a"]})).await;
    field_error(&res, "custom_fields.1.key");
}

#[actix_web::test]
async fn group_unknown_custom_field_type_is_refused() {
    let app = spawn().await;
    let a = app.account("all").await;
    let res = app
        .post(
            "/api/v3/contact-groups",
            &a.key,
            json!({"name": "Types", "custom_fields": [{"key": "a", "type": "text"}, {"key": "b", "type": "colour"}]}),
        )
        .await;
    field_error(&res, "custom_fields.1.type");
    let list = success(&app.get("/api/v3/contact-groups", &a.key).await, 200);
    assert_eq!(pagination(&list).3, 0, "nothing created: {list}");
}

#[actix_web::test]
async fn group_name_is_required_and_at_most_191_characters() {
    let app = spawn().await;
    let a = app.account("all").await;
    for body in [json!({"name": ""}), json!({"name": "   "}), json!({"name": null, "custom_fields": []})] {
        let res = app.post("/api/v3/contact-groups", &a.key, body.clone()).await;
        field_error(&res, "name");
    }
    let res = app.post("/api/v3/contact-groups", &a.key, json!({"name": "x".repeat(192)})).await;
    field_error(&res, "name");
    let list = success(&app.get("/api/v3/contact-groups", &a.key).await, 200);
    assert_eq!(pagination(&list).3, 0, "nothing created: {list}");

    let longest = make_group(&app, &a.key, json!({"name": "é".repeat(191)})).await;
    assert_eq!(longest["name"].as_str().map(|n| n.chars().count()), Some(191));
}

/// A body without `name` at all is a 422 whose `errors` names `name` (not `body`).
#[actix_web::test]
async fn group_name_missing_is_422_naming_name() {
    let app = spawn().await;
    let a = app.account("all").await;
    for body in [json!({}), json!({"custom_fields": ["city"]})] {
        let res = app.post("/api/v3/contact-groups", &a.key, body).await;
        field_error(&res, "name");
    }
    let list = success(&app.get("/api/v3/contact-groups", &a.key).await, 200);
    assert_eq!(pagination(&list).3, 0, "nothing created: {list}");
}

#[actix_web::test]
async fn group_list_defaults_to_25_newest_first() {
    let app = spawn().await;
    let a = app.account("all").await;
    let mut ids = Vec::new();
    for n in 0..27 {
        ids.push(make_group(&app, &a.key, json!({"name": format!("Group {n}")})).await["id"].clone());
    }
    let page1 = success(&app.get("/api/v3/contact-groups", &a.key).await, 200);
    assert_eq!(items(&page1).len(), 25);
    assert_eq!(pagination(&page1), (1, 25, 2, 27, true));
    let listed: Vec<Value> = items(&page1).iter().map(|g| g["id"].clone()).collect();
    let newest_first: Vec<Value> = ids.iter().rev().take(25).cloned().collect();
    assert_eq!(listed, newest_first);
    // Every listed group carries the full shape.
    for key in
        ["uid", "name", "status", "contacts_count", "subscribed_count", "custom_fields", "created_at", "updated_at"]
    {
        assert!(items(&page1)[0].get(key).is_some(), "{key} missing: {}", items(&page1)[0]);
    }

    let page2 = success(&app.get("/api/v3/contact-groups?page=2", &a.key).await, 200);
    assert_eq!(pagination(&page2), (2, 25, 2, 27, false));
    let listed: Vec<Value> = items(&page2).iter().map(|g| g["id"].clone()).collect();
    assert_eq!(listed, vec![ids[1].clone(), ids[0].clone()]);

    let small = success(&app.get("/api/v3/contact-groups?limit=5&per_page=10", &a.key).await, 200);
    assert_eq!(pagination(&small), (1, 5, 6, 27, true));
    let zero = success(&app.get("/api/v3/contact-groups?limit=0", &a.key).await, 200);
    assert_eq!(pagination(&zero).1, 25);
    let negative = success(&app.get("/api/v3/contact-groups?per_page=-3", &a.key).await, 200);
    assert_eq!(pagination(&negative).1, 25);
    let clamped = success(&app.get("/api/v3/contact-groups?limit=500", &a.key).await, 200);
    assert_eq!(items(&clamped).len(), 27);
    assert_eq!(pagination(&clamped), (1, 100, 1, 27, false));
    let beyond = success(&app.get("/api/v3/contact-groups?page=5", &a.key).await, 200);
    assert!(items(&beyond).is_empty());
    assert_eq!(pagination(&beyond), (5, 25, 2, 27, false));
}

#[actix_web::test]
async fn group_is_found_by_numeric_id_and_by_uuid() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "Both ways"})).await;
    let by_id = success(&app.get(&format!("/api/v3/contact-groups/{}", group["id"]), &a.key).await, 200);
    let by_uid = success(
        &app.get(&format!("/api/v3/contact-groups/{}", group["uid"].as_str().expect("string")), &a.key).await,
        200,
    );
    assert_eq!(by_id, group);
    assert_eq!(by_uid, group);
    // The UUID also addresses the group's contacts.
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    let path = format!(
        "/api/v3/contact-groups/{}/contacts/{}",
        group["uid"].as_str().expect("string"),
        c["uid"].as_str().expect("string")
    );
    assert_eq!(success(&app.get(&path, &a.key).await, 200)["id"], c["id"]);
}

#[actix_web::test]
async fn group_patch_renames_deactivates_and_validates() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "Old", "custom_fields": ["city"]})).await;
    let path = groups_path(&group);

    let renamed = success(&app.patch(&path, &a.key, json!({"name": "New"})).await, 200);
    assert_eq!(renamed["name"], "New");
    assert_eq!(renamed["status"], "active");
    assert_eq!(renamed["custom_fields"], group["custom_fields"], "custom fields kept when not sent");
    assert_eq!(renamed["uid"], group["uid"]);

    let inactive = success(&app.patch(&path, &a.key, json!({"status": "inactive"})).await, 200);
    assert_eq!(inactive["status"], "inactive");
    assert_eq!(inactive["name"], "New", "name kept when not sent");
    assert_eq!(success(&app.get(&path, &a.key).await, 200)["status"], "inactive");

    let active = success(&app.patch(&path, &a.key, json!({"status": "active"})).await, 200);
    assert_eq!(active["status"], "active");

    for bad in ["archived", "ACTIVE", ""] {
        let res = app.patch(&path, &a.key, json!({"status": bad})).await;
        field_error(&res, "status");
    }
    field_error(&app.patch(&path, &a.key, json!({"name": "x".repeat(192)})).await, "name");
    field_error(&app.patch(&path, &a.key, json!({"name": ""})).await, "name");
    field_error(&app.patch(&path, &a.key, json!({"custom_fields": [{"key": "bad key"}]})).await, "custom_fields.0.key");

    let after = success(&app.get(&path, &a.key).await, 200);
    assert_eq!((after["name"].clone(), after["status"].clone()), (json!("New"), json!("active")));
    assert_eq!(after["custom_fields"], group["custom_fields"], "refused patches changed nothing");
}

#[actix_web::test]
async fn group_patch_replaces_custom_fields_and_leaves_stored_values() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group =
        make_group(&app, &a.key, json!({"name": "G", "custom_fields": ["city", {"key": "tier", "type": "number"}]}))
            .await;
    let contact = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "city": "Arusha", "tier": 3})).await;

    let patched = success(
        &app.patch(&groups_path(&group), &a.key, json!({"custom_fields": [{"key": "email", "type": "email"}]})).await,
        200,
    );
    assert_eq!(
        patched["custom_fields"],
        json!([{"key": "email", "label": "email", "type": "email"}]),
        "replaced, not merged"
    );
    let stored = success(&app.get(&groups_path(&group), &a.key).await, 200);
    assert_eq!(stored["custom_fields"], patched["custom_fields"]);

    let read = success(&app.get(&contact_path(&group, &contact), &a.key).await, 200);
    assert_eq!(read["custom_field_values"], json!({"city": "Arusha", "tier": 3}), "stored values untouched");

    let emptied = success(&app.patch(&groups_path(&group), &a.key, json!({"custom_fields": []})).await, 200);
    assert_eq!(emptied["custom_fields"], json!([]));
    let read = success(&app.get(&contact_path(&group, &contact), &a.key).await, 200);
    assert_eq!(read["custom_field_values"], json!({"city": "Arusha", "tier": 3}));
}

#[actix_web::test]
async fn group_counts_include_unsubscribed_only_in_contacts_count() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "Counted"})).await;
    make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    make_contact(&app, &a.key, &group, json!({"PHONE": tz(2), "is_subscribed": true})).await;
    make_contact(&app, &a.key, &group, json!({"PHONE": tz(3), "is_subscribed": false})).await;
    let other = make_group(&app, &a.key, json!({"name": "Other"})).await;
    make_contact(&app, &a.key, &other, json!({"PHONE": tz(4)})).await;

    let read = success(&app.get(&groups_path(&group), &a.key).await, 200);
    assert_eq!((read["contacts_count"].clone(), read["subscribed_count"].clone()), (json!(3), json!(2)));
    let list = success(&app.get("/api/v3/contact-groups", &a.key).await, 200);
    let listed = items(&list).iter().find(|g| g["id"] == group["id"]).expect("listed");
    assert_eq!((listed["contacts_count"].clone(), listed["subscribed_count"].clone()), (json!(3), json!(2)));
    let listed = items(&list).iter().find(|g| g["id"] == other["id"]).expect("listed");
    assert_eq!((listed["contacts_count"].clone(), listed["subscribed_count"].clone()), (json!(1), json!(1)));

    // The counts follow changes.
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(5)})).await;
    success(&app.patch(&contact_path(&group, &c), &a.key, json!({"is_subscribed": false})).await, 200);
    let read = success(&app.get(&groups_path(&group), &a.key).await, 200);
    assert_eq!((read["contacts_count"].clone(), read["subscribed_count"].clone()), (json!(4), json!(2)));
    let patched = success(&app.patch(&groups_path(&group), &a.key, json!({"name": "Renamed"})).await, 200);
    assert_eq!((patched["contacts_count"].clone(), patched["subscribed_count"].clone()), (json!(4), json!(2)));
}

#[actix_web::test]
async fn group_delete_of_an_empty_group_answers_200() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "Empty"})).await;
    let keep = make_group(&app, &a.key, json!({"name": "Keep"})).await;
    let res = app.delete(&groups_path(&group), &a.key).await;
    success(&res, 200);
    error(&app.get(&groups_path(&group), &a.key).await, 404);
    error(&app.get(&format!("/api/v3/contact-groups/{}", group["uid"].as_str().expect("string")), &a.key).await, 404);
    success(&app.get(&groups_path(&keep), &a.key).await, 200);
    // A second delete finds nothing.
    error(&app.delete(&groups_path(&group), &a.key).await, 404);
}

#[actix_web::test]
async fn group_delete_of_a_non_empty_group_is_409_with_the_count_unless_forced() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "Full"})).await;
    let c1 = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    make_contact(&app, &a.key, &group, json!({"PHONE": tz(2), "is_subscribed": false})).await;
    let other = make_group(&app, &a.key, json!({"name": "Other"})).await;
    let survivor = make_contact(&app, &a.key, &other, json!({"PHONE": tz(1)})).await;

    let res = app.delete(&groups_path(&group), &a.key).await;
    error(&res, 409);
    assert_eq!(res.body["count"], 2, "the count member: {}", res.body);
    for force in ["false", "no"] {
        let res = app.delete(&format!("{}?force={force}", groups_path(&group)), &a.key).await;
        error(&res, 409);
    }
    // Nothing was deleted.
    let read = success(&app.get(&groups_path(&group), &a.key).await, 200);
    assert_eq!(read["contacts_count"], 2);
    success(&app.get(&contact_path(&group, &c1), &a.key).await, 200);

    let res = app
        .delete(&format!("/api/v3/contact-groups/{}?force=true", group["uid"].as_str().expect("string")), &a.key)
        .await;
    success(&res, 200);
    error(&app.get(&groups_path(&group), &a.key).await, 404);
    error(&app.get(&contacts_path(&group), &a.key).await, 404);
    // Its contacts are gone everywhere; the other group's contact with the same number stays.
    let all = success(&app.get("/api/v3/contacts", &a.key).await, 200);
    assert_eq!(uids(&all), vec![survivor["uid"].as_str().expect("string").to_owned()]);
    assert_eq!(pagination(&all).3, 1);
    assert_eq!(success(&app.get(&groups_path(&other), &a.key).await, 200)["contacts_count"], 1);
}

#[actix_web::test]
async fn unknown_or_malformed_group_is_404() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "Real"})).await;
    let missing_id = group["id"].as_i64().expect("integer") + 1000;
    let missing_uuid = uuid::Uuid::new_v4().to_string();
    for g in [missing_id.to_string(), missing_uuid, "abc".to_owned(), "12abc".to_owned(), "ctc_x".to_owned()] {
        let base = format!("/api/v3/contact-groups/{g}");
        error(&app.get(&base, &a.key).await, 404);
        error(&app.patch(&base, &a.key, json!({"name": "x"})).await, 404);
        error(&app.delete(&base, &a.key).await, 404);
        error(&app.get(&format!("{base}/contacts"), &a.key).await, 404);
        error(&app.post(&format!("{base}/contacts"), &a.key, json!({"PHONE": tz(1)})).await, 404);
        error(&app.post(&format!("{base}/contacts/batch"), &a.key, json!({"contacts": [{"PHONE": tz(1)}]})).await, 404);
        error(&app.get(&format!("/api/v3/contacts?group_id={g}"), &a.key).await, 404);
    }
    let all = success(&app.get("/api/v3/contacts", &a.key).await, 200);
    assert_eq!(pagination(&all).3, 0, "no contact landed anywhere: {all}");
}

// --- contacts: create ---------------------------------------------------------------------------------

#[actix_web::test]
async fn contact_create_answers_201_with_every_field() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let res = app
        .post(&contacts_path(&group), &a.key, json!({"PHONE": "0712345678", "name": "Asha Juma", "city": "Arusha"}))
        .await;
    let c = success(&res, 201);
    assert!(c["id"].as_i64().is_some_and(|id| id > 0), "{c}");
    assert!(c["uid"].as_str().is_some_and(|u| u.starts_with("ctc_") && u.len() > 4), "{c}");
    assert_eq!(c["group_id"], group["id"]);
    assert_eq!(c["group_uid"], group["uid"]);
    assert_eq!(c["name"], "Asha Juma");
    assert_eq!(c["country_code"], "255");
    assert_eq!(c["phone_number"], "712345678");
    assert_eq!(c["full_phone_number"], "255712345678");
    assert_eq!(c["is_subscribed"], true);
    assert_eq!(c["custom_field_values"], json!({"city": "Arusha"}));
    assert!(is_rfc3339(&c["created_at"]), "{c}");
    assert!(is_rfc3339(&c["updated_at"]), "{c}");
    // The stored record reads back the same.
    assert_eq!(success(&app.get(&contact_path(&group, &c), &a.key).await, 200), c);
    let second = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    assert_ne!(second["uid"], c["uid"]);
}

#[actix_web::test]
async fn contact_phone_wins_over_phone_number_and_phone_number_alone_works() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let both = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "phone_number": tz(2)})).await;
    assert_eq!(both["phone_number"], tz_national(1));
    assert_eq!(both["full_phone_number"], tz_full(1));
    assert!(both["custom_field_values"].as_object().is_some_and(|m| m.is_empty()), "phone_number is reserved: {both}");

    let alias = make_contact(&app, &a.key, &group, json!({"phone_number": tz(2)})).await;
    assert_eq!(alias["phone_number"], tz_national(2));
    assert_eq!(alias["full_phone_number"], tz_full(2));

    // An empty PHONE counts as absent, so phone_number is used.
    let empty = make_contact(&app, &a.key, &group, json!({"PHONE": "", "phone_number": tz(3)})).await;
    assert_eq!(empty["phone_number"], tz_national(3));
    // A bad PHONE is not rescued by a good phone_number.
    let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": "12345", "phone_number": tz(4)})).await;
    field_error(&res, "PHONE");
}

#[actix_web::test]
async fn contact_without_phone_is_422_on_phone() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    for body in [
        json!({}),
        json!({"name": "No number"}),
        json!({"PHONE": ""}),
        json!({"PHONE": null}),
        json!({"phone_number": ""}),
    ] {
        let res = app.post(&contacts_path(&group), &a.key, body.clone()).await;
        field_error(&res, "PHONE");
    }
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 0);
}

#[actix_web::test]
async fn contact_national_number_is_digits_without_the_trunk_zero() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": "0712-345 678"})).await;
    assert_eq!(c["phone_number"], "712345678");
    assert_eq!(c["country_code"], "255");
    assert_eq!(c["full_phone_number"], "255712345678");
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": "(0712) 345.679"})).await;
    assert_eq!(c["phone_number"], "712345679");
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": "712345680"})).await;
    assert_eq!(c["phone_number"], "712345680");
    assert_eq!(c["full_phone_number"], "255712345680");
}

#[actix_web::test]
async fn contact_country_code_is_explicit_and_digits_only() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let ke = make_contact(&app, &a.key, &group, json!({"PHONE": "712345678", "country_code": "254"})).await;
    assert_eq!(ke["country_code"], "254");
    assert_eq!(ke["phone_number"], "712345678");
    assert_eq!(ke["full_phone_number"], "254712345678");
    // The trunk 0 is dropped under an explicit code too.
    let ke = make_contact(&app, &a.key, &group, json!({"PHONE": "0712345679", "country_code": "254"})).await;
    assert_eq!(ke["phone_number"], "712345679");
    assert_eq!(ke["full_phone_number"], "254712345679");
    // Without country_code the account's default, 255, applies: a different contact.
    let tz_contact = make_contact(&app, &a.key, &group, json!({"PHONE": "0712345678"})).await;
    assert_eq!(tz_contact["country_code"], "255");
    assert_eq!(tz_contact["full_phone_number"], "255712345678");
    // A code with no digits is refused on country_code.
    let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": tz(9), "country_code": "abc"})).await;
    field_error(&res, "country_code");
}

#[actix_web::test]
async fn contact_plus_is_not_read_as_a_country_code() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    // 255 (default) + 255712345678 is not a valid number.
    let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": "+255712345678"})).await;
    field_error(&res, "PHONE");
    // A Kenyan number with a plus is not moved to Kenya either: 255 254712345678 is invalid.
    let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": "+254712345678"})).await;
    field_error(&res, "PHONE");
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 0);
}

#[actix_web::test]
async fn contact_invalid_number_is_422_on_phone() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    for bad in ["12345", "0712", "07123456789012", "abc", "---", "0000000000"] {
        let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": bad})).await;
        field_error(&res, "PHONE");
    }
    // A number that is valid in Tanzania is not valid under another country code.
    let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": "712345678", "country_code": "1"})).await;
    field_error(&res, "PHONE");
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 0);
}

#[actix_web::test]
async fn contact_name_comes_from_name_then_upper_name_then_first_last_then_the_number() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let all = json!({"PHONE": tz(1), "name": "lower", "NAME": "UPPER", "FIRST_NAME": "First", "LAST_NAME": "Last"});
    assert_eq!(make_contact(&app, &a.key, &group, all).await["name"], "lower");
    let upper = json!({"PHONE": tz(2), "NAME": "UPPER", "FIRST_NAME": "First", "LAST_NAME": "Last"});
    assert_eq!(make_contact(&app, &a.key, &group, upper).await["name"], "UPPER");
    let parts = json!({"PHONE": tz(3), "FIRST_NAME": "First", "LAST_NAME": "Last"});
    assert_eq!(make_contact(&app, &a.key, &group, parts).await["name"], "First Last");
    let first = json!({"PHONE": tz(4), "FIRST_NAME": "Only"});
    assert_eq!(make_contact(&app, &a.key, &group, first).await["name"], "Only");
    let last = json!({"PHONE": tz(5), "LAST_NAME": "Surname"});
    assert_eq!(make_contact(&app, &a.key, &group, last).await["name"], "Surname");
    let none = make_contact(&app, &a.key, &group, json!({"PHONE": tz(6)})).await;
    assert_eq!(none["name"], none["full_phone_number"]);
    assert_eq!(none["name"], tz_full(6));
    let empty = make_contact(&app, &a.key, &group, json!({"PHONE": tz(7), "name": ""})).await;
    assert_eq!(empty["name"], tz_full(7));
    // None of the name keys is a custom field.
    assert_eq!(
        make_contact(&app, &a.key, &group, json!({"PHONE": tz(8), "NAME": "X", "FIRST_NAME": "Y"})).await["custom_field_values"],
        json!({})
    );
}

#[actix_web::test]
async fn contact_is_subscribed_defaults_to_true_and_false_is_kept() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let default = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    assert_eq!(default["is_subscribed"], true);
    let off = make_contact(&app, &a.key, &group, json!({"PHONE": tz(2), "is_subscribed": false})).await;
    assert_eq!(off["is_subscribed"], false);
    assert_eq!(success(&app.get(&contact_path(&group, &off), &a.key).await, 200)["is_subscribed"], false);
    let on = make_contact(&app, &a.key, &group, json!({"PHONE": tz(3), "is_subscribed": true})).await;
    assert_eq!(on["is_subscribed"], true);
    let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": tz(4), "is_subscribed": "maybe"})).await;
    field_error(&res, "is_subscribed");
}

#[actix_web::test]
async fn contact_other_keys_are_custom_fields_and_reserved_keys_are_not() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G", "custom_fields": ["city"]})).await;
    let c = make_contact(
        &app,
        &a.key,
        &group,
        json!({
            "PHONE": tz(1), "phone_number": tz(2), "country_code": "255", "name": "N", "NAME": "M",
            "FIRST_NAME": "F", "LAST_NAME": "L", "is_subscribed": true, "_token": "csrf",
            "city": "Arusha", "tier": 2, "vip": true, "tags": ["a", "b"], "meta.source": "web", "not-declared": "kept"
        }),
    )
    .await;
    assert_eq!(
        c["custom_field_values"],
        json!({"city": "Arusha", "tier": 2, "vip": true, "tags": ["a", "b"], "meta.source": "web", "not-declared": "kept"})
    );
    let none = make_contact(&app, &a.key, &group, json!({"PHONE": tz(3), "_token": "x"})).await;
    assert_eq!(none["custom_field_values"], json!({}), "an object even when empty");
    let listed = success(&app.get(&contacts_path(&group), &a.key).await, 200);
    assert!(items(&listed).iter().all(|c| c["custom_field_values"].is_object()), "{listed}");
}

#[actix_web::test]
async fn contact_duplicate_number_in_the_group_is_422_naming_the_existing_contact() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let first = make_contact(&app, &a.key, &group, json!({"PHONE": "0712345678", "name": "First"})).await;
    let uid = first["uid"].as_str().expect("string").to_owned();
    // The same number written differently is still the same number.
    for phone in ["0712345678", "712 345 678", "0712-345-678"] {
        let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": phone, "name": "Second"})).await;
        field_error(&res, "PHONE");
        assert!(res.body["message"].as_str().is_some_and(|m| m.contains(&uid)), "message names {uid}: {}", res.body);
        assert_eq!(res.body["contact_uid"], json!(uid), "{}", res.body);
    }
    let res = app.post(&contacts_path(&group), &a.key, json!({"PHONE": "712345678", "country_code": "255"})).await;
    assert_eq!(res.body["contact_uid"], json!(uid), "{}", res.body);
    assert_status(&res, 422);
    // Nothing changed.
    let read = success(&app.get(&groups_path(&group), &a.key).await, 200);
    assert_eq!(read["contacts_count"], 1);
    assert_eq!(success(&app.get(&contact_path(&group, &first), &a.key).await, 200)["name"], "First");

    // The same number in another group is a different contact.
    let other = make_group(&app, &a.key, json!({"name": "Other"})).await;
    let twin = make_contact(&app, &a.key, &other, json!({"PHONE": "0712345678"})).await;
    assert_ne!(twin["uid"], first["uid"]);
    assert_eq!(twin["full_phone_number"], first["full_phone_number"]);
    // And the same national number under another country code is too.
    let ke = make_contact(&app, &a.key, &group, json!({"PHONE": "0712345678", "country_code": "254"})).await;
    assert_eq!(ke["full_phone_number"], "254712345678");
}

// --- contacts: read, change, delete -------------------------------------------------------------------

#[actix_web::test]
async fn contact_is_read_by_uid_and_by_numeric_id() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "name": "Asha"})).await;
    make_contact(&app, &a.key, &group, json!({"PHONE": tz(2)})).await;
    let by_uid = success(&app.get(&contact_path(&group, &c), &a.key).await, 200);
    let by_id = success(&app.get(&format!("{}/{}", contacts_path(&group), c["id"]), &a.key).await, 200);
    assert_eq!(by_uid, c);
    assert_eq!(by_id, c);
    error(&app.get(&format!("{}/ctc_doesnotexist", contacts_path(&group)), &a.key).await, 404);
    error(
        &app.get(&format!("{}/{}", contacts_path(&group), c["id"].as_i64().expect("integer") + 1000), &a.key).await,
        404,
    );
}

#[actix_web::test]
async fn contact_of_another_group_is_404_through_this_groups_path() {
    let app = spawn().await;
    let a = app.account("all").await;
    let home = make_group(&app, &a.key, json!({"name": "Home"})).await;
    let elsewhere = make_group(&app, &a.key, json!({"name": "Elsewhere"})).await;
    let c = make_contact(&app, &a.key, &home, json!({"PHONE": tz(1), "name": "Asha", "city": "Arusha"})).await;
    for contact in [c["uid"].as_str().expect("string").to_owned(), c["id"].to_string()] {
        let path = format!("{}/{contact}", contacts_path(&elsewhere));
        error(&app.get(&path, &a.key).await, 404);
        error(&app.patch(&path, &a.key, json!({"name": "Hijacked", "city": null})).await, 404);
        error(&app.delete(&path, &a.key).await, 404);
    }
    assert_eq!(success(&app.get(&contact_path(&home, &c), &a.key).await, 200), c, "unchanged");
}

#[actix_web::test]
async fn contact_patch_changes_only_the_keys_sent() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let c = make_contact(
        &app,
        &a.key,
        &group,
        json!({"PHONE": tz(1), "name": "Asha", "is_subscribed": false, "city": "Arusha", "tier": "silver"}),
    )
    .await;
    let path = contact_path(&group, &c);

    // A custom field alone: everything else stays, custom fields merge.
    let p = success(&app.patch(&path, &a.key, json!({"tier": "gold", "email": "a@example.com"})).await, 200);
    assert_eq!(p["name"], "Asha", "name kept when not sent");
    assert_eq!(p["is_subscribed"], false);
    assert_eq!(p["full_phone_number"], tz_full(1));
    assert_eq!(p["custom_field_values"], json!({"city": "Arusha", "tier": "gold", "email": "a@example.com"}));
    assert_eq!(p["uid"], c["uid"]);
    assert_eq!(p["id"], c["id"]);

    // null removes a key.
    let p = success(&app.patch(&path, &a.key, json!({"city": null})).await, 200);
    assert_eq!(p["custom_field_values"], json!({"tier": "gold", "email": "a@example.com"}));
    assert_eq!(p["name"], "Asha");

    // Subscription alone.
    let p = success(&app.patch(&path, &a.key, json!({"is_subscribed": true})).await, 200);
    assert_eq!(p["is_subscribed"], true);
    assert_eq!(p["custom_field_values"], json!({"tier": "gold", "email": "a@example.com"}));

    // The name alone, through each alias.
    assert_eq!(success(&app.patch(&path, &a.key, json!({"name": "Asha J"})).await, 200)["name"], "Asha J");
    assert_eq!(success(&app.patch(&path, &a.key, json!({"NAME": "ASHA"})).await, 200)["name"], "ASHA");
    let p = success(&app.patch(&path, &a.key, json!({"FIRST_NAME": "Asha", "LAST_NAME": "Juma"})).await, 200);
    assert_eq!(p["name"], "Asha Juma");

    // PHONE changes the number and nothing else; the name is not reset to the number.
    let p = success(&app.patch(&path, &a.key, json!({"PHONE": tz(2)})).await, 200);
    assert_eq!(p["phone_number"], tz_national(2));
    assert_eq!(p["full_phone_number"], tz_full(2));
    assert_eq!(p["country_code"], "255");
    assert_eq!(p["name"], "Asha Juma");
    assert_eq!(p["custom_field_values"], json!({"tier": "gold", "email": "a@example.com"}));
    // The phone_number alias changes it too.
    let p = success(&app.patch(&path, &a.key, json!({"phone_number": tz(3)})).await, 200);
    assert_eq!(p["full_phone_number"], tz_full(3));

    // An empty body changes nothing.
    let before = success(&app.get(&path, &a.key).await, 200);
    let p = success(&app.patch(&path, &a.key, json!({})).await, 200);
    for key in ["name", "phone_number", "full_phone_number", "country_code", "is_subscribed", "custom_field_values"] {
        assert_eq!(p[key], before[key], "{key}");
    }
    // A bad number is refused and changes nothing.
    field_error(&app.patch(&path, &a.key, json!({"PHONE": "12345", "name": "Bad"})).await, "PHONE");
    let after = success(&app.get(&path, &a.key).await, 200);
    assert_eq!(after["name"], "Asha Juma");
    assert_eq!(after["full_phone_number"], tz_full(3));
    // Also by numeric id.
    let by_id = format!("{}/{}", contacts_path(&group), c["id"]);
    assert_eq!(success(&app.patch(&by_id, &a.key, json!({"name": "By id"})).await, 200)["name"], "By id");
}

#[actix_web::test]
async fn contact_patch_to_a_number_already_in_the_group_is_422() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let taken = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(2), "name": "Mover"})).await;
    let res = app.patch(&contact_path(&group, &c), &a.key, json!({"PHONE": tz_national(1), "name": "Changed"})).await;
    field_error(&res, "PHONE");
    let taken_uid = taken["uid"].as_str().expect("string");
    assert_eq!(res.body["contact_uid"], json!(taken_uid), "{}", res.body);
    assert!(res.body["message"].as_str().is_some_and(|m| m.contains(taken_uid)), "{}", res.body);
    let after = success(&app.get(&contact_path(&group, &c), &a.key).await, 200);
    assert_eq!((after["full_phone_number"].clone(), after["name"].clone()), (json!(tz_full(2)), json!("Mover")));
    // Sending its own number again is not a conflict.
    let same =
        success(&app.patch(&contact_path(&group, &c), &a.key, json!({"PHONE": tz(2), "name": "Same"})).await, 200);
    assert_eq!(same["name"], "Same");
}

#[actix_web::test]
async fn contact_delete_then_read_is_404() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    let keep = make_contact(&app, &a.key, &group, json!({"PHONE": tz(2)})).await;
    let deleted = success(&app.delete(&contact_path(&group, &c), &a.key).await, 200);
    assert_eq!(deleted["uid"], c["uid"]);
    error(&app.get(&contact_path(&group, &c), &a.key).await, 404);
    error(&app.delete(&contact_path(&group, &c), &a.key).await, 404);
    error(&app.patch(&contact_path(&group, &c), &a.key, json!({"name": "Ghost"})).await, 404);
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 1);
    success(&app.get(&contact_path(&group, &keep), &a.key).await, 200);
    // By numeric id too; and the number is free again.
    success(&app.delete(&format!("{}/{}", contacts_path(&group), keep["id"]), &a.key).await, 200);
    make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
}

// --- contacts: lists -------------------------------------------------------------------------------

#[actix_web::test]
async fn contact_list_defaults_to_20_newest_first() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    fill(&app, &a.key, &group, 100, 22).await;
    let last = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "name": "Newest"})).await;
    let list = success(&app.get(&contacts_path(&group), &a.key).await, 200);
    assert_eq!(items(&list).len(), 20);
    assert_eq!(pagination(&list), (1, 20, 2, 23, true));
    assert_eq!(items(&list)[0]["uid"], last["uid"], "newest first");
    let ids: Vec<i64> = items(&list).iter().map(|c| c["id"].as_i64().expect("integer")).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");
    let page2 = success(&app.get(&format!("{}?page=2", contacts_path(&group)), &a.key).await, 200);
    assert_eq!(items(&page2).len(), 3);
    assert_eq!(pagination(&page2), (2, 20, 2, 23, false));
    // Every item has the contact shape.
    for key in [
        "id",
        "uid",
        "group_id",
        "group_uid",
        "name",
        "country_code",
        "phone_number",
        "full_phone_number",
        "is_subscribed",
        "custom_field_values",
        "created_at",
        "updated_at",
    ] {
        assert!(items(&list)[0].get(key).is_some(), "{key}: {}", items(&list)[0]);
    }
}

#[actix_web::test]
async fn contact_list_search_matches_name_national_number_and_stripped_full_number() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let asha = make_contact(&app, &a.key, &group, json!({"PHONE": "0712345601", "name": "Asha Juma"})).await;
    let baraka = make_contact(&app, &a.key, &group, json!({"PHONE": "0712999902", "name": "Baraka"})).await;
    let kenyan =
        make_contact(&app, &a.key, &group, json!({"PHONE": "0733111103", "country_code": "254", "name": "Wanjiru"}))
            .await;
    let uid = |c: &Value| c["uid"].as_str().expect("string").to_owned();
    let search = async |term: &str| {
        let path = format!("{}?search={}", contacts_path(&group), urlencode(term));
        let data = success(&app.get(&path, &a.key).await, 200);
        let mut found = uids(&data);
        found.sort();
        assert_eq!(pagination(&data).3 as usize, found.len(), "total agrees with items: {data}");
        found
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };

    // Name: substring, any case.
    assert_eq!(search("asha").await, vec![uid(&asha)]);
    assert_eq!(search("JUMA").await, vec![uid(&asha)]);
    assert_eq!(search("ara").await, vec![uid(&baraka)]);
    assert_eq!(search("nobody").await, Vec::<String>::new());
    // National number, whole or part, with or without the trunk 0.
    assert_eq!(search("712345601").await, vec![uid(&asha)]);
    assert_eq!(search("0712345601").await, vec![uid(&asha)]);
    assert_eq!(search("0712 345 601").await, vec![uid(&asha)]);
    assert_eq!(search("999902").await, vec![uid(&baraka)]);
    assert_eq!(search("733111103").await, vec![uid(&kenyan)]);
    // The full number with punctuation stripped.
    assert_eq!(search("255712345601").await, vec![uid(&asha)]);
    assert_eq!(search("+255 712-345").await, vec![uid(&asha)]);
    assert_eq!(search("+255 (712) 345-601").await, vec![uid(&asha)]);
    assert_eq!(search("+254 733").await, vec![uid(&kenyan)]);
    assert_eq!(search("+255 712").await, sorted(vec![uid(&asha), uid(&baraka)]));
    // A search term with LIKE wildcards matches literally.
    assert_eq!(search("%").await, Vec::<String>::new());
    assert_eq!(search("_").await, Vec::<String>::new());
    // An empty search lists everyone.
    assert_eq!(search("").await.len(), 3);
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

#[actix_web::test]
async fn contact_list_filters_on_subscribed() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let on1 = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "name": "On one"})).await;
    let off = make_contact(&app, &a.key, &group, json!({"PHONE": tz(2), "is_subscribed": false, "name": "Off"})).await;
    let on2 = make_contact(&app, &a.key, &group, json!({"PHONE": tz(3), "name": "On two"})).await;
    let list = |q: &str| format!("{}?{q}", contacts_path(&group));
    let uid = |c: &Value| c["uid"].as_str().expect("string").to_owned();

    let yes = success(&app.get(&list("subscribed=true"), &a.key).await, 200);
    assert_eq!(uids(&yes), vec![uid(&on2), uid(&on1)]);
    assert_eq!(pagination(&yes).3, 2);
    let no = success(&app.get(&list("subscribed=false"), &a.key).await, 200);
    assert_eq!(uids(&no), vec![uid(&off)]);
    assert_eq!(pagination(&no).3, 1);
    let both = success(&app.get(&contacts_path(&group), &a.key).await, 200);
    assert_eq!(pagination(&both).3, 3);
    // Combined with a search.
    let combined = success(&app.get(&list("subscribed=true&search=two"), &a.key).await, 200);
    assert_eq!(uids(&combined), vec![uid(&on2)]);

    for bad in ["maybe", "yes%20please", "2"] {
        field_error(&app.get(&list(&format!("subscribed={bad}")), &a.key).await, "subscribed");
    }
}

#[actix_web::test]
async fn contact_list_pagination_limit_wins_is_clamped_and_non_positive_means_default() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "Big"})).await;
    fill(&app, &a.key, &group, 0, 150).await;
    let list = async |q: &str| success(&app.get(&format!("{}?{q}", contacts_path(&group)), &a.key).await, 200);

    let data = list("limit=7&per_page=30").await;
    assert_eq!(items(&data).len(), 7, "limit wins over per_page");
    assert_eq!(pagination(&data), (1, 7, 22, 150, true));
    let data = list("per_page=30").await;
    assert_eq!(items(&data).len(), 30);
    assert_eq!(pagination(&data), (1, 30, 5, 150, true));

    let data = list("limit=500").await;
    assert_eq!(items(&data).len(), 100, "clamped to 100");
    assert_eq!(pagination(&data), (1, 100, 2, 150, true));
    let data = list("per_page=101").await;
    assert_eq!(items(&data).len(), 100);
    assert_eq!(pagination(&data).1, 100);
    let data = list("limit=500&page=2").await;
    assert_eq!(items(&data).len(), 50);
    assert_eq!(pagination(&data), (2, 100, 2, 150, false));

    for q in ["limit=0", "limit=-5", "per_page=0", "per_page=-1", "limit=0&per_page=30"] {
        let data = list(q).await;
        assert_eq!(items(&data).len(), 20, "{q} means the default");
        assert_eq!(pagination(&data), (1, 20, 8, 150, true), "{q}");
    }

    let data = list("page=99").await;
    assert!(items(&data).is_empty(), "beyond the last page: {data}");
    assert_eq!(pagination(&data), (99, 20, 8, 150, false));
    let data = list("page=16&limit=10").await;
    assert!(items(&data).is_empty());
    assert_eq!(pagination(&data), (16, 10, 15, 150, false));
    let data = list("page=15&limit=10").await;
    assert_eq!(items(&data).len(), 10);
    assert_eq!(pagination(&data), (15, 10, 15, 150, false));

    // Pages do not overlap and cover everything.
    let mut seen = std::collections::BTreeSet::new();
    for page in 1..=2 {
        seen.extend(uids(&list(&format!("limit=100&page={page}")).await));
    }
    assert_eq!(seen.len(), 150);
}

// --- batch -------------------------------------------------------------------------------------------

#[actix_web::test]
async fn batch_size_is_1_to_500_rows() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let rows: Vec<Value> = (0..501).map(|n| json!({"PHONE": tz(n)})).collect();
    field_error(&app.post(&batch_path(&group), &a.key, json!({"contacts": rows})).await, "contacts");
    field_error(&app.post(&batch_path(&group), &a.key, json!({"contacts": []})).await, "contacts");
    field_error(&app.post(&batch_path(&group), &a.key, json!({})).await, "contacts");
    field_error(&app.post(&batch_path(&group), &a.key, json!({"contacts": {"PHONE": tz(1)}})).await, "contacts");
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 0, "nothing landed");

    let rows: Vec<Value> = (0..500).map(|n| json!({"PHONE": tz(n)})).collect();
    let data = success(&app.post(&batch_path(&group), &a.key, json!({"contacts": rows})).await, 200);
    assert_eq!((data["received"].clone(), data["created"].clone()), (json!(500), json!(500)));
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 500);
}

#[actix_web::test]
async fn batch_with_bad_rows_lands_the_good_ones_and_answers_207() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let res = app
        .post(
            &batch_path(&group),
            &a.key,
            json!({"contacts": [
                {"PHONE": tz(1), "name": "Good one", "city": "Arusha"},
                {"PHONE": "12345", "name": "Bad number"},
                {"name": "No number"},
                {"phone_number": tz(2), "is_subscribed": false},
                "not an object",
                {"PHONE": "+255712000003"}
            ]}),
        )
        .await;
    let data = success(&res, 207);
    assert_eq!(data["group_id"], group["id"]);
    assert_eq!(data["received"], 6);
    assert_eq!(data["created"], 2);
    assert_eq!(data["updated"], 0);
    assert_eq!(data["skipped"], 0);
    assert_eq!(data["rejected"], 4);
    let results = data["results"].as_array().expect("results");
    assert_eq!(results.len(), 6, "a result for every row");
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["index"], i, "{r}");
    }
    let outcomes: Vec<&str> = results.iter().map(|r| r["outcome"].as_str().expect("string")).collect();
    assert_eq!(outcomes, ["created", "rejected", "rejected", "created", "rejected", "rejected"]);
    assert!(results[0]["uid"].as_str().is_some_and(|u| u.starts_with("ctc_")));
    assert!(results[3]["uid"].as_str().is_some_and(|u| u.starts_with("ctc_")));
    assert!(results[1]["uid"].is_null(), "a rejected row has no uid: {}", results[1]);
    let problems = data["problems"].as_array().expect("problems");
    let indexes: Vec<i64> = problems.iter().map(|p| p["index"].as_i64().expect("integer")).collect();
    assert_eq!(indexes, [1, 2, 4, 5]);
    assert!(problems[0]["errors"]["PHONE"].as_array().is_some_and(|e| !e.is_empty()), "{}", problems[0]);
    assert!(problems[1]["errors"]["PHONE"].as_array().is_some_and(|e| !e.is_empty()), "{}", problems[1]);
    assert!(problems[2]["errors"].as_object().is_some_and(|e| !e.is_empty()), "{}", problems[2]);
    assert!(problems[3]["errors"]["PHONE"].as_array().is_some_and(|e| !e.is_empty()), "{}", problems[3]);

    // The good rows landed with the same rules as a single create.
    let good = success(
        &app.get(&format!("{}/{}", contacts_path(&group), results[0]["uid"].as_str().expect("string")), &a.key).await,
        200,
    );
    assert_eq!(good["name"], "Good one");
    assert_eq!(good["full_phone_number"], tz_full(1));
    assert_eq!(good["custom_field_values"], json!({"city": "Arusha"}));
    let other = success(
        &app.get(&format!("{}/{}", contacts_path(&group), results[3]["uid"].as_str().expect("string")), &a.key).await,
        200,
    );
    assert_eq!(other["is_subscribed"], false);
    assert_eq!(other["name"], tz_full(2), "named after the number");
    let read = success(&app.get(&groups_path(&group), &a.key).await, 200);
    assert_eq!((read["contacts_count"].clone(), read["subscribed_count"].clone()), (json!(2), json!(1)));
}

#[actix_web::test]
async fn batch_of_only_good_rows_answers_200() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let res = app
        .post(
            &batch_path(&group),
            &a.key,
            json!({"contacts": [
                {"PHONE": tz(1), "NAME": "Upper"},
                {"PHONE": "712345678", "country_code": "254", "FIRST_NAME": "Ke", "LAST_NAME": "Nya"}
            ]}),
        )
        .await;
    let data = success(&res, 200);
    assert_eq!(
        (
            data["received"].clone(),
            data["created"].clone(),
            data["updated"].clone(),
            data["skipped"].clone(),
            data["rejected"].clone()
        ),
        (json!(2), json!(2), json!(0), json!(0), json!(0))
    );
    assert_eq!(data["problems"], json!([]));
    assert_eq!(data["group_id"], group["id"]);
    let list = success(&app.get(&contacts_path(&group), &a.key).await, 200);
    let mut names: Vec<&str> = items(&list).iter().map(|c| c["name"].as_str().expect("string")).collect();
    names.sort_unstable();
    assert_eq!(names, ["Ke Nya", "Upper"]);
    let ke = items(&list).iter().find(|c| c["name"] == "Ke Nya").expect("listed");
    assert_eq!(ke["full_phone_number"], "254712345678");
    // The batch also takes the group's UUID.
    let res = app
        .post(
            &format!("/api/v3/contact-groups/{}/contacts/batch", group["uid"].as_str().expect("string")),
            &a.key,
            json!({"contacts": [{"PHONE": tz(2)}]}),
        )
        .await;
    assert_eq!(success(&res, 200)["created"], 1);
}

#[actix_web::test]
async fn batch_updates_existing_numbers_by_merge() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let existing = make_contact(
        &app,
        &a.key,
        &group,
        json!({"PHONE": tz(1), "name": "Asha", "city": "Arusha", "tier": "silver", "is_subscribed": false}),
    )
    .await;
    let res = app
        .post(
            &batch_path(&group),
            &a.key,
            json!({"contacts": [
                {"PHONE": tz_national(1), "tier": "gold", "city": null},
                {"PHONE": tz(2), "name": "New"}
            ]}),
        )
        .await;
    let data = success(&res, 200);
    assert_eq!((data["created"].clone(), data["updated"].clone()), (json!(1), json!(1)));
    assert_eq!(data["results"][0], json!({"index": 0, "uid": existing["uid"], "outcome": "updated"}));
    assert_eq!(data["results"][1]["outcome"], "created");
    let read = success(&app.get(&contact_path(&group, &existing), &a.key).await, 200);
    assert_eq!(read["name"], "Asha", "name kept when not sent");
    assert_eq!(read["is_subscribed"], false, "subscription kept when not sent");
    assert_eq!(read["custom_field_values"], json!({"tier": "gold"}), "merged; null removes");
    assert_eq!(read["id"], existing["id"]);
    // Values that are sent do change.
    let data = success(
        &app.post(
            &batch_path(&group),
            &a.key,
            json!({"contacts": [{"PHONE": tz(1), "name": "Asha J", "is_subscribed": true}]}),
        )
        .await,
        200,
    );
    assert_eq!(data["updated"], 1);
    let read = success(&app.get(&contact_path(&group, &existing), &a.key).await, 200);
    assert_eq!((read["name"].clone(), read["is_subscribed"].clone()), (json!("Asha J"), json!(true)));
    assert_eq!(read["custom_field_values"], json!({"tier": "gold"}));
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 2);
}

#[actix_web::test]
async fn batch_skip_existing_leaves_existing_contacts_untouched() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let existing = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "name": "Asha", "city": "Arusha"})).await;
    let res = app
        .post(
            &batch_path(&group),
            &a.key,
            json!({"skip_existing": true, "contacts": [
                {"PHONE": tz(1), "name": "Overwritten", "city": "Dodoma", "is_subscribed": false},
                {"PHONE": tz(2), "name": "New"}
            ]}),
        )
        .await;
    let data = success(&res, 200);
    assert_eq!(
        (data["created"].clone(), data["updated"].clone(), data["skipped"].clone(), data["rejected"].clone()),
        (json!(1), json!(0), json!(1), json!(0))
    );
    assert_eq!(data["results"][0], json!({"index": 0, "uid": existing["uid"], "outcome": "skipped"}));
    assert_eq!(data["results"][1]["outcome"], "created");
    let read = success(&app.get(&contact_path(&group, &existing), &a.key).await, 200);
    assert_eq!(read, existing, "untouched");
    // skip_existing:false is the default behaviour: update.
    let data = success(
        &app.post(
            &batch_path(&group),
            &a.key,
            json!({"skip_existing": false, "contacts": [{"PHONE": tz(1), "name": "Updated"}]}),
        )
        .await,
        200,
    );
    assert_eq!(data["results"][0]["outcome"], "updated");
    assert_eq!(success(&app.get(&contact_path(&group, &existing), &a.key).await, 200)["name"], "Updated");
}

#[actix_web::test]
async fn batch_number_repeated_in_one_batch_updates_the_row_created_earlier() {
    let app = spawn().await;
    let a = app.account("all").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let res = app
        .post(
            &batch_path(&group),
            &a.key,
            json!({"contacts": [
                {"PHONE": tz(1), "name": "First", "city": "Arusha"},
                {"PHONE": tz(2)},
                {"PHONE": tz_national(1), "tier": "gold"},
                {"PHONE": "0712-000-001", "name": "Third"}
            ]}),
        )
        .await;
    let data = success(&res, 200);
    assert_eq!(
        (data["received"].clone(), data["created"].clone(), data["updated"].clone()),
        (json!(4), json!(2), json!(2))
    );
    let results = data["results"].as_array().expect("array");
    let outcomes: Vec<&str> = results.iter().map(|r| r["outcome"].as_str().expect("string")).collect();
    assert_eq!(outcomes, ["created", "created", "updated", "updated"]);
    assert_eq!(results[2]["uid"], results[0]["uid"], "same contact");
    assert_eq!(results[3]["uid"], results[0]["uid"]);
    assert_eq!(
        success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"],
        2,
        "one contact per number"
    );
    let read = success(
        &app.get(&format!("{}/{}", contacts_path(&group), results[0]["uid"].as_str().expect("string")), &a.key).await,
        200,
    );
    assert_eq!(read["name"], "Third");
    assert_eq!(read["custom_field_values"], json!({"city": "Arusha", "tier": "gold"}));
}

// --- cross-group search ---------------------------------------------------------------------------------

#[actix_web::test]
async fn cross_group_search_filters_by_q_and_group_id_and_defaults_to_20() {
    let app = spawn().await;
    let a = app.account("all").await;
    let g1 = make_group(&app, &a.key, json!({"name": "One"})).await;
    let g2 = make_group(&app, &a.key, json!({"name": "Two"})).await;
    fill(&app, &a.key, &g1, 100, 12).await;
    fill(&app, &a.key, &g2, 200, 12).await;
    let asha1 = make_contact(&app, &a.key, &g1, json!({"PHONE": tz(1), "name": "Asha Juma"})).await;
    let asha2 = make_contact(&app, &a.key, &g2, json!({"PHONE": tz(1), "name": "asha mwita"})).await;

    let all = success(&app.get("/api/v3/contacts", &a.key).await, 200);
    assert_eq!(items(&all).len(), 20);
    assert_eq!(pagination(&all), (1, 20, 2, 26, true));
    assert_eq!(items(&all)[0]["uid"], asha2["uid"], "newest first");
    assert_eq!(items(&all)[0]["group_uid"], g2["uid"], "each item names its own group");
    assert_eq!(items(&all)[1]["group_uid"], g1["uid"]);

    let q = success(&app.get("/api/v3/contacts?q=ASHA", &a.key).await, 200);
    assert_eq!(
        uids(&q),
        vec![asha2["uid"].as_str().expect("string").to_owned(), asha1["uid"].as_str().expect("string").to_owned()]
    );
    assert_eq!(pagination(&q).3, 2);
    let q = success(&app.get(&format!("/api/v3/contacts?q={}", urlencode("+255 712-000-001")), &a.key).await, 200);
    assert_eq!(pagination(&q).3, 2, "by number: {q}");

    let in_g1 = success(&app.get(&format!("/api/v3/contacts?group_id={}", g1["id"]), &a.key).await, 200);
    assert_eq!(pagination(&in_g1).3, 13);
    assert!(items(&in_g1).iter().all(|c| c["group_id"] == g1["id"]));
    let in_g2 = success(
        &app.get(&format!("/api/v3/contacts?group_id={}&q=asha", g2["uid"].as_str().expect("string")), &a.key).await,
        200,
    );
    assert_eq!(uids(&in_g2), vec![asha2["uid"].as_str().expect("string").to_owned()]);

    let paged = success(&app.get("/api/v3/contacts?limit=500", &a.key).await, 200);
    assert_eq!((items(&paged).len(), pagination(&paged).1), (26, 100));
    let paged = success(&app.get("/api/v3/contacts?limit=5&per_page=50&page=2", &a.key).await, 200);
    assert_eq!(pagination(&paged), (2, 5, 6, 26, true));
    let paged = success(&app.get("/api/v3/contacts?limit=-1", &a.key).await, 200);
    assert_eq!(pagination(&paged).1, 20);
}

// --- permissions -------------------------------------------------------------------------------------

#[actix_web::test]
async fn view_only_key_lists_and_reads_but_cannot_change_anything() {
    let app = spawn().await;
    let owner = app.account("all").await;
    let viewer_user = app.user(owner.tenant, "contacts.view").await;
    let viewer = app.key(owner.tenant, viewer_user).await;
    let group = make_group(&app, &owner.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &owner.key, &group, json!({"PHONE": tz(1), "name": "Asha"})).await;

    success(&app.get("/api/v3/contact-groups", &viewer).await, 200);
    success(&app.get(&groups_path(&group), &viewer).await, 200);
    success(&app.get(&contacts_path(&group), &viewer).await, 200);
    success(&app.get(&contact_path(&group, &c), &viewer).await, 200);
    assert_eq!(pagination(&success(&app.get("/api/v3/contacts", &viewer).await, 200)).3, 1);

    error(&app.post("/api/v3/contact-groups", &viewer, json!({"name": "Nope"})).await, 403);
    error(&app.patch(&groups_path(&group), &viewer, json!({"name": "Nope"})).await, 403);
    error(&app.delete(&groups_path(&group), &viewer).await, 403);
    error(&app.delete(&format!("{}?force=true", groups_path(&group)), &viewer).await, 403);
    error(&app.post(&contacts_path(&group), &viewer, json!({"PHONE": tz(2)})).await, 403);
    error(&app.patch(&contact_path(&group, &c), &viewer, json!({"name": "Nope"})).await, 403);
    error(&app.delete(&contact_path(&group, &c), &viewer).await, 403);
    error(&app.post(&batch_path(&group), &viewer, json!({"contacts": [{"PHONE": tz(3)}]})).await, 403);

    let groups = success(&app.get("/api/v3/contact-groups", &owner.key).await, 200);
    assert_eq!(pagination(&groups).3, 1);
    let read = success(&app.get(&groups_path(&group), &owner.key).await, 200);
    assert_eq!((read["name"].clone(), read["contacts_count"].clone()), (json!("G"), json!(1)));
    assert_eq!(success(&app.get(&contact_path(&group, &c), &owner.key).await, 200), c);
}

#[actix_web::test]
async fn a_key_without_contacts_view_cannot_list_or_read() {
    let app = spawn().await;
    let owner = app.account("all").await;
    let other_user = app.user(owner.tenant, "contacts.create").await;
    let creator = app.key(owner.tenant, other_user).await;
    let group = make_group(&app, &owner.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &owner.key, &group, json!({"PHONE": tz(1)})).await;
    error(&app.get("/api/v3/contact-groups", &creator).await, 403);
    error(&app.get(&groups_path(&group), &creator).await, 403);
    error(&app.get(&contacts_path(&group), &creator).await, 403);
    error(&app.get(&contact_path(&group, &c), &creator).await, 403);
    error(&app.get("/api/v3/contacts", &creator).await, 403);
}

#[actix_web::test]
async fn contacts_create_allows_create_but_batch_needs_contacts_import() {
    let app = spawn().await;
    let a = app.account("contacts.view,contacts.create").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1), "name": "Asha"})).await;
    error(&app.post(&batch_path(&group), &a.key, json!({"contacts": [{"PHONE": tz(2)}]})).await, 403);
    // Creating is neither editing nor deleting.
    error(&app.patch(&contact_path(&group, &c), &a.key, json!({"name": "Nope"})).await, 403);
    error(&app.delete(&contact_path(&group, &c), &a.key).await, 403);
    error(&app.patch(&groups_path(&group), &a.key, json!({"name": "Nope"})).await, 403);
    error(&app.delete(&groups_path(&group), &a.key).await, 403);
    assert_eq!(success(&app.get(&contact_path(&group, &c), &a.key).await, 200), c);
    assert_eq!(success(&app.get(&groups_path(&group), &a.key).await, 200)["contacts_count"], 1);

    let importer_user = app.user(a.tenant, "contacts.import").await;
    let importer = app.key(a.tenant, importer_user).await;
    let data = success(&app.post(&batch_path(&group), &importer, json!({"contacts": [{"PHONE": tz(2)}]})).await, 200);
    assert_eq!(data["created"], 1);
    // Import alone neither creates one contact nor lists.
    error(&app.post(&contacts_path(&group), &importer, json!({"PHONE": tz(3)})).await, 403);
    error(&app.get(&contacts_path(&group), &importer).await, 403);
}

#[actix_web::test]
async fn contacts_edit_is_needed_to_patch_groups_and_contacts() {
    let app = spawn().await;
    let owner = app.account("all").await;
    let group = make_group(&app, &owner.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &owner.key, &group, json!({"PHONE": tz(1), "name": "Asha"})).await;
    let without_user = app.user(owner.tenant, "contacts.view,contacts.create,contacts.delete,contacts.import").await;
    let without = app.key(owner.tenant, without_user).await;
    error(&app.patch(&groups_path(&group), &without, json!({"name": "Nope"})).await, 403);
    error(&app.patch(&contact_path(&group, &c), &without, json!({"name": "Nope"})).await, 403);
    assert_eq!(success(&app.get(&groups_path(&group), &owner.key).await, 200)["name"], "G");
    assert_eq!(success(&app.get(&contact_path(&group, &c), &owner.key).await, 200)["name"], "Asha");

    let editor_user = app.user(owner.tenant, "contacts.edit").await;
    let editor = app.key(owner.tenant, editor_user).await;
    assert_eq!(success(&app.patch(&groups_path(&group), &editor, json!({"name": "G2"})).await, 200)["name"], "G2");
    assert_eq!(success(&app.patch(&contact_path(&group, &c), &editor, json!({"name": "A2"})).await, 200)["name"], "A2");
    // Editing is neither creating nor deleting.
    error(&app.post(&contacts_path(&group), &editor, json!({"PHONE": tz(2)})).await, 403);
    error(&app.delete(&contact_path(&group, &c), &editor).await, 403);
}

#[actix_web::test]
async fn contacts_delete_is_needed_to_delete_groups_and_contacts() {
    let app = spawn().await;
    let owner = app.account("all").await;
    let group = make_group(&app, &owner.key, json!({"name": "G"})).await;
    let empty = make_group(&app, &owner.key, json!({"name": "Empty"})).await;
    let c = make_contact(&app, &owner.key, &group, json!({"PHONE": tz(1)})).await;
    let without_user = app.user(owner.tenant, "contacts.view,contacts.create,contacts.edit,contacts.import").await;
    let without = app.key(owner.tenant, without_user).await;
    error(&app.delete(&contact_path(&group, &c), &without).await, 403);
    error(&app.delete(&groups_path(&empty), &without).await, 403);
    error(&app.delete(&format!("{}?force=true", groups_path(&group)), &without).await, 403);
    success(&app.get(&contact_path(&group, &c), &owner.key).await, 200);
    success(&app.get(&groups_path(&empty), &owner.key).await, 200);

    let deleter_user = app.user(owner.tenant, "contacts.delete").await;
    let deleter = app.key(owner.tenant, deleter_user).await;
    success(&app.delete(&contact_path(&group, &c), &deleter).await, 200);
    success(&app.delete(&groups_path(&empty), &deleter).await, 200);
    success(&app.delete(&groups_path(&group), &deleter).await, 200);
    let groups = success(&app.get("/api/v3/contact-groups", &owner.key).await, 200);
    assert_eq!(pagination(&groups).3, 0);
}

#[actix_web::test]
async fn a_removed_permission_is_refused_on_the_very_next_request() {
    let app = spawn().await;
    let a = app.account("contacts.view,contacts.create,contacts.edit").await;
    let group = make_group(&app, &a.key, json!({"name": "G"})).await;
    let c = make_contact(&app, &a.key, &group, json!({"PHONE": tz(1)})).await;
    success(&app.patch(&contact_path(&group, &c), &a.key, json!({"name": "Before"})).await, 200);

    app.set_permissions(a.user, "contacts.view").await;
    error(&app.post(&contacts_path(&group), &a.key, json!({"PHONE": tz(2)})).await, 403);
    error(&app.patch(&contact_path(&group, &c), &a.key, json!({"name": "After"})).await, 403);
    error(&app.post("/api/v3/contact-groups", &a.key, json!({"name": "G2"})).await, 403);
    assert_eq!(success(&app.get(&contact_path(&group, &c), &a.key).await, 200)["name"], "Before");

    app.set_permissions(a.user, "contacts.create").await;
    error(&app.get(&contacts_path(&group), &a.key).await, 403);
    error(&app.get("/api/v3/contacts", &a.key).await, 403);

    // And granting applies just as fast.
    app.set_permissions(a.user, "contacts.view,contacts.import").await;
    success(&app.post(&batch_path(&group), &a.key, json!({"contacts": [{"PHONE": tz(2)}]})).await, 200);
    assert_eq!(pagination(&success(&app.get(&contacts_path(&group), &a.key).await, 200)).3, 2);
}

// --- tenant isolation ------------------------------------------------------------------------------------

#[actix_web::test]
async fn another_tenants_groups_and_contacts_are_404_on_every_route_and_stay_unchanged() {
    let app = spawn().await;
    let a = app.account("all").await;
    let b = app.account("all").await;
    assert_ne!(a.tenant, b.tenant);
    let ga = make_group(&app, &a.key, json!({"name": "A's group", "custom_fields": ["city"]})).await;
    let ca = make_contact(&app, &a.key, &ga, json!({"PHONE": tz(1), "name": "Asha of A", "city": "Arusha"})).await;
    let ca2 =
        make_contact(&app, &a.key, &ga, json!({"PHONE": tz(2), "name": "Baraka of A", "is_subscribed": false})).await;
    let gb = make_group(&app, &b.key, json!({"name": "B's group"})).await;
    let cb = make_contact(&app, &b.key, &gb, json!({"PHONE": tz(3), "name": "Bibi of B"})).await;
    let ga_before = success(&app.get(&groups_path(&ga), &a.key).await, 200);

    let ga_uid = ga["uid"].as_str().expect("string").to_owned();
    for g in [ga["id"].to_string(), ga_uid.clone()] {
        let base = format!("/api/v3/contact-groups/{g}");
        error(&app.get(&base, &b.key).await, 404);
        error(
            &app.patch(&base, &b.key, json!({"name": "Taken", "status": "inactive", "custom_fields": []})).await,
            404,
        );
        error(&app.delete(&base, &b.key).await, 404);
        error(&app.delete(&format!("{base}?force=true"), &b.key).await, 404);
        error(&app.get(&format!("{base}/contacts"), &b.key).await, 404);
        error(&app.get(&format!("{base}/contacts?search=asha"), &b.key).await, 404);
        error(&app.post(&format!("{base}/contacts"), &b.key, json!({"PHONE": tz(9), "name": "Intruder"})).await, 404);
        let rows = json!({"contacts": [{"PHONE": tz(1), "name": "Overwrite"}, {"PHONE": tz(9)}]});
        error(&app.post(&format!("{base}/contacts/batch"), &b.key, rows).await, 404);
        for contact in [ca["uid"].as_str().expect("string").to_owned(), ca["id"].to_string()] {
            let path = format!("{base}/contacts/{contact}");
            error(&app.get(&path, &b.key).await, 404);
            error(&app.patch(&path, &b.key, json!({"name": "Taken", "city": null, "PHONE": tz(8)})).await, 404);
            error(&app.delete(&path, &b.key).await, 404);
        }
        error(&app.get(&format!("/api/v3/contacts?group_id={g}"), &b.key).await, 404);
        error(&app.get(&format!("/api/v3/contacts?group_id={g}&q=asha"), &b.key).await, 404);
    }
    // A's contact through B's own group is not found either.
    for contact in [ca["uid"].as_str().expect("string").to_owned(), ca["id"].to_string()] {
        let path = format!("{}/{contact}", contacts_path(&gb));
        error(&app.get(&path, &b.key).await, 404);
        error(&app.patch(&path, &b.key, json!({"name": "Taken"})).await, 404);
        error(&app.delete(&path, &b.key).await, 404);
    }
    // B's lists never show A's data.
    let b_groups = success(&app.get("/api/v3/contact-groups", &b.key).await, 200);
    assert_eq!(items(&b_groups).iter().map(|g| g["id"].clone()).collect::<Vec<_>>(), vec![gb["id"].clone()]);
    let b_all = success(&app.get("/api/v3/contacts", &b.key).await, 200);
    assert_eq!(uids(&b_all), vec![cb["uid"].as_str().expect("string").to_owned()]);
    assert_eq!(pagination(&b_all).3, 1);
    for q in ["asha", "of", tz_national(1).as_str(), "255712", "Baraka"] {
        let res = success(&app.get(&format!("/api/v3/contacts?q={q}"), &b.key).await, 200);
        assert!(
            items(&res).iter().all(|c| c["uid"] != ca["uid"] && c["uid"] != ca2["uid"]),
            "B's search {q:?} shows A's contacts: {res}"
        );
    }
    let b_list = success(&app.get(&contacts_path(&gb), &b.key).await, 200);
    assert_eq!(pagination(&b_list).3, 1);

    // A sees everything exactly as before.
    let ga_after = success(&app.get(&groups_path(&ga), &a.key).await, 200);
    assert_eq!(ga_after, ga_before);
    assert_eq!(success(&app.get(&contact_path(&ga, &ca), &a.key).await, 200), ca);
    assert_eq!(success(&app.get(&contact_path(&ga, &ca2), &a.key).await, 200), ca2);
    let a_list = success(&app.get(&contacts_path(&ga), &a.key).await, 200);
    assert_eq!(pagination(&a_list).3, 2);
    let a_all = success(&app.get("/api/v3/contacts", &a.key).await, 200);
    assert_eq!(pagination(&a_all).3, 2);
    // And B's one contact was not touched by any of it.
    assert_eq!(success(&app.get(&contact_path(&gb, &cb), &b.key).await, 200), cb);
}
