//! Shop links and baskets (contract: Shop links and baskets). Every rule lives in
//! `commerce::CommerceService`; these handlers parse and wrap.

use actix_web::{HttpResponse, web};
use commerce::baskets::{self, Basket, CartFilter, LinkAnswer, ShopLink};
use kernel::page::PageQuery;
use kernel::{Page, PageRequest};

use crate::AppState;
use crate::docs::{ErrorEnvelope, Refusals, Success};
use crate::http::{ApiError, Auth, Json, created, ok};

/// Make a basket for a customer (a product, a category's products, or lines) and, with
/// `conversation_id` or `to`, send its link in the chat (`communications.send`; 409 outside the
/// 24-hour window). Without a recipient the answer is the link, `sent: false`.
#[utoipa::path(post, path = "/api/v3/shop-links", operation_id = "create_shop_link", tag = "Commerce", request_body = ShopLink,
    responses((status = 201, body = Success<LinkAnswer>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn create_link(
    auth: Auth,
    state: web::Data<AppState>,
    body: Json<ShopLink>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.commerce.create_shop_link(&auth.0, body.0).await?))
}

/// Baskets, newest first; filters `status`, `conversation_id`.
#[utoipa::path(get, path = "/api/v3/carts", operation_id = "list_carts", tag = "Commerce", params(PageQuery, CartFilter),
    responses((status = 200, body = Success<Page<Basket>>), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn list(
    auth: Auth,
    state: web::Data<AppState>,
    page: web::Query<PageQuery>,
    filter: web::Query<CartFilter>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, baskets::PER_PAGE)?;
    Ok(ok(state.commerce.list_carts(&auth.0, filter.into_inner(), page).await?))
}

/// One basket, by its five-character code or its id.
#[utoipa::path(get, path = "/api/v3/carts/{ref}", operation_id = "get_cart", tag = "Commerce",
    params(("ref" = String, Path, description = "the five-character code, or the id")),
    responses((status = 200, body = Success<Basket>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get(auth: Auth, state: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.commerce.get_cart(&auth.0, &path).await?))
}
