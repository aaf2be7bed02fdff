//! Publishing (contract: Product listing, Sync report `platforms`): a shop's products on the
//! platforms in its `channels`. Each product has one listing per platform:
//!
//! - `storefront`, the service's own public shop page, shows the shelf as it is: its listings
//!   are `synced` as soon as a product is written.
//! - `chat`, the business account's chat catalogue, is reached through the provider: a write
//!   marks the listing `pending`, and the publish job claims pending listings (`syncing`), sends
//!   them in batches and records each answer: `synced`, `blocked` with the platform's words
//!   (`product.blocked` once per product and platform, ever), or `failed` when the platform could
//!   not be reached (tried again by the job, and by every later publish).
//!
//! A listing claimed by a publisher that died stays `syncing` for [`STALE`], then is claimed
//! again. A listing remembers the sync run whose write asked for it, so that the run's report
//! counts what each platform did (`platforms`) and why a platform will not show a row (a problem
//! with `stage` the platform's name).

use std::collections::HashMap;
use std::sync::Arc;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Nullable, Text, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Error, ErrorKind, TenantId};
use providers::catalogue::{CatalogueError, CatalogueGateway, CatalogueItem, ItemOutcome, MAX_BATCH};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::{Duration, OffsetDateTime};

use crate::CatalogueId;
use crate::catalogues::Row as Shop;
use crate::products::{Product, views};
use crate::schema::product_listings;
use crate::service::CommerceService;
use crate::sync::Problem;

/// The business account's chat catalogue.
pub const CHAT: &str = "chat";
/// The service's own public shop page.
pub const STOREFRONT: &str = "storefront";
/// The platforms a shop can publish to (its `channels`).
pub const PLATFORMS: &[&str] = &[CHAT, STOREFRONT];
/// How long a claimed listing may stay `syncing` before another publisher takes it over.
pub const STALE: Duration = Duration::minutes(10);

/// The shop's platforms, as stored in `channels`.
pub(crate) fn channels_of(shop: &Shop) -> Vec<String> {
    serde_json::from_value(shop.channels.clone()).unwrap_or_default()
}

/// Whether the shop publishes to its chat catalogue (connected, with a provider catalogue).
pub(crate) fn publishes_to_chat(shop: &Shop) -> bool {
    shop.is_connected_to_waba && shop.meta_catalogue_id.is_some() && channels_of(shop).iter().any(|c| c == CHAT)
}

/// Lists `ids` anew on every platform of the shop, for the run `sync` when a run wrote them:
/// `synced` on the storefront, `pending` on the chat catalogue. Answers whether something waits
/// for the chat publish.
pub(crate) async fn mark(
    conn: &mut store::Conn,
    shop: &Shop,
    ids: &[i64],
    sync: Option<i64>,
    now: OffsetDateTime,
) -> Result<bool, Error> {
    let mut waiting = false;
    for platform in channels_of(shop) {
        let state = match platform.as_str() {
            CHAT if publishes_to_chat(shop) => {
                waiting = !ids.is_empty();
                "pending"
            }
            STOREFRONT => "synced",
            _ => continue,
        };
        list(conn, shop, ids, &platform, state, sync, now).await?;
    }
    Ok(waiting)
}

/// Upserts the listings of `ids` on `platform` in `state`, the problem cleared.
async fn list(
    conn: &mut store::Conn,
    shop: &Shop,
    ids: &[i64],
    platform: &str,
    state: &str,
    sync: Option<i64>,
    now: OffsetDateTime,
) -> Result<(), Error> {
    if ids.is_empty() {
        return Ok(());
    }
    diesel::sql_query(
        "INSERT INTO product_listings (product_id, platform, state, problem, updated_at, tenant_id, sync_id)
         SELECT u.id, $2, $3, NULL, $4, $5, $6 FROM unnest($1::bigint[]) AS u(id)
         ON CONFLICT (product_id, platform, tenant_id) DO UPDATE
         SET state = excluded.state, problem = NULL, updated_at = excluded.updated_at, sync_id = excluded.sync_id",
    )
    .bind::<Array<BigInt>, _>(ids)
    .bind::<Text, _>(platform)
    .bind::<Text, _>(state)
    .bind::<Timestamptz, _>(now)
    .bind::<BigInt, _>(shop.tenant_id)
    .bind::<Nullable<BigInt>, _>(sync)
    .execute(conn)
    .await?;
    Ok(())
}

