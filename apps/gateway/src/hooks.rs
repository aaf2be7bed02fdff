//! `/hooks/...`: provider callbacks. They carry no API key: the channel's secret token in the
//! path is what authenticates them (an unknown token answers 404), and they are not rate
//! limited, since a provider replays receipts in bursts. The chat provider's deliveries are
//! signed besides (`X-Hub-Signature-256` with the account's app secret).

use actix_web::http::header::CONTENT_TYPE;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::json;

use crate::AppState;
use crate::docs::ErrorEnvelope;
use crate::http::{ApiError, ok};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/hooks/sms/{token}")
            .service(web::resource("/delivery").route(web::post().to(delivery)))
            .service(web::resource("/inbound").route(web::post().to(inbound))),
    );
    cfg.service(
        web::resource("/hooks/chat/{token}").route(web::get().to(chat_challenge)).route(web::post().to(chat_delivery)),
    );
    cfg.service(web::resource("/hooks/payments/{token}").route(web::post().to(payment_result)));
    cfg.service(web::resource("/hooks/voice/{token}").route(web::post().to(voice)));
}

/// The voice provider's callback (Africa's Talking's voice callback URL of the number): a live
/// call asks for its next actions (answered with the provider's XML), an ended one says how it
/// ended. Unknown calls are logged and answered with no actions.
#[utoipa::path(post, path = "/hooks/voice/{token}", operation_id = "voice_callback", tag = "Provider callbacks",
    params(("token" = String, Path, description = "the voice channel's callback secret")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "the next actions, as the provider's XML", content_type = "application/xml", body = String),
        (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn voice(
    state: web::Data<AppState>,
    req: HttpRequest,
    token: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let (content_type, answer) = state.messaging.voice_callback(&token, content_type(&req), &body).await?;
    Ok(HttpResponse::Ok().content_type(content_type).body(answer))
}

/// The mobile-money provider's result of a payment prompt (M-Pesa's STK callback). The token is
/// the payment's own callback secret, named in the URL the push gave the provider; a result is
/// taken only for the request that payment sent, and once.
#[utoipa::path(post, path = "/hooks/payments/{token}", operation_id = "payment_result", tag = "Provider callbacks",
    params(("token" = String, Path, description = "the payment's callback secret")),
    request_body(content = Object, description = "the provider's result, as M-Pesa's `Body.stkCallback`"),
    responses((status = 200, description = "`{ResultCode: 0, ResultDesc: \"Accepted\"}`, as Daraja expects"),
        (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn payment_result(
    state: web::Data<AppState>,
    token: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    state.payments.callback(&token, &body).await?;
    Ok(HttpResponse::Ok().json(json!({ "ResultCode": 0, "ResultDesc": "Accepted" })))
}

fn content_type(req: &HttpRequest) -> &str {
    req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default()
}

/// A provider's delivery report. Unknown and late receipts are logged and answered 200.
#[utoipa::path(post, path = "/hooks/sms/{token}/delivery", operation_id = "sms_delivery_report", tag = "Provider callbacks",
    params(("token" = String, Path, description = "the channel's callback secret")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "`data.outcome`: applied, late or unknown"),
        (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn delivery(
    state: web::Data<AppState>,
    req: HttpRequest,
    token: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let outcome = state.messaging.delivery_callback(&token, content_type(&req), &body).await?;
    Ok(ok(json!({ "outcome": outcome })))
}

/// A provider's incoming message; `STOP` and the other opt-out words blacklist the sender.
#[utoipa::path(post, path = "/hooks/sms/{token}/inbound", operation_id = "sms_inbound", tag = "Provider callbacks",
    params(("token" = String, Path, description = "the channel's callback secret")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "`data.uid`: the stored message"),
        (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn inbound(
    state: web::Data<AppState>,
    req: HttpRequest,
    token: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let message = state.messaging.inbound_callback(&token, content_type(&req), &body).await?;
    Ok(ok(json!({ "id": message.id, "uid": message.uid })))
}

/// The verification request of the provider's webhook subscription (`hub.*` query members).
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Challenge {
    /// `subscribe`.
    #[serde(rename = "hub.mode")]
    #[param(rename = "hub.mode")]
    pub mode: Option<String>,
    /// The account's verify token.
    #[serde(rename = "hub.verify_token")]
    #[param(rename = "hub.verify_token")]
    pub verify_token: Option<String>,
    /// Echoed back when the token matches.
    #[serde(rename = "hub.challenge")]
    #[param(rename = "hub.challenge")]
    pub challenge: Option<String>,
}

/// The chat provider checks the webhook: the challenge comes back as plain text when the
/// verify token is the account's.
#[utoipa::path(get, path = "/hooks/chat/{token}", operation_id = "chat_webhook_verify", tag = "Provider callbacks",
    params(("token" = String, Path, description = "the chat account's webhook secret"), Challenge),
    responses((status = 200, body = String, content_type = "text/plain", description = "the challenge"),
        (status = 403, body = ErrorEnvelope), (status = 404, body = ErrorEnvelope)))]
pub async fn chat_challenge(
    state: web::Data<AppState>,
    token: web::Path<String>,
    query: web::Query<Challenge>,
) -> Result<HttpResponse, ApiError> {
    let challenge = state
        .messaging
        .chat_challenge(&token, query.mode.as_deref(), query.verify_token.as_deref(), query.challenge.as_deref())
        .await?;
    Ok(HttpResponse::Ok().content_type("text/plain; charset=utf-8").body(challenge))
}

/// A delivery of the chat provider's webhook: statuses, customers' messages, echoes, quality
/// changes. Verified by `X-Hub-Signature-256`; replays change nothing twice.
#[utoipa::path(post, path = "/hooks/chat/{token}", operation_id = "chat_webhook_delivery", tag = "Provider callbacks",
    params(("token" = String, Path, description = "the chat account's webhook secret"),
        ("X-Hub-Signature-256" = String, Header, description = "`sha256=` and the hex HMAC-SHA256 of the body under the app secret")),
    request_body(content = Object, content_type = "application/json"),
    responses((status = 200, body = messaging::chat::webhook::WebhookOutcome, description = "`data`: what the delivery did"),
        (status = 401, body = ErrorEnvelope, description = "the signature does not hold"),
        (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope)))]
pub async fn chat_delivery(
    state: web::Data<AppState>,
    req: HttpRequest,
    token: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let signature = req.headers().get("x-hub-signature-256").and_then(|v| v.to_str().ok());
    Ok(ok(state.messaging.chat_webhook(&token, signature, &body).await?))
}
