//! The `shop` tools through the SDK's client: shops, products by code, the shelf, stock levels,
//! the inventory push and product batches with their sync reports run the commerce service as
//! `/catalogues/...` does, with its permissions and its tenant's rows only.

use api_tests::json;
use serde_json::Value;

use super::support::*;

/// The shop's products: `A` at 1,000 with 10 on hand, `B` at 2,500 with 4, `C` at 500 untracked.
fn products() -> Vec<(&'static str, i64, Value)> {
    vec![("A", 1_000, json!(10)), ("B", 2_500, json!(4)), ("C", 500, Value::Null)]
}

/// What a catalogue manager's connection with `mcp:write` lists: the reads and the writes, not
/// publishing (`mcp:publish`) nor the sends (`mcp:send`, `communications.send`).
const TOOLS: [&str; 12] = [
    "list_catalogues",
    "get_catalogue",
    "get_product_by_sku",
    "list_products",
    "get_stock_levels",
    "push_inventory",
    "submit_product_batch",
    "get_sync_report",
    "list_listings",
    "create_feed",
    "run_feed",
    "list_feeds",
];
const READS: [&str; 8] = [
    "list_catalogues",
    "get_catalogue",
    "get_product_by_sku",
    "list_products",
    "get_stock_levels",
    "get_sync_report",
    "list_listings",
    "list_feeds",
];
/// `mcp:publish` with `communications.catalogue.manage`.
const PUBLISHING: [&str; 2] = ["publish_catalogue", "check_drift"];
/// `mcp:send` with `communications.send`.
const SENDS: [&str; 3] = ["send_product", "send_product_list", "send_catalogue"];
/// Every elevation the shop tools use.
const ALL_SCOPES: &str = "mcp:use mcp:commerce mcp:write mcp:publish mcp:send";

fn product_path(shop: i64, sku: &str) -> String {
    format!("/api/v3/catalogues/{shop}/products/by-sku/{sku}")
}

fn total(page: &Value) -> i64 {
    page["pagination"]["total"].as_i64().unwrap_or_else(|| panic!("pagination.total in {page}"))
}

fn id_of(value: &Value) -> i64 {
    value["id"].as_i64().unwrap_or_else(|| panic!("id in {value}"))
}

/// The `sku` of each item of a page or list.
fn skus(items: &Value) -> Vec<String> {
    items.as_array().unwrap_or_else(|| panic!("a list: {items}")).iter().map(|i| i["sku"].to_string()).collect()
}

fn quoted(skus: &[&str]) -> Vec<String> {
    skus.iter().map(|s| format!("\"{s}\"")).collect()
}

