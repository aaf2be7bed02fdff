//! Named operations (contract: "Operations: one write operation that runs a named operation
//! defined by the workspace"; path and payload not shown, chosen here): the workspace's
//! operations and their input schemas, the run, and a run read back. `operations.run` from a
//! known, active issuer; each step also needs its own route's permission.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use automations::operations::{Operation, Run, RunBody};
use kernel::parse_id;

use crate::AppState;
use crate::docs::{ErrorEnvelope, Refusals, Success};
use crate::http::{ApiError, Auth, Json, idempotency, ok};

/// The workspace's operations by name, each with its definition and input schema.
#[utoipa::path(get, path = "/api/v3/operations", operation_id = "list_operations", tag = "Operations",
    responses((status = 200, body = Success<Vec<Operation>>), (status = 403, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn list(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.automations.operations(&auth.0).await?))
}

/// One operation: its definition and the JSON Schema of the input a run takes.
#[utoipa::path(get, path = "/api/v3/operations/{name}", operation_id = "get_operation", tag = "Operations",
    params(("name" = String, Path)),
    responses((status = 200, body = Success<Operation>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get(auth: Auth, state: web::Data<AppState>, name: web::Path<String>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.automations.operation(&auth.0, &name).await?))
}

/// Runs the operation: the input checked (422 naming `input.<name>`, and no run made), the
/// steps in order; a failing step undoes the finished ones in reverse and answers its own
/// error with `reason: step_failed` and the recorded `run`.
#[utoipa::path(post, path = "/api/v3/operations/{name}/runs", operation_id = "run_operation", tag = "Operations",
    params(("name" = String, Path),
        ("Idempotency-Key" = Option<String>, Header, description = "answers the first run for 24 hours")),
    request_body = RunBody,
    responses((status = 201, body = Success<Run>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn run(
    auth: Auth,
    state: web::Data<AppState>,
    request: HttpRequest,
    name: web::Path<String>,
    body: Json<RunBody>,
) -> Result<HttpResponse, ApiError> {
    let key = idempotency::key_of(&request)?;
    let run = state.automations.run_operation(&auth.0, &name, body.0, key).await?;
    Ok(idempotency::answer(StatusCode::CREATED, run))
}

/// A run: its input, each step with its result or error and timing, and its outcome.
#[utoipa::path(get, path = "/api/v3/operations/runs/{run}", operation_id = "get_operation_run", tag = "Operations",
    params(("run" = uuid::Uuid, Path)),
    responses((status = 200, body = Success<Run>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get_run(auth: Auth, state: web::Data<AppState>, run: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let run = parse_id(&run, "Run")?;
    Ok(ok(state.automations.operation_run(&auth.0, run).await?))
}
