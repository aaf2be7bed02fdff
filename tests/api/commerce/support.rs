//! Helpers of the commerce tests: the routes, a shop and products made through the API, and the
//! events the outbox holds.

#![allow(dead_code)]

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Resp, TestApp};
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Jsonb, Text};
use kernel::TenantId;
use serde_json::{Value, json};

pub const CATALOGUES: &str = "/api/v3/catalogues";
pub const ORDERS: &str = "/api/v3/catalogues/orders";
/// Reads only.
pub const VIEWER: &str = "communications.catalogue.view";
/// Reads and writes.
pub const MANAGER: &str = "communications.catalogue.view,communications.catalogue.manage";

pub fn shop_path(shop: i64) -> String {
    format!("{CATALOGUES}/{shop}")
}

pub fn sku_path(shop: i64, sku: &str) -> String {
    format!("{CATALOGUES}/{shop}/products/by-sku/{sku}")
}

pub fn product_path(shop: i64, id: i64) -> String {
    format!("{CATALOGUES}/{shop}/products/{id}")
}

pub fn order_status_path(order: i64) -> String {
    format!("{ORDERS}/{order}/status")
}

#[track_caller]
pub fn assert_status(res: &Resp, status: u16) {
    assert_eq!(res.status, status, "expected {status}, got {}: {}", res.status, res.body);
}

#[track_caller]
pub fn id_of(value: &Value) -> i64 {
    value["id"].as_i64().unwrap_or_else(|| panic!("id in {value}"))
}

/// `POST /catalogues` (201 expected): the shop.
pub async fn create_shop<S, B>(app: &TestApp<S>, key: &str, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(CATALOGUES, key, body).await;
    assert_status(&res, 201);
    res.data().clone()
}

/// A shop named `name` with the given stock policy and otherwise the defaults: its id.
pub async fn shop<S, B>(app: &TestApp<S>, key: &str, stock_policy: &str) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let shop = create_shop(app, key, json!({ "name": "Duka Letu", "stock_policy": stock_policy })).await;
    id_of(&shop)
}

/// `PUT .../products/by-sku/{sku}` expecting 200 or 201: the product.
pub async fn put_product<S, B>(app: &TestApp<S>, key: &str, shop: i64, sku: &str, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.put(&sku_path(shop, sku), key, body).await;
    assert!(res.status == 200 || res.status == 201, "PUT {sku}: {} {}", res.status, res.body);
    res.data().clone()
}

/// A product with a price and `inventory` units on hand (null: untracked).
pub async fn stocked<S, B>(app: &TestApp<S>, key: &str, shop: i64, sku: &str, price: i64, inventory: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    put_product(
        app,
        key,
        shop,
        sku,
        json!({ "name": format!("Product {sku}"), "price": price, "inventory": inventory }),
    )
    .await
}

/// `POST /catalogues/{shop}/orders` with `lines` (201 expected): the order.
pub async fn order<S, B>(app: &TestApp<S>, key: &str, shop: i64, lines: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app
        .post(
            &format!("{CATALOGUES}/{shop}/orders"),
            key,
            json!({ "platform": "manual", "customer_handle": "255712345678", "customer_name": "Amina Juma", "lines": lines }),
        )
        .await;
    assert_status(&res, 201);
    res.data().clone()
}

/// `GET /catalogues/orders/{order}` expecting 200: the order.
pub async fn read_order<S, B>(app: &TestApp<S>, key: &str, order: i64) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("{ORDERS}/{order}"), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// `PUT /catalogues/orders/{order}/status` expecting 200: the order.
pub async fn set_status<S, B>(app: &TestApp<S>, key: &str, order: i64, status: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.put(&order_status_path(order), key, json!({ "status": status })).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["status"], status, "{}", res.body);
    res.data().clone()
}

#[derive(QueryableByName)]
struct EventRow {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Jsonb)]
    payload: Value,
}

/// The payloads of the tenant's events named `name`, oldest first, straight from the outbox.
pub async fn events<S>(app: &TestApp<S>, tenant: TenantId, name: &str) -> Vec<Value> {
    use diesel_async::RunQueryDsl;
    let mut conn = store::connect_system(&app.pool).await.expect("connection");
    let rows: Vec<EventRow> = diesel::sql_query(
        "SELECT name, payload FROM events WHERE tenant_id = $1 AND name = $2 ORDER BY occurred_at, created_at, ctid",
    )
    .bind::<BigInt, _>(tenant.0)
    .bind::<Text, _>(name)
    .load(&mut conn)
    .await
    .expect("events");
    rows.into_iter().map(|r| r.payload).collect()
}
