//! Products (contract: Product; Catalogues, products, stock, orders; docs/api.md "Commerce:
//! shops, products, stock and orders", Products): `PUT` by code creates then updates only what
//! it sends, the field checks, `retailer_id`, currencies, derived and explicit availability,
//! brand and category records, addressing by code and by id, renames (refused when taken or
//! live), delete and revival, the list, permissions and tenant isolation.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Resp, TestApp, json, spawn};
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text, Timestamptz};
use serde_json::Value;

use super::support::*;
use crate::framework::assert_error;

/// `GET` a product path, 200 expected: the product.
async fn read<S, B>(app: &TestApp<S>, key: &str, path: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(path, key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["status"], "success", "{}", res.body);
    res.data().clone()
}

/// `GET /catalogues/{shop}/products?query`, 200 expected: the page.
async fn list<S, B>(app: &TestApp<S>, key: &str, shop: i64, query: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("{CATALOGUES}/{shop}/products?{query}"), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// The codes of a page's items, in order.
fn skus(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap_or_else(|| panic!("items in {page}"))
        .iter()
        .map(|p| p["sku"].as_str().unwrap_or_else(|| panic!("sku in {p}")).to_owned())
        .collect()
}

/// A 422 naming `field` among its errors.
#[track_caller]
fn assert_invalid(res: &Resp, field: &str) {
    assert_error(res, 422);
    assert!(res.body["errors"][field].as_array().is_some_and(|m| !m.is_empty()), "errors.{field} in {}", res.body);
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// How many rows of `table` (brands or categories) the shop has.
async fn records<S>(app: &TestApp<S>, table: &str, shop: i64) -> i64 {
    use diesel_async::RunQueryDsl;
    let mut conn = store::connect_system(&app.pool).await.expect("connection");
    let row: Count = diesel::sql_query(format!("SELECT count(*) AS n FROM {table} WHERE catalogue_id = $1"))
        .bind::<BigInt, _>(shop)
        .get_result(&mut conn)
        .await
        .expect("count");
    row.n
}

/// Gives the product a listing on `platform` in `state`, as publishing will.
async fn list_on<S>(app: &TestApp<S>, product: i64, platform: &str, state: &str) {
    use diesel_async::RunQueryDsl;
    let mut conn = store::connect_system(&app.pool).await.expect("connection");
    diesel::sql_query(
        "INSERT INTO product_listings (tenant_id, product_id, platform, state, problem, updated_at)
         SELECT tenant_id, id, $2, $3, NULL, $4 FROM products WHERE id = $1",
    )
    .bind::<BigInt, _>(product)
    .bind::<Text, _>(platform)
    .bind::<Text, _>(state)
    .bind::<Timestamptz, _>(app.clock.now())
    .execute(&mut conn)
    .await
    .expect("listing");
}

#[actix_web::test]
async fn put_by_code_creates_with_201_then_updates_only_the_fields_sent_with_200() {
    // Proves the create (201, every read field) and the partial update (200): members not sent
    // keep their values, `updated_at` moves and `created_at` does not.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let res = app
        .put(
            &sku_path(shop, "KANGA-1"),
            &acme.key,
            json!({"name": "Kanga", "price": 4500000, "sale_price": 4000000, "description": "Cotton",
                   "image_url": "https://img.example.com/kanga.jpg", "inventory": 5, "brand": "Mama", "category": "Cloth"}),
        )
        .await;
    assert_status(&res, 201);
    let made = res.data().clone();
    let id = id_of(&made);
    let expected = [
        ("catalogue_id", json!(shop)),
        ("sku", json!("KANGA-1")),
        ("retailer_id", json!("KANGA-1")),
        ("name", json!("Kanga")),
        ("price", json!(4500000)),
        ("sale_price", json!(4000000)),
        ("description", json!("Cotton")),
        ("currency", json!("TZS")),
        ("image_url", json!("https://img.example.com/kanga.jpg")),
        ("inventory", json!(5)),
        ("reserved", json!(0)),
        ("available", json!(5)),
        ("availability", json!("in stock")),
        ("availability_source", json!("derived")),
        ("brand", json!("Mama")),
        ("category", json!("Cloth")),
        ("listings", json!([])),
        ("sync_status", Value::Null),
    ];
    for (field, value) in &expected {
        assert_eq!(&made[*field], value, "{field} in {made}");
    }
    assert!(made["created_at"].is_string(), "{made}");

    app.clock.advance(time::Duration::minutes(5));
    let res = app.put(&sku_path(shop, "KANGA-1"), &acme.key, json!({"price": 5000000, "colour": "red"})).await;
    assert_status(&res, 200);
    let updated = res.data().clone();
    assert_eq!(id_of(&updated), id, "the same product");
    assert_eq!(updated["price"], 5000000);
    for field in ["name", "sale_price", "description", "image_url", "inventory", "brand", "category", "currency"] {
        assert_eq!(updated[field], made[field], "{field} untouched in {updated}");
    }
    assert_eq!(updated.get("colour"), None, "unknown members ignored");
    assert_eq!(updated["created_at"], made["created_at"]);
    assert_ne!(updated["updated_at"], made["updated_at"], "updated_at moves");
    assert_eq!(read(&app, &acme.key, &sku_path(shop, "KANGA-1")).await, updated, "stored as answered");
}

#[actix_web::test]
async fn name_and_price_are_required_to_create_but_not_to_update() {
    // Proves a create without `name` or `price` is a 422 on that field and makes nothing, while
    // an update may send either alone.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    assert_invalid(&app.put(&sku_path(shop, "TEA"), &acme.key, json!({"price": 1500})).await, "name");
    assert_invalid(&app.put(&sku_path(shop, "TEA"), &acme.key, json!({"name": "Tea"})).await, "price");
    assert_invalid(&app.put(&sku_path(shop, "TEA"), &acme.key, json!({"name": "Tea", "price": null})).await, "price");
    let res = app.put(&sku_path(shop, "TEA"), &acme.key, json!({})).await;
    assert_error(&res, 422);
    assert_error(&app.get(&sku_path(shop, "TEA"), &acme.key).await, 404);
    assert_eq!(list(&app, &acme.key, shop, "").await["pagination"]["total"], 0);

    put_product(&app, &acme.key, shop, "TEA", json!({"name": "Tea", "price": 1500})).await;
    let res = app.put(&sku_path(shop, "TEA"), &acme.key, json!({"name": "Black tea"})).await;
    assert_status(&res, 200);
    assert_eq!((&res.data()["name"], &res.data()["price"]), (&json!("Black tea"), &json!(1500)));
}

#[actix_web::test]
async fn bad_field_values_are_refused_with_422_and_change_nothing() {
    // Proves the field checks of a product, on create and on update.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let cases = [
        ("price", json!(-1)),
        ("sale_price", json!(1501)),
        ("sale_price", json!(-1)),
        ("name", json!("n".repeat(201))),
        ("name", json!("")),
        ("description", json!("d".repeat(10_000))),
        ("currency", json!("shilling")),
        ("image_url", json!("ftp://img.example.com/a.jpg")),
        ("image_url", json!(format!("https://img.example.com/{}", "a".repeat(2040)))),
        ("inventory", json!(-1)),
        ("availability", json!("sold out")),
        ("brand", json!("b".repeat(101))),
        ("category", json!("c".repeat(101))),
    ];
    for (field, value) in &cases {
        let mut body = json!({"name": "Tea", "price": 1500});
        body[*field] = value.clone();
        assert_invalid(&app.put(&sku_path(shop, "TEA"), &acme.key, body).await, field);
    }
    // not a whole number of minor units
    let res = app.put(&sku_path(shop, "TEA"), &acme.key, json!({"name": "Tea", "price": 15.5})).await;
    assert_error(&res, 422);
    assert_error(&app.get(&sku_path(shop, "TEA"), &acme.key).await, 404);

    let made =
        put_product(&app, &acme.key, shop, "TEA", json!({"name": "Tea", "price": 1500, "sale_price": 1200})).await;
    for (field, value) in &cases {
        let mut body = json!({});
        body[*field] = value.clone();
        assert_invalid(&app.put(&sku_path(shop, "TEA"), &acme.key, body).await, field);
    }
    // a price below the current sale price would put the sale price above it
    assert_invalid(&app.put(&sku_path(shop, "TEA"), &acme.key, json!({"price": 1000})).await, "sale_price");
    assert_eq!(read(&app, &acme.key, &sku_path(shop, "TEA")).await, made, "nothing changed");

    let cleared = put_product(&app, &acme.key, shop, "TEA", json!({"sale_price": null})).await;
    assert_eq!((&cleared["sale_price"], &cleared["price"]), (&Value::Null, &json!(1500)));
}

#[actix_web::test]
async fn retailer_id_is_accepted_for_sku_in_bodies_and_returned_beside_it() {
    // Proves the alias: `retailer_id` in a PUT body renames like `sku`, and every read carries
    // `retailer_id` equal to `sku`.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let made = put_product(&app, &acme.key, shop, "OLD-1", json!({"name": "Mat", "price": 800})).await;
    assert_eq!((&made["sku"], &made["retailer_id"]), (&json!("OLD-1"), &json!("OLD-1")));
    let res = app.put(&sku_path(shop, "OLD-1"), &acme.key, json!({"retailer_id": "NEW-1"})).await;
    assert_status(&res, 200);
    assert_eq!((&res.data()["sku"], &res.data()["retailer_id"]), (&json!("NEW-1"), &json!("NEW-1")));
    assert_eq!(id_of(res.data()), id_of(&made));
    assert_error(&app.get(&sku_path(shop, "OLD-1"), &acme.key).await, 404);
    assert_eq!(read(&app, &acme.key, &sku_path(shop, "NEW-1")).await["retailer_id"], "NEW-1");
    let page = list(&app, &acme.key, shop, "").await;
    assert_eq!(page["items"][0]["retailer_id"], "NEW-1");

    // Beside a winning `sku`, `retailer_id` is still held to its rules; lengths count the text
    // as sent, spaces included.
    for bad in [json!("R\u{84}"), json!("a/b"), json!(format!("{} R", " ".repeat(100)))] {
        let body = json!({"sku": "NEW-1", "retailer_id": bad});
        let res = app.put(&sku_path(shop, "NEW-1"), &acme.key, body).await;
        assert_invalid(&res, "retailer_id");
    }
    assert_eq!(read(&app, &acme.key, &sku_path(shop, "NEW-1")).await["retailer_id"], "NEW-1", "nothing changed");
}

#[actix_web::test]
async fn currency_defaults_to_the_shop_then_the_account_and_prices_stay_in_minor_units() {
    // Proves the currency chain (explicit, the shop's default, the account's TZS) and that
    // prices are stored and returned as the whole minor units sent.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let kes = id_of(&create_shop(&app, &acme.key, json!({"name": "Nairobi", "default_currency": "KES"})).await);
    let plain = shop(&app, &acme.key, "external").await;

    let a = put_product(&app, &acme.key, kes, "A", json!({"name": "A", "price": 4500000})).await;
    assert_eq!((&a["currency"], &a["price"]), (&json!("KES"), &json!(4500000)));
    let b = put_product(&app, &acme.key, plain, "B", json!({"name": "B", "price": 0})).await;
    assert_eq!((&b["currency"], &b["price"]), (&json!("TZS"), &json!(0)));
    let c = put_product(&app, &acme.key, kes, "C", json!({"name": "C", "price": 199, "currency": "USD"})).await;
    assert_eq!((&c["currency"], &c["price"]), (&json!("USD"), &json!(199)));
}

#[actix_web::test]
async fn availability_is_derived_from_stock_and_backorder() {
    // Proves the derived value: untracked `in stock`, tracked above zero `in stock`, zero
    // `out of stock`, and zero in a backorder shop `in stock`; `available` null when untracked.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    let backorder = id_of(&create_shop(&app, &acme.key, json!({"name": "Backorder", "allow_backorder": true})).await);

    let untracked = stocked(&app, &acme.key, shop, "U", 100, Value::Null).await;
    assert_eq!(
        (&untracked["inventory"], &untracked["available"], &untracked["availability"]),
        (&Value::Null, &Value::Null, &json!("in stock"))
    );
    let some = stocked(&app, &acme.key, shop, "S", 100, json!(3)).await;
    assert_eq!((&some["available"], &some["availability"]), (&json!(3), &json!("in stock")));
    let none = stocked(&app, &acme.key, shop, "N", 100, json!(0)).await;
    assert_eq!((&none["available"], &none["availability"]), (&json!(0), &json!("out of stock")));
    assert_eq!(none["availability_source"], "derived");
    let owed = stocked(&app, &acme.key, backorder, "N", 100, json!(0)).await;
    assert_eq!(owed["availability"], "in stock");

    // the derived value follows the stock
    let emptied = put_product(&app, &acme.key, shop, "S", json!({"inventory": 0})).await;
    assert_eq!(emptied["availability"], "out of stock");
    let refilled = put_product(&app, &acme.key, shop, "N", json!({"inventory": 7})).await;
    assert_eq!(refilled["availability"], "in stock");
    let untracked = put_product(&app, &acme.key, shop, "S", json!({"inventory": null})).await;
    assert_eq!((&untracked["inventory"], &untracked["availability"]), (&Value::Null, &json!("in stock")));
}

#[actix_web::test]
async fn an_explicit_availability_wins_and_null_returns_to_the_derived_value() {
    // Proves `availability` sent is kept whatever the stock (`availability_source` explicit),
    // and null hands it back to the derived value.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    let made = put_product(
        &app,
        &acme.key,
        shop,
        "P",
        json!({"name": "Pre", "price": 100, "inventory": 0, "availability": "preorder"}),
    )
    .await;
    assert_eq!((&made["availability"], &made["availability_source"]), (&json!("preorder"), &json!("explicit")));
    let stocked_up = put_product(&app, &acme.key, shop, "P", json!({"inventory": 9})).await;
    assert_eq!(stocked_up["availability"], "preorder", "explicit survives a stock change");
    let other = put_product(&app, &acme.key, shop, "P", json!({"availability": "discontinued"})).await;
    assert_eq!(other["availability"], "discontinued");
    for value in ["in stock", "out of stock", "available for order"] {
        assert_eq!(
            put_product(&app, &acme.key, shop, "P", json!({"availability": value})).await["availability"],
            value
        );
    }
    let derived = put_product(&app, &acme.key, shop, "P", json!({"availability": null})).await;
    assert_eq!((&derived["availability"], &derived["availability_source"]), (&json!("in stock"), &json!("derived")));
    let out = put_product(&app, &acme.key, shop, "P", json!({"inventory": 0})).await;
    assert_eq!(out["availability"], "out of stock");
}

