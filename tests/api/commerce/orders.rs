//! Orders (contract: Order; Order status; Catalogues, products, stock, orders; Events: Payload
//! shapes, Emission ties; docs/api.md "Orders"): intake through `POST /catalogues/{c}/orders`,
//! the record, idempotency, the list and its filters, status moves, the order events with their
//! deprecated duplicates, permissions and isolation.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::test::TestRequest;
use api_tests::{Resp, TestApp, json, spawn};
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

use super::support::*;
use crate::framework::assert_error;

fn orders_path(shop: i64) -> String {
    format!("{CATALOGUES}/{shop}/orders")
}

fn order_path(order: i64) -> String {
    format!("{ORDERS}/{order}")
}

/// `POST /catalogues/{shop}/orders` with a whole body.
async fn intake<S, B>(app: &TestApp<S>, key: &str, shop: i64, body: Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.post(&orders_path(shop), key, body).await
}

/// The same with an `Idempotency-Key`.
async fn intake_keyed<S, B>(app: &TestApp<S>, key: &str, shop: i64, idempotency_key: &str, body: Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let req = TestRequest::post()
        .uri(&orders_path(shop))
        .insert_header(("Authorization", format!("Bearer {key}")))
        .insert_header(("Idempotency-Key", idempotency_key))
        .set_json(body);
    app.send(req).await
}

/// `GET /catalogues/orders{query}`: the page (`items`, `pagination`).
async fn list<S, B>(app: &TestApp<S>, key: &str, query: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("{ORDERS}{query}"), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

fn ids(page: &Value) -> Vec<i64> {
    page["items"].as_array().unwrap_or_else(|| panic!("items in {page}")).iter().map(id_of).collect()
}

/// A svc shop in TZS with A (150,050 minor units, 10 on hand) and B (100,000 on sale at 80,000).
async fn tzs_shop<S, B>(app: &TestApp<S>, key: &str) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let body = json!({"name": "Duka Letu", "stock_policy": "svc", "default_currency": "TZS"});
    let shop = id_of(&create_shop(app, key, body).await);
    stocked(app, key, shop, "A", 150_050, json!(10)).await;
    put_product(
        app,
        key,
        shop,
        "B",
        json!({"name": "Product B", "price": 100_000, "sale_price": 80_000, "inventory": 10}),
    )
    .await;
    shop
}

/// A main-units amount, as a number or a decimal string.
fn major(value: &Value) -> f64 {
    value
        .as_f64()
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| panic!("an amount in main units, got {value}"))
}

fn time_of(value: &Value, field: &str) -> OffsetDateTime {
    let raw = value[field].as_str().unwrap_or_else(|| panic!("{field} in {value}"));
    OffsetDateTime::parse(raw, &Rfc3339).unwrap_or_else(|e| panic!("{field} {raw}: {e}"))
}

/// The deprecated top-level duplicates of an order event for the A×2 + B×1 order.
#[track_caller]
fn assert_deprecated_duplicates(payload: &Value, order: i64) {
    assert_eq!(payload["order_id"], order, "{payload}");
    assert_eq!(payload["customer_chat_id"], "255712345678", "{payload}");
    let items = payload["product_items"].as_array().unwrap_or_else(|| panic!("product_items in {payload}"));
    assert_eq!(items.len(), 2, "{payload}");
    let expect = [("A", 2, 1500.5), ("B", 1, 800.0)];
    for (item, (sku, quantity, price)) in items.iter().zip(expect) {
        assert_eq!(item["product_retailer_id"], sku, "{item}");
        assert_eq!(item["quantity"], quantity, "{item}");
        assert!((major(&item["item_price"]) - price).abs() < 1e-9, "item_price in main units: {item}");
        assert_eq!(item["currency"], "TZS", "{item}");
    }
    assert!((major(&payload["total_amount"]) - 3801.0).abs() < 1e-9, "total_amount in main units: {payload}");
    assert_eq!(payload["total_currency"], "TZS", "{payload}");
}

