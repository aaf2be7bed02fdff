//! Operations endpoints: liveness, readiness and metrics.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use diesel_async::RunQueryDsl;
use serde_json::json;

use crate::AppState;
use crate::http::envelope::framework_error;

/// The process is up.
pub async fn health() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// The database answers.
pub async fn ready(state: web::Data<AppState>) -> HttpResponse {
    let reachable = async {
        let mut conn = store::connect_global(&state.pool).await?;
        diesel::sql_query("SELECT 1").execute(&mut conn).await?;
        Ok::<_, kernel::Error>(())
    };
    match reachable.await {
        Ok(()) => HttpResponse::Ok().json(json!({"status": "ready"})),
        Err(error) => {
            tracing::warn!(%error, "not ready");
            HttpResponse::ServiceUnavailable()
                .json(json!({"status": "unavailable", "message": "The database is not reachable."}))
        }
    }
}

/// Prometheus text: request counts and latencies, queue depth and age, webhook backlog, pool use.
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    state.metrics.set_pool(&state.pool);
    state.metrics.set_auth_cache(state.keys.stats());
    // the webhook backlog is every tenant's
    if let Ok(mut conn) = store::connect_system(&state.pool).await {
        match store::jobs::stats(&mut conn, state.clock.now()).await {
            Ok(stats) => state.metrics.set_queue(&stats),
            Err(error) => tracing::warn!(%error, "reading queue stats failed"),
        }
        match webhooks::deliver::backlog(&mut conn, state.clock.now()).await {
            Ok(backlog) => state.metrics.set_webhooks(&backlog),
            Err(error) => tracing::warn!(%error, "reading the webhook backlog failed"),
        }
    }
    HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(state.metrics.render())
}

/// No route matched.
pub async fn not_found() -> HttpResponse {
    framework_error(StatusCode::NOT_FOUND, "Not found.")
}