#[actix_web::test]
async fn brand_and_category_text_creates_records_matched_without_case() {
    // Proves a new brand or category name makes one record of the shop, the same name in
    // another case reuses it, the name is returned, and null clears the product's.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let a = put_product(
        &app,
        &acme.key,
        shop,
        "A",
        json!({"name": "A", "price": 1, "brand": "Azam", "category": "Drinks"}),
    )
    .await;
    assert_eq!((&a["brand"], &a["category"]), (&json!("Azam"), &json!("Drinks")));
    let b = put_product(
        &app,
        &acme.key,
        shop,
        "B",
        json!({"name": "B", "price": 1, "brand": "AZAM", "category": "drinks"}),
    )
    .await;
    assert!(b["brand"].as_str().is_some_and(|s| s.eq_ignore_ascii_case("azam")), "{b}");
    assert!(b["category"].as_str().is_some_and(|s| s.eq_ignore_ascii_case("drinks")), "{b}");
    assert_eq!(
        (records(&app, "catalogue_brands", shop).await, records(&app, "catalogue_categories", shop).await),
        (1, 1)
    );

    put_product(&app, &acme.key, shop, "C", json!({"name": "C", "price": 1, "brand": "Bakhresa", "category": "Flour"}))
        .await;
    assert_eq!(
        (records(&app, "catalogue_brands", shop).await, records(&app, "catalogue_categories", shop).await),
        (2, 2)
    );

    let cleared = put_product(&app, &acme.key, shop, "A", json!({"brand": null, "category": null})).await;
    assert_eq!((&cleared["brand"], &cleared["category"]), (&Value::Null, &Value::Null));
    assert_eq!(read(&app, &acme.key, &sku_path(shop, "B")).await["brand"], b["brand"], "others keep theirs");
}

