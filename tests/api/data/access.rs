//! Access (contract: Authentication; Data tables; Errors, data envelope and codes; docs/api.md
//! "Data tables", Access and Envelope): the data envelope of refusals, `data.view`, hidden
//! tables, write permissions and table write grants, masked columns, legacy keys, deactivated
//! issuers and tenant isolation.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Resp, TestApp, json, spawn};
use serde_json::Value;
use uuid::Uuid;

use super::support::*;
use crate::framework::assert_error;

/// Reads and writes, without the PII permission.
const WRITER: &str = "data.view,data.records.edit";

/// A group with an ordinary table, a table only `data.secret` may read, and one only
/// `data.special` may write.
fn guarded() -> Value {
    json!({
        "group": {"slug": "ops", "name": "Operations"},
        "tables": [
            {"slug": "notes", "name": "Notes", "columns": [{"key": "text", "type": "text"}]},
            {"slug": "vault", "name": "Vault", "access": {"read": "data.secret"},
             "columns": [{"key": "text", "type": "text"}, {"key": "level", "type": "status", "config": {
                 "states": [{"key": "low"}, {"key": "high"}], "moves": [{"from": "low", "to": "high"}]}}]},
            {"slug": "ledger", "name": "Ledger", "access": {"write": "data.special"},
             "columns": [{"key": "text", "type": "text"}]}
        ]
    })
}

struct Guarded {
    notes: Uuid,
    vault: Uuid,
    ledger: Uuid,
}

async fn guarded_for<S, B>(app: &TestApp<S>, crm: &Crm) -> Guarded
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let applied = apply(app, &crm.account, guarded()).await;
    let table = |slug: &str| applied.tables.iter().find(|t| t.slug == slug).expect("table").id;
    Guarded { notes: table("notes"), vault: table("vault"), ledger: table("ledger") }
}

/// A key of the tenant with `permissions`.
async fn key_with<S, B>(app: &TestApp<S>, crm: &Crm, permissions: &str) -> String
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let user = app.user(crm.account.tenant, permissions).await;
    app.key(crm.account.tenant, user).await
}

/// The slugs `GET /data/tables` shows this caller.
async fn visible<S, B>(app: &TestApp<S>, key: &str) -> Vec<String>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(TABLES, key).await;
    assert_status(&res, 200);
    res.body["tables"]
        .as_array()
        .unwrap_or_else(|| panic!("tables in {}", res.body))
        .iter()
        .map(|t| t["slug"].as_str().unwrap_or_else(|| panic!("slug in {t}")).to_owned())
        .collect()
}

/// Every route of a table and one of its records: (method, path, body); writes send `data`,
/// valid for the table, so only access decides the answer.
fn routes(table: Uuid, record: &str, data: Value) -> Vec<(&'static str, String, Option<Value>)> {
    vec![
        ("GET", schema_path(table), None),
        ("GET", states_path(table), None),
        ("GET", records_path(table), None),
        ("POST", records_path(table), Some(json!({ "data": data.clone() }))),
        ("GET", record_path(table, record), None),
        ("PATCH", record_path(table, record), Some(json!({ "data": data }))),
        ("DELETE", record_path(table, record), None),
        ("GET", history_path(table, record), None),
    ]
}

