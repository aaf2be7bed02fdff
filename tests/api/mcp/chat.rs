//! The chat tools through the SDK's client: the `messaging` server's chat sends (text, template,
//! interactive, reaction), message read and business accounts, and the `inbox` server's
//! conversations and replies, over the same messaging service as `/chat/...`, with a sandbox chat
//! account (see `crate::chat::chat_account`).

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{TestApp, json};
use providers::ChatContent;
use serde_json::Value;

use super::support::*;
use crate::chat::{APP_SECRET, ChatAccount, PHONE_ID, chat_account, chat_id, deliver, e164, text_from};

/// Every scope the chat tools need.
const SCOPES: &str = "mcp:use mcp:messaging mcp:inbox mcp:send";

const CHAT_TOOLS: [&str; 6] = [
    "send_chat_text",
    "send_chat_template",
    "send_chat_interactive",
    "send_chat_reaction",
    "get_chat_message",
    "list_chat_accounts",
];
const CHAT_SENDS: [&str; 4] = ["send_chat_text", "send_chat_template", "send_chat_interactive", "send_chat_reaction"];
const INBOX_TOOLS: [&str; 3] = ["list_conversations", "get_conversation", "reply_in_conversation"];

/// A tenant with a sandbox chat account whose user holds `permissions`, and a connection of
/// theirs with `scopes`.
async fn chat_connection<S, B>(app: &TestApp<S>, permissions: &str, scopes: &str) -> (ChatAccount, String)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let chat = chat_account(app, permissions).await;
    let token = app.mcp_connection(chat.tenant(), chat.account.user, scopes).await;
    (chat, token)
}

/// The customer `chat_id(last4)` writes `text`: the conversation's id.
async fn customer_writes<S, B>(app: &TestApp<S>, chat: &ChatAccount, last4: &str, wamid: &str, text: &str) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = deliver(app, &chat.hook(), Some(APP_SECRET), &text_from(&chat_id(last4), wamid, text)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let listed = rest_data(app, chat.key(), &format!("/api/v3/chat/conversations?customer={}", e164(last4))).await;
    listed["items"][0]["id"].as_i64().unwrap_or_else(|| panic!("a conversation in {listed}"))
}

/// The one message of a send's answer.
fn one(sent: &Value) -> Value {
    let messages = sent["messages"].as_array().unwrap_or_else(|| panic!("messages in {sent}"));
    assert_eq!(messages.len(), 1, "{sent}");
    messages[0].clone()
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_else(|| panic!("{key} in {value}"))
}

