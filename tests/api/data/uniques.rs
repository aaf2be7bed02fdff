//! Unique values (docs/api.md "Data tables", Defining tables and Records): unique columns and
//! unique sets answer 409 `conflict` naming the field, compare text without case and phones
//! after normalizing, ignore deleted records and incomplete sets, and hold under concurrent
//! writes.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Resp, TestApp, join_all, json, spawn};
use serde_json::Value;
use uuid::Uuid;

use super::support::*;

/// A 409 `conflict` naming `field` (in `error.field` and among `errors`).
#[track_caller]
fn assert_conflict(res: &Resp, field: &str) {
    assert_data_error(res, 409, "conflict");
    assert_eq!(res.body["error"]["field"], field, "{}", res.body);
    assert_eq!(res.body["error"]["retryable"], false, "{}", res.body);
    assert!(res.body["errors"][field].as_array().is_some_and(|m| !m.is_empty()), "errors.{field} in {}", res.body);
}

/// How many live records the table lists.
async fn count<S, B>(app: &TestApp<S>, key: &str, table: Uuid) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&list_path(table, &[("with_count", "1")]), key).await;
    assert_status(&res, 200);
    res.body["count"].as_i64().unwrap_or_else(|| panic!("count in {}", res.body))
}

#[actix_web::test]
async fn a_unique_column_refuses_a_second_record_with_its_value() {
    // Proves the 409 naming `phone`, that values compare after normalizing (two spellings of
    // one number), that nothing is created, and that uniqueness is per table and tenant.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    create(&app, key, crm.customers, json!({"name": "Asha", "phone": "0712 000 001"})).await;

    for spelling in ["0712 000 001", "+255712000001", "+255 712 000 001"] {
        let res = post_data(&app, key, crm.customers, json!({"name": "Baraka", "phone": spelling})).await;
        assert_conflict(&res, "phone");
    }
    assert_eq!(count(&app, key, crm.customers).await, 1);
    // Another number, no number at all (twice) are fine.
    create(&app, key, crm.customers, json!({"name": "Baraka", "phone": "0712 000 002"})).await;
    create(&app, key, crm.customers, json!({"name": "Chausiku"})).await;
    create(&app, key, crm.customers, json!({"name": "Daudi"})).await;

    // Another tenant may hold the same number.
    let other = crm_with(&app, EDITOR).await;
    create(&app, &other.account.key, other.customers, json!({"name": "Asha", "phone": "0712 000 001"})).await;
}

#[actix_web::test]
async fn a_unique_set_conflicts_only_when_every_member_matches() {
    // Proves the set `name+joined`: the same pair (name in another case) is a 409 naming the
    // set; another date, or a record without a date, is not enforced against.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    create(&app, key, crm.customers, json!({"name": "Asha Juma", "joined": "2026-11-01"})).await;

    for name in ["Asha Juma", "ASHA JUMA", "  asha juma "] {
        let res = post_data(&app, key, crm.customers, json!({"name": name, "joined": "2026-11-01"})).await;
        assert_conflict(&res, "name+joined");
    }
    create(&app, key, crm.customers, json!({"name": "Asha Juma", "joined": "2026-11-02"})).await;
    create(&app, key, crm.customers, json!({"name": "Asha Juma"})).await;
    create(&app, key, crm.customers, json!({"name": "Asha Juma"})).await;
    assert_eq!(count(&app, key, crm.customers).await, 4);
}

#[actix_web::test]
async fn unique_text_and_email_compare_without_case() {
    let app = spawn().await;
    let account = app.account(EDITOR).await;
    let applied = apply(
        &app,
        &account,
        json!({"group": {"slug": "club", "name": "Club"},
               "tables": [{"slug": "members", "name": "Members", "columns": [
                   {"key": "code", "type": "text", "unique": true},
                   {"key": "login", "type": "email", "unique": true}]}]}),
    )
    .await;
    let members = applied.tables[0].id;
    let key = &account.key;
    create(&app, key, members, json!({"code": "AB-1", "login": "Asha@Example.com"})).await;
    assert_conflict(&post_data(&app, key, members, json!({"code": "ab-1"})).await, "code");
    assert_conflict(&post_data(&app, key, members, json!({"code": " Ab-1 "})).await, "code");
    assert_conflict(&post_data(&app, key, members, json!({"login": "ASHA@example.COM"})).await, "login");
    create(&app, key, members, json!({"code": "AB-2", "login": "baraka@example.com"})).await;
    assert_eq!(count(&app, key, members).await, 2);
}

