//! The rules the OpenAPI description states for commerce's bodies and filters (issue 14, fuzz;
//! docs/api.md "Commerce", Bodies): what the schema forbids is refused with 422 naming the
//! member, what it allows is taken. Members that refuse null are described without null,
//! whole numbers with their range (in both the integer and the string form), choices as enums,
//! lists with their sizes.

use api_tests::{Resp, json, spawn};
use serde_json::Value;

use super::support::*;
use crate::framework::assert_error;

/// A 422 naming `field` among its errors.
#[track_caller]
fn assert_invalid(res: &Resp, field: &str, body: &Value) {
    assert_error(res, 422);
    assert!(
        res.body["errors"][field].as_array().is_some_and(|m| !m.is_empty()),
        "errors.{field} for {body}: {}",
        res.body
    );
}

#[actix_web::test]
async fn shop_settings_that_refuse_null_blank_or_out_of_range_values_are_422() {
    // Proves the rules CatalogueSettings and CatalogueChanges state: flags, choices and the TTL are
    // never null, a choice is never blank, the TTL in a string keeps its range, a name is never
    // null or blank, and a body is an object.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let id = id_of(&create_shop(&app, &acme.key, json!({"name": "Duka"})).await);
    let cases = [
        (json!({"allow_backorder": null}), "allow_backorder"),
        (json!({"is_cart_enabled": null}), "is_cart_enabled"),
        (json!({"is_catalogue_visible": null}), "is_catalogue_visible"),
        (json!({"stock_policy": null}), "stock_policy"),
        (json!({"stock_policy": ""}), "stock_policy"),
        (json!({"source_of_truth": null}), "source_of_truth"),
        (json!({"source_of_truth": " "}), "source_of_truth"),
        (json!({"reservation_ttl_hours": null}), "reservation_ttl_hours"),
        (json!({"reservation_ttl_hours": "0"}), "reservation_ttl_hours"),
        (json!({"reservation_ttl_hours": " 721 "}), "reservation_ttl_hours"),
        (json!({"reservation_ttl_hours": 2.5}), "reservation_ttl_hours"),
        (json!({"low_stock_threshold": "-1"}), "low_stock_threshold"),
        (json!({"low_stock_threshold": 2_147_483_648_i64}), "low_stock_threshold"),
        (json!({"name": null}), "name"),
        (json!({"name": "  "}), "name"),
        (json!({"default_currency": "TZSX"}), "default_currency"),
    ];
    for (body, field) in cases {
        assert_invalid(&app.patch(&shop_path(id), &acme.key, body.clone()).await, field, &body);
        let mut create = body.clone();
        if field != "name" {
            create["name"] = json!("Duka");
        }
        assert_invalid(&app.post(CATALOGUES, &acme.key, create.clone()).await, field, &create);
    }
    for body in [json!([null, null]), json!([])] {
        assert_error(&app.patch(&shop_path(id), &acme.key, body.clone()).await, 422);
        assert_error(&app.post(CATALOGUES, &acme.key, body).await, 422);
    }
}

#[actix_web::test]
async fn whole_numbers_in_range_are_taken_as_integers_strings_or_numbers_without_a_fraction() {
    // Proves what the schema allows is taken: the range's ends, the string form with spaces, a
    // `+` and leading zeros, `-0` as 0, and a JSON number without a fraction (`48.0`).
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let id = id_of(&create_shop(&app, &acme.key, json!({"name": "Duka"})).await);
    for (ttl, threshold, want) in [
        (json!(1), json!("-0"), (1, 0)),
        (json!("720"), json!(" +0007 "), (720, 7)),
        (json!(48.0), json!("2147483647"), (48, 2_147_483_647)),
    ] {
        let body = json!({"reservation_ttl_hours": ttl, "low_stock_threshold": threshold});
        let res = app.patch(&shop_path(id), &acme.key, body.clone()).await;
        assert_status(&res, 200);
        let shop = res.data();
        assert_eq!(
            (shop["reservation_ttl_hours"].as_i64(), shop["low_stock_threshold"].as_i64()),
            (Some(want.0), Some(want.1)),
            "{body}"
        );
    }
}

