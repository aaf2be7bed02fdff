//! Shops, products, sync runs and stock (contract: Catalogues, products, stock, orders). Every
//! rule lives in `commerce::CommerceService`; these handlers parse paths and wrap answers.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use commerce::catalogues::{self, Catalogue, CatalogueChanges, CatalogueSettings};
use commerce::feeds::{Feed, FeedId, NewFeed};
use commerce::products::{self as product_list, Product, ProductBody, ProductRef};
use commerce::publish::{ListingFilter, ProductListing};
use commerce::stock::{self, Level, LevelFilter, LevelsPush, MovementView, Pushed};
use commerce::sync::{Batch, Report};
use commerce::{CatalogueId, SyncId};
use kernel::page::PageQuery;
use kernel::parse_id;
use kernel::{Page, PageRequest};

use crate::AppState;
use crate::docs::{ErrorEnvelope, Refusals, Success};
use crate::http::envelope::with_status;
use crate::http::{ApiError, Auth, Json, created, idempotency, ok};

fn shop(raw: &str) -> Result<CatalogueId, ApiError> {
    Ok(parse_id(raw, "Catalogue")?)
}

fn by_sku(path: &(String, String)) -> Result<(CatalogueId, ProductRef), ApiError> {
    Ok((shop(&path.0)?, ProductRef::Sku(path.1.clone())))
}

fn by_id(path: &(String, String)) -> Result<(CatalogueId, ProductRef), ApiError> {
    Ok((shop(&path.0)?, ProductRef::Id(parse_id(&path.1, "Product")?)))
}

/// The tenant's shops, 25 a page.
#[utoipa::path(get, path = "/api/v3/catalogues", operation_id = "list_catalogues", tag = "Commerce", params(PageQuery),
    responses((status = 200, body = Success<Page<Catalogue>>), Refusals), security(("bearer" = [])))]
pub async fn list(
    auth: Auth,
    state: web::Data<AppState>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, catalogues::PER_PAGE)?;
    Ok(ok(state.commerce.list_catalogues(&auth.0, page).await?))
}

/// Create a shop; `stock_policy` defaults to `external`, `source_of_truth` to `api`.
#[utoipa::path(post, path = "/api/v3/catalogues", operation_id = "create_catalogue", tag = "Commerce", request_body = CatalogueSettings,
    responses((status = 201, body = Success<Catalogue>), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn create(
    auth: Auth,
    state: web::Data<AppState>,
    body: Json<CatalogueSettings>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.commerce.create_catalogue(&auth.0, body.0).await?))
}

/// One shop (beyond the contract).
#[utoipa::path(get, path = "/api/v3/catalogues/{catalogue}", operation_id = "get_catalogue", tag = "Commerce", params(("catalogue" = i64, Path)),
    responses((status = 200, body = Success<Catalogue>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get(auth: Auth, state: web::Data<AppState>, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.commerce.get_catalogue(&auth.0, shop(&path)?).await?))
}

/// Change any setting but `sku_prefix` (422); a null clears an optional one.
#[utoipa::path(patch, path = "/api/v3/catalogues/{catalogue}", operation_id = "update_catalogue", tag = "Commerce", params(("catalogue" = i64, Path)),
    request_body = CatalogueChanges,
    responses((status = 200, body = Success<Catalogue>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn update(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<CatalogueSettings>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.commerce.update_catalogue(&auth.0, shop(&path)?, body.0).await?))
}

