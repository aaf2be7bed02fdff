//! The `automations` tools through the SDK's client (issue 20): the reads run the methods of
//! `GET /automations/{events,subscriptions,schedules}` with `automations.view` from the issuer
//! and `mcp:automations` from the grant; the writes (subscriptions and schedules) need
//! `mcp:automate` too, record `created_by: "mcp"`, and touch the tenant's rows only.

use api_tests::json;
use serde_json::Value;

use super::support::*;
use crate::webhooks::support::{Receiver, emit, header};

const VIEWER: &str = "automations.view";
const READS: [&str; 4] = ["list_business_events", "list_event_types", "list_subscriptions", "list_schedules"];
const WRITES: [&str; 4] = ["create_subscription", "delete_subscription", "create_schedule", "delete_schedule"];
const SCOPES: &str = "mcp:use mcp:automations mcp:automate";
const PATH: &str = "/mcp/v1/automations";

/// Every tool with arguments it accepts, the ids those of a subscription and a schedule.
fn every_call(subscription: &Value, schedule: &Value) -> Vec<(&'static str, Value)> {
    vec![
        ("list_business_events", json!({})),
        ("list_event_types", json!({})),
        ("list_subscriptions", json!({})),
        ("list_schedules", json!({})),
        ("create_subscription", json!({"events": ["lead.created"], "url": "https://hooks.example.com/in"})),
        ("delete_subscription", json!({"id": subscription})),
        ("create_schedule", json!({"cron": "0 9 * * *", "event": "scheduled.daily"})),
        ("delete_schedule", json!({"id": schedule})),
    ]
}

#[actix_web::test]
async fn a_subscription_made_through_mcp_is_called_back_and_schedules_are_made_and_removed() {
    let app = api_tests::spawn().await;
    let acme = app.account(VIEWER).await;
    let token = app.mcp_connection(acme.tenant, acme.user, SCOPES).await;
    let server = app.listen();
    let client = connect(&server, PATH, &token).await;
    assert_eq!(tool_names(&client).await, sorted(&[READS, WRITES].concat()));
    for tool in client.list_all_tools().await.expect("tools/list") {
        let hints = tool.annotations.as_ref().expect("annotations");
        let read = READS.contains(&tool.name.as_ref());
        assert_eq!(hints.read_only_hint, Some(read), "{}", tool.name);
        assert_eq!(hints.destructive_hint, Some(tool.name.starts_with("delete_")), "{}", tool.name);
    }

    // event discovery: the catalogue live, the payment events declared only
    let types = ok(&client, "list_event_types", json!({})).await;
    let live = |name: &str| types["event_types"].as_array().and_then(|t| t.iter().find(|t| t["name"] == name)).cloned();
    assert_eq!(live("order.paid").map(|t| t["live"].clone()), Some(json!(true)), "{types}");
    assert_eq!(live("payment.paid").map(|t| t["live"].clone()), Some(json!(false)), "{types}");

    // a subscription: its secret once, its callback signed and delivered, listed as REST lists it
    let receiver = Receiver::answering(204).await;
    let made =
        ok(&client, "create_subscription", json!({"events": [" Order.Paid", "lead.created"], "url": receiver.url()}))
            .await;
    assert_eq!(made["events"], json!(["order.paid", "lead.created"]), "{made}");
    assert!(made["secret"].as_str().is_some_and(|s| s.starts_with("whsec_")), "{made}");
    let event = emit(&app, acme.tenant, "order.paid", json!({"order_id": 7})).await;
    app.run_jobs().await;
    let requests = receiver.requests().await;
    assert_eq!(requests.len(), 1);
    assert_eq!(header(&requests[0], "webhook-id"), event.to_string());
    let listed = ok(&client, "list_subscriptions", json!({})).await;
    assert_eq!(listed, rest_body(&app, &acme.key, "/api/v3/automations/subscriptions").await);
    let subscription = &listed["subscriptions"][0];
    assert_eq!((subscription["id"].clone(), subscription["created_by"].clone()), (made["id"].clone(), json!("mcp")));
    assert_eq!(subscription["delivered"], 1, "{subscription}");
    assert!(subscription.get("secret").is_none(), "{subscription}");
    let log = ok(&client, "list_business_events", json!({"name": "order.paid", "limit": 10})).await;
    assert_eq!(log["events"][0]["id"], json!(event), "{log}");
    assert_eq!(log, rest_body(&app, &acme.key, "/api/v3/automations/events?name=order.paid&limit=10").await);

    // the service's rules, as the operator's command line meets them
    for (events, url, field) in [
        (json!(["payment.paid"]), json!("https://hooks.example.com/in"), "events"),
        (json!([]), json!("https://hooks.example.com/in"), "events"),
        (json!(["lead.created"]), json!("https://169.254.169.254/latest"), "url"),
    ] {
        assert_field(&refused(&client, "create_subscription", json!({"events": events, "url": url})).await, field);
    }

    // a schedule: made, listed as REST lists it, refused naming an operation, removed
    let schedule =
        ok(&client, "create_schedule", json!({"cron": "*/15 * * * *", "event": "scheduled.stock_report"})).await;
    assert_eq!((schedule["created_by"].as_str(), schedule["runs"].as_i64()), (Some("mcp"), Some(0)), "{schedule}");
    let schedules = ok(&client, "list_schedules", json!({})).await;
    assert_eq!(schedules, rest_body(&app, &acme.key, "/api/v3/automations/schedules").await);
    assert_eq!(schedules["schedules"][0]["id"], schedule["id"]);
    for (args, field) in [
        (json!({"cron": "every day", "event": "scheduled.x"}), "cron"),
        (json!({"cron": "0 9 * * *", "event": "lead.created"}), "event"),
        (json!({"cron": "0 9 * * *", "operation": "restock"}), "operation"),
        (json!({"cron": "0 9 * * *", "operation": "restock", "event": "scheduled.x"}), "operation"),
        (json!({"cron": "0 9 * * *", "event": "scheduled.x", "input": {}}), "input"),
        (json!({"event": "scheduled.x"}), "cron"),
    ] {
        assert_field(&refused(&client, "create_schedule", args.clone()).await, field);
    }

    // removed: nothing more is posted; a second removal is not found
    assert_eq!(
        ok(&client, "delete_subscription", json!({"id": made["id"]})).await,
        json!({"id": made["id"], "deleted": true})
    );
    emit(&app, acme.tenant, "order.paid", json!({"order_id": 8})).await;
    app.run_jobs().await;
    assert_eq!(receiver.requests().await.len(), 1);
    assert_code(&refused(&client, "delete_subscription", json!({"id": made["id"]})).await, "not_found");
    ok(&client, "delete_schedule", json!({"id": schedule["id"]})).await;
    assert_code(&refused(&client, "delete_schedule", json!({"id": schedule["id"]})).await, "not_found");
    // a malformed id names nothing, as on REST
    assert_code(&refused(&client, "delete_schedule", json!({"id": "x"})).await, "not_found");
    assert_eq!(rest_body(&app, &acme.key, "/api/v3/automations/schedules").await, json!({"schedules": []}));
}

