//! Drift (contract: Product listing): every hour, each shop that publishes to a chat catalogue
//! compares the platform's copy of its listed products with its own. A listing whose copy
//! differs is marked `drifted` and `product.drifted` is sent; then the shop's `source_of_truth`
//! settles it: `api` or `svc` pushes the shop's copy back (the listing stays `drifted` until the
//! publish that ends the check sends it), `platform` pulls the changed fields into the shop's product (the listing is
//! `synced` again, the platform already showing those values).
//!
//! Stock and `image_url` are never compared (contract), nor is `availability`, which follows
//! stock. A listed product the platform no longer has is sent again, whatever the source of
//! truth: a platform copy that is gone holds no values to pull.

use std::collections::HashMap;
use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, Permission, TenantId};
use providers::catalogue::CatalogueItem;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::{Duration, OffsetDateTime};
use utoipa::ToSchema;

use crate::CatalogueId;
use crate::catalogues::Row as Shop;
use crate::products::{Cause, Change, Product, load_drafts, views, write};
use crate::publish::{CHAT, item_of};
use crate::schema::{product_listings, products};
use crate::service::CommerceService;

/// How often a shop's listings are compared.
pub const EVERY: Duration = Duration::HOUR;
/// Listings compared per round trip to the platform.
const CHUNK: i64 = 1_000;

/// One field whose values differ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Difference {
    pub field: String,
    #[schema(value_type = Object)]
    pub local: Value,
    #[schema(value_type = Object)]
    pub platform: Value,
}

/// The fields compared, with their values in the shop's copy and the platform's.
fn compared(item: &CatalogueItem) -> [(&'static str, Value); 7] {
    [
        ("name", json!(item.name)),
        ("description", json!(item.description)),
        ("price", json!(item.price_minor)),
        ("sale_price", json!(item.sale_price_minor)),
        ("currency", json!(item.currency)),
        ("brand", json!(item.brand)),
        ("category", json!(item.category)),
    ]
}

/// Where the platform's copy differs from the shop's, field by field.
pub fn differences(local: &CatalogueItem, platform: &CatalogueItem) -> Vec<Difference> {
    compared(local)
        .into_iter()
        .zip(compared(platform))
        .filter(|((_, ours), (_, theirs))| ours != theirs)
        .map(|((field, ours), (_, theirs))| Difference { field: field.to_owned(), local: ours, platform: theirs })
        .collect()
}

/// What one drift check found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct DriftReport {
    pub catalogue_id: i64,
    /// Listings compared.
    pub checked: usize,
    /// Listings whose platform copy differed.
    pub drifted: usize,
    /// Of those, sent back (`api`, `svc`).
    pub pushed: usize,
    /// Of those, taken into the shop (`platform`).
    pub pulled: usize,
    /// Listed products the platform no longer had (sent again).
    pub missing: usize,
}

/// The hourly check of one shop; it queues the next when it is done.
#[derive(Debug, Serialize, Deserialize)]
pub struct CheckDrift {
    pub catalogue_id: CatalogueId,
}

impl Job for CheckDrift {
    const NAME: &'static str = "commerce.check_drift";
    const MAX_ATTEMPTS: i32 = 3;
    type State = CommerceService;

    async fn run(self, service: Arc<CommerceService>, ctx: JobContext) -> Result<(), JobError> {
        let tenant = ctx.tenant()?;
        let checked = service.check_drift(tenant, self.catalogue_id).await;
        // the next hour's check is queued even when this one failed: one bad hour stops nothing
        let mut conn = service.conn(tenant).await?;
        if let Ok(shop) = crate::service::shop_of(&mut conn, tenant, self.catalogue_id).await
            && crate::publish::publishes_to_chat(&shop)
        {
            schedule(&mut conn, &shop, service.clock.now()).await?;
        }
        checked?;
        Ok(())
    }
}

/// Queues the shop's check for the next hour (once per hour, however often it is asked).
pub(crate) async fn schedule(conn: &mut store::Conn, shop: &Shop, now: OffsetDateTime) -> Result<(), Error> {
    let at = now + EVERY;
    let slot = at.unix_timestamp() / EVERY.whole_seconds();
    let options = Enqueue {
        tenant_id: Some(TenantId(shop.tenant_id)),
        dedupe_key: Some(format!("{}:{slot}", shop.id)),
        run_at: Some(at),
        ..Enqueue::default()
    };
    store::jobs::enqueue(conn, &CheckDrift { catalogue_id: CatalogueId(shop.id) }, options).await?;
    Ok(())
}

