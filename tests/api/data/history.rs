//! Record history (contract: Data tables; docs/api.md "Data tables", History): created, updated
//! and deleted entries newest first with their changes, readable after deletion, pages of 50
//! through `before`, and masked columns without values.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{TestApp, json, spawn};
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use super::support::*;

/// `GET .../history{query}`, 200 expected: the page.
async fn history<S, B>(app: &TestApp<S>, key: &str, table: Uuid, record: &str, query: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("{}{query}", history_path(table, record)), key).await;
    assert_status(&res, 200);
    res.body.clone()
}

#[track_caller]
fn entries(page: &Value) -> &Vec<Value> {
    page["entries"].as_array().unwrap_or_else(|| panic!("entries in {page}"))
}

#[track_caller]
fn actions(page: &Value) -> Vec<String> {
    entries(page).iter().map(|e| e["action"].as_str().unwrap_or_else(|| panic!("action in {e}")).to_owned()).collect()
}

/// The entry's change of `column`, if it lists one.
fn change<'a>(entry: &'a Value, column: &str) -> Option<&'a Value> {
    entry["changes"].as_array().and_then(|changes| changes.iter().find(|c| c["column"] == column))
}

#[track_caller]
fn time_of(value: &Value) -> OffsetDateTime {
    let text = value.as_str().unwrap_or_else(|| panic!("a time string: {value}"));
    OffsetDateTime::parse(text, &Rfc3339).unwrap_or_else(|e| panic!("RFC 3339 {text}: {e}"))
}

#[actix_web::test]
async fn history_lists_create_update_and_delete_newest_first_with_their_changes() {
    // Proves the entries' members (action, at, source, actor, changes with labels and from/to),
    // the newest-first order, the `columns` labels, and that history is read after deletion.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let made = create(&app, key, crm.customers, json!({"name": "Asha", "phone": "0712 345 678"})).await;
    let id = record_id(&made);

    let page = history(&app, key, crm.customers, &id, "").await;
    assert_eq!(actions(&page), ["created"], "{page}");
    let created = &entries(&page)[0];
    assert_eq!(
        change(created, "name"),
        Some(&json!({"column": "name", "label": "Name", "from": null, "to": "Asha"})),
        "{created}"
    );
    assert_eq!(change(created, "phone").map(|c| (&c["from"], &c["to"])), Some((&Value::Null, &json!("+255712345678"))));
    assert_eq!(created["source"], "api");
    assert_eq!(created["actor"]["kind"], "api_key", "{created}");
    assert_eq!(created["actor"]["name"], "Test key", "{created}");
    assert!(!created["actor"]["id"].is_null(), "{created}");
    assert!(created["id"].is_string() || created["id"].is_number(), "{created}");
    assert_eq!(time_of(&created["at"]), time_of(&made["created_at"]));
    assert_eq!(page["has_more"], false);
    assert!(page["next_before"].is_null(), "{page}");
    let columns = page["columns"].as_array().unwrap_or_else(|| panic!("columns in {page}"));
    assert!(columns.contains(&json!({"key": "name", "label": "Name"})), "{page}");
    assert!(columns.contains(&json!({"key": "phone", "label": "Phone"})), "{page}");
    assert!(columns.contains(&json!({"key": "stage", "label": "Stage"})), "{page}");

    app.clock.advance(time::Duration::minutes(1));
    let res = app
        .patch(&record_path(crm.customers, &id), key, json!({"data": {"phone": "0712 345 679", "notes": "Call back"}}))
        .await;
    assert_status(&res, 200);
    app.clock.advance(time::Duration::minutes(1));
    assert_status(&app.delete(&record_path(crm.customers, &id), key).await, 200);

    // Read after the delete, newest first.
    let page = history(&app, key, crm.customers, &id, "").await;
    assert_eq!(actions(&page), ["deleted", "updated", "created"], "{page}");
    let updated = &entries(&page)[1];
    let mut changes: Vec<Value> =
        updated["changes"].as_array().unwrap_or_else(|| panic!("changes in {updated}")).clone();
    changes.sort_by_key(|c| c["column"].as_str().unwrap_or_default().to_owned());
    assert_eq!(
        changes,
        [
            json!({"column": "notes", "label": "Notes", "from": null, "to": "Call back"}),
            json!({"column": "phone", "label": "Phone", "from": "+255712345678", "to": "+255712345679"}),
        ],
        "only what changed: {updated}"
    );
    let times: Vec<OffsetDateTime> = entries(&page).iter().map(|e| time_of(&e["at"])).collect();
    assert!(times[0] > times[1] && times[1] > times[2], "newest first: {page}");
    let ids: Vec<&Value> = entries(&page).iter().map(|e| &e["id"]).collect();
    assert!(ids[0] != ids[1] && ids[1] != ids[2], "{page}");
}

