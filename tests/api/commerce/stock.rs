//! Stock levels (contract: Inventory level and movement; Catalogues, products, stock, orders;
//! Limits; docs/api.md "Stock"): the absolute inventory push and its answer, the inventory
//! listing and its filters, the movement audit trail, `stock.low` once a day, permissions and
//! isolation.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Resp, TestApp, json, spawn};
use serde_json::Value;

use super::support::*;
use crate::framework::assert_error;

fn inventory_path(shop: i64) -> String {
    format!("{CATALOGUES}/{shop}/inventory")
}

fn movements_path(shop: i64, sku: &str) -> String {
    format!("{}/movements", sku_path(shop, sku))
}

/// `POST .../inventory` with `levels`.
async fn push<S, B>(app: &TestApp<S>, key: &str, shop: i64, levels: Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.post(&inventory_path(shop), key, json!({ "levels": levels })).await
}

/// A push expected to succeed (200): its answer.
async fn pushed<S, B>(app: &TestApp<S>, key: &str, shop: i64, levels: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = push(app, key, shop, levels).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// The product's movements, newest first (first page).
async fn movements<S, B>(app: &TestApp<S>, key: &str, shop: i64, sku: &str) -> Vec<Value>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&movements_path(shop, sku), key).await;
    assert_status(&res, 200);
    res.data()["items"].as_array().unwrap_or_else(|| panic!("items in {}", res.body)).clone()
}

/// `GET .../inventory` with a query: the items sorted by sku.
async fn levels<S, B>(app: &TestApp<S>, key: &str, shop: i64, query: &str) -> Vec<Value>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("{}{query}", inventory_path(shop)), key).await;
    assert_status(&res, 200);
    let mut items = res.data()["items"].as_array().unwrap_or_else(|| panic!("items in {}", res.body)).clone();
    items.sort_by(|a, b| a["sku"].as_str().cmp(&b["sku"].as_str()));
    items
}

fn skus(items: &[Value]) -> Vec<&str> {
    items.iter().map(|i| i["sku"].as_str().unwrap_or_else(|| panic!("sku in {i}"))).collect()
}

/// (kind, quantity, inventory, reserved, available) of a movement.
type Fields<'a> = (Option<&'a str>, Option<i64>, Option<i64>, Option<i64>, Option<i64>);

fn fields(m: &Value) -> Fields<'_> {
    (
        m["kind"].as_str(),
        m["quantity"].as_i64(),
        m["inventory"].as_i64(),
        m["reserved"].as_i64(),
        m["available"].as_i64(),
    )
}

/// The `derived` entry of one code, in a push answer.
fn derived<'a>(answer: &'a Value, sku: &str) -> &'a Value {
    answer["derived"]
        .as_array()
        .unwrap_or_else(|| panic!("derived in {answer}"))
        .iter()
        .find(|d| d["sku"] == sku)
        .unwrap_or_else(|| panic!("{sku} in derived of {answer}"))
}

async fn product<S, B>(app: &TestApp<S>, key: &str, shop: i64, sku: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&sku_path(shop, sku), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

#[actix_web::test]
async fn a_push_sets_absolute_counts_and_answers_what_became_of_every_row() {
    // Proves the answer: received, updated (a changed count, an untracked product starting to
    // be tracked), unchanged (the count was already that), unknown_skus, and derived with the
    // resulting figures of every known code (reserved held by an order is kept).
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(10)).await;
    stocked(&app, &acme.key, shop, "B", 1000, json!(5)).await;
    stocked(&app, &acme.key, shop, "C", 1000, Value::Null).await;
    order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 2}])).await;

    let answer = pushed(
        &app,
        &acme.key,
        shop,
        json!([
            {"sku": "A", "inventory": 12},
            {"sku": "B", "inventory": 5},
            {"sku": "C", "inventory": 0},
            {"sku": "ZZZ", "inventory": 3},
        ]),
    )
    .await;
    assert_eq!(answer["received"], 4, "{answer}");
    assert_eq!(answer["updated"], 2, "{answer}");
    assert_eq!(answer["unchanged"], 1, "{answer}");
    assert_eq!(answer["unknown_skus"], json!(["ZZZ"]), "{answer}");
    assert_eq!(answer["derived"].as_array().map(Vec::len), Some(3), "one per known code: {answer}");
    let a = derived(&answer, "A");
    assert_eq!((&a["inventory"], &a["reserved"], &a["available"]), (&json!(12), &json!(2), &json!(10)), "{a}");
    assert_eq!(a["availability"], "in stock");
    let b = derived(&answer, "B");
    assert_eq!((&b["inventory"], &b["reserved"], &b["available"]), (&json!(5), &json!(0), &json!(5)), "{b}");
    let c = derived(&answer, "C");
    assert_eq!((&c["inventory"], &c["reserved"], &c["available"]), (&json!(0), &json!(0), &json!(0)), "{c}");
    assert_eq!(c["availability"], "out of stock");

    let a = product(&app, &acme.key, shop, "A").await;
    assert_eq!((&a["inventory"], &a["reserved"], &a["available"]), (&json!(12), &json!(2), &json!(10)), "{a}");
    let c = product(&app, &acme.key, shop, "C").await;
    assert_eq!((&c["inventory"], &c["availability"]), (&json!(0), &json!("out of stock")), "{c}");
}

