//! The chat provider's webhook: verification, signatures, statuses, customers' messages and the
//! window they open, echoes, reactions, quality updates, and replays that change nothing twice.

use api_tests::{json, spawn};
use serde_json::Value;

use super::{APP_SECRET, SEND, VERIFY_TOKEN, chat_account, chat_id, deliver, delivery, e164, status, text_from};
use crate::sms::support::{assert_status, events, str_of};

#[actix_web::test]
async fn the_verification_challenge_is_answered_only_with_the_verify_token() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let hook = chat.hook();
    let ask =
        |mode: &str, token: &str| format!("{hook}?hub.mode={mode}&hub.verify_token={token}&hub.challenge=1158201444");
    let req = actix_web::test::TestRequest::get().uri(&ask("subscribe", VERIFY_TOKEN));
    let res = app.send(req).await;
    assert_eq!(res.status, 200);
    assert_eq!(res.body, json!(1158201444), "the challenge comes back as it was sent");
    assert!(res.header("content-type").is_some_and(|c| c.starts_with("text/plain")));
    for uri in [ask("subscribe", "wrong"), ask("unsubscribe", VERIFY_TOKEN), format!("{hook}?hub.mode=subscribe")] {
        let res = app.send(actix_web::test::TestRequest::get().uri(&uri)).await;
        crate::framework::assert_error(&res, 403);
    }
    let res = app
        .send(actix_web::test::TestRequest::get().uri(&ask("subscribe", VERIFY_TOKEN).replace(&chat.token, "nope")))
        .await;
    crate::framework::assert_error(&res, 404);
}

#[actix_web::test]
async fn deliveries_must_carry_the_apps_signature() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let body = text_from(&chat_id("0000"), "wamid.IN1", "Habari");
    crate::framework::assert_error(&deliver(&app, &chat.hook(), None, &body).await, 401);
    crate::framework::assert_error(&deliver(&app, &chat.hook(), Some("another-secret"), &body).await, 401);
    // nothing was stored from the refused ones
    let listed = app.get("/api/v3/messages?direction=inbound", chat.key()).await;
    assert_eq!(listed.data()["pagination"]["total"], 0);
    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &body).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["messages_received"], 1);
    // signed but not a delivery: 422
    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &json!({"object": "page"})).await;
    crate::framework::assert_error(&res, 422);
}

#[actix_web::test]
async fn a_customer_message_is_stored_once_and_opens_the_window() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let customer = chat_id("0000");
    let body = text_from(&customer, "wamid.IN1", "Mna kahawa?");
    let first = deliver(&app, &chat.hook(), Some(APP_SECRET), &body).await;
    assert_status(&first, 200);
    let again = deliver(&app, &chat.hook(), Some(APP_SECRET), &body).await;
    assert_eq!((again.data()["messages_received"].as_i64(), again.data()["duplicates"].as_i64()), (Some(0), Some(1)));

    let listed = app.get("/api/v3/messages?direction=inbound&channel_type=chat", chat.key()).await;
    assert_eq!(listed.data()["pagination"]["total"], 1, "{}", listed.body);
    let message = listed.data()["items"][0].clone();
    assert_eq!(message["status"], "received");
    assert_eq!(message["sender"], e164("0000"));
    assert_eq!(message["body"], "Mna kahawa?");
    assert_eq!(message["gateway_message_id"], "wamid.IN1");
    assert_eq!(message["metadata"]["profile_name"], "Amina");
    let received: Vec<(String, Value)> =
        events(&app.pool, chat.tenant()).await.into_iter().filter(|(n, _)| n == "message.received").collect();
    assert_eq!(received.len(), 1, "one event for one message");
    assert_eq!(received[0].1["channel_type"], "chat");

    let conversations = app.get("/api/v3/chat/conversations", chat.key()).await;
    assert_status(&conversations, 200);
    let items = conversations.data()["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 1);
    let conversation = &items[0];
    assert_eq!(conversation["customer"], json!({"phone": e164("0000"), "chat_id": customer, "name": "Amina"}));
    assert_eq!(conversation["window"]["open"], true);
    assert_eq!(conversation["unread_count"], 1, "the replay counted nothing");
    assert_eq!(conversation["last_message"]["body"], "Mna kahawa?");
    assert_eq!(message["conversation_id"], conversation["id"]);

    // the business answers: read, and the conversation shows it
    let sent = app.post(SEND, chat.key(), json!({"recipient": e164("0000"), "message": "Ndiyo!"})).await;
    assert_status(&sent, 201);
    let id = conversation["id"].as_i64().unwrap_or_default();
    let read = app.get(&format!("/api/v3/chat/conversations/{id}"), chat.key()).await;
    assert_status(&read, 200);
    assert_eq!(read.data()["unread_count"], 0);
    assert_eq!(read.data()["last_message"]["body"], "Ndiyo!");
    let bodies: Vec<&str> =
        read.data()["messages"]["items"].as_array().into_iter().flatten().filter_map(|m| m["body"].as_str()).collect();
    assert_eq!(bodies, ["Ndiyo!", "Mna kahawa?"], "newest first");

    // 24 hours later the window is closed
    app.advance(time::Duration::hours(24) + time::Duration::seconds(1)).await;
    let open = app.get("/api/v3/chat/conversations?window=open", chat.key()).await;
    assert_eq!(open.data()["pagination"]["total"], 0);
    let closed = app.get("/api/v3/chat/conversations?window=closed", chat.key()).await;
    assert_eq!(closed.data()["pagination"]["total"], 1);
    crate::framework::assert_error(&app.get("/api/v3/chat/conversations?window=ajar", chat.key()).await, 422);
}