/// Each route answers 404 `not_found` in the data envelope for `key`.
async fn all_not_found<S, B>(app: &TestApp<S>, key: &str, routes: Vec<(&'static str, String, Option<Value>)>)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let mut wrong = Vec::new();
    for (method, path, body) in routes {
        let res = app.request(method, &path, Some(key), body).await;
        if res.status != 404 || res.body["code"] != "not_found" || res.body["error"]["code"] != "not_found" {
            wrong.push(format!("{method} {path}: {} {}", res.status, res.body));
        }
    }
    assert!(wrong.is_empty(), "expected 404 not_found on every route:\n{}", wrong.join("\n"));
}

/// The `errors` member, repeated at the top, equals `error.errors`.
#[track_caller]
fn assert_errors_repeated(res: &Resp) {
    assert!(res.body["errors"].is_object(), "errors: {}", res.body);
    assert_eq!(res.body["errors"], res.body["error"]["errors"], "{}", res.body);
    assert_eq!(res.body["message"], res.body["error"]["message"], "{}", res.body);
}

#[actix_web::test]
async fn refusals_use_the_data_envelope_for_each_code() {
    // 422, 409, 404 and 403 of the data service: `{error:{code, message, retryable, ...},
    // message, code, errors?}`, not retryable; `field` inside `error`; `errors` repeated.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let viewer = key_with(&app, &crm, VIEWER).await;
    create(&app, key, crm.customers, json!({"name": "Asha", "phone": "0712 000 001"})).await;

    let res = app.post(&records_path(crm.customers), key, json!({"data": {"name": "Baraka", "score": 500}})).await;
    assert_data_error(&res, 422, "validation_error");
    assert_eq!(res.body["error"]["retryable"], false);
    assert_errors_repeated(&res);
    assert!(res.body["errors"]["score"].as_array().is_some_and(|m| !m.is_empty()), "{}", res.body);

    let res =
        app.post(&records_path(crm.customers), key, json!({"data": {"name": "Baraka", "phone": "0712000001"}})).await;
    assert_data_error(&res, 409, "conflict");
    assert_eq!(res.body["error"]["retryable"], false);
    assert_eq!(res.body["error"]["field"], "phone");
    assert!(res.body.get("field").is_none(), "extra members stay inside error: {}", res.body);
    assert_errors_repeated(&res);
    assert!(res.body["message"].as_str().is_some_and(|m| m.contains("phone")), "{}", res.body);

    let res = app.get(&record_path(crm.customers, &Uuid::new_v4().to_string()), key).await;
    assert_data_error(&res, 404, "not_found");
    assert_eq!(res.body["error"]["retryable"], false);

    let res = app.post(&records_path(crm.customers), &viewer, json!({"data": {"name": "Chausiku"}})).await;
    assert_data_error(&res, 403, "permission_denied");
    assert_eq!(res.body["error"]["retryable"], false);
    assert!(res.body["message"].as_str().is_some_and(|m| m.contains("data.records.edit")), "names it: {}", res.body);

    // Failures before the service keep the v3 envelope: no key.
    let res = app.request("GET", TABLES, None, None).await;
    assert_error(&res, 401);
}

#[actix_web::test]
async fn data_view_is_needed_on_every_data_route() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let record = record_id(&create(&app, &crm.account.key, crm.customers, json!({"name": "Asha"})).await);
    for permissions in ["data.records.edit,data.customers.pii,data.customers.close", "contacts.view"] {
        let key = key_with(&app, &crm, permissions).await;
        let mut paths = vec![("GET", TABLES.to_owned(), None)];
        paths.extend(routes(crm.customers, &record, json!({"name": "Baraka"})));
        for (method, path, body) in paths {
            let res = app.request(method, &path, Some(key.as_str()), body).await;
            assert_data_error(&res, 403, "permission_denied");
            assert!(
                res.body["message"].as_str().is_some_and(|m| m.contains("data.view")),
                "{method} {path}: {}",
                res.body
            );
        }
    }
    // Nothing was written or deleted.
    let res = app.get(&record_path(crm.customers, &record), &crm.account.key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["name"], "Asha");
}

#[actix_web::test]
async fn a_table_the_caller_may_not_read_is_not_found_everywhere() {
    // `vault` needs `data.secret`: without it, the list leaves it out and every route answers
    // 404 like a missing table; with it, the same routes work.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let tables = guarded_for(&app, &crm).await;
    let holder = key_with(&app, &crm, "data.view,data.records.edit,data.secret").await;
    let record = record_id(&create(&app, &holder, tables.vault, json!({"text": "combination"})).await);

    let mut seen = visible(&app, &crm.account.key).await;
    seen.sort();
    assert_eq!(seen, ["agents", "customers", "ledger", "notes"]);
    all_not_found(&app, &crm.account.key, routes(tables.vault, &record, json!({"text": "x"}))).await;
    // Nothing changed behind the 404s.
    let res = app.get(&record_path(tables.vault, &record), &holder).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["text"], "combination");

    assert!(visible(&app, &holder).await.contains(&"vault".to_owned()));
    for (method, path, body) in routes(tables.vault, &record, json!({"text": "x"})) {
        let res = app.request(method, &path, Some(holder.as_str()), body).await;
        let expected = if method == "POST" { 201 } else { 200 };
        assert_eq!(res.status, expected, "{method} {path}: {}", res.body);
    }
}

