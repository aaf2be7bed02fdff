//! `POST /chat/send`: every rule of the chat send body, the sandbox's outcomes, receipts up to
//! `read`, billing, `POST /sms/send` with `message_type: chat`, and tenant isolation.

use api_tests::{json, spawn};
use providers::ChatContent;
use serde_json::Value;

use super::{BUSINESS, PHONE_ID, SEND, chat_account, e164};
use crate::sms::support::{assert_field_error, assert_status, balance, event_names, sent_messages, str_of};

/// The one message of a 201 answer.
fn one(res: &api_tests::Resp) -> Value {
    let messages = sent_messages(res);
    assert_eq!(messages.len(), 1, "{}", res.body);
    messages[0].clone()
}

#[actix_web::test]
async fn a_text_goes_out_then_is_delivered_and_read() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let before = balance(&app, chat.key()).await;
    let res =
        app.post(SEND, chat.key(), json!({"recipient": "0712340000", "message": "Habari", "body": "ignored"})).await;
    let sent = one(&res);
    assert_eq!(sent["status"], "sent", "{sent}");
    assert!(str_of(&sent, "gateway_message_id").starts_with("wamid."));
    assert_eq!(sent["recipient"], e164("0000"));

    let read = app.get(&format!("/api/v3/chat/{}", str_of(&sent, "uid")), chat.key()).await;
    assert_status(&read, 200);
    let message = read.data().clone();
    assert_eq!(message["channel_type"], "chat");
    assert_eq!(message["direction"], "outbound");
    assert_eq!(message["sender"], PHONE_ID);
    assert_eq!(message["body"], "Habari", "message wins over body");
    assert!(message["conversation_id"].is_i64(), "{message}");
    assert_eq!(message["metadata"]["message_type"], "text");
    // the provider was asked for a text from the business number
    let asked = app.messaging.gateways().chat_sandbox().sent_to(&e164("0000"));
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].phone_number_id, PHONE_ID);
    assert_eq!(asked[0].content, ChatContent::Text { body: "Habari".into() });
    // per-message billing: the default chat price
    assert_eq!(balance(&app, chat.key()).await, before - app.messaging.config().chat_price_minor);

    app.advance(time::Duration::seconds(1)).await;
    let uid = str_of(&sent, "uid").to_owned();
    let now = app.get(&format!("/api/v3/chat/{uid}"), chat.key()).await;
    assert_eq!(now.data()["status"], "delivered", "{}", now.body);
    assert!(now.data()["read_at"].is_null());
    app.advance(time::Duration::seconds(1)).await;
    let now = app.get(&format!("/api/v3/chat/{uid}"), chat.key()).await;
    assert_eq!(now.data()["status"], "read", "{}", now.body);
    assert!(now.data()["read_at"].is_string() && now.data()["delivered_at"].is_string());
    let names = event_names(&app.pool, chat.tenant(), &sent).await;
    assert_eq!(names, ["message.sent", "message.delivered", "message.read"]);
}

