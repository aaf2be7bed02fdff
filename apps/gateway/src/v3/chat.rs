//! Chat messages (contract: Chat messages): sends, reads, business accounts and the inbox's
//! conversations. Every rule lives in `messaging::MessagingService`; these handlers parse and wrap.

use actix_web::{HttpResponse, web};
use kernel::page::PageQuery;
use kernel::{Page, PageRequest};
use messaging::chat::templates::{Deployed, SyncReport};
use messaging::chat::{
    ChatAccounts, ChatSendRequest, Conversation, ConversationFilter, ConversationWithMessages, Template,
    TemplateCreate, TemplateFilter, TemplatePatch,
};
use messaging::{Message, MessageRef, SendResult};

use crate::AppState;
use crate::docs::{ErrorEnvelope, Refusals, Success};
use crate::http::{ApiError, Auth, Json, created, ok};

/// Send a chat message (text, template, media, interactive or reaction) to one customer or many.
#[utoipa::path(post, path = "/api/v3/chat/send", operation_id = "chat_send", tag = "Chat", request_body = ChatSendRequest,
    responses((status = 201, body = Success<SendResult>,
            description = "records created, including failed ones (a provider refusal, such as a free-form message outside the 24-hour window)"),
        (status = 402, body = ErrorEnvelope, description = "the prepaid balance cannot pay for the whole send"),
        (status = 422, body = ErrorEnvelope, description = "validation; unknown sender; no chat account configured"),
        Refusals), security(("bearer" = [])))]
pub async fn send(
    auth: Auth,
    state: web::Data<AppState>,
    body: Json<ChatSendRequest>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.messaging.send_chat(&auth.0, body.0).await?))
}

/// One chat message, by uid or numeric id (an SMS one is not found here).
#[utoipa::path(get, path = "/api/v3/chat/{uid}", operation_id = "chat_get_message", tag = "Chat",
    params(("uid" = String, Path, description = "uid or numeric id")),
    responses((status = 200, body = Success<Message>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get_message(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.chat_message(&auth.0, &kernel::parse_id::<MessageRef>(&path, "Message")?).await?))
}

/// The account's chat business accounts, their numbers and the workspace default number.
#[utoipa::path(get, path = "/api/v3/chat/accounts", operation_id = "chat_accounts", tag = "Chat",
    responses((status = 200, body = Success<ChatAccounts>), Refusals), security(("bearer" = [])))]
pub async fn accounts(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.chat_accounts(&auth.0).await?))
}

/// Conversations, most recent first (20 per page by default).
#[utoipa::path(get, path = "/api/v3/chat/conversations", operation_id = "chat_conversations", tag = "Chat", params(PageQuery, ConversationFilter),
    responses((status = 200, body = Success<Page<Conversation>>), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn conversations(
    auth: Auth,
    state: web::Data<AppState>,
    page: web::Query<PageQuery>,
    filter: web::Query<ConversationFilter>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, messaging::chat::conversations::PER_PAGE)?;
    Ok(ok(state.messaging.conversations(&auth.0, &filter, page).await?))
}

/// One conversation with a page of its messages, newest first.
#[utoipa::path(get, path = "/api/v3/chat/conversations/{id}", operation_id = "chat_conversation", tag = "Chat",
    params(("id" = i64, Path, description = "the conversation's id"), PageQuery),
    responses((status = 200, body = Success<ConversationWithMessages>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn conversation(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let id = path.parse::<i64>().map_err(|_| kernel::Error::not_found("Conversation"))?;
    let page = PageRequest::parse(&page, messaging::messages::PER_PAGE)?;
    Ok(ok(state.messaging.conversation(&auth.0, id, page).await?))
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Templates {
    pub items: Vec<Template>,
}

/// The account's templates, by name and language; `updated_since` reads only what changed.
#[utoipa::path(get, path = "/api/v3/chat/templates", operation_id = "chat_templates", tag = "Chat templates",
    params(TemplateFilter),
    responses((status = 200, body = Success<Templates>), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn templates(
    auth: Auth,
    state: web::Data<AppState>,
    filter: web::Query<TemplateFilter>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(Templates { items: state.messaging.templates(&auth.0, &filter).await? }))
}

fn template_id(path: &str) -> Result<i64, ApiError> {
    Ok(path.parse::<i64>().map_err(|_| kernel::Error::not_found("Template"))?)
}

/// One template.
#[utoipa::path(get, path = "/api/v3/chat/templates/{id}", operation_id = "chat_template", tag = "Chat templates",
    params(("id" = i64, Path)),
    responses((status = 200, body = Success<Template>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn template(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.template(&auth.0, template_id(&path)?).await?))
}

/// Create a template and submit it for review (201 whatever the review says; `submit: false`
/// saves a draft).
#[utoipa::path(post, path = "/api/v3/chat/templates", operation_id = "chat_create_template", tag = "Chat templates",
    request_body = TemplateCreate,
    responses((status = 201, body = Success<Template>),
        (status = 409, body = ErrorEnvelope, description = "the account already has this name in this language"),
        (status = 422, body = ErrorEnvelope, description = "validation; several business accounts and no waba_id (the list in `waba_ids`)"),
        Refusals), security(("bearer" = [])))]
pub async fn create_template(
    auth: Auth,
    state: web::Data<AppState>,
    body: Json<TemplateCreate>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.messaging.create_template(&auth.0, body.0).await?))
}

