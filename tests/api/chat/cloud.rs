//! Chat through the real Cloud API client (issue 17), against a local fake of the Graph API:
//! sends of each type reach `POST /{version}/{phone_number_id}/messages` in the Cloud shape
//! with the bearer token, the provider's refusal fails the message and refunds it, and the
//! signed webhook moves a sent message on to delivered and read.

use std::sync::atomic::{AtomicU64, Ordering};

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{TestApp, json, spawn};
use messaging::chat::{NewChatAccount, NewPhoneNumber};
use serde_json::Value;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::{APP_SECRET, BUSINESS, ChatAccount, PHONE_ID, SEND, VERIFY_TOKEN, WABA, deliver, status};
use crate::sms::support::{assert_status, balance, sent_messages, str_of, time_of};

/// The Graph API version the fake serves.
pub(crate) const VERSION: &str = "v21.0";
pub(crate) const ACCESS_TOKEN: &str = "EAAGm0PX4ZCpsBAtest-access-token";
const CUSTOMER: &str = "+255712340000";

/// A tenant whose chat account (`WABA`, one number `PHONE_ID`, the default) is on the Cloud
/// API at `base_url`, 10,000.00 in the wallet.
pub(crate) async fn cloud_account<S, B>(app: &TestApp<S>, permissions: &str, base_url: &str) -> ChatAccount
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let account = app.account(permissions).await;
    let mut conn = app.conn().await;
    let new = NewChatAccount {
        waba_id: WABA.into(),
        name: "Duka la Mama".into(),
        provider: Some("cloud".into()),
        base_url: Some(base_url.into()),
        version: Some(VERSION.into()),
        access_token: Some(ACCESS_TOKEN.into()),
        app_secret: Some(APP_SECRET.into()),
        verify_token: Some(VERIFY_TOKEN.into()),
        is_default: false,
    };
    let added =
        messaging::chat::accounts::add(&mut conn, &app.keyring, account.tenant, new).await.expect("cloud chat account");
    let phone = NewPhoneNumber {
        waba_id: WABA.into(),
        phone_number_id: PHONE_ID.into(),
        phone_number: BUSINESS.into(),
        display: Some("Duka".into()),
        is_default: false,
    };
    messaging::chat::accounts::add_phone(&mut conn, account.tenant, "255", phone).await.expect("phone");
    ::accounts::wallet::credit(&mut conn, account.tenant, 1_000_000, None).await.expect("credit");
    ChatAccount { account, token: added.webhook_token }
}

fn messages_path() -> String {
    format!("/{VERSION}/{PHONE_ID}/messages")
}

/// The Cloud API accepting each message with the next `wamid.X`, `wamid.X1`, `wamid.X2`...
#[derive(Default)]
struct Accepts {
    next: AtomicU64,
}

impl Respond for Accepts {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let id = if n == 0 { "wamid.X".to_owned() } else { format!("wamid.X{n}") };
        let to =
            request.body_json::<Value>().ok().and_then(|b| b["to"].as_str().map(str::to_owned)).unwrap_or_default();
        ResponseTemplate::new(200).set_body_json(json!({
            "messaging_product": "whatsapp",
            "contacts": [{"input": to, "wa_id": to}],
            "messages": [{"id": id}],
        }))
    }
}

/// A fake Graph API whose messages endpoint answers with `answer`, for the bearer token only.
async fn graph(answer: impl Respond + 'static) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(messages_path()))
        .and(header("authorization", format!("Bearer {ACCESS_TOKEN}").as_str()))
        .respond_with(answer)
        .mount(&server)
        .await;
    server
}

/// What the fake received at the messages endpoint, each body as JSON, after checking the
/// bearer token of each.
async fn sent_bodies(server: &MockServer) -> Vec<Value> {
    let requests = server.received_requests().await.expect("recorded requests");
    requests
        .iter()
        .map(|request| {
            assert_eq!(request.method.as_str(), "POST");
            assert_eq!(request.url.path(), messages_path());
            let bearer = request.headers.get("authorization").and_then(|v| v.to_str().ok());
            assert_eq!(bearer, Some(format!("Bearer {ACCESS_TOKEN}").as_str()));
            request.body_json::<Value>().unwrap_or_else(|e| panic!("a JSON body: {e}"))
        })
        .collect()
}

