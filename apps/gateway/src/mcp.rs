//! The MCP route tree (contract: MCP transport): `/mcp/v1/{server}` for each of the contract's
//! servers and `/mcp` for every tool, served by the `mcp` crate through `rmcp-actix-web`'s
//! streamable HTTP transport. Stateless (every POST stands alone, so any gateway answers any
//! request), with JSON answers unless the client asks for an event stream. The credential is checked here, before any JSON-RPC is read:
//! an `svc_mcp_` connection or an OAuth access token (crate::oauth), its scopes and its
//! issuer's current permissions, read afresh on every request; a REST key is refused with 401.

use std::sync::Arc;

use ::mcp::{Catalog, Grant, McpCaller, McpServer, SERVERS, Server};
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::http::header::{ACCEPT, AUTHORIZATION, RETRY_AFTER, WWW_AUTHENTICATE};
use actix_web::middleware::{Next, from_fn};
use actix_web::{HttpMessage, HttpRequest, HttpResponse, guard, web};
use kernel::{Error, ErrorKind};
use rmcp_actix_web::transport::{Extensions, LocalSessionManager, StreamableHttpService};
use serde_json::json;

use crate::AppState;

/// Mounts every server, the specific paths first: `/mcp` is a prefix of them. Each path has
/// two transports: an event stream for a client that asks for one, JSON for everyone else.
pub fn configure(cfg: &mut web::ServiceConfig, catalog: &Arc<Catalog>, public_url: &str) {
    let paths = SERVERS.iter().map(|server| (Some(server), server.path)).chain([(None, "/mcp")]);
    for (server, path) in paths {
        for answers in [Answers::EventStream, Answers::Json] {
            let scope = transport(catalog, server, public_url, answers).scope_with_path(path);
            let scope = match answers {
                Answers::EventStream => scope.guard(guard::fn_guard(|ctx| prefers_event_stream(ctx.head()))),
                Answers::Json => scope,
            };
            cfg.service(scope.wrap(from_fn(authenticate)));
        }
    }
}

/// How a transport answers a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answers {
    Json,
    EventStream,
}

