//! Voice and calls (contract: Voice, Calls): every rule lives in `messaging::voice`; these
//! handlers read the body and wrap the answer.

use actix_web::{HttpResponse, web};
use kernel::page::PageQuery;
use kernel::{Page, PageRequest};
use messaging::voice::requests::{CallBody, OtpBody, OtpCall, VoiceCalls, VoiceMessageBody};
use messaging::voice::{CallFilter, CallRecord, CallRef};

use crate::AppState;
use crate::docs::{ErrorEnvelope, Refusals, Success};
use crate::http::{ApiError, Auth, Json, created, ok};

/// Call a number and read a one-time code to it, digit by digit, `repeat` times. Without
/// `code`, one of `length` digits is made and answered here, once.
#[utoipa::path(post, path = "/api/v3/voice/otp", operation_id = "voice_otp", tag = "Voice", request_body = OtpBody,
    responses((status = 201, body = Success<OtpCall>, description = "the call, queued; `code` is the code read out"),
        (status = 402, body = ErrorEnvelope, description = "the prepaid balance cannot hold the call's first minute"),
        (status = 422, body = ErrorEnvelope, description = "validation; no voice channel; an unknown `sender_id`"),
        Refusals),
    security(("bearer" = [])))]
pub async fn otp(auth: Auth, state: web::Data<AppState>, body: Json<OtpBody>) -> Result<HttpResponse, ApiError> {
    Ok(created(state.messaging.voice_otp(&auth.0, body.0).await?))
}

/// Call each number and speak a text (or play an audio file): one call per number.
#[utoipa::path(post, path = "/api/v3/voice/messages", operation_id = "voice_messages", tag = "Voice",
    request_body = VoiceMessageBody,
    responses((status = 201, body = Success<VoiceCalls>, description = "the calls, queued (or scheduled)"),
        (status = 402, body = ErrorEnvelope, description = "the prepaid balance cannot hold every call's first minute"),
        (status = 422, body = ErrorEnvelope, description = "validation; no voice channel; an unknown `sender_id`"),
        Refusals),
    security(("bearer" = [])))]
pub async fn messages(
    auth: Auth,
    state: web::Data<AppState>,
    body: Json<VoiceMessageBody>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.messaging.voice_messages(&auth.0, body.0).await?))
}

/// Call a number and connect it to an agent (`connect`) or run a menu (`ivr`), then ask for
/// feedback when `feedback` is given.
#[utoipa::path(post, path = "/api/v3/calls", operation_id = "create_call", tag = "Calls", request_body = CallBody,
    responses((status = 201, body = Success<CallRecord>, description = "the call, queued (or scheduled)"),
        (status = 402, body = ErrorEnvelope, description = "the prepaid balance cannot hold the call's first minute"),
        (status = 422, body = ErrorEnvelope, description = "validation; no voice channel; an unknown `sender_id`"),
        Refusals),
    security(("bearer" = [])))]
pub async fn create(auth: Auth, state: web::Data<AppState>, body: Json<CallBody>) -> Result<HttpResponse, ApiError> {
    Ok(created(state.messaging.place_call(&auth.0, body.0).await?))
}

/// The account's calls (voice OTPs, voice messages and calls), newest first.
#[utoipa::path(get, path = "/api/v3/calls", operation_id = "list_calls", tag = "Calls", params(PageQuery, CallFilter),
    responses((status = 200, body = Success<Page<CallRecord>>), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn list(
    auth: Auth,
    state: web::Data<AppState>,
    page: web::Query<PageQuery>,
    filter: web::Query<CallFilter>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, messaging::messages::PER_PAGE)?;
    Ok(ok(state.messaging.calls(&auth.0, &filter, page).await?))
}

/// One call, by numeric id or `call_…` uid.
#[utoipa::path(get, path = "/api/v3/calls/{uid}", operation_id = "get_call", tag = "Calls",
    params(("uid" = String, Path, description = "uid or numeric id")),
    responses((status = 200, body = Success<CallRecord>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get(auth: Auth, state: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.call(&auth.0, &kernel::parse_id::<CallRef>(&path, "Call")?).await?))
}
