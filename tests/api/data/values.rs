//! Values (contract: Data table, column and record; docs/api.md "Data tables", Values and
//! Records): what each column type accepts, how it is stored and read back, and what it refuses
//! with a 422 `validation_error` naming the column; the record size limit; unknown and `$` keys.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::test::TestRequest;
use api_tests::{Resp, TestApp, json, spawn};
use serde_json::Value;
use uuid::Uuid;

use super::support::*;

/// A table of its own for the configs the CRM does not use: text bounds, a long text with a
/// small maximum, a two-decimal currency and a Kenyan phone.
fn cards() -> Value {
    json!({
        "group": {"slug": "desk", "name": "Desk"},
        "tables": [{"slug": "cards", "name": "Cards", "columns": [
            {"key": "code", "type": "text", "config": {"min_length": 3, "max_length": 5}},
            {"key": "body", "type": "long_text", "config": {"max_length": 10}},
            {"key": "price", "type": "currency", "config": {"currency": "USD", "decimals": 2}},
            {"key": "mobile", "type": "phone", "config": {"region": "KE"}}
        ]}]
    })
}

/// The CRM's tenant with the `cards` table applied beside it: (crm, cards table id).
async fn crm_and_cards<S, B>(app: &TestApp<S>) -> (Crm, Uuid)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let crm = crm_with(app, EDITOR).await;
    let applied = apply(app, &crm.account, cards()).await;
    let cards = applied.tables.iter().find(|t| t.slug == "cards").expect("cards table").id;
    (crm, cards)
}

/// A customer named `name` with `extra` values: the record (201 expected).
async fn customer<S, B>(app: &TestApp<S>, crm: &Crm, name: &str, extra: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let mut data = json!({ "name": name });
    for (k, v) in extra.as_object().expect("extra values") {
        data[k] = v.clone();
    }
    create(app, &crm.account.key, crm.customers, data).await
}

/// The value `column` is stored as when a customer is created with `value` in it.
async fn stored<S, B>(app: &TestApp<S>, crm: &Crm, column: &str, value: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let name = format!("Stored {}", Uuid::new_v4().simple());
    let res = post_data(app, &crm.account.key, crm.customers, json!({ "name": name, column: value.clone() })).await;
    assert_status(&res, 201);
    res.body["record"]["data"][column].clone()
}

/// A 422 `validation_error` in the data envelope whose `errors` name `field`.
#[track_caller]
fn assert_invalid(res: &Resp, field: &str) {
    assert_data_error(res, 422, "validation_error");
    assert!(res.body["errors"][field].as_array().is_some_and(|m| !m.is_empty()), "errors.{field} in {}", res.body);
}

/// Each of `values` in `column` of a new customer is refused naming the column.
async fn refused<S, B>(app: &TestApp<S>, crm: &Crm, column: &str, values: &[Value])
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    for value in values {
        let res =
            post_data(app, &crm.account.key, crm.customers, json!({ "name": "Refused", column: value.clone() })).await;
        assert!(res.status == 422, "{column} = {value} should be refused, got {}: {}", res.status, res.body);
        assert_invalid(&res, column);
    }
}

#[actix_web::test]
async fn text_is_trimmed_bounded_in_characters_and_cleared_by_an_empty_string() {
    // Proves trimming, `max_length` (the CRM's 120 on `name`; `min_length`/`max_length` on
    // `code`, counted in characters), that a number is not text, and that `""` (or blanks)
    // clears an optional text while a required one cannot be cleared that way.
    let app = spawn().await;
    let (crm, cards) = crm_and_cards(&app).await;
    let key = &crm.account.key;

    let made = customer(&app, &crm, "  Asha Juma  ", json!({})).await;
    assert_eq!(made["data"]["name"], "Asha Juma", "trimmed: {made}");
    assert_eq!(made["title"], "Asha Juma");
    assert_eq!(stored(&app, &crm, "name", json!("x".repeat(120))).await, json!("x".repeat(120)));
    refused(&app, &crm, "name", &[json!("x".repeat(121)), json!(5), json!(["Asha"])]).await;

    // min and max on a text of its own, in characters (ñ is two bytes).
    let res = post_data(&app, key, cards, json!({"code": "ñañañ"})).await;
    assert_status(&res, 201);
    assert_eq!(res.body["record"]["data"]["code"], "ñañañ");
    let card = record_id(&res.body["record"]);
    for bad in ["ab", " ab ", "abcdef"] {
        assert_invalid(&post_data(&app, key, cards, json!({"code": bad})).await, "code");
    }
    let res = patch_data(&app, key, cards, &card, json!({"code": " abc "})).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["code"], "abc");
    // "" and blanks clear an optional text.
    let res = patch_data(&app, key, cards, &card, json!({"code": ""})).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["code"], Value::Null, "{}", res.body);
    let res = patch_data(&app, key, cards, &card, json!({"code": "abc"})).await;
    assert_status(&res, 200);
    let res = patch_data(&app, key, cards, &card, json!({"code": "   "})).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["code"], Value::Null, "{}", res.body);

    // "" on a required text is clearing it: refused, the value kept.
    let id = record_id(&made);
    assert_invalid(&patch_data(&app, key, crm.customers, &id, json!({"name": ""})).await, "name");
    let res = app.get(&record_path(crm.customers, &id), key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["name"], "Asha Juma");
}