#[actix_web::test]
async fn the_sandbox_decides_by_the_number_ending() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let before = balance(&app, chat.key()).await;
    let send = |last4: &str, body: Value| {
        let mut body = body;
        body["recipient"] = json!(e164(last4));
        body
    };
    let refused = one(&app.post(SEND, chat.key(), send("0001", json!({"message": "hi"}))).await);
    assert_eq!(refused["status"], "failed");
    assert!(str_of(&refused, "error_message").contains("0001"));
    // outside the 24-hour window: free text refused (131047), a template goes
    let outside = one(&app.post(SEND, chat.key(), send("0005", json!({"message": "hi"}))).await);
    assert_eq!(outside["status"], "failed");
    assert!(str_of(&outside, "error_message").contains("131047"), "{outside}");
    let template = json!({"template": {"name": "order_update", "components": [{"type": "body"}]}});
    let opened = one(&app.post(SEND, chat.key(), send("0005", template)).await);
    assert_eq!(opened["status"], "sent", "{opened}");
    let unread = one(&app.post(SEND, chat.key(), send("0004", json!({"message": "hi"}))).await);
    let lost = one(&app.post(SEND, chat.key(), send("0003", json!({"message": "hi"}))).await);
    let silent = one(&app.post(SEND, chat.key(), send("0002", json!({"message": "hi"}))).await);
    // the refused ones were refunded: four messages paid
    assert_eq!(balance(&app, chat.key()).await, before - 4 * app.messaging.config().chat_price_minor);

    app.advance(time::Duration::seconds(5)).await;
    let status = |m: &Value| {
        let uid = str_of(m, "uid").to_owned();
        let app = &app;
        let key = chat.key().to_owned();
        async move { app.get(&format!("/api/v3/chat/{uid}"), &key).await.data().clone() }
    };
    assert_eq!(status(&unread).await["status"], "delivered");
    let lost = status(&lost).await;
    assert_eq!(lost["status"], "failed");
    assert!(str_of(&lost, "error_message").contains("0003"));
    assert_eq!(status(&silent).await["status"], "sent");
    assert_eq!(status(&opened).await["status"], "read");
}

#[actix_web::test]
async fn every_message_type_is_stored_and_sent_in_the_providers_shape() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let to = e164("0000");
    let image = one(
        &app.post(SEND, chat.key(), json!({"recipient": to, "message_type": "image", "media_url": "https://cdn.example.com/a.jpg", "message": "Bei mpya"}))
            .await,
    );
    let audio = one(
        &app.post(SEND, chat.key(), json!({"recipient": to, "type": "audio", "media_url": "https://cdn.example.com/a.ogg", "message": "no caption"}))
            .await,
    );
    // without a message_type, the body says what it is
    let document = one(&app
        .post(
            SEND,
            chat.key(),
            json!({"recipient": to, "media_url": "https://cdn.example.com/a.pdf", "media_type": "document"}),
        )
        .await);
    let buttons = json!({"type": "button", "body": {"text": "Thibitisha?"}, "action": {"buttons": [
        {"type": "reply", "reply": {"id": "yes", "title": "Ndiyo"}},
        {"type": "reply", "reply": {"id": "no", "title": "Hapana"}}]}});
    let interactive = one(&app.post(SEND, chat.key(), json!({"recipient": to, "interactive": buttons})).await);
    let cta = json!({"type": "cta_url", "body": {"text": "Duka"}, "action": {"name": "cta_url", "parameters": {"display_text": "Fungua", "url": "https://duka.example.com"}}});
    one(&app.post(SEND, chat.key(), json!({"recipient": to, "message_type": "interactive", "interactive": cta})).await);
    let template = json!({"name": "order_update", "language": "sw", "components": [{"type": "body", "parameters": [{"type": "text", "text": "DK-1"}]}]});
    let templated = one(&app.post(SEND, chat.key(), json!({"recipient": to, "template": template})).await);
    let target = str_of(&image, "gateway_message_id").to_owned();
    let reaction = one(&app
        .post(SEND, chat.key(), json!({"recipient": to, "reaction": {"emoji": "👍"}, "in_reply_to_gateway_id": target}))
        .await);
    let reply = one(&app
        .post(SEND, chat.key(), json!({"recipient": to, "message": "Asante", "in_reply_to_gateway_id": target}))
        .await);
    for m in [&image, &audio, &document, &interactive, &templated, &reaction, &reply] {
        assert_eq!(m["status"], "sent", "{m}");
    }
    let asked = app.messaging.gateways().chat_sandbox().sent_to(&to);
    let contents: Vec<&ChatContent> = asked.iter().map(|m| &m.content).collect();
    assert_eq!(
        contents[0],
        &ChatContent::Media {
            kind: "image".into(),
            link: "https://cdn.example.com/a.jpg".into(),
            caption: Some("Bei mpya".into())
        }
    );
    assert_eq!(
        contents[1],
        &ChatContent::Media { kind: "audio".into(), link: "https://cdn.example.com/a.ogg".into(), caption: None },
        "audio carries no caption"
    );
    assert!(matches!(contents[2], ChatContent::Media { kind, .. } if kind == "document"));
    assert_eq!(contents[3], &ChatContent::Interactive { interactive: buttons });
    assert_eq!(contents[4], &ChatContent::Interactive { interactive: cta });
    assert_eq!(
        contents[5],
        &ChatContent::Template {
            name: "order_update".into(),
            language: "sw".into(),
            components: template["components"].as_array().cloned().unwrap_or_default()
        }
    );
    assert_eq!(contents[6], &ChatContent::Reaction { message_id: target.clone(), emoji: "👍".into() });
    assert_eq!(asked[6].reply_to, None, "a reaction names its target itself");
    assert_eq!(asked[7].reply_to.as_deref(), Some(target.as_str()));

    // the records say what was sent
    let read = |m: &Value| {
        let uid = str_of(m, "uid").to_owned();
        let app = &app;
        let key = chat.key().to_owned();
        async move { app.get(&format!("/api/v3/chat/{uid}"), &key).await.data().clone() }
    };
    let stored = read(&image).await;
    assert_eq!(
        (stored["media_type"].as_str(), stored["media_url"].as_str()),
        (Some("image"), Some("https://cdn.example.com/a.jpg"))
    );
    let stored = read(&templated).await;
    assert_eq!(stored["template_params"]["name"], "order_update");
    assert_eq!(stored["template_params"]["language"], "sw");
    let stored = read(&interactive).await;
    assert_eq!(stored["metadata"]["interactive"]["type"], "button");
    assert_eq!(stored["body"], "Thibitisha?");
    let stored = read(&reaction).await;
    assert_eq!(stored["metadata"]["reaction"]["emoji"], "👍");
    let stored = read(&reply).await;
    assert_eq!(stored["metadata"]["reply_to"], target);
}

