//! Webhooks management (contract: Webhooks management), with the delivery log, replay, recovery
//! and notifications this service adds. Every rule lives in `webhooks::WebhookService`.

use actix_web::{HttpResponse, web};
use kernel::page::PageQuery;
use kernel::{Error, Page, PageRequest, parse_id};
use webhooks::catalogue::Listing;
use webhooks::log::{Delivery, DeliveryFilter, Notification, Recover, Recovered, TestResult, TestSend};
use webhooks::{DeliveryId, NewWebhook, Webhook, WebhookId, WebhookPatch, WithSecret};

use crate::AppState;
use crate::docs::{ErrorEnvelope, Refusals, Success};
use crate::http::{ApiError, Auth, Json, created, ok};

/// A receiver id from the path; anything that is not one names no receiver.
fn webhook_id(raw: &str) -> Result<WebhookId, Error> {
    parse_id(raw, "Webhook")
}

fn delivery_id(raw: &str) -> Result<DeliveryId, Error> {
    parse_id(raw, "Delivery")
}

/// Every event a receiver can subscribe to, grouped, each with a sample body as delivered.
#[utoipa::path(get, path = "/api/v3/webhooks/events", tag = "Webhooks",
    responses((status = 200, body = Success<Listing>), Refusals), security(("bearer" = [])))]
pub async fn events(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.webhooks.events(&auth.0)?))
}

/// Register a receiver; the answer shows its signing secret, this once.
#[utoipa::path(post, path = "/api/v3/webhooks", operation_id = "create_webhook", tag = "Webhooks", request_body = NewWebhook,
    responses((status = 201, body = Success<WithSecret>), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn create(auth: Auth, state: web::Data<AppState>, body: Json<NewWebhook>) -> Result<HttpResponse, ApiError> {
    Ok(created(state.webhooks.create(&auth.0, body.0).await?))
}

/// The account's receivers, oldest first (20 per page by default).
#[utoipa::path(get, path = "/api/v3/webhooks", operation_id = "list_webhooks", tag = "Webhooks", params(PageQuery),
    responses((status = 200, body = Success<Page<Webhook>>), Refusals), security(("bearer" = [])))]
pub async fn list(
    auth: Auth,
    state: web::Data<AppState>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, webhooks::receivers::PER_PAGE)?;
    Ok(ok(state.webhooks.list(&auth.0, page).await?))
}

/// One receiver; header values are never shown.
#[utoipa::path(get, path = "/api/v3/webhooks/{webhook}", operation_id = "get_webhook", tag = "Webhooks", params(("webhook" = i64, Path)),
    responses((status = 200, body = Success<Webhook>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get(auth: Auth, state: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.webhooks.get(&auth.0, webhook_id(&path)?).await?))
}

/// Change a receiver: a header sent as null keeps its stored value; `headers` replaces the set.
#[utoipa::path(patch, path = "/api/v3/webhooks/{webhook}", operation_id = "update_webhook", tag = "Webhooks", params(("webhook" = i64, Path)),
    request_body = WebhookPatch,
    responses((status = 200, body = Success<Webhook>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn update(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<WebhookPatch>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.webhooks.update(&auth.0, webhook_id(&path)?, body.0).await?))
}

/// Delete a receiver and its delivery log.
#[utoipa::path(delete, path = "/api/v3/webhooks/{webhook}", operation_id = "delete_webhook", tag = "Webhooks", params(("webhook" = i64, Path)),
    responses((status = 200, body = Success<Webhook>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn delete(auth: Auth, state: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.webhooks.delete(&auth.0, webhook_id(&path)?).await?))
}

/// Send a signed sample marked `test: true` now; never retried, not logged.
#[utoipa::path(post, path = "/api/v3/webhooks/{webhook}/test", tag = "Webhooks", params(("webhook" = i64, Path)),
    request_body = TestSend,
    responses((status = 200, body = Success<TestResult>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn test(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<TestSend>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.webhooks.test(&auth.0, webhook_id(&path)?, body.0).await?))
}

/// A new signing secret, shown once; the old one signs nothing from now on.
#[utoipa::path(post, path = "/api/v3/webhooks/{webhook}/rotate-secret", tag = "Webhooks", params(("webhook" = i64, Path)),
    responses((status = 200, body = Success<WithSecret>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn rotate_secret(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.webhooks.rotate_secret(&auth.0, webhook_id(&path)?).await?))
}

/// The receiver's deliveries, newest first, each with its attempts (20 per page by default).
#[utoipa::path(get, path = "/api/v3/webhooks/{webhook}/deliveries", tag = "Webhooks",
    params(("webhook" = i64, Path), PageQuery, DeliveryFilter),
    responses((status = 200, body = Success<Page<Delivery>>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn deliveries(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    page: web::Query<PageQuery>,
    filter: web::Query<DeliveryFilter>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, webhooks::log::PER_PAGE)?;
    Ok(ok(state.webhooks.deliveries(&auth.0, webhook_id(&path)?, &filter, page).await?))
}

/// One delivery with its attempts.
#[utoipa::path(get, path = "/api/v3/webhooks/{webhook}/deliveries/{delivery}", operation_id = "get_delivery", tag = "Webhooks",
    params(("webhook" = i64, Path), ("delivery" = Uuid, Path)),
    responses((status = 200, body = Success<Delivery>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn delivery(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (webhook, delivery) = path.into_inner();
    Ok(ok(state.webhooks.delivery(&auth.0, webhook_id(&webhook)?, delivery_id(&delivery)?).await?))
}

/// Send a delivery's event again as a new delivery (same event id, new delivery id); resumes
/// a paused receiver.
#[utoipa::path(post, path = "/api/v3/webhooks/{webhook}/deliveries/{delivery}/replay", tag = "Webhooks",
    params(("webhook" = i64, Path), ("delivery" = Uuid, Path)),
    responses((status = 201, body = Success<Delivery>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "the delivery is still waiting for its next attempt"),
        Refusals), security(("bearer" = [])))]
pub async fn replay(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (webhook, delivery) = path.into_inner();
    Ok(created(state.webhooks.replay(&auth.0, webhook_id(&webhook)?, delivery_id(&delivery)?).await?))
}

/// Replay every failed delivery since a time and resume the receiver.
#[utoipa::path(post, path = "/api/v3/webhooks/{webhook}/recover", tag = "Webhooks", params(("webhook" = i64, Path)),
    request_body = Recover,
    responses((status = 200, body = Success<Recovered>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), Refusals), security(("bearer" = [])))]
pub async fn recover(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<Recover>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.webhooks.recover(&auth.0, webhook_id(&path)?, body.0).await?))
}

/// What pauses left for the account's webhook managers, newest first.
#[utoipa::path(get, path = "/api/v3/webhooks/notifications", tag = "Webhooks", params(PageQuery),
    responses((status = 200, body = Success<Page<Notification>>), Refusals), security(("bearer" = [])))]
pub async fn notifications(
    auth: Auth,
    state: web::Data<AppState>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, webhooks::log::PER_PAGE)?;
    Ok(ok(state.webhooks.notifications(&auth.0, page).await?))
}