#[actix_web::test]
async fn intake_answers_201_with_the_whole_order_priced_from_the_product() {
    // Proves every field of the contract's Order, `customer_chat_id` beside `customer_handle`,
    // lines priced from the product (`sale_price` when set), the total, and `priced_at` now.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = tzs_shop(&app, &acme.key).await;
    let res = intake(
        &app,
        &acme.key,
        shop,
        json!({"platform": "manual", "customer_handle": "255712345678", "customer_name": "Amina Juma",
               "lines": [{"sku": "A", "quantity": 2}, {"sku": "B", "quantity": 1}]}),
    )
    .await;
    assert_status(&res, 201);
    let o = res.data();
    assert!(o["id"].is_i64(), "{o}");
    assert_eq!(o["catalogue_id"], shop);
    assert_eq!(o["platform"], "manual");
    assert_eq!(o["status"], "pending");
    assert_eq!(o["needs_attention"], false);
    assert_eq!(o["stock_policy"], "svc");
    assert_eq!(o["customer_handle"], "255712345678");
    assert_eq!(o["customer_chat_id"], "255712345678");
    assert_eq!(o["customer_name"], "Amina Juma");
    assert_eq!(o["total_minor"], 380_100);
    assert_eq!(o["currency"], "TZS");
    assert_eq!(o["conversation_id"], Value::Null);
    assert_eq!(time_of(o, "priced_at"), app.clock.now());
    let expect = [
        json!({"sku": "A", "name": "Product A", "quantity": 2, "unit_price_minor": 150_050, "line_total_minor": 300_100,
               "currency": "TZS", "reserved": 2, "stock_short": false, "unresolved": false}),
        json!({"sku": "B", "name": "Product B", "quantity": 1, "unit_price_minor": 80_000, "line_total_minor": 80_000,
               "currency": "TZS", "reserved": 1, "stock_short": false, "unresolved": false}),
    ];
    let lines = o["lines"].as_array().unwrap_or_else(|| panic!("lines in {o}"));
    assert_eq!(lines.len(), 2);
    for (line, expect) in lines.iter().zip(expect) {
        for (field, value) in expect.as_object().expect("object") {
            assert_eq!(&line[field], value, "{field} of {line}");
        }
    }
    assert_eq!(read_order(&app, &acme.key, id_of(o)).await, *o, "GET reads the same order");
}

#[actix_web::test]
async fn lines_and_total_are_frozen_at_creation() {
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = tzs_shop(&app, &acme.key).await;
    let placed = order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 2}])).await;
    put_product(&app, &acme.key, shop, "A", json!({"price": 999_900, "name": "Renamed"})).await;

    let again = read_order(&app, &acme.key, id_of(&placed)).await;
    assert_eq!(again["lines"][0]["unit_price_minor"], 150_050, "{again}");
    assert_eq!(again["lines"][0]["line_total_minor"], 300_100);
    assert_eq!(again["lines"][0]["name"], "Product A");
    assert_eq!(again["total_minor"], 300_100);
}

#[actix_web::test]
async fn intake_takes_storefront_orders_customer_chat_id_and_defaults_to_manual() {
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = tzs_shop(&app, &acme.key).await;
    let res = intake(
        &app,
        &acme.key,
        shop,
        json!({"platform": "storefront", "customer_chat_id": "255700000001", "lines": [{"sku": "A", "quantity": 1}]}),
    )
    .await;
    assert_status(&res, 201);
    assert_eq!(res.data()["platform"], "storefront");
    assert_eq!(res.data()["customer_handle"], "255700000001");
    assert_eq!(res.data()["customer_chat_id"], "255700000001");
    assert_eq!(res.data()["customer_name"], Value::Null);

    let res = intake(&app, &acme.key, shop, json!({"lines": [{"sku": "A", "quantity": 1}]})).await;
    assert_status(&res, 201);
    assert_eq!(res.data()["platform"], "manual");
}