/// The shelf, 25 a page.
#[utoipa::path(get, path = "/api/v3/catalogues/{catalogue}/products", tag = "Commerce",
    params(("catalogue" = i64, Path), PageQuery),
    responses((status = 200, body = Success<Page<Product>>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn products(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, product_list::PER_PAGE)?;
    Ok(ok(state.commerce.list_products(&auth.0, shop(&path)?, page).await?))
}

async fn put(
    state: &AppState,
    auth: &Auth,
    (shop, product): (CatalogueId, ProductRef),
    body: ProductBody,
) -> Result<HttpResponse, ApiError> {
    let put = state.commerce.put_product(&auth.0, shop, &product, body).await?;
    let status = if put.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok(with_status(status, put.product))
}

/// Create the product when the code is new, else change only the fields sent.
#[utoipa::path(put, path = "/api/v3/catalogues/{catalogue}/products/by-sku/{sku}", tag = "Commerce",
    params(("catalogue" = i64, Path), ("sku" = String, Path)), request_body = ProductBody,
    responses((status = 201, body = Success<Product>, description = "created"), (status = 200, body = Success<Product>),
        (status = 404, body = ErrorEnvelope), (status = 409, body = ErrorEnvelope, description = "sku taken or frozen"),
        (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn put_by_sku(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Json<ProductBody>,
) -> Result<HttpResponse, ApiError> {
    put(&state, &auth, by_sku(&path)?, body.0).await
}

/// Change only the fields sent of an existing product.
#[utoipa::path(put, path = "/api/v3/catalogues/{catalogue}/products/{product}", tag = "Commerce",
    params(("catalogue" = i64, Path), ("product" = i64, Path)), request_body = ProductBody,
    responses((status = 200, body = Success<Product>), (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope), (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn put_by_id(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: Json<ProductBody>,
) -> Result<HttpResponse, ApiError> {
    put(&state, &auth, by_id(&path)?, body.0).await
}

/// One product by code.
#[utoipa::path(get, path = "/api/v3/catalogues/{catalogue}/products/by-sku/{sku}", tag = "Commerce",
    params(("catalogue" = i64, Path), ("sku" = String, Path)),
    responses((status = 200, body = Success<Product>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get_by_sku(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (shop, product) = by_sku(&path)?;
    Ok(ok(state.commerce.get_product(&auth.0, shop, &product).await?))
}

/// One product by numeric id.
#[utoipa::path(get, path = "/api/v3/catalogues/{catalogue}/products/{product}", tag = "Commerce",
    params(("catalogue" = i64, Path), ("product" = i64, Path)),
    responses((status = 200, body = Success<Product>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get_by_id(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (shop, product) = by_id(&path)?;
    Ok(ok(state.commerce.get_product(&auth.0, shop, &product).await?))
}

/// Take the product off every platform, then off the shelf; answers it as it was.
#[utoipa::path(delete, path = "/api/v3/catalogues/{catalogue}/products/by-sku/{sku}", tag = "Commerce",
    params(("catalogue" = i64, Path), ("sku" = String, Path)),
    responses((status = 200, body = Success<Product>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn delete_by_sku(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (shop, product) = by_sku(&path)?;
    Ok(ok(state.commerce.delete_product(&auth.0, shop, &product).await?))
}

/// The same, by numeric id.
#[utoipa::path(delete, path = "/api/v3/catalogues/{catalogue}/products/{product}", tag = "Commerce",
    params(("catalogue" = i64, Path), ("product" = i64, Path)),
    responses((status = 200, body = Success<Product>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn delete_by_id(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (shop, product) = by_id(&path)?;
    Ok(ok(state.commerce.delete_product(&auth.0, shop, &product).await?))
}

async fn movements(
    state: &AppState,
    auth: &Auth,
    (shop, product): (CatalogueId, ProductRef),
    page: &PageQuery,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(page, stock::MOVEMENTS_PER_PAGE)?;
    Ok(ok(state.commerce.movements(&auth.0, shop, &product, page).await?))
}

/// The product's stock movements, newest first (50 a page).
#[utoipa::path(get, path = "/api/v3/catalogues/{catalogue}/products/by-sku/{sku}/movements", tag = "Commerce",
    params(("catalogue" = i64, Path), ("sku" = String, Path), PageQuery),
    responses((status = 200, body = Success<Page<MovementView>>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn movements_by_sku(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    movements(&state, &auth, by_sku(&path)?, &page).await
}

/// The same, by numeric id.
#[utoipa::path(get, path = "/api/v3/catalogues/{catalogue}/products/{product}/movements", tag = "Commerce",
    params(("catalogue" = i64, Path), ("product" = i64, Path), PageQuery),
    responses((status = 200, body = Success<Page<MovementView>>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn movements_by_id(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    movements(&state, &auth, by_id(&path)?, &page).await
}

/// Up to 5,000 products, worked by a job: 202 with the run's report; a repeated
/// `Idempotency-Key` answers the run that owns it with `replayed: true`.
#[utoipa::path(post, path = "/api/v3/catalogues/{catalogue}/products/batch", operation_id = "batch_products", tag = "Commerce",
    params(("catalogue" = i64, Path),
        ("Idempotency-Key" = Option<String>, Header, description = "names the run for 24 hours")),
    request_body = Batch,
    responses((status = 202, body = Success<Report>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn batch(
    auth: Auth,
    state: web::Data<AppState>,
    request: HttpRequest,
    path: web::Path<String>,
    body: Json<Batch>,
) -> Result<HttpResponse, ApiError> {
    let key = idempotency::key_of(&request)?;
    let report = state.commerce.accept_batch(&auth.0, shop(&path)?, key, body.0).await?;
    Ok(idempotency::answer(StatusCode::ACCEPTED, report))
}

/// Past sync runs, newest first, without their problems.
#[utoipa::path(get, path = "/api/v3/catalogues/{catalogue}/syncs", tag = "Commerce",
    params(("catalogue" = i64, Path), PageQuery),
    responses((status = 200, body = Success<Page<Report>>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn syncs(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, catalogues::PER_PAGE)?;
    Ok(ok(state.commerce.list_syncs(&auth.0, shop(&path)?, page).await?))
}

/// One sync report, problems included.
#[utoipa::path(get, path = "/api/v3/catalogues/{catalogue}/syncs/{sync}", tag = "Commerce",
    params(("catalogue" = i64, Path), ("sync" = i64, Path)),
    responses((status = 200, body = Success<Report>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn sync(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let sync: SyncId = parse_id(&path.1, "Sync")?;
    Ok(ok(state.commerce.get_sync(&auth.0, shop(&path.0)?, sync).await?))
}

/// Absolute on-hand counts for up to 5,000 codes.
#[utoipa::path(post, path = "/api/v3/catalogues/{catalogue}/inventory", tag = "Commerce",
    params(("catalogue" = i64, Path)), request_body = LevelsPush,
    responses((status = 200, body = Success<Pushed>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn push_inventory(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<LevelsPush>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.commerce.push_levels(&auth.0, shop(&path)?, body.0).await?))
}

/// Per-product stock: `sku[]` (or `sku=a,b`) picks codes, `tracked_only=true` leaves out untracked
/// products; 25 a page.
#[utoipa::path(get, path = "/api/v3/catalogues/{catalogue}/inventory", tag = "Commerce",
    params(("catalogue" = i64, Path), PageQuery, ("sku[]" = Option<Vec<String>>, Query),
        ("tracked_only" = Option<bool>, Query)),
    responses((status = 200, body = Success<Page<Level>>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn inventory(
    auth: Auth,
    state: web::Data<AppState>,
    request: HttpRequest,
    path: web::Path<String>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, product_list::PER_PAGE)?;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(request.query_string()).unwrap_or_default();
    let mut filter = LevelFilter::default();
    for (name, value) in pairs {
        match name.as_str() {
            "sku[]" | "sku" => {
                filter.skus.extend(value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned))
            }
            "tracked_only" => match value.as_str() {
                "true" => filter.tracked_only = true,
                "false" => filter.tracked_only = false,
                _ => {
                    let mut errors = kernel::error::FieldErrors::new();
                    errors.add("tracked_only", "The tracked_only must be true or false.");
                    errors.finish()?;
                }
            },
            _ => {}
        }
    }
    Ok(ok(state.commerce.levels(&auth.0, shop(&path)?, &filter, page).await?))
}

fn feed(raw: &str) -> Result<FeedId, ApiError> {
    Ok(parse_id(raw, "Feed")?)
}

/// Make a feed: the shop's products pulled from a CSV or JSON file on a schedule; the first pull
/// runs at once (its run is `last_sync_id`).
#[utoipa::path(post, path = "/api/v3/catalogues/{catalogue}/feeds", operation_id = "create_feed", tag = "Commerce",
    params(("catalogue" = i64, Path)), request_body = NewFeed,
    responses((status = 201, body = Success<Feed>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn create_feed(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: Json<NewFeed>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(state.commerce.create_feed(&auth.0, shop(&path)?, body.0).await?))
}

/// The shop's feeds, oldest first (beyond the contract).
#[utoipa::path(get, path = "/api/v3/catalogues/{catalogue}/feeds", operation_id = "list_feeds", tag = "Commerce",
    params(("catalogue" = i64, Path), PageQuery),
    responses((status = 200, body = Success<Page<Feed>>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn feeds(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, catalogues::PER_PAGE)?;
    Ok(ok(state.commerce.list_feeds(&auth.0, shop(&path)?, page).await?))
}

/// One feed: its schedule, whether it is on, its consecutive failures (beyond the contract).
#[utoipa::path(get, path = "/api/v3/catalogues/{catalogue}/feeds/{feed}", operation_id = "get_feed", tag = "Commerce",
    params(("catalogue" = i64, Path), ("feed" = i64, Path)),
    responses((status = 200, body = Success<Feed>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn get_feed(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    Ok(ok(state.commerce.get_feed(&auth.0, shop(&path.0)?, feed(&path.1)?).await?))
}

/// Pull a feed now (also one switched off: a pull that succeeds switches it back on); answers
/// the run, `queued`.
#[utoipa::path(post, path = "/api/v3/catalogues/{catalogue}/feeds/{feed}/run", operation_id = "run_feed", tag = "Commerce",
    params(("catalogue" = i64, Path), ("feed" = i64, Path)),
    responses((status = 202, body = Success<Report>), (status = 404, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn run_feed(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let report = state.commerce.run_feed(&auth.0, shop(&path.0)?, feed(&path.1)?).await?;
    Ok(with_status(StatusCode::ACCEPTED, report))
}

/// The shop's listings, per product and platform (beyond the contract): filter by `platform`
/// and `state` to find what a platform blocked, what waits, what drifted; 25 a page.
#[utoipa::path(get, path = "/api/v3/catalogues/{catalogue}/listings", operation_id = "list_listings", tag = "Commerce",
    params(("catalogue" = i64, Path), PageQuery, ListingFilter),
    responses((status = 200, body = Success<Page<ProductListing>>), (status = 404, body = ErrorEnvelope),
        (status = 422, body = ErrorEnvelope), Refusals),
    security(("bearer" = [])))]
pub async fn listings(
    auth: Auth,
    state: web::Data<AppState>,
    path: web::Path<String>,
    page: web::Query<PageQuery>,
    filter: web::Query<ListingFilter>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::parse(&page, catalogues::PER_PAGE)?;
    Ok(ok(state.commerce.listings(&auth.0, shop(&path)?, filter.into_inner(), page).await?))
}
