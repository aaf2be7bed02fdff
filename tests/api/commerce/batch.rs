//! Product batches and sync runs (contract: Sync report; Sync run and feed; Catalogues, products,
//! stock, orders; docs/api.md "Commerce: shops, products, stock and orders", Sync runs): 202 with
//! a queued report, the job that lands the rows, rejected rows and the problem cap, matching by
//! code then name, issued codes, `replace`, the request checks, `Idempotency-Key`, the run list,
//! `sync.completed`, the shop's `last_synced_at`, permissions and isolation.

use std::collections::BTreeSet;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::test::TestRequest;
use api_tests::{Resp, TestApp, json, spawn};
use serde_json::Value;

use super::support::*;
use crate::framework::assert_error;

fn batch_path(shop: i64) -> String {
    format!("{CATALOGUES}/{shop}/products/batch")
}

fn syncs_path(shop: i64) -> String {
    format!("{CATALOGUES}/{shop}/syncs")
}

fn sync_path(shop: i64, sync: i64) -> String {
    format!("{CATALOGUES}/{shop}/syncs/{sync}")
}

/// `POST .../products/batch` with an `Idempotency-Key`.
async fn batch_with_key<S, B>(app: &TestApp<S>, key: &str, shop: i64, idempotency_key: &str, body: Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let req = TestRequest::post()
        .uri(&batch_path(shop))
        .insert_header(("Authorization", format!("Bearer {key}")))
        .insert_header(("Idempotency-Key", idempotency_key))
        .set_json(body);
    app.send(req).await
}

/// `POST .../products/batch`, 202 expected: the queued report.
async fn start<S, B>(app: &TestApp<S>, key: &str, shop: i64, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(&batch_path(shop), key, body).await;
    assert_status(&res, 202);
    assert_eq!(res.body["status"], "success", "{}", res.body);
    res.data().clone()
}

/// `GET .../syncs/{sync}`, 200 expected: the report.
async fn report<S, B>(app: &TestApp<S>, key: &str, shop: i64, sync: i64) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&sync_path(shop, sync), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// Starts a batch, runs the jobs, and answers the report, which must be `completed`.
async fn run<S, B>(app: &TestApp<S>, key: &str, shop: i64, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let queued = start(app, key, shop, body).await;
    app.run_jobs().await;
    let done = report(app, key, shop, id_of(&queued)).await;
    assert_eq!(done["status"], "completed", "{done}");
    done
}

/// A page of the product list.
async fn products<S, B>(app: &TestApp<S>, key: &str, shop: i64, query: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("{CATALOGUES}/{shop}/products?{query}"), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// The report's counts, in one comparable value.
fn counts(report: &Value) -> Value {
    json!({
        "received": report["received"], "created": report["created"], "updated": report["updated"],
        "unchanged": report["unchanged"], "rejected": report["rejected"], "retired": report["retired"],
    })
}

fn problems(report: &Value) -> &Vec<Value> {
    report["problems"].as_array().unwrap_or_else(|| panic!("problems in {report}"))
}

/// `n` good rows with codes `P00001`...
fn rows(n: usize) -> Vec<Value> {
    (1..=n).map(|i| json!({"sku": format!("P{i:05}"), "name": format!("Product {i}"), "price": 100 + i})).collect()
}

/// `<prefix>-` and five digits.
fn is_issued(code: &str, prefix: &str) -> bool {
    code.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|digits| digits.len() == 5 && digits.chars().all(|c| c.is_ascii_digit()))
}