#[actix_web::test]
async fn writes_need_data_records_edit() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let viewer = key_with(&app, &crm, "data.view,data.customers.pii,data.customers.close").await;
    let record = record_id(&create(&app, &crm.account.key, crm.customers, json!({"name": "Asha"})).await);

    let res = app.post(&records_path(crm.customers), &viewer, json!({"data": {"name": "Baraka"}})).await;
    assert_data_error(&res, 403, "permission_denied");
    let res = app.patch(&record_path(crm.customers, &record), &viewer, json!({"data": {"notes": "x"}})).await;
    assert_data_error(&res, 403, "permission_denied");
    assert_data_error(&app.delete(&record_path(crm.customers, &record), &viewer).await, 403, "permission_denied");

    // Reads still work, and nothing changed.
    let res = app.get(&list_path(crm.customers, &[("with_count", "1")]), &viewer).await;
    assert_status(&res, 200);
    assert_eq!(res.body["count"], json!(1));
    let res = app.get(&record_path(crm.customers, &record), &viewer).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["notes"], Value::Null);
}

#[actix_web::test]
async fn a_table_write_grant_is_needed_to_write_that_table() {
    // `ledger` has `access.write: data.special`: an editor without it reads but cannot write
    // (403); with it, writes succeed. Other tables need no such grant.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let tables = guarded_for(&app, &crm).await;
    let special = key_with(&app, &crm, "data.view,data.records.edit,data.special").await;
    let record = record_id(&create(&app, &special, tables.ledger, json!({"text": "entry"})).await);
    let key = &crm.account.key;

    let res = app.post(&records_path(tables.ledger), key, json!({"data": {"text": "mine"}})).await;
    assert_data_error(&res, 403, "permission_denied");
    assert!(res.body["message"].as_str().is_some_and(|m| m.contains("data.special")), "{}", res.body);
    let res = app.patch(&record_path(tables.ledger, &record), key, json!({"data": {"text": "changed"}})).await;
    assert_data_error(&res, 403, "permission_denied");
    assert_data_error(&app.delete(&record_path(tables.ledger, &record), key).await, 403, "permission_denied");
    let res = app.get(&record_path(tables.ledger, &record), key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["text"], "entry");
    create(&app, key, tables.notes, json!({"text": "fine"})).await;

    // The grant is not enough without data.records.edit.
    let only_special = key_with(&app, &crm, "data.view,data.special").await;
    let res = app.post(&records_path(tables.ledger), &only_special, json!({"data": {"text": "x"}})).await;
    assert_data_error(&res, 403, "permission_denied");

    let res = app.patch(&record_path(tables.ledger, &record), &special, json!({"data": {"text": "changed"}})).await;
    assert_status(&res, 200);
    assert_status(&app.delete(&record_path(tables.ledger, &record), &special).await, 200);
}

#[actix_web::test]
async fn a_masked_column_reads_as_null_and_is_listed_in_masked() {
    // Without `data.customers.pii` the email reads as null on the record, in lists and on the
    // create's answer, and `masked` lists it; the schema marks it; the editor reads it.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let writer = key_with(&app, &crm, WRITER).await;
    let made =
        create(&app, &crm.account.key, crm.customers, json!({"name": "Asha", "email": "asha@example.com"})).await;
    assert_eq!(made["data"]["email"], "asha@example.com");
    assert_eq!(made["masked"], json!([]));
    let id = record_id(&made);

    let res = app.get(&record_path(crm.customers, &id), &writer).await;
    assert_status(&res, 200);
    let record = &res.body["record"];
    assert_eq!(record["data"]["email"], Value::Null, "{record}");
    assert_eq!(record["masked"], json!(["email"]), "{record}");
    assert_eq!(record["data"]["name"], "Asha");
    assert_eq!(record["title"], "Asha");

    let res = app.get(&records_path(crm.customers), &writer).await;
    assert_status(&res, 200);
    assert_eq!(res.body["records"][0]["data"]["email"], Value::Null, "{}", res.body);
    assert_eq!(res.body["records"][0]["masked"], json!(["email"]), "{}", res.body);
    assert!(!res.body.to_string().contains("asha@example.com"), "{}", res.body);

    // A write of other columns by the masked caller answers with the column still masked and
    // leaves it as it was.
    let res = app.patch(&record_path(crm.customers, &id), &writer, json!({"data": {"notes": "called"}})).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["email"], Value::Null);
    let made = create(&app, &writer, crm.customers, json!({"name": "Baraka"})).await;
    assert_eq!(made["masked"], json!(["email"]), "{made}");
    let res = app.get(&record_path(crm.customers, &id), &crm.account.key).await;
    assert_eq!(res.body["record"]["data"]["email"], "asha@example.com", "{}", res.body);

    let res = app.get(&schema_path(crm.customers), &writer).await;
    assert_status(&res, 200);
    let columns = res.body["columns"].as_array().unwrap_or_else(|| panic!("columns in {}", res.body));
    let email = columns.iter().find(|c| c["key"] == "email").expect("email column");
    assert_eq!(email["masked"], true, "{email}");
    let name = columns.iter().find(|c| c["key"] == "name").expect("name column");
    assert_eq!(name["masked"], false, "{name}");
}