#[actix_web::test]
async fn the_template_language_defaults_to_en() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    one(&app.post(SEND, chat.key(), json!({"recipient": e164("0000"), "template": {"name": "hello"}})).await);
    let asked = app.messaging.gateways().chat_sandbox().sent_to(&e164("0000"));
    assert_eq!(
        asked[0].content,
        ChatContent::Template { name: "hello".into(), language: "en".into(), components: vec![] }
    );
}

#[actix_web::test]
async fn the_limits_and_combinations_of_the_body_are_422() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let to = e164("0000");
    let long = |n: usize| "a".repeat(n);
    let button = |id: &str, title: &str| json!({"type": "reply", "reply": {"id": id, "title": title}});
    let buttons = |list: Vec<Value>| json!({"type": "button", "body": {"text": "Chagua"}, "action": {"buttons": list}});
    let row = |title: &str, description: &str| json!({"type": "list", "body": {"text": "Menyu"}, "action": {"button": "Tazama", "sections": [{"title": "A", "rows": [{"id": "r1", "title": title, "description": description}]}]}});
    let cases: Vec<(Value, &str)> = vec![
        (json!({"message": long(4097)}), "message"),
        (json!({"body": long(4097)}), "body"),
        (json!({"message_type": "text"}), "message"),
        (json!({"message_type": "fax", "message": "x"}), "message_type"),
        (json!({"type": "fax", "message": "x"}), "type"),
        (json!({"message": "x", "sender_id": long(65)}), "sender_id"),
        (json!({"message": "x", "schedule_time": "tomorrow"}), "schedule_time"),
        (json!({"message": "x", "in_reply_to_gateway_id": "msg_01JDX4W7Q9"}), "in_reply_to_gateway_id"),
        (json!({"message": "x", "in_reply_to_gateway_id": long(192)}), "in_reply_to_gateway_id"),
        (json!({"message_type": "image"}), "media_url"),
        (json!({"message_type": "image", "media_url": format!("https://x/{}", long(2048))}), "media_url"),
        (json!({"message_type": "image", "media_url": "https://x/a.mp4", "media_type": "video"}), "media_type"),
        (json!({"media_url": "https://x/a.bin", "media_type": "binary"}), "media_type"),
        (json!({"media_url": "https://x/a.bin"}), "media_type"),
        (json!({"message": "x", "media_url": "https://x/a.jpg", "message_type": "text"}), "media_url"),
        (json!({"template": {"name": long(192)}}), "template.name"),
        (json!({"template": {"name": "t", "language": long(21)}}), "template.language"),
        (json!({"template": {"language": "en"}}), "template.name"),
        (json!({"template": {"name": "t"}, "media_url": "https://x/a.jpg"}), "template"),
        (
            json!({"template": {"name": "t"}, "interactive": buttons(vec![button("a", "A")]), "message_type": "template"}),
            "template",
        ),
        (json!({"interactive": buttons(vec![button("a", "A")]), "media_url": "https://x/a.jpg"}), "interactive"),
        (json!({"message_type": "interactive"}), "interactive"),
        (json!({"interactive": {"type": "carousel", "body": {"text": "x"}}}), "interactive.type"),
        (json!({"interactive": {"body": {"text": "x"}}}), "interactive.type"),
        (json!({"interactive": {"type": "cta_url", "body": {"text": long(1025)}}}), "interactive.body.text"),
        (
            json!({"interactive": buttons(vec![button("a", "A"), button("b", "B"), button("c", "C"), button("d", "D")])}),
            "interactive.action.buttons",
        ),
        (json!({"interactive": buttons(vec![])}), "interactive.action.buttons"),
        (json!({"interactive": buttons(vec![button("a", &long(21))])}), "interactive.action.buttons[0].reply.title"),
        (json!({"interactive": buttons(vec![button(&long(201), "A")])}), "interactive.action.buttons[0].reply.id"),
        (json!({"interactive": row(&long(25), "d")}), "interactive.action.sections[0].rows[0].title"),
        (json!({"interactive": row("t", &long(73))}), "interactive.action.sections[0].rows[0].description"),
        (
            json!({"interactive": {"type": "list", "body": {"text": "Menyu"}, "action": {"sections": []}}}),
            "interactive.action.button",
        ),
        (json!({"reaction": {"message_id": "wamid.A"}}), "reaction.emoji"),
        (json!({"reaction": {"message_id": "wamid.A", "emoji": long(17)}}), "reaction.emoji"),
        (json!({"reaction": {"message_id": long(192), "emoji": "👍"}}), "reaction.message_id"),
        (json!({"reaction": {"emoji": "👍"}}), "reaction.message_id"),
        (json!({"reaction": {"message_id": "msg_01", "emoji": "👍"}}), "reaction.message_id"),
        (json!({"reaction": {"message_id": "wamid.A", "emoji": "👍"}, "message": "and text"}), "reaction"),
        (json!({"reaction": {"message_id": "wamid.A", "emoji": "👍"}, "media_url": "https://x/a.jpg"}), "reaction"),
    ];
    for (body, field) in cases {
        let mut body = body;
        body["recipient"] = json!(to);
        let res = app.post(SEND, chat.key(), body.clone()).await;
        assert_field_error(&res, field);
    }
    assert_field_error(&app.post(SEND, chat.key(), json!({"message": "x"})).await, "recipient");
    assert_field_error(&app.post(SEND, chat.key(), json!({"recipient": "abc", "message": "x"})).await, "recipient");
    // nothing was written, nothing was sent
    assert!(app.messaging.gateways().chat_sandbox().sent().is_empty());
}

