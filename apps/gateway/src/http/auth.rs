//! Authentication (contract: Authentication): `Authorization: Bearer <key>` only, never a query
//! parameter. One lookup per request reads the key, its tenant's status and its issuer's
//! current permissions, so every change applies to the very next request. The rate limit is
//! counted here, once the token is known to be a key.

use actix_web::dev::Payload;
use actix_web::http::header::AUTHORIZATION;
use actix_web::{FromRequest, HttpMessage, HttpRequest, web};
use futures_util::future::LocalBoxFuture;
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

impl FromRequest for Auth {
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<Self, actix_web::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { authenticate(&req).await.map(Auth).map_err(|e| ApiError(e).into()) })
    }
}

async fn authenticate(req: &HttpRequest) -> Result<Caller, Error> {
    let state = req.app_data::<web::Data<AppState>>().ok_or_else(|| Error::internal("no app state"))?;
    let token = bearer(req)?;
    let caller = {
        let mut conn = store::connect(&state.pool).await?;
        accounts::keys::authenticate(&mut conn, token, state.clock.now()).await?
    };
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
    if caller.is_legacy() && req.app_data::<LegacyRoute>().is_none() {
        return Err(Error::forbidden(
            "This key was created before 7 September 2026 and may only use the original /contacts/{group_id}/... paths; rotate it to use this endpoint.",
        ));
    }
    Ok(caller)
}
