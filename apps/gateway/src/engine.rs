//! The `/api/engine` route tree (contract: agent tasks: the same API key, optional
//! `Idempotency-Key`, 202 queued, 200 synchronous that still needs a status check, progress by
//! polling; paths and payloads "not shown", chosen in docs/api.md, "Agent tasks"). Success
//! bodies are the run status objects themselves; refusals take the data family's shape
//! (`{error: {code, message, retryable}, message, code}`), as the run APIs people know do.

use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use agents::{Approval, Run, RunId, RunList, RunQuery, TaskBody};
use kernel::parse_id;
use serde_json::json;
use store::idempotency::Answer;

use crate::AppState;
use crate::docs::{DataErrorEnvelope, Refusals};
use crate::http::data::{DataError, ok};
use crate::http::{Auth, Json, idempotency};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api/engine")
            .wrap(actix_web::middleware::from_fn(crate::http::auth::authenticate_request))
            .service(web::resource("/tasks").route(web::post().to(submit)))
            .service(web::resource("/runs").route(web::get().to(list)))
            .service(web::resource("/runs/{run_uuid}").route(web::get().to(get)))
            .service(web::resource("/runs/{run_uuid}/cancel").route(web::post().to(cancel)))
            .service(web::resource("/runs/{run_uuid}/approval").route(web::post().to(approve)))
            .service(web::resource("/runs/{run_uuid}/events").route(web::get().to(events))),
    );
}