#[actix_web::test]
async fn the_sender_is_a_number_of_the_account_or_the_default() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let to = e164("0000");
    for sender in [PHONE_ID, BUSINESS, "0222000111"] {
        let sent =
            one(&app.post(SEND, chat.key(), json!({"recipient": to, "message": "x", "sender_id": sender})).await);
        assert_eq!(sent["status"], "sent", "{sender}: {sent}");
    }
    assert!(app.messaging.gateways().chat_sandbox().sent().iter().all(|m| m.phone_number_id == PHONE_ID));
    let res = app.post(SEND, chat.key(), json!({"recipient": to, "message": "x", "sender_id": "999"})).await;
    assert_field_error(&res, "sender_id");
    // a local channel id is no sender
    let res = app.post(SEND, chat.key(), json!({"recipient": to, "message": "x", "sender_id": "1"})).await;
    assert_field_error(&res, "sender_id");

    // an account with no chat account at all
    let bare = app.account("all").await;
    let res = app.post(SEND, &bare.key, json!({"recipient": to, "message": "x"})).await;
    crate::framework::assert_error(&res, 422);
    assert!(str_of(&res.body, "message").contains("No chat account"), "{}", res.body);

    // an account whose chat account has no number: no default, every send must name one
    let numberless = app.account("all").await;
    let mut conn = app.conn().await;
    let new = messaging::chat::NewChatAccount { waba_id: "w2".into(), name: "Empty".into(), ..Default::default() };
    messaging::chat::accounts::add(&mut conn, &app.keyring, numberless.tenant, new).await.expect("account");
    let res = app.post(SEND, &numberless.key, json!({"recipient": to, "message": "x"})).await;
    assert_field_error(&res, "sender_id");
}