#[actix_web::test]
async fn intake_refuses_a_bad_order_and_creates_nothing() {
    // Proves 422 for no lines, a quantity out of 1..=100,000, a platform other than manual or
    // storefront (chat orders come from the chat integration), and lines in two currencies;
    // none of them makes an order or holds stock.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = tzs_shop(&app, &acme.key).await;
    put_product(&app, &acme.key, shop, "USD-1", json!({"name": "Imported", "price": 500, "currency": "USD"})).await;
    let line = json!([{"sku": "A", "quantity": 1}]);
    for body in [
        json!({"platform": "manual"}),
        json!({"platform": "manual", "lines": []}),
        json!({"platform": "manual", "lines": [{"sku": "A", "quantity": 0}]}),
        json!({"platform": "manual", "lines": [{"sku": "A", "quantity": -2}]}),
        json!({"platform": "manual", "lines": [{"sku": "A", "quantity": 100_001}]}),
        json!({"platform": "manual", "lines": [{"quantity": 1}]}),
        json!({"platform": "chat", "lines": line}),
        json!({"platform": "ivr", "lines": line}),
        json!({"platform": "fax", "lines": line}),
        json!({"platform": "manual", "lines": [{"sku": "A", "quantity": 1}, {"sku": "USD-1", "quantity": 1}]}),
    ] {
        let res = intake(&app, &acme.key, shop, body.clone()).await;
        assert_error(&res, 422);
        assert!(res.body["message"].is_string(), "{body}: {}", res.body);
    }
    let page = list(&app, &acme.key, "").await;
    assert_eq!(page["pagination"]["total"], 0, "no order made: {page}");
    let a = app.get(&sku_path(shop, "A"), &acme.key).await;
    assert_eq!(a.data()["reserved"], 0, "nothing held: {}", a.body);
}

#[actix_web::test]
async fn the_same_idempotency_key_replays_the_first_order() {
    // Proves the replay: same id and body, one order in the list, stock held once; another key
    // makes another order.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = tzs_shop(&app, &acme.key).await;
    let body = json!({"customer_handle": "255712345678", "lines": [{"sku": "A", "quantity": 2}]});

    let first = intake_keyed(&app, &acme.key, shop, "cart-42", body.clone()).await;
    assert_status(&first, 201);
    let again = intake_keyed(&app, &acme.key, shop, "cart-42", body.clone()).await;
    assert_status(&again, 201);
    assert_eq!(again.data()["id"], first.data()["id"], "the same order");
    assert_eq!(again.data(), first.data());
    assert_eq!(list(&app, &acme.key, "").await["pagination"]["total"], 1, "one order only");
    assert_eq!(app.get(&sku_path(shop, "A"), &acme.key).await.data()["reserved"], 2, "held once");
    assert_eq!(events(&app, acme.tenant, "order.received").await.len(), 1, "one order.received");

    let other = intake_keyed(&app, &acme.key, shop, "cart-43", body).await;
    assert_status(&other, 201);
    assert_ne!(other.data()["id"], first.data()["id"]);
}

#[actix_web::test]
async fn the_same_idempotency_key_with_another_body_is_refused() {
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = tzs_shop(&app, &acme.key).await;
    let first = intake_keyed(&app, &acme.key, shop, "k1", json!({"lines": [{"sku": "A", "quantity": 1}]})).await;
    assert_status(&first, 201);
    let other = intake_keyed(&app, &acme.key, shop, "k1", json!({"lines": [{"sku": "A", "quantity": 5}]})).await;
    assert_error(&other, 422);
    assert_eq!(list(&app, &acme.key, "").await["pagination"]["total"], 1);
    assert_eq!(app.get(&sku_path(shop, "A"), &acme.key).await.data()["reserved"], 1);
}