#[actix_web::test]
async fn long_text_has_its_own_maximum_and_is_cleared_by_an_empty_string() {
    // Proves the long_text default maximum (8,000 characters) and a configured one, and "".
    let app = spawn().await;
    let (crm, cards) = crm_and_cards(&app).await;
    let key = &crm.account.key;

    let made = customer(&app, &crm, "Asha", json!({"notes": "  Prefers\nmornings  "})).await;
    assert_eq!(made["data"]["notes"], "Prefers\nmornings", "{made}");
    assert_eq!(stored(&app, &crm, "notes", json!("a".repeat(7000))).await, json!("a".repeat(7000)));
    refused(&app, &crm, "notes", &[json!("a".repeat(8001)), json!(12)]).await;

    let res = post_data(&app, key, cards, json!({"body": "0123456789"})).await;
    assert_status(&res, 201);
    assert_invalid(&post_data(&app, key, cards, json!({"body": "0123456789A"})).await, "body");

    let res = patch_data(&app, key, crm.customers, &record_id(&made), json!({"notes": ""})).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["notes"], Value::Null, "{}", res.body);
}

#[actix_web::test]
async fn numbers_take_numbers_and_numeric_strings_normalized_within_min_max_and_precision() {
    // Proves `12.50` (string or JSON) reads back as 12.5, the bounds (min 0, max 100, both
    // inclusive) and `precision` 1, and that non-numeric values are refused.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;

    let score = stored(&app, &crm, "score", json!("12.50")).await;
    assert_eq!(score.as_f64(), Some(12.5), "{score}");
    assert_eq!(score.to_string(), "12.5", "normalized: {score}");
    assert!(score.is_number(), "a JSON number, not a string: {score}");
    assert_eq!(stored(&app, &crm, "score", json!(7.5)).await.as_f64(), Some(7.5));
    assert_eq!(stored(&app, &crm, "score", json!("40")).await.as_f64(), Some(40.0));
    assert_eq!(stored(&app, &crm, "score", json!(0)).await.as_f64(), Some(0.0));
    assert_eq!(stored(&app, &crm, "score", json!(100)).await.as_f64(), Some(100.0));

    // A JSON number written with a trailing zero, as a client would send it.
    let req = TestRequest::post()
        .uri(&records_path(crm.customers))
        .insert_header(("Authorization", format!("Bearer {}", crm.account.key)))
        .insert_header(("Content-Type", "application/json"))
        .set_payload(r#"{"data": {"name": "Raw", "score": 12.50}}"#);
    let res = app.send(req).await;
    assert_status(&res, 201);
    assert_eq!(res.body["record"]["data"]["score"].to_string(), "12.5", "{}", res.body);

    refused(
        &app,
        &crm,
        "score",
        &[
            json!(100.5),
            json!(-1),
            json!("-0.5"),
            json!(12.55),
            json!("12.55"),
            json!("twelve"),
            json!(true),
            json!([1]),
        ],
    )
    .await;
}

#[actix_web::test]
async fn currency_amounts_are_main_units_within_their_decimals() {
    // Proves a TZS amount with 0 decimals refuses a fraction, a numeric string is read, and a
    // two-decimal currency keeps cents (12.34) but refuses a third decimal.
    let app = spawn().await;
    let (crm, cards) = crm_and_cards(&app).await;
    let key = &crm.account.key;

    assert_eq!(stored(&app, &crm, "credit", json!(1500)).await.as_f64(), Some(1500.0));
    assert_eq!(stored(&app, &crm, "credit", json!("2500")).await.as_f64(), Some(2500.0));
    refused(&app, &crm, "credit", &[json!(1500.5), json!("10.25"), json!("abc")]).await;

    let res = post_data(&app, key, cards, json!({"price": "12.34"})).await;
    assert_status(&res, 201);
    assert_eq!(res.body["record"]["data"]["price"].as_f64(), Some(12.34), "{}", res.body);
    assert!(res.body["record"]["data"]["price"].is_number(), "{}", res.body);
    assert_invalid(&post_data(&app, key, cards, json!({"price": 12.345})).await, "price");
}

#[actix_web::test]
async fn booleans_take_true_false_and_their_strings() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    assert_eq!(stored(&app, &crm, "vip", json!(true)).await, json!(true));
    assert_eq!(stored(&app, &crm, "vip", json!(false)).await, json!(false));
    assert_eq!(stored(&app, &crm, "vip", json!("true")).await, json!(true));
    assert_eq!(stored(&app, &crm, "vip", json!("false")).await, json!(false));
    refused(&app, &crm, "vip", &[json!("yes"), json!(1), json!([true])]).await;
}