#[actix_web::test]
async fn a_product_reads_the_same_by_code_and_by_id_and_put_by_id_only_updates() {
    // Proves both addresses give the same record, PUT by numeric id updates (200), and an
    // unknown id or code is 404 (PUT by id creates nothing).
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let made = stocked(&app, &acme.key, shop, "TEA", 1500, json!(4)).await;
    let id = id_of(&made);
    let by_code = read(&app, &acme.key, &sku_path(shop, "TEA")).await;
    assert_eq!(read(&app, &acme.key, &product_path(shop, id)).await, by_code);
    assert_eq!(by_code, made);

    let res = app.put(&product_path(shop, id), &acme.key, json!({"price": 1700})).await;
    assert_status(&res, 200);
    assert_eq!((&res.data()["price"], &res.data()["sku"]), (&json!(1700), &json!("TEA")));
    assert_eq!(read(&app, &acme.key, &sku_path(shop, "TEA")).await["price"], 1700);

    let missing = id + 1000;
    assert_error(&app.put(&product_path(shop, missing), &acme.key, json!({"name": "Ghost", "price": 1})).await, 404);
    assert_error(&app.get(&product_path(shop, missing), &acme.key).await, 404);
    assert_error(&app.delete(&product_path(shop, missing), &acme.key).await, 404);
    assert_error(&app.get(&sku_path(shop, "GHOST"), &acme.key).await, 404);
    assert_error(&app.delete(&sku_path(shop, "GHOST"), &acme.key).await, 404);
    assert_eq!(list(&app, &acme.key, shop, "").await["pagination"]["total"], 1, "nothing created");
}

