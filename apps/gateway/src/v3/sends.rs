//! Product sends (contract: Catalogues, products, stock, orders: the send endpoints). Every
//! rule lives in `commerce::CommerceService`; these handlers read the body and wrap the answer,
//! 201 like `POST /chat/send`.

use actix_web::{HttpResponse, web};
use commerce::sends::{CatalogueSend, ProductListSend, ProductSend, ProductSent};

use crate::AppState;
use crate::docs::{ErrorEnvelope, Refusals, Success};
use crate::http::{ApiError, Auth, Json, created};

/// Send one product to a customer: the chat catalogue's product message, or (`platform:
/// storefront`) a text with the link to the product on the storefront page.
#[utoipa::path(post, path = "/api/v3/catalogues/send-product", operation_id = "send_product", tag = "Commerce",
    request_body = ProductSend,
    responses((status = 201, body = Success<ProductSent>, description = "sent; `message_id` is the provider's id of the message"),
        (status = 402, body = ErrorEnvelope, description = "the prepaid balance cannot pay for the message"),
        (status = 404, body = ErrorEnvelope, description = "the catalogue is not one of the account's"),
        (status = 422, body = ErrorEnvelope,
            description = "validation; no chat account configured; the product is not published on the platform; the catalogue does not publish there"),
        (status = 502, body = ErrorEnvelope, description = "the chat provider refused the message (its reason in the message and `provider_reason`)"),
        Refusals),
    security(("bearer" = [])))]
pub async fn send_product(
    auth: Auth,
    state: web::Data<AppState>,
    body: Json<ProductSend>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.commerce.send_product(&auth.0, body.0).await?))
}

/// Send up to 30 products of the chat catalogue, in 1 to 10 sections, as a product list.
#[utoipa::path(post, path = "/api/v3/catalogues/send-product-list", operation_id = "send_product_list", tag = "Commerce",
    request_body = ProductListSend,
    responses((status = 201, body = Success<ProductSent>, description = "sent; `message_id` is the provider's id of the message"),
        (status = 402, body = ErrorEnvelope, description = "the prepaid balance cannot pay for the message"),
        (status = 404, body = ErrorEnvelope, description = "the catalogue is not one of the account's"),
        (status = 422, body = ErrorEnvelope,
            description = "validation; no chat account configured; products not published on chat (each named, and listed in `unpublished`)"),
        (status = 502, body = ErrorEnvelope, description = "the chat provider refused the message (its reason in the message and `provider_reason`)"),
        Refusals),
    security(("bearer" = [])))]
pub async fn send_product_list(
    auth: Auth,
    state: web::Data<AppState>,
    body: Json<ProductListSend>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.commerce.send_product_list(&auth.0, body.0).await?))
}

/// Send the chat catalogue as a catalogue message.
#[utoipa::path(post, path = "/api/v3/catalogues/send-catalogue", operation_id = "send_catalogue", tag = "Commerce",
    request_body = CatalogueSend,
    responses((status = 201, body = Success<ProductSent>, description = "sent; `message_id` is the provider's id of the message"),
        (status = 402, body = ErrorEnvelope, description = "the prepaid balance cannot pay for the message"),
        (status = 404, body = ErrorEnvelope, description = "the catalogue is not one of the account's"),
        (status = 422, body = ErrorEnvelope,
            description = "validation; no chat account configured; no (or several) catalogues publishing to chat and none named; the thumbnail product is not published on chat"),
        (status = 502, body = ErrorEnvelope, description = "the chat provider refused the message (its reason in the message and `provider_reason`)"),
        Refusals),
    security(("bearer" = [])))]
pub async fn send_catalogue(
    auth: Auth,
    state: web::Data<AppState>,
    body: Json<CatalogueSend>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.commerce.send_catalogue(&auth.0, body.0).await?))
}
