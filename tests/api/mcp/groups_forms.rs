//! The `groups` and `studio` tools through the SDK's client: chat groups (created, confirmed by
//! the sandbox after its delay, written in inside the group's 24-hour window, pinned) and in-chat
//! forms (created, published, sent to a customer, answered by the provider's signed flow reply),
//! over the same services as `/chat/groups` and `/chat/forms`, with a sandbox chat account (see
//! `crate::chat::chat_account`).

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{TestApp, json};
use kernel::TenantId;
use serde_json::Value;
use time::Duration;

use super::support::*;
use crate::chat::{
    APP_SECRET, BUSINESS, ChatAccount, PHONE_ID, chat_account, chat_id, deliver, delivery, e164, text_from,
};
use crate::sms::support::{str_of, time_of};

/// Every scope the groups tools need.
const GROUP_SCOPES: &str = "mcp:use mcp:groups mcp:write mcp:send mcp:delete";
/// Every scope the form tools need.
const STUDIO_SCOPES: &str = "mcp:use mcp:studio mcp:write mcp:send mcp:publish";

/// `(tool, elevation, permission, read only, destructive)`.
type Described<'a> = (&'a str, Option<&'a str>, &'a str, bool, bool);

const GROUP_TOOLS: [Described<'static>; 10] = [
    ("list_chat_groups", None, "communications.groups.view", true, false),
    ("get_chat_group", None, "communications.groups.view", true, false),
    ("create_chat_group", Some("mcp:write"), "communications.groups.manage", false, false),
    ("invite_to_chat_group", Some("mcp:send"), "communications.groups.manage", false, false),
    ("list_join_requests", None, "communications.groups.view", true, false),
    ("approve_join_requests", Some("mcp:write"), "communications.groups.manage", false, false),
    ("reject_join_requests", Some("mcp:write"), "communications.groups.manage", false, false),
    ("remove_group_participants", Some("mcp:delete"), "communications.groups.manage", false, true),
    ("send_group_message", Some("mcp:send"), "communications.send", false, false),
    ("pin_group_message", Some("mcp:write"), "communications.groups.manage", false, false),
];

const STUDIO_TOOLS: [Described<'static>; 7] = [
    ("list_form_question_types", None, "forms.view", true, false),
    ("create_form", Some("mcp:write"), "forms.create", false, false),
    ("get_form", None, "forms.view", true, false),
    ("update_form", Some("mcp:write"), "forms.edit", false, false),
    ("publish_form", Some("mcp:publish"), "forms.publish", false, false),
    ("send_form", Some("mcp:send"), "forms.send", false, false),
    ("list_form_answers", None, "forms.answers.view", true, false),
];

/// The names of `tools`, those that only read when `reads`.
fn names<'a>(tools: &[Described<'a>], reads: bool) -> Vec<&'a str> {
    tools.iter().filter(|t| !reads || t.3).map(|t| t.0).collect()
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

/// The tools a connection lists, as JSON.
async fn listed(client: &Client) -> Vec<Value> {
    client
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|tool| serde_json::to_value(tool).expect("tool json"))
        .collect()
}