fn total(page: &Value) -> i64 {
    page["pagination"]["total"].as_i64().unwrap_or_else(|| panic!("pagination.total in {page}"))
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
async fn the_chat_and_inbox_tools_are_listed_on_their_servers_with_their_annotations() {
    let app = api_tests::spawn().await;
    let (chat, token) = chat_connection(&app, "all", SCOPES).await;
    let server = app.listen();

    let client = connect(&server, "/mcp/v1/messaging", &token).await;
    let listed: Vec<Value> = client
        .list_all_tools()
        .await
        .expect("tools")
        .into_iter()
        .map(|tool| serde_json::to_value(tool).expect("tool json"))
        .collect();
    let find = |listed: &[Value], name: &str| {
        listed.iter().find(|t| t["name"] == name).cloned().unwrap_or_else(|| panic!("{name} is not listed"))
    };
    for name in CHAT_TOOLS {
        let tool = find(&listed, name);
        let sends = CHAT_SENDS.contains(&name);
        let hints = &tool["annotations"];
        assert_eq!(
            (&hints["readOnlyHint"], &hints["destructiveHint"], &hints["idempotentHint"], &hints["openWorldHint"]),
            (&json!(!sends), &json!(false), &json!(!sends), &json!(false)),
            "{name}: {hints}"
        );
        let scopes =
            if sends { json!(["mcp:use", "mcp:messaging", "mcp:send"]) } else { json!(["mcp:use", "mcp:messaging"]) };
        assert_eq!(
            (&tool["_meta"]["scopes"], &tool["_meta"]["permission"], &tool["_meta"]["server"]),
            (&scopes, &Value::Null, &json!("messaging")),
            "{name}"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{name}");
    }
    // each send takes the members of its message type only, the required ones named
    let text_input = &find(&listed, "send_chat_text")["inputSchema"];
    assert_eq!(text_input["required"], json!(["message"]), "{text_input}");
    for member in ["recipient", "recipients", "message", "sender_id", "in_reply_to_gateway_id", "schedule_time"] {
        assert!(text_input["properties"].get(member).is_some(), "{member} in {text_input}");
    }
    for member in ["template", "interactive", "reaction", "media_url", "message_type", "type", "body"] {
        assert!(text_input["properties"].get(member).is_none(), "{member} in {text_input}");
    }
    assert_eq!(find(&listed, "send_chat_template")["inputSchema"]["required"], json!(["template"]));
    assert_eq!(find(&listed, "send_chat_interactive")["inputSchema"]["required"], json!(["interactive"]));
    assert_eq!(find(&listed, "send_chat_reaction")["inputSchema"]["required"], json!(["recipient", "reaction"]));
    assert_eq!(find(&listed, "get_chat_message")["inputSchema"]["required"], json!(["message"]));

    let client = connect(&server, "/mcp/v1/inbox", &token).await;
    assert_eq!(tool_names(&client).await, sorted(&INBOX_TOOLS));
    let listed: Vec<Value> = client
        .list_all_tools()
        .await
        .expect("tools")
        .into_iter()
        .map(|tool| serde_json::to_value(tool).expect("tool json"))
        .collect();
    for name in INBOX_TOOLS {
        let tool = find(&listed, name);
        let reply = name == "reply_in_conversation";
        let hints = &tool["annotations"];
        assert_eq!(
            (&hints["readOnlyHint"], &hints["destructiveHint"], &hints["idempotentHint"]),
            (&json!(!reply), &json!(false), &json!(!reply)),
            "{name}: {hints}"
        );
        let scopes = if reply { json!(["mcp:use", "mcp:inbox", "mcp:send"]) } else { json!(["mcp:use", "mcp:inbox"]) };
        assert_eq!(
            (&tool["_meta"]["scopes"], &tool["_meta"]["permission"], &tool["_meta"]["server"]),
            (&scopes, &json!("communications.messages.view"), &json!("inbox")),
            "{name}"
        );
        assert_eq!(tool["outputSchema"]["type"], "object", "{name}");
    }
    assert_eq!(find(&listed, "get_conversation")["inputSchema"]["required"], json!(["conversation"]));
    assert_eq!(find(&listed, "reply_in_conversation")["inputSchema"]["required"], json!(["conversation", "message"]));

    // the servers say what they offer now
    let info = client.peer_info().expect("server info");
    assert!(info.instructions.as_deref().is_some_and(|i| i.contains("conversations")), "{info:?}");
    let manifest: Value =
        reqwest::get(format!("{}/api-docs/mcp.json", server.url)).await.expect("manifest").json().await.expect("json");
    let summary = |name: &str| {
        manifest["servers"].as_array().and_then(|s| s.iter().find(|s| s["name"] == name)).expect("server")["summary"]
            .as_str()
            .unwrap_or_default()
            .to_lowercase()
    };
    assert!(summary("messaging").contains("chat"), "{}", summary("messaging"));
    assert!(summary("inbox").contains("conversations"), "{}", summary("inbox"));

    // without mcp:send only the reads are listed; /mcp lists them all
    let reader = app.mcp_connection(chat.tenant(), chat.account.user, "mcp:use mcp:messaging mcp:inbox").await;
    let client = connect(&server, "/mcp/v1/inbox", &reader).await;
    assert_eq!(tool_names(&client).await, sorted(&["list_conversations", "get_conversation"]));
    let client = connect(&server, "/mcp/v1/messaging", &reader).await;
    let names = tool_names(&client).await;
    for name in CHAT_TOOLS {
        assert_eq!(names.contains(&name.to_owned()), !CHAT_SENDS.contains(&name), "{name} in {names:?}");
    }
    let client = connect(&server, "/mcp", &token).await;
    let names = tool_names(&client).await;
    for name in CHAT_TOOLS.iter().chain(&INBOX_TOOLS) {
        assert!(names.contains(&(*name).to_owned()), "{name} in {names:?}");
    }
}

#[actix_web::test]
async fn send_chat_text_needs_mcp_send_and_sends_as_post_chat_send() {
    let app = api_tests::spawn().await;
    let (chat, token) = chat_connection(&app, "all", SCOPES).await;
    let reader = app.mcp_connection(chat.tenant(), chat.account.user, "mcp:use mcp:messaging mcp:inbox").await;
    let server = app.listen();
    let sandbox = app.messaging.gateways().chat_sandbox().clone();

    // without the elevation: refused, nothing sent or written
    let client = connect(&server, "/mcp/v1/messaging", &reader).await;
    let args = json!({"recipient": "0712340000", "message": "Habari"});
    assert_scope_refused(&refused(&client, "send_chat_text", args.clone()).await, &["mcp:send"]);
    assert!(sandbox.sent().is_empty());
    assert_eq!(total(&rest_data(&app, chat.key(), "/api/v3/messages?channel_type=chat").await), 0);

    // with it: the message records, a national number read in the account's calling code
    let client = connect(&server, "/mcp/v1/messaging", &token).await;
    let sent = one(&ok(&client, "send_chat_text", args).await);
    assert_eq!((sent["status"].clone(), sent["recipient"].clone()), (json!("sent"), json!(e164("0000"))), "{sent}");
    assert!(text(&sent, "uid").starts_with("msg_"), "{sent}");
    let wamid = text(&sent, "gateway_message_id").to_owned();
    assert!(wamid.starts_with("wamid."), "{sent}");
    let asked = sandbox.sent_to(&e164("0000"));
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].phone_number_id, PHONE_ID);
    assert_eq!(asked[0].content, ChatContent::Text { body: "Habari".into() });
    assert_eq!(asked[0].reply_to, None);

    // the read is REST's, by uid or id
    let uid = text(&sent, "uid").to_owned();
    let read = ok(&client, "get_chat_message", json!({"message": uid})).await;
    assert_eq!(read, rest_data(&app, chat.key(), &format!("/api/v3/chat/{uid}")).await);
    assert_eq!(
        (read["channel_type"].clone(), read["sender"].clone(), read["metadata"]["message_type"].clone()),
        (json!("chat"), json!(PHONE_ID), json!("text")),
        "{read}"
    );
    assert_eq!(ok(&client, "get_chat_message", json!({"message": sent["id"]})).await, read);

    // a reply quotes the message answered; another sender_id form names the same number
    let answer = json!({"recipients": [e164("0000")], "message": "Karibu tena", "in_reply_to_gateway_id": wamid,
                        "sender_id": crate::chat::BUSINESS});
    assert_eq!(one(&ok(&client, "send_chat_text", answer).await)["status"], "sent");
    let asked = sandbox.sent_to(&e164("0000"));
    assert_eq!(asked.len(), 2);
    assert_eq!(
        (asked[1].content.clone(), asked[1].reply_to.clone(), asked[1].phone_number_id.clone()),
        (ChatContent::Text { body: "Karibu tena".into() }, Some(wamid.clone()), PHONE_ID.to_owned())
    );

    // a future schedule_time queues it: nothing reaches the provider yet
    let at = (app.clock.now() + time::Duration::hours(1))
        .format(&time::format_description::well_known::Rfc3339)
        .expect("time");
    let later = one(&ok(
        &client,
        "send_chat_text",
        json!({"recipient": e164("0006"), "message": "Baadaye", "schedule_time": at}),
    )
    .await);
    assert_eq!(later["status"], "queued", "{later}");
    assert!(later["scheduled_at"].is_string(), "{later}");
    assert!(sandbox.sent_to(&e164("0006")).is_empty());

    // the business accounts, as GET /chat/accounts
    let accounts = ok(&client, "list_chat_accounts", json!({})).await;
    assert_eq!(accounts, rest_data(&app, chat.key(), "/api/v3/chat/accounts").await);
    assert_eq!(accounts["default_phone_number_id"], PHONE_ID, "{accounts}");
    assert_eq!(accounts["items"][0]["phone_numbers"][0]["id"], PHONE_ID, "{accounts}");
}

