//! `Idempotency-Key` on creating routes (contract: Leads; docs/api.md, Idempotency keys): the
//! first request with a key does the work and its answer is kept; a repeat within 24 hours gets
//! that answer again with `X-Idempotent-Replay: 1`.

use std::future::Future;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use kernel::TenantId;
use serde_json::{Value, json};
use store::idempotency::{self, Idempotency};

use crate::AppState;
use crate::http::ApiError;

/// The request's `Idempotency-Key`, trimmed; blank is none.
pub fn key_of(request: &HttpRequest) -> Option<String> {
    request
        .headers()
        .get("Idempotency-Key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
}

/// Runs `work` (which answers a status and the `data` of the success envelope) once per key of
/// `scope`; without a key it just runs. A refused request does not keep the key, so it may be
/// sent again corrected.
pub async fn once<F, Fut>(
    state: &AppState,
    tenant: TenantId,
    scope: &str,
    key: Option<String>,
    body: &Value,
    work: F,
) -> Result<HttpResponse, ApiError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<(StatusCode, Value), kernel::Error>>,
{
    let Some(key) = key else {
        let (status, data) = work().await?;
        return Ok(HttpResponse::build(status).json(json!({ "status": "success", "data": data })));
    };
    let fingerprint = idempotency::fingerprint(&[serde_json::to_vec(body).unwrap_or_default().as_slice()]);
    let mut conn = store::connect(&state.pool).await?;
    match idempotency::begin(&mut conn, tenant, scope, &key, &fingerprint, state.clock.now()).await? {
        Idempotency::Replay { status, body } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            Ok(HttpResponse::build(status).insert_header(("X-Idempotent-Replay", "1")).json(body))
        }
        Idempotency::Started => match work().await {
            Ok((status, data)) => {
                let envelope = json!({ "status": "success", "data": data });
                idempotency::complete(&mut conn, tenant, scope, &key, status.as_u16(), &envelope).await?;
                Ok(HttpResponse::build(status).json(envelope))
            }
            Err(error) => {
                idempotency::abandon(&mut conn, tenant, scope, &key).await?;
                Err(error.into())
            }
        },
    }
}
