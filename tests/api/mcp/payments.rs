//! The `payments` tools through the SDK's client (issue 20): `list_payments` and `get_payment`
//! run `payments_read::PaymentService` as `GET /payments` and `GET /payments/{payment}` do, with
//! `payments.view` from the issuer, `mcp:payments` from the grant, and the tenant's rows only.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Account, TestApp, json};
use serde_json::Value;

use super::support::*;

/// Reads payments and manages shops (to make the orders paid for).
const CASHIER: &str = "payments.view,communications.catalogue.view,communications.catalogue.manage";
const SCOPES: &str = "mcp:use mcp:payments";
const TOOLS: [&str; 2] = ["list_payments", "get_payment"];
const PATH: &str = "/mcp/v1/payments";

/// A payment of an order of `K-1` at 4,500.00, asked for by the operator from a number the
/// sandbox pays from, and settled: its reference.
async fn paid<S, B>(app: &TestApp<S>, account: &Account) -> String
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    use crate::commerce::support::{order, put_product, shop};
    let shop = shop(app, &account.key, "external").await;
    put_product(app, &account.key, shop, "K-1", json!({"name": "Kahawa 500g", "price": 450_000})).await;
    let order = order(app, &account.key, shop, json!([{"sku": "K-1", "quantity": 2}])).await;
    let order = order["id"].as_i64().unwrap_or_else(|| panic!("an order id: {order}"));
    let payment = app
        .payments
        .request_for_order(
            &kernel::Caller::operator(account.tenant, "255"),
            commerce::OrderId(order),
            Some("0712345678"),
            payments_read::Source::Operator,
        )
        .await
        .expect("a payment");
    app.run_jobs().await;
    app.advance(time::Duration::seconds(1)).await;
    payment.reference
}