#[actix_web::test]
async fn a_deleted_record_frees_its_unique_values() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let first =
        create(&app, key, crm.customers, json!({"name": "Asha", "phone": "0712 000 001", "joined": "2026-11-01"}))
            .await;
    assert_conflict(
        &post_data(&app, key, crm.customers, json!({"name": "Other", "phone": "0712 000 001"})).await,
        "phone",
    );
    assert_conflict(
        &post_data(&app, key, crm.customers, json!({"name": "Asha", "joined": "2026-11-01"})).await,
        "name+joined",
    );

    assert_status(&app.delete(&record_path(crm.customers, &record_id(&first)), key).await, 200);
    let again =
        create(&app, key, crm.customers, json!({"name": "Asha", "phone": "+255712000001", "joined": "2026-11-01"}))
            .await;
    assert_eq!(again["data"]["phone"], "+255712000001");
    // The new holder is protected in turn.
    assert_conflict(
        &post_data(&app, key, crm.customers, json!({"name": "Third", "phone": "0712000001"})).await,
        "phone",
    );
}

#[actix_web::test]
async fn patch_into_a_taken_value_is_a_conflict_and_changes_nothing() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    create(&app, key, crm.customers, json!({"name": "Asha", "phone": "0712 000 001", "joined": "2026-11-01"})).await;
    let second =
        create(&app, key, crm.customers, json!({"name": "Baraka", "phone": "0712 000 002", "joined": "2026-11-01"}))
            .await;
    let id = record_id(&second);

    let res = patch_data(&app, key, crm.customers, &id, json!({"phone": "0712000001", "notes": "moved"})).await;
    assert_conflict(&res, "phone");
    let res = patch_data(&app, key, crm.customers, &id, json!({"name": "asha"})).await;
    assert_conflict(&res, "name+joined");
    let res = app.get(&record_path(crm.customers, &id), key).await;
    assert_status(&res, 200);
    let data = &res.body["record"]["data"];
    assert_eq!(
        (&data["name"], &data["phone"], &data["notes"]),
        (&json!("Baraka"), &json!("+255712000002"), &Value::Null)
    );

    // A record's own values are no conflict with itself.
    let res = patch_data(&app, key, crm.customers, &id, json!({"phone": "+255712000002", "name": "BARAKA"})).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["name"], "BARAKA");
    // A freed value can be taken by a PATCH.
    let res = patch_data(&app, key, crm.customers, &id, json!({"phone": "0712 000 003"})).await;
    assert_status(&res, 200);
    create(&app, key, crm.customers, json!({"name": "Chausiku", "phone": "0712 000 002"})).await;
}

#[actix_web::test]
async fn concurrent_creates_of_one_phone_let_exactly_one_win() {
    // Eight creates of the same number in flight at once over the pool's connections: one is
    // created, the seven others are 409 `conflict` on `phone`, and one record exists.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let path = records_path(crm.customers);
    let racing: Vec<_> = (0..8)
        .map(|i| app.post(&path, key, json!({"data": {"name": format!("Racer {i}"), "phone": "0712 555 000"}})))
        .collect();
    let answers = join_all(racing).await;

    let created = answers.iter().filter(|r| r.status == 201).count();
    assert_eq!(created, 1, "{:?}", answers.iter().map(|r| (r.status, &r.body)).collect::<Vec<_>>());
    for refused in answers.iter().filter(|r| r.status != 201) {
        assert_conflict(refused, "phone");
    }
    assert_eq!(count(&app, key, crm.customers).await, 1);
}

#[actix_web::test]
async fn concurrent_patches_into_one_phone_let_exactly_one_win() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let mut ids = Vec::new();
    for i in 0..6 {
        ids.push(record_id(&create(&app, key, crm.customers, json!({"name": format!("Racer {i}")})).await));
    }
    let paths: Vec<String> = ids.iter().map(|id| record_path(crm.customers, id)).collect();
    let racing: Vec<_> = paths.iter().map(|p| app.patch(p, key, json!({"data": {"phone": "0712 555 001"}}))).collect();
    let answers = join_all(racing).await;

    let won = answers.iter().filter(|r| r.status == 200).count();
    assert_eq!(won, 1, "{:?}", answers.iter().map(|r| (r.status, &r.body)).collect::<Vec<_>>());
    for refused in answers.iter().filter(|r| r.status != 200) {
        assert_conflict(refused, "phone");
    }
    let filter = json!({"all": [{"column": "phone", "op": "equals", "value": "+255712555001"}]}).to_string();
    let res = app.get(&list_path(crm.customers, &[("filter", &filter), ("with_count", "1")]), key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["count"], json!(1), "{}", res.body);
}
