//! Chat messaging (issue 17): business accounts, sends of every type, conversations and the
//! 24-hour window, and the provider's signed webhook, through HTTP against PostgreSQL with the
//! sandbox chat provider (and the Cloud API client against a local fake).

mod accounts;
pub(crate) mod cloud;
mod forms;
mod groups;
mod orders;
mod send;
mod templates;
mod webhook;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::test::TestRequest;
use api_tests::{Account, Resp, TestApp};
use kernel::TenantId;
use messaging::chat::{NewChatAccount, NewPhoneNumber};
use serde_json::{Value, json};

pub const SEND: &str = "/api/v3/chat/send";
pub const APP_SECRET: &str = "test-app-secret";
pub const VERIFY_TOKEN: &str = "test-verify-token";
pub const WABA: &str = "102290129340398";
/// The business number's provider id, and the number.
pub const PHONE_ID: &str = "106540352242922";
pub const BUSINESS: &str = "+255222000111";

/// A valid Tanzanian mobile number ending in the four digits given (the sandbox decides on
/// those: `0001` refused, `0002` no receipt, `0003` failed, `0004` never read, `0005` outside
/// the window), as a customer's chat id (digits only).
pub fn chat_id(last4: &str) -> String {
    format!("25571234{last4}")
}

pub fn e164(last4: &str) -> String {
    format!("+{}", chat_id(last4))
}

/// A tenant with a sandbox chat account (one number, the default), 10,000.00 in the wallet.
pub struct ChatAccount {
    pub account: Account,
    /// The webhook's path token.
    pub token: String,
}

impl ChatAccount {
    pub fn key(&self) -> &str {
        &self.account.key
    }

    pub fn tenant(&self) -> TenantId {
        self.account.tenant
    }

    pub fn hook(&self) -> String {
        format!("/hooks/chat/{}", self.token)
    }
}

pub async fn chat_account<S, B>(app: &TestApp<S>, permissions: &str) -> ChatAccount
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let account = app.account(permissions).await;
    let token = add_account(app, account.tenant, WABA, PHONE_ID, BUSINESS).await;
    let mut conn = app.conn().await;
    ::accounts::wallet::credit(&mut conn, account.tenant, 1_000_000, None).await.expect("credit");
    ChatAccount { account, token }
}

/// Adds a sandbox business account with one number; answers its webhook token.
pub async fn add_account<S, B>(app: &TestApp<S>, tenant: TenantId, waba: &str, phone_id: &str, number: &str) -> String
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let mut conn = app.conn().await;
    let new = NewChatAccount {
        waba_id: waba.into(),
        name: "Duka la Mama".into(),
        app_secret: Some(APP_SECRET.into()),
        verify_token: Some(VERIFY_TOKEN.into()),
        ..Default::default()
    };
    let added = messaging::chat::accounts::add(&mut conn, &app.keyring, tenant, new).await.expect("chat account");
    let phone = NewPhoneNumber {
        waba_id: waba.into(),
        phone_number_id: phone_id.into(),
        phone_number: number.into(),
        display: Some("Duka".into()),
        is_default: false,
    };
    messaging::chat::accounts::add_phone(&mut conn, tenant, "255", phone).await.expect("phone");
    added.webhook_token
}

/// A webhook delivery signed with `secret`, as the provider posts it.
pub async fn deliver<S, B>(app: &TestApp<S>, path: &str, secret: Option<&str>, body: &Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let raw = body.to_string();
    let mut req =
        TestRequest::post().uri(path).insert_header(("Content-Type", "application/json")).set_payload(raw.clone());
    if let Some(secret) = secret {
        req = req.insert_header(("X-Hub-Signature-256", providers::chat::sign(secret, raw.as_bytes())));
    }
    app.send(req).await
}

/// A delivery of the `messages` field with `value` members (statuses, messages...) merged in.
pub fn delivery(value: Value) -> Value {
    let mut v = json!({
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": BUSINESS.trim_start_matches('+'), "phone_number_id": PHONE_ID},
    });
    if let (Some(target), Some(members)) = (v.as_object_mut(), value.as_object()) {
        target.extend(members.clone());
    }
    json!({"object": "whatsapp_business_account", "entry": [{"id": WABA, "changes": [{"field": "messages", "value": v}]}]})
}

/// A status of one sent message.
pub fn status(wamid: &str, status: &str) -> Value {
    delivery(
        json!({"statuses": [{"id": wamid, "status": status, "timestamp": "1764230400", "recipient_id": chat_id("0000")}]}),
    )
}

/// A customer's text message.
pub fn text_from(customer: &str, wamid: &str, text: &str) -> Value {
    delivery(json!({
        "contacts": [{"profile": {"name": "Amina"}, "wa_id": customer}],
        "messages": [{"from": customer, "id": wamid, "timestamp": "1764230400", "type": "text", "text": {"body": text}}],
    }))
}