#[actix_web::test]
async fn a_masked_column_cannot_be_written_filtered_sorted_or_searched() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let writer = key_with(&app, &crm, WRITER).await;
    let id = record_id(
        &create(&app, &crm.account.key, crm.customers, json!({"name": "Asha", "email": "asha@example.com"})).await,
    );

    let res = app
        .post(&records_path(crm.customers), &writer, json!({"data": {"name": "Baraka", "email": "b@example.com"}}))
        .await;
    assert_data_error(&res, 403, "permission_denied");
    let res =
        app.patch(&record_path(crm.customers, &id), &writer, json!({"data": {"email": "other@example.com"}})).await;
    assert_data_error(&res, 403, "permission_denied");
    let res = app.patch(&record_path(crm.customers, &id), &writer, json!({"data": {"email": null}})).await;
    assert_data_error(&res, 403, "permission_denied");

    let filter = json!({"all": [{"column": "email", "op": "equals", "value": "asha@example.com"}]}).to_string();
    let res = app.get(&list_path(crm.customers, &[("filter", &filter)]), &writer).await;
    assert_data_error(&res, 403, "permission_denied");
    let nested = json!({"any": [{"column": "name", "op": "equals", "value": "Asha"},
                                {"all": [{"column": "email", "op": "is_empty"}]}]})
    .to_string();
    let res = app.get(&list_path(crm.customers, &[("filter", &nested)]), &writer).await;
    assert_data_error(&res, 403, "permission_denied");
    let res = app.get(&list_path(crm.customers, &[("sort", "email")]), &writer).await;
    assert_data_error(&res, 403, "permission_denied");
    // email is among the search columns (name, phone, email, notes).
    let res = app.get(&list_path(crm.customers, &[("q", "asha")]), &writer).await;
    assert_data_error(&res, 403, "permission_denied");

    // The editor may do each.
    let res = app.get(&list_path(crm.customers, &[("filter", &filter)]), &crm.account.key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["records"].as_array().map(Vec::len), Some(1), "{}", res.body);
    assert_status(&app.get(&list_path(crm.customers, &[("sort", "email")]), &crm.account.key).await, 200);
    assert_status(&app.get(&list_path(crm.customers, &[("q", "asha")]), &crm.account.key).await, 200);
    let res = app.get(&record_path(crm.customers, &id), &crm.account.key).await;
    assert_eq!(res.body["record"]["data"]["email"], "asha@example.com", "unchanged: {}", res.body);
}

#[actix_web::test]
async fn legacy_keys_are_refused_with_the_v3_403() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let legacy = app.legacy_key(crm.account.tenant).await;
    let record = record_id(&create(&app, &crm.account.key, crm.customers, json!({"name": "Asha"})).await);
    let mut paths = vec![("GET", TABLES.to_owned(), None), ("GET", GROUPS.to_owned(), None)];
    paths.extend(routes(crm.customers, &record, json!({"name": "Baraka"})));
    for (method, path, body) in paths {
        let res = app.request(method, &path, Some(legacy.as_str()), body).await;
        assert_error(&res, 403);
        assert!(
            res.body["message"].as_str().is_some_and(|m| m.to_lowercase().contains("rotate")),
            "{method} {path}: {}",
            res.body
        );
    }
    let res = app.get(&record_path(crm.customers, &record), &crm.account.key).await;
    assert_status(&res, 200);
}