#[actix_web::test]
async fn a_replay_is_refused_to_a_caller_who_may_not_order() {
    // Proves the caller is authorized before a stored answer is replayed: a key without
    // `communications.catalogue.manage` that repeats another caller's `Idempotency-Key` gets
    // 403, not the order; another tenant's shop is 404 with the same key and body.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = tzs_shop(&app, &acme.key).await;
    let body = json!({"customer_handle": "255712345678", "lines": [{"sku": "A", "quantity": 1}]});
    let first = intake_keyed(&app, &acme.key, shop, "cart-7", body.clone()).await;
    assert_status(&first, 201);

    let viewer = app.user(acme.tenant, VIEWER).await;
    let viewer = app.key(acme.tenant, viewer).await;
    let replay = intake_keyed(&app, &viewer, shop, "cart-7", body.clone()).await;
    assert_error(&replay, 403);
    assert_eq!(replay.header("x-idempotent-replay"), None);
    assert!(replay.body.get("data").is_none(), "no order in a refusal: {}", replay.body);

    let other = app.account(MANAGER).await;
    let theirs = intake_keyed(&app, &other.key, shop, "cart-7", body).await;
    assert_error(&theirs, 404);
}

#[actix_web::test]
async fn keys_are_scoped_by_issuer_and_a_replay_is_marked() {
    // Proves the key belongs to its issuer: the same key and body from another manager of the
    // same tenant makes a second order; the first issuer's repeat carries the replay header.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = tzs_shop(&app, &acme.key).await;
    let body = json!({"lines": [{"sku": "A", "quantity": 1}]});
    let first = intake_keyed(&app, &acme.key, shop, "same", body.clone()).await;
    assert_status(&first, 201);
    assert_eq!(first.header("x-idempotent-replay"), None);
    let again = intake_keyed(&app, &acme.key, shop, "same", body.clone()).await;
    assert_eq!(again.header("x-idempotent-replay"), Some("1"));
    assert_eq!(again.data(), first.data());

    let colleague = app.user(acme.tenant, MANAGER).await;
    let colleague = app.key(acme.tenant, colleague).await;
    let theirs = intake_keyed(&app, &colleague, shop, "same", body).await;
    assert_status(&theirs, 201);
    assert_eq!(theirs.header("x-idempotent-replay"), None);
    assert_ne!(theirs.data()["id"], first.data()["id"]);
    assert_eq!(list(&app, &acme.key, "").await["pagination"]["total"], 2);
}

#[actix_web::test]
async fn an_overlong_idempotency_key_is_refused() {
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = tzs_shop(&app, &acme.key).await;
    let long = "k".repeat(256);
    let res = intake_keyed(&app, &acme.key, shop, &long, json!({"lines": [{"sku": "A", "quantity": 1}]})).await;
    assert_error(&res, 422);
    assert_eq!(list(&app, &acme.key, "").await["pagination"]["total"], 0, "nothing made");
}