impl CommerceService {
    /// `gateway admin commerce check-drift`, and the hourly job: compares, marks, announces and
    /// settles every chat listing of the shop, then publishes what it pushed back.
    pub async fn check_drift(&self, tenant: TenantId, catalogue: CatalogueId) -> Result<DriftReport, Error> {
        let mut conn = self.conn(tenant).await?;
        let shop = crate::service::shop_of(&mut conn, tenant, catalogue).await?;
        let mut report = DriftReport { catalogue_id: shop.id, ..DriftReport::default() };
        let Some((gateway, catalogue_ref)) = self.chat_platform(&shop).await? else { return Ok(report) };
        let mut after = 0_i64;
        loop {
            // joined, not `IN (the shop's products)`: that reads the whole shop for every chunk
            let ids: Vec<i64> = product_listings::table
                .inner_join(
                    products::table.on(products::id
                        .eq(product_listings::product_id)
                        .and(products::tenant_id.eq(product_listings::tenant_id))),
                )
                .filter(product_listings::tenant_id.eq(tenant.0))
                .filter(product_listings::platform.eq(CHAT))
                .filter(product_listings::state.eq_any(["synced", "drifted"]))
                .filter(product_listings::product_id.gt(after))
                .filter(products::catalogue_id.eq(shop.id))
                .order(product_listings::product_id)
                .limit(CHUNK)
                .select(product_listings::product_id)
                .load(&mut conn)
                .await?;
            let Some(&last) = ids.last() else { break };
            after = last;
            let products = views(&mut conn, &shop, &ids).await?;
            let skus: Vec<String> = products.iter().map(|p| p.sku.clone()).collect();
            let copies = gateway.items(&catalogue_ref, &skus).await.map_err(|e| {
                Error::new(kernel::ErrorKind::ProviderFailure, format!("The chat catalogue could not be read: {e}"))
            })?;
            let copies: HashMap<String, CatalogueItem> =
                copies.into_iter().map(|c| (c.retailer_id.clone(), c)).collect();
            report.checked += products.len();
            let now = self.clock.now();
            for product in &products {
                match copies.get(&product.sku) {
                    None => {
                        report.missing += 1;
                        set(&mut conn, tenant, product.id, "pending").await?;
                    }
                    Some(copy) => {
                        let found = differences(&item_of(product), copy);
                        if found.is_empty() {
                            continue;
                        }
                        report.drifted += 1;
                        let pulled = self.settle(&mut conn, &shop, product, copy, &found, now).await?;
                        if pulled {
                            report.pulled += 1;
                        } else {
                            report.pushed += 1;
                        }
                    }
                }
            }
        }
        if report.pushed + report.missing > 0 {
            self.publish(tenant, catalogue).await?;
        }
        tracing::info!(catalogue = shop.id, ?report, "drift check");
        Ok(report)
    }

    /// Marks one listing drifted, announces it, and applies the shop's source of truth.
    /// Answers whether the platform's values were pulled.
    async fn settle(
        &self,
        conn: &mut store::Conn,
        shop: &Shop,
        product: &Product,
        copy: &CatalogueItem,
        found: &[crate::drift::Difference],
        now: OffsetDateTime,
    ) -> Result<bool, Error> {
        let tenant = TenantId(shop.tenant_id);
        let pull = shop.source_of_truth == "platform";
        conn.transaction::<_, Error, _>(async |conn| {
            set(conn, tenant, product.id, "drifted").await?;
            let payload = crate::events::product_drifted(shop.id, product, CHAT, found, &shop.source_of_truth);
            store::outbox::emit(conn, tenant, "product.drifted", payload, now).await?;
            if !pull {
                // `drifted` until the publish that ends the check sends the shop's copy back
                return Ok(());
            }
            let Some(loaded) = load_drafts(conn, shop.id, None, Some(product.id)).await?.pop() else {
                return Ok(());
            };
            let mut draft = loaded.draft();
            for difference in found {
                match difference.field.as_str() {
                    "name" => draft.name = copy.name.clone(),
                    "description" => draft.description = copy.description.clone(),
                    "price" => draft.price = copy.price_minor,
                    "sale_price" => draft.sale_price = copy.sale_price_minor,
                    "currency" => draft.currency = copy.currency.clone(),
                    "brand" => draft.brand = copy.brand.clone(),
                    "category" => draft.category = copy.category.clone(),
                    _ => {}
                }
            }
            let change = Change { id: Some(product.id), draft, old_inventory: loaded.inventory, revive: false };
            write(conn, shop, &[change], Cause { kind: "sync", cause: "drift pull", sync_id: None }, now).await?;
            // the platform already shows these values: nothing to send
            set(conn, tenant, product.id, "synced").await?;
            Ok(())
        })
        .await?;
        Ok(pull)
    }

    /// The same check, for a caller (MCP's `check_drift`): `catalogue.manage`.
    pub async fn check_drift_for(&self, caller: &Caller, catalogue: CatalogueId) -> Result<DriftReport, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        self.shop(&mut conn, caller, Permission::CATALOGUE_MANAGE, catalogue).await?;
        drop(conn);
        self.check_drift(caller.tenant_id, catalogue).await
    }
}

/// Sets the chat listing of one product.
async fn set(conn: &mut store::Conn, tenant: TenantId, product: i64, state: &str) -> Result<(), Error> {
    diesel::update(
        product_listings::table
            .filter(product_listings::tenant_id.eq(tenant.0))
            .filter(product_listings::platform.eq(CHAT))
            .filter(product_listings::product_id.eq(product)),
    )
    .set((product_listings::state.eq(state), product_listings::problem.eq(None::<String>)))
    .execute(conn)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item() -> CatalogueItem {
        CatalogueItem {
            retailer_id: "DUKA-00012".into(),
            name: "Kahawa 500g".into(),
            description: None,
            price_minor: 1_800_000,
            sale_price_minor: None,
            currency: "TZS".into(),
            availability: "in stock".into(),
            image_url: Some("https://duka.example/a.jpg".into()),
            brand: None,
            category: Some("Coffee".into()),
            inventory: Some(4),
        }
    }

    #[test]
    fn stock_image_and_availability_never_drift() {
        let platform =
            CatalogueItem { inventory: Some(0), image_url: None, availability: "out of stock".into(), ..item() };
        assert_eq!(differences(&item(), &platform), Vec::new());
    }

    #[test]
    fn each_compared_field_that_differs_is_named_with_both_values() {
        let platform = CatalogueItem { price_minor: 1_750_000, name: "Kahawa nusu kilo".into(), ..item() };
        let found = differences(&item(), &platform);
        assert_eq!(
            found,
            vec![
                Difference { field: "name".into(), local: json!("Kahawa 500g"), platform: json!("Kahawa nusu kilo") },
                Difference { field: "price".into(), local: json!(1_800_000), platform: json!(1_750_000) },
            ]
        );
    }
}
