//! The `messaging` tools through the SDK's client: sending, reading and listing messages,
//! campaigns and the blacklist run the messaging service as `/sms/...`, `/messages` and
//! `/campaign/...` do, with the account's calling code, its wallet, its permissions and its
//! tenant's rows only.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{TestApp, json};
use serde_json::Value;

use super::support::*;
use crate::sms::{SmsAccount, sms_account};

/// Every scope the messaging tools need.
const SCOPES: &str = "mcp:use mcp:messaging mcp:send mcp:write";

const TOOLS: [&str; 14] = [
    "send_sms",
    "send_chat_text",
    "send_chat_template",
    "send_chat_interactive",
    "send_chat_reaction",
    "get_chat_message",
    "list_chat_accounts",
    "get_message",
    "list_messages",
    "create_campaign",
    "get_campaign",
    "list_blacklist",
    "add_to_blacklist",
    "remove_from_blacklist",
];

/// An account ready to send (a sandbox channel, sender `ACME`, 100 a segment, 100,000 in the
/// wallet; see `sms_account`) whose user holds `permissions`, and a connection of theirs with
/// `scopes`.
async fn sms_connection<S, B>(app: &TestApp<S>, permissions: &str, scopes: &str) -> (SmsAccount, String)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let acme = sms_account(app, permissions).await;
    let token = app.mcp_connection(acme.tenant(), acme.account.user, scopes).await;
    (acme, token)
}

/// A contact group holding one contact per number, made through REST: its id.
async fn group<S, B>(app: &TestApp<S>, key: &str, numbers: &[&str]) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post("/api/v3/contact-groups", key, json!({"name": "Customers"})).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let id = res.data()["id"].as_i64().expect("group id");
    let rows: Vec<Value> =
        numbers.iter().enumerate().map(|(i, n)| json!({"PHONE": n, "name": format!("Person {i}")})).collect();
    let res = app.post(&format!("/api/v3/contact-groups/{id}/contacts/batch"), key, json!({"contacts": rows})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    id
}

fn total(page: &Value) -> i64 {
    page["pagination"]["total"].as_i64().unwrap_or_else(|| panic!("pagination.total in {page}"))
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_else(|| panic!("{key} in {value}"))
}

#[track_caller]
fn assert_scope_refused(error: &Value, missing: &[&str]) {
    assert_eq!(
        (error["code"].clone(), error["reason"].clone()),
        (json!("permission_denied"), json!("insufficient_scope")),
        "{error}"
    );
    assert_eq!(error["missing_scopes"], json!(missing), "{error}");
}