#[actix_web::test]
async fn a_repeated_push_counts_as_unchanged_and_writes_no_movement() {
    // Proves "unchanged levels are counted unchanged": the second identical push updates
    // nothing and leaves every product's trail as it was.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(1)).await;
    stocked(&app, &acme.key, shop, "B", 1000, json!(1)).await;
    let levels =
        json!([{"sku": "A", "inventory": 7}, {"retailer_id": "B", "inventory": 9}, {"sku": "X", "inventory": 1}]);

    let first = pushed(&app, &acme.key, shop, levels.clone()).await;
    assert_eq!((&first["updated"], &first["unchanged"]), (&json!(2), &json!(0)), "{first}");
    let trail_a = movements(&app, &acme.key, shop, "A").await;
    let trail_b = movements(&app, &acme.key, shop, "B").await;
    assert_eq!(trail_a[0]["kind"], "sync", "{trail_a:?}");
    assert_eq!(trail_b[0]["kind"], "sync", "retailer_id is accepted for sku: {trail_b:?}");

    let again = pushed(&app, &acme.key, shop, levels).await;
    assert_eq!(again["received"], 3, "{again}");
    assert_eq!(again["updated"], 0, "{again}");
    assert_eq!(again["unchanged"], 2, "{again}");
    assert_eq!(again["unknown_skus"], json!(["X"]), "{again}");
    assert_eq!(derived(&again, "A")["inventory"], 7);
    assert_eq!(movements(&app, &acme.key, shop, "A").await, trail_a, "no new movement for A");
    assert_eq!(movements(&app, &acme.key, shop, "B").await, trail_b, "no new movement for B");
}

#[actix_web::test]
async fn a_code_sent_twice_in_one_push_takes_the_last_row() {
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(3)).await;
    let answer =
        pushed(&app, &acme.key, shop, json!([{"sku": "A", "inventory": 1}, {"sku": "A", "inventory": 6}])).await;
    assert_eq!(derived(&answer, "A")["inventory"], 6, "{answer}");
    assert_eq!(product(&app, &acme.key, shop, "A").await["inventory"], 6);
}

#[actix_web::test]
async fn a_malformed_row_refuses_the_whole_push() {
    // Proves the 422 naming the row (`levels[3].inventory`) and that the good rows before it did
    // not land; also a negative count, a missing sku, no rows and no `levels` at all.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(3)).await;
    let trail = movements(&app, &acme.key, shop, "A").await;

    let res = push(
        &app,
        &acme.key,
        shop,
        json!([
            {"sku": "A", "inventory": 50},
            {"sku": "B", "inventory": 1},
            {"sku": "C", "inventory": 2},
            {"sku": "D", "inventory": "lots"},
        ]),
    )
    .await;
    assert_error(&res, 422);
    assert!(res.body["errors"].get("levels[3].inventory").is_some(), "errors names levels[3].inventory: {}", res.body);

    for levels in [
        json!([{"sku": "A", "inventory": -1}]),
        json!([{"sku": "A", "inventory": 2.5}]),
        json!([{"inventory": 4}]),
        json!([]),
    ] {
        let res = push(&app, &acme.key, shop, levels.clone()).await;
        assert_error(&res, 422);
        assert!(res.body["errors"].is_object(), "field errors for {levels}: {}", res.body);
    }
    let res = app.post(&inventory_path(shop), &acme.key, json!({})).await;
    assert_error(&res, 422);

    assert_eq!(product(&app, &acme.key, shop, "A").await["inventory"], 3, "nothing landed");
    assert_eq!(movements(&app, &acme.key, shop, "A").await, trail, "nothing written");
}