#[actix_web::test]
async fn sku_in_the_body_renames_the_code_unless_another_product_has_it() {
    // Proves the rename (same id, old code gone), 409 when the code is taken (nothing
    // changed), and 422 for a code with `/` or over 100 characters.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let tea = id_of(&stocked(&app, &acme.key, shop, "TEA", 1500, json!(2)).await);
    stocked(&app, &acme.key, shop, "SUGAR", 2500, json!(2)).await;

    let res = app.put(&sku_path(shop, "TEA"), &acme.key, json!({"sku": "CHAI", "price": 1600})).await;
    assert_status(&res, 200);
    assert_eq!((id_of(res.data()), &res.data()["sku"], &res.data()["price"]), (tea, &json!("CHAI"), &json!(1600)));
    assert_error(&app.get(&sku_path(shop, "TEA"), &acme.key).await, 404);
    assert_eq!(id_of(&read(&app, &acme.key, &sku_path(shop, "CHAI")).await), tea);

    let res = app.put(&sku_path(shop, "CHAI"), &acme.key, json!({"sku": "SUGAR", "price": 1})).await;
    assert_error(&res, 409);
    let res = app.put(&product_path(shop, tea), &acme.key, json!({"sku": "SUGAR"})).await;
    assert_error(&res, 409);
    let chai = read(&app, &acme.key, &sku_path(shop, "CHAI")).await;
    assert_eq!(chai["price"], 1600, "a refused rename changes nothing");
    assert_eq!(read(&app, &acme.key, &sku_path(shop, "SUGAR")).await["price"], 2500);

    assert_invalid(&app.put(&sku_path(shop, "CHAI"), &acme.key, json!({"sku": "A/B"})).await, "sku");
    assert_invalid(&app.put(&sku_path(shop, "CHAI"), &acme.key, json!({"sku": "S".repeat(101)})).await, "sku");
    let long = "L".repeat(100);
    assert_eq!(put_product(&app, &acme.key, shop, "CHAI", json!({"sku": long})).await["sku"], long.as_str());
}