#[actix_web::test]
async fn a_batch_answers_202_with_a_queued_report_and_its_job_lands_the_rows() {
    // Proves the 202 report (queued, before the job), the job's completed report with its
    // counts, and the rows landed (`retailer_id` accepted for `sku`, an existing code updated).
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    stocked(&app, &acme.key, shop, "TEA", 1500, json!(4)).await;

    let queued = start(
        &app,
        &acme.key,
        shop,
        json!({"products": [
            {"sku": "TEA", "name": "Tea", "price": 1700},
            {"sku": "SUGAR", "name": "Sugar", "price": 2500, "inventory": 10},
            {"retailer_id": "SALT", "name": "Salt", "price": 500, "brand": "Kensalt"},
        ]}),
    )
    .await;
    let id = id_of(&queued);
    let expected = [
        ("catalogue_id", json!(shop)),
        ("kind", json!("batch")),
        ("mode", json!("upsert")),
        ("status", json!("queued")),
        ("received", json!(3)),
        ("replayed", json!(false)),
        ("platforms", json!({})),
    ];
    for (field, value) in &expected {
        assert_eq!(&queued[*field], value, "{field} in {queued}");
    }
    assert_eq!(report(&app, &acme.key, shop, id).await["status"], "queued", "nothing ran yet");

    assert!(app.run_jobs().await > 0, "a job did the work");
    let done = report(&app, &acme.key, shop, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        counts(&done),
        json!({"received": 3, "created": 2, "updated": 1, "unchanged": 0, "rejected": 0, "retired": 0})
    );
    assert_eq!((&done["problems"], &done["problems_truncated"]), (&json!([]), &json!(false)));
    assert_eq!(done["failure"], Value::Null);
    assert!(done["started_at"].is_string() && done["finished_at"].is_string(), "{done}");

    let res = app.get(&sku_path(shop, "TEA"), &acme.key).await;
    assert_eq!((&res.data()["price"], &res.data()["inventory"]), (&json!(1700), &json!(4)), "only sent fields");
    let res = app.get(&sku_path(shop, "SUGAR"), &acme.key).await;
    assert_eq!((&res.data()["inventory"], &res.data()["availability"]), (&json!(10), &json!("in stock")));
    let res = app.get(&sku_path(shop, "SALT"), &acme.key).await;
    assert_eq!((&res.data()["retailer_id"], &res.data()["brand"]), (&json!("SALT"), &json!("Kensalt")));
}

#[actix_web::test]
async fn five_thousand_rows_with_a_few_bad_ones_land_all_but_those() {
    // Proves a full-size batch: every good row lands, each bad row is rejected with an ingest
    // problem naming its code as sent (null when none), and the bad rows are not stored.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let mut payload = rows(5000);
    payload[9] = json!({"sku": "P00010", "name": "No price"});
    payload[1999] = json!({"sku": "P02000", "name": "Negative", "price": -5});
    payload[3499] = json!({"sku": "P03500", "price": 100});
    payload[4999] = json!({"name": "No code, no price"});

    let done = run(&app, &acme.key, shop, json!({"mode": "upsert", "products": payload})).await;
    assert_eq!(
        counts(&done),
        json!({"received": 5000, "created": 4996, "updated": 0, "unchanged": 0, "rejected": 4, "retired": 0})
    );
    assert_eq!(done["problems_truncated"], false);
    let problems = problems(&done);
    assert_eq!(problems.len(), 4, "{problems:?}");
    let named: BTreeSet<&str> = problems.iter().filter_map(|p| p["sku"].as_str()).collect();
    assert_eq!(named, BTreeSet::from(["P00010", "P02000", "P03500"]));
    assert_eq!(problems.iter().filter(|p| p["sku"].is_null()).count(), 1, "the row without a code");
    for problem in problems {
        assert_eq!(problem["stage"], "ingest", "{problem}");
        assert!(problem["reason"].as_str().is_some_and(|r| !r.is_empty()), "{problem}");
    }

    assert_eq!(products(&app, &acme.key, shop, "").await["pagination"]["total"], 4996);
    for bad in ["P00010", "P02000", "P03500"] {
        assert_error(&app.get(&sku_path(shop, bad), &acme.key).await, 404);
    }
    let last = app.get(&sku_path(shop, "P04999"), &acme.key).await;
    assert_eq!((&last.data()["name"], &last.data()["price"]), (&json!("Product 4999"), &json!(5099)));
    assert_eq!(app.get(&shop_path(shop), &acme.key).await.data()["products_count"], 4996);
}