#[actix_web::test]
async fn the_order_list_filters_and_puts_the_newest_change_first() {
    // Proves `status`, `platform`, `catalogue_id`, `updated_since` (alone and combined) and the
    // order by last change: a status change moves the oldest order to the top.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let one = tzs_shop(&app, &acme.key).await;
    let two = tzs_shop(&app, &acme.key).await;
    let t0 = app.clock.now();
    let lines = json!([{"sku": "A", "quantity": 1}]);
    let o1 = id_of(intake(&app, &acme.key, one, json!({"platform": "manual", "lines": lines})).await.data());
    app.clock.advance(Duration::minutes(1));
    let o2 = id_of(intake(&app, &acme.key, one, json!({"platform": "storefront", "lines": lines})).await.data());
    app.clock.advance(Duration::minutes(1));
    let o3 = id_of(intake(&app, &acme.key, two, json!({"platform": "manual", "lines": lines})).await.data());
    app.clock.advance(Duration::minutes(1));
    set_status(&app, &acme.key, o1, "confirmed").await;

    assert_eq!(ids(&list(&app, &acme.key, "").await), [o1, o3, o2], "newest change first");
    assert_eq!(ids(&list(&app, &acme.key, "?status=confirmed").await), [o1]);
    assert_eq!(ids(&list(&app, &acme.key, "?status=pending").await), [o3, o2]);
    assert_eq!(ids(&list(&app, &acme.key, "?platform=storefront").await), [o2]);
    assert_eq!(ids(&list(&app, &acme.key, "?platform=manual").await), [o1, o3]);
    assert_eq!(ids(&list(&app, &acme.key, &format!("?catalogue_id={two}")).await), [o3]);
    assert_eq!(ids(&list(&app, &acme.key, &format!("?catalogue_id={one}&status=pending")).await), [o2]);
    let since = (t0 + Duration::seconds(90)).format(&Rfc3339).expect("format");
    assert_eq!(ids(&list(&app, &acme.key, &format!("?updated_since={since}")).await), [o1, o3]);
    let since = (t0 + Duration::minutes(10)).format(&Rfc3339).expect("format");
    assert_eq!(ids(&list(&app, &acme.key, &format!("?updated_since={since}")).await), Vec::<i64>::new());
}

#[actix_web::test]
async fn the_order_list_gives_25_a_page() {
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    stocked(&app, &acme.key, shop, "U", 100, Value::Null).await;
    let mut made = Vec::new();
    for _ in 0..26 {
        made.push(id_of(&order(&app, &acme.key, shop, json!([{"sku": "U", "quantity": 1}])).await));
    }
    let page = list(&app, &acme.key, "").await;
    assert_eq!(page["items"].as_array().map(Vec::len), Some(25), "{page}");
    assert_eq!(
        page["pagination"],
        json!({"current_page": 1, "per_page": 25, "last_page": 2, "total": 26, "has_more_pages": true})
    );
    assert_eq!(ids(&list(&app, &acme.key, "?page=2").await), [made[0]], "the oldest on page 2");
}

#[actix_web::test]
async fn status_moves_from_any_value_to_any_value() {
    // Proves there is no linear graph: every move below is taken and read back; an unknown or
    // missing value is 422 and changes nothing.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = tzs_shop(&app, &acme.key).await;
    let id = id_of(&order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 1}])).await);
    for status in ["delivered", "pending", "refunded", "confirmed", "cancelled", "processing", "shipped", "pending"] {
        set_status(&app, &acme.key, id, status).await;
        assert_eq!(read_order(&app, &acme.key, id).await["status"], status);
    }
    for body in [json!({"status": "lost"}), json!({"status": 3}), json!({})] {
        let res = app.put(&order_status_path(id), &acme.key, body.clone()).await;
        assert_error(&res, 422);
        assert!(res.body["errors"].get("status").is_some(), "{body}: errors.status in {}", res.body);
    }
    assert_eq!(read_order(&app, &acme.key, id).await["status"], "pending");
}

#[actix_web::test]
async fn order_received_carries_the_order_its_stock_policy_and_the_deprecated_duplicates() {
    // Proves the payload: the whole Order under `order` (as the intake answered it) with its
    // `stock_policy`, and the deprecated `order_id`, `customer_chat_id`, `product_items`
    // (prices in main units), `total_amount` (main units) and `total_currency` at the top.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = tzs_shop(&app, &acme.key).await;
    let placed = order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 2}, {"sku": "B", "quantity": 1}])).await;

    let received = events(&app, acme.tenant, "order.received").await;
    assert_eq!(received.len(), 1, "{received:?}");
    let payload = &received[0];
    assert_eq!(payload["order"], placed, "the whole order");
    assert_eq!(payload["order"]["stock_policy"], "svc");
    assert_deprecated_duplicates(payload, id_of(&placed));
    assert!(events(&app, acme.tenant, "order.status_changed").await.is_empty(), "creation is no status change");
}

