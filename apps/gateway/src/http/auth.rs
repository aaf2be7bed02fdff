//! Authentication (contract: Authentication): `Authorization: Bearer <key>` only, never a query
//! parameter. One lookup per request reads the key, its tenant's status and its issuer's
//! current permissions, so every change applies to the very next request. The rate limit is
//! counted here, once the token is known to be a key.
//!
//! It runs as middleware around the whole `/api/v3` scope, before any extractor: actix runs a
//! handler's extractors side by side, so a body check would otherwise answer before the key
//! check does (a 422 to a caller without a valid key, or without rate-limit headers).

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header::AUTHORIZATION;
use actix_web::middleware::Next;
use actix_web::{FromRequest, HttpMessage, HttpRequest, web};
use kernel::{Caller, Error, ErrorKind};

use super::envelope::ApiError;
use super::rate_limit::Decision;
use crate::AppState;

/// The authenticated caller of a route.
pub struct Auth(pub Caller);

/// Marks a route that keys created before 7 September 2026 (no recorded issuer) may use.
#[derive(Debug, Clone, Copy)]
pub struct LegacyRoute;

/// The rate-limit decision for this request, turned into headers by the middleware.
#[derive(Debug, Clone, Copy)]
pub struct RateInfo(pub Decision);

fn bearer(req: &HttpRequest) -> Result<&str, Error> {
    let Some(value) = req.headers().get(AUTHORIZATION) else {
        return Err(Error::unauthenticated("Missing API key: send Authorization: Bearer <API_KEY>."));
    };
    let value = value.to_str().unwrap_or_default().trim();
    match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() => Ok(token.trim()),
        _ => Err(Error::unauthenticated("Malformed Authorization header: send Authorization: Bearer <API_KEY>.")),
    }
}

/// Authenticates every request of the scope it wraps and counts it against the rate limit;
/// refusals answer here, before any handler or extractor runs.
pub async fn authenticate_request(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    // An unknown route is a 404 for everyone, key or not.
    if !req.resource_map().has_resource(req.path()) {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    match authenticate(req.request()).await {
        Ok(caller) => {
            if let Some(error) = unknown_query_member(&req) {
                let refusal = super::data::refusal(req.path(), error);
                return Ok(req.error_response(refusal));
            }
            req.extensions_mut().insert(caller);
            Ok(next.call(req).await?.map_into_boxed_body())
        }
        // Refusals of the key are v3's on every route; a database out of reach is the route
        // family's (the data routes' `temporary_failure`).
        Err(error) if error.kind == ErrorKind::Unavailable => {
            let refusal = super::data::refusal(req.path(), error);
            Ok(req.error_response(refusal))
        }
        Err(error) => Ok(req.error_response(ApiError(error))),
    }
}

impl FromRequest for Auth {
    type Error = actix_web::Error;
    type Future = std::future::Ready<Result<Self, actix_web::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let caller = req.extensions_mut().remove::<Caller>();
        std::future::ready(admit(req, caller).map(Auth).map_err(|e| ApiError(e).into()))
    }
}

/// Keys without an issuer pass only on the routes marked [`LegacyRoute`].
fn admit(req: &HttpRequest, caller: Option<Caller>) -> Result<Caller, Error> {
    let caller = caller.ok_or_else(|| Error::internal("a route outside the authenticated scope asked for Auth"))?;
    if caller.is_legacy() && req.app_data::<LegacyRoute>().is_none() {
        return Err(Error::forbidden(
            "This key was created before 7 September 2026 and may only use the original /contacts/{group_id}/... paths; rotate it to use this endpoint.",
        ));
    }
    Ok(caller)
}

async fn authenticate(req: &HttpRequest) -> Result<Caller, Error> {
    let state = req.app_data::<web::Data<AppState>>().ok_or_else(|| Error::internal("no app state"))?;
    let token = bearer(req)?;
    let caller = state.keys.key(&state.pool, token).await?.caller(state.clock.now())?;
    let decision = state.limiter.check(&accounts::keys::hash(token), &state.clock).await?;
    req.extensions_mut().insert(RateInfo(decision));
    if !decision.allowed {
        return Err(Error::new(
            ErrorKind::RateLimited,
            format!(
                "Too many requests: at most {} per minute per key. Retry in {} seconds.",
                decision.limit, decision.retry_after
            ),
        ));
    }
    Ok(caller)
}

/// A query member the operation does not read is a 422 naming it (docs/api.md): a misspelt
/// filter would otherwise answer the whole list. Checked once the key is: a key sent in the
/// query is ignored, so that request is a 401 (contract). Routes outside the description are
/// left be.
fn unknown_query_member(req: &ServiceRequest) -> Option<kernel::Error> {
    if req.query_string().is_empty() {
        return None;
    }
    let known = crate::docs::query_members(req.method().as_str(), &req.match_pattern()?)?;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(req.query_string()).unwrap_or_default();
    let (name, _) = pairs.iter().find(|(name, _)| !known.contains(name))?;
    let message = match known {
        [] => "This endpoint reads no query members.".to_owned(),
        known => format!("This endpoint reads {}.", known.join(", ")),
    };
    Some(kernel::Error::validation(format!("The {name} query member is unknown. {message}")).with_field(name, message))
}