/// `GET /chat/{uid}`, 200 expected; the message.
async fn read_chat<S, B>(app: &TestApp<S>, key: &str, uid: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("/api/v3/chat/{uid}"), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// `POST /chat/send`, 201 expected; the one message written.
async fn send_one<S, B>(app: &TestApp<S>, key: &str, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(SEND, key, body).await;
    let messages = sent_messages(&res);
    assert_eq!(messages.len(), 1, "{}", res.body);
    messages[0].clone()
}

#[actix_web::test]
async fn a_text_reaches_the_cloud_api_and_its_receipts_move_it_to_delivered_and_read() {
    let app = spawn().await;
    let server = graph(Accepts::default()).await;
    let duka = cloud_account(&app, "all", &server.uri()).await;

    let m = send_one(&app, duka.key(), json!({"recipient": CUSTOMER, "message": "Habari"})).await;
    assert_eq!(m["status"], "sent", "{m}");
    assert_eq!(m["gateway_message_id"], "wamid.X", "{m}");
    assert_eq!(m["recipient"], CUSTOMER);

    let bodies = sent_bodies(&server).await;
    assert_eq!(bodies.len(), 1, "one call: {bodies:?}");
    let body = &bodies[0];
    assert_eq!(body["messaging_product"], "whatsapp", "{body}");
    assert_eq!(body["recipient_type"], "individual", "{body}");
    assert_eq!(body["to"], "255712340000", "digits only: {body}");
    assert_eq!(body["type"], "text", "{body}");
    assert_eq!(body["text"]["body"], "Habari", "{body}");
    assert!(body.get("context").is_none(), "not a reply: {body}");

    let uid = str_of(&m, "uid").to_owned();
    let stored = read_chat(&app, duka.key(), &uid).await;
    assert_eq!(stored["status"], "sent");
    assert_eq!(stored["channel_type"], "chat");
    assert_eq!(stored["sender"], PHONE_ID);
    assert_eq!(stored["gateway_message_id"], "wamid.X");

    let hook = duka.hook();
    let res = deliver(&app, &hook, Some(APP_SECRET), &status("wamid.X", "delivered")).await;
    assert_status(&res, 200);
    let stored = read_chat(&app, duka.key(), &uid).await;
    assert_eq!(stored["status"], "delivered", "{stored}");
    time_of(&stored, "delivered_at");
    assert_eq!(stored["read_at"], Value::Null, "{stored}");

    let res = deliver(&app, &hook, Some(APP_SECRET), &status("wamid.X", "read")).await;
    assert_status(&res, 200);
    let stored = read_chat(&app, duka.key(), &uid).await;
    assert_eq!(stored["status"], "read", "{stored}");
    time_of(&stored, "read_at");
    time_of(&stored, "delivered_at");
    assert_eq!(sent_bodies(&server).await.len(), 1, "receipts call nothing");
}

#[actix_web::test]
async fn a_cloud_api_refusal_fails_the_message_and_refunds_it() {
    let app = spawn().await;
    let refusal = json!({"error": {
        "message": "Re-engagement message",
        "type": "OAuthException",
        "code": 131047,
        "error_data": {
            "messaging_product": "whatsapp",
            "details": "Message failed to send because more than 24 hours have passed since the customer last replied to this number.",
        },
    }});
    let server = graph(ResponseTemplate::new(400).set_body_json(refusal)).await;
    let duka = cloud_account(&app, "all", &server.uri()).await;
    let before = balance(&app, duka.key()).await;

    let m = send_one(&app, duka.key(), json!({"recipient": CUSTOMER, "message": "Habari"})).await;
    assert_eq!(m["status"], "failed", "{m}");
    let error = str_of(&m, "error_message");
    assert!(error.contains("131047"), "{m}");
    assert_eq!(m["gateway_message_id"], Value::Null, "{m}");
    assert_eq!(sent_bodies(&server).await.len(), 1, "the provider was asked once");

    let stored = read_chat(&app, duka.key(), str_of(&m, "uid")).await;
    assert_eq!(stored["status"], "failed", "{stored}");
    assert!(str_of(&stored, "error_message").contains("131047"), "{stored}");
    assert_eq!(balance(&app, duka.key()).await, before, "the wallet was refunded");
}

#[actix_web::test]
async fn templates_interactive_messages_and_replies_reach_the_cloud_api_in_its_shape() {
    let app = spawn().await;
    let server = graph(Accepts::default()).await;
    let duka = cloud_account(&app, "all", &server.uri()).await;

    let components = json!([
        {"type": "header", "parameters": [{"type": "image", "image": {"link": "https://duka.example/oda.png"}}]},
        {"type": "body", "parameters": [{"type": "text", "text": "Amina"}, {"type": "text", "text": "TZS 12,000"}]},
    ]);
    let template = send_one(
        &app,
        duka.key(),
        json!({"recipient": CUSTOMER, "template": {"name": "order_ready", "language": "sw", "components": components}}),
    )
    .await;
    assert_eq!(template["status"], "sent", "{template}");

    let interactive = json!({
        "type": "button",
        "body": {"text": "Umepokea oda yako?"},
        "action": {"buttons": [
            {"type": "reply", "reply": {"id": "yes", "title": "Ndiyo"}},
            {"type": "reply", "reply": {"id": "no", "title": "Hapana"}},
        ]},
    });
    let button = send_one(&app, duka.key(), json!({"recipient": CUSTOMER, "interactive": interactive})).await;
    assert_eq!(button["status"], "sent", "{button}");

    let reply = send_one(
        &app,
        duka.key(),
        json!({"recipient": CUSTOMER, "message": "Asante!", "in_reply_to_gateway_id": "wamid.HBgMMjU1NzEyMzQwMDAwFQIAEhgg"}),
    )
    .await;
    assert_eq!(reply["status"], "sent", "{reply}");

    let bodies = sent_bodies(&server).await;
    assert_eq!(bodies.len(), 3, "{bodies:?}");
    let (sent_template, sent_button, sent_reply) = (&bodies[0], &bodies[1], &bodies[2]);

    assert_eq!(sent_template["to"], "255712340000", "{sent_template}");
    assert_eq!(sent_template["type"], "template", "{sent_template}");
    assert_eq!(sent_template["template"]["name"], "order_ready", "{sent_template}");
    assert_eq!(sent_template["template"]["language"]["code"], "sw", "{sent_template}");
    assert_eq!(sent_template["template"]["components"], components, "forwarded as given: {sent_template}");
    assert!(sent_template.get("context").is_none(), "{sent_template}");

    assert_eq!(sent_button["type"], "interactive", "{sent_button}");
    assert_eq!(sent_button["interactive"], interactive, "as given: {sent_button}");
    assert_eq!(sent_button["to"], "255712340000");

    assert_eq!(sent_reply["type"], "text", "{sent_reply}");
    assert_eq!(sent_reply["text"]["body"], "Asante!", "{sent_reply}");
    assert_eq!(sent_reply["context"], json!({"message_id": "wamid.HBgMMjU1NzEyMzQwMDAwFQIAEhgg"}), "{sent_reply}");

    // each message keeps the id the provider gave it
    let ids: Vec<Value> = [&template, &button, &reply].iter().map(|m| m["gateway_message_id"].clone()).collect();
    assert_eq!(ids, [json!("wamid.X"), json!("wamid.X1"), json!("wamid.X2")]);
    for m in [&template, &button, &reply] {
        let stored = read_chat(&app, duka.key(), str_of(m, "uid")).await;
        assert_eq!(stored["status"], "sent", "{stored}");
        assert_eq!(stored["gateway_message_id"], m["gateway_message_id"], "{stored}");
    }
}
