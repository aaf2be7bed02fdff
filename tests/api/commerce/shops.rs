//! Shops (contract: Catalogue (shop); Catalogues, products, stock, orders; docs/api.md "Commerce:
//! shops, products, stock and orders", Shops): creation with its defaults and its checks, the
//! paginated list of the caller's own shops, reading one, PATCH (a null clears, `sku_prefix` is
//! fixed), the counts, the permissions and tenant isolation.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Resp, TestApp, json, spawn};
use serde_json::Value;

use super::support::*;
use crate::framework::assert_error;

/// `GET /catalogues/{shop}`, 200 expected: the shop.
async fn read<S, B>(app: &TestApp<S>, key: &str, shop: i64) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&shop_path(shop), key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["status"], "success", "{}", res.body);
    res.data().clone()
}

/// `GET /catalogues?query`, 200 expected: the page (`{items, pagination}`).
async fn list<S, B>(app: &TestApp<S>, key: &str, query: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let path = if query.is_empty() { CATALOGUES.to_owned() } else { format!("{CATALOGUES}?{query}") };
    let res = app.get(&path, key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["status"], "success", "{}", res.body);
    res.data().clone()
}

/// The ids of a page's items, in order.
fn ids(page: &Value) -> Vec<i64> {
    page["items"].as_array().unwrap_or_else(|| panic!("items in {page}")).iter().map(id_of).collect()
}

/// A 422 naming `field` among its errors.
#[track_caller]
fn assert_invalid(res: &Resp, field: &str) {
    assert_error(res, 422);
    assert!(res.body["errors"][field].as_array().is_some_and(|m| !m.is_empty()), "errors.{field} in {}", res.body);
}

#[actix_web::test]
async fn a_shop_made_with_only_a_name_gets_the_documented_defaults() {
    // Proves every default of a shop made through the API, in the 201 answer and when read back.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let res = app.post(CATALOGUES, &acme.key, json!({"name": "Duka Letu"})).await;
    assert_status(&res, 201);
    assert_eq!(res.body["status"], "success", "{}", res.body);
    let shop = res.data().clone();
    assert!(shop["id"].as_i64().is_some_and(|id| id > 0), "{shop}");
    let expected = [
        ("name", json!("Duka Letu")),
        ("description", Value::Null),
        ("vertical", Value::Null),
        ("default_currency", Value::Null),
        ("sku_prefix", Value::Null),
        ("stock_policy", json!("external")),
        ("source_of_truth", json!("api")),
        ("allow_backorder", json!(false)),
        ("reservation_ttl_hours", json!(48)),
        ("low_stock_threshold", Value::Null),
        ("is_catalogue_visible", json!(true)),
        ("is_cart_enabled", json!(true)),
        ("meta_catalogue_id", Value::Null),
        ("is_connected_to_waba", json!(false)),
        ("channels", json!([])),
        ("last_synced_at", Value::Null),
        ("products_count", json!(0)),
        ("orders_count", json!(0)),
    ];
    for (field, value) in &expected {
        assert_eq!(&shop[*field], value, "{field} in {shop}");
    }
    assert!(shop["created_at"].is_string() && shop["updated_at"].is_string(), "{shop}");
    assert_eq!(read(&app, &acme.key, id_of(&shop)).await, shop, "read back the same");
}

#[actix_web::test]
async fn every_setting_sent_on_create_is_kept_and_codes_are_upper_cased() {
    // Proves the settings sent are stored (currency and prefix upper-cased), unknown members
    // ignored, and the range edges of the reservation TTL accepted.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = create_shop(
        &app,
        &acme.key,
        json!({
            "name": "Duka Letu", "description": "Vitenge na vikapu", "vertical": "fashion",
            "default_currency": "kes", "sku_prefix": "duka-1", "stock_policy": "svc",
            "source_of_truth": "platform", "allow_backorder": true, "reservation_ttl_hours": 720,
            "low_stock_threshold": 0, "is_catalogue_visible": false, "is_cart_enabled": false,
            "colour": "blue"
        }),
    )
    .await;
    let expected = [
        ("description", json!("Vitenge na vikapu")),
        ("vertical", json!("fashion")),
        ("default_currency", json!("KES")),
        ("sku_prefix", json!("DUKA-1")),
        ("stock_policy", json!("svc")),
        ("source_of_truth", json!("platform")),
        ("allow_backorder", json!(true)),
        ("reservation_ttl_hours", json!(720)),
        ("low_stock_threshold", json!(0)),
        ("is_catalogue_visible", json!(false)),
        ("is_cart_enabled", json!(false)),
    ];
    for (field, value) in &expected {
        assert_eq!(&shop[*field], value, "{field} in {shop}");
    }
    assert_eq!(shop.get("colour"), None, "unknown members ignored");
    let low = create_shop(&app, &acme.key, json!({"name": "Kiosk", "reservation_ttl_hours": 1})).await;
    assert_eq!(low["reservation_ttl_hours"], 1);
}

