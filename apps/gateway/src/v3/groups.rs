//! Chat groups (contract: Chat groups). Every rule lives in `messaging::chat::groups`; these
//! handlers parse and wrap.

use actix_web::{HttpResponse, web};
use kernel::page::PageQuery;
use kernel::{Page, PageRequest};
use messaging::chat::groups::members::{InviteLink, InviteRequest, JoinRequestsBody, RemoveParticipants};
use messaging::chat::groups::{
    ChatGroupPatch, Group, GroupCreate, GroupFilter, GroupMessage, GroupMessageSend, GroupPinRequest, Invited,
    JoinRequestView, JoinRequestsAnswer, Removed,
};

use crate::AppState;
use crate::docs::{ErrorEnvelope, Refusals, Success};
use crate::http::{ApiError, Auth, Json, created, ok};

fn group_id(path: &str) -> Result<i64, ApiError> {
    Ok(path.parse::<i64>().map_err(|_| kernel::Error::not_found("Chat group"))?)
}

/// Create a group on a business number: 201 with the group `creating`; it is `active` once the
/// provider confirms it (`group.created`), `failed` when the provider says it cannot be made.
#[utoipa::path(post, path = "/api/v3/chat/groups", operation_id = "chat_create_group", tag = "Chat groups",
    request_body = GroupCreate,
    responses((status = 201, body = Success<Group>),
        (status = 422, body = ErrorEnvelope, description = "validation; unknown sender; no chat account configured"),
        Refusals), security(("bearer" = [])))]
pub async fn create(auth: Auth, state: web::Data<AppState>, body: Json<GroupCreate>) -> Result<HttpResponse, ApiError> {
    Ok(created(state.messaging.create_group(&auth.0, body.0).await?))
}

/// The account's groups, newest first (20 a page, at most 100); deleted ones only when asked.
#[utoipa::path(get, path = "/api/v3/chat/groups", operation_id = "chat_groups", tag = "Chat groups",
    params(PageQuery, GroupFilter),
    responses((status = 200, body = Success<Page<Group>>), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn list(
    auth: Auth,
    state: web::Data<AppState>,
    page: web::Query<PageQuery>,
    filter: web::Query<GroupFilter>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, messaging::chat::groups::PER_PAGE)?;
    Ok(ok(state.messaging.groups(&auth.0, &filter, page).await?))
}

/// One group's state.
#[utoipa::path(get, path = "/api/v3/chat/groups/{id}", operation_id = "chat_group", tag = "Chat groups",
    params(("id" = i64, Path)),
    responses((status = 200, body = Success<Group>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get(auth: Auth, state: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.group(&auth.0, group_id(&path)?).await?))
}

/// Change the subject and/or description (on the provider too).
#[utoipa::path(patch, path = "/api/v3/chat/groups/{id}", operation_id = "chat_update_group", tag = "Chat groups",
    params(("id" = i64, Path)), request_body = ChatGroupPatch,
    responses((status = 200, body = Success<Group>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "the group is not active"),
        (status = 422, body = ErrorEnvelope), (status = 502, body = ErrorEnvelope, description = "the provider refused"),
        Refusals), security(("bearer" = [])))]
pub async fn update(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<ChatGroupPatch>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.update_group(&auth.0, group_id(&path)?, body.0).await?))
}

/// Delete a group: answers its state (`deleted`).
#[utoipa::path(delete, path = "/api/v3/chat/groups/{id}", operation_id = "chat_delete_group", tag = "Chat groups",
    params(("id" = i64, Path)),
    responses((status = 200, body = Success<Group>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "the group is still being created"),
        (status = 502, body = ErrorEnvelope, description = "the provider refused"), Refusals),
    security(("bearer" = [])))]
pub async fn delete(auth: Auth, state: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.delete_group(&auth.0, group_id(&path)?).await?))
}

/// Send the invite link to 1 to 7 people: who was sent it, and who was not.
#[utoipa::path(post, path = "/api/v3/chat/groups/{id}/invites", operation_id = "chat_group_invite", tag = "Chat groups",
    params(("id" = i64, Path)), request_body = InviteRequest,
    responses((status = 200, body = Success<Invited>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "the group is not active"),
        (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn invite(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<InviteRequest>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.invite_to_group(&auth.0, group_id(&path)?, body.0).await?))
}