#[actix_web::test]
async fn a_push_takes_up_to_5000_rows_and_refuses_more() {
    // Proves the limit (contract: Limits, inventory push 5,000 rows): 5,000 rows are taken,
    // 5,001 are 422 and change nothing.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(3)).await;

    let rows = |n: usize, a: i64| -> Value {
        let mut rows = vec![json!({"sku": "A", "inventory": a})];
        rows.extend((1..n).map(|i| json!({"sku": format!("GHOST-{i}"), "inventory": 1})));
        Value::Array(rows)
    };
    let res = push(&app, &acme.key, shop, rows(5001, 40)).await;
    assert_error(&res, 422);
    assert_eq!(product(&app, &acme.key, shop, "A").await["inventory"], 3, "a refused push changes nothing");

    let answer = pushed(&app, &acme.key, shop, rows(5000, 41)).await;
    assert_eq!(answer["received"], 5000, "received");
    assert_eq!(answer["updated"], 1, "updated");
    assert_eq!(answer["unknown_skus"].as_array().map(Vec::len), Some(4999), "unknown_skus");
    assert_eq!(product(&app, &acme.key, shop, "A").await["inventory"], 41);
}

#[actix_web::test]
async fn the_inventory_lists_on_hand_reserved_and_available_with_filters() {
    // Proves the figures per product (untracked: inventory and available null), `sku[]`,
    // `sku=a,b` and `tracked_only=true`.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    let a = id_of(&stocked(&app, &acme.key, shop, "A", 1000, json!(10)).await);
    let b = id_of(&stocked(&app, &acme.key, shop, "B", 1000, Value::Null).await);
    let c = id_of(&stocked(&app, &acme.key, shop, "C", 1000, json!(0)).await);
    order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 3}])).await;

    let all = levels(&app, &acme.key, shop, "").await;
    assert_eq!(skus(&all), ["A", "B", "C"]);
    let expect = [
        json!({"sku": "A", "product_id": a, "inventory": 10, "reserved": 3, "available": 7, "availability": "in stock"}),
        json!({"sku": "B", "product_id": b, "inventory": null, "reserved": 0, "available": null, "availability": "in stock"}),
        json!({"sku": "C", "product_id": c, "inventory": 0, "reserved": 0, "available": 0, "availability": "out of stock"}),
    ];
    for (item, expect) in all.iter().zip(expect) {
        for (field, value) in expect.as_object().expect("object") {
            assert_eq!(&item[field], value, "{field} of {item}");
        }
    }

    assert_eq!(skus(&levels(&app, &acme.key, shop, "?sku%5B%5D=A&sku%5B%5D=C").await), ["A", "C"]);
    assert_eq!(skus(&levels(&app, &acme.key, shop, "?sku=A,B").await), ["A", "B"]);
    assert_eq!(skus(&levels(&app, &acme.key, shop, "?tracked_only=true").await), ["A", "C"]);
    assert_eq!(skus(&levels(&app, &acme.key, shop, "?tracked_only=true&sku%5B%5D=B").await), Vec::<&str>::new());
}

#[actix_web::test]
async fn movements_tell_every_change_newest_first_with_signed_quantities_and_figures() {
    // Proves the kinds `sync` (a push), `adjust` (a PUT of inventory) and `reserve` (an order),
    // each with its signed quantity, the product's figures after it, its cause and order id.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(10)).await;
    pushed(&app, &acme.key, shop, json!([{"sku": "A", "inventory": 12}])).await;
    put_product(&app, &acme.key, shop, "A", json!({"inventory": 7})).await;
    let placed = order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 3}])).await;
    let order_id = id_of(&placed);

    let trail = movements(&app, &acme.key, shop, "A").await;
    assert!(trail.len() >= 3, "{trail:?}");
    assert_eq!(fields(&trail[0]), (Some("reserve"), Some(-3), Some(7), Some(3), Some(4)), "{}", trail[0]);
    assert_eq!(fields(&trail[1]), (Some("adjust"), Some(-5), Some(7), Some(0), Some(7)), "{}", trail[1]);
    assert_eq!(fields(&trail[2]), (Some("sync"), Some(2), Some(12), Some(0), Some(12)), "{}", trail[2]);

    assert_eq!(trail[0]["order_id"], order_id);
    assert_eq!(trail[0]["cause"], format!("order {order_id} created"));
    assert_eq!(trail[1]["cause"], "product update");
    assert_eq!(trail[1]["order_id"], Value::Null);
    assert_eq!(trail[2]["cause"], "inventory push");
    for m in &trail {
        for field in [
            "id",
            "kind",
            "quantity",
            "inventory",
            "reserved",
            "available",
            "cause",
            "order_id",
            "sync_id",
            "created_at",
        ] {
            assert!(m.get(field).is_some(), "{field} in {m}");
        }
    }
    let ids: Vec<i64> = trail.iter().map(id_of).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");
}

