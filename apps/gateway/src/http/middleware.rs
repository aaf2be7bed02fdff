//! Around every request: a request id (taken from `X-Request-Id` when sane, else new) on the
//! tracing span and the response, the request's time limit, framework failures put in the v3
//! error envelope, the rate-limit headers, and the request counted in the metrics.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::PayloadError;
use actix_web::http::ConnectionType;
use actix_web::http::StatusCode;
use actix_web::http::header::{ALLOW, CONTENT_TYPE, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, web};
use tracing::Instrument;

use super::auth::RateInfo;
use super::envelope::{REQUEST_ID, framework_error};
use crate::AppState;
use crate::config::HttpLimits;

fn request_id(req: &ServiceRequest) -> String {
    req.headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.chars().all(|c| c.is_ascii_graphic()))
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned)
}

/// The message of a framework failure that carries no envelope of its own.
fn framework_message(status: StatusCode) -> &'static str {
    match status {
        StatusCode::NOT_FOUND => "Not found.",
        StatusCode::METHOD_NOT_ALLOWED => "Method not allowed for this path.",
        StatusCode::PAYLOAD_TOO_LARGE => "The request body is too large.",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "Unsupported media type: send Content-Type: application/json.",
        StatusCode::UNPROCESSABLE_ENTITY | StatusCode::BAD_REQUEST => "The request is malformed.",
        _ => "The request failed.",
    }
}

fn header(name: &'static str, value: impl ToString) -> (HeaderName, HeaderValue) {
    let value = HeaderValue::from_str(&value.to_string()).unwrap_or_else(|_| HeaderValue::from_static(""));
    (HeaderName::from_static(name), value)
}

/// PostgreSQL text cannot hold the NUL character (`%00`), so nothing is named by one: in the
/// path it is a 404, like any id or code that names nothing; in the query a 422 naming the
/// member, as in a body. Either way before any handler or the database sees it. A query member
/// without a name (`?=1`) is a 422 too: the readers would pass over it unseen.
fn nul_in_url(req: &ServiceRequest) -> Option<kernel::Error> {
    if req.uri().path().to_ascii_lowercase().contains("%00") {
        return Some(kernel::Error::new(kernel::ErrorKind::NotFound, "Nothing is named with a NUL character (%00)."));
    }
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(req.query_string()).unwrap_or_default();
    if pairs.iter().any(|(name, _)| name.is_empty()) {
        let message = "Every query member needs a name (`name=value`).";
        return Some(kernel::Error::validation(message).with_field("query", message));
    }
    let (name, _) = pairs.iter().find(|(name, value)| name.contains('\0') || value.contains('\0'))?;
    let field = name.replace('\0', "%00");
    let message = "Text may not contain the NUL character (%00).";
    Some(kernel::Error::validation(format!("The {field} is invalid: {message}")).with_field(field, message))
}

/// A request body as it arrives, saying when it has arrived whole.
struct Watched {
    body: Payload,
    whole: Arc<AtomicBool>,
}

impl futures_util::Stream for Watched {
    type Item = Result<actix_web::web::Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = Pin::new(&mut self.body).poll_next(cx);
        if let Poll::Ready(None) = next {
            self.whole.store(true, Ordering::Release);
        }
        next
    }
}

/// Watches the body of a request that has one; the flag turns true once it has all arrived.
fn watch_body(req: &mut ServiceRequest) -> Option<Arc<AtomicBool>> {
    let headers = req.headers();
    let declared = headers.contains_key("transfer-encoding")
        || headers.get("content-length").and_then(|v| v.to_str().ok()).is_some_and(|length| length.trim() != "0");
    if !declared {
        return None;
    }
    let whole = Arc::new(AtomicBool::new(false));
    let body = req.take_payload();
    let watched: Pin<Box<dyn futures_util::Stream<Item = Result<web::Bytes, PayloadError>>>> =
        Box::pin(Watched { body, whole: whole.clone() });
    req.set_payload(Payload::from(watched));
    Some(whole)
}