#[actix_web::test]
async fn history_pages_by_50_through_next_before() {
    // 1 create and 55 updates: a first page of the 50 newest with `has_more` and
    // `next_before`, then the 6 oldest, without repeats or gaps.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let id = record_id(&create(&app, key, crm.customers, json!({"name": "Asha"})).await);
    for i in 0..55 {
        let res = app.patch(&record_path(crm.customers, &id), key, json!({"data": {"notes": format!("n{i}")}})).await;
        assert_status(&res, 200);
    }

    let first = history(&app, key, crm.customers, &id, "").await;
    assert_eq!(entries(&first).len(), 50, "{first}");
    assert_eq!(first["has_more"], true);
    let notes_to = |entry: &Value| change(entry, "notes").map(|c| c["to"].clone()).unwrap_or(Value::Null);
    assert_eq!(notes_to(&entries(&first)[0]), json!("n54"));
    assert_eq!(notes_to(&entries(&first)[49]), json!("n5"));
    let before = match &first["next_before"] {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => panic!("next_before on a page with more: {other}"),
    };

    let second = history(
        &app,
        key,
        crm.customers,
        &id,
        &format!("?{}", serde_urlencoded::to_string([("before", &before)]).expect("query")),
    )
    .await;
    assert_eq!(actions(&second), ["updated", "updated", "updated", "updated", "updated", "created"], "{second}");
    assert_eq!(notes_to(&entries(&second)[0]), json!("n4"));
    assert_eq!(notes_to(&entries(&second)[4]), json!("n0"));
    assert_eq!(second["has_more"], false);
    assert!(second["next_before"].is_null(), "{second}");

    let mut ids: Vec<String> = entries(&first).iter().chain(entries(&second)).map(|e| e["id"].to_string()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 56, "no repeats");

    // `limit` (or `per_page`) sizes a page within the cap of 100
    let small = history(&app, key, crm.customers, &id, "?limit=2&per_page=9").await;
    assert_eq!(entries(&small).len(), 2, "{small}");
    assert_eq!(notes_to(&entries(&small)[1]), json!("n53"));
    let next = small["next_before"].to_string();
    let after = history(&app, key, crm.customers, &id, &format!("?per_page=2&before={next}")).await;
    assert_eq!(entries(&after).iter().map(notes_to).collect::<Vec<_>>(), [json!("n52"), json!("n51")]);
    let all = history(&app, key, crm.customers, &id, "?limit=1000").await;
    assert_eq!(entries(&all).len(), 56, "one page of at most 100");
    assert_eq!(all["has_more"], false);
}

#[actix_web::test]
async fn masked_columns_show_no_values_in_history() {
    // A reader without `data.customers.pii` sees email changes with from/to null and
    // `masked: true`; other columns keep their values; the editor sees the addresses.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let viewer = app.user(crm.account.tenant, VIEWER).await;
    let viewer = app.key(crm.account.tenant, viewer).await;
    let id = record_id(&create(&app, key, crm.customers, json!({"name": "Asha", "email": "asha@example.com"})).await);
    let res = app
        .patch(
            &record_path(crm.customers, &id),
            key,
            json!({"data": {"email": "asha.juma@example.com", "notes": "moved"}}),
        )
        .await;
    assert_status(&res, 200);

    let page = history(&app, &viewer, crm.customers, &id, "").await;
    assert_eq!(actions(&page), ["updated", "created"]);
    for entry in entries(&page) {
        let email = change(entry, "email").unwrap_or_else(|| panic!("the email change is listed: {entry}"));
        assert_eq!(
            (&email["from"], &email["to"], &email["masked"]),
            (&Value::Null, &Value::Null, &json!(true)),
            "{entry}"
        );
    }
    assert!(!page.to_string().contains("example.com"), "no address leaks: {page}");
    assert_eq!(change(&entries(&page)[0], "notes").map(|c| c["to"].clone()), Some(json!("moved")));
    assert_eq!(change(&entries(&page)[1], "name").map(|c| c["to"].clone()), Some(json!("Asha")));

    let page = history(&app, key, crm.customers, &id, "").await;
    let email = change(&entries(&page)[0], "email").unwrap_or_else(|| panic!("email change: {page}"));
    assert_eq!((&email["from"], &email["to"]), (&json!("asha@example.com"), &json!("asha.juma@example.com")));
    assert_ne!(email["masked"], json!(true), "{page}");
}

#[actix_web::test]
async fn history_of_an_unknown_record_is_not_found() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let agent = record_id(&create(&app, key, crm.agents, json!({"name": "Juma"})).await);
    for record in [Uuid::new_v4().to_string(), agent.clone(), "nope".to_owned()] {
        assert_data_error(&app.get(&history_path(crm.customers, &record), key).await, 404, "not_found");
    }
    // The agent's own history is there under its table.
    let page = history(&app, key, crm.agents, &agent, "").await;
    assert_eq!(actions(&page), ["created"]);
}
