//! The `orders` tools through the SDK's client: listing, reading, creating (with an idempotency
//! key) and moving orders run the commerce service as `/catalogues/orders...` and
//! `/catalogues/{catalogue}/orders` do, with their permissions and their tenant's rows only.

use actix_web::test::TestRequest;
use api_tests::json;
use serde_json::Value;

use super::support::*;

/// The shop's products: `A` at 150,050 with 10 on hand, `B` at 100,000 with 5.
fn products() -> Vec<(&'static str, i64, Value)> {
    vec![("A", 150_050, json!(10)), ("B", 100_000, json!(5))]
}

/// What a catalogue manager's connection with `mcp:write` lists: not `send_shop_link` (`mcp:send`
/// and `communications.send`).
const TOOLS: [&str; 7] =
    ["list_orders", "get_order", "create_order", "set_order_status", "create_shop_link", "list_baskets", "get_basket"];
/// The reads: `mcp:use mcp:commerce` and `communications.catalogue.view`.
const READS: [&str; 4] = ["list_orders", "get_order", "list_baskets", "get_basket"];

fn order_args(shop: i64) -> Value {
    json!({
        "catalogue": shop,
        "customer_handle": "255712345678",
        "customer_name": "Amina Juma",
        "lines": [{"sku": "A", "quantity": 2}, {"retailer_id": "B", "quantity": 1}],
    })
}

fn total(page: &Value) -> i64 {
    page["pagination"]["total"].as_i64().unwrap_or_else(|| panic!("pagination.total in {page}"))
}

fn id_of(value: &Value) -> i64 {
    value["id"].as_i64().unwrap_or_else(|| panic!("id in {value}"))
}