/// Change a template: content or category changes go to review as an edit (held while a
/// review is ongoing); `name`, `language` and `waba_id` cannot change.
#[utoipa::path(patch, path = "/api/v3/chat/templates/{id}", operation_id = "chat_update_template", tag = "Chat templates",
    params(("id" = i64, Path)), request_body = TemplatePatch,
    responses((status = 200, body = Success<Template>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn update_template(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<TemplatePatch>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.update_template(&auth.0, template_id(&path)?, body.0).await?))
}

#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeleteQuery {
    /// Delete the row too (default: archive it).
    pub permanent: Option<bool>,
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct TemplateDeleted {
    pub id: i64,
    pub deleted: bool,
}

/// Remove this language from the provider and archive the template; `?permanent=true` deletes
/// the row too.
#[utoipa::path(delete, path = "/api/v3/chat/templates/{id}", operation_id = "chat_delete_template", tag = "Chat templates",
    params(("id" = i64, Path), DeleteQuery),
    responses((status = 200, body = Success<Template>, description = "the archived template, or `{id, deleted: true}`"),
        (status = 404, body = ErrorEnvelope), (status = 502, body = ErrorEnvelope, description = "the provider refused"),
        Refusals), security(("bearer" = [])))]
pub async fn delete_template(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    query: web::Query<DeleteQuery>,
) -> Result<HttpResponse, ApiError> {
    let id = template_id(&path)?;
    Ok(match state.messaging.delete_template(&auth.0, id, query.permanent.unwrap_or(false)).await? {
        Some(archived) => ok(archived),
        None => ok(TemplateDeleted { id, deleted: true }),
    })
}

/// Submit (or resubmit) a template: a draft, a rejected one, a queued one, or an edit held
/// during a review.
#[utoipa::path(post, path = "/api/v3/chat/templates/{id}/submit", operation_id = "chat_submit_template", tag = "Chat templates",
    params(("id" = i64, Path)),
    responses((status = 200, body = Success<Template>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "nothing to submit"), Refusals), security(("bearer" = [])))]
pub async fn submit_template(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.submit_template(&auth.0, template_id(&path)?).await?))
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Refresh {
    /// False when the provider does not have the template.
    pub found_on_chat: bool,
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct RefreshedTemplate {
    #[serde(flatten)]
    pub template: Template,
    pub refresh: Refresh,
}

/// Read the template's review state from the provider now (view permission).
#[utoipa::path(post, path = "/api/v3/chat/templates/{id}/refresh", operation_id = "chat_refresh_template", tag = "Chat templates",
    params(("id" = i64, Path)),
    responses((status = 200, body = Success<RefreshedTemplate>), (status = 404, body = ErrorEnvelope),
        (status = 502, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn refresh_template(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (template, found_on_chat) = state.messaging.refresh_template(&auth.0, template_id(&path)?).await?;
    Ok(ok(RefreshedTemplate { template, refresh: Refresh { found_on_chat } }))
}

#[derive(serde::Deserialize, utoipa::ToSchema, Default)]
pub struct SyncBody {
    /// One business account; every account when absent.
    pub waba_id: Option<String>,
}

/// Import the provider's templates and bring the stored ones up to date.
#[utoipa::path(post, path = "/api/v3/chat/templates/sync", operation_id = "chat_sync_templates", tag = "Chat templates",
    request_body = SyncBody,
    responses((status = 200, body = Success<SyncReport>), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn sync_templates(
    auth: Auth,
    state: web::Data<AppState>,
    body: Json<SyncBody>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.messaging.sync_templates(&auth.0, body.0.waba_id.as_deref()).await?))
}

#[derive(serde::Deserialize, utoipa::ToSchema)]
pub struct DeploymentsBody {
    /// The business accounts to add the template to; each gets its own row and review.
    pub waba_ids: Vec<String>,
}

/// Add the template to other business accounts.
#[utoipa::path(post, path = "/api/v3/chat/templates/{id}/deployments", operation_id = "chat_deploy_template", tag = "Chat templates",
    params(("id" = i64, Path)), request_body = DeploymentsBody,
    responses((status = 201, body = Success<Deployed>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn deploy_template(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<DeploymentsBody>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.messaging.deploy_template(&auth.0, template_id(&path)?, &body.0.waba_ids).await?))
}
