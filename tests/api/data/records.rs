//! Records (contract: Data table, column and record; Data tables; docs/api.md "Data tables",
//! Records and Envelope): create, read one, merge-PATCH, soft delete, the record's members,
//! required values, malformed bodies and unreadable ids in paths.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::test::TestRequest;
use api_tests::{Resp, TestApp, json, spawn};
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use super::support::*;

/// The customers table's column keys, in definition order.
const CUSTOMER_COLUMNS: [&str; 15] = [
    "name", "phone", "email", "score", "credit", "segment", "tags", "stage", "joined", "seen", "vip", "notes", "agent",
    "contract", "ref",
];

/// `GET .../records/{record}`, 200 expected: the record.
async fn read<S, B>(app: &TestApp<S>, key: &str, table: Uuid, record: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&record_path(table, record), key).await;
    assert_status(&res, 200);
    res.body["record"].clone()
}

/// `PATCH .../records/{record}` with `data`, whatever the answer.
async fn patch_data<S, B>(app: &TestApp<S>, key: &str, table: Uuid, record: &str, data: Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.patch(&record_path(table, record), key, json!({ "data": data })).await
}

/// A request with a raw body declared as JSON.
async fn raw<S, B>(app: &TestApp<S>, req: TestRequest, key: &str, body: &'static str) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let req = req
        .insert_header(("Authorization", format!("Bearer {key}")))
        .insert_header(("Content-Type", "application/json"))
        .set_payload(body);
    app.send(req).await
}

#[track_caller]
fn time_of(value: &Value) -> OffsetDateTime {
    let text = value.as_str().unwrap_or_else(|| panic!("a time string: {value}"));
    OffsetDateTime::parse(text, &Rfc3339).unwrap_or_else(|e| panic!("RFC 3339 {text}: {e}"))
}

#[track_caller]
fn keys_of(data: &Value) -> Vec<String> {
    let mut keys: Vec<String> =
        data.as_object().unwrap_or_else(|| panic!("an object: {data}")).keys().cloned().collect();
    keys.sort();
    keys
}

#[actix_web::test]
async fn create_answers_201_with_the_whole_record() {
    // Proves the record's members: a UUID id, `data` with every column (null when empty, the
    // status defaulted, the auto number assigned), `source: api`, the times, `title` from the
    // first text column, `titles` and `masked`.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let res = app
        .post(
            &records_path(crm.customers),
            &crm.account.key,
            json!({"data": {"name": "Asha Juma", "phone": "0712 345 678"}}),
        )
        .await;
    assert_status(&res, 201);
    assert!(res.body.get("status").is_none(), "native success, no v3 envelope: {}", res.body);
    let record = &res.body["record"];
    let id = record["id"].as_str().unwrap_or_else(|| panic!("id in {record}"));
    assert!(Uuid::parse_str(id).is_ok(), "a UUID: {id}");

    let mut expected: Vec<String> = CUSTOMER_COLUMNS.iter().map(|k| (*k).to_owned()).collect();
    expected.sort();
    assert_eq!(keys_of(&record["data"]), expected, "every column: {record}");
    let data = &record["data"];
    assert_eq!(data["name"], "Asha Juma");
    assert_eq!(data["phone"], "+255712345678");
    assert_eq!(data["stage"], "new");
    assert_eq!(data["ref"], json!(1));
    for empty in ["email", "score", "credit", "segment", "tags", "joined", "seen", "vip", "notes", "agent", "contract"]
    {
        assert_eq!(data[empty], Value::Null, "{empty} is null when empty: {record}");
    }
    assert_eq!(record["source"], "api");
    assert_eq!(time_of(&record["created_at"]), time_of(&record["updated_at"]));
    assert_eq!(record["title"], "Asha Juma");
    assert!(record["titles"].is_object(), "titles: {record}");
    assert_eq!(record["masked"], json!([]), "nothing masked for an editor: {record}");

    // A table's first text column is its title, whatever its key.
    let agent = create(&app, &crm.account.key, crm.agents, json!({"name": "Juma"})).await;
    assert_eq!(agent["title"], "Juma");
    assert_eq!(keys_of(&agent["data"]), ["name"]);
}