#[actix_web::test]
async fn statuses_move_a_message_forward_once() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    // ...0002: the sandbox announces no receipt, so the webhook is the only word
    let sent = app.post(SEND, chat.key(), json!({"recipient": e164("0002"), "message": "Oda yako"})).await;
    assert_status(&sent, 201);
    let sent = sent.data()["messages"][0].clone();
    let wamid = str_of(&sent, "gateway_message_id").to_owned();
    let uid = str_of(&sent, "uid").to_owned();
    let path = format!("/api/v3/chat/{uid}");
    let now = || async { app.get(&path, chat.key()).await.data().clone() };
    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &status(&wamid, "delivered")).await;
    assert_eq!(res.data()["statuses_applied"], 1);
    assert_eq!(now().await["status"], "delivered");
    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &status(&wamid, "delivered")).await;
    assert_eq!((res.data()["statuses_applied"].as_i64(), res.data()["statuses_late"].as_i64()), (Some(0), Some(1)));
    deliver(&app, &chat.hook(), Some(APP_SECRET), &status(&wamid, "read")).await;
    let read = now().await;
    assert_eq!(read["status"], "read");
    assert!(read["read_at"].is_string());
    // a late `delivered` changes nothing
    deliver(&app, &chat.hook(), Some(APP_SECRET), &status(&wamid, "delivered")).await;
    assert_eq!(now().await["status"], "read");
    let names: Vec<String> = events(&app.pool, chat.tenant()).await.into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["message.sent", "message.delivered", "message.read"]);
}

#[actix_web::test]
async fn a_failed_status_fails_the_message_with_the_providers_reason() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let sent = app.post(SEND, chat.key(), json!({"recipient": e164("0002"), "message": "x"})).await;
    let wamid = str_of(&sent.data()["messages"][0], "gateway_message_id").to_owned();
    let failed = delivery(json!({"statuses": [{"id": wamid, "status": "failed", "timestamp": "1764230400",
        "recipient_id": chat_id("0002"), "errors": [{"code": 131026, "title": "Message undeliverable",
        "error_data": {"details": "The recipient is not on the app"}}]}]}));
    deliver(&app, &chat.hook(), Some(APP_SECRET), &failed).await;
    let message = app.get(&format!("/api/v3/chat/{}", str_of(&sent.data()["messages"][0], "uid")), chat.key()).await;
    assert_eq!(message.data()["status"], "failed");
    assert!(str_of(message.data(), "error_message").contains("131026"), "{}", message.body);
}