#[actix_web::test]
async fn product_members_that_break_their_schema_are_422_and_change_nothing() {
    // Proves the rules ProductBody states on `PUT` by code and by id: name and price never
    // null, name never blank, prices and inventory in range, availability one of its values,
    // image_url http(s), currency three letters, sku without `/`, a body that is an object.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    let made = put_product(&app, &acme.key, shop, "KAH-1", json!({"name": "Kahawa", "price": 1800})).await;
    let cases = [
        (json!({"name": null}), "name"),
        (json!({"name": "\t"}), "name"),
        (json!({"name": "n".repeat(201)}), "name"),
        (json!({"price": null}), "price"),
        (json!({"price": "-1"}), "price"),
        (json!({"price": 1_000_000_000_000_000_001_i64}), "price"),
        (json!({"sale_price": -1}), "sale_price"),
        (json!({"inventory": "2147483648"}), "inventory"),
        (json!({"inventory": -1}), "inventory"),
        (json!({"availability": "soon"}), "availability"),
        (json!({"availability": ""}), "availability"),
        (json!({"image_url": "ftp://example.com/a.png"}), "image_url"),
        (json!({"currency": "TZ"}), "currency"),
        (json!({"sku": "a/b"}), "sku"),
        (json!({"brand": "b".repeat(101)}), "brand"),
    ];
    for (body, field) in cases {
        assert_invalid(&app.put(&sku_path(shop, "KAH-1"), &acme.key, body.clone()).await, field, &body);
        assert_invalid(&app.put(&product_path(shop, id_of(&made)), &acme.key, body.clone()).await, field, &body);
    }
    for body in [json!([null, null]), json!(["Kahawa", 1800])] {
        assert_error(&app.put(&sku_path(shop, "KAH-2"), &acme.key, body.clone()).await, 422);
        assert_error(&app.put(&product_path(shop, id_of(&made)), &acme.key, body).await, 422);
    }
    let now = app.get(&sku_path(shop, "KAH-1"), &acme.key).await;
    assert_eq!(now.data(), &made, "nothing changed");
    assert_error(&app.get(&sku_path(shop, "KAH-2"), &acme.key).await, 404);
}

