//! `Idempotency-Key` on creating routes (docs/api.md, Idempotency keys). The services own the
//! mechanism (`store::idempotency`); the gateway reads the header and marks a replay with
//! `X-Idempotent-Replay: 1`.

use actix_web::http::StatusCode;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};
use serde::Serialize;
use store::idempotency::{Answer, Key};

use crate::http::ApiError;
use crate::http::envelope::with_status;

/// The request's `Idempotency-Key`: blank is none, one that is not a short text is 422.
pub fn key_of(request: &HttpRequest) -> Result<Option<Key>, ApiError> {
    let Some(value) = request.headers().get("Idempotency-Key") else {
        return Ok(None);
    };
    Ok(Key::parse(value.to_str().map_err(|_| Key::refused())?)?)
}

/// A service's answer in the success envelope at `status`; a replay says so in its header.
pub fn answer<T: Serialize>(status: StatusCode, answer: Answer<T>) -> HttpResponse {
    let replay = answer.is_replay();
    let mut response = with_status(status, answer);
    if replay {
        response.headers_mut().insert(HeaderName::from_static("x-idempotent-replay"), HeaderValue::from_static("1"));
    }
    response
}