/// Whether `Accept` ranks `text/event-stream` above `application/json`: a higher `q`, or the
/// same `q` and listed first.
fn prefers_event_stream(head: &actix_web::dev::RequestHead) -> bool {
    let accept = head.headers().get(ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let rank = |wanted: &str| {
        accept.split(',').enumerate().find_map(|(at, item)| {
            let mut parts = item.split(';').map(str::trim);
            let media = parts.next()?;
            let q = parts.find_map(|p| p.strip_prefix("q=")).and_then(|q| q.parse::<f32>().ok()).unwrap_or(1.0);
            media.eq_ignore_ascii_case(wanted).then_some((q, std::cmp::Reverse(at)))
        })
    };
    match (rank("text/event-stream"), rank("application/json")) {
        (Some(stream), Some(json)) => stream > json,
        _ => false,
    }
}

fn transport(
    catalog: &Arc<Catalog>,
    server: Option<&'static Server>,
    public_url: &str,
    answers: Answers,
) -> StreamableHttpService<McpServer> {
    let catalog = catalog.clone();
    let (hosts, origins) = allowed(public_url);
    StreamableHttpService::builder()
        .service_factory(Arc::new(move || Ok(McpServer::new(catalog.clone(), server))))
        .session_manager(Arc::new(LocalSessionManager::default()))
        .stateful_mode(false)
        .json_response(answers == Answers::Json)
        .allowed_hosts(hosts)
        .allowed_origins(origins)
        .on_request_fn(|req: &HttpRequest, hook: &mut Extensions| {
            if let Some(who) = req.extensions().get::<McpCaller>() {
                hook.insert(who.clone());
            }
        })
        .build()
}

/// The hosts a request may name and the origins a browser may send it from (DNS rebinding):
/// the public URL's and loopback's.
fn allowed(public_url: &str) -> (Vec<String>, Vec<String>) {
    let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
    let mut origins = vec!["http://localhost:*".to_owned(), "http://127.0.0.1:*".to_owned()];
    if let Some((scheme, rest)) = public_url.split_once("://") {
        let authority = rest.split('/').next().unwrap_or_default();
        let host = authority.rsplit_once(':').map_or(authority, |(host, _)| host);
        if !host.is_empty() {
            hosts.push(host.to_owned());
        }
        origins.push(format!("{scheme}://{authority}"));
    }
    (hosts, origins)
}

/// Authenticates the request and counts it against the credential's rate limit; refusals
/// answer here with OAuth's bearer challenge (RFC 6750, RFC 9728) and a JSON body.
async fn authenticate(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    match caller(req.request()).await {
        Ok(who) => {
            req.extensions_mut().insert(who);
            Ok(next.call(req).await?.map_into_boxed_body())
        }
        Err(error) => {
            let response = refusal(req.request(), &error);
            Ok(req.into_response(response))
        }
    }
}

async fn caller(req: &HttpRequest) -> Result<McpCaller, Error> {
    let state = req.app_data::<web::Data<AppState>>().ok_or_else(|| Error::internal("no app state"))?;
    let token = bearer(req)?;
    let now = state.clock.now();
    let who =
        accounts::mcp_connections::authenticate(&mut *store::connect_global(&state.pool).await?, token, now).await?;
    // RFC 8707: an OAuth token serves the resource it was granted for, and what lies under it
    if let Some(resource) = &who.resource {
        let base = state.public_url.trim_end_matches('/');
        let path = resource.strip_prefix(base).unwrap_or(resource);
        let covered = path.is_empty()
            || req.path() == path
            || req.path().strip_prefix(path).is_some_and(|rest| rest.starts_with('/'));
        if !covered {
            return Err(Error::unauthenticated(format!("This access token is for {resource}, not {}.", req.path())));
        }
    }
    let decision = state.limiter.check(&who.rate_key, &state.clock).await?;
    if !decision.allowed {
        return Err(Error::new(
            ErrorKind::RateLimited,
            format!(
                "Too many requests: at most {} per minute. Retry in {} seconds.",
                decision.limit, decision.retry_after
            ),
        )
        .with_detail("retry_after", decision.retry_after));
    }
    Ok(McpCaller { caller: who.caller, grant: Grant::stored(&who.scopes) })
}

/// The credential of `Authorization: Bearer`; `None` when there is none at all.
fn bearer(req: &HttpRequest) -> Result<&str, Error> {
    let value = req.headers().get(AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or_default().trim();
    match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() => Ok(token.trim()),
        _ if value.is_empty() => Err(Error::unauthenticated(
            "Missing credential: send Authorization: Bearer with an MCP connection or an OAuth access token.",
        )
        .with_reason(NO_CREDENTIAL)),
        _ => Err(Error::unauthenticated("Malformed Authorization header: send Authorization: Bearer <token>.")),
    }
}

/// Marks the 401 of a request that sent no credential: its challenge carries no error code
/// (RFC 6750 §3.1), only where to find the authorization server.
const NO_CREDENTIAL: &str = "no_credential";

/// A refusal before any JSON-RPC: 401 with the bearer challenge, 403, 429 or 503.
fn refusal(req: &HttpRequest, error: &Error) -> HttpResponse {
    let status = crate::http::envelope::status_of(error.kind);
    let code = match error.kind {
        ErrorKind::Unauthenticated => "invalid_token",
        ErrorKind::Forbidden => "access_denied",
        kind => kind.code(),
    };
    let message = if error.kind == ErrorKind::Internal { "Something went wrong on our side." } else { &error.message };
    let mut response = HttpResponse::build(status);
    if status == StatusCode::UNAUTHORIZED {
        response.insert_header((WWW_AUTHENTICATE, challenge(req, error, message)));
    }
    if let Some(seconds) = error.details.get("retry_after") {
        response.insert_header((RETRY_AFTER, seconds.to_string()));
    }
    response.json(json!({"error": code, "error_description": message}))
}

/// `Bearer realm="mcp", resource_metadata="…"` (RFC 9728 §5.1), with the scopes the server's
/// tools need (MCP's scope selection) and, when a credential was sent, why it was refused.
fn challenge(req: &HttpRequest, error: &Error, message: &str) -> String {
    let base = req
        .app_data::<web::Data<AppState>>()
        .map(|state| state.public_url.trim_end_matches('/').to_owned())
        .unwrap_or_default();
    let path = req.path().trim_end_matches('/');
    let mut challenge =
        format!(r#"Bearer realm="mcp", resource_metadata="{base}/.well-known/oauth-protected-resource{path}""#);
    if let Some(server) = SERVERS.iter().find(|s| s.path == path) {
        challenge.push_str(&format!(r#", scope="{} {}""#, ::mcp::scopes::USE, server.capability));
    }
    if error.reason.as_deref() != Some(NO_CREDENTIAL) {
        let description = message.replace(['"', '\\'], "'");
        challenge.push_str(&format!(r#", error="invalid_token", error_description="{description}""#));
    }
    challenge
}

/// `GET /api-docs/mcp.json`: every server's tools, from the same definitions as `tools/list`.
pub async fn manifest(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(state.mcp.manifest())
}