#[actix_web::test]
async fn more_than_200_problems_are_capped_and_marked_truncated() {
    // Proves the cap: 250 bad rows are all counted as rejected, 200 problems are kept, and
    // `problems_truncated` says so; the good rows still land.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let mut payload = rows(300);
    for row in payload.iter_mut().take(250) {
        row["price"] = json!(-1);
    }
    let done = run(&app, &acme.key, shop, json!({"products": payload})).await;
    assert_eq!(
        counts(&done),
        json!({"received": 300, "created": 50, "updated": 0, "unchanged": 0, "rejected": 250, "retired": 0})
    );
    assert_eq!(problems(&done).len(), 200);
    assert_eq!(done["problems_truncated"], true);
    assert_eq!(products(&app, &acme.key, shop, "").await["pagination"]["total"], 50);
}

#[actix_web::test]
async fn rows_without_a_code_match_by_name_without_case_else_get_an_issued_code() {
    // Proves matching by name (case-insensitive) when `sku` is missing, and issued codes
    // `<sku_prefix>-<5 digits>` (or `SKU-...` without a prefix), distinct, skipping taken ones.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let duka = id_of(&create_shop(&app, &acme.key, json!({"name": "Duka", "sku_prefix": "duka"})).await);
    let tea = put_product(&app, &acme.key, duka, "TEA-1", json!({"name": "Black Tea", "price": 1500})).await;

    let done = run(
        &app,
        &acme.key,
        duka,
        json!({"products": [
            {"name": "BLACK tea", "price": 1600},
            {"name": "Sugar", "price": 2500},
            {"name": "Salt", "price": 500},
        ]}),
    )
    .await;
    assert_eq!(
        counts(&done),
        json!({"received": 3, "created": 2, "updated": 1, "unchanged": 0, "rejected": 0, "retired": 0})
    );
    let matched = app.get(&sku_path(duka, "TEA-1"), &acme.key).await;
    assert_eq!((id_of(matched.data()), &matched.data()["price"]), (id_of(&tea), &json!(1600)));
    let page = products(&app, &acme.key, duka, "").await;
    let items = page["items"].as_array().expect("items");
    assert_eq!(items.len(), 3, "{page}");
    let sugar = items.iter().find(|p| p["name"] == "Sugar").expect("sugar");
    let salt = items.iter().find(|p| p["name"] == "Salt").expect("salt");
    let (sugar, salt) = (sugar["sku"].as_str().expect("code"), salt["sku"].as_str().expect("code"));
    assert!(is_issued(sugar, "DUKA") && is_issued(salt, "DUKA"), "{sugar} {salt}");
    assert_ne!(sugar, salt);

    let plain = shop(&app, &acme.key, "external").await;
    put_product(&app, &acme.key, plain, "SKU-00001", json!({"name": "Taken", "price": 1})).await;
    let done = run(&app, &acme.key, plain, json!({"products": [{"name": "Rice", "price": 3000}]})).await;
    assert_eq!(done["created"], 1, "{done}");
    let page = products(&app, &acme.key, plain, "").await;
    let rice = page["items"].as_array().expect("items").iter().find(|p| p["name"] == "Rice").expect("rice");
    let code = rice["sku"].as_str().expect("code");
    assert!(is_issued(code, "SKU") && code != "SKU-00001", "{code}");
    let taken = app.get(&sku_path(plain, "SKU-00001"), &acme.key).await;
    assert_eq!(taken.data()["name"], "Taken", "the taken code is left alone");
}

