//! Leads (contract: Leads). Every rule lives in `leads::LeadService`; these handlers parse,
//! wrap, and keep the `Idempotency-Key` replay of the upsert.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use kernel::page::{PageQuery, TimelineQuery};
use kernel::parse_id;
use kernel::{Page, PageRequest};
use leads::list::LeadFilter;
use leads::ops::{Activities, Assignment, LeadPatch, NewNote, Note};
use leads::stage::StageChange;
use leads::{Lead, LeadId, UpsertLead, Upserted};
use store::idempotency::Answer;

use crate::AppState;
use crate::docs::{ErrorEnvelope, Refusals, Success};
use crate::http::{ApiError, Auth, Json, created, idempotency, ok};

/// Create or update the lead of a person found by phone (any common form) or email.
#[utoipa::path(post, path = "/api/v3/leads", tag = "Leads", request_body = UpsertLead,
    params(("Idempotency-Key" = Option<String>, Header, description = "replays the first answer for 24 hours")),
    responses((status = 201, body = Success<Upserted>, description = "a lead was created"),
        (status = 200, body = Success<Upserted>, description = "an existing lead was updated"),
        (status = 409, body = ErrorEnvelope, description = "won_locked, or the person's lead is not visible to the key's issuer"),
        (status = 422, body = ErrorEnvelope, description = "invalid, reason_required or nothing_to_identify (in `reason`)"),
        Refusals), security(("bearer" = [])))]
pub async fn upsert(
    auth: Auth,
    state: web::Data<AppState>,
    request: HttpRequest,
    body: Json<UpsertLead>,
) -> Result<HttpResponse, ApiError> {
    let key = idempotency::key_of(&request)?;
    let answer = state.leads.upsert(&auth.0, body.0, key).await?;
    let created = match &answer {
        Answer::Done(upserted) => upserted.created,
        Answer::Replay(first) => first["created"] == true,
    };
    Ok(idempotency::answer(if created { StatusCode::CREATED } else { StatusCode::OK }, answer))
}

/// One lead, with the person's identities and a possible duplicate.
#[utoipa::path(get, path = "/api/v3/leads/{lead}", operation_id = "get_lead", tag = "Leads", params(("lead" = uuid::Uuid, Path)),
    responses((status = 200, body = Success<Lead>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get(auth: Auth, state: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.leads.get(&auth.0, parse_id::<LeadId>(&path, "Lead")?).await?))
}

/// Move a lead to any stage, reopening included; `lost` and `unqualified` need a reason.
#[utoipa::path(post, path = "/api/v3/leads/{lead}/stage", tag = "Leads", params(("lead" = uuid::Uuid, Path)),
    request_body = StageChange,
    responses((status = 200, body = Success<Lead>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope, description = "invalid or reason_required (in `reason`)"), Refusals),
    security(("bearer" = [])))]
pub async fn stage(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<StageChange>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.leads.set_stage(&auth.0, parse_id::<LeadId>(&path, "Lead")?, body.0).await?))
}

/// The leads the issuer may see, newest activity first (20 per page by default); open ones
/// unless `status` says otherwise.
#[utoipa::path(get, path = "/api/v3/leads", operation_id = "list_leads", tag = "Leads", params(PageQuery, LeadFilter),
    responses((status = 200, body = Success<Page<Lead>>), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn list(
    auth: Auth,
    state: web::Data<AppState>,
    page: web::Query<PageQuery>,
    filter: web::Query<LeadFilter>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, leads::list::PER_PAGE)?;
    Ok(ok(state.leads.list(&auth.0, &filter, page).await?))
}

/// Change fields (null clears), archive or restore.
#[utoipa::path(patch, path = "/api/v3/leads/{lead}", operation_id = "update_lead", tag = "Leads", params(("lead" = uuid::Uuid, Path)),
    request_body = LeadPatch,
    responses((status = 200, body = Success<Lead>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "won_locked"), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn update(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<LeadPatch>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.leads.update(&auth.0, parse_id::<LeadId>(&path, "Lead")?, body.0).await?))
}

/// Delete a lead; `lead.deleted` carries its last state.
#[utoipa::path(delete, path = "/api/v3/leads/{lead}", operation_id = "delete_lead", tag = "Leads", params(("lead" = uuid::Uuid, Path)),
    responses((status = 200, body = Success<Lead>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn delete(auth: Auth, state: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.leads.delete(&auth.0, parse_id::<LeadId>(&path, "Lead")?).await?))
}

/// Add a note to the lead's timeline.
#[utoipa::path(post, path = "/api/v3/leads/{lead}/notes", tag = "Leads", params(("lead" = uuid::Uuid, Path)),
    request_body = NewNote,
    responses((status = 201, body = Success<Note>), (status = 404, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn add_note(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<NewNote>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.leads.add_note(&auth.0, parse_id::<LeadId>(&path, "Lead")?, body.0).await?))
}

/// Assign the lead to a user of the workspace, or to the pool with `user_id: null`.
#[utoipa::path(post, path = "/api/v3/leads/{lead}/assign", tag = "Leads", params(("lead" = uuid::Uuid, Path)),
    request_body = Assignment,
    responses((status = 200, body = Success<Lead>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope, description = "assignee_unknown"), Refusals),
    security(("bearer" = [])))]
pub async fn assign(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<Assignment>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.leads.assign(&auth.0, parse_id::<LeadId>(&path, "Lead")?, body.0).await?))
}

/// The lead's timeline, newest first, 50 a page (`before` = `next_before`).
#[utoipa::path(get, path = "/api/v3/leads/{lead}/activities", tag = "Leads",
    params(("lead" = uuid::Uuid, Path), TimelineQuery),
    responses((status = 200, body = Success<Activities>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn activities(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    query: web::Query<TimelineQuery>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.leads.activities(&auth.0, parse_id::<LeadId>(&path, "Lead")?, &query).await?))
}