/// Every shelf product of the shop, listed anew on `platforms` (a platform just added).
pub(crate) async fn list_shelf(
    conn: &mut store::Conn,
    shop: &Shop,
    platforms: &[String],
    now: OffsetDateTime,
) -> Result<(), Error> {
    let ids: Vec<i64> = crate::schema::products::table
        .filter(crate::schema::products::catalogue_id.eq(shop.id))
        .filter(crate::schema::products::retired_at.is_null())
        .select(crate::schema::products::id)
        .load(conn)
        .await?;
    for platform in platforms {
        let state = if platform == CHAT { "pending" } else { "synced" };
        list(conn, shop, &ids, platform, state, None, now).await?;
    }
    Ok(())
}

/// Takes the shop's products off `platform` (removed from its `channels`).
pub(crate) async fn unlist(conn: &mut store::Conn, shop: &Shop, platform: &str) -> Result<(), Error> {
    diesel::sql_query(
        "DELETE FROM product_listings l USING products p
         WHERE l.tenant_id = $1 AND p.tenant_id = $1 AND p.id = l.product_id AND p.catalogue_id = $2
           AND l.platform = $3",
    )
    .bind::<BigInt, _>(shop.tenant_id)
    .bind::<BigInt, _>(shop.id)
    .bind::<Text, _>(platform)
    .execute(conn)
    .await?;
    Ok(())
}

/// Queues a publish of the shop's waiting chat listings.
pub(crate) async fn queue(conn: &mut store::Conn, shop: &Shop) -> Result<(), Error> {
    let options = Enqueue { tenant_id: Some(TenantId(shop.tenant_id)), ..Enqueue::default() };
    store::jobs::enqueue(conn, &Publish { catalogue_id: CatalogueId(shop.id) }, options).await?;
    Ok(())
}

/// Publishes a shop's waiting chat listings.
#[derive(Debug, Serialize, Deserialize)]
pub struct Publish {
    pub catalogue_id: CatalogueId,
}

impl Job for Publish {
    const NAME: &'static str = "commerce.publish";
    const MAX_ATTEMPTS: i32 = 5;
    type State = CommerceService;

    async fn run(self, service: Arc<CommerceService>, ctx: JobContext) -> Result<(), JobError> {
        service.publish(ctx.tenant()?, self.catalogue_id).await?;
        Ok(())
    }
}

/// What one publish did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Published {
    pub synced: usize,
    pub blocked: usize,
}

#[derive(QueryableByName)]
struct Claimed {
    #[diesel(sql_type = BigInt)]
    product_id: i64,
}

impl CommerceService {
    /// The shop's chat catalogue provider, when the shop publishes to one.
    pub(crate) async fn chat_platform(
        &self,
        shop: &Shop,
    ) -> Result<Option<(Arc<dyn CatalogueGateway>, String)>, Error> {
        let (Some(messaging), Some(catalogue)) = (&self.messaging, &shop.meta_catalogue_id) else { return Ok(None) };
        if !publishes_to_chat(shop) {
            return Ok(None);
        }
        let chat = messaging.chat_catalogue(TenantId(shop.tenant_id), shop.waba_id.as_deref()).await?;
        Ok(Some((chat.gateway, catalogue.clone())))
    }