#[actix_web::test]
async fn sms_send_with_message_type_chat_routes_to_chat() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let res = app
        .post(
            "/api/v3/sms/send",
            chat.key(),
            json!({"recipient": e164("0000"), "message_type": "chat", "message": "Habari"}),
        )
        .await;
    let sent = one(&res);
    let stored = app.get(&format!("/api/v3/sms/{}", str_of(&sent, "uid")), chat.key()).await;
    assert_eq!(stored.data()["channel_type"], "chat");
    assert_eq!(stored.data()["sender"], PHONE_ID);
    // the chat members come along
    let res = app
        .post(
            "/api/v3/sms/send",
            chat.key(),
            json!({"recipient": e164("0000"), "type": "CHAT", "template": {"name": "hello", "language": "sw"}}),
        )
        .await;
    let sent = one(&res);
    assert_eq!(sent["status"], "sent");
    let listed = app.get("/api/v3/messages?channel_type=chat", chat.key()).await;
    assert_status(&listed, 200);
    assert_eq!(listed.data()["pagination"]["total"], 2);
    let listed = app.get("/api/v3/messages?channel_type=sms", chat.key()).await;
    assert_eq!(listed.data()["pagination"]["total"], 0);
    // an SMS (here failed: the account has no SMS channel) is no chat message
    let sms = one(&app.post("/api/v3/sms/send", chat.key(), json!({"recipient": e164("0000"), "message": "x"})).await);
    assert_status(&app.get(&format!("/api/v3/sms/{}", str_of(&sms, "uid")), chat.key()).await, 200);
    crate::framework::assert_error(&app.get(&format!("/api/v3/chat/{}", str_of(&sms, "uid")), chat.key()).await, 404);
}

#[actix_web::test]
async fn a_prepaid_wallet_that_cannot_pay_writes_nothing() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let mut conn = app.conn().await;
    let balance_now = balance(&app, chat.key()).await;
    accounts::wallet::debit(&mut conn, chat.tenant(), balance_now, "test").await.expect("debit").expect("paid");
    let res = app.post(SEND, chat.key(), json!({"recipient": e164("0000"), "message": "x"})).await;
    crate::framework::assert_error(&res, 402);
    let listed = app.get("/api/v3/messages?channel_type=chat", chat.key()).await;
    assert_eq!(listed.data()["pagination"]["total"], 0);
    assert!(app.messaging.gateways().chat_sandbox().sent().is_empty());
}