#[actix_web::test]
async fn the_shop_tools_read_shops_products_and_stock_as_rest_does() {
    let app = api_tests::spawn().await;
    let duka = shop(&app, &products()).await;
    let token = app.mcp_connection(duka.tenant, duka.user, COMMERCE_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/shop", &token).await;
    assert_eq!(tool_names(&client).await, sorted(&TOOLS));

    let shops = ok(&client, "list_catalogues", json!({})).await;
    assert_eq!(shops, rest_data(&app, &duka.key, "/api/v3/catalogues").await);
    assert_eq!((total(&shops), shops["items"][0]["name"].clone()), (1, json!("Duka Letu")), "{shops}");
    let read = ok(&client, "get_catalogue", json!({"catalogue": duka.id})).await;
    assert_eq!(read, rest_data(&app, &duka.key, &format!("/api/v3/catalogues/{}", duka.id)).await);
    assert_eq!((read["stock_policy"].clone(), read["products_count"].clone()), (json!("svc"), json!(3)), "{read}");

    // by code, or by its alias retailer_id; the code wins over the alias
    let a = ok(&client, "get_product_by_sku", json!({"catalogue": duka.id, "sku": "A"})).await;
    assert_eq!(a, rest_data(&app, &duka.key, &product_path(duka.id, "A")).await);
    assert_eq!(
        (a["price"].clone(), a["inventory"].clone(), a["retailer_id"].clone()),
        (json!(1_000), json!(10), json!("A"))
    );
    assert_eq!(ok(&client, "get_product_by_sku", json!({"catalogue": duka.id, "retailer_id": "A"})).await, a);
    let both = json!({"catalogue": duka.id.to_string(), "sku": "A", "retailer_id": "B"});
    assert_eq!(ok(&client, "get_product_by_sku", both).await, a);

    let shelf = ok(&client, "list_products", json!({"catalogue": duka.id})).await;
    assert_eq!(shelf, rest_data(&app, &duka.key, &format!("/api/v3/catalogues/{}/products", duka.id)).await);
    assert_eq!(skus(&shelf["items"]), quoted(&["A", "B", "C"]), "oldest first");
    let page = ok(&client, "list_products", json!({"catalogue": duka.id, "limit": 2, "page": 2})).await;
    assert_eq!((skus(&page["items"]), page["pagination"]["last_page"].clone()), (quoted(&["C"]), json!(2)));

    // stock: every product, picked codes, the tracked ones
    let levels = ok(&client, "get_stock_levels", json!({"catalogue": duka.id})).await;
    assert_eq!(levels, rest_data(&app, &duka.key, &format!("/api/v3/catalogues/{}/inventory", duka.id)).await);
    let b = &levels["items"][1];
    assert_eq!(
        (b["sku"].clone(), b["inventory"].clone(), b["reserved"].clone(), b["available"].clone()),
        (json!("B"), json!(4), json!(0), json!(4)),
        "{levels}"
    );
    assert_eq!(levels["items"][2]["inventory"], Value::Null, "C is untracked: {levels}");
    let picked = ok(&client, "get_stock_levels", json!({"catalogue": duka.id, "sku": ["A", "C"]})).await;
    assert_eq!(skus(&picked["items"]), quoted(&["A", "C"]));
    assert_eq!(picked, rest_data(&app, &duka.key, &format!("/api/v3/catalogues/{}/inventory?sku=A,C", duka.id)).await);
    let tracked = ok(&client, "get_stock_levels", json!({"catalogue": duka.id, "tracked_only": true})).await;
    assert_eq!(skus(&tracked["items"]), quoted(&["A", "B"]));
    let untracked_too = ok(&client, "get_stock_levels", json!({"catalogue": duka.id, "tracked_only": false})).await;
    assert_eq!(total(&untracked_too), 3);
}

#[actix_web::test]
async fn inventory_pushes_and_product_batches_change_the_shelf_as_rest_sees_it() {
    let app = api_tests::spawn().await;
    let duka = shop(&app, &products()).await;
    let token = app.mcp_connection(duka.tenant, duka.user, COMMERCE_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/shop", &token).await;

    let levels = json!([
        {"sku": "A", "inventory": 7},
        {"retailer_id": "B", "inventory": 4},
        {"sku": "NOPE", "inventory": 1},
    ]);
    let pushed = ok(&client, "push_inventory", json!({"catalogue": duka.id, "levels": levels})).await;
    assert_eq!(
        (
            pushed["received"].clone(),
            pushed["updated"].clone(),
            pushed["unchanged"].clone(),
            pushed["unknown_skus"].clone()
        ),
        (json!(3), json!(1), json!(1), json!(["NOPE"])),
        "{pushed}"
    );
    assert_eq!(skus(&pushed["derived"]), quoted(&["A", "B"]));
    assert_eq!(pushed["derived"][0]["available"], 7);
    assert_eq!(rest_data(&app, &duka.key, &product_path(duka.id, "A")).await["inventory"], 7);

    // a batch: queued, replayed by its key, worked by the job, reported
    let products = json!([
        {"sku": "D", "name": "Dress", "price": 5_000, "inventory": 3},
        {"sku": "E", "name": "Shoes"},
        {"sku": "A", "name": "Product A", "price": 1_200},
    ]);
    let args = json!({"catalogue": duka.id, "products": products, "idempotency_key": "import-1"});
    let queued = ok(&client, "submit_product_batch", args.clone()).await;
    assert_eq!(
        (queued["status"].clone(), queued["mode"].clone(), queued["received"].clone(), queued["replayed"].clone()),
        (json!("queued"), json!("upsert"), json!(3), json!(false)),
        "{queued}"
    );
    let sync = id_of(&queued);
    let replayed = ok(&client, "submit_product_batch", args).await;
    assert_eq!((id_of(&replayed), replayed["replayed"].clone()), (sync, json!(true)), "{replayed}");
    app.run_jobs().await;

    let report = ok(&client, "get_sync_report", json!({"catalogue": duka.id, "sync": sync})).await;
    assert_eq!(report, rest_data(&app, &duka.key, &format!("/api/v3/catalogues/{}/syncs/{sync}", duka.id)).await);
    assert_eq!(
        (report["status"].clone(), report["created"].clone(), report["updated"].clone(), report["rejected"].clone()),
        (json!("completed"), json!(1), json!(1), json!(1)),
        "{report}"
    );
    assert_eq!(report["problems"][0]["sku"], "E", "{report}");
    let d = rest_data(&app, &duka.key, &product_path(duka.id, "D")).await;
    assert_eq!((d["price"].clone(), d["inventory"].clone()), (json!(5_000), json!(3)));
    assert_eq!(ok(&client, "get_product_by_sku", json!({"catalogue": duka.id, "sku": "A"})).await["price"], 1_200);
    assert_eq!(
        total(&rest_data(&app, &duka.key, &format!("/api/v3/catalogues/{}/syncs", duka.id)).await),
        1,
        "one run"
    );
}

#[actix_web::test]
async fn refusals_come_from_the_commerce_service_as_rest_gives_them() {
    let app = api_tests::spawn().await;
    let duka = shop(&app, &products()).await;
    let token = app.mcp_connection(duka.tenant, duka.user, COMMERCE_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/shop", &token).await;
    let shop = duka.id;

    for catalogue in [json!(999_999), json!("duka"), json!(-1)] {
        assert_code(&refused(&client, "get_catalogue", json!({"catalogue": catalogue})).await, "not_found");
    }
    assert_field(&refused(&client, "get_catalogue", json!({})).await, "catalogue");
    assert_field(&refused(&client, "list_catalogues", json!({"page": "first"})).await, "page");
    assert_code(&refused(&client, "get_product_by_sku", json!({"catalogue": shop, "sku": "NOPE"})).await, "not_found");
    assert_field(&refused(&client, "get_product_by_sku", json!({"catalogue": shop})).await, "sku");
    assert_field(&refused(&client, "get_product_by_sku", json!({"catalogue": shop, "sku": 7})).await, "sku");
    assert_field(&refused(&client, "list_products", json!({"catalogue": shop, "colour": "red"})).await, "colour");
    let error = refused(&client, "get_stock_levels", json!({"catalogue": shop, "tracked_only": "maybe"})).await;
    assert_field(&error, "tracked_only");
    assert_field(&refused(&client, "push_inventory", json!({"catalogue": shop, "levels": []})).await, "levels");
    let levels = json!([{"sku": "A", "inventory": 50}, {"sku": "B", "inventory": "lots"}]);
    let error = refused(&client, "push_inventory", json!({"catalogue": shop, "levels": levels})).await;
    assert_field(&error, "levels[1].inventory");
    assert_eq!(rest_data(&app, &duka.key, &product_path(shop, "A")).await["inventory"], 10, "nothing landed");
    assert_field(
        &refused(&client, "submit_product_batch", json!({"catalogue": shop, "products": []})).await,
        "products",
    );
    let error =
        refused(&client, "submit_product_batch", json!({"catalogue": shop, "mode": "merge", "products": [{}]})).await;
    assert_field(&error, "mode");
    let long = json!({"catalogue": shop, "products": [{"sku": "X"}], "idempotency_key": "k".repeat(256)});
    assert_field(&refused(&client, "submit_product_batch", long).await, "idempotency_key");
    assert_code(&refused(&client, "get_sync_report", json!({"catalogue": shop, "sync": 999_999})).await, "not_found");
    assert_field(&refused(&client, "get_sync_report", json!({"catalogue": shop})).await, "sync");
    assert_eq!(total(&rest_data(&app, &duka.key, &format!("/api/v3/catalogues/{shop}/syncs")).await), 0, "no run");
}

#[actix_web::test]
async fn scopes_and_the_catalogue_permissions_decide_every_shop_call() {
    let app = api_tests::spawn().await;
    let duka = shop(&app, &products()).await;
    let reader = app.mcp_connection(duka.tenant, duka.user, "mcp:use mcp:commerce").await;
    let viewer = app.user(duka.tenant, "communications.catalogue.view").await;
    let viewing = app.mcp_connection(duka.tenant, viewer, COMMERCE_SCOPES).await;
    let nobody = app.user(duka.tenant, "leads.view").await;
    let nothing = app.mcp_connection(duka.tenant, nobody, COMMERCE_SCOPES).await;
    let elevated = app.mcp_connection(duka.tenant, duka.user, ALL_SCOPES).await;
    let seller = app.user(duka.tenant, &format!("{CATALOGUE_MANAGER},communications.send")).await;
    let selling = app.mcp_connection(duka.tenant, seller, ALL_SCOPES).await;
    let viewing_elevated = app.mcp_connection(duka.tenant, viewer, ALL_SCOPES).await;
    let server = app.listen();
    let push = json!({"catalogue": duka.id, "levels": [{"sku": "A", "inventory": 1}]});
    let batch = json!({"catalogue": duka.id, "products": [{"sku": "Z", "name": "Zip", "price": 1}]});
    let writes = [
        ("push_inventory", push.clone()),
        ("submit_product_batch", batch),
        ("create_feed", json!({"catalogue": duka.id, "url": "http://127.0.0.1:9/products.csv"})),
        ("run_feed", json!({"catalogue": duka.id, "feed": 1})),
    ];

    let client = connect(&server, "/mcp/v1/shop", &reader).await;
    assert_eq!(tool_names(&client).await, sorted(&READS));
    for (tool, args) in writes.clone() {
        let error = refused(&client, tool, args).await;
        assert_eq!(
            (error["reason"].clone(), error["missing_scopes"].clone()),
            (json!("insufficient_scope"), json!(["mcp:write"])),
            "{tool}"
        );
    }
    let error = refused(&client, "check_drift", json!({"catalogue": duka.id})).await;
    assert_eq!(error["missing_scopes"], json!(["mcp:publish"]), "{error}");

    // publishing with mcp:publish; the sends only for an issuer who may send
    let client = connect(&server, "/mcp/v1/shop", &elevated).await;
    assert_eq!(tool_names(&client).await, sorted(&[&TOOLS[..], &PUBLISHING[..]].concat()));
    let client = connect(&server, "/mcp/v1/shop", &selling).await;
    assert_eq!(tool_names(&client).await, sorted(&[&TOOLS[..], &PUBLISHING[..], &SENDS[..]].concat()));
    let client = connect(&server, "/mcp/v1/shop", &viewing_elevated).await;
    assert_eq!(tool_names(&client).await, sorted(&READS), "elevations open nothing the permission does not");

    let client = connect(&server, "/mcp/v1/shop", &viewing).await;
    assert_eq!(tool_names(&client).await, sorted(&READS));
    assert_eq!(ok(&client, "get_catalogue", json!({"catalogue": duka.id})).await["id"], duka.id);
    for (tool, args) in writes {
        let error = refused(&client, tool, args).await;
        assert_code(&error, "permission_denied");
        assert!(error.get("reason").is_none(), "a permission, not a scope: {error}");
    }
    let client = connect(&server, "/mcp/v1/shop", &nothing).await;
    assert!(tool_names(&client).await.is_empty());
    assert_code(&refused(&client, "list_catalogues", json!({})).await, "permission_denied");
    assert_code(&refused(&client, "get_stock_levels", json!({"catalogue": duka.id})).await, "permission_denied");
    assert_eq!(rest_data(&app, &duka.key, &product_path(duka.id, "A")).await["inventory"], 10, "nothing changed");

    // the issuer's permission, read on every call
    app.set_permissions(viewer, CATALOGUE_MANAGER).await;
    let client = connect(&server, "/mcp/v1/shop", &viewing).await;
    assert_eq!(ok(&client, "push_inventory", push).await["updated"], 1);
}

#[actix_web::test]
async fn another_tenants_shop_and_sync_runs_are_not_found_through_every_tool() {
    let app = api_tests::spawn().await;
    let owner = shop(&app, &products()).await;
    let stranger = shop(&app, &products()).await;
    let owner_token = app.mcp_connection(owner.tenant, owner.user, COMMERCE_SCOPES).await;
    let stranger_token = app.mcp_connection(stranger.tenant, stranger.user, COMMERCE_SCOPES).await;
    let server = app.listen();
    let owners = connect(&server, "/mcp/v1/shop", &owner_token).await;
    let batch = json!({"catalogue": owner.id, "products": [{"sku": "Z", "name": "Zip", "price": 1}]});
    let sync = id_of(&ok(&owners, "submit_product_batch", batch.clone()).await);

    let client = connect(&server, "/mcp", &stranger_token).await;
    let shop = owner.id;
    for (tool, args) in [
        ("get_catalogue", json!({"catalogue": shop})),
        ("get_product_by_sku", json!({"catalogue": shop, "sku": "A"})),
        ("list_products", json!({"catalogue": shop})),
        ("get_stock_levels", json!({"catalogue": shop})),
        ("push_inventory", json!({"catalogue": shop, "levels": [{"sku": "A", "inventory": 0}]})),
        ("submit_product_batch", batch),
        ("get_sync_report", json!({"catalogue": shop, "sync": sync})),
        // the owner's run under the stranger's own shop
        ("get_sync_report", json!({"catalogue": stranger.id, "sync": sync})),
    ] {
        assert_code(&refused(&client, tool, args).await, "not_found");
    }
    let theirs = ok(&client, "list_catalogues", json!({})).await;
    assert_eq!((total(&theirs), id_of(&theirs["items"][0])), (1, stranger.id), "{theirs}");
    // the owner's shelf is untouched
    assert_eq!(rest_data(&app, &owner.key, &product_path(owner.id, "A")).await["inventory"], 10);
    assert_eq!(total(&rest_data(&app, &owner.key, &format!("/api/v3/catalogues/{}/syncs", owner.id)).await), 1);
}
