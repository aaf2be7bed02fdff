//! Voice, calls and call campaigns (contract: Voice, Calls, Call campaigns): every rule lives in `messaging::voice`; these
//! handlers read the body and wrap the answer.

use actix_web::{HttpResponse, web};
use kernel::page::PageQuery;
use kernel::{Page, PageRequest};
use messaging::voice::campaigns::{Action, CallCampaign, CallCampaignBody, CallCampaignRef};
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

/// Call a contact group with a voice message or a menu, at a calling rate, within calling
/// hours, trying busy and unanswered numbers again.
#[utoipa::path(post, path = "/api/v3/call-campaigns", operation_id = "create_call_campaign", tag = "Call campaigns",
    request_body = CallCampaignBody,
    responses((status = 201, body = Success<CallCampaign>, description = "the campaign, its targets written"),
        (status = 404, body = ErrorEnvelope, description = "the contact group is not one of the account's active groups"),
        (status = 422, body = ErrorEnvelope, description = "validation; no voice channel; an unknown `sender_id`"),
        Refusals),
    security(("bearer" = [])))]
pub async fn create_campaign(
    auth: Auth,
    state: web::Data<AppState>,
    body: Json<CallCampaignBody>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.messaging.create_call_campaign(&auth.0, body.0).await?))
}

/// The account's call campaigns, newest first.
#[utoipa::path(get, path = "/api/v3/call-campaigns", operation_id = "list_call_campaigns", tag = "Call campaigns",
    params(PageQuery),
    responses((status = 200, body = Success<Page<CallCampaign>>), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn list_campaigns(
    auth: Auth,
    state: web::Data<AppState>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, messaging::messages::PER_PAGE)?;
    Ok(ok(state.messaging.call_campaigns(&auth.0, page).await?))
}

/// One call campaign, by numeric id or `ccmp_…` uid.
#[utoipa::path(get, path = "/api/v3/call-campaigns/{uid}", operation_id = "get_call_campaign", tag = "Call campaigns",
    params(("uid" = String, Path, description = "uid or numeric id")),
    responses((status = 200, body = Success<CallCampaign>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get_campaign(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let campaign = kernel::parse_id::<CallCampaignRef>(&path, "Call campaign")?;
    Ok(ok(state.messaging.call_campaign(&auth.0, &campaign).await?))
}

/// Pause (`scheduled` or `running`), resume (`paused`) or cancel (not ended) a call campaign;
/// 409 from any other status. Calls already live finish.
#[utoipa::path(post, path = "/api/v3/call-campaigns/{uid}/{action}", operation_id = "call_campaign_action",
    tag = "Call campaigns",
    params(("uid" = String, Path, description = "uid or numeric id"),
        ("action" = String, Path, description = "`pause`, `resume` or `cancel`", pattern = "^(pause|resume|cancel)$")),
    responses((status = 200, body = Success<CallCampaign>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "the campaign's status does not allow it"), Refusals),
    security(("bearer" = [])))]
pub async fn campaign_action(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (campaign, action) = path.into_inner();
    let campaign = kernel::parse_id::<CallCampaignRef>(&campaign, "Call campaign")?;
    let action = Action::parse(&action).ok_or_else(|| kernel::Error::not_found("Route"))?;
    Ok(ok(state.messaging.call_campaign_action(&auth.0, &campaign, action).await?))
}
