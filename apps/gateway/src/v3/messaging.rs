//! SMS messages and campaigns (contract: SMS), the message list and the blacklist. Every rule
//! lives in `messaging::MessagingService`; these handlers parse and wrap.

use actix_web::{HttpResponse, web};
use kernel::page::PageQuery;
use kernel::{Page, PageRequest};
use messaging::blacklist::{BlacklistAdd, BlacklistAdded, BlacklistEntry};
use messaging::campaigns::{Campaign, CampaignRef, CampaignRequest, CampaignsCreated};
use messaging::channels::Sender;
use messaging::{Message, MessageFilter, MessageRef, SendBody, SendResult};
use serde::Serialize;

use crate::AppState;
use crate::docs::{ErrorEnvelope, Refusals, Success};
use crate::http::{ApiError, Auth, Json, created, ok};

/// Send one SMS or many: one message per distinct recipient.
#[utoipa::path(post, path = "/api/v3/sms/send", tag = "SMS", request_body = SendBody,
    responses((status = 201, body = Success<SendResult>, description = "records created, including failed ones"),
        (status = 402, body = ErrorEnvelope, description = "the prepaid balance cannot pay for the whole send"),
        (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn send(auth: Auth, state: web::Data<AppState>, body: Json<SendBody>) -> Result<HttpResponse, ApiError> {
    Ok(created(state.messaging.send(&auth.0, body.0.0).await?))
}

/// One message, by uid or numeric id.
#[utoipa::path(get, path = "/api/v3/sms/{uid}", tag = "SMS",
    params(("uid" = String, Path, description = "uid or numeric id")),
    responses((status = 200, body = Success<Message>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get_message(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.message(&auth.0, &kernel::parse_id::<MessageRef>(&path, "Message")?).await?))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Senders {
    pub items: Vec<Sender>,
}

/// The account's usable sender identities; `value` is what to pass as `sender_id`.
#[utoipa::path(get, path = "/api/v3/sms/senders", tag = "SMS",
    responses((status = 200, body = Success<Senders>), Refusals), security(("bearer" = [])))]
pub async fn senders(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(ok(Senders { items: state.messaging.senders(&auth.0).await? }))
}

/// Messages of the account, newest first (20 per page by default).
#[utoipa::path(get, path = "/api/v3/messages", tag = "SMS", params(PageQuery, MessageFilter),
    responses((status = 200, body = Success<Page<Message>>), Refusals), security(("bearer" = [])))]
pub async fn list_messages(
    auth: Auth,
    state: web::Data<AppState>,
    page: web::Query<PageQuery>,
    filter: web::Query<MessageFilter>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, messaging::messages::PER_PAGE)?;
    Ok(ok(state.messaging.messages(&auth.0, &filter, page).await?))
}

/// Create one campaign per contact group named in `contact_list_id`.
#[utoipa::path(post, path = "/api/v3/sms/campaign", tag = "Campaigns", request_body = CampaignRequest,
    responses((status = 201, body = Success<CampaignsCreated>), (status = 404, body = ErrorEnvelope, description = "no contact group resolved"),
        (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn create_campaign(
    auth: Auth,
    state: web::Data<AppState>,
    body: Json<CampaignRequest>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.messaging.create_campaigns(&auth.0, body.0).await?))
}

/// One campaign, by uid or numeric id.
#[utoipa::path(get, path = "/api/v3/campaign/{uid}/view", tag = "Campaigns",
    params(("uid" = String, Path, description = "uid or numeric id")),
    responses((status = 200, body = Success<Campaign>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn view_campaign(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.campaign(&auth.0, &kernel::parse_id::<CampaignRef>(&path, "Campaign")?).await?))
}

/// Resume a paused campaign.
#[utoipa::path(post, path = "/api/v3/campaign/{uid}/resume", tag = "Campaigns",
    params(("uid" = String, Path, description = "uid or numeric id")),
    responses((status = 200, body = Success<Campaign>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "not paused"), Refusals), security(("bearer" = [])))]
pub async fn resume_campaign(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.resume_campaign(&auth.0, &kernel::parse_id::<CampaignRef>(&path, "Campaign")?).await?))
}

/// Cancel a campaign: messages not yet handed to the provider are not sent (and refunded).
#[utoipa::path(post, path = "/api/v3/campaign/{uid}/cancel", tag = "Campaigns",
    params(("uid" = String, Path, description = "uid or numeric id")),
    responses((status = 200, body = Success<Campaign>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "already completed or cancelled"), Refusals), security(("bearer" = [])))]
pub async fn cancel_campaign(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.cancel_campaign(&auth.0, &kernel::parse_id::<CampaignRef>(&path, "Campaign")?).await?))
}

/// Numbers that opted out, newest first.
#[utoipa::path(get, path = "/api/v3/sms/blacklist", tag = "SMS", params(PageQuery),
    responses((status = 200, body = Success<Page<BlacklistEntry>>), Refusals), security(("bearer" = [])))]
pub async fn blacklist(
    auth: Auth,
    state: web::Data<AppState>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, messaging::blacklist::PER_PAGE)?;
    Ok(ok(state.messaging.blacklist(&auth.0, page).await?))
}

/// Put numbers on the blacklist.
#[utoipa::path(post, path = "/api/v3/sms/blacklist", tag = "SMS", request_body = BlacklistAdd,
    responses((status = 201, body = Success<BlacklistAdded>), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn blacklist_add(
    auth: Auth,
    state: web::Data<AppState>,
    body: Json<BlacklistAdd>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.messaging.blacklist_add(&auth.0, body.0).await?))
}

/// Take a number off the blacklist.
#[utoipa::path(delete, path = "/api/v3/sms/blacklist/{number}", tag = "SMS",
    params(("number" = String, Path, description = "the number in any common form")),
    responses((status = 200, description = "`data.deleted`: true"), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn blacklist_remove(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    state.messaging.blacklist_remove(&auth.0, &path).await?;
    Ok(ok(serde_json::json!({ "deleted": true })))
}