#[actix_web::test]
async fn dates_are_calendar_days() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    assert_eq!(stored(&app, &crm, "joined", json!("2026-11-26")).await, json!("2026-11-26"));
    assert_eq!(stored(&app, &crm, "joined", json!("2028-02-29")).await, json!("2028-02-29"));
    refused(&app, &crm, "joined", &[json!("2026-02-30"), json!("26/11/2026"), json!("2026-13-01"), json!(20261126)])
        .await;
}

#[actix_web::test]
async fn datetimes_need_an_offset_and_read_back_in_utc() {
    // Proves the UTC conversion in the documented form (`2026-11-26T08:00:00Z`), milliseconds
    // kept (and nothing finer), and that a time without `Z` or an offset is refused. The
    // refusals are checked first; the stored forms are compared all together.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    refused(&app, &crm, "seen", &[json!("2026-11-26T08:00:00"), json!("2026-11-26"), json!("yesterday"), json!(0)])
        .await;
    let cases = [
        ("2026-11-26T11:00:00+03:00", "2026-11-26T08:00:00.000Z"),
        ("2026-11-26T08:00:00Z", "2026-11-26T08:00:00.000Z"),
        ("2026-11-26T08:00:00.123456Z", "2026-11-26T08:00:00.123Z"),
        ("2026-11-25T23:30:00-05:00", "2026-11-26T04:30:00.000Z"),
    ];
    let mut got = Vec::new();
    for (sent, _) in cases {
        got.push(stored(&app, &crm, "seen", json!(sent)).await);
    }
    let expected: Vec<Value> = cases.iter().map(|(_, read)| json!(read)).collect();
    assert_eq!(got, expected, "sent {:?}", cases.map(|(sent, _)| sent));
}

#[actix_web::test]
async fn phones_are_normalized_to_e164_with_the_column_region() {
    // Proves TZ as the default region for national numbers, international forms kept, a
    // column's own `region` (KE), and refusals of what is not a phone number.
    let app = spawn().await;
    let (crm, cards) = crm_and_cards(&app).await;
    assert_eq!(stored(&app, &crm, "phone", json!("0712 345 678")).await, json!("+255712345678"));
    assert_eq!(stored(&app, &crm, "phone", json!("+255 712 345 679")).await, json!("+255712345679"));
    assert_eq!(stored(&app, &crm, "phone", json!("+1 415 555 2671")).await, json!("+14155552671"));
    refused(&app, &crm, "phone", &[json!("12"), json!("not a phone")]).await;

    let res = post_data(&app, &crm.account.key, cards, json!({"mobile": "0712 345 678"})).await;
    assert_status(&res, 201);
    assert_eq!(res.body["record"]["data"]["mobile"], "+254712345678", "{}", res.body);
}

#[actix_web::test]
async fn emails_are_validated_and_lower_cased() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    assert_eq!(stored(&app, &crm, "email", json!("Asha.Juma@Example.COM")).await, json!("asha.juma@example.com"));
    refused(&app, &crm, "email", &[json!("asha"), json!("asha@"), json!("@example.com"), json!("a b@example.com")])
        .await;
}