/// The answer to a request out of time: its body still arriving (a client trickling it) is a
/// 408 and the connection closes; a handler still working is a 503 to try again.
fn out_of_time(path: &str, body: Option<&AtomicBool>, limit: std::time::Duration) -> actix_web::HttpResponse {
    if body.is_some_and(|whole| !whole.load(Ordering::Acquire)) {
        let message = format!("The request body did not arrive within {} seconds.", limit.as_secs_f64());
        let mut response = framework_error(StatusCode::REQUEST_TIMEOUT, &message);
        response.head_mut().set_connection_type(ConnectionType::Close);
        return response;
    }
    let error = kernel::Error::unavailable(format!("{path} took longer than {limit:?}"));
    super::data::refusal(path, error).error_response()
}

pub async fn observe(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let id = request_id(&req);
    let started = Instant::now();
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let limit = req.app_data::<HttpLimits>().copied().unwrap_or_default().request_timeout;
    let span = tracing::info_span!("request", request_id = %id, method = %req.method(), path = %req.path());
    let mut res = match nul_in_url(&req) {
        Some(error) => {
            let refusal = super::data::refusal(req.path(), error);
            REQUEST_ID.sync_scope(id.clone(), || req.into_response(refusal.error_response()))
        }
        None => {
            let body = watch_body(&mut req);
            // The request goes to the router, which needs it unshared: only its words are kept.
            let (method, path) = (req.method().clone(), req.path().to_owned());
            let call = REQUEST_ID.scope(id.clone(), next.call(req)).instrument(span.clone());
            match tokio::time::timeout(limit, call).await {
                // Handlers' and extractors' errors are responses by now; an Err here is the framework's.
                Ok(result) => {
                    let mut res = result?.map_into_boxed_body();
                    // A body left unread (a refusal before it was needed) ends the connection,
                    // and the client must know, or it sends its next request down a closed one.
                    if body.is_some_and(|whole| !whole.load(Ordering::Acquire)) {
                        res.response_mut().head_mut().set_connection_type(ConnectionType::Close);
                    }
                    res
                }
                Err(_) => {
                    let mut response = REQUEST_ID.sync_scope(id.clone(), || out_of_time(&path, body.as_deref(), limit));
                    let (name, value) = header("x-request-id", &id);
                    response.headers_mut().insert(name, value);
                    if let Some(state) = state {
                        let status = response.status().as_u16();
                        state.metrics.observe(
                            "(out of time)",
                            method.as_str(),
                            status,
                            started.elapsed().as_secs_f64(),
                        );
                    }
                    span.in_scope(|| tracing::warn!(status = response.status().as_u16(), "request out of time"));
                    // Without the request there is no ServiceResponse to make: the prepared
                    // response travels as the error the server renders.
                    return Err(actix_web::error::InternalError::from_response("out of time", response).into());
                }
            }
        }
    };

    let status = res.status();
    // a JSON body or a page (the sign-in page's 401) is the handler's own answer
    let answered = res
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/html"));
    if (status.is_client_error() || status.is_server_error()) && !answered {
        let replacement = framework_error(status, framework_message(status));
        res = res.into_response(replacement).map_into_boxed_body();
    }
    if status == StatusCode::METHOD_NOT_ALLOWED && !res.headers().contains_key(ALLOW) {
        let allowed = res.request().match_pattern().and_then(|pattern| crate::docs::allowed_methods(&pattern));
        if let Some(allowed) = allowed.and_then(|a| HeaderValue::from_str(a).ok()) {
            res.headers_mut().insert(ALLOW, allowed);
        }
    }

    let headers = res.headers_mut();
    let (name, value) = header("x-request-id", &id);
    headers.insert(name, value);
    let rate = res.request().extensions().get::<RateInfo>().copied();
    if let Some(RateInfo(decision)) = rate {
        let headers = res.headers_mut();
        for (name, value) in [
            header("x-ratelimit-limit", decision.limit),
            header("x-ratelimit-remaining", decision.remaining),
            header("x-ratelimit-reset", decision.reset),
        ] {
            headers.insert(name, value);
        }
        if !decision.allowed {
            let (name, value) = header("retry-after", decision.retry_after);
            headers.insert(name, value);
        }
    }

    if let Some(state) = state {
        let route = res.request().match_pattern().unwrap_or_else(|| "unmatched".to_owned());
        state.metrics.observe(
            &route,
            res.request().method().as_str(),
            res.status().as_u16(),
            started.elapsed().as_secs_f64(),
        );
    }
    span.in_scope(|| {
        tracing::info!(
            status = res.status().as_u16(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "request done"
        )
    });
    Ok(res)
}
