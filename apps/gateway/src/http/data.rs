//! The data family's envelope (contract: Errors, data endpoints): success is the native body,
//! refusals are `{error:{code, message, retryable, ...}, message, code, errors?}`. Only what
//! the data service answers goes out this way; authentication, the gateway's rate limit,
//! unknown routes and wrong methods keep the v3 envelope.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use kernel::{Error, ErrorKind};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::envelope::{REQUEST_ID, status_of};

/// A data-service error on its way out.
#[derive(Debug)]
pub struct DataError(pub Error);

impl From<Error> for DataError {
    fn from(error: Error) -> Self {
        Self(error)
    }
}

impl std::fmt::Display for DataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The body of a refusal.
pub fn error_body(error: &Error) -> Value {
    let (code, retryable) = (error.kind.code(), error.kind.retryable());
    let mut inner = Map::new();
    let message = if error.kind == ErrorKind::Internal {
        let id = REQUEST_ID.try_with(Clone::clone).unwrap_or_default();
        tracing::error!(request_id = %id, cause = %error.message, "request failed");
        inner.insert("request_id".into(), id.clone().into());
        format!("Something went wrong on our side (request {id}).")
    } else {
        for (key, value) in &error.details {
            inner.insert(key.clone(), value.clone());
        }
        if let Some(reason) = &error.reason {
            inner.insert("reason".into(), reason.clone().into());
        }
        error.message.clone()
    };
    inner.insert("code".into(), code.into());
    inner.insert("message".into(), message.clone().into());
    inner.insert("retryable".into(), retryable.into());
    let mut body = json!({"error": inner, "message": message, "code": code});
    if !error.errors.is_empty() && error.kind != ErrorKind::Internal {
        body["error"]["errors"] = json!(error.errors);
        body["errors"] = json!(error.errors);
    }
    body
}

/// The route families whose refusals take this shape: data tables, payments, automations and
/// agent tasks (whose own success bodies carry no `status` either; docs/api.md, "Payments").
pub fn is_native_family(path: &str) -> bool {
    ["/api/v3/data/", "/api/v3/payments", "/api/v3/automations/", "/api/engine/"].iter().any(|prefix| {
        path.strip_prefix(prefix).is_some_and(|rest| prefix.ends_with('/') || rest.is_empty() || rest.starts_with('/'))
    })
}

/// A refusal made before any handler (an unreadable query, a NUL in the URL) in the envelope of
/// the route family the path belongs to: the data or payments routes' own, or v3's.
pub fn refusal(path: &str, error: Error) -> actix_web::Error {
    if is_native_family(path) { DataError(error).into() } else { super::envelope::ApiError(error).into() }
}

impl ResponseError for DataError {
    fn status_code(&self) -> StatusCode {
        status_of(self.0.kind)
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status_code());
        super::envelope::with_retry_after(&mut response, &self.0);
        response.json(error_body(&self.0))
    }
}

/// 200 with the native body.
pub fn ok<T: Serialize>(body: T) -> HttpResponse {
    HttpResponse::Ok().json(body)
}

/// 201 with the native body.
pub fn created<T: Serialize>(body: T) -> HttpResponse {
    HttpResponse::Created().json(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_code_and_status() {
        for (kind, code, status) in [
            (ErrorKind::Validation, "validation_error", 422),
            (ErrorKind::Conflict, "conflict", 409),
            (ErrorKind::NotFound, "not_found", 404),
            (ErrorKind::Forbidden, "permission_denied", 403),
            (ErrorKind::PaymentRequired, "quota_exceeded", 402),
            (ErrorKind::NotSupported, "not_supported", 501),
            (ErrorKind::RateLimited, "rate_limited", 429),
            (ErrorKind::ProviderFailure, "provider_failure", 502),
            (ErrorKind::Unavailable, "temporary_failure", 503),
        ] {
            let error = DataError(Error::new(kind, "no"));
            assert_eq!(error.status_code().as_u16(), status);
            let body = error_body(&error.0);
            assert_eq!((body["code"].as_str(), body["error"]["code"].as_str()), (Some(code), Some(code)));
            assert_eq!(body["error"]["retryable"], matches!(status, 429 | 502 | 503));
        }
    }

    #[test]
    fn details_go_inside_error_and_rate_limits_say_when() {
        let error = Error::new(ErrorKind::RateLimited, "slow down").with_detail("retry_after_seconds", 7);
        let response = DataError(error.clone()).error_response();
        assert_eq!(
            response.headers().get(actix_web::http::header::RETRY_AFTER).and_then(|v| v.to_str().ok()),
            Some("7")
        );
        assert_eq!(error_body(&error)["error"]["retry_after_seconds"], 7);
        let quota = Error::payment_required("full")
            .with_detail("quota", "records")
            .with_detail("used", 3)
            .with_detail("limit", 3);
        let body = error_body(&quota);
        assert_eq!((body["error"]["quota"].as_str(), body["error"]["limit"].as_i64()), (Some("records"), Some(3)));
        let field = Error::field("name", "The name field is required.");
        assert_eq!(error_body(&field)["errors"]["name"][0], "The name field is required.");
    }
}