#[actix_web::test]
async fn another_tenants_chat_message_is_not_found() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let sent = one(&app.post(SEND, chat.key(), json!({"recipient": e164("0000"), "message": "x"})).await);
    let other = app.account("all").await;
    for id in [str_of(&sent, "uid").to_owned(), sent["id"].to_string()] {
        let res = app.get(&format!("/api/v3/chat/{id}"), &other.key).await;
        crate::framework::assert_error(&res, 404);
    }
    let conversation =
        app.get(&format!("/api/v3/chat/{}", str_of(&sent, "uid")), chat.key()).await.data()["conversation_id"].clone();
    let res = app.get(&format!("/api/v3/chat/conversations/{conversation}"), &other.key).await;
    crate::framework::assert_error(&res, 404);
    let res = app.get(&format!("/api/v3/chat/conversations/{conversation}"), chat.key()).await;
    assert_status(&res, 200);
}

#[actix_web::test]
async fn per_conversation_billing_charges_the_first_message_of_a_day() {
    let config = messaging::MessagingConfig {
        chat_billing: messaging::chat::send::ChatBilling::PerConversation,
        chat_price_minor: 700,
        ..Default::default()
    };
    let app = api_tests::spawn_with_messaging(config).await;
    let chat = chat_account(&app, "all").await;
    let start = balance(&app, chat.key()).await;
    let priced = |res: &api_tests::Resp| -> Vec<i64> {
        sent_messages(res).iter().map(|m| m["price_minor"].as_i64().unwrap_or(-1)).collect()
    };
    // two customers, one of them named twice in other forms: two conversations, two charges
    let first = app.post(SEND, chat.key(), json!({"recipients": [e164("0000"), e164("0011")], "message": "a"})).await;
    assert_eq!(priced(&first), [700, 700]);
    let again = app.post(SEND, chat.key(), json!({"recipient": e164("0000"), "message": "b"})).await;
    assert_eq!(priced(&again), [0], "the same conversation within the day is free");
    // a refused first message is refunded and does not open the billing window
    let refused = one(&app.post(SEND, chat.key(), json!({"recipient": e164("0001"), "message": "c"})).await);
    assert_eq!(refused["status"], "failed");
    let retry = app.post(SEND, chat.key(), json!({"recipient": e164("0001"), "message": "d"})).await;
    assert_eq!(priced(&retry), [700]);
    assert_eq!(balance(&app, chat.key()).await, start - 1_400, "the refused ones were refunded");
    // a day later the conversation is charged again
    app.advance(time::Duration::hours(24) + time::Duration::seconds(1)).await;
    let next_day = app.post(SEND, chat.key(), json!({"recipient": e164("0000"), "message": "e"})).await;
    assert_eq!(priced(&next_day), [700]);
}

#[actix_web::test]
async fn a_scheduled_chat_message_waits_for_its_time() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let at = (app.clock.now() + time::Duration::hours(2))
        .format(&time::format_description::well_known::Rfc3339)
        .expect("rfc3339");
    let queued = one(&app
        .post(SEND, chat.key(), json!({"recipient": e164("0000"), "message": "Kesho", "schedule_time": at}))
        .await);
    assert_eq!(queued["status"], "queued");
    assert!(queued["scheduled_at"].is_string());
    app.advance(time::Duration::hours(1)).await;
    assert!(app.messaging.gateways().chat_sandbox().sent().is_empty());
    app.advance(time::Duration::hours(1)).await;
    let now = app.get(&format!("/api/v3/chat/{}", str_of(&queued, "uid")), chat.key()).await;
    assert_ne!(now.data()["status"], "queued", "{}", now.body);
    assert_eq!(app.messaging.gateways().chat_sandbox().sent().len(), 1);
}

#[actix_web::test]
async fn keys_without_an_issuer_are_refused_on_chat_routes() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let legacy = app.legacy_key(chat.tenant()).await;
    for res in [
        app.post(SEND, &legacy, json!({"recipient": e164("0000"), "message": "x"})).await,
        app.get("/api/v3/chat/accounts", &legacy).await,
        app.get("/api/v3/chat/templates", &legacy).await,
    ] {
        crate::framework::assert_error(&res, 403);
    }
}