#[actix_web::test]
async fn a_code_live_on_a_platform_is_frozen() {
    // Proves the rename refusal (409) once a listing is `synced` or `drifted`, that other
    // fields of a live product still change, and that a listing not live does not freeze it.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let synced = id_of(&stocked(&app, &acme.key, shop, "SYNCED", 100, json!(1)).await);
    let drifted = id_of(&stocked(&app, &acme.key, shop, "DRIFTED", 100, json!(1)).await);
    let failed = id_of(&stocked(&app, &acme.key, shop, "FAILED", 100, json!(1)).await);
    list_on(&app, synced, "whatsapp", "synced").await;
    list_on(&app, drifted, "instagram", "drifted").await;
    list_on(&app, failed, "whatsapp", "failed").await;

    assert_error(&app.put(&sku_path(shop, "SYNCED"), &acme.key, json!({"sku": "RENAMED-1"})).await, 409);
    assert_error(&app.put(&product_path(shop, synced), &acme.key, json!({"sku": "RENAMED-1"})).await, 409);
    assert_error(&app.put(&sku_path(shop, "DRIFTED"), &acme.key, json!({"retailer_id": "RENAMED-2"})).await, 409);
    assert_error(&app.get(&sku_path(shop, "RENAMED-1"), &acme.key).await, 404);
    assert_eq!(read(&app, &acme.key, &product_path(shop, synced)).await["sku"], "SYNCED");

    let res = app.put(&sku_path(shop, "SYNCED"), &acme.key, json!({"price": 900})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["price"], 900);
    let renamed = put_product(&app, &acme.key, shop, "FAILED", json!({"sku": "RENAMED-3"})).await;
    assert_eq!((id_of(&renamed), &renamed["sku"]), (failed, &json!("RENAMED-3")));
}