#[actix_web::test]
async fn every_status_change_emits_status_changed_with_the_previous_status() {
    // Proves one `order.status_changed` per change with `previous_status`, the order as it is
    // after the change and the deprecated duplicates; the same value again emits nothing.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = tzs_shop(&app, &acme.key).await;
    let placed = order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 2}, {"sku": "B", "quantity": 1}])).await;
    let id = id_of(&placed);

    let moves = ["confirmed", "shipped", "pending", "delivered"];
    for status in moves {
        set_status(&app, &acme.key, id, status).await;
    }
    let same = set_status(&app, &acme.key, id, "delivered").await;
    assert_eq!(same["status"], "delivered");

    let changes = events(&app, acme.tenant, "order.status_changed").await;
    assert_eq!(changes.len(), 4, "one per change, none for the same value: {changes:?}");
    let previous = ["pending", "confirmed", "shipped", "pending"];
    for ((payload, status), before) in changes.iter().zip(moves).zip(previous) {
        assert_eq!(payload["previous_status"], before, "{payload}");
        assert_eq!(payload["order"]["status"], status, "{payload}");
        assert_eq!(payload["order"]["id"], id, "{payload}");
        assert_eq!(payload["order"]["stock_policy"], "svc", "{payload}");
        assert_deprecated_duplicates(payload, id);
    }
    assert!(events(&app, acme.tenant, "order.cancelled").await.is_empty());
}

#[actix_web::test]
async fn order_cancelled_goes_out_beside_status_changed_on_cancellation_only() {
    // Proves `order.cancelled` repeats the `order.status_changed` body when the new status is
    // `cancelled`, and is not sent for `refunded` or other moves.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = tzs_shop(&app, &acme.key).await;
    let lines = json!([{"sku": "A", "quantity": 2}, {"sku": "B", "quantity": 1}]);
    let one = id_of(&order(&app, &acme.key, shop, lines.clone()).await);
    let two = id_of(&order(&app, &acme.key, shop, lines).await);

    set_status(&app, &acme.key, one, "confirmed").await;
    set_status(&app, &acme.key, two, "refunded").await;
    assert!(events(&app, acme.tenant, "order.cancelled").await.is_empty(), "not for confirmed or refunded");

    set_status(&app, &acme.key, one, "cancelled").await;
    let cancelled = events(&app, acme.tenant, "order.cancelled").await;
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    let changes = events(&app, acme.tenant, "order.status_changed").await;
    assert_eq!(changes.len(), 3);
    assert_eq!(cancelled[0], changes[2], "the same body");
    assert_eq!(cancelled[0]["previous_status"], "confirmed");
    assert_eq!(cancelled[0]["order"]["status"], "cancelled");
    assert_deprecated_duplicates(&cancelled[0], one);
}

#[actix_web::test]
async fn a_viewer_reads_orders_but_cannot_create_or_change_them() {
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = tzs_shop(&app, &acme.key).await;
    let id = id_of(&order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 1}])).await);
    let viewer = app.key(acme.tenant, app.user(acme.tenant, VIEWER).await).await;

    assert_eq!(ids(&list(&app, &viewer, "").await), [id]);
    assert_eq!(read_order(&app, &viewer, id).await["id"], id);
    let res = intake(&app, &viewer, shop, json!({"lines": [{"sku": "A", "quantity": 1}]})).await;
    assert_error(&res, 403);
    let res = app.put(&order_status_path(id), &viewer, json!({"status": "confirmed"})).await;
    assert_error(&res, 403);
    assert_eq!(read_order(&app, &acme.key, id).await["status"], "pending");
    assert_eq!(list(&app, &acme.key, "").await["pagination"]["total"], 1);

    let legacy = app.legacy_key(acme.tenant).await;
    assert_error(&app.get(ORDERS, &legacy).await, 403);
}