#[actix_web::test]
async fn send_sms_sends_and_bills_as_post_sms_send_and_the_reads_see_it() {
    let app = api_tests::spawn().await;
    let (acme, token) = sms_connection(&app, "all", SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/messaging", &token).await;
    assert_eq!(tool_names(&client).await, sorted(&TOOLS));
    let send = client.list_all_tools().await.expect("tools").into_iter().find(|t| t.name == "send_sms").expect("tool");
    let hints = send.annotations.as_ref().expect("annotations");
    assert_eq!((hints.read_only_hint, hints.idempotent_hint), (Some(false), Some(false)));
    assert!(send.input_schema["properties"].get("recipient").is_some(), "{:?}", send.input_schema);

    // a national number is read in the account's calling code; one number twice is one message
    let sent = ok(
        &client,
        "send_sms",
        json!({"recipient": "0712345678", "recipients": ["+255712345678", "0712345679"], "message": "Karibu!"}),
    )
    .await;
    let messages = sent["messages"].as_array().expect("messages");
    let recipients: Vec<&str> = messages.iter().map(|m| text(m, "recipient")).collect();
    assert_eq!(recipients, ["+255712345678", "+255712345679"], "{sent}");
    let first = &messages[0];
    assert_eq!(
        (first["status"].clone(), first["segments"].clone(), first["price_minor"].clone()),
        (json!("sent"), json!(1), json!(100)),
        "{first}"
    );
    assert!(text(first, "uid").starts_with("msg_"));
    // the provider got both and the wallet paid for both, as REST shows
    assert_eq!(app.sandbox().count(), 2);
    assert_eq!(rest_data(&app, acme.key(), "/api/v3/balance").await["balance_minor"], 100_000 - 200);

    // read by uid, by numeric id and by id as text: REST's message
    let uid = text(first, "uid");
    let id = first["id"].as_i64().expect("id");
    let read = ok(&client, "get_message", json!({"message": uid})).await;
    assert_eq!(read, rest_data(&app, acme.key(), &format!("/api/v3/sms/{uid}")).await);
    assert_eq!((read["body"].clone(), read["sender"].clone()), (json!("Karibu!"), json!("ACME")));
    assert_eq!(ok(&client, "get_message", json!({"message": id})).await, read);
    assert_eq!(ok(&client, "get_message", json!({"message": id.to_string()})).await, read);

    // the list and its filters, as GET /messages reads them
    let all = ok(&client, "list_messages", json!({})).await;
    assert_eq!(all, rest_data(&app, acme.key(), "/api/v3/messages").await);
    assert_eq!(total(&all), 2);
    let one = ok(&client, "list_messages", json!({"recipient": "0712345678", "direction": "outbound"})).await;
    assert_eq!((total(&one), one["items"][0]["uid"].clone()), (1, json!(uid)), "{one}");
    assert_eq!(total(&ok(&client, "list_messages", json!({"direction": "inbound"})).await), 0);
    let paged = ok(&client, "list_messages", json!({"limit": 1, "page": 2})).await;
    assert_eq!(
        (paged["pagination"]["per_page"].clone(), paged["pagination"]["current_page"].clone()),
        (json!(1), json!(2))
    );
}

#[actix_web::test]
async fn campaigns_are_created_and_read_through_the_tools() {
    let app = api_tests::spawn().await;
    let (acme, token) = sms_connection(&app, "all", SCOPES).await;
    let customers = group(&app, acme.key(), &["0712000101", "0712000102"]).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/messaging", &token).await;

    let created =
        ok(&client, "create_campaign", json!({"contact_list_id": customers.to_string(), "message": "Sale today"}))
            .await;
    let campaigns = created["campaigns"].as_array().expect("campaigns");
    assert_eq!(campaigns.len(), 1, "{created}");
    let campaign = &campaigns[0];
    assert_eq!(
        (campaign["status"].clone(), campaign["total_recipients"].clone(), campaign["name"].clone()),
        (json!("draft"), json!(2), json!("Customers")),
        "{campaign}"
    );
    assert_eq!(campaign["contact_group"]["id"], customers);
    let uid = text(campaign, "uid");
    assert!(uid.starts_with("cmp_"), "{campaign}");

    app.run_jobs().await;
    let read = ok(&client, "get_campaign", json!({"campaign": uid})).await;
    assert_eq!(read, rest_data(&app, acme.key(), &format!("/api/v3/campaign/{uid}/view")).await);
    assert_eq!((read["status"].clone(), read["sent_count"].clone()), (json!("completed"), json!(2)), "{read}");
    assert_eq!(ok(&client, "get_campaign", json!({"campaign": campaign["id"]})).await, read);
    // its messages, by the list's campaign filter
    let messages = ok(&client, "list_messages", json!({"campaign": uid})).await;
    assert_eq!(total(&messages), 2, "{messages}");
    assert_eq!(app.sandbox().count(), 2);
}

#[actix_web::test]
async fn the_blacklist_tools_change_what_every_send_skips() {
    let app = api_tests::spawn().await;
    let (acme, token) = sms_connection(&app, "all", SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/messaging", &token).await;

    let added =
        ok(&client, "add_to_blacklist", json!({"numbers": ["0712000111", "+255712000222"], "reason": "asked"})).await;
    let numbers: Vec<&str> = added["items"].as_array().expect("items").iter().map(|e| text(e, "number")).collect();
    assert_eq!(numbers, ["+255712000111", "+255712000222"], "{added}");
    assert_eq!(added["items"][0]["reason"], "asked");
    let listed = ok(&client, "list_blacklist", json!({})).await;
    assert_eq!(total(&listed), 2);
    assert_eq!(listed, rest_data(&app, acme.key(), "/api/v3/sms/blacklist").await);

    // a send skips a listed number: a failed record, not charged
    let sent = ok(&client, "send_sms", json!({"recipient": "0712000111", "message": "Hi"})).await;
    assert_eq!(
        (sent["messages"][0]["status"].clone(), sent["messages"][0]["price_minor"].clone()),
        (json!("failed"), json!(0)),
        "{sent}"
    );

    let removed = ok(&client, "remove_from_blacklist", json!({"number": "0712000111"})).await;
    assert_eq!(removed, json!({"deleted": true}));
    let left = rest_data(&app, acme.key(), "/api/v3/sms/blacklist").await;
    assert_eq!((total(&left), left["items"][0]["number"].clone()), (1, json!("+255712000222")), "{left}");
    assert_code(&refused(&client, "remove_from_blacklist", json!({"number": "0712000111"})).await, "not_found");
    let sent = ok(&client, "send_sms", json!({"recipient": "0712000111", "message": "Hi again"})).await;
    assert_eq!(sent["messages"][0]["status"], "sent", "{sent}");
}

#[actix_web::test]
async fn refusals_come_from_the_messaging_service_as_rest_gives_them() {
    let app = api_tests::spawn().await;
    let (acme, token) = sms_connection(&app, "all", SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/messaging", &token).await;

    assert_field(&refused(&client, "send_sms", json!({"message": "Nobody"})).await, "recipient");
    assert_field(&refused(&client, "send_sms", json!({"recipient": 712000333, "message": "Hi"})).await, "recipient");
    assert_field(
        &refused(&client, "send_sms", json!({"recipient": "0712000333", "schedule_time": "tomorrow"})).await,
        "schedule_time",
    );
    for message in [json!("msg_nope"), json!(999_999), json!("0"), json!("cmp_abc")] {
        assert_code(&refused(&client, "get_message", json!({"message": message})).await, "not_found");
    }
    assert_field(&refused(&client, "get_message", json!({})).await, "message");
    assert_code(&refused(&client, "get_campaign", json!({"campaign": "cmp_nope"})).await, "not_found");
    assert_field(&refused(&client, "create_campaign", json!({"message": "Hello"})).await, "contact_list_id");
    assert_field(&refused(&client, "create_campaign", json!({"contact_list_id": "1"})).await, "message");
    let error = refused(&client, "create_campaign", json!({"contact_list_id": "999999", "message": "Hello"})).await;
    assert_code(&error, "not_found");
    assert_field(&refused(&client, "list_messages", json!({"status": "lost"})).await, "status");
    assert_field(&refused(&client, "list_messages", json!({"colour": "red"})).await, "colour");
    assert_field(&refused(&client, "list_blacklist", json!({"page": "first"})).await, "page");
    assert_field(
        &refused(&client, "add_to_blacklist", json!({"numbers": ["0712000444", "nonsense"]})).await,
        "numbers",
    );
    assert_field(&refused(&client, "add_to_blacklist", json!({"numbers": []})).await, "numbers");
    assert_eq!(total(&rest_data(&app, acme.key(), "/api/v3/sms/blacklist").await), 0, "nothing was added");
    assert_code(&refused(&client, "remove_from_blacklist", json!({"number": "0712000555"})).await, "not_found");

    // a send the prepaid wallet cannot pay: refused whole, with the figures, nothing written
    messaging::channels::set_rate(&mut *app.conn().await, acme.tenant(), None, 60_000).await.expect("rate");
    let error = refused(&client, "send_sms", json!({"recipient": "0712000666 0712000667", "message": "Hi"})).await;
    assert_code(&error, "quota_exceeded");
    assert_eq!((error["cost_minor"].clone(), error["balance_minor"].clone()), (json!(120_000), json!(100_000)));
    assert_eq!(total(&rest_data(&app, acme.key(), "/api/v3/messages").await), 0);
    assert_eq!(app.sandbox().count(), 0);
}

#[actix_web::test]
async fn scopes_and_the_routes_permissions_decide_every_messaging_call() {
    let app = api_tests::spawn().await;
    let (acme, reader) = sms_connection(&app, "all", "mcp:use mcp:messaging").await;
    let writer = app.mcp_connection(acme.tenant(), acme.account.user, "mcp:use mcp:messaging mcp:write").await;
    let elsewhere = app.mcp_connection(acme.tenant(), acme.account.user, "mcp:use mcp:contacts mcp:send").await;
    let server = app.listen();

    // reading needs the capability only; sending mcp:send, the blacklist's changes mcp:write
    let client = connect(&server, "/mcp/v1/messaging", &reader).await;
    assert_eq!(
        tool_names(&client).await,
        sorted(&[
            "get_message",
            "list_messages",
            "get_campaign",
            "list_blacklist",
            "get_chat_message",
            "list_chat_accounts"
        ])
    );
    let send = json!({"recipient": "0712000777", "message": "Hi"});
    assert_scope_refused(&refused(&client, "send_sms", send.clone()).await, &["mcp:send"]);
    let campaign = json!({"contact_list_id": "1", "message": "Hi"});
    assert_scope_refused(&refused(&client, "create_campaign", campaign.clone()).await, &["mcp:send"]);
    assert_scope_refused(
        &refused(&client, "add_to_blacklist", json!({"numbers": ["0712000777"]})).await,
        &["mcp:write"],
    );
    assert_scope_refused(
        &refused(&client, "remove_from_blacklist", json!({"number": "0712000777"})).await,
        &["mcp:write"],
    );
    // mcp:write is not mcp:send
    let client = connect(&server, "/mcp/v1/messaging", &writer).await;
    assert!(!tool_names(&client).await.contains(&"send_sms".to_owned()));
    assert_scope_refused(&refused(&client, "send_sms", send.clone()).await, &["mcp:send"]);
    // an elevation without the capability opens nothing
    let client = connect(&server, "/mcp", &elsewhere).await;
    assert_scope_refused(&refused(&client, "send_sms", send.clone()).await, &["mcp:messaging"]);
    assert_eq!(app.sandbox().count(), 0, "nothing was sent");

    // the legacy routes need the tenant credential only; the list and the blacklist their permission
    let tenant = acme.tenant();
    let user = app.user(tenant, "leads.view").await;
    let token = app.mcp_connection(tenant, user, SCOPES).await;
    let client = connect(&server, "/mcp/v1/messaging", &token).await;
    assert_eq!(
        tool_names(&client).await,
        sorted(&[
            "send_sms",
            "get_message",
            "create_campaign",
            "get_campaign",
            "send_chat_text",
            "send_chat_template",
            "send_chat_interactive",
            "send_chat_reaction",
            "get_chat_message",
            "list_chat_accounts",
        ])
    );
    let sent = ok(&client, "send_sms", send.clone()).await;
    assert_eq!(sent["messages"][0]["status"], "sent", "{sent}");
    let uid = text(&sent["messages"][0], "uid");
    assert_eq!(ok(&client, "get_message", json!({"message": uid})).await["uid"], uid);
    for (tool, args) in [
        ("list_messages", json!({})),
        ("list_blacklist", json!({})),
        ("add_to_blacklist", json!({"numbers": ["0712000888"]})),
        ("remove_from_blacklist", json!({"number": "0712000888"})),
    ] {
        let error = refused(&client, tool, args).await;
        assert_code(&error, "permission_denied");
        assert!(error.get("reason").is_none(), "a permission, not a scope: {error}");
    }
    // and read again on every call
    app.set_permissions(user, "contacts.view,communications.messages.view").await;
    assert_eq!(total(&ok(&client, "list_messages", json!({})).await), 1);
    assert_eq!(total(&ok(&client, "list_blacklist", json!({})).await), 0);
    let error = refused(&client, "add_to_blacklist", json!({"numbers": ["0712000888"]})).await;
    assert_code(&error, "permission_denied");
    app.set_permissions(user, "contacts.view,contacts.edit").await;
    assert_eq!(
        ok(&client, "add_to_blacklist", json!({"numbers": ["0712000888"]})).await["items"][0]["number"],
        "+255712000888"
    );
    assert_code(&refused(&client, "list_messages", json!({})).await, "permission_denied");
}

#[actix_web::test]
async fn another_tenants_messages_campaigns_and_blacklist_are_not_found_through_every_tool() {
    let app = api_tests::spawn().await;
    let (owner, owner_token) = sms_connection(&app, "all", SCOPES).await;
    let (_, stranger_token) = sms_connection(&app, "all", SCOPES).await;
    let customers = group(&app, owner.key(), &["0712000901"]).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/messaging", &owner_token).await;
    let sent = ok(&client, "send_sms", json!({"recipient": "0712000902", "message": "Mine"})).await;
    let message = sent["messages"][0].clone();
    let created =
        ok(&client, "create_campaign", json!({"contact_list_id": customers.to_string(), "message": "Mine"})).await;
    let campaign = created["campaigns"][0].clone();
    ok(&client, "add_to_blacklist", json!({"numbers": ["0712000903"]})).await;

    let client = connect(&server, "/mcp", &stranger_token).await;
    for (tool, args) in [
        ("get_message", json!({"message": message["uid"]})),
        ("get_message", json!({"message": message["id"]})),
        ("get_campaign", json!({"campaign": campaign["uid"]})),
        ("get_campaign", json!({"campaign": campaign["id"]})),
        ("remove_from_blacklist", json!({"number": "0712000903"})),
        // the owner's contact group resolves to nothing here
        ("create_campaign", json!({"contact_list_id": customers.to_string(), "message": "Theirs"})),
    ] {
        assert_code(&refused(&client, tool, args.clone()).await, "not_found");
    }
    assert_eq!(total(&ok(&client, "list_messages", json!({})).await), 0);
    assert_eq!(total(&ok(&client, "list_messages", json!({"campaign": campaign["uid"]})).await), 0);
    assert_eq!(total(&ok(&client, "list_blacklist", json!({})).await), 0);
    // the owner's number stays listed
    assert_eq!(total(&rest_data(&app, owner.key(), "/api/v3/sms/blacklist").await), 1);
}