#[actix_web::test]
async fn delete_answers_the_product_and_takes_it_off_the_shelf() {
    // Proves DELETE (200, the product as it was), then 404 by code and by id, gone from the
    // list, the shop's count down, and a second DELETE 404.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let tea = stocked(&app, &acme.key, shop, "TEA", 1500, json!(3)).await;
    let salt = stocked(&app, &acme.key, shop, "SALT", 500, json!(3)).await;

    let res = app.delete(&sku_path(shop, "TEA"), &acme.key).await;
    assert_status(&res, 200);
    assert_eq!(
        (id_of(res.data()), &res.data()["sku"], &res.data()["price"]),
        (id_of(&tea), &json!("TEA"), &json!(1500))
    );
    assert_error(&app.get(&sku_path(shop, "TEA"), &acme.key).await, 404);
    assert_error(&app.get(&product_path(shop, id_of(&tea)), &acme.key).await, 404);
    assert_error(&app.put(&product_path(shop, id_of(&tea)), &acme.key, json!({"price": 1})).await, 404);
    assert_error(&app.delete(&sku_path(shop, "TEA"), &acme.key).await, 404);

    let res = app.delete(&product_path(shop, id_of(&salt)), &acme.key).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["sku"], "SALT");
    stocked(&app, &acme.key, shop, "RICE", 3000, json!(1)).await;
    let page = list(&app, &acme.key, shop, "").await;
    assert_eq!(skus(&page), ["RICE"]);
    assert_eq!(page["pagination"]["total"], 1);
    assert_eq!(read(&app, &acme.key, &shop_path(shop)).await["products_count"], 1);
}

