//! Account (contract: Account): who am I, and what is my balance.

use actix_web::{HttpResponse, web};

use crate::AppState;
use crate::docs::{Refusals, Success};
use crate::http::{ApiError, Auth, ok};

/// The account the key belongs to, the key itself, and what it may do.
#[utoipa::path(get, path = "/api/v3/me", tag = "Account",
    responses((status = 200, body = Success<accounts::profile::Me>), Refusals),
    security(("bearer" = [])))]
pub async fn me(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let mut conn = store::connect(&state.pool, auth.0.tenant_id).await?;
    Ok(ok(accounts::profile::me(&mut conn, &auth.0).await?))
}

/// The wallet: balance in minor units and for display, currency, billing mode.
#[utoipa::path(get, path = "/api/v3/balance", tag = "Account",
    responses((status = 200, body = Success<accounts::wallet::Balance>), Refusals),
    security(("bearer" = [])))]
pub async fn balance(auth: Auth, state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let mut conn = store::connect(&state.pool, auth.0.tenant_id).await?;
    let wallet = accounts::wallet::get(&mut conn, auth.0.tenant_id).await?;
    Ok(ok(accounts::wallet::Balance::from(wallet)))
}