#[actix_web::test]
async fn a_shop_without_a_name_or_with_bad_settings_is_refused_and_not_made() {
    // Proves the field checks of a create: each bad value a 422 naming its field, and nothing
    // created by any of them.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let cases = [
        (json!({}), "name"),
        (json!({"name": ""}), "name"),
        (json!({"name": "x".repeat(192)}), "name"),
        (json!({"name": "Duka", "description": "d".repeat(2001)}), "description"),
        (json!({"name": "Duka", "vertical": "v".repeat(65)}), "vertical"),
        (json!({"name": "Duka", "stock_policy": "warehouse"}), "stock_policy"),
        (json!({"name": "Duka", "source_of_truth": "excel"}), "source_of_truth"),
        (json!({"name": "Duka", "default_currency": "shillings"}), "default_currency"),
        (json!({"name": "Duka", "default_currency": "T1S"}), "default_currency"),
        (json!({"name": "Duka", "reservation_ttl_hours": 0}), "reservation_ttl_hours"),
        (json!({"name": "Duka", "reservation_ttl_hours": 721}), "reservation_ttl_hours"),
        (json!({"name": "Duka", "low_stock_threshold": -1}), "low_stock_threshold"),
        (json!({"name": "Duka", "sku_prefix": "DU KA"}), "sku_prefix"),
        (json!({"name": "Duka", "sku_prefix": "ABCDEFGHIJKLM"}), "sku_prefix"),
        (json!({"name": "Duka", "sku_prefix": ""}), "sku_prefix"),
    ];
    for (body, field) in cases {
        let res = app.post(CATALOGUES, &acme.key, body.clone()).await;
        assert_invalid(&res, field);
    }
    let page = list(&app, &acme.key, "").await;
    assert_eq!(page["pagination"]["total"], 0, "nothing made: {page}");
    assert_eq!(page["items"], json!([]));
}

#[actix_web::test]
async fn the_list_pages_25_at_a_time_and_shows_only_the_callers_shops() {
    // Proves the standard pagination (default 25, `page`, `limit` and `per_page`) and that
    // another tenant's shops are neither listed nor counted.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let other = app.account(MANAGER).await;
    let theirs = id_of(&create_shop(&app, &other.key, json!({"name": "Their shop"})).await);
    let mut ours = Vec::new();
    for n in 0..27 {
        ours.push(id_of(&create_shop(&app, &acme.key, json!({"name": format!("Shop {n}")})).await));
    }

    let first = list(&app, &acme.key, "").await;
    assert_eq!(
        first["pagination"],
        json!({"current_page": 1, "per_page": 25, "last_page": 2, "total": 27, "has_more_pages": true})
    );
    assert_eq!(first["items"].as_array().expect("items").len(), 25);
    let second = list(&app, &acme.key, "page=2").await;
    assert_eq!(
        second["pagination"],
        json!({"current_page": 2, "per_page": 25, "last_page": 2, "total": 27, "has_more_pages": false})
    );
    let mut seen = ids(&first);
    seen.extend(ids(&second));
    seen.sort_unstable();
    assert_eq!(seen, ours, "every shop of ours once, none of theirs");
    assert!(!seen.contains(&theirs));

    let small = list(&app, &acme.key, "limit=10&page=3").await;
    assert_eq!(small["pagination"]["per_page"], 10);
    assert_eq!(small["pagination"]["last_page"], 3);
    assert_eq!(small["items"].as_array().expect("items").len(), 7);
    let per_page = list(&app, &acme.key, "per_page=5").await;
    assert_eq!(per_page["pagination"]["per_page"], 5);
    assert_eq!(per_page["items"].as_array().expect("items").len(), 5);

    let theirs_page = list(&app, &other.key, "").await;
    assert_eq!(ids(&theirs_page), vec![theirs]);
    assert_eq!(theirs_page["pagination"]["total"], 1);
}