#[actix_web::test]
async fn sending_a_deleted_code_again_revives_it_on_the_same_id_with_only_what_is_sent() {
    // Proves revival: 201 (a create), the same id, fields reset to what the PUT sends.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let old = put_product(
        &app,
        &acme.key,
        shop,
        "TEA",
        json!({"name": "Tea", "price": 1500, "description": "Old leaves", "brand": "Chai Bora", "inventory": 8,
               "availability": "preorder"}),
    )
    .await;
    assert_status(&app.delete(&sku_path(shop, "TEA"), &acme.key).await, 200);

    assert_invalid(&app.put(&sku_path(shop, "TEA"), &acme.key, json!({"price": 1})).await, "name");
    let res = app.put(&sku_path(shop, "TEA"), &acme.key, json!({"name": "New tea", "price": 1800})).await;
    assert_status(&res, 201);
    let revived = res.data().clone();
    assert_eq!(id_of(&revived), id_of(&old), "the same id");
    let expected = [
        ("name", json!("New tea")),
        ("price", json!(1800)),
        ("description", Value::Null),
        ("brand", Value::Null),
        ("inventory", Value::Null),
        ("availability", json!("in stock")),
        ("availability_source", json!("derived")),
    ];
    for (field, value) in &expected {
        assert_eq!(&revived[*field], value, "{field} in {revived}");
    }
    assert_eq!(read(&app, &acme.key, &product_path(shop, id_of(&old))).await["name"], "New tea");
    assert_eq!(read(&app, &acme.key, &shop_path(shop)).await["products_count"], 1);
}

#[actix_web::test]
async fn the_product_list_pages_25_at_a_time_oldest_first() {
    // Proves the standard pagination of the shelf (default 25, `page`, `limit`), by id, and
    // that another shop's products stay out.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let other = shop_other(&app, &acme.key).await;
    stocked(&app, &acme.key, other, "ELSEWHERE", 1, Value::Null).await;
    let codes: Vec<String> = (0..27).map(|n| format!("P{n:02}")).collect();
    for code in &codes {
        stocked(&app, &acme.key, shop, code, 100, Value::Null).await;
    }

    let first = list(&app, &acme.key, shop, "").await;
    assert_eq!(
        first["pagination"],
        json!({"current_page": 1, "per_page": 25, "last_page": 2, "total": 27, "has_more_pages": true})
    );
    assert_eq!(skus(&first), codes[..25]);
    let second = list(&app, &acme.key, shop, "page=2").await;
    assert_eq!(second["pagination"]["has_more_pages"], false);
    assert_eq!(skus(&second), codes[25..]);
    let small = list(&app, &acme.key, shop, "limit=10&page=2").await;
    assert_eq!(skus(&small), codes[10..20]);
    assert_eq!(small["pagination"]["last_page"], 3);
    let item = &first["items"][0];
    assert_eq!((&item["listings"], &item["sync_status"]), (&json!([]), &Value::Null), "{item}");
}

/// A second shop of the same account.
async fn shop_other<S, B>(app: &TestApp<S>, key: &str) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    id_of(&create_shop(app, key, json!({"name": "Second shop"})).await)
}