#[actix_web::test]
async fn another_tenants_subscriptions_and_schedules_are_not_found_and_not_listed() {
    let app = api_tests::spawn().await;
    let acme = app.account(VIEWER).await;
    let other = app.account(VIEWER).await;
    let server = app.listen();
    let owner = connect(&server, PATH, &app.mcp_connection(acme.tenant, acme.user, SCOPES).await).await;
    let made =
        ok(&owner, "create_subscription", json!({"events": ["lead.created"], "url": "https://hooks.example.com/in"}))
            .await;
    let schedule = ok(&owner, "create_schedule", json!({"cron": "0 9 * * *", "event": "scheduled.daily"})).await;
    emit(&app, acme.tenant, "lead.created", json!({})).await;

    let stranger = connect(&server, PATH, &app.mcp_connection(other.tenant, other.user, SCOPES).await).await;
    assert_code(&refused(&stranger, "delete_subscription", json!({"id": made["id"]})).await, "not_found");
    assert_code(&refused(&stranger, "delete_schedule", json!({"id": schedule["id"]})).await, "not_found");
    assert_eq!(ok(&stranger, "list_subscriptions", json!({})).await, json!({"subscriptions": []}));
    assert_eq!(ok(&stranger, "list_schedules", json!({})).await, json!({"schedules": []}));
    assert_eq!(ok(&stranger, "list_business_events", json!({})).await["events"], json!([]));
    // the owner's are untouched
    assert_eq!(ok(&owner, "list_subscriptions", json!({})).await["subscriptions"][0]["id"], made["id"]);
    assert_eq!(ok(&owner, "list_schedules", json!({})).await["schedules"][0]["id"], schedule["id"]);
}

#[actix_web::test]
async fn writes_need_mcp_automate_and_every_tool_automations_view() {
    let app = api_tests::spawn().await;
    let acme = app.account(VIEWER).await;
    let server = app.listen();
    let owner = connect(&server, PATH, &app.mcp_connection(acme.tenant, acme.user, SCOPES).await).await;
    let subscription =
        ok(&owner, "create_subscription", json!({"events": ["lead.created"], "url": "https://hooks.example.com/in"}))
            .await["id"]
            .clone();
    let schedule =
        ok(&owner, "create_schedule", json!({"cron": "0 9 * * *", "event": "scheduled.daily"})).await["id"].clone();

    // without mcp:automate: the reads only, and each write refused for the missing scope
    let reader =
        connect(&server, PATH, &app.mcp_connection(acme.tenant, acme.user, "mcp:use mcp:automations").await).await;
    assert_eq!(tool_names(&reader).await, sorted(&READS));
    for (tool, args) in every_call(&subscription, &schedule) {
        if READS.contains(&tool) {
            ok(&reader, tool, args).await;
            continue;
        }
        let error = refused(&reader, tool, args).await;
        assert_eq!(
            (error["reason"].clone(), error["missing_scopes"].clone()),
            (json!("insufficient_scope"), json!(["mcp:automate"])),
            "{tool}: {error}"
        );
    }

    // an issuer without automations.view: no tool, each refused by the permission, nothing changed
    let clerk = app.user(acme.tenant, "payments.view").await;
    let clerk = connect(&server, PATH, &app.mcp_connection(acme.tenant, clerk, SCOPES).await).await;
    assert!(tool_names(&clerk).await.is_empty());
    for (tool, args) in every_call(&subscription, &schedule) {
        assert_denied(&refused(&clerk, tool, args).await);
    }
    assert_eq!(ok(&owner, "list_subscriptions", json!({})).await["subscriptions"].as_array().map(Vec::len), Some(1));
    assert_eq!(ok(&owner, "list_schedules", json!({})).await["schedules"].as_array().map(Vec::len), Some(1));
}
