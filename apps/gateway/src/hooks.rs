//! `/hooks/...`: provider callbacks. They carry no API key: the channel's secret token in the
//! path is what authenticates them (an unknown token answers 404), and they are not rate
//! limited, since a provider replays receipts in bursts.

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