#[actix_web::test]
async fn another_tenant_gets_404_on_every_product_route() {
    // Proves isolation: another workspace (every permission) gets 404 on our shop's product
    // routes and on our product through its own shop, and a product is not reachable through
    // another shop of the same account; nothing changed.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let other = app.account("all").await;
    let shop = shop(&app, &acme.key, "external").await;
    let second = shop_other(&app, &acme.key).await;
    let theirs = shop_other(&app, &other.key).await;
    let tea = stocked(&app, &acme.key, shop, "TEA", 1500, json!(3)).await;
    let id = id_of(&tea);

    for (key, shop) in [(&other.key, shop), (&other.key, theirs), (&acme.key, second)] {
        assert_error(&app.get(&sku_path(shop, "TEA"), key).await, 404);
        assert_error(&app.get(&product_path(shop, id), key).await, 404);
        assert_error(&app.put(&product_path(shop, id), key, json!({"price": 1})).await, 404);
        assert_error(&app.delete(&sku_path(shop, "TEA"), key).await, 404);
        assert_error(&app.delete(&product_path(shop, id), key).await, 404);
    }
    assert_error(&app.get(&format!("{CATALOGUES}/{shop}/products"), &other.key).await, 404);
    assert_error(&app.put(&sku_path(shop, "TEA"), &other.key, json!({"price": 1})).await, 404);
    assert_error(&app.put(&sku_path(shop, "NEW"), &other.key, json!({"name": "New", "price": 1})).await, 404);

    assert_eq!(read(&app, &acme.key, &sku_path(shop, "TEA")).await, tea, "unchanged");
    assert_eq!(list(&app, &acme.key, shop, "").await["pagination"]["total"], 1);
    assert_eq!(list(&app, &other.key, theirs, "").await["pagination"]["total"], 0);
}

#[actix_web::test]
async fn a_viewer_reads_products_but_cannot_put_or_delete() {
    // Proves reads need view only, and PUT (by code and id) and DELETE need manage (403).
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let tea = stocked(&app, &acme.key, shop, "TEA", 1500, json!(3)).await;
    let id = id_of(&tea);
    let viewer = app.user(acme.tenant, VIEWER).await;
    let viewer = app.key(acme.tenant, viewer).await;

    assert_eq!(read(&app, &viewer, &sku_path(shop, "TEA")).await, tea);
    assert_eq!(read(&app, &viewer, &product_path(shop, id)).await, tea);
    assert_eq!(skus(&list(&app, &viewer, shop, "").await), ["TEA"]);
    assert_error(&app.put(&sku_path(shop, "TEA"), &viewer, json!({"price": 1})).await, 403);
    assert_error(&app.put(&sku_path(shop, "NEW"), &viewer, json!({"name": "New", "price": 1})).await, 403);
    assert_error(&app.put(&product_path(shop, id), &viewer, json!({"price": 1})).await, 403);
    assert_error(&app.delete(&sku_path(shop, "TEA"), &viewer).await, 403);
    assert_error(&app.delete(&product_path(shop, id), &viewer).await, 403);

    let legacy = app.legacy_key(acme.tenant).await;
    assert_error(&app.get(&sku_path(shop, "TEA"), &legacy).await, 403);
    assert_error(&app.put(&sku_path(shop, "TEA"), &legacy, json!({"price": 1})).await, 403);

    assert_eq!(read(&app, &acme.key, &sku_path(shop, "TEA")).await, tea, "unchanged");
    assert_error(&app.get(&sku_path(shop, "NEW"), &acme.key).await, 404);
}

#[actix_web::test]
async fn two_first_puts_of_one_code_at_once_make_one_product() {
    // Proves two creating PUTs sent together (on two pool connections, so they overlap in the
    // database when the scheduler lets them) both answer, one 201 and one 200, and make one
    // product: the insert that loses the race is retried as an update, not answered 409.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let path = sku_path(shop, "TWIN");
    let (first, second) = tokio::join!(
        app.put(&path, &acme.key, json!({"name": "Twin", "price": 100})),
        app.put(&path, &acme.key, json!({"name": "Twin", "price": 100, "description": "the second"})),
    );
    let mut statuses = [first.status, second.status];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 201], "{} / {}", first.body, second.body);
    assert_eq!(first.data()["id"], second.data()["id"]);
    let page = app.get(&format!("{CATALOGUES}/{shop}/products"), &acme.key).await;
    assert_eq!(page.data()["pagination"]["total"], 1, "{}", page.body);
}