#[actix_web::test]
async fn a_status_that_overtakes_its_send_is_tried_again() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &status("wamid.LATER", "delivered")).await;
    assert_eq!(res.data()["statuses_unknown"], 1);
    // the message it names appears (its send's answer recorded), then the retry applies it
    let sent = app.post(SEND, chat.key(), json!({"recipient": e164("0002"), "message": "x"})).await;
    let uid = str_of(&sent.data()["messages"][0], "uid").to_owned();
    api_tests::sql_exec(
        &app.pool,
        &format!("UPDATE messages SET gateway_message_id = 'wamid.LATER' WHERE uid = '{uid}'"),
    )
    .await;
    app.advance(time::Duration::seconds(11)).await;
    let message = app.get(&format!("/api/v3/chat/{uid}"), chat.key()).await;
    assert_eq!(message.data()["status"], "delivered", "{}", message.body);
}

#[actix_web::test]
async fn echoes_are_recorded_once_as_the_business_own_messages() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let echo = json!({"object": "whatsapp_business_account", "entry": [{"id": super::WABA, "changes": [{"field": "smb_message_echoes",
        "value": {"messaging_product": "whatsapp",
            "metadata": {"display_phone_number": super::BUSINESS.trim_start_matches('+'), "phone_number_id": super::PHONE_ID},
            "message_echoes": [{"from": super::BUSINESS.trim_start_matches('+'), "to": chat_id("0000"), "id": "wamid.ECHO1",
                "timestamp": "1764230400", "type": "text", "text": {"body": "Tumefunga leo"}}]}}]}]});
    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &echo).await;
    assert_eq!(res.data()["echoes"], 1, "{}", res.body);
    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &echo).await;
    assert_eq!((res.data()["echoes"].as_i64(), res.data()["duplicates"].as_i64()), (Some(0), Some(1)));
    let listed = app.get("/api/v3/messages?channel_type=chat&direction=outbound", chat.key()).await;
    assert_eq!(listed.data()["pagination"]["total"], 1);
    let message = &listed.data()["items"][0];
    assert_eq!(message["status"], "sent");
    assert_eq!(message["recipient"], e164("0000"));
    assert_eq!(message["body"], "Tumefunga leo");
    let echoed: Vec<String> =
        events(&app.pool, chat.tenant()).await.into_iter().map(|(n, _)| n).filter(|n| n == "message.echoed").collect();
    assert_eq!(echoed.len(), 1);
}

#[actix_web::test]
async fn a_customers_reaction_shows_on_the_message_it_answers() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let sent = app.post(SEND, chat.key(), json!({"recipient": e164("0002"), "message": "Karibu"})).await;
    let sent = sent.data()["messages"][0].clone();
    let wamid = str_of(&sent, "gateway_message_id").to_owned();
    let reaction = delivery(json!({
        "contacts": [{"profile": {"name": "Amina"}, "wa_id": chat_id("0002")}],
        "messages": [{"from": chat_id("0002"), "id": "wamid.R1", "timestamp": "1764230400", "type": "reaction",
            "reaction": {"message_id": wamid, "emoji": "❤️"}}]}));
    deliver(&app, &chat.hook(), Some(APP_SECRET), &reaction).await;
    let message = app.get(&format!("/api/v3/chat/{}", str_of(&sent, "uid")), chat.key()).await;
    assert_eq!(message.data()["metadata"]["customer_reaction"]["emoji"], "❤️", "{}", message.body);
    let updated: Vec<Value> = events(&app.pool, chat.tenant())
        .await
        .into_iter()
        .filter(|(n, _)| n == "message.updated")
        .map(|(_, p)| p)
        .collect();
    assert_eq!(updated.len(), 1);
    assert_eq!(updated[0]["message_id"], sent["id"]);
}