#[actix_web::test]
async fn patch_changes_settings_and_a_null_clears_the_optional_ones() {
    // Proves PATCH changes what it sends and only that, and that null clears `description`,
    // `vertical`, `default_currency` and `low_stock_threshold`.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = create_shop(
        &app,
        &acme.key,
        json!({"name": "Duka", "description": "Old", "vertical": "food", "default_currency": "KES",
               "low_stock_threshold": 3, "sku_prefix": "DK"}),
    )
    .await;
    let id = id_of(&shop);

    let res = app
        .patch(
            &shop_path(id),
            &acme.key,
            json!({"name": "Duka Jipya", "stock_policy": "svc", "source_of_truth": "svc", "allow_backorder": true,
                   "reservation_ttl_hours": 72, "is_catalogue_visible": false, "is_cart_enabled": false,
                   "default_currency": "ugx"}),
        )
        .await;
    assert_status(&res, 200);
    let changed = res.data().clone();
    let expected = [
        ("name", json!("Duka Jipya")),
        ("stock_policy", json!("svc")),
        ("source_of_truth", json!("svc")),
        ("allow_backorder", json!(true)),
        ("reservation_ttl_hours", json!(72)),
        ("is_catalogue_visible", json!(false)),
        ("is_cart_enabled", json!(false)),
        ("default_currency", json!("UGX")),
        // untouched
        ("description", json!("Old")),
        ("vertical", json!("food")),
        ("low_stock_threshold", json!(3)),
        ("sku_prefix", json!("DK")),
    ];
    for (field, value) in &expected {
        assert_eq!(&changed[*field], value, "{field} in {changed}");
    }
    assert_eq!(read(&app, &acme.key, id).await, changed, "stored as answered");

    let res = app
        .patch(
            &shop_path(id),
            &acme.key,
            json!({"description": null, "vertical": null, "default_currency": null, "low_stock_threshold": null}),
        )
        .await;
    assert_status(&res, 200);
    let cleared = read(&app, &acme.key, id).await;
    for field in ["description", "vertical", "default_currency", "low_stock_threshold"] {
        assert_eq!(cleared[field], Value::Null, "{field} cleared in {cleared}");
    }
    assert_eq!((&cleared["name"], &cleared["reservation_ttl_hours"]), (&json!("Duka Jipya"), &json!(72)));
}

#[actix_web::test]
async fn patch_checks_values_like_create_and_changes_nothing_when_refused() {
    // Proves PATCH validates (422 on the field) and that a refused PATCH leaves the shop alone.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let id = id_of(&create_shop(&app, &acme.key, json!({"name": "Duka"})).await);
    let before = read(&app, &acme.key, id).await;
    let cases = [
        (json!({"reservation_ttl_hours": 0}), "reservation_ttl_hours"),
        (json!({"reservation_ttl_hours": 721, "name": "Other"}), "reservation_ttl_hours"),
        (json!({"stock_policy": "warehouse"}), "stock_policy"),
        (json!({"default_currency": "money"}), "default_currency"),
        (json!({"low_stock_threshold": -5}), "low_stock_threshold"),
        (json!({"name": ""}), "name"),
    ];
    for (body, field) in cases {
        assert_invalid(&app.patch(&shop_path(id), &acme.key, body).await, field);
    }
    assert_eq!(read(&app, &acme.key, id).await, before);
}

#[actix_web::test]
async fn sku_prefix_cannot_be_patched_even_unchanged() {
    // Proves `sku_prefix` is fixed after creation: sending it, with a new value, its current
    // value or null, is a 422 on `sku_prefix`, and the rest of that PATCH is not applied.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let id = id_of(&create_shop(&app, &acme.key, json!({"name": "Duka", "sku_prefix": "DK"})).await);
    for body in [
        json!({"sku_prefix": "NEW"}),
        json!({"sku_prefix": "DK"}),
        json!({"sku_prefix": null}),
        json!({"sku_prefix": "DK", "name": "Renamed"}),
    ] {
        assert_invalid(&app.patch(&shop_path(id), &acme.key, body).await, "sku_prefix");
    }
    let shop = read(&app, &acme.key, id).await;
    assert_eq!((&shop["sku_prefix"], &shop["name"]), (&json!("DK"), &json!("Duka")));

    let plain = id_of(&create_shop(&app, &acme.key, json!({"name": "Plain"})).await);
    assert_invalid(&app.patch(&shop_path(plain), &acme.key, json!({"sku_prefix": "PL"})).await, "sku_prefix");
    assert_eq!(read(&app, &acme.key, plain).await["sku_prefix"], Value::Null);
}