#[actix_web::test]
async fn list_sizes_line_quantities_and_choices_of_pushes_batches_and_orders_are_422() {
    // Proves the sizes and ranges LevelsPush, Batch, NewOrder and StatusChange state.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "KAH-1", 1800, json!(5)).await;
    let inventory = format!("{CATALOGUES}/{shop}/inventory");
    let orders = format!("{CATALOGUES}/{shop}/orders");
    let batch = format!("{CATALOGUES}/{shop}/products/batch");
    let cases = [
        (&inventory, json!({"levels": []}), "levels"),
        (&inventory, json!({"levels": [{"sku": "KAH-1", "inventory": "2147483648"}]}), "levels[0].inventory"),
        (&inventory, json!({"levels": [{"sku": " ", "inventory": 1}]}), "levels[0].sku"),
        (&inventory, json!({"levels": [{"sku": "s".repeat(101), "inventory": 1}]}), "levels[0].sku"),
        (&orders, json!({"lines": [{"sku": "\t", "quantity": 1}]}), "lines[0].sku"),
        (&orders, json!({"lines": [{"sku": "s".repeat(101), "quantity": 1}]}), "lines[0].sku"),
        (&inventory, json!({"levels": [{"sku": null, "retailer_id": " ", "inventory": 1}]}), "levels[0].sku"),
        (&inventory, json!({"levels": [{"retailer_id": null, "inventory": 1}]}), "levels[0].sku"),
        (&orders, json!({"lines": [{"retailer_id": "", "quantity": 1}]}), "lines[0].sku"),
        (&orders, json!({"lines": [{"sku": null, "quantity": 1}]}), "lines[0].sku"),
        (&batch, json!({"products": []}), "products"),
        (&orders, json!({"lines": []}), "lines"),
        (&orders, json!({"lines": [{"sku": "KAH-1", "quantity": "0"}]}), "lines[0].quantity"),
        (&orders, json!({"lines": [{"sku": "KAH-1", "quantity": 100_001}]}), "lines[0].quantity"),
        (&orders, json!({"platform": "", "lines": [{"sku": "KAH-1", "quantity": 1}]}), "platform"),
        (&orders, json!({"platform": "chat", "lines": [{"sku": "KAH-1", "quantity": 1}]}), "platform"),
        (
            &orders,
            json!({"customer_handle": "", "customer_chat_id": "0".repeat(192), "lines": [{"sku": "KAH-1", "quantity": 1}]}),
            "customer_chat_id",
        ),
        (
            &orders,
            json!({"customer_name": "c".repeat(192), "lines": [{"sku": "KAH-1", "quantity": 1}]}),
            "customer_name",
        ),
    ];
    for (path, body, field) in cases {
        assert_invalid(&app.post(path, &acme.key, body.clone()).await, field, &body);
    }
    let many: Vec<Value> = (0..101).map(|_| json!({"sku": "KAH-1", "quantity": 1})).collect();
    let body = json!({ "lines": many });
    assert_invalid(&app.post(&orders, &acme.key, body.clone()).await, "lines", &body);
    let made = order(&app, &acme.key, shop, json!([{"sku": null, "retailer_id": "KAH-1", "quantity": 1.0}])).await;
    assert_eq!(made["lines"][0]["quantity"], 1, "a number without a fraction: {made}");
    for status in ["", "0", "approved"] {
        let body = json!({ "status": status });
        assert_invalid(&app.put(&order_status_path(id_of(&made)), &acme.key, body.clone()).await, "status", &body);
    }
    let body = json!([{"sku": "KAH-1", "quantity": 1}]);
    assert_error(&app.post(&orders, &acme.key, body).await, 422);
}

#[actix_web::test]
async fn a_batch_row_of_the_wrong_type_is_taken_with_the_batch_and_rejected_in_its_report() {
    // Proves what the Batch schema says of its rows (`anyOf` ProductBody or anything): a row
    // that is not a ProductBody does not refuse the batch (202); the run rejects it.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    let body = json!({"products": [{"sku": "A-1", "name": "A", "price": 1, "category": {}}, 5]});
    let res = app.post(&format!("{CATALOGUES}/{shop}/products/batch"), &acme.key, body).await;
    assert_status(&res, 202);
    assert_eq!(res.data()["received"], 2, "{}", res.body);
}

#[actix_web::test]
async fn query_filters_outside_their_schema_are_422() {
    // Proves the filters' schemas: `tracked_only` is true or false, an order filter's status and
    // platform are among their values, catalogue_id an integer, updated_since a date-time.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    for value in ["null", "1", "yes", ""] {
        let res = app.get(&format!("{CATALOGUES}/{shop}/inventory?tracked_only={value}"), &acme.key).await;
        let body = json!({ "tracked_only": value });
        assert_invalid(&res, "tracked_only", &body);
    }
    for value in ["true", "false"] {
        assert_status(&app.get(&format!("{CATALOGUES}/{shop}/inventory?tracked_only={value}"), &acme.key).await, 200);
    }
    for (query, field) in [
        ("status=approved", "status"),
        ("platform=fax", "platform"),
        ("catalogue_id=x", "catalogue_id"),
        ("updated_since=yesterday", "updated_since"),
        // empty is outside each filter's type too
        ("status=", "status"),
        ("platform=", "platform"),
        ("catalogue_id=", "catalogue_id"),
        ("updated_since=", "updated_since"),
    ] {
        let res = app.get(&format!("{ORDERS}?{query}"), &acme.key).await;
        assert_invalid(&res, field, &json!(query));
    }
}