#[actix_web::test]
async fn a_code_sent_twice_in_one_batch_rejects_the_later_row() {
    // Proves the duplicate rule: the first row lands, the later one is rejected as a duplicate.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let done = run(
        &app,
        &acme.key,
        shop,
        json!({"products": [
            {"sku": "A", "name": "First", "price": 100},
            {"sku": "B", "name": "Other", "price": 100},
            {"retailer_id": "A", "name": "Second", "price": 200},
        ]}),
    )
    .await;
    assert_eq!(
        counts(&done),
        json!({"received": 3, "created": 2, "updated": 0, "unchanged": 0, "rejected": 1, "retired": 0})
    );
    let problem = &problems(&done)[0];
    assert_eq!((&problem["sku"], &problem["stage"]), (&json!("A"), &json!("ingest")), "{problem}");
    assert!(problem["reason"].as_str().is_some_and(|r| r.contains("duplicate")), "{problem}");
    let a = app.get(&sku_path(shop, "A"), &acme.key).await;
    assert_eq!((&a.data()["name"], &a.data()["price"]), (&json!("First"), &json!(100)));
}

#[actix_web::test]
async fn a_row_for_an_existing_code_changes_only_what_it_sends() {
    // Proves rows are read like a PUT body: a row matching a product changes only the members
    // it sends (no `name` or `price` needed), while a row creating one needs both.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    stocked(&app, &acme.key, shop, "TEA", 1500, json!(1)).await;
    stocked(&app, &acme.key, shop, "SUGAR", 2500, json!(1)).await;
    let done = run(
        &app,
        &acme.key,
        shop,
        json!({"products": [
            {"sku": "TEA", "price": 1700},
            {"sku": "SUGAR", "name": "Brown sugar"},
            {"sku": "SALT", "name": "Salt"},
        ]}),
    )
    .await;
    assert_eq!(
        counts(&done),
        json!({"received": 3, "created": 0, "updated": 2, "unchanged": 0, "rejected": 1, "retired": 0})
    );
    let problem = &problems(&done)[0];
    assert_eq!(problem["sku"], "SALT", "{problem}");
    let tea = app.get(&sku_path(shop, "TEA"), &acme.key).await;
    assert_eq!((&tea.data()["price"], &tea.data()["name"]), (&json!(1700), &json!("Product TEA")));
    let sugar = app.get(&sku_path(shop, "SUGAR"), &acme.key).await;
    assert_eq!((&sugar.data()["price"], &sugar.data()["name"]), (&json!(2500), &json!("Brown sugar")));
    assert_error(&app.get(&sku_path(shop, "SALT"), &acme.key).await, 404);
}

#[actix_web::test]
async fn replace_retires_products_absent_from_the_payload_but_never_a_rejected_rows_product() {
    // Proves `replace`: shelf products not in the payload are retired (counted, 404 after),
    // the product of a rejected row stays as it was, and a retired code sent again comes back
    // on its id as a created row. `upsert` retires nothing.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let mut ids = Vec::new();
    for sku in ["A", "B", "C", "D"] {
        ids.push(id_of(&stocked(&app, &acme.key, shop, sku, 100, json!(1)).await));
    }

    let upsert =
        run(&app, &acme.key, shop, json!({"products": [{"sku": "A", "name": "Product A", "price": 100}]})).await;
    assert_eq!(upsert["retired"], 0);
    assert_eq!(products(&app, &acme.key, shop, "").await["pagination"]["total"], 4);

    let done = run(
        &app,
        &acme.key,
        shop,
        json!({"mode": "replace", "products": [
            {"sku": "A", "name": "Product A", "price": 150},
            {"sku": "C", "name": "Product C", "price": -1},
            {"sku": "E", "name": "Product E", "price": 300},
        ]}),
    )
    .await;
    assert_eq!(done["mode"], "replace");
    assert_eq!(
        counts(&done),
        json!({"received": 3, "created": 1, "updated": 1, "unchanged": 0, "rejected": 1, "retired": 2})
    );
    for gone in ["B", "D"] {
        assert_error(&app.get(&sku_path(shop, gone), &acme.key).await, 404);
    }
    let c = app.get(&sku_path(shop, "C"), &acme.key).await;
    assert_status(&c, 200);
    assert_eq!((&c.data()["price"], &c.data()["name"]), (&json!(100), &json!("Product C")), "as it was");
    let page = products(&app, &acme.key, shop, "").await;
    let codes: Vec<&str> =
        page["items"].as_array().expect("items").iter().map(|p| p["sku"].as_str().expect("sku")).collect();
    assert_eq!(codes, ["A", "C", "E"]);
    assert_eq!(app.get(&shop_path(shop), &acme.key).await.data()["products_count"], 3);

    let back = run(&app, &acme.key, shop, json!({"products": [{"sku": "B", "name": "Back", "price": 90}]})).await;
    assert_eq!((&back["created"], &back["updated"]), (&json!(1), &json!(0)), "{back}");
    let b = app.get(&sku_path(shop, "B"), &acme.key).await;
    assert_eq!((id_of(b.data()), &b.data()["name"]), (ids[1], &json!("Back")));
}