#[actix_web::test]
async fn a_quality_update_shows_on_the_number() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let update = json!({"object": "whatsapp_business_account", "entry": [{"id": super::WABA, "changes": [{"field": "phone_number_quality_update",
        "value": {"display_phone_number": super::BUSINESS.trim_start_matches('+'), "event": "FLAGGED", "current_limit": "TIER_10K"}}]}]});
    assert_status(&deliver(&app, &chat.hook(), Some(APP_SECRET), &update).await, 200);
    let accounts = app.get("/api/v3/chat/accounts", chat.key()).await;
    let number = &accounts.data()["items"][0]["phone_numbers"][0];
    assert_eq!((number["quality_rating"].as_str(), number["messaging_tier"].as_str()), (Some("RED"), Some("TIER_10K")));
}

#[actix_web::test]
async fn conversations_need_the_message_view_permission_and_stay_in_their_tenant() {
    let app = spawn().await;
    let chat = chat_account(&app, "contacts.view").await;
    crate::framework::assert_error(&app.get("/api/v3/chat/conversations", chat.key()).await, 403);
    let other = chat_account(&app, "all").await;
    deliver(&app, &other.hook(), Some(APP_SECRET), &text_from(&chat_id("0000"), "wamid.X", "hi")).await;
    let mine = chat_account(&app, "all").await;
    let listed = app.get("/api/v3/chat/conversations", mine.key()).await;
    assert_eq!(listed.data()["pagination"]["total"], 0);
}

#[actix_web::test]
async fn the_inbox_reply_keeps_to_the_window_whatever_the_body_says() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    // the business wrote first: a conversation with no window
    app.post(SEND, chat.key(), json!({"recipient": e164("0000"), "message": "Karibu"})).await;
    let listed = app.get("/api/v3/chat/conversations", chat.key()).await;
    let id = listed.data()["items"][0]["id"].as_i64().unwrap_or_default();
    let caller = kernel::Caller::operator(chat.tenant(), "255");
    let template = messaging::chat::send::TemplateBody { name: Some("hello".into()), ..Default::default() };
    // a text that also carries a template member is still a text
    let text = messaging::chat::ChatSendRequest {
        message_type: Some("text".into()),
        message: Some("Habari".into()),
        template: Some(template.clone()),
        ..Default::default()
    };
    let refused = app.messaging.reply(&caller, id, text).await.expect_err("outside the window");
    assert_eq!(refused.kind, kernel::ErrorKind::Conflict);
    // a template may reopen it
    let reopen = messaging::chat::ChatSendRequest { template: Some(template), ..Default::default() };
    let sent = app.messaging.reply(&caller, id, reopen).await.expect("a template goes");
    assert_eq!(sent.messages[0].status, "sent");
    // inside the window a text goes too
    deliver(&app, &chat.hook(), Some(APP_SECRET), &text_from(&chat_id("0000"), "wamid.IN9", "Asante")).await;
    let text = messaging::chat::ChatSendRequest { message: Some("Karibu tena".into()), ..Default::default() };
    assert_eq!(app.messaging.reply(&caller, id, text).await.expect("in the window").messages[0].status, "sent");
}

#[actix_web::test]
async fn conversations_filter_by_business_number_and_customer() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    for (last4, wamid) in [("0000", "wamid.A"), ("0011", "wamid.B")] {
        deliver(&app, &chat.hook(), Some(APP_SECRET), &text_from(&chat_id(last4), wamid, "hi")).await;
    }
    let total = |res: &api_tests::Resp| res.data()["pagination"]["total"].as_i64();
    assert_eq!(total(&app.get("/api/v3/chat/conversations", chat.key()).await), Some(2));
    let one = app.get("/api/v3/chat/conversations?customer=0712340011", chat.key()).await;
    assert_eq!(total(&one), Some(1));
    assert_eq!(one.data()["items"][0]["customer"]["phone"], e164("0011"));
    let mine = app.get(&format!("/api/v3/chat/conversations?phone_number_id={}", super::PHONE_ID), chat.key()).await;
    assert_eq!(total(&mine), Some(2));
    assert_eq!(total(&app.get("/api/v3/chat/conversations?phone_number_id=999", chat.key()).await), Some(0));
}