#[actix_web::test]
async fn get_one_answers_the_record_as_created() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let made =
        create(&app, &crm.account.key, crm.customers, json!({"name": "Asha", "vip": true, "tags": ["vip"]})).await;
    let res = app.get(&record_path(crm.customers, &record_id(&made)), &crm.account.key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"], made, "the same record");
    // A viewer reads it too.
    let viewer = app.user(crm.account.tenant, VIEWER).await;
    let viewer = app.key(crm.account.tenant, viewer).await;
    let seen = read(&app, &viewer, crm.customers, &record_id(&made)).await;
    assert_eq!(seen["data"]["name"], "Asha");
}

#[actix_web::test]
async fn patch_merges_the_keys_sent_and_returns_the_whole_record() {
    // Proves the merge (unsent keys keep their values), the answer is the whole record,
    // `source` stays `api`, `created_at` stays and `updated_at` moves.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let made = create(
        &app,
        key,
        crm.customers,
        json!({"name": "Asha", "phone": "0712 345 678", "segment": "retail", "notes": "first"}),
    )
    .await;
    let id = record_id(&made);
    app.clock.advance(time::Duration::minutes(5));

    let res = patch_data(&app, key, crm.customers, &id, json!({"segment": "wholesale", "score": 40})).await;
    assert_status(&res, 200);
    let record = &res.body["record"];
    assert_eq!(record["id"], made["id"]);
    assert_eq!(record["data"]["segment"], "wholesale");
    assert_eq!(record["data"]["score"].as_f64(), Some(40.0));
    for kept in ["name", "phone", "notes", "stage", "ref"] {
        assert_eq!(record["data"][kept], made["data"][kept], "{kept} kept: {record}");
    }
    let mut expected: Vec<String> = CUSTOMER_COLUMNS.iter().map(|k| (*k).to_owned()).collect();
    expected.sort();
    assert_eq!(keys_of(&record["data"]), expected, "the whole record: {record}");
    assert_eq!(record["source"], "api");
    assert_eq!(record["created_at"], made["created_at"]);
    assert!(time_of(&record["updated_at"]) > time_of(&made["updated_at"]), "updated_at moves: {record}");
    assert_eq!(record["title"], "Asha");

    // An empty PATCH changes nothing.
    let res = patch_data(&app, key, crm.customers, &id, json!({})).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"], record["data"]);
    assert_eq!(read(&app, key, crm.customers, &id).await["data"], record["data"]);
}

#[actix_web::test]
async fn null_clears_optional_values_and_required_ones_cannot_be_cleared_or_omitted() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;

    // Omitting the required name (or sending nothing at all) is refused naming it.
    for data in [json!({"phone": "0712 345 678"}), json!({}), json!({"name": null})] {
        let res = app.post(&records_path(crm.customers), key, json!({ "data": data })).await;
        assert_data_error(&res, 422, "validation_error");
        assert!(res.body["errors"]["name"].as_array().is_some_and(|m| !m.is_empty()), "errors.name: {}", res.body);
    }
    let res = app.post(&records_path(crm.customers), key, json!({})).await;
    assert_data_error(&res, 422, "validation_error");

    let made = create(
        &app,
        key,
        crm.customers,
        json!({"name": "Asha", "phone": "0712 345 678", "tags": ["vip"], "vip": false}),
    )
    .await;
    let id = record_id(&made);
    let res = patch_data(&app, key, crm.customers, &id, json!({"phone": null, "tags": null, "vip": null})).await;
    assert_status(&res, 200);
    for cleared in ["phone", "tags", "vip"] {
        assert_eq!(res.body["record"]["data"][cleared], Value::Null, "{cleared} cleared: {}", res.body);
    }
    assert_eq!(read(&app, key, crm.customers, &id).await["data"]["phone"], Value::Null);

    // Clearing a required value: the name, the required status.
    for data in [json!({"name": null}), json!({"stage": null}), json!({"name": null, "notes": "x"})] {
        let res = patch_data(&app, key, crm.customers, &id, data.clone()).await;
        assert_data_error(&res, 422, "validation_error");
        let column = data.as_object().and_then(|o| o.keys().next().cloned()).expect("a key");
        assert!(res.body["errors"][&column].as_array().is_some_and(|m| !m.is_empty()), "errors.{column}: {}", res.body);
    }
    let kept = read(&app, key, crm.customers, &id).await;
    assert_eq!(
        (&kept["data"]["name"], &kept["data"]["stage"], &kept["data"]["notes"]),
        (&json!("Asha"), &json!("new"), &Value::Null)
    );
}

