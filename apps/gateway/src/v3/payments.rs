//! Payments (contract: Payments (read only)): `{data:[...], meta}` and `{data:{...}}` with no
//! `status`, refusals in the data family's shape. There is no write route: payments are asked
//! for on checkout pages and by the operator, and refunded by the operator only.

use actix_web::{HttpResponse, web};
use kernel::PageRequest;
use kernel::page::PageQuery;
use payments_read::reads::{DEFAULT_PER_PAGE, PaymentFilter, PaymentList, PaymentRead};

use crate::AppState;
use crate::docs::{DataErrorEnvelope, Refusals};
use crate::http::Auth;
use crate::http::data::{DataError, ok};

/// The account's payments, newest first (25 a page, at most 100).
#[utoipa::path(get, path = "/api/v3/payments", operation_id = "list_payments", tag = "Payments",
    params(PageQuery, PaymentFilter),
    responses((status = 200, body = PaymentList), (status = 403, body = DataErrorEnvelope),
        (status = 422, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn list(
    auth: Auth,
    state: web::Data<AppState>,
    page: web::Query<PageQuery>,
    filter: web::Query<PaymentFilter>,
) -> Result<HttpResponse, DataError> {
    let page = PageRequest::parse(&page, DEFAULT_PER_PAGE)?;
    Ok(ok(state.payments.list(&auth.0, &filter, page).await?))
}

/// One payment by its UUID or its reference (`PAY-<digits>-<digits>`), with who asked for it,
/// its timeline (oldest first), its ledger entries (by `entry_no`) and its refunds (newest
/// first).
#[utoipa::path(get, path = "/api/v3/payments/{payment}", operation_id = "get_payment", tag = "Payments",
    params(("payment" = String, Path, description = "a UUID or a reference such as PAY-20261207-000042")),
    responses((status = 200, body = PaymentRead), (status = 403, body = DataErrorEnvelope),
        (status = 404, body = DataErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get(auth: Auth, state: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse, DataError> {
    Ok(ok(state.payments.get(&auth.0, &path).await?))
}