#[actix_web::test]
async fn a_bad_mode_or_an_empty_missing_or_oversized_product_list_is_refused_and_starts_nothing() {
    // Proves the request checks (422 naming the member) and that no run is recorded for them;
    // exactly 5,000 rows are accepted.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let cases = [
        (json!({"mode": "merge", "products": rows(1)}), "mode"),
        (json!({"products": []}), "products"),
        (json!({"mode": "upsert"}), "products"),
        (json!({"products": rows(5001)}), "products"),
    ];
    for (body, field) in cases {
        let res = app.post(&batch_path(shop), &acme.key, body).await;
        assert_error(&res, 422);
        assert!(res.body["errors"][field].is_array(), "errors.{field} in {}", res.body);
    }
    app.run_jobs().await;
    let res = app.get(&syncs_path(shop), &acme.key).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["pagination"]["total"], 0, "no run recorded");
    assert_eq!(products(&app, &acme.key, shop, "").await["pagination"]["total"], 0);

    let queued = start(&app, &acme.key, shop, json!({"products": rows(5000)})).await;
    assert_eq!(queued["received"], 5000);
}

#[actix_web::test]
async fn a_repeated_idempotency_key_answers_the_owning_run_replayed_whatever_the_body() {
    // Proves the batch replay: 202, the same run id, `replayed: true`, even with another body,
    // no second run and the second body never applied; the key is the shop's own.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let other_shop = shop_with_name(&app, &acme.key, "Second").await;

    let first = batch_with_key(&app, &acme.key, shop, "sync-1", json!({"products": rows(2)})).await;
    assert_status(&first, 202);
    let id = id_of(first.data());
    assert_eq!(first.data()["replayed"], false);
    let again = batch_with_key(
        &app,
        &acme.key,
        shop,
        "sync-1",
        json!({"mode": "replace", "products": [{"sku": "OTHER", "name": "Other", "price": 1}]}),
    )
    .await;
    assert_status(&again, 202);
    assert_eq!(again.header("x-idempotent-replay"), Some("1"));
    assert_eq!((id_of(again.data()), &again.data()["replayed"]), (id, &json!(true)));
    assert_eq!((&again.data()["mode"], &again.data()["received"]), (&json!("upsert"), &json!(2)), "the first run's");

    app.run_jobs().await;
    let later = batch_with_key(&app, &acme.key, shop, "sync-1", json!({"products": rows(1)})).await;
    assert_status(&later, 202);
    assert_eq!((id_of(later.data()), &later.data()["replayed"]), (id, &json!(true)));
    assert_eq!(later.data()["status"], "completed");
    assert_eq!(later.data()["created"], 2);
    app.run_jobs().await;

    let syncs = app.get(&syncs_path(shop), &acme.key).await;
    assert_eq!(syncs.data()["pagination"]["total"], 1, "one run: {}", syncs.body);
    assert_error(&app.get(&sku_path(shop, "OTHER"), &acme.key).await, 404);
    assert_eq!(products(&app, &acme.key, shop, "").await["pagination"]["total"], 2);
    assert_eq!(report(&app, &acme.key, shop, id).await["replayed"], false, "the run itself is no replay");

    let elsewhere = batch_with_key(&app, &acme.key, other_shop, "sync-1", json!({"products": rows(1)})).await;
    assert_status(&elsewhere, 202);
    assert_ne!(id_of(elsewhere.data()), id, "keys are per shop");
    assert_eq!(elsewhere.data()["replayed"], false);

    // a caller who may not write the shop is refused before any replay
    let viewer = app.user(acme.tenant, VIEWER).await;
    let viewer = app.key(acme.tenant, viewer).await;
    let refused = batch_with_key(&app, &viewer, shop, "sync-1", json!({"products": rows(2)})).await;
    assert_error(&refused, 403);
}