/// Replace the invite link: the old one stops working.
#[utoipa::path(post, path = "/api/v3/chat/groups/{id}/invite-link/reset", operation_id = "chat_group_reset_link",
    tag = "Chat groups", params(("id" = i64, Path)),
    responses((status = 200, body = Success<InviteLink>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "the group is not active"),
        (status = 502, body = ErrorEnvelope, description = "the provider refused"), Refusals),
    security(("bearer" = [])))]
pub async fn reset_link(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.reset_group_invite_link(&auth.0, group_id(&path)?).await?))
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct JoinRequests {
    pub items: Vec<JoinRequestView>,
}

/// The pending requests to join, oldest first.
#[utoipa::path(get, path = "/api/v3/chat/groups/{id}/join-requests", operation_id = "chat_group_join_requests",
    tag = "Chat groups", params(("id" = i64, Path)),
    responses((status = 200, body = Success<JoinRequests>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn join_requests(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(JoinRequests { items: state.messaging.group_join_requests(&auth.0, group_id(&path)?).await? }))
}

/// Approve join requests: each approved person joins at once, within the group's eight.
#[utoipa::path(post, path = "/api/v3/chat/groups/{id}/join-requests/approve", operation_id = "chat_group_approve",
    tag = "Chat groups", params(("id" = i64, Path)), request_body = JoinRequestsBody,
    responses((status = 200, body = Success<JoinRequestsAnswer>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "the group is not active"),
        (status = 422, body = ErrorEnvelope), (status = 502, body = ErrorEnvelope, description = "the provider refused"),
        Refusals), security(("bearer" = [])))]
pub async fn approve(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<JoinRequestsBody>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.answer_group_join_requests(&auth.0, group_id(&path)?, body.0, true).await?))
}

/// Reject join requests.
#[utoipa::path(post, path = "/api/v3/chat/groups/{id}/join-requests/reject", operation_id = "chat_group_reject",
    tag = "Chat groups", params(("id" = i64, Path)), request_body = JoinRequestsBody,
    responses((status = 200, body = Success<JoinRequestsAnswer>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "the group is not active"),
        (status = 422, body = ErrorEnvelope), (status = 502, body = ErrorEnvelope, description = "the provider refused"),
        Refusals), security(("bearer" = [])))]
pub async fn reject(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<JoinRequestsBody>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.answer_group_join_requests(&auth.0, group_id(&path)?, body.0, false).await?))
}

/// Remove 1 to 8 participants.
#[utoipa::path(delete, path = "/api/v3/chat/groups/{id}/participants", operation_id = "chat_group_remove_participants",
    tag = "Chat groups", params(("id" = i64, Path)), request_body = RemoveParticipants,
    responses((status = 200, body = Success<Removed>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "the group is not active"),
        (status = 422, body = ErrorEnvelope), (status = 502, body = ErrorEnvelope, description = "the provider failed"),
        Refusals), security(("bearer" = [])))]
pub async fn remove_participants(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<RemoveParticipants>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.remove_group_participants(&auth.0, group_id(&path)?, body.0).await?))
}

/// Write to the group: text, media or an approved template. A free-form message needs a
/// participant's message in the last 24 hours (422 `window_closed` otherwise).
#[utoipa::path(post, path = "/api/v3/chat/groups/{id}/messages", operation_id = "chat_group_message", tag = "Chat groups",
    params(("id" = i64, Path)), request_body = GroupMessageSend,
    responses((status = 201, body = Success<GroupMessage>, description = "the message, `failed` when the provider refused it"),
        (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "the group is not active, or suspended"),
        (status = 422, body = ErrorEnvelope, description = "validation; free-form message outside the group's 24-hour window"),
        Refusals), security(("bearer" = [])))]
pub async fn message(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<GroupMessageSend>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.messaging.send_group_message(&auth.0, group_id(&path)?, body.0).await?))
}

/// Pin (or unpin) one of the group's messages.
#[utoipa::path(post, path = "/api/v3/chat/groups/{id}/pin", operation_id = "chat_group_pin", tag = "Chat groups",
    params(("id" = i64, Path)), request_body = GroupPinRequest,
    responses((status = 200, body = Success<GroupMessage>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "the group is not active"),
        (status = 422, body = ErrorEnvelope), (status = 502, body = ErrorEnvelope, description = "the provider refused"),
        Refusals), security(("bearer" = [])))]
pub async fn pin(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<GroupPinRequest>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.pin_group_message(&auth.0, group_id(&path)?, body.0).await?))
}