    /// Sends the shop's waiting chat listings to its catalogue, a batch at a time, until none
    /// wait. A platform that cannot be reached leaves its batch `failed` and is an error (the
    /// job tries again later).
    pub async fn publish(&self, tenant: TenantId, catalogue: CatalogueId) -> Result<Published, Error> {
        let mut conn = self.conn(tenant).await?;
        let shop = crate::service::shop_of(&mut conn, tenant, catalogue).await?;
        let Some((gateway, catalogue_ref)) = self.chat_platform(&shop).await? else { return Ok(Published::default()) };
        let mut done = Published::default();
        // a failed listing is tried once per publish: not again within this one
        let mut tried: Vec<i64> = Vec::new();
        loop {
            let ids = claim(&mut conn, &shop, &tried, self.clock.now()).await?;
            if ids.is_empty() {
                if !tried.is_empty() {
                    self.finish_answered_runs(&mut conn, &shop).await?;
                }
                return Ok(done);
            }
            tried.extend(&ids);
            // a retired product's listing waits for its removal from the platform
            let (gone, ids) = retired(&mut conn, &ids).await?;
            if !gone.is_empty() {
                let skus: Vec<String> = gone.iter().map(|(_, sku)| sku.clone()).collect();
                let ids: Vec<i64> = gone.iter().map(|(id, _)| *id).collect();
                match gateway.delete_items(&catalogue_ref, &skus).await {
                    Ok(()) => unlist_products(&mut conn, &shop, &ids).await?,
                    Err(error) => return Err(self.failed(&mut conn, &shop, &ids, error).await?),
                }
            }
            if ids.is_empty() {
                continue;
            }
            let products = views(&mut conn, &shop, &ids).await?;
            let items: Vec<CatalogueItem> = products.iter().map(item_of).collect();
            // no connection is needed while the platform answers, but one is kept: publishing
            // is a job's work, and the claim's connection is the one that records the answer
            let answer = gateway.upsert_items(&catalogue_ref, &items).await;
            let now = self.clock.now();
            match answer {
                Ok(outcomes) => {
                    let batch = record(&mut conn, &shop, &products, &outcomes, now).await?;
                    done.synced += batch.synced;
                    done.blocked += batch.blocked;
                }
                Err(error) => return Err(self.failed(&mut conn, &shop, &ids, error).await?),
            }
        }
    }

    /// Leaves a batch `failed` with why; answers the error that says so.
    async fn failed(
        &self,
        conn: &mut store::Conn,
        shop: &Shop,
        ids: &[i64],
        error: CatalogueError,
    ) -> Result<Error, Error> {
        let why = match &error {
            CatalogueError::Refused { reason } => format!("The chat catalogue refused the batch: {reason}"),
            CatalogueError::Failed(e) => format!("The chat catalogue could not be reached: {e}"),
        };
        set_state(conn, shop, ids, "failed", Some(&why), self.clock.now()).await?;
        Ok(Error::new(ErrorKind::ProviderFailure, why))
    }
}

/// Splits claimed ids into retired products (with their codes) and the others.
async fn retired(conn: &mut store::Conn, ids: &[i64]) -> Result<(Vec<(i64, String)>, Vec<i64>), Error> {
    use crate::schema::products;
    let gone: Vec<(i64, String)> = products::table
        .filter(products::id.eq_any(ids).and(products::retired_at.is_not_null()))
        .select((products::id, products::sku))
        .load(conn)
        .await?;
    let live = ids.iter().copied().filter(|id| !gone.iter().any(|(g, _)| g == id)).collect();
    Ok((gone, live))
}