/// A shop of the given name, its id.
async fn shop_with_name<S, B>(app: &TestApp<S>, key: &str, name: &str) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    id_of(&create_shop(app, key, json!({"name": name})).await)
}

#[actix_web::test]
async fn the_run_list_is_newest_first_and_leaves_out_problems() {
    // Proves `GET .../syncs`: the shop's runs only, newest first, paginated, without `problems`.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let other = shop_with_name(&app, &acme.key, "Second").await;
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(id_of(&run(&app, &acme.key, shop, json!({"products": [{"sku": format!("S{n}"), "price": 1}]})).await));
    }
    run(&app, &acme.key, other, json!({"products": rows(1)})).await;

    let res = app.get(&syncs_path(shop), &acme.key).await;
    assert_status(&res, 200);
    let page = res.data();
    let listed: Vec<i64> = page["items"].as_array().expect("items").iter().map(id_of).collect();
    ids.reverse();
    assert_eq!(listed, ids);
    assert_eq!(
        page["pagination"],
        json!({"current_page": 1, "per_page": 25, "last_page": 1, "total": 3, "has_more_pages": false})
    );
    for item in page["items"].as_array().expect("items") {
        assert_eq!(item.get("problems"), None, "{item}");
        assert_eq!((&item["status"], &item["rejected"]), (&json!("completed"), &json!(1)), "{item}");
    }
    assert_eq!(problems(&report(&app, &acme.key, shop, ids[0]).await).len(), 1, "the report keeps them");
}

#[actix_web::test]
async fn a_finished_run_emits_sync_completed_with_the_report_without_problems() {
    // Proves the event: none while queued, one when the run ends, `{catalogue_id, sync}` with
    // the finished report less its problems.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let mut payload = rows(3);
    payload[1]["price"] = json!(-1);
    let queued = start(&app, &acme.key, shop, json!({"products": payload})).await;
    assert!(events(&app, acme.tenant, "sync.completed").await.is_empty(), "nothing before the run");
    app.run_jobs().await;

    let events = events(&app, acme.tenant, "sync.completed").await;
    assert_eq!(events.len(), 1, "{events:?}");
    let event = &events[0];
    assert_eq!(event["catalogue_id"], shop, "{event}");
    let sync = &event["sync"];
    assert_eq!((id_of(sync), &sync["status"]), (id_of(&queued), &json!("completed")), "{event}");
    assert_eq!(
        counts(sync),
        json!({"received": 3, "created": 2, "updated": 0, "unchanged": 0, "rejected": 1, "retired": 0})
    );
    assert_eq!(sync.get("problems"), None, "{event}");
    assert!(sync["finished_at"].is_string(), "{event}");
}