#[actix_web::test]
async fn the_order_tools_take_read_list_and_move_orders_as_rest_does() {
    let app = api_tests::spawn().await;
    let duka = shop(&app, &products()).await;
    let token = app.mcp_connection(duka.tenant, duka.user, COMMERCE_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/orders", &token).await;
    assert_eq!(tool_names(&client).await, sorted(&TOOLS));

    // lines by sku and by its alias, priced and frozen; stock held under the svc policy
    let order = ok(&client, "create_order", order_args(duka.id)).await;
    assert_eq!(
        (order["status"].clone(), order["platform"].clone(), order["catalogue_id"].clone()),
        (json!("pending"), json!("manual"), json!(duka.id)),
        "{order}"
    );
    assert_eq!(order["total_minor"], 2 * 150_050 + 100_000, "{order}");
    assert_eq!((order["lines"][1]["sku"].clone(), order["lines"][1]["reserved"].clone()), (json!("B"), json!(1)));
    assert_eq!(order["reservation"]["state"], "held", "{order}");
    let id = id_of(&order);
    let product = rest_data(&app, &duka.key, &format!("/api/v3/catalogues/{}/products/by-sku/A", duka.id)).await;
    assert_eq!((product["reserved"].clone(), product["available"].clone()), (json!(2), json!(8)), "{product}");

    // what the tool wrote is what REST reads, and the reads agree with REST
    let read = ok(&client, "get_order", json!({"order": id})).await;
    assert_eq!(read, order);
    assert_eq!(read, rest_data(&app, &duka.key, &format!("/api/v3/catalogues/orders/{id}")).await);
    assert_eq!(ok(&client, "get_order", json!({"order": id.to_string()})).await, read);

    let confirmed = ok(&client, "set_order_status", json!({"order": id, "status": "Confirmed"})).await;
    assert_eq!(confirmed["status"], "confirmed", "{confirmed}");
    assert_eq!(rest_data(&app, &duka.key, &format!("/api/v3/catalogues/orders/{id}")).await["status"], "confirmed");
    let list = ok(&client, "list_orders", json!({"status": "confirmed", "catalogue_id": duka.id})).await;
    assert_eq!((total(&list), id_of(&list["items"][0])), (1, id), "{list}");
    assert_eq!(
        list,
        rest_data(&app, &duka.key, &format!("/api/v3/catalogues/orders?status=confirmed&catalogue_id={}", duka.id))
            .await
    );
    assert_eq!(total(&ok(&client, "list_orders", json!({"status": "pending"})).await), 0);
    assert_eq!(total(&ok(&client, "list_orders", json!({"platform": "storefront"})).await), 0);

    // cancelling releases the stock
    let cancelled = ok(&client, "set_order_status", json!({"order": id, "status": "cancelled"})).await;
    assert_eq!(cancelled["reservation"]["state"], "released", "{cancelled}");
    let product = rest_data(&app, &duka.key, &format!("/api/v3/catalogues/{}/products/by-sku/A", duka.id)).await;
    assert_eq!(product["reserved"], 0, "{product}");
}

#[actix_web::test]
async fn an_idempotency_key_replays_the_first_order_from_the_same_store_as_the_header() {
    let app = api_tests::spawn().await;
    let duka = shop(&app, &products()).await;
    let token = app.mcp_connection(duka.tenant, duka.user, COMMERCE_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/orders", &token).await;

    let mut args = order_args(duka.id);
    args["idempotency_key"] = json!("order-77");
    let first = ok(&client, "create_order", args.clone()).await;
    let again = ok(&client, "create_order", args.clone()).await;
    assert_eq!(first, again);
    assert_eq!(total(&ok(&client, "list_orders", json!({})).await), 1);
    // REST's header with the same key and body is the same request: the first order, replayed
    let mut body = order_args(duka.id);
    body.as_object_mut().expect("object").remove("catalogue");
    let req = TestRequest::post()
        .uri(&format!("/api/v3/catalogues/{}/orders", duka.id))
        .insert_header(("Authorization", format!("Bearer {}", duka.key)))
        .insert_header(("Idempotency-Key", "order-77"))
        .set_json(body);
    let res = app.send(req).await;
    assert_eq!((res.status, res.header("x-idempotent-replay")), (201, Some("1")), "{}", res.body);
    assert_eq!(res.data()["id"], first["id"]);

    // the key with another body is refused, named as the argument
    args["lines"] = json!([{"sku": "A", "quantity": 1}]);
    let error = refused(&client, "create_order", args).await;
    assert_field(&error, "idempotency_key");
    let mut args = order_args(duka.id);
    args["idempotency_key"] = json!("k".repeat(256));
    assert_field(&refused(&client, "create_order", args).await, "idempotency_key");
    assert_eq!(total(&ok(&client, "list_orders", json!({})).await), 1);
}

#[actix_web::test]
async fn refusals_come_from_the_commerce_service_as_rest_gives_them() {
    let app = api_tests::spawn().await;
    let duka = shop(&app, &products()).await;
    let token = app.mcp_connection(duka.tenant, duka.user, COMMERCE_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/orders", &token).await;
    let order = id_of(&ok(&client, "create_order", order_args(duka.id)).await);

    assert_field(&refused(&client, "create_order", json!({"catalogue": duka.id, "lines": []})).await, "lines");
    assert_field(&refused(&client, "create_order", json!({"catalogue": duka.id})).await, "lines");
    let lines = json!([{"sku": "A", "quantity": 0}]);
    assert_field(
        &refused(&client, "create_order", json!({"catalogue": duka.id, "lines": lines})).await,
        "lines[0].quantity",
    );
    let lines = json!([{"sku": "A", "quantity": 1}]);
    assert_field(&refused(&client, "create_order", json!({"lines": lines.clone()})).await, "catalogue");
    for catalogue in [json!(999_999), json!("shop")] {
        let error = refused(&client, "create_order", json!({"catalogue": catalogue, "lines": lines.clone()})).await;
        assert_code(&error, "not_found");
    }
    assert_field(&refused(&client, "set_order_status", json!({"order": order, "status": "lost"})).await, "status");
    assert_field(&refused(&client, "set_order_status", json!({"order": order})).await, "status");
    assert_code(
        &refused(&client, "set_order_status", json!({"order": 999_999, "status": "shipped"})).await,
        "not_found",
    );
    for missing in [json!(999_999), json!("abc"), json!(0)] {
        assert_code(&refused(&client, "get_order", json!({"order": missing})).await, "not_found");
    }
    assert_field(&refused(&client, "get_order", json!({})).await, "order");
    assert_field(&refused(&client, "list_orders", json!({"status": "lost"})).await, "status");
    assert_field(&refused(&client, "list_orders", json!({"updated_since": "yesterday"})).await, "updated_since");
    assert_field(&refused(&client, "list_orders", json!({"colour": "red"})).await, "colour");
    // the refused calls changed nothing
    assert_eq!(total(&ok(&client, "list_orders", json!({})).await), 1);
    assert_eq!(ok(&client, "get_order", json!({"order": order})).await["status"], "pending");
}

#[actix_web::test]
async fn scopes_and_the_catalogue_permissions_decide_every_order_call() {
    let app = api_tests::spawn().await;
    let duka = shop(&app, &products()).await;
    let manager = app.mcp_connection(duka.tenant, duka.user, COMMERCE_SCOPES).await;
    let reader = app.mcp_connection(duka.tenant, duka.user, "mcp:use mcp:commerce").await;
    let elsewhere = app.mcp_connection(duka.tenant, duka.user, "mcp:use mcp:messaging mcp:write").await;
    let viewer = app.user(duka.tenant, "communications.catalogue.view").await;
    let viewing = app.mcp_connection(duka.tenant, viewer, COMMERCE_SCOPES).await;
    let nobody = app.user(duka.tenant, "leads.view").await;
    let nothing = app.mcp_connection(duka.tenant, nobody, COMMERCE_SCOPES).await;
    let sending = app.mcp_connection(duka.tenant, duka.user, "mcp:use mcp:commerce mcp:write mcp:send").await;
    let seller = app.user(duka.tenant, &format!("{CATALOGUE_MANAGER},communications.send")).await;
    let seller_sending = app.mcp_connection(duka.tenant, seller, "mcp:use mcp:commerce mcp:write mcp:send").await;
    let seller_reading = app.mcp_connection(duka.tenant, seller, "mcp:use mcp:commerce mcp:send").await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/orders", &manager).await;
    assert_eq!(tool_names(&client).await, sorted(&TOOLS));
    let order = id_of(&ok(&client, "create_order", order_args(duka.id)).await);

    // send_shop_link needs mcp:send and communications.send; create_shop_link mcp:write
    let client = connect(&server, "/mcp/v1/orders", &sending).await;
    assert_eq!(tool_names(&client).await, sorted(&TOOLS), "mcp:send without communications.send");
    let client = connect(&server, "/mcp/v1/orders", &seller_sending).await;
    assert_eq!(tool_names(&client).await, sorted(&[&TOOLS[..], &["send_shop_link"]].concat()));
    let client = connect(&server, "/mcp/v1/orders", &seller_reading).await;
    assert_eq!(tool_names(&client).await, sorted(&[&READS[..], &["send_shop_link"]].concat()));
    let error = refused(&client, "create_shop_link", json!({"catalogue_id": duka.id, "sku": "A"})).await;
    assert_eq!(
        (error["reason"].clone(), error["missing_scopes"].clone()),
        (json!("insufficient_scope"), json!(["mcp:write"]))
    );

    // without mcp:write only the reads are listed, and a write is refused for the scope
    let client = connect(&server, "/mcp/v1/orders", &reader).await;
    assert_eq!(tool_names(&client).await, sorted(&READS));
    let error = refused(&client, "create_order", order_args(duka.id)).await;
    assert_eq!(
        (error["reason"].clone(), error["missing_scopes"].clone()),
        (json!("insufficient_scope"), json!(["mcp:write"]))
    );
    let error = refused(&client, "set_order_status", json!({"order": order, "status": "shipped"})).await;
    assert_eq!(error["missing_scopes"], json!(["mcp:write"]), "{error}");
    let client = connect(&server, "/mcp", &elsewhere).await;
    let error = refused(&client, "get_order", json!({"order": order})).await;
    assert_eq!(
        (error["code"].clone(), error["missing_scopes"].clone()),
        (json!("permission_denied"), json!(["mcp:commerce"]))
    );

    // communications.catalogue.view reads (and makes unsent shop links); writing orders needs .manage
    let client = connect(&server, "/mcp/v1/orders", &viewing).await;
    assert_eq!(tool_names(&client).await, sorted(&[&READS[..], &["create_shop_link"]].concat()));
    assert_eq!(ok(&client, "get_order", json!({"order": order})).await["status"], "pending");
    assert_code(&refused(&client, "create_order", order_args(duka.id)).await, "permission_denied");
    let error = refused(&client, "set_order_status", json!({"order": order, "status": "shipped"})).await;
    assert_code(&error, "permission_denied");
    assert!(error.get("reason").is_none(), "a permission, not a scope: {error}");
    // and without either, nothing
    let client = connect(&server, "/mcp/v1/orders", &nothing).await;
    assert!(tool_names(&client).await.is_empty());
    assert_code(&refused(&client, "get_order", json!({"order": order})).await, "permission_denied");
    assert_code(&refused(&client, "list_orders", json!({})).await, "permission_denied");
    // the issuer's permission, read on every call
    app.set_permissions(viewer, CATALOGUE_MANAGER).await;
    let client = connect(&server, "/mcp/v1/orders", &viewing).await;
    let shipped = ok(&client, "set_order_status", json!({"order": order, "status": "shipped"})).await;
    assert_eq!(shipped["status"], "shipped");
}

#[actix_web::test]
async fn another_tenants_orders_and_shops_are_not_found_through_every_tool() {
    let app = api_tests::spawn().await;
    let owner = shop(&app, &products()).await;
    let stranger = shop(&app, &products()).await;
    let owner_token = app.mcp_connection(owner.tenant, owner.user, COMMERCE_SCOPES).await;
    let stranger_token = app.mcp_connection(stranger.tenant, stranger.user, COMMERCE_SCOPES).await;
    let server = app.listen();
    let order =
        id_of(&ok(&connect(&server, "/mcp/v1/orders", &owner_token).await, "create_order", order_args(owner.id)).await);

    let client = connect(&server, "/mcp", &stranger_token).await;
    for (tool, args) in [
        ("get_order", json!({"order": order})),
        ("set_order_status", json!({"order": order, "status": "cancelled"})),
        ("create_order", order_args(owner.id)),
    ] {
        assert_code(&refused(&client, tool, args).await, "not_found");
    }
    assert_eq!(total(&ok(&client, "list_orders", json!({})).await), 0);
    assert_eq!(total(&ok(&client, "list_orders", json!({"catalogue_id": owner.id})).await), 0);
    // the owner's order and stock are untouched
    let read = rest_data(&app, &owner.key, &format!("/api/v3/catalogues/orders/{order}")).await;
    assert_eq!((read["status"].clone(), read["reservation"]["state"].clone()), (json!("pending"), json!("held")));
    assert_eq!(total(&rest_data(&app, &owner.key, "/api/v3/catalogues/orders").await), 1);
}