#[actix_web::test]
async fn delete_is_soft_answers_ok_once_and_the_record_is_gone_after() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let made = create(&app, key, crm.customers, json!({"name": "Asha"})).await;
    let kept = create(&app, key, crm.customers, json!({"name": "Baraka"})).await;
    let id = record_id(&made);

    let res = app.delete(&record_path(crm.customers, &id), key).await;
    assert_status(&res, 200);
    assert_eq!(res.body, json!({"ok": true, "deleted": 1}));

    assert_data_error(&app.delete(&record_path(crm.customers, &id), key).await, 404, "not_found");
    assert_data_error(&app.get(&record_path(crm.customers, &id), key).await, 404, "not_found");
    assert_data_error(&patch_data(&app, key, crm.customers, &id, json!({"notes": "x"})).await, 404, "not_found");

    let res = app.get(&list_path(crm.customers, &[("with_count", "1")]), key).await;
    assert_status(&res, 200);
    let ids: Vec<&Value> = res.body["records"].as_array().expect("records").iter().map(|r| &r["id"]).collect();
    assert_eq!(ids, [&kept["id"]], "{}", res.body);
    assert_eq!(res.body["count"], json!(1));

    // Soft: the row is still there, marked deleted.
    {
        use diesel::QueryableByName;
        use diesel::sql_types::{Bool, Uuid as SqlUuid};
        use diesel_async::RunQueryDsl;
        #[derive(QueryableByName)]
        struct Row {
            #[diesel(sql_type = Bool)]
            deleted: bool,
        }
        let mut conn = app.conn().await;
        let row: Row = diesel::sql_query("SELECT deleted_at IS NOT NULL AS deleted FROM data_records WHERE id = $1")
            .bind::<SqlUuid, _>(Uuid::parse_str(&id).expect("uuid"))
            .get_result(&mut conn)
            .await
            .expect("the row is kept");
        assert!(row.deleted);
    }
}

#[actix_web::test]
async fn malformed_json_is_a_validation_error_in_the_data_envelope() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let res =
        raw(&app, TestRequest::post().uri(&records_path(crm.customers)), key, r#"{"data": {"name": "Asha","#).await;
    assert_data_error(&res, 422, "validation_error");

    let made = create(&app, key, crm.customers, json!({"name": "Asha"})).await;
    let path = record_path(crm.customers, &record_id(&made));
    let res = raw(&app, TestRequest::patch().uri(&path), key, r#"{"data": "#).await;
    assert_data_error(&res, 422, "validation_error");
    // `data` that is not an object is no better.
    for body in [json!({"data": 5}), json!({"data": ["name"]}), json!({"data": "Asha"})] {
        assert_data_error(&app.post(&records_path(crm.customers), key, body.clone()).await, 422, "validation_error");
        assert_data_error(&app.patch(&path, key, body).await, 422, "validation_error");
    }
    assert_eq!(read(&app, key, crm.customers, &record_id(&made)).await["data"]["name"], "Asha");
}

#[actix_web::test]
async fn an_unreadable_or_unknown_id_in_the_path_is_not_found() {
    // Proves a non-UUID table or record id, an unknown UUID, and a record addressed under
    // another table of the tenant all answer 404 `not_found` in the data envelope.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let agent = create(&app, key, crm.agents, json!({"name": "Juma"})).await;
    let unknown = Uuid::new_v4();

    for table in ["not-a-uuid", "12", &unknown.to_string()] {
        for path in [
            format!("{TABLES}/{table}/schema"),
            format!("{TABLES}/{table}/states"),
            format!("{TABLES}/{table}/records"),
            format!("{TABLES}/{table}/records/{}", record_id(&agent)),
        ] {
            assert_data_error(&app.get(&path, key).await, 404, "not_found");
        }
        let res = app.post(&format!("{TABLES}/{table}/records"), key, json!({"data": {"name": "Asha"}})).await;
        assert_data_error(&res, 404, "not_found");
    }
    for record in ["not-a-uuid", "1", &unknown.to_string(), &record_id(&agent)] {
        let path = record_path(crm.customers, record);
        assert_data_error(&app.get(&path, key).await, 404, "not_found");
        assert_data_error(&app.patch(&path, key, json!({"data": {"notes": "x"}})).await, 404, "not_found");
        assert_data_error(&app.delete(&path, key).await, 404, "not_found");
        assert_data_error(&app.get(&history_path(crm.customers, record), key).await, 404, "not_found");
    }
    // The agent is untouched.
    assert_eq!(read(&app, key, crm.agents, &record_id(&agent)).await["data"]["name"], "Juma");
}