/// Submits a task: the run, queued (202); in `sync` mode the run once it ended or a bounded
/// wait passed (200; check its `status`). A repeated `Idempotency-Key` answers the first run.
#[utoipa::path(post, path = "/api/engine/tasks", operation_id = "submit_agent_task", tag = "Agent tasks",
    params(("Idempotency-Key" = Option<String>, Header, description = "answers the first run for 24 hours")),
    request_body = TaskBody,
    responses((status = 202, description = "queued", body = Run), (status = 200, description = "sync: the run as it stands", body = Run),
        (status = 402, body = DataErrorEnvelope), (status = 409, body = DataErrorEnvelope),
        (status = 422, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn submit(
    auth: Auth,
    state: web::Data<AppState>,
    request: HttpRequest,
    body: Json<TaskBody>,
) -> Result<HttpResponse, DataError> {
    let key = idempotency::key_of(&request).map_err(|e| DataError(e.0))?;
    let answer = state.agents.submit(&auth.0, body.0, key, None).await?;
    let sync = match &answer {
        Answer::Done(run) => run.mode == "sync",
        Answer::Replay(first) => first["mode"] == "sync",
    };
    let status = if sync { StatusCode::OK } else { StatusCode::ACCEPTED };
    let replay = answer.is_replay();
    let mut response = HttpResponse::build(status).json(answer);
    if replay {
        response.headers_mut().insert(HeaderName::from_static("x-idempotent-replay"), HeaderValue::from_static("1"));
    }
    Ok(response)
}

/// The account's runs, newest first (20 a page, at most 100), without their steps.
#[utoipa::path(get, path = "/api/engine/runs", operation_id = "list_agent_runs", tag = "Agent tasks",
    params(RunQuery),
    responses((status = 200, body = RunList), (status = 422, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn list(
    auth: Auth,
    state: web::Data<AppState>,
    query: web::Query<RunQuery>,
) -> Result<HttpResponse, DataError> {
    Ok(ok(state.agents.runs(&auth.0, &query).await?))
}

/// One run with every step: poll it until its `status` is no longer `queued` or `running`.
#[utoipa::path(get, path = "/api/engine/runs/{run_uuid}", operation_id = "get_agent_run", tag = "Agent tasks",
    params(("run_uuid" = uuid::Uuid, Path)),
    responses((status = 200, body = Run), (status = 404, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get(auth: Auth, state: web::Data<AppState>, run: web::Path<String>) -> Result<HttpResponse, DataError> {
    let run: RunId = parse_id(&run, "Run")?;
    Ok(ok(state.agents.run(&auth.0, run).await?))
}

/// Cancels a run that has not ended: it ends `cancelled` at once; a step under way finishes
/// and is recorded, nothing after it starts. 409 for a run that already ended.
#[utoipa::path(post, path = "/api/engine/runs/{run_uuid}/cancel", operation_id = "cancel_agent_run", tag = "Agent tasks",
    params(("run_uuid" = uuid::Uuid, Path)),
    responses((status = 200, body = Run), (status = 404, body = DataErrorEnvelope),
        (status = 409, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn cancel(auth: Auth, state: web::Data<AppState>, run: web::Path<String>) -> Result<HttpResponse, DataError> {
    let run: RunId = parse_id(&run, "Run")?;
    Ok(ok(state.agents.cancel(&auth.0, run).await?))
}

/// Answers the tool call a `requires_action` run waits on: `approve: true` runs it, `false`
/// tells the model it was denied (with `reason`); the run goes on either way. 409 otherwise.
#[utoipa::path(post, path = "/api/engine/runs/{run_uuid}/approval", operation_id = "approve_agent_run", tag = "Agent tasks",
    params(("run_uuid" = uuid::Uuid, Path)),
    request_body = Approval,
    responses((status = 200, body = Run), (status = 404, body = DataErrorEnvelope),
        (status = 409, body = DataErrorEnvelope), (status = 422, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn approve(
    auth: Auth,
    state: web::Data<AppState>,
    run: web::Path<String>,
    body: Json<Approval>,
) -> Result<HttpResponse, DataError> {
    let run: RunId = parse_id(&run, "Run")?;
    Ok(ok(state.agents.approve(&auth.0, run, body.0).await?))
}

/// How often the events stream looks at the run, and how long it stays open at most.
const EVENTS_EVERY: Duration = Duration::from_millis(250);
const EVENTS_FOR: Duration = Duration::from_secs(15 * 60);

/// The run's progress as server-sent events: `step` (a step as it starts and as it ends; its
/// `id` is the step's `seq`), `run` (the run without its steps, whenever its status changes),
/// and a last `run` once it ended or waits for an approval, after which the stream closes.
/// `Last-Event-ID: <seq>` resumes after that step.
#[utoipa::path(get, path = "/api/engine/runs/{run_uuid}/events", operation_id = "agent_run_events", tag = "Agent tasks",
    params(("run_uuid" = uuid::Uuid, Path),
        ("Last-Event-ID" = Option<i32>, Header, description = "resume after this step")),
    responses((status = 200, description = "text/event-stream of `step` and `run` events", content_type = "text/event-stream", body = AgentRunEvent),
        (status = 404, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn events(
    auth: Auth,
    state: web::Data<AppState>,
    request: HttpRequest,
    run: web::Path<String>,
) -> Result<HttpResponse, DataError> {
    let run: RunId = parse_id(&run, "Run")?;
    let after = match request.headers().get("Last-Event-ID") {
        None => 0,
        Some(value) => value.to_str().ok().and_then(|v| v.trim().parse::<i32>().ok()).ok_or_else(|| {
            kernel::Error::field("Last-Event-ID", "The Last-Event-ID is the seq of the last step event read.")
        })?,
    };
    // the first look answers a 404 as a refusal, before the stream starts
    let first = state.agents.progress(&auth.0, run, after).await?;
    let stream = Progress { service: state.agents.clone(), caller: auth.0, run, after, first: Some(first) }.stream();
    Ok(HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "text/event-stream"))
        .insert_header((CACHE_CONTROL, "no-cache"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(stream))
}

/// One event of the stream, as a reader of its lines sees it (the OpenAPI 3.1 way: the
/// `text/event-stream` schema describes each event).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // the stream writes these lines itself; this only describes them
struct AgentRunEvent {
    /// `step` or `run`.
    #[schema(pattern = "^(step|run)$")]
    event: String,
    /// The step (an `AgentStep`) or the run (an `AgentRun` without its steps) as JSON.
    data: String,
    /// On `step` events, the step's `seq`.
    id: Option<String>,
}

/// What the events stream has told so far.
struct Progress {
    service: agents::AgentService,
    caller: kernel::Caller,
    run: RunId,
    /// Steps up to this one have ended and been told.
    after: i32,
    first: Option<(Run, Vec<agents::Step>)>,
}

impl Progress {
    fn stream(self) -> impl futures_util::Stream<Item = Result<web::Bytes, actix_web::Error>> {
        let deadline = tokio::time::Instant::now() + EVENTS_FOR;
        let told = std::collections::HashMap::<i32, String>::new();
        futures_util::stream::unfold(Some((self, told, String::new())), move |state| async move {
            let (mut progress, mut told, mut status) = state?;
            let (run, steps) = match progress.first.take() {
                Some(first) => first,
                None => {
                    tokio::time::sleep(EVENTS_EVERY).await;
                    match progress.service.progress(&progress.caller, progress.run, progress.after).await {
                        Ok(seen) => seen,
                        Err(error) => {
                            let text = frame("error", None, &json!({"message": error.message}));
                            return Some((Ok(web::Bytes::from(text)), None));
                        }
                    }
                }
            };
            let mut out = String::new();
            for step in steps {
                if told.get(&step.seq) != Some(&step.status) {
                    told.insert(step.seq, step.status.clone());
                    let data = serde_json::to_value(&step).unwrap_or_default();
                    out.push_str(&frame("step", Some(step.seq), &data));
                }
                // a contiguous prefix of ended steps is not read again
                if step.finished_at.is_some() && step.seq == progress.after + 1 {
                    progress.after = step.seq;
                    told.remove(&step.seq);
                }
            }
            let ended = !matches!(run.status.as_str(), "queued" | "running");
            if run.status != status || ended {
                status = run.status.clone();
                out.push_str(&frame("run", None, &serde_json::to_value(&run).unwrap_or_default()));
            }
            if ended || tokio::time::Instant::now() >= deadline {
                return Some((Ok(web::Bytes::from(out)), None));
            }
            if out.is_empty() {
                // a comment keeps proxies from closing an idle stream
                out.push_str(": waiting\n\n");
            }
            Some((Ok(web::Bytes::from(out)), Some((progress, told, status))))
        })
    }
}

/// One server-sent event.
fn frame(event: &str, id: Option<i32>, data: &serde_json::Value) -> String {
    match id {
        Some(id) => format!("event: {event}\nid: {id}\ndata: {data}\n\n"),
        None => format!("event: {event}\ndata: {data}\n\n"),
    }
}