/// Each tool of `tools` listed by `server` with its annotations, scopes, permission and server.
#[track_caller]
fn assert_described(listed: &[Value], tools: &[Described<'_>], capability: &str, server: &str) {
    for (name, elevation, permission, read, destructive) in tools {
        let tool = listed.iter().find(|t| t["name"] == *name).unwrap_or_else(|| panic!("{name} is not listed"));
        let hints = &tool["annotations"];
        assert_eq!(
            (&hints["readOnlyHint"], &hints["destructiveHint"], &hints["openWorldHint"]),
            (&json!(read), &json!(destructive), &json!(false)),
            "{name}: {hints}"
        );
        let mut scopes = vec!["mcp:use", capability];
        scopes.extend(elevation);
        assert_eq!(
            (&tool["_meta"]["scopes"], &tool["_meta"]["permission"], &tool["_meta"]["server"]),
            (&json!(scopes), &json!(permission), &json!(server)),
            "{name}"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{name}");
    }
}

#[actix_web::test]
async fn the_groups_and_studio_tools_are_listed_on_their_own_servers_with_hints_and_scopes() {
    let app = api_tests::spawn().await;
    let chat = chat_account(&app, "all").await;
    let token = app.mcp_connection(chat.tenant(), chat.account.user, &format!("{GROUP_SCOPES} {STUDIO_SCOPES}")).await;
    let server = app.listen();

    let groups = connect(&server, "/mcp/v1/groups", &token).await;
    assert_eq!(tool_names(&groups).await, sorted(&names(&GROUP_TOOLS, false)), "the groups server holds no form tool");
    let on_groups = listed(&groups).await;
    assert_described(&on_groups, &GROUP_TOOLS, "mcp:groups", "groups");
    let required = |listed: &[Value], name: &str| {
        listed.iter().find(|t| t["name"] == name).map(|t| t["inputSchema"]["required"].clone()).unwrap_or_default()
    };
    assert_eq!(required(&on_groups, "get_chat_group"), json!(["group"]));
    assert_eq!(required(&on_groups, "send_group_message"), json!(["group"]));
    assert!(on_groups.iter().all(|t| t["annotations"]["idempotentHint"]
        == json!(
            t["name"] != "create_chat_group"
                && t["name"] != "invite_to_chat_group"
                && t["name"] != "send_group_message"
        )));

    let studio = connect(&server, "/mcp/v1/studio", &token).await;
    assert_eq!(
        tool_names(&studio).await,
        sorted(&names(&STUDIO_TOOLS, false)),
        "the studio server holds no group tool"
    );
    let on_studio = listed(&studio).await;
    assert_described(&on_studio, &STUDIO_TOOLS, "mcp:studio", "studio");
    assert_eq!(required(&on_studio, "publish_form"), json!(["form"]));
    assert_eq!(required(&on_studio, "list_form_answers"), json!(["form"]));

    // a tool of one server is not called on the other: the spec's unknown tool
    let args = json!({}).as_object().cloned().expect("object");
    let asked =
        studio.call_tool(rmcp::model::CallToolRequestParams::new("list_chat_groups").with_arguments(args)).await;
    assert!(asked.is_err(), "list_chat_groups on studio: {asked:?}");
    let args = json!({}).as_object().cloned().expect("object");
    let asked = groups
        .call_tool(rmcp::model::CallToolRequestParams::new("list_form_question_types").with_arguments(args))
        .await;
    assert!(asked.is_err(), "list_form_question_types on groups: {asked:?}");

    // /mcp lists both
    let all = tool_names(&connect(&server, "/mcp", &token).await).await;
    for (name, ..) in GROUP_TOOLS.iter().chain(&STUDIO_TOOLS) {
        assert!(all.contains(&(*name).to_owned()), "{name} in {all:?}");
    }

    // without elevations only the reads are listed
    let reader = app.mcp_connection(chat.tenant(), chat.account.user, "mcp:use mcp:groups mcp:studio").await;
    assert_eq!(
        tool_names(&connect(&server, "/mcp/v1/groups", &reader).await).await,
        sorted(&names(&GROUP_TOOLS, true))
    );
    assert_eq!(
        tool_names(&connect(&server, "/mcp/v1/studio", &reader).await).await,
        sorted(&names(&STUDIO_TOOLS, true))
    );
    // one capability opens one server only
    let groups_only = app.mcp_connection(chat.tenant(), chat.account.user, GROUP_SCOPES).await;
    assert!(tool_names(&connect(&server, "/mcp/v1/studio", &groups_only).await).await.is_empty());
    let studio_only = app.mcp_connection(chat.tenant(), chat.account.user, STUDIO_SCOPES).await;
    assert!(tool_names(&connect(&server, "/mcp/v1/groups", &studio_only).await).await.is_empty());
}

/// A participant's text written in the group whose provider id is `provider_group_id`.
fn group_text(provider_group_id: &str, from: &str, wamid: &str, text: &str) -> Value {
    delivery(json!({
        "contacts": [{"profile": {"name": "Asha"}, "wa_id": from}],
        "messages": [{"from": from, "group_id": provider_group_id, "id": wamid, "timestamp": "1764230400",
                      "type": "text", "text": {"body": text}}],
    }))
}

/// Delivers `body` signed with the app secret, 200 expected; the webhook's answer.
async fn hook<S, B>(app: &TestApp<S>, chat: &ChatAccount, body: &Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = deliver(app, &chat.hook(), Some(APP_SECRET), body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.data().clone()
}

#[actix_web::test]
async fn a_group_made_through_mcp_is_confirmed_written_in_within_its_window_and_pinned() {
    let app = api_tests::spawn().await;
    let chat = chat_account(&app, "all").await;
    let token = app.mcp_connection(chat.tenant(), chat.account.user, GROUP_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/groups", &token).await;
    let sandbox = app.messaging.gateways().chat_sandbox().clone();

    let created = ok(&client, "create_chat_group", json!({"subject": "Wateja VIP", "description": "Ofa kwanza"})).await;
    assert_eq!(
        (created["status"].clone(), created["subject"].clone(), created["sender_id"].clone()),
        (json!("creating"), json!("Wateja VIP"), json!(PHONE_ID)),
        "{created}"
    );
    assert_eq!((created["invite_link"].clone(), created["provider_group_id"].clone()), (Value::Null, Value::Null));
    let id = created["id"].as_i64().unwrap_or_else(|| panic!("a numeric id in {created}"));

    // the sandbox confirms it after its delay
    app.advance(Duration::seconds(2)).await;
    let group = ok(&client, "get_chat_group", json!({"group": id})).await;
    assert_eq!(group, rest_data(&app, chat.key(), &format!("/api/v3/chat/groups/{id}")).await);
    assert_eq!(group["status"], "active", "{group}");
    assert!(group["invite_link"].as_str().is_some_and(|l| !l.is_empty()), "{group}");
    assert_eq!(ok(&client, "get_chat_group", json!({"group": id.to_string()})).await, group);
    let provider_group_id = str_of(&group, "provider_group_id").to_owned();

    let listed = ok(&client, "list_chat_groups", json!({})).await;
    assert_eq!(listed, rest_data(&app, chat.key(), "/api/v3/chat/groups").await);
    assert_eq!((listed["pagination"]["total"].clone(), listed["items"][0].clone()), (json!(1), group.clone()));
    for (args, total) in [
        (json!({"status": "active"}), 1),
        (json!({"status": "failed"}), 0),
        (json!({"sender_id": PHONE_ID, "per_page": 5, "page": 1}), 1),
        (json!({"sender_id": "555"}), 0),
    ] {
        assert_eq!(ok(&client, "list_chat_groups", args.clone()).await["pagination"]["total"], total, "{args}");
    }
    assert_field(&refused(&client, "list_chat_groups", json!({"status": "gone"})).await, "status");
    assert_field(&refused(&client, "list_chat_groups", json!({"colour": "red"})).await, "colour");

    // nobody wrote in the group yet: free text is refused, nothing sent
    let error = refused(&client, "send_group_message", json!({"group": id, "message": "Karibuni"})).await;
    assert_eq!((error["code"].clone(), error["reason"].clone()), (json!("validation_error"), json!("window_closed")));
    assert_field(&error, "message");
    assert!(sandbox.group_messages().is_empty(), "nothing sent");

    // a participant writes in the group (a signed delivery): the window opens
    let answer = hook(&app, &chat, &group_text(&provider_group_id, &chat_id("0070"), "wamid.GIN1", "Bei?")).await;
    assert_eq!(answer["group_messages"], 1, "{answer}");
    let sent = ok(&client, "send_group_message", json!({"group": id, "message": "Karibuni, kanga ni 12,000"})).await;
    assert_eq!(
        (sent["status"].clone(), sent["direction"].clone(), sent["type"].clone(), sent["group_id"].clone()),
        (json!("sent"), json!("outbound"), json!("text"), json!(id)),
        "{sent}"
    );
    let wamid = str_of(&sent, "message_id").to_owned();
    let at_provider = sandbox.group_messages();
    assert_eq!(at_provider.len(), 1);
    assert_eq!(
        (at_provider[0].group_id.as_str(), at_provider[0].provider_message_id.as_str()),
        (provider_group_id.as_str(), wamid.as_str())
    );

    // pinned: the provider is asked, the message carries when the pin ends
    let uid = str_of(&sent, "uid").to_owned();
    let pinned =
        ok(&client, "pin_group_message", json!({"group": id, "message_uid": uid, "pin": true, "expiration_days": 3}))
            .await;
    assert_eq!(pinned["uid"], uid.as_str());
    assert_eq!(time_of(&pinned, "pinned_until"), app.clock.now() + Duration::days(3), "{pinned}");
    assert_field(&refused(&client, "pin_group_message", json!({"group": id, "message_uid": uid})).await, "pin");
    let pins: Vec<(String, bool, Option<u8>)> = sandbox
        .group(&provider_group_id)
        .expect("the sandbox's group")
        .pins
        .into_iter()
        .map(|p| (p.message_id, p.pin, p.expiration_days))
        .collect();
    assert_eq!(pins, [(wamid, true, Some(3))]);

    // a day and an hour later the window is closed again
    app.advance(Duration::hours(25)).await;
    let error = refused(&client, "send_group_message", json!({"group": id, "message": "Bado mpo?"})).await;
    assert_eq!(error["reason"], "window_closed", "{error}");
    assert_eq!(sandbox.group_messages().len(), 1);
}

#[actix_web::test]
async fn group_tools_need_their_elevation_and_another_tenants_group_is_not_found() {
    let app = api_tests::spawn().await;
    let chat = chat_account(&app, "all").await;
    let token = app.mcp_connection(chat.tenant(), chat.account.user, GROUP_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/groups", &token).await;
    let sandbox = app.messaging.gateways().chat_sandbox().clone();
    let id = ok(&client, "create_chat_group", json!({"subject": "Soko"})).await["id"].clone();
    app.advance(Duration::seconds(2)).await;
    let group = ok(&client, "get_chat_group", json!({"group": id})).await;
    assert_eq!(group["status"], "active", "{group}");
    hook(&app, &chat, &group_text(str_of(&group, "provider_group_id"), &chat_id("0070"), "wamid.GIN1", "Habari")).await;

    // without mcp:send: no message, no invitation; without mcp:write: no group, no pin
    let writer = app.mcp_connection(chat.tenant(), chat.account.user, "mcp:use mcp:groups mcp:write").await;
    let writer = connect(&server, "/mcp/v1/groups", &writer).await;
    let names = tool_names(&writer).await;
    assert!(!names.contains(&"send_group_message".to_owned()), "{names:?}");
    let error = refused(&writer, "send_group_message", json!({"group": id, "message": "Habari"})).await;
    assert_scope_refused(&error, &["mcp:send"]);
    assert!(error["message"].as_str().is_some_and(|m| m.contains("mcp:send")), "{error}");
    let error = refused(&writer, "invite_to_chat_group", json!({"group": id, "recipients": [e164("0000")]})).await;
    assert_scope_refused(&error, &["mcp:send"]);
    assert!(sandbox.group_messages().is_empty() && sandbox.sent().is_empty(), "nothing sent");

    let sender = app.mcp_connection(chat.tenant(), chat.account.user, "mcp:use mcp:groups mcp:send").await;
    let sender = connect(&server, "/mcp/v1/groups", &sender).await;
    assert_scope_refused(&refused(&sender, "create_chat_group", json!({"subject": "Nyingine"})).await, &["mcp:write"]);
    assert_scope_refused(
        &refused(&sender, "remove_group_participants", json!({"group": id, "participants": [chat_id("0070")]})).await,
        &["mcp:delete"],
    );
    let reader = app.mcp_connection(chat.tenant(), chat.account.user, "mcp:use mcp:groups").await;
    let reader = connect(&server, "/mcp/v1/groups", &reader).await;
    assert_scope_refused(&refused(&reader, "create_chat_group", json!({"subject": "Nyingine"})).await, &["mcp:write"]);
    let all = rest_data(&app, chat.key(), "/api/v3/chat/groups?status=all").await;
    assert_eq!(all["pagination"]["total"], 1, "no group was made: {all}");
    // with it, the message goes
    assert_eq!(ok(&sender, "send_group_message", json!({"group": id, "message": "Habari"})).await["status"], "sent");

    // an issuer without the groups permissions: only the tool of communications.send is listed,
    // and the service refuses it too (it needs .groups.manage as well)
    let user = app.user(chat.tenant(), "communications.send").await;
    let outsider = app.mcp_connection(chat.tenant(), user, GROUP_SCOPES).await;
    let outsider = connect(&server, "/mcp/v1/groups", &outsider).await;
    assert_eq!(tool_names(&outsider).await, ["send_group_message"]);
    assert_denied(&refused(&outsider, "get_chat_group", json!({"group": id})).await);
    assert_denied(&refused(&outsider, "send_group_message", json!({"group": id, "message": "Habari"})).await);

    // another tenant's group names nothing
    let other = chat_account(&app, "all").await;
    let stranger = app.mcp_connection(other.tenant(), other.account.user, GROUP_SCOPES).await;
    let stranger = connect(&server, "/mcp/v1/groups", &stranger).await;
    let uid =
        str_of(&ok(&client, "send_group_message", json!({"group": id, "message": "Yangu"})).await, "uid").to_owned();
    let sent_before = sandbox.group_messages().len();
    for (tool, args) in [
        ("get_chat_group", json!({"group": id})),
        ("send_group_message", json!({"group": id, "message": "Yao"})),
        ("pin_group_message", json!({"group": id, "message_uid": uid, "pin": true})),
        ("invite_to_chat_group", json!({"group": id, "recipients": [e164("0000")]})),
        ("list_join_requests", json!({"group": id})),
        ("remove_group_participants", json!({"group": id, "participants": [chat_id("0070")]})),
        // ids that name nothing
        ("get_chat_group", json!({"group": 999_999})),
        ("get_chat_group", json!({"group": "abc"})),
    ] {
        assert_code(&refused(&stranger, tool, args.clone()).await, "not_found");
    }
    assert_field(&refused(&stranger, "get_chat_group", json!({})).await, "group");
    assert_eq!(ok(&stranger, "list_chat_groups", json!({"status": "all"})).await["pagination"]["total"], 0);
    assert_eq!(sandbox.group_messages().len(), sent_before, "nothing sent for the stranger");
    let unchanged = ok(&client, "get_chat_group", json!({"group": id})).await;
    assert_eq!(
        (unchanged["status"].clone(), unchanged["participants_count"].clone()),
        (json!("active"), json!(2)),
        "the business and the participant who wrote: {unchanged}"
    );
    assert!(sandbox.group(str_of(&group, "provider_group_id")).expect("recorded").pins.is_empty());
}

/// A one-page form every rule accepts: one short text question `name`.
fn small_definition() -> Value {
    json!({"pages": [{"title": "Kuhusu wewe", "questions": [
        {"key": "name", "type": "short_text", "label": "Jina lako", "required": true},
    ]}]})
}

/// A delivery of the customer `last4`'s flow reply carrying `token` and `answers`.
fn flow_reply(last4: &str, wamid: &str, token: &str, answers: &Value) -> Value {
    let customer = chat_id(last4);
    let mut response = answers.clone();
    response["flow_token"] = json!(token);
    delivery(json!({
        "contacts": [{"profile": {"name": "Amina"}, "wa_id": customer}],
        "messages": [{
            "from": customer, "id": wamid, "timestamp": "1764230400", "type": "interactive",
            "context": {"from": BUSINESS.trim_start_matches('+'), "id": "wamid.FORM"},
            "interactive": {"type": "nfm_reply", "nfm_reply": {
                "name": "flow", "body": "Sent", "response_json": response.to_string(),
            }},
        }],
    }))
}

async fn forms_module<S, B>(app: &TestApp<S>, tenant: TenantId, enabled: bool)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let mut conn = app.conn().await;
    accounts::modules::set(&mut conn, tenant, accounts::modules::Module::Forms, enabled).await.expect("module");
}

#[actix_web::test]
async fn a_form_made_through_mcp_is_published_sent_and_answered() {
    let app = api_tests::spawn().await;
    let chat = chat_account(&app, "all").await;
    let token = app.mcp_connection(chat.tenant(), chat.account.user, STUDIO_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/studio", &token).await;
    let sandbox = app.messaging.gateways().chat_sandbox().clone();

    let types = ok(&client, "list_form_question_types", json!({})).await;
    assert_eq!(types, rest_data(&app, chat.key(), "/api/v3/chat/forms/question-types").await);
    assert_eq!(types["items"].as_array().map(Vec::len), Some(13), "{types}");

    let form = ok(&client, "create_form", json!({"name": "Usajili", "definition": small_definition()})).await;
    assert_eq!(
        (form["issues"].clone(), form["status"].clone(), form["version"].clone()),
        (json!([]), json!("draft"), json!(0)),
        "{form}"
    );
    let id = form["id"].as_i64().unwrap_or_else(|| panic!("a numeric id in {form}"));
    assert_eq!(
        ok(&client, "get_form", json!({"form": id})).await,
        rest_data(&app, chat.key(), &format!("/api/v3/chat/forms/{id}")).await
    );
    assert_field(&refused(&client, "create_form", json!({"definition": small_definition()})).await, "name");

    // publishing needs mcp:publish
    let writer = app.mcp_connection(chat.tenant(), chat.account.user, "mcp:use mcp:studio mcp:write mcp:send").await;
    let writer = connect(&server, "/mcp/v1/studio", &writer).await;
    assert!(!tool_names(&writer).await.contains(&"publish_form".to_owned()));
    let error = refused(&writer, "publish_form", json!({"form": id})).await;
    assert_scope_refused(&error, &["mcp:publish"]);
    assert!(sandbox.flows().is_empty(), "nothing asked of the provider");
    assert_eq!(ok(&client, "get_form", json!({"form": id})).await["version"], 0);
    let published = ok(&client, "publish_form", json!({"form": id})).await;
    assert_eq!(
        (published["version"].clone(), published["status"].clone()),
        (json!(1), json!("published")),
        "{published}"
    );
    assert_eq!(sandbox.flows().len(), 1);

    // the customer never wrote: only a template could reach them
    let error = refused(&client, "send_form", json!({"form": id, "to": e164("0000")})).await;
    assert_eq!(
        (error["code"].clone(), error["reason"].clone()),
        (json!("conflict"), json!("window_closed")),
        "{error}"
    );
    // sending needs mcp:send
    let publisher = app.mcp_connection(chat.tenant(), chat.account.user, "mcp:use mcp:studio mcp:publish").await;
    let publisher = connect(&server, "/mcp/v1/studio", &publisher).await;
    let error = refused(&publisher, "send_form", json!({"form": id, "to": e164("0000")})).await;
    assert_scope_refused(&error, &["mcp:send"]);
    assert!(sandbox.sent_to(&e164("0000")).is_empty());

    // the customer writes: the form goes as the provider's flow message
    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &text_from(&chat_id("0000"), "wamid.IN1", "Habari")).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let sent = ok(&client, "send_form", json!({"form": id, "to": e164("0000"), "reference": "REF-MCP"})).await;
    let send_token = str_of(&sent, "send_token").to_owned();
    let uid = str_of(&sent, "message_id").to_owned();
    assert!(!send_token.is_empty() && uid.starts_with("msg_"), "{sent}");
    assert_eq!(sent["version"], 1);
    let message = rest_data(&app, chat.key(), &format!("/api/v3/chat/{uid}")).await;
    assert_eq!(message["metadata"]["interactive"]["action"]["parameters"]["flow_token"], send_token.as_str());
    assert_eq!(sandbox.sent_to(&e164("0000")).len(), 1);

    // the customer's signed flow reply is the form's answer, sent through MCP
    assert_eq!(ok(&client, "list_form_answers", json!({"form": id})).await["items"], json!([]));
    let reply = flow_reply("0000", "wamid.REPLY1", &send_token, &json!({"name": "  Amina Juma "}));
    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &reply).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let answers = ok(&client, "list_form_answers", json!({"form": id})).await;
    assert_eq!(answers, rest_data(&app, chat.key(), &format!("/api/v3/chat/forms/{id}/answers")).await);
    let items = answers["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 1, "{answers}");
    assert_eq!(
        (
            items[0]["answers"].clone(),
            items[0]["source"].clone(),
            items[0]["reference"].clone(),
            items[0]["customer"].clone()
        ),
        (json!({"name": "Amina Juma"}), json!("mcp"), json!("REF-MCP"), json!(e164("0000"))),
        "{answers}"
    );
    assert!(answers["next_before"].is_null(), "{answers}");
    // the query members, as REST reads them
    let answer_id = items[0]["id"].clone();
    assert_eq!(ok(&client, "list_form_answers", json!({"form": id, "before": answer_id})).await["items"], json!([]));
    let since =
        (app.clock.now() - Duration::minutes(1)).format(&time::format_description::well_known::Rfc3339).expect("time");
    assert_eq!(
        ok(&client, "list_form_answers", json!({"form": id, "since": since})).await["items"][0]["id"],
        answer_id
    );
    assert_field(&refused(&client, "list_form_answers", json!({"form": id, "since": "yesterday"})).await, "since");
    assert_field(&refused(&client, "list_form_answers", json!({"form": id, "colour": "red"})).await, "colour");
    assert_code(&refused(&client, "list_form_answers", json!({"form": 999_999})).await, "not_found");
}

#[actix_web::test]
async fn the_studio_tools_need_the_forms_module_and_their_permission() {
    let app = api_tests::spawn().await;
    let chat = chat_account(&app, "all").await;
    let token = app.mcp_connection(chat.tenant(), chat.account.user, STUDIO_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/studio", &token).await;
    let id =
        ok(&client, "create_form", json!({"name": "Usajili", "definition": small_definition()})).await["id"].clone();

    // the module switched off: every tool refused, even with every permission and scope
    forms_module(&app, chat.tenant(), false).await;
    for (tool, args) in [
        ("list_form_question_types", json!({})),
        ("create_form", json!({"name": "Nyingine", "definition": small_definition()})),
        ("get_form", json!({"form": id})),
        ("update_form", json!({"form": id, "name": "Jina jipya"})),
        ("publish_form", json!({"form": id})),
        ("send_form", json!({"form": id, "to": e164("0000")})),
        ("list_form_answers", json!({"form": id})),
    ] {
        assert_denied(&refused(&client, tool, args.clone()).await);
    }
    assert!(app.messaging.gateways().chat_sandbox().flows().is_empty(), "nothing published");
    forms_module(&app, chat.tenant(), true).await;
    let form = ok(&client, "get_form", json!({"form": id})).await;
    assert_eq!((form["name"].clone(), form["version"].clone()), (json!("Usajili"), json!(0)), "unchanged: {form}");
    let made =
        api_tests::sql_rows(&app.pool, &format!("SELECT id FROM chat_forms WHERE tenant_id = {}", chat.tenant().0))
            .await;
    assert_eq!(made.len(), 1, "no form was made while the module was off: {made:?}");

    // a user without forms.publish: not listed, and refused by the service
    let user = app.user(chat.tenant(), "forms.view,forms.create,forms.edit,forms.send,forms.answers.view").await;
    let editor = app.mcp_connection(chat.tenant(), user, STUDIO_SCOPES).await;
    let editor = connect(&server, "/mcp/v1/studio", &editor).await;
    let names = tool_names(&editor).await;
    assert!(!names.contains(&"publish_form".to_owned()) && names.contains(&"update_form".to_owned()), "{names:?}");
    assert_denied(&refused(&editor, "publish_form", json!({"form": id})).await);
    assert_eq!(ok(&editor, "update_form", json!({"form": id, "name": "Usajili 2"})).await["name"], "Usajili 2");
    assert_eq!(ok(&client, "get_form", json!({"form": id})).await["version"], 0, "not published");
    assert!(app.messaging.gateways().chat_sandbox().flows().is_empty());

    // another tenant's form names nothing
    let other = chat_account(&app, "all").await;
    let stranger = app.mcp_connection(other.tenant(), other.account.user, STUDIO_SCOPES).await;
    let stranger = connect(&server, "/mcp/v1/studio", &stranger).await;
    for tool in ["get_form", "publish_form", "list_form_answers"] {
        assert_code(&refused(&stranger, tool, json!({"form": id})).await, "not_found");
    }
    assert_code(&refused(&stranger, "get_form", json!({"form": "abc"})).await, "not_found");
}