#[actix_web::test]
async fn a_deactivated_issuers_key_is_refused() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let record = record_id(&create(&app, &crm.account.key, crm.customers, json!({"name": "Asha"})).await);
    assert_status(&app.get(TABLES, &crm.account.key).await, 200);
    {
        let mut conn = app.conn().await;
        accounts::users::deactivate(&mut conn, crm.account.user).await.expect("deactivate");
    }
    let mut paths = vec![("GET", TABLES.to_owned(), None)];
    paths.extend(routes(crm.customers, &record, json!({"name": "Baraka"})));
    for (method, path, body) in paths {
        let res = app.request(method, &path, Some(crm.account.key.as_str()), body).await;
        assert_eq!(res.status, 403, "{method} {path}: {}", res.body);
        assert_data_error(&res, 403, "permission_denied");
    }
    // Another user's key of the tenant still reads the record, untouched.
    let other = key_with(&app, &crm, EDITOR).await;
    let res = app.get(&record_path(crm.customers, &record), &other).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["name"], "Asha");
}

#[actix_web::test]
async fn a_key_whose_issuer_was_removed_is_refused() {
    // contract: data endpoints refuse a key whose issuer is unknown (the user row gone; the
    // key keeps no issuer and no permission).
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let record = record_id(&create(&app, &crm.account.key, crm.customers, json!({"name": "Asha"})).await);
    {
        use diesel::sql_types::BigInt;
        use diesel_async::RunQueryDsl;
        let mut conn = app.conn().await;
        diesel::sql_query("DELETE FROM users WHERE id = $1")
            .bind::<BigInt, _>(crm.account.user.0)
            .execute(&mut conn)
            .await
            .expect("user removed");
    }
    let mut paths = vec![("GET", TABLES.to_owned(), None)];
    paths.extend(routes(crm.customers, &record, json!({"name": "Baraka"})));
    for (method, path, body) in paths {
        let res = app.request(method, &path, Some(crm.account.key.as_str()), body).await;
        assert_data_error(&res, 403, "permission_denied");
    }
}

#[actix_web::test]
async fn another_tenants_tables_and_records_are_not_found_on_every_route() {
    // Beta has the same CRM (same slugs): Acme's table ids, and Acme's record ids under
    // Beta's own tables, answer 404 on every route; Acme's records are untouched.
    let app = spawn().await;
    let acme = crm_with(&app, EDITOR).await;
    let beta = crm_with(&app, EDITOR).await;
    let agent = record_id(&create(&app, &acme.account.key, acme.agents, json!({"name": "Juma"})).await);
    let customer = record_id(&create(&app, &acme.account.key, acme.customers, json!({"name": "Asha"})).await);

    let intruder = json!({"name": "Intruder"});
    all_not_found(&app, &beta.account.key, routes(acme.agents, &agent, intruder.clone())).await;
    all_not_found(&app, &beta.account.key, routes(acme.customers, &customer, intruder.clone())).await;
    // Acme's record ids under Beta's own tables.
    for (table, record) in [(beta.agents, &agent), (beta.customers, &customer)] {
        let theirs: Vec<_> = routes(table, record, intruder.clone())
            .into_iter()
            .filter(|(_, path, _)| path.contains(record.as_str()))
            .collect();
        assert_eq!(theirs.len(), 4, "get, patch, delete, history");
        all_not_found(&app, &beta.account.key, theirs).await;
    }

    // Beta's list does not show Acme's tables by id, and Acme's records are as they were.
    let res = app.get(TABLES, &beta.account.key).await;
    assert_status(&res, 200);
    let ids: Vec<&Value> = res.body["tables"].as_array().expect("tables").iter().map(|t| &t["id"]).collect();
    assert!(!ids.contains(&&json!(acme.customers.to_string())), "{}", res.body);
    assert!(ids.contains(&&json!(beta.customers.to_string())), "{}", res.body);
    for (table, record, name) in [(acme.agents, &agent, "Juma"), (acme.customers, &customer, "Asha")] {
        let res = app.get(&record_path(table, record), &acme.account.key).await;
        assert_status(&res, 200);
        assert_eq!(res.body["record"]["data"]["name"], name);
    }
    let res = app.get(&list_path(acme.customers, &[("with_count", "1")]), &acme.account.key).await;
    assert_eq!(res.body["count"], json!(1), "nothing created in Acme: {}", res.body);
}
