//! The v3 envelopes (contract: Errors): `{status:'success', data}` and
//! `{status:'error', message, errors?}`. Every failure, ours or the framework's, goes out in
//! this shape; a 500 says only that something failed, with the request id that is in the log.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use kernel::{Error, ErrorKind};
use serde::Serialize;
use serde_json::{Map, Value, json};

tokio::task_local! {
    /// The current request's id, so an error body can quote it.
    pub static REQUEST_ID: String;
}

/// `{status:'success', data}`, serialized straight from the typed answer.
#[derive(Serialize)]
struct Success<T> {
    status: &'static str,
    data: T,
}

pub fn ok<T: Serialize>(data: T) -> HttpResponse {
    with_status(StatusCode::OK, data)
}

pub fn created<T: Serialize>(data: T) -> HttpResponse {
    with_status(StatusCode::CREATED, data)
}

pub fn with_status<T: Serialize>(status: StatusCode, data: T) -> HttpResponse {
    HttpResponse::build(status).json(Success { status: "success", data })
}

/// A domain error on its way out.
#[derive(Debug)]
pub struct ApiError(pub Error);

impl From<Error> for ApiError {
    fn from(error: Error) -> Self {
        Self(error)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

pub fn status_of(kind: ErrorKind) -> StatusCode {
    match kind {
        ErrorKind::Validation => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorKind::Unauthenticated => StatusCode::UNAUTHORIZED,
        ErrorKind::Forbidden => StatusCode::FORBIDDEN,
        ErrorKind::NotFound => StatusCode::NOT_FOUND,
        ErrorKind::Conflict => StatusCode::CONFLICT,
        ErrorKind::PaymentRequired => StatusCode::PAYMENT_REQUIRED,
        ErrorKind::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorKind::ProviderFailure => StatusCode::BAD_GATEWAY,
        ErrorKind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::NotSupported => StatusCode::NOT_IMPLEMENTED,
        ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The v3 error body.
pub fn error_body(error: &Error) -> Value {
    let mut body = Map::new();
    body.insert("status".into(), "error".into());
    if error.kind == ErrorKind::Internal {
        let id = REQUEST_ID.try_with(Clone::clone).unwrap_or_default();
        tracing::error!(request_id = %id, cause = %error.message, "request failed");
        body.insert("message".into(), format!("Something went wrong on our side (request {id}).").into());
        body.insert("request_id".into(), id.into());
        return Value::Object(body);
    }
    body.insert("message".into(), error.message.clone().into());
    if !error.errors.is_empty() {
        body.insert("errors".into(), json!(error.errors));
    }
    if let Some(reason) = &error.reason {
        body.insert("reason".into(), reason.clone().into());
    }
    for (key, value) in &error.details {
        body.entry(key.clone()).or_insert_with(|| value.clone());
    }
    Value::Object(body)
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        status_of(self.0.kind)
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status_code());
        with_retry_after(&mut response, &self.0);
        response.json(error_body(&self.0))
    }
}

/// `Retry-After` from the error's `retry_after_seconds` (a 503, a refusal to wait out).
pub fn with_retry_after(response: &mut actix_web::HttpResponseBuilder, error: &Error) {
    if let Some(seconds) = error.details.get(kernel::error::RETRY_AFTER) {
        response.insert_header((actix_web::http::header::RETRY_AFTER, seconds.to_string()));
    }
}

/// A plain error envelope for a framework failure.
pub fn framework_error(status: StatusCode, message: &str) -> HttpResponse {
    HttpResponse::build(status).json(json!({"status": "error", "message": message}))
}