#[actix_web::test]
async fn selects_take_their_options_and_multi_selects_lists_in_option_order() {
    // Proves select options, multi_select ordering by the options, duplicates removed, a
    // single string read as a list of one, and refusals of values outside the options.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    assert_eq!(stored(&app, &crm, "segment", json!("wholesale")).await, json!("wholesale"));
    refused(&app, &crm, "segment", &[json!("other"), json!(1)]).await;

    assert_eq!(stored(&app, &crm, "tags", json!(["late", "vip", "late"])).await, json!(["vip", "late"]));
    assert_eq!(stored(&app, &crm, "tags", json!("late")).await, json!(["late"]));
    refused(&app, &crm, "tags", &[json!(["vip", "gold"]), json!("gold")]).await;
}

#[actix_web::test]
async fn relations_take_a_live_record_of_the_target_table_and_reads_add_its_title() {
    // Proves a relation by UUID and by `{id}`, stored as the UUID string; `titles.agent` is
    // the agent's current name; an unknown id, a record of another table, a deleted agent and
    // a non-UUID are refused.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let juma = create(&app, key, crm.agents, json!({"name": "Juma Said"})).await;
    let juma_id = record_id(&juma);

    let by_uuid = customer(&app, &crm, "Asha", json!({"agent": juma_id})).await;
    assert_eq!(by_uuid["data"]["agent"], json!(juma_id), "{by_uuid}");
    assert_eq!(by_uuid["titles"]["agent"], "Juma Said", "{by_uuid}");
    let by_object = customer(&app, &crm, "Baraka", json!({"agent": {"id": juma_id}})).await;
    assert_eq!(by_object["data"]["agent"], json!(juma_id), "{by_object}");
    assert_eq!(by_object["titles"]["agent"], "Juma Said");

    // Reads show the agent's title as it is now.
    let res = app.patch(&record_path(crm.agents, &juma_id), key, json!({"data": {"name": "Juma S. Mrisho"}})).await;
    assert_status(&res, 200);
    let res = app.get(&record_path(crm.customers, &record_id(&by_uuid)), key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["titles"]["agent"], "Juma S. Mrisho", "{}", res.body);

    let gone = create(&app, key, crm.agents, json!({"name": "Gone"})).await;
    assert_status(&app.delete(&record_path(crm.agents, &record_id(&gone)), key).await, 200);
    refused(
        &app,
        &crm,
        "agent",
        &[
            json!(Uuid::new_v4().to_string()),
            json!({"id": Uuid::new_v4().to_string()}),
            json!(record_id(&by_object)),
            json!(record_id(&gone)),
            json!("not-a-uuid"),
            json!(42),
        ],
    )
    .await;

    // Another tenant's agent is not a record of this table either.
    let other = crm_with(&app, EDITOR).await;
    let theirs = create(&app, &other.account.key, other.agents, json!({"name": "Theirs"})).await;
    refused(&app, &crm, "agent", &[json!(record_id(&theirs))]).await;

    // null clears a relation, and its title.
    let res =
        app.patch(&record_path(crm.customers, &record_id(&by_object)), key, json!({"data": {"agent": null}})).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["agent"], Value::Null, "{}", res.body);
    assert!(res.body["record"]["titles"]["agent"].is_null(), "{}", res.body);
}

#[actix_web::test]
async fn auto_numbers_are_assigned_on_create_and_refused_in_writes() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let first = customer(&app, &crm, "First", json!({})).await;
    let second = customer(&app, &crm, "Second", json!({})).await;
    assert_eq!(first["data"]["ref"], json!(1), "{first}");
    assert_eq!(second["data"]["ref"], json!(2), "{second}");

    refused(&app, &crm, "ref", &[json!(7)]).await;
    let res = patch_data(&app, &crm.account.key, crm.customers, &record_id(&first), json!({"ref": 9})).await;
    assert_invalid(&res, "ref");
    let res = app.get(&record_path(crm.customers, &record_id(&first)), &crm.account.key).await;
    assert_eq!(res.body["record"]["data"]["ref"], json!(1), "{}", res.body);
}