#[actix_web::test]
async fn template_interactive_and_reaction_sends_reach_the_provider_in_its_shape() {
    let app = api_tests::spawn().await;
    let (_, token) = chat_connection(&app, "all", SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/messaging", &token).await;
    let to = e164("0000");

    let template = json!({"name": "order_update", "language": "sw",
        "components": [{"type": "body", "parameters": [{"type": "text", "text": "DK-1"}]}]});
    let templated = one(&ok(&client, "send_chat_template", json!({"recipient": to, "template": template})).await);
    // the language defaults to en
    one(&ok(&client, "send_chat_template", json!({"recipients": [to], "template": {"name": "hello"}})).await);
    let buttons = json!({"type": "button", "body": {"text": "Thibitisha?"}, "action": {"buttons": [
        {"type": "reply", "reply": {"id": "yes", "title": "Ndiyo"}},
        {"type": "reply", "reply": {"id": "no", "title": "Hapana"}}]}});
    let interactive =
        one(&ok(&client, "send_chat_interactive", json!({"recipient": to, "interactive": buttons})).await);
    let target = text(&templated, "gateway_message_id").to_owned();
    let reaction = one(&ok(
        &client,
        "send_chat_reaction",
        json!({"recipient": to, "reaction": {"message_id": target, "emoji": "👍"}}),
    )
    .await);
    for m in [&templated, &interactive, &reaction] {
        assert_eq!(m["status"], "sent", "{m}");
    }

    let asked = app.messaging.gateways().chat_sandbox().sent_to(&to);
    let contents: Vec<ChatContent> = asked.iter().map(|m| m.content.clone()).collect();
    assert_eq!(
        contents,
        [
            ChatContent::Template {
                name: "order_update".into(),
                language: "sw".into(),
                components: template["components"].as_array().cloned().unwrap_or_default(),
            },
            ChatContent::Template { name: "hello".into(), language: "en".into(), components: vec![] },
            ChatContent::Interactive { interactive: buttons },
            ChatContent::Reaction { message_id: target.clone(), emoji: "👍".into() },
        ]
    );
    assert!(asked.iter().all(|m| m.phone_number_id == PHONE_ID && m.reply_to.is_none()));

    // the records say what was sent
    let read = |m: &Value| {
        let uid = text(m, "uid").to_owned();
        let client = &client;
        async move { ok(client, "get_chat_message", json!({"message": uid})).await }
    };
    let stored = read(&templated).await;
    assert_eq!(
        (stored["metadata"]["message_type"].clone(), stored["template_params"]["name"].clone()),
        (json!("template"), json!("order_update")),
        "{stored}"
    );
    let stored = read(&interactive).await;
    assert_eq!(
        (stored["metadata"]["message_type"].clone(), stored["body"].clone()),
        (json!("interactive"), json!("Thibitisha?")),
        "{stored}"
    );
    let stored = read(&reaction).await;
    assert_eq!(stored["metadata"]["reaction"], json!({"message_id": target, "emoji": "👍"}), "{stored}");

    // a template reaches a customer outside the window; free text does not (a failed record)
    let outside = e164("0005");
    let template =
        one(&ok(&client, "send_chat_template", json!({"recipient": outside, "template": {"name": "hello"}})).await);
    assert_eq!(template["status"], "sent", "{template}");
    let free = one(&ok(&client, "send_chat_text", json!({"recipient": outside, "message": "Habari"})).await);
    assert_eq!(free["status"], "failed", "{free}");
    assert!(text(&free, "error_message").contains("131047"), "{free}");
}

#[actix_web::test]
async fn refusals_come_back_as_tool_errors_naming_the_field() {
    let app = api_tests::spawn().await;
    let (_, token) = chat_connection(&app, "all", SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/messaging", &token).await;
    let to = e164("0000");
    let button = |title: &str| json!({"type": "reply", "reply": {"id": "a", "title": title}});
    let buttons = |list: Vec<Value>| json!({"type": "button", "body": {"text": "Chagua"}, "action": {"buttons": list}});

    for (tool, args, field) in [
        (
            "send_chat_interactive",
            json!({"recipient": to, "interactive": buttons(vec![button(&"x".repeat(21))])}),
            "interactive.action.buttons[0].reply.title",
        ),
        (
            "send_chat_interactive",
            json!({"recipient": to, "interactive": buttons(vec![])}),
            "interactive.action.buttons",
        ),
        ("send_chat_interactive", json!({"recipient": to, "interactive": {"type": "carousel"}}), "interactive.type"),
        ("send_chat_interactive", json!({"recipient": to}), "interactive"),
        ("send_chat_text", json!({"recipient": to}), "message"),
        ("send_chat_text", json!({"recipient": to, "message": "   "}), "message"),
        ("send_chat_text", json!({"message": "Nobody"}), "recipient"),
        ("send_chat_text", json!({"recipient": "nonsense", "message": "Hi"}), "recipient"),
        ("send_chat_text", json!({"recipient": to, "message": "x".repeat(4_097)}), "message"),
        (
            "send_chat_text",
            json!({"recipient": to, "message": "Hi", "in_reply_to_gateway_id": "msg_01JDX4W7Q9"}),
            "in_reply_to_gateway_id",
        ),
        ("send_chat_text", json!({"recipient": to, "message": "Hi", "schedule_time": "tomorrow"}), "schedule_time"),
        ("send_chat_text", json!({"recipient": to, "message": "Hi", "sender_id": "999"}), "sender_id"),
        ("send_chat_template", json!({"recipient": to, "template": {"language": "sw"}}), "template.name"),
        ("send_chat_template", json!({"recipient": to, "template": {"name": "  "}}), "template.name"),
        ("send_chat_template", json!({"recipient": to}), "template"),
        (
            "send_chat_reaction",
            json!({"recipient": to, "reaction": {"message_id": "msg_01JDX4W7Q9", "emoji": "👍"}}),
            "reaction.message_id",
        ),
        ("send_chat_reaction", json!({"recipient": to, "reaction": {"message_id": "wamid.X"}}), "reaction.emoji"),
        ("send_chat_reaction", json!({"reaction": {"message_id": "wamid.X", "emoji": "👍"}}), "recipient"),
    ] {
        let error = refused(&client, tool, args.clone()).await;
        assert_eq!(error["code"], "validation_error", "{tool} {args}: {error}");
        assert!(
            error["errors"][field].as_array().is_some_and(|m| !m.is_empty()),
            "{tool} {args}: errors should name {field}: {error}"
        );
    }
    for message in [json!("msg_nope"), json!(999_999), json!("0")] {
        assert_code(&refused(&client, "get_chat_message", json!({"message": message})).await, "not_found");
    }
    assert!(app.messaging.gateways().chat_sandbox().sent().is_empty(), "nothing was sent");

    // an account without a chat account cannot send chat
    let other = app.account("all").await;
    let token = app.mcp_connection(other.tenant, other.user, SCOPES).await;
    let client = connect(&server, "/mcp/v1/messaging", &token).await;
    let error = refused(&client, "send_chat_text", json!({"recipient": to, "message": "Hi"})).await;
    assert_code(&error, "validation_error");
    assert!(text(&error, "message").contains("No chat account"), "{error}");
    assert_eq!(
        ok(&client, "list_chat_accounts", json!({})).await,
        json!({"default_phone_number_id": null, "items": []})
    );
}

#[actix_web::test]
async fn conversations_show_the_customers_message_and_replies_follow_the_window() {
    let app = api_tests::spawn().await;
    let (chat, token) = chat_connection(&app, "all", SCOPES).await;
    let reader = app.mcp_connection(chat.tenant(), chat.account.user, "mcp:use mcp:inbox").await;
    let server = app.listen();
    let sandbox = app.messaging.gateways().chat_sandbox().clone();
    let client = connect(&server, "/mcp/v1/inbox", &token).await;
    assert_eq!(total(&ok(&client, "list_conversations", json!({})).await), 0);

    let id = customer_writes(&app, &chat, "0000", "wamid.IN1", "Mna kahawa?").await;
    let listed = ok(&client, "list_conversations", json!({})).await;
    assert_eq!(listed, rest_data(&app, chat.key(), "/api/v3/chat/conversations").await);
    assert_eq!(total(&listed), 1, "{listed}");
    let conversation = &listed["items"][0];
    assert_eq!(conversation["id"], id);
    assert_eq!(conversation["customer"], json!({"phone": e164("0000"), "chat_id": chat_id("0000"), "name": "Amina"}));
    assert_eq!(
        (conversation["window"]["open"].clone(), conversation["unread_count"].clone()),
        (json!(true), json!(1)),
        "{conversation}"
    );
    assert_eq!(conversation["last_message"]["body"], "Mna kahawa?");
    // the filters, as the REST query reads them
    for (args, expected) in [
        (json!({"window": "open"}), 1),
        (json!({"window": "closed"}), 0),
        (json!({"customer": "0712340000"}), 1),
        (json!({"customer": e164("0009")}), 0),
        (json!({"phone_number_id": PHONE_ID, "page": 1, "limit": 5}), 1),
        (json!({"phone_number_id": "another"}), 0),
    ] {
        assert_eq!(total(&ok(&client, "list_conversations", args.clone()).await), expected, "{args}");
    }
    assert_field(&refused(&client, "list_conversations", json!({"window": "ajar"})).await, "window");
    assert_field(&refused(&client, "list_conversations", json!({"colour": "red"})).await, "colour");
    assert_field(&refused(&client, "list_conversations", json!({"page": "first"})).await, "page");

    // the conversation with its messages, as GET /chat/conversations/{id}
    let read = ok(&client, "get_conversation", json!({"conversation": id})).await;
    assert_eq!(read, rest_data(&app, chat.key(), &format!("/api/v3/chat/conversations/{id}")).await);
    assert_eq!(ok(&client, "get_conversation", json!({"conversation": id.to_string()})).await, read);
    assert_eq!(
        (
            read["id"].clone(),
            read["messages"]["items"][0]["body"].clone(),
            read["messages"]["items"][0]["direction"].clone()
        ),
        (json!(id), json!("Mna kahawa?"), json!("inbound")),
        "{read}"
    );

    // without mcp:send the reply is refused; inside the window it goes to the customer
    let reply = json!({"conversation": id, "message": "Ndiyo, tunayo", "in_reply_to_gateway_id": "wamid.IN1"});
    let error =
        refused(&connect(&server, "/mcp/v1/inbox", &reader).await, "reply_in_conversation", reply.clone()).await;
    assert_scope_refused(&error, &["mcp:send"]);
    assert!(sandbox.sent().is_empty());
    let sent = one(&ok(&client, "reply_in_conversation", reply.clone()).await);
    assert_eq!((sent["status"].clone(), sent["recipient"].clone()), (json!("sent"), json!(e164("0000"))), "{sent}");
    let asked = sandbox.sent_to(&e164("0000"));
    assert_eq!(asked.len(), 1);
    assert_eq!(
        (asked[0].content.clone(), asked[0].reply_to.clone(), asked[0].phone_number_id.clone()),
        (ChatContent::Text { body: "Ndiyo, tunayo".into() }, Some("wamid.IN1".to_owned()), PHONE_ID.to_owned())
    );
    let read = ok(&client, "get_conversation", json!({"conversation": id})).await;
    let bodies: Vec<&str> =
        read["messages"]["items"].as_array().into_iter().flatten().filter_map(|m| m["body"].as_str()).collect();
    assert_eq!(bodies, ["Ndiyo, tunayo", "Mna kahawa?"], "newest first: {read}");
    assert_eq!((read["unread_count"].clone(), read["last_message"]["uid"].clone()), (json!(0), sent["uid"].clone()));
    let paged = ok(&client, "get_conversation", json!({"conversation": id, "limit": 1, "page": 2})).await;
    assert_eq!(
        (paged["messages"]["pagination"]["per_page"].clone(), paged["messages"]["items"][0]["body"].clone()),
        (json!(1), json!("Mna kahawa?")),
        "{paged}"
    );
    assert_field(&refused(&client, "reply_in_conversation", json!({"conversation": id})).await, "message");

    // a day later the window is closed: the service's 409 is the tool's conflict, nothing sent
    app.advance(time::Duration::hours(24) + time::Duration::seconds(1)).await;
    let error = refused(&client, "reply_in_conversation", json!({"conversation": id, "message": "Bado?"})).await;
    assert_eq!(
        (error["code"].clone(), error["reason"].clone(), error["retryable"].clone()),
        (json!("conflict"), json!("window_closed"), json!(false)),
        "{error}"
    );
    assert!(text(&error, "message").contains("template"), "{error}");
    assert_eq!(sandbox.sent_to(&e164("0000")).len(), 1);
    assert_eq!(total(&ok(&client, "list_conversations", json!({"window": "closed"})).await), 1);
    assert_eq!(total(&ok(&client, "list_conversations", json!({"window": "open"})).await), 0);
    let read = ok(&client, "get_conversation", json!({"conversation": id})).await;
    assert_eq!((read["window"]["open"].clone(), total(&read["messages"])), (json!(false), 2), "{read}");
    // the customer writes again: the window opens again
    customer_writes(&app, &chat, "0000", "wamid.IN2", "Halo?").await;
    assert_eq!(
        one(&ok(&client, "reply_in_conversation", json!({"conversation": id, "message": "Samahani"})).await)["status"],
        "sent"
    );
}

#[actix_web::test]
async fn the_inbox_needs_the_message_view_permission_and_sends_only_the_tenant_credential() {
    let app = api_tests::spawn().await;
    let (chat, _) = chat_connection(&app, "all", SCOPES).await;
    let id = customer_writes(&app, &chat, "0000", "wamid.IN1", "Habari").await;
    let user = app.user(chat.tenant(), "contacts.view").await;
    let token = app.mcp_connection(chat.tenant(), user, SCOPES).await;
    let server = app.listen();

    // the inbox is not theirs: not listed, and refused if called
    let client = connect(&server, "/mcp/v1/inbox", &token).await;
    assert!(tool_names(&client).await.is_empty());
    for (tool, args) in [
        ("list_conversations", json!({})),
        ("get_conversation", json!({"conversation": id})),
        ("reply_in_conversation", json!({"conversation": id, "message": "Ndiyo"})),
    ] {
        let error = refused(&client, tool, args).await;
        assert_code(&error, "permission_denied");
        assert!(error.get("reason").is_none(), "a permission, not a scope: {error}");
    }
    assert!(app.messaging.gateways().chat_sandbox().sent().is_empty(), "the reply was not sent");
    // the chat sends and reads need the tenant credential only
    let client = connect(&server, "/mcp/v1/messaging", &token).await;
    let names = tool_names(&client).await;
    for name in CHAT_TOOLS {
        assert!(names.contains(&name.to_owned()), "{name} in {names:?}");
    }
    let sent = one(&ok(&client, "send_chat_text", json!({"recipient": e164("0000"), "message": "Ndiyo"})).await);
    assert_eq!(sent["status"], "sent", "{sent}");
    assert_eq!(ok(&client, "get_chat_message", json!({"message": sent["uid"]})).await["uid"], sent["uid"]);
    // and read again on every call
    app.set_permissions(user, "communications.messages.view").await;
    assert_eq!(tool_names(&connect(&server, "/mcp/v1/inbox", &token).await).await, sorted(&INBOX_TOOLS));
    let client = connect(&server, "/mcp/v1/inbox", &token).await;
    assert_eq!(total(&ok(&client, "list_conversations", json!({})).await), 1);
}

#[actix_web::test]
async fn another_tenants_conversations_and_chat_messages_are_not_found() {
    let app = api_tests::spawn().await;
    let (owner, owner_token) = chat_connection(&app, "all", SCOPES).await;
    let (_, stranger_token) = chat_connection(&app, "all", SCOPES).await;
    let id = customer_writes(&app, &owner, "0000", "wamid.IN1", "Habari").await;
    let server = app.listen();
    let client = connect(&server, "/mcp", &owner_token).await;
    let sent = one(&ok(&client, "reply_in_conversation", json!({"conversation": id, "message": "Mine"})).await);
    let sandbox = app.messaging.gateways().chat_sandbox().clone();
    assert_eq!(sandbox.sent().len(), 1);

    let client = connect(&server, "/mcp", &stranger_token).await;
    for (tool, args) in [
        ("get_conversation", json!({"conversation": id})),
        ("get_conversation", json!({"conversation": id.to_string()})),
        ("reply_in_conversation", json!({"conversation": id, "message": "Theirs"})),
        ("get_chat_message", json!({"message": sent["uid"]})),
        ("get_chat_message", json!({"message": sent["id"]})),
        // ids that name nothing
        ("get_conversation", json!({"conversation": 999_999})),
        ("get_conversation", json!({"conversation": "abc"})),
        ("reply_in_conversation", json!({"conversation": "0", "message": "Hi"})),
    ] {
        assert_code(&refused(&client, tool, args.clone()).await, "not_found");
    }
    assert_field(&refused(&client, "get_conversation", json!({})).await, "conversation");
    assert_eq!(total(&ok(&client, "list_conversations", json!({})).await), 0);
    assert_eq!(sandbox.sent().len(), 1, "nothing was sent for the stranger");
    // the owner's conversation is untouched
    let read = rest_data(&app, owner.key(), &format!("/api/v3/chat/conversations/{id}")).await;
    assert_eq!(total(&read["messages"]), 2, "{read}");
}