#[actix_web::test]
async fn another_accounts_orders_are_not_found_nor_listed() {
    // Proves isolation: another tenant's order is 404 on GET and on the status PUT (which
    // changes nothing), their shop is 404 to intake, and neither list shows the other's orders.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let other = app.account(MANAGER).await;
    let shop = tzs_shop(&app, &acme.key).await;
    let theirs = tzs_shop(&app, &other.key).await;
    let mine = id_of(&order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 1}])).await);
    let their_order = id_of(&order(&app, &other.key, theirs, json!([{"sku": "A", "quantity": 1}])).await);

    assert_error(&app.get(&order_path(mine), &other.key).await, 404);
    let res = app.put(&order_status_path(mine), &other.key, json!({"status": "cancelled"})).await;
    assert_error(&res, 404);
    assert_eq!(read_order(&app, &acme.key, mine).await["status"], "pending");
    let res = intake(&app, &other.key, shop, json!({"lines": [{"sku": "A", "quantity": 1}]})).await;
    assert_error(&res, 404);

    assert_eq!(ids(&list(&app, &acme.key, "").await), [mine]);
    assert_eq!(ids(&list(&app, &other.key, "").await), [their_order]);
    assert_eq!(ids(&list(&app, &other.key, &format!("?catalogue_id={shop}")).await), Vec::<i64>::new());
    assert!(events(&app, other.tenant, "order.status_changed").await.is_empty());
}

/// A value's shape: objects keep their keys, arrays their first element, leaves their type.
fn shape(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
        Value::Array(items) => Value::Array(items.first().map(shape).into_iter().collect()),
        Value::Null => json!("null"),
        Value::Bool(_) => json!("bool"),
        Value::Number(_) => json!("number"),
        Value::String(_) => json!("string"),
    }
}

#[actix_web::test]
async fn the_order_events_listed_samples_have_the_shape_of_real_ones() {
    // Proves the catalogue's order samples are built by the code that builds real payloads: a
    // real order.received, order.status_changed and order.cancelled have the sample's shape.
    let app = spawn().await;
    let acme = app.account(&format!("{MANAGER},webhooks.view")).await;
    let shop = shop(&app, &acme.key, "svc").await;
    put_product(&app, &acme.key, shop, "KAHAWA", json!({"name": "Kahawa", "price": 1_800_000, "inventory": 5})).await;
    put_product(&app, &acme.key, shop, "CHAI", json!({"name": "Chai", "price": 650_000, "inventory": 5})).await;
    let made =
        order(&app, &acme.key, shop, json!([{"sku": "KAHAWA", "quantity": 2}, {"sku": "CHAI", "quantity": 1}])).await;
    set_status(&app, &acme.key, id_of(&made), "cancelled").await;

    let listing = app.get("/api/v3/webhooks/events", &acme.key).await;
    let samples: Vec<Value> = listing.data()["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["events"].as_array().expect("events").clone())
        .collect();
    for name in ["order.received", "order.status_changed", "order.cancelled"] {
        let real = events(&app, acme.tenant, name).await.pop().unwrap_or_else(|| panic!("{name} emitted"));
        let mut sample =
            samples.iter().find(|e| e["name"] == name).unwrap_or_else(|| panic!("{name} listed"))["sample"].clone();
        for field in ["event", "event_id", "timestamp"] {
            sample.as_object_mut().expect("object").remove(field);
        }
        // a pending order's hold has an expiry, a cancelled one's none; the sample's chat order
        // has a conversation, a manual one none
        let (mut real, mut sample) = (shape(&real), shape(&sample));
        for payload in [&mut real, &mut sample] {
            payload["order"]["reservation"]["expires_at"] = json!("time");
            payload["order"]["conversation_id"] = json!("id");
        }
        assert_eq!(real, sample, "{name}");
    }
}