#[actix_web::test]
async fn files_take_stored_ids_and_read_as_descriptors_with_signed_urls() {
    // Proves a file value by id, by `{id}` and as a list; the descriptor's members; and that an
    // unknown id or another tenant's file is refused.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let pdf = app
        .data
        .store_file(crm.account.tenant, "contract.pdf", "application/pdf", b"%PDF-1.4 signed".to_vec())
        .await
        .expect("store pdf");
    let scan =
        app.data.store_file(crm.account.tenant, "scan.png", "image/png", vec![7u8; 300]).await.expect("store png");

    let made = customer(&app, &crm, "Asha", json!({"contract": pdf.to_string()})).await;
    let files = made["data"]["contract"].as_array().unwrap_or_else(|| panic!("a list of descriptors: {made}"));
    assert_eq!(files.len(), 1, "{made}");
    let file = &files[0];
    assert_eq!(file["id"], json!(pdf.to_string()), "{file}");
    assert_eq!(file["name"], "contract.pdf");
    assert_eq!(file["mime_type"], "application/pdf");
    assert_eq!(file["size"], json!(15));
    let url = file["url"].as_str().unwrap_or_else(|| panic!("url in {file}"));
    assert!(url.contains(&format!("/files/{pdf}")), "{url}");
    assert!(url.contains("expires=") && url.contains("signature="), "signed: {url}");
    assert!(file["url_expires_at"].is_string(), "{file}");

    let by_object = customer(&app, &crm, "Baraka", json!({"contract": {"id": scan.to_string()}})).await;
    assert_eq!(by_object["data"]["contract"][0]["id"], json!(scan.to_string()), "{by_object}");
    assert_eq!(by_object["data"]["contract"][0]["size"], json!(300));
    let both = customer(&app, &crm, "Chausiku", json!({"contract": [pdf.to_string(), {"id": scan.to_string()}]})).await;
    let ids: Vec<&Value> = both["data"]["contract"].as_array().expect("files").iter().map(|f| &f["id"]).collect();
    assert_eq!(ids, [&json!(pdf.to_string()), &json!(scan.to_string())], "{both}");

    let other = app.account(EDITOR).await;
    let theirs = app.data.store_file(other.tenant, "theirs.txt", "text/plain", b"x".to_vec()).await.expect("store");
    refused(&app, &crm, "contract", &[json!(Uuid::new_v4().to_string()), json!(theirs.to_string()), json!("nope")])
        .await;
}

#[actix_web::test]
async fn a_record_over_8192_bytes_is_refused() {
    // 5,000 two-byte characters are within long_text's 8,000 characters but not the record's
    // 8,192 bytes; on create and on a PATCH that grows a record.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let res = post_data(&app, key, crm.customers, json!({"name": "Big", "notes": "é".repeat(5000)})).await;
    assert_data_error(&res, 422, "validation_error");

    let made = customer(&app, &crm, "Growing", json!({"notes": "a".repeat(4000)})).await;
    let res = patch_data(&app, key, crm.customers, &record_id(&made), json!({"notes": "é".repeat(4500)})).await;
    assert_data_error(&res, 422, "validation_error");
    let res = app.get(&record_path(crm.customers, &record_id(&made)), key).await;
    assert_eq!(res.body["record"]["data"]["notes"], json!("a".repeat(4000)), "unchanged");
}

#[actix_web::test]
async fn unknown_keys_and_dollar_keys_are_refused() {
    // Proves 422 naming the key on create and on PATCH, and that nothing is written.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    for (bad, value) in
        [("nickname", json!("Ash")), ("$id", json!(Uuid::new_v4().to_string())), ("$source", json!("x"))]
    {
        let res = post_data(&app, key, crm.customers, json!({"name": "Asha", bad: value.clone()})).await;
        assert_data_error(&res, 422, "validation_error");
        assert!(res.body.to_string().contains(bad), "the refusal names {bad}: {}", res.body);
    }
    let res = app.get(&list_path(crm.customers, &[("with_count", "1")]), key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["count"], json!(0), "nothing created: {}", res.body);

    let made = customer(&app, &crm, "Asha", json!({})).await;
    let res =
        patch_data(&app, key, crm.customers, &record_id(&made), json!({"name": "Changed", "nickname": "Ash"})).await;
    assert_data_error(&res, 422, "validation_error");
    assert!(res.body.to_string().contains("nickname"), "{}", res.body);
    let res =
        patch_data(&app, key, crm.customers, &record_id(&made), json!({"$created_at": "2020-01-01T00:00:00Z"})).await;
    assert_data_error(&res, 422, "validation_error");
    let res = app.get(&record_path(crm.customers, &record_id(&made)), key).await;
    assert_eq!(res.body["record"]["data"]["name"], "Asha", "unchanged: {}", res.body);
}
