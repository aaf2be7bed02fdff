//! Lead labels and custom fields (contract: Leads — `/lead-labels`, `/leads/{lead}/labels`,
//! `/lead-fields`). Every rule lives in `leads::LeadService`; these handlers parse and wrap.

use actix_web::{HttpResponse, web};
use kernel::parse_id;
use leads::fields::LeadField;
use leads::labels::{DeletedLabel, LabelNames, LabelPatch, LabelWithCount, LabelsAdded, LabelsRemoved, NewLabel};
use leads::{LabelId, LeadId};

use crate::AppState;
use crate::docs::{ErrorEnvelope, Refusals, Success};
use crate::http::{ApiError, Auth, Json, created, ok};

/// Every label of the workspace with how many leads carry it, by name.
#[utoipa::path(get, path = "/api/v3/lead-labels", tag = "Leads",
    responses((status = 200, body = Success<Vec<LabelWithCount>>), Refusals), security(("bearer" = [])))]
pub async fn list_labels(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.leads.labels(&auth.0).await?))
}

/// Create a label (`leads.settings`); names are unique in the workspace, any case.
#[utoipa::path(post, path = "/api/v3/lead-labels", tag = "Leads", request_body = NewLabel,
    responses((status = 201, body = Success<LabelWithCount>),
        (status = 409, body = ErrorEnvelope, description = "Another label has this name (any case); `errors` names `name`."),
        (status = 422, body = ErrorEnvelope, description = "invalid (in `reason`): a missing or long name, a colour that is not #RRGGBB, a long description"),
        Refusals), security(("bearer" = [])))]
pub async fn create_label(
    auth: Auth,
    state: web::Data<AppState>,
    body: Json<NewLabel>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.leads.create_label(&auth.0, body.0).await?))
}

/// Change a label's name, colour, description or `ai_assignable` (`leads.settings`).
#[utoipa::path(patch, path = "/api/v3/lead-labels/{label}", tag = "Leads", params(("label" = i64, Path)),
    request_body = LabelPatch,
    responses((status = 200, body = Success<LabelWithCount>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "Another label has this name (any case); `errors` names `name`."),
        (status = 422, body = ErrorEnvelope, description = "invalid (in `reason`)"), Refusals),
    security(("bearer" = [])))]
pub async fn update_label(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<LabelPatch>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.leads.update_label(&auth.0, parse_id::<LabelId>(&path, "Lead label")?, body.0).await?))
}

/// Delete a label (`leads.settings`); it goes from every lead that carried it.
#[utoipa::path(delete, path = "/api/v3/lead-labels/{label}", tag = "Leads", params(("label" = i64, Path)),
    responses((status = 200, body = Success<DeletedLabel>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn delete_label(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.leads.delete_label(&auth.0, parse_id::<LabelId>(&path, "Lead label")?).await?))
}

/// Put labels on a lead by name, any case; a name the workspace lacks is created when the key's
/// issuer holds `leads.settings`, otherwise it is listed in `refused`.
#[utoipa::path(post, path = "/api/v3/leads/{lead}/labels", tag = "Leads", params(("lead" = uuid::Uuid, Path)),
    request_body = LabelNames,
    responses((status = 200, body = Success<LabelsAdded>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope, description = "invalid (in `reason`)"), Refusals),
    security(("bearer" = [])))]
pub async fn add_labels(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<LabelNames>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.leads.add_lead_labels(&auth.0, parse_id::<LeadId>(&path, "Lead")?, body.0).await?))
}

/// Take labels off a lead by name, any case.
#[utoipa::path(delete, path = "/api/v3/leads/{lead}/labels", tag = "Leads", params(("lead" = uuid::Uuid, Path)),
    request_body = LabelNames,
    responses((status = 200, body = Success<LabelsRemoved>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope, description = "invalid (in `reason`)"), Refusals),
    security(("bearer" = [])))]
pub async fn remove_labels(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<LabelNames>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.leads.remove_lead_labels(&auth.0, parse_id::<LeadId>(&path, "Lead")?, body.0).await?))
}

/// The workspace's custom lead fields: keys, types and select option keys, by key.
#[utoipa::path(get, path = "/api/v3/lead-fields", tag = "Leads",
    responses((status = 200, body = Success<Vec<LeadField>>), Refusals), security(("bearer" = [])))]
pub async fn fields(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.leads.fields(&auth.0).await?))
}
