//! Orders (contract: Catalogues, products, stock, orders; Order status), and the manual and
//! storefront intake that this service adds.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use commerce::orders::{NewOrder, OrderFilter, StatusChange};
use commerce::{CatalogueId, Order, OrderId};
use kernel::page::PageQuery;
use kernel::parse_id;
use kernel::{Page, PageRequest};

use crate::AppState;
use crate::docs::{ErrorEnvelope, Refusals, Success};
use crate::http::{ApiError, Auth, Json, idempotency, ok};

/// A manual or storefront order (beyond the contract): lines priced and frozen, stock held.
#[utoipa::path(post, path = "/api/v3/catalogues/{catalogue}/orders", operation_id = "create_order", tag = "Commerce",
    params(("catalogue" = i64, Path),
        ("Idempotency-Key" = Option<String>, Header, description = "replays the first answer for 24 hours")),
    request_body = NewOrder,
    responses((status = 201, body = Success<Order>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn create(
    auth: Auth,
    state: web::Data<AppState>,
    request: HttpRequest,
    path: web::Path<String>,
    body: Json<NewOrder>,
) -> Result<HttpResponse, ApiError> {
    let key = idempotency::key_of(&request)?;
    let catalogue: CatalogueId = parse_id(&path, "Catalogue")?;
    let order = state.commerce.create_order(&auth.0, catalogue, body.0, key).await?;
    Ok(idempotency::answer(StatusCode::CREATED, order))
}

/// The tenant's orders, newest change first (25 a page).
#[utoipa::path(get, path = "/api/v3/catalogues/orders", operation_id = "list_orders", tag = "Commerce", params(PageQuery, OrderFilter),
    responses((status = 200, body = Success<Page<Order>>), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn list(
    auth: Auth,
    state: web::Data<AppState>,
    page: web::Query<PageQuery>,
    filter: web::Query<OrderFilter>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, commerce::orders::PER_PAGE)?;
    Ok(ok(state.commerce.list_orders(&auth.0, &filter, page).await?))
}

/// One order (beyond the contract).
#[utoipa::path(get, path = "/api/v3/catalogues/orders/{order}", operation_id = "get_order", tag = "Commerce", params(("order" = i64, Path)),
    responses((status = 200, body = Success<Order>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get(auth: Auth, state: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let order: OrderId = parse_id(&path, "Order")?;
    Ok(ok(state.commerce.get_order(&auth.0, order).await?))
}

/// Any status from any status, with its stock effects; `refunded` moves no money.
#[utoipa::path(put, path = "/api/v3/catalogues/orders/{order}/status", tag = "Commerce",
    params(("order" = i64, Path)), request_body = StatusChange,
    responses((status = 200, body = Success<Order>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn set_status(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<StatusChange>,
) -> Result<HttpResponse, ApiError> {
    let order: OrderId = parse_id(&path, "Order")?;
    Ok(ok(state.commerce.set_order_status(&auth.0, order, body.0).await?))
}
