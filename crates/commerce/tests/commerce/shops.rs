//! Shops: the settings' rules, all reported at once, the permission, and tenant isolation.

use commerce::catalogues::CatalogueSettings;
use kernel::{ErrorKind, Permission};
use serde_json::json;

use crate::common::{assert_fields, assert_kind, body, env, only};

#[tokio::test]
async fn every_bad_setting_is_reported_at_once_and_nothing_is_made() {
    let env = env().await;
    let acme = env.tenant("Acme").await;
    let settings = json!({
        "reservation_ttl_hours": 0,
        "stock_policy": "warehouse",
        "default_currency": "shillings",
        "sku_prefix": "DU KA",
        "low_stock_threshold": "many",
    });
    let refused = env.service.create_catalogue(&acme, body(settings)).await.expect_err("refused");
    assert_fields(
        &refused,
        &["default_currency", "low_stock_threshold", "name", "reservation_ttl_hours", "sku_prefix", "stock_policy"],
    );
    assert_eq!(refused.errors["low_stock_threshold"], ["The low_stock_threshold must be a whole number."]);
    assert_eq!(refused.errors["name"], ["The name field is required."]);
    let page = env.service.list_catalogues(&acme, kernel::PageRequest { page: 1, per_page: 25 }).await.expect("list");
    assert_eq!(page.pagination.total, 0);
}

#[tokio::test]
async fn defaults_apply_and_integer_strings_are_read() {
    let env = env().await;
    let acme = env.tenant("Acme").await;
    let settings =
        body::<CatalogueSettings>(json!({"name": " Duka ", "reservation_ttl_hours": "72", "sku_prefix": "dk"}));
    let shop = env.service.create_catalogue(&acme, settings).await.expect("made");
    assert_eq!((shop.name.as_str(), shop.reservation_ttl_hours), ("Duka", 72));
    assert_eq!((shop.stock_policy.as_str(), shop.source_of_truth.as_str()), ("external", "api"));
    assert_eq!(shop.sku_prefix.as_deref(), Some("DK"));

    let fixed = env.service.update_catalogue(&acme, commerce::CatalogueId(shop.id), body(json!({"sku_prefix": null})));
    assert_fields(&fixed.await.expect_err("fixed"), &["sku_prefix"]);
}

#[tokio::test]
async fn another_tenants_shop_is_not_found_and_a_viewer_may_not_change_one() {
    let env = env().await;
    let acme = env.tenant("Acme").await;
    let other = env.tenant("Other").await;
    let shop = env.shop(&acme, json!({"name": "Duka"})).await;

    assert_kind(env.service.get_catalogue(&other, shop).await, ErrorKind::NotFound);
    assert_kind(env.service.update_catalogue(&other, shop, body(json!({"name": "Mine"}))).await, ErrorKind::NotFound);

    let viewer = only(&acme, &[Permission::CATALOGUE_VIEW]);
    assert_eq!(env.service.get_catalogue(&viewer, shop).await.expect("visible").name, "Duka");
    assert_kind(env.service.update_catalogue(&viewer, shop, body(json!({"name": "X"}))).await, ErrorKind::Forbidden);
    assert_kind(env.service.create_catalogue(&viewer, body(json!({"name": "X"}))).await, ErrorKind::Forbidden);
}