/// Deletes the chat listings of products the platform no longer shows.
async fn unlist_products(conn: &mut store::Conn, shop: &Shop, ids: &[i64]) -> Result<(), Error> {
    diesel::delete(
        product_listings::table
            .filter(product_listings::tenant_id.eq(shop.tenant_id))
            .filter(product_listings::platform.eq(CHAT))
            .filter(product_listings::product_id.eq_any(ids))
            .filter(product_listings::state.eq("syncing")),
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Takes retired products off the platforms: at once off the storefront, and off the chat
/// catalogue by the next publish (their chat listings wait for it). Answers whether one waits.
pub(crate) async fn retire(conn: &mut store::Conn, shop: &Shop, ids: &[i64]) -> Result<bool, Error> {
    if ids.is_empty() {
        return Ok(false);
    }
    diesel::delete(
        product_listings::table
            .filter(product_listings::tenant_id.eq(shop.tenant_id))
            .filter(product_listings::platform.ne(CHAT))
            .filter(product_listings::product_id.eq_any(ids)),
    )
    .execute(conn)
    .await?;
    let waiting = diesel::update(
        product_listings::table
            .filter(product_listings::tenant_id.eq(shop.tenant_id))
            .filter(product_listings::platform.eq(CHAT))
            .filter(product_listings::product_id.eq_any(ids)),
    )
    .set((product_listings::state.eq("pending"), product_listings::sync_id.eq(None::<i64>)))
    .execute(conn)
    .await?;
    Ok(waiting > 0 && publishes_to_chat(shop))
}

/// Claims up to a batch of the shop's chat listings waiting to be sent (pending, failed,
/// drifted from the shop's copy, or claimed by a publisher that is gone), leaving out `tried`.
async fn claim(conn: &mut store::Conn, shop: &Shop, tried: &[i64], now: OffsetDateTime) -> Result<Vec<i64>, Error> {
    let claimed: Vec<Claimed> = diesel::sql_query(
        "UPDATE product_listings l SET state = 'syncing', updated_at = $3
         WHERE l.tenant_id = $1 AND l.platform = 'chat' AND l.product_id IN (
             SELECT w.product_id FROM product_listings w JOIN products p ON p.id = w.product_id AND p.tenant_id = $1
             WHERE w.tenant_id = $1 AND w.platform = 'chat' AND p.catalogue_id = $2
               AND (w.state IN ('pending', 'failed', 'drifted') OR (w.state = 'syncing' AND w.updated_at < $4))
               AND NOT (w.product_id = ANY($5))
             ORDER BY w.product_id LIMIT $6 FOR UPDATE OF w SKIP LOCKED)
         RETURNING l.product_id",
    )
    .bind::<BigInt, _>(shop.tenant_id)
    .bind::<BigInt, _>(shop.id)
    .bind::<Timestamptz, _>(now)
    .bind::<Timestamptz, _>(now - STALE)
    .bind::<Array<BigInt>, _>(tried)
    .bind::<BigInt, _>(MAX_BATCH as i64)
    .load(conn)
    .await?;
    let mut ids: Vec<i64> = claimed.into_iter().map(|c| c.product_id).collect();
    ids.sort_unstable();
    Ok(ids)
}

async fn set_state(
    conn: &mut store::Conn,
    shop: &Shop,
    ids: &[i64],
    state: &str,
    problem: Option<&str>,
    now: OffsetDateTime,
) -> Result<(), Error> {
    diesel::update(
        product_listings::table
            .filter(product_listings::tenant_id.eq(shop.tenant_id))
            .filter(product_listings::platform.eq(CHAT))
            .filter(product_listings::product_id.eq_any(ids)),
    )
    .set((
        product_listings::state.eq(state),
        product_listings::problem.eq(problem),
        product_listings::updated_at.eq(now),
    ))
    .execute(conn)
    .await?;
    Ok(())
}

/// Records the platform's answer for each product of a batch, and announces each product it
/// blocked for the first time.
async fn record(
    conn: &mut store::Conn,
    shop: &Shop,
    products: &[Product],
    outcomes: &[ItemOutcome],
    now: OffsetDateTime,
) -> Result<Published, Error> {
    let mut synced = Vec::new();
    let mut blocked: Vec<(&Product, &str)> = Vec::new();
    for (product, outcome) in products.iter().zip(outcomes) {
        match outcome {
            ItemOutcome::Accepted => synced.push(product.id),
            ItemOutcome::Refused { reason } => blocked.push((product, reason)),
        }
    }
    conn.transaction::<_, Error, _>(async |conn| {
        // only listings still as claimed: a write meanwhile asked for another publish
        let syncing = product_listings::state.eq("syncing");
        diesel::update(
            product_listings::table
                .filter(product_listings::tenant_id.eq(shop.tenant_id))
                .filter(product_listings::platform.eq(CHAT))
                .filter(product_listings::product_id.eq_any(&synced))
                .filter(syncing),
        )
        .set((
            product_listings::state.eq("synced"),
            product_listings::problem.eq(None::<String>),
            product_listings::updated_at.eq(now),
        ))
        .execute(conn)
        .await?;
        let blocked_ids: Vec<i64> = blocked.iter().map(|(p, _)| p.id).collect();
        let unreported: Vec<i64> = product_listings::table
            .filter(product_listings::tenant_id.eq(shop.tenant_id))
            .filter(product_listings::platform.eq(CHAT))
            .filter(product_listings::product_id.eq_any(&blocked_ids))
            .filter(product_listings::blocked_reported.eq(false))
            .select(product_listings::product_id)
            .for_update()
            .load(conn)
            .await?;
        for (product, reason) in &blocked {
            let updated = diesel::update(
                product_listings::table
                    .filter(product_listings::tenant_id.eq(shop.tenant_id))
                    .filter(product_listings::platform.eq(CHAT))
                    .filter(product_listings::product_id.eq(product.id))
                    .filter(syncing),
            )
            .set((
                product_listings::state.eq("blocked"),
                product_listings::problem.eq(*reason),
                product_listings::updated_at.eq(now),
                product_listings::blocked_reported.eq(true),
            ))
            .execute(conn)
            .await?;
            if updated == 1 && unreported.contains(&product.id) {
                let payload = crate::events::product_blocked(shop.id, product, CHAT, reason);
                store::outbox::emit(conn, TenantId(shop.tenant_id), "product.blocked", payload, now).await?;
            }
        }
        Ok(())
    })
    .await?;
    Ok(Published { synced: synced.len(), blocked: blocked.len() })
}

/// A product as the chat catalogue is sent it. `inventory` is what customers can buy
/// (`available`), so the platform never offers units held by orders.
pub(crate) fn item_of(product: &Product) -> CatalogueItem {
    CatalogueItem {
        retailer_id: product.sku.clone(),
        name: product.name.clone(),
        description: product.description.clone(),
        price_minor: product.price,
        sale_price_minor: product.sale_price,
        currency: product.currency.clone(),
        availability: product.availability.clone(),
        image_url: product.image_url.clone(),
        brand: product.brand.clone(),
        category: product.category.clone(),
        inventory: product.available,
    }
}

/// A sync run's `platforms` counts and platform-stage problems, from the listings its writes
/// asked for: `(platforms, problems, waiting)`, where `waiting` counts listings not yet answered.
pub(crate) async fn run_outcome(
    conn: &mut store::Conn,
    tenant: i64,
    sync: i64,
) -> Result<(Value, Vec<Problem>, i64), Error> {
    #[derive(QueryableByName)]
    struct Outcome {
        #[diesel(sql_type = Text)]
        platform: String,
        #[diesel(sql_type = Text)]
        state: String,
        #[diesel(sql_type = Text)]
        sku: String,
        #[diesel(sql_type = Nullable<Text>)]
        problem: Option<String>,
    }
    let rows: Vec<Outcome> = diesel::sql_query(
        "SELECT l.platform, l.state, p.sku, l.problem FROM product_listings l
         JOIN products p ON p.id = l.product_id AND p.tenant_id = l.tenant_id
         WHERE l.tenant_id = $1 AND l.sync_id = $2 ORDER BY l.platform, p.id",
    )
    .bind::<BigInt, _>(tenant)
    .bind::<BigInt, _>(sync)
    .load(conn)
    .await?;
    let mut counts: HashMap<String, (i64, i64)> = HashMap::new();
    let mut problems = Vec::new();
    let mut waiting = 0;
    for row in rows {
        let count = counts.entry(row.platform.clone()).or_default();
        match row.state.as_str() {
            "synced" | "drifted" => count.0 += 1,
            "blocked" | "failed" => {
                if row.state == "blocked" {
                    count.1 += 1;
                }
                let reason = row.problem.unwrap_or_else(|| format!("not shown on {}", row.platform));
                problems.push(Problem { sku: Some(row.sku), stage: row.platform, reason });
            }
            _ => waiting += 1,
        }
    }
    let platforms: serde_json::Map<String, Value> = counts
        .into_iter()
        .map(|(platform, (synced, blocked))| (platform, json!({ "synced": synced, "blocked": blocked })))
        .collect();
    Ok((Value::Object(platforms), problems, waiting))
}

/// `GET /catalogues/{catalogue}/listings` filters.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListingFilter {
    /// `chat` or `storefront`.
    #[param(value_type = Option<crate::catalogues::Platform>, inline)]
    pub platform: Option<String>,
    /// `pending`, `syncing`, `synced`, `failed`, `blocked` or `drifted`.
    #[param(value_type = Option<ListingState>, inline)]
    pub state: Option<String>,
}

/// Listing states (contract: Product listing).
pub const STATES: &[&str] = &["pending", "syncing", "synced", "failed", "blocked", "drifted"];

crate::rules::choice! {
    /// A listing's state.
    ListingState = STATES;
}

/// One product's listing on one platform, with the product's code.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, Queryable)]
pub struct ProductListing {
    pub product_id: i64,
    pub sku: String,
    pub name: String,
    pub platform: String,
    pub state: String,
    pub problem: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl CommerceService {
    /// The shop's listings, by product then platform (25 a page): find what a platform blocked,
    /// what waits, what drifted.
    pub async fn listings(
        &self,
        caller: &kernel::Caller,
        catalogue: CatalogueId,
        filter: ListingFilter,
        page: kernel::PageRequest,
    ) -> Result<kernel::Page<ProductListing>, Error> {
        use crate::schema::products;
        let mut rules = crate::rules::Rules::new();
        for (key, value, allowed) in [("platform", &filter.platform, PLATFORMS), ("state", &filter.state, STATES)] {
            if value.as_deref().is_some_and(|v| !allowed.contains(&v)) {
                rules.error(key, format!("The {key} must be one of {}.", allowed.join(", ")));
            }
        }
        rules.finish()?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = self.shop(&mut conn, caller, kernel::Permission::CATALOGUE_VIEW, catalogue).await?;
        let query = || {
            let mut query = product_listings::table
                .inner_join(
                    products::table.on(products::id
                        .eq(product_listings::product_id)
                        .and(products::tenant_id.eq(product_listings::tenant_id))),
                )
                .filter(product_listings::tenant_id.eq(shop.tenant_id))
                .filter(products::catalogue_id.eq(shop.id))
                .into_boxed();
            if let Some(platform) = &filter.platform {
                query = query.filter(product_listings::platform.eq(platform.clone()));
            }
            if let Some(state) = &filter.state {
                query = query.filter(product_listings::state.eq(state.clone()));
            }
            query
        };
        let total: i64 = query().count().get_result(&mut conn).await?;
        let items: Vec<ProductListing> = query()
            .order((product_listings::product_id, product_listings::platform))
            .limit(page.per_page)
            .offset(page.offset())
            .select((
                product_listings::product_id,
                products::sku,
                products::name,
                product_listings::platform,
                product_listings::state,
                product_listings::problem,
                product_listings::updated_at,
            ))
            .load(&mut conn)
            .await?;
        Ok(kernel::Page::new(items, page, total))
    }
}