/// The references a list answer holds.
fn references(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {list}"))
        .iter()
        .map(|p| p["reference"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[actix_web::test]
async fn a_settled_payment_is_listed_by_its_state_and_read_by_reference_with_its_timeline_and_ledger() {
    let app = api_tests::spawn().await;
    let acme = app.account(CASHIER).await;
    let reference = paid(&app, &acme).await;
    let token = app.mcp_connection(acme.tenant, acme.user, SCOPES).await;
    let server = app.listen();
    let client = connect(&server, PATH, &token).await;
    assert_eq!(tool_names(&client).await, sorted(&TOOLS));
    let tools = client.list_all_tools().await.expect("tools/list");
    for tool in &tools {
        let hints = tool.annotations.as_ref().expect("annotations");
        assert_eq!((hints.read_only_hint, hints.destructive_hint), (Some(true), Some(false)), "{}", tool.name);
    }

    // the state filter, as REST reads it: paid, open, any case, all, and unrecognized (unfiltered)
    let list = ok(&client, "list_payments", json!({"state": "paid"})).await;
    assert_eq!(references(&list), [reference.as_str()], "{list}");
    assert_eq!(list["data"][0]["state"], "paid", "{list}");
    assert_eq!(list["meta"], json!({"current_page": 1, "per_page": 25, "total": 1, "last_page": 1}));
    assert_eq!(list, rest_body(&app, &acme.key, "/api/v3/payments?state=paid").await);
    assert!(references(&ok(&client, "list_payments", json!({"state": "open"})).await).is_empty());
    assert!(references(&ok(&client, "list_payments", json!({"state": "failed"})).await).is_empty());
    for state in [" PAID ", "all", "bogus"] {
        let list = ok(&client, "list_payments", json!({"state": state})).await;
        assert_eq!(references(&list), [reference.as_str()], "{state}: {list}");
    }
    let order = list["data"][0]["subject_id"].clone();
    let by_subject = ok(&client, "list_payments", json!({"subject_id": order, "state": "paid"})).await;
    assert_eq!(references(&by_subject), [reference.as_str()]);
    assert!(references(&ok(&client, "list_payments", json!({"subject_id": "999999"})).await).is_empty());

    // pages as REST: per_page capped at 100, numbers as numbers, a page past the end is empty
    let capped = ok(&client, "list_payments", json!({"per_page": 500, "page": 1})).await;
    assert_eq!(capped["meta"]["per_page"], 100, "{capped}");
    let past = ok(&client, "list_payments", json!({"per_page": 1, "page": 2})).await;
    assert_eq!((references(&past).len(), past["meta"]["last_page"].clone()), (0, json!(1)), "{past}");
    assert_field(&refused(&client, "list_payments", json!({"page": "x"})).await, "page");
    assert_field(&refused(&client, "list_payments", json!({"status": "paid"})).await, "status");

    // one payment by reference (any case) and by id: the timeline and the balanced ledger
    let read = ok(&client, "get_payment", json!({"payment": reference.to_lowercase()})).await;
    let payment = &read["data"];
    assert_eq!((payment["reference"].as_str(), payment["state"].as_str()), (Some(reference.as_str()), Some("paid")));
    assert_eq!(payment["amount"], "TZS 9,000.00", "{payment}");
    let timeline: Vec<(Value, Value, Value)> = payment["timeline"]
        .as_array()
        .unwrap_or_else(|| panic!("a timeline: {payment}"))
        .iter()
        .map(|t| (t["old_state"].clone(), t["new_state"].clone(), t["source"].clone()))
        .collect();
    assert_eq!(
        timeline,
        [
            (Value::Null, json!("draft"), json!("operator")),
            (json!("draft"), json!("pending"), json!("operator")),
            (json!("pending"), json!("paid"), json!("provider")),
        ]
    );
    let ledger: Vec<(Value, Value, Value)> = payment["ledger"]
        .as_array()
        .unwrap_or_else(|| panic!("a ledger: {payment}"))
        .iter()
        .map(|e| (e["direction"].clone(), e["account"].clone(), e["amount_minor"].clone()))
        .collect();
    assert_eq!(
        ledger,
        [
            (json!("debit"), json!("provider_clearing"), json!(900_000)),
            (json!("credit"), json!("customer_payments"), json!(900_000)),
        ]
    );
    assert_eq!(read, rest_body(&app, &acme.key, &format!("/api/v3/payments/{reference}")).await);
    let id = payment["id"].as_str().expect("an id").to_owned();
    assert_eq!(ok(&client, "get_payment", json!({"payment": id})).await, read);
    for missing in [json!("PAY-20000101-999999"), json!("nothing"), json!("00000000-0000-0000-0000-000000000000")] {
        assert_code(&refused(&client, "get_payment", json!({"payment": missing})).await, "not_found");
    }
    assert_field(&refused(&client, "get_payment", json!({})).await, "payment");

    // `/mcp` offers them too
    let all = connect(&server, "/mcp", &token).await;
    assert_eq!(references(&ok(&all, "list_payments", json!({})).await), [reference]);
}

#[actix_web::test]
async fn another_tenants_payment_is_not_found_and_its_list_is_empty() {
    let app = api_tests::spawn().await;
    let acme = app.account(CASHIER).await;
    let reference = paid(&app, &acme).await;
    let id = rest_body(&app, &acme.key, &format!("/api/v3/payments/{reference}")).await["data"]["id"].clone();
    let other = app.account(CASHIER).await;
    let token = app.mcp_connection(other.tenant, other.user, SCOPES).await;
    let server = app.listen();
    let stranger = connect(&server, PATH, &token).await;

    assert_eq!(tool_names(&stranger).await, sorted(&TOOLS));
    for payment in [json!(reference), id] {
        assert_code(&refused(&stranger, "get_payment", json!({"payment": payment})).await, "not_found");
    }
    let list = ok(&stranger, "list_payments", json!({"state": "all"})).await;
    assert_eq!((references(&list).len(), list["meta"]["total"].clone()), (0, json!(0)), "{list}");
}

#[actix_web::test]
async fn an_issuer_without_payments_view_sees_no_tool_and_is_refused() {
    let app = api_tests::spawn().await;
    let acme = app.account(CASHIER).await;
    let reference = paid(&app, &acme).await;
    let clerk = app.user(acme.tenant, "communications.catalogue.view").await;
    let token = app.mcp_connection(acme.tenant, clerk, SCOPES).await;
    let server = app.listen();
    let client = connect(&server, PATH, &token).await;

    assert!(tool_names(&client).await.is_empty(), "no payments.view, no payments tool");
    assert_denied(&refused(&client, "list_payments", json!({})).await);
    assert_denied(&refused(&client, "get_payment", json!({"payment": reference})).await);
    // the cashier's own connection, the same grant, reads it
    let cashier = app.mcp_connection(acme.tenant, acme.user, SCOPES).await;
    let cashier = connect(&server, PATH, &cashier).await;
    assert_eq!(ok(&cashier, "get_payment", json!({"payment": reference})).await["data"]["state"], "paid");
}

#[actix_web::test]
async fn a_connection_without_mcp_payments_does_not_see_the_tools() {
    let app = api_tests::spawn().await;
    let acme = app.account(CASHIER).await;
    let reference = paid(&app, &acme).await;
    let token = app.mcp_connection(acme.tenant, acme.user, "mcp:use mcp:commerce").await;
    let server = app.listen();

    assert!(tool_names(&connect(&server, PATH, &token).await).await.is_empty());
    let all = connect(&server, "/mcp", &token).await;
    let names = tool_names(&all).await;
    assert!(names.contains(&"list_orders".to_owned()), "{names:?}");
    assert!(TOOLS.iter().all(|tool| !names.contains(&(*tool).to_owned())), "{names:?}");
    for (tool, args) in [("list_payments", json!({})), ("get_payment", json!({"payment": reference}))] {
        let error = refused(&all, tool, args).await;
        assert_eq!(
            (error["code"].clone(), error["reason"].clone(), error["missing_scopes"].clone()),
            (json!("permission_denied"), json!("insufficient_scope"), json!(["mcp:payments"])),
            "{tool}: {error}"
        );
    }
    // granted the capability, the same issuer sees both
    let granted = app.mcp_connection(acme.tenant, acme.user, "mcp:use mcp:commerce mcp:payments").await;
    let granted = connect(&server, "/mcp", &granted).await;
    let names = tool_names(&granted).await;
    assert!(TOOLS.iter().all(|tool| names.contains(&(*tool).to_owned())), "{names:?}");
}