#[actix_web::test]
async fn a_completed_run_sets_the_shops_last_synced_at() {
    // Proves `last_synced_at`: null before any run, still null while queued, then the end of
    // the last completed run.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    assert_eq!(app.get(&shop_path(shop), &acme.key).await.data()["last_synced_at"], Value::Null);
    let queued = start(&app, &acme.key, shop, json!({"products": rows(2)})).await;
    assert_eq!(app.get(&shop_path(shop), &acme.key).await.data()["last_synced_at"], Value::Null);
    app.run_jobs().await;
    let done = report(&app, &acme.key, shop, id_of(&queued)).await;
    assert_eq!(app.get(&shop_path(shop), &acme.key).await.data()["last_synced_at"], done["finished_at"]);

    app.clock.advance(time::Duration::hours(1));
    let second = run(&app, &acme.key, shop, json!({"products": rows(1)})).await;
    assert_ne!(second["finished_at"], done["finished_at"]);
    assert_eq!(app.get(&shop_path(shop), &acme.key).await.data()["last_synced_at"], second["finished_at"]);
}

#[actix_web::test]
async fn the_same_batch_sent_twice_counts_its_rows_unchanged() {
    // Proves `unchanged`: rows equal to the product are neither created nor updated; a changed
    // row among them is updated.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let payload = rows(20);
    let first = run(&app, &acme.key, shop, json!({"products": payload.clone()})).await;
    assert_eq!(first["created"], 20);
    let second = run(&app, &acme.key, shop, json!({"products": payload.clone()})).await;
    assert_eq!(
        counts(&second),
        json!({"received": 20, "created": 0, "updated": 0, "unchanged": 20, "rejected": 0, "retired": 0})
    );
    let mut changed = payload;
    changed[4]["price"] = json!(999_999);
    let third = run(&app, &acme.key, shop, json!({"products": changed})).await;
    assert_eq!(
        counts(&third),
        json!({"received": 20, "created": 0, "updated": 1, "unchanged": 19, "rejected": 0, "retired": 0})
    );
}

#[actix_web::test]
async fn a_viewer_reads_runs_but_cannot_start_one() {
    // Proves the batch needs manage (403, no run) while the run list and report need only view;
    // a legacy key is refused.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let id = id_of(&run(&app, &acme.key, shop, json!({"products": rows(1)})).await);
    let viewer = app.user(acme.tenant, VIEWER).await;
    let viewer = app.key(acme.tenant, viewer).await;
    let legacy = app.legacy_key(acme.tenant).await;

    assert_error(&app.post(&batch_path(shop), &viewer, json!({"products": rows(2)})).await, 403);
    assert_error(&app.post(&batch_path(shop), &legacy, json!({"products": rows(2)})).await, 403);
    assert_error(&app.get(&sync_path(shop, id), &legacy).await, 403);
    app.run_jobs().await;
    assert_eq!(id_of(&report(&app, &viewer, shop, id).await), id);
    let res = app.get(&syncs_path(shop), &viewer).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["pagination"]["total"], 1);
    assert_eq!(products(&app, &acme.key, shop, "").await["pagination"]["total"], 1);
}

#[actix_web::test]
async fn another_tenants_sync_is_404() {
    // Proves isolation of runs: another workspace gets 404 on our run, our run list and our
    // batch route, and through its own shop; our run is not reachable through our other shop.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let other = app.account("all").await;
    let shop = shop(&app, &acme.key, "external").await;
    let second = shop_with_name(&app, &acme.key, "Second").await;
    let theirs = shop_with_name(&app, &other.key, "Theirs").await;
    let id = id_of(&run(&app, &acme.key, shop, json!({"products": rows(1)})).await);

    assert_error(&app.get(&sync_path(shop, id), &other.key).await, 404);
    assert_error(&app.get(&sync_path(theirs, id), &other.key).await, 404);
    assert_error(&app.get(&sync_path(second, id), &acme.key).await, 404);
    assert_error(&app.get(&sync_path(shop, id + 1000), &acme.key).await, 404);
    assert_error(&app.get(&syncs_path(shop), &other.key).await, 404);
    assert_error(&app.post(&batch_path(shop), &other.key, json!({"products": rows(3)})).await, 404);
    app.run_jobs().await;

    let res = app.get(&syncs_path(theirs), &other.key).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["pagination"]["total"], 0);
    assert_eq!(products(&app, &acme.key, shop, "").await["pagination"]["total"], 1);
}