#[actix_web::test]
async fn products_count_and_orders_count_follow_the_shelf_and_the_orders() {
    // Proves the counts: products on the shelf (a deleted one leaves it), and orders made, on
    // the read and in the list.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let id = shop(&app, &acme.key, "svc").await;
    let other = shop(&app, &acme.key, "svc").await;
    for sku in ["TEA", "SUGAR", "SALT"] {
        stocked(&app, &acme.key, id, sku, 1500, json!(10)).await;
    }
    stocked(&app, &acme.key, other, "RICE", 3000, json!(5)).await;
    let shop = read(&app, &acme.key, id).await;
    assert_eq!((&shop["products_count"], &shop["orders_count"]), (&json!(3), &json!(0)), "{shop}");

    assert_status(&app.delete(&sku_path(id, "SALT"), &acme.key).await, 200);
    order(&app, &acme.key, id, json!([{"sku": "TEA", "quantity": 2}])).await;
    order(&app, &acme.key, id, json!([{"sku": "SUGAR", "quantity": 1}])).await;
    let shop = read(&app, &acme.key, id).await;
    assert_eq!((&shop["products_count"], &shop["orders_count"]), (&json!(2), &json!(2)), "{shop}");

    let page = list(&app, &acme.key, "").await;
    let items = page["items"].as_array().expect("items");
    let listed = items.iter().find(|s| id_of(s) == id).expect("our shop listed");
    assert_eq!((&listed["products_count"], &listed["orders_count"]), (&json!(2), &json!(2)));
    let listed = items.iter().find(|s| id_of(s) == other).expect("the other shop listed");
    assert_eq!((&listed["products_count"], &listed["orders_count"]), (&json!(1), &json!(0)));
}

#[actix_web::test]
async fn a_viewer_reads_shops_but_cannot_create_or_patch_them() {
    // Proves `communications.catalogue.view` is enough to read and list, and writes need
    // `communications.catalogue.manage` (403, nothing changed).
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let id = id_of(&create_shop(&app, &acme.key, json!({"name": "Duka"})).await);
    let viewer = app.user(acme.tenant, VIEWER).await;
    let viewer = app.key(acme.tenant, viewer).await;

    assert_eq!(read(&app, &viewer, id).await["name"], "Duka");
    assert_eq!(ids(&list(&app, &viewer, "").await), vec![id]);
    assert_error(&app.post(CATALOGUES, &viewer, json!({"name": "Mine"})).await, 403);
    assert_error(&app.patch(&shop_path(id), &viewer, json!({"name": "Mine"})).await, 403);

    assert_eq!(read(&app, &acme.key, id).await["name"], "Duka");
    assert_eq!(list(&app, &acme.key, "").await["pagination"]["total"], 1);
}

#[actix_web::test]
async fn a_key_without_catalogue_permissions_is_refused_on_every_shop_route() {
    // Proves a user holding other permissions only gets 403 on list, read, create and PATCH.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let id = id_of(&create_shop(&app, &acme.key, json!({"name": "Duka"})).await);
    let stranger = app.user(acme.tenant, "leads.view,leads.edit").await;
    let stranger = app.key(acme.tenant, stranger).await;

    assert_error(&app.get(CATALOGUES, &stranger).await, 403);
    assert_error(&app.get(&shop_path(id), &stranger).await, 403);
    assert_error(&app.post(CATALOGUES, &stranger, json!({"name": "Mine"})).await, 403);
    assert_error(&app.patch(&shop_path(id), &stranger, json!({"name": "Mine"})).await, 403);
    assert_eq!(read(&app, &acme.key, id).await["name"], "Duka");
    assert_eq!(list(&app, &acme.key, "").await["pagination"]["total"], 1);
}

#[actix_web::test]
async fn a_legacy_key_is_refused_on_every_shop_route() {
    // Proves the commerce routes are among those added by the contract: a key without an
    // issuer gets 403.
    let app = spawn().await;
    let acme = app.account("all").await;
    let id = id_of(&create_shop(&app, &acme.key, json!({"name": "Duka"})).await);
    let legacy = app.legacy_key(acme.tenant).await;

    assert_error(&app.get(CATALOGUES, &legacy).await, 403);
    assert_error(&app.get(&shop_path(id), &legacy).await, 403);
    assert_error(&app.post(CATALOGUES, &legacy, json!({"name": "Mine"})).await, 403);
    assert_error(&app.patch(&shop_path(id), &legacy, json!({"name": "Mine"})).await, 403);
    assert_eq!(read(&app, &acme.key, id).await["name"], "Duka");
}

#[actix_web::test]
async fn another_tenants_shop_is_404_on_read_and_patch() {
    // Proves tenant isolation: 404 for another workspace's shop id (and for an id that does not
    // exist), and their PATCH changes nothing.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let other = app.account(MANAGER).await;
    let id = id_of(&create_shop(&app, &acme.key, json!({"name": "Duka"})).await);
    let before = read(&app, &acme.key, id).await;

    assert_error(&app.get(&shop_path(id), &other.key).await, 404);
    assert_error(&app.patch(&shop_path(id), &other.key, json!({"name": "Stolen"})).await, 404);
    assert_error(&app.get(&shop_path(id + 1000), &acme.key).await, 404);
    assert_error(&app.patch(&shop_path(id + 1000), &acme.key, json!({"name": "Ghost"})).await, 404);

    assert_eq!(read(&app, &acme.key, id).await, before, "unchanged");
}