#[actix_web::test]
async fn stock_low_is_emitted_once_per_product_per_day_when_available_reaches_the_threshold() {
    // Proves the threshold (at, not only below), once a day per product (a second drop the
    // same day says nothing, another product has its own), again the next day, and the payload.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = id_of(
        &create_shop(&app, &acme.key, json!({"name": "Duka", "stock_policy": "svc", "low_stock_threshold": 3})).await,
    );
    let a = id_of(&stocked(&app, &acme.key, shop, "A", 1000, json!(10)).await);
    stocked(&app, &acme.key, shop, "B", 1000, json!(10)).await;

    pushed(&app, &acme.key, shop, json!([{"sku": "A", "inventory": 5}])).await;
    assert!(events(&app, acme.tenant, "stock.low").await.is_empty(), "5 is above 3");

    pushed(&app, &acme.key, shop, json!([{"sku": "A", "inventory": 3}])).await;
    let low = events(&app, acme.tenant, "stock.low").await;
    assert_eq!(low.len(), 1, "{low:?}");
    assert_eq!(low[0]["catalogue_id"], shop);
    assert_eq!(low[0]["product"]["id"], a);
    assert_eq!(low[0]["product"]["sku"], "A");
    assert_eq!(low[0]["product"]["name"], "Product A");
    assert_eq!(low[0]["available"], 3);
    assert_eq!(low[0]["low_stock_threshold"], 3);

    pushed(&app, &acme.key, shop, json!([{"sku": "A", "inventory": 2}])).await;
    assert_eq!(events(&app, acme.tenant, "stock.low").await.len(), 1, "once a day for A");

    pushed(&app, &acme.key, shop, json!([{"sku": "B", "inventory": 1}])).await;
    let low = events(&app, acme.tenant, "stock.low").await;
    assert_eq!(low.len(), 2, "B has its own: {low:?}");
    assert_eq!(low[1]["product"]["sku"], "B");

    app.advance(time::Duration::days(1)).await;
    pushed(&app, &acme.key, shop, json!([{"sku": "A", "inventory": 1}])).await;
    let low = events(&app, acme.tenant, "stock.low").await;
    assert_eq!(low.len(), 3, "a new day: {low:?}");
    assert_eq!((&low[2]["product"]["sku"], &low[2]["available"]), (&json!("A"), &json!(1)));
}

#[actix_web::test]
async fn stock_low_follows_a_reservation_too() {
    // Proves "after any stock change": an order holding units brings `available` to the
    // threshold and the alert goes out; untracked products never alert.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = id_of(
        &create_shop(&app, &acme.key, json!({"name": "Duka", "stock_policy": "svc", "low_stock_threshold": 2})).await,
    );
    stocked(&app, &acme.key, shop, "A", 1000, json!(5)).await;
    stocked(&app, &acme.key, shop, "U", 1000, Value::Null).await;
    order(&app, &acme.key, shop, json!([{"sku": "U", "quantity": 9}])).await;
    assert!(events(&app, acme.tenant, "stock.low").await.is_empty(), "untracked never alerts");

    order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 3}])).await;
    let low = events(&app, acme.tenant, "stock.low").await;
    assert_eq!(low.len(), 1, "{low:?}");
    assert_eq!((&low[0]["product"]["sku"], &low[0]["available"]), (&json!("A"), &json!(2)));
}

#[actix_web::test]
async fn a_shop_without_a_threshold_never_emits_stock_low() {
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(5)).await;
    pushed(&app, &acme.key, shop, json!([{"sku": "A", "inventory": 0}])).await;
    assert!(events(&app, acme.tenant, "stock.low").await.is_empty());
}

#[actix_web::test]
async fn a_viewer_reads_stock_but_cannot_push_it() {
    // Proves `communications.catalogue.view` reads inventory and movements, and the push needs
    // `.manage` (403, nothing changed); a key without an issuer is refused.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(4)).await;
    let viewer = app.key(acme.tenant, app.user(acme.tenant, VIEWER).await).await;

    assert_eq!(skus(&levels(&app, &viewer, shop, "").await), ["A"]);
    assert_status(&app.get(&movements_path(shop, "A"), &viewer).await, 200);
    let res = push(&app, &viewer, shop, json!([{"sku": "A", "inventory": 9}])).await;
    assert_error(&res, 403);
    assert_eq!(product(&app, &acme.key, shop, "A").await["inventory"], 4);

    let legacy = app.legacy_key(acme.tenant).await;
    assert_error(&app.get(&inventory_path(shop), &legacy).await, 403);
}

#[actix_web::test]
async fn another_accounts_stock_is_not_found() {
    // Proves isolation: another tenant's shop is 404 on the listing, the push and the
    // movements, and the push changes nothing there.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let other = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(4)).await;

    assert_error(&app.get(&inventory_path(shop), &other.key).await, 404);
    assert_error(&push(&app, &other.key, shop, json!([{"sku": "A", "inventory": 9}])).await, 404);
    assert_error(&app.get(&movements_path(shop, "A"), &other.key).await, 404);
    assert_eq!(product(&app, &acme.key, shop, "A").await["inventory"], 4);
}
