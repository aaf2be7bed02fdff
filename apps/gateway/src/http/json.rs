//! The JSON body extractor: the body is read by `kernel::body::parse` (malformed JSON or a wrong
//! type is a 422 whose `errors` names the field, `custom_fields[0].key`), a body over the limit
//! is a 413 (`PayloadConfig`), and a body declared as something other than JSON is a 415.

use actix_web::dev::Payload;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::future::LocalBoxFuture;
use kernel::Error;
use kernel::body::parse;
use serde::de::DeserializeOwned;

/// A JSON body of type `T`. An empty body (no bytes) reads as `{}`, so missing fields are
/// reported by name; a body of spaces is not JSON, and is refused like any other.
pub struct Json<T>(pub T);

/// The top-level `reason` a route family's contract puts on each of its refusals (the leads:
/// `invalid`), set as app data on its resources: the reader's 422s there carry it too. Other
/// routes answer without one.
#[derive(Debug, Clone, Copy)]
pub struct BodyRefusal(pub &'static str);

/// A query string its type cannot read (a member twice, a list where one value goes) is a 422
/// naming the member, like a body's, instead of actix's bare 400.
pub fn query_error(error: actix_web::error::QueryPayloadError, req: &HttpRequest) -> actix_web::Error {
    let message = error.to_string();
    let message = message.strip_prefix("Query deserialize error: ").unwrap_or(&message).to_owned();
    let field = message.split('`').nth(1).filter(|f| !f.is_empty()).unwrap_or("query").to_owned();
    let error = Error::validation(format!("The {field} query parameter is invalid: {message}."));
    super::data::refusal(req.path(), error.with_field(field, message))
}

/// A body declared as anything but JSON is refused with 415; no `Content-Type` reads as JSON.
fn check_content_type(req: &HttpRequest) -> Result<(), actix_web::Error> {
    let Some(value) = req.headers().get(CONTENT_TYPE) else { return Ok(()) };
    let value = value.to_str().unwrap_or_default().to_ascii_lowercase();
    let essence = value.split(';').next().unwrap_or_default().trim();
    if essence == "application/json" || essence.ends_with("+json") {
        return Ok(());
    }
    let message = format!("Unsupported media type {essence:?}: send Content-Type: application/json.");
    let response = super::envelope::framework_error(actix_web::http::StatusCode::UNSUPPORTED_MEDIA_TYPE, &message);
    Err(actix_web::error::InternalError::from_response("unsupported media type", response).into())
}

impl<T: DeserializeOwned + 'static> FromRequest for Json<T> {
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<Self, actix_web::Error>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let content_type = check_content_type(req);
        let reason = req.app_data::<BodyRefusal>().map(|refusal| refusal.0);
        let body = web::Bytes::from_request(req, payload);
        let path = req.path().to_owned();
        Box::pin(async move {
            content_type?;
            // Over `PayloadConfig`'s limit this is a 413, put in the envelope by the middleware.
            let bytes = body.await?;
            // in the envelope of the route family (the engine's is the data family's)
            parse(&bytes).map(Json).map_err(|e| {
                super::data::refusal(
                    &path,
                    match reason {
                        Some(reason) => e.with_reason(reason),
                        None => e,
                    },
                )
            })
        })
    }
}
