//! Automations (contract: Automations): three reads in their own envelopes, `{events, ...}`
//! paged with `before`, `{subscriptions}` and `{schedules}` with fixed caps; refusals in the
//! data family's shape. Subscriptions and schedules are made by the operator and MCP only.

use actix_web::{HttpResponse, web};
use automations::events::{EventLog, EventQuery};
use automations::schedules::Schedules;
use automations::subscriptions::Subscriptions;

use crate::AppState;
use crate::docs::{DataErrorEnvelope, Refusals};
use crate::http::Auth;
use crate::http::data::{DataError, ok};

/// The business-event log, newest first (50 a page, at most 100), older pages by `before`.
#[utoipa::path(get, path = "/api/v3/automations/events", operation_id = "list_business_events", tag = "Automations",
    params(EventQuery),
    responses((status = 200, body = EventLog), (status = 403, body = DataErrorEnvelope),
        (status = 422, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn events(
    auth: Auth,
    state: web::Data<AppState>,
    query: web::Query<EventQuery>,
) -> Result<HttpResponse, DataError> {
    Ok(ok(state.automations.events(&auth.0, &query).await?))
}

/// The workspace's subscriptions (at most 100, newest first), with their callbacks' counts.
#[utoipa::path(get, path = "/api/v3/automations/subscriptions", operation_id = "list_subscriptions", tag = "Automations",
    responses((status = 200, body = Subscriptions), (status = 403, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn subscriptions(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, DataError> {
    Ok(ok(state.automations.subscriptions(&auth.0).await?))
}

/// The workspace's schedules (at most 100, newest first).
#[utoipa::path(get, path = "/api/v3/automations/schedules", operation_id = "list_schedules", tag = "Automations",
    responses((status = 200, body = Schedules), (status = 403, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn schedules(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, DataError> {
    Ok(ok(state.automations.schedules(&auth.0).await?))
}
