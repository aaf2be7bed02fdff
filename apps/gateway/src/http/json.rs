//! The JSON body extractor: malformed JSON or a wrong type is a 422 whose `errors` names the
//! field (`custom_fields[0].key`), a body over the limit is a 413 (`PayloadConfig`), and a body declared as
//! something other than JSON is a 415.

use actix_web::dev::Payload;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::future::LocalBoxFuture;
use kernel::Error;
use serde::de::DeserializeOwned;

use super::envelope::ApiError;

/// A JSON body of type `T`. An empty body reads as `{}`, so missing fields are reported by name.
pub struct Json<T>(pub T);

pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) { b"{}" } else { bytes };
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            Error::validation(format!("The request body is not valid JSON: {inner}"))
                .with_field("body", "The request body is not valid JSON.")
        } else {
            let message = inner.to_string();
            // serde's message ends with the position, which means nothing to a client.
            let message = message.split(" at line ").next().unwrap_or(&message).to_owned();
            match missing_field(&message) {
                Some(missing) => {
                    let field = if path == "." { missing.to_owned() } else { format!("{path}.{missing}") };
                    let message = format!("The {field} field is required.");
                    Error::validation(message.clone()).with_field(field, message)
                }
                None => {
                    let field = if path == "." { "body".to_owned() } else { path };
                    Error::validation(format!("The {field} field is invalid: {message}.")).with_field(field, message)
                }
            }
        }
    })
}

/// serde names a missing member only in its message: "missing field `name`".
fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.split('`').next()
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
        let body = web::Bytes::from_request(req, payload);
        Box::pin(async move {
            content_type?;
            // Over `PayloadConfig`'s limit this is a 413, put in the envelope by the middleware.
            let bytes = body.await?;
            parse(&bytes).map(Json).map_err(|e| ApiError(e).into())
        })
    }
}
