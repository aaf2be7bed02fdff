//! Stock (contract: Inventory level and movement): on-hand counts, holds taken by orders under
//! row locks so the last unit goes to one customer only, the movement trail, and `stock.low`.

use std::collections::HashMap;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Date, Integer, Nullable, Text, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, Page, PageRequest, Patch, Permission};
use serde::{Deserialize, Serialize};
use store::Prepare;
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::CatalogueId;
use crate::catalogues::Row as Shop;
use crate::products::{self, ProductRef, derived_availability};
use crate::rules::{Rules, Units, Whole, sent};
use crate::schema::{products as p, stock_movements as m};
use crate::service::CommerceService;

/// Rows of one inventory push (contract: Limits).
pub const MAX_LEVELS: usize = 5_000;
/// Movements are 50 a page.
pub const MOVEMENTS_PER_PAGE: i64 = 50;

/// One product's stock (contract: Inventory level).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Level {
    pub sku: String,
    pub product_id: i64,
    /// On hand; null when untracked.
    pub inventory: Option<i32>,
    /// Held by orders.
    pub reserved: i32,
    pub available: Option<i32>,
    pub availability: String,
}

/// One entry of the audit trail (contract: movement).
#[derive(Debug, Clone, Serialize, ToSchema, Queryable, Selectable)]
#[diesel(table_name = m)]
pub struct Movement {
    pub id: i64,
    /// `reserve`, `release`, `commit`, `adjust`, `sync`.
    pub kind: String,
    /// Signed from the shelf's point of view: negative takes units away.
    pub quantity: i32,
    /// The figures after the movement.
    pub inventory: Option<i32>,
    pub reserved: i32,
    pub cause: String,
    pub order_id: Option<i64>,
    pub sync_id: Option<i64>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A movement with its `available`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MovementView {
    #[serde(flatten)]
    pub movement: Movement,
    pub available: Option<i32>,
}

/// `POST /catalogues/{catalogue}/inventory`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct LevelsPush {
    /// 1 to 5,000 absolute on-hand counts; the last row for a code wins.
    #[schema(value_type = Vec<LevelPush>, min_items = 1, max_items = 5000)]
    pub levels: Vec<LevelPush>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct LevelPush {
    /// The product's code, up to 100 characters, not blank (required; `retailer_id` is accepted
    /// instead).
    #[schema(
        max_length = 100,
        pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub sku: Option<String>,
    /// Alias of `sku`, read when that is not sent.
    pub retailer_id: Option<String>,
    /// 0 or more units on hand.
    #[schema(value_type = Units)]
    pub inventory: Whole,
}

/// What an inventory push did.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Pushed {
    pub received: usize,
    pub updated: usize,
    pub unchanged: usize,
    pub unknown_skus: Vec<String>,
    /// The resulting figures of every known code.
    pub derived: Vec<Level>,
}

/// `GET /catalogues/{catalogue}/inventory` filters.
#[derive(Debug, Clone, Default)]
pub struct LevelFilter {
    pub skus: Vec<String>,
    pub tracked_only: bool,
}

/// Movements of on-hand counts written by a product update (`adjust`) or a sync (`sync`), one
/// per product, with its figures after the change.
pub(crate) async fn record_counts(
    conn: &mut store::Conn,
    ids: &[i64],
    quantities: &[i32],
    kind: &str,
    cause: &str,
    sync_id: Option<i64>,
    now: OffsetDateTime,
) -> Result<(), Error> {
    if ids.is_empty() {
        return Ok(());
    }
    diesel::sql_query(
        "INSERT INTO stock_movements (tenant_id, product_id, kind, quantity, inventory, reserved, cause, sync_id,
             created_at)
         SELECT p.tenant_id, p.id, $3, u.q, p.inventory, p.reserved, $4, $5, $6
         FROM unnest($1::bigint[], $2::int[]) WITH ORDINALITY AS u(id, q, n)
         JOIN products p ON p.id = u.id
         ORDER BY u.n",
    )
    .bind::<Array<BigInt>, _>(ids)
    .bind::<Array<Integer>, _>(quantities)
    .bind::<Text, _>(kind)
    .bind::<Text, _>(cause)
    .bind::<Nullable<BigInt>, _>(sync_id)
    .bind::<Timestamptz, _>(now)
    .prepared()
    .execute(conn)
    .await?;
    Ok(())
}

/// Locks the products in id order (as every writer does, so two never wait on each other) and
/// reads their figures.
async fn lock(conn: &mut store::Conn, ids: &[i64]) -> Result<HashMap<i64, Figures>, Error> {
    let rows: Vec<Figures> =
        diesel::sql_query("SELECT id, inventory, reserved FROM products WHERE id = ANY($1) ORDER BY id FOR UPDATE")
            .bind::<Array<BigInt>, _>(ids)
            .prepared()
            .load(conn)
            .await?;
    Ok(rows.into_iter().map(|f| (f.id, f)).collect())
}

/// Adds `reserved` and `inventory` deltas to the products and writes each one's movement
/// (`kind`, signed `quantities`, the figures after) in the same statement.
async fn shift(
    conn: &mut store::Conn,
    ids: &[i64],
    (reserved, inventory): (&[i32], &[i32]),
    (kind, quantities): (&str, &[i32]),
    why: &OrderCause<'_>,
) -> Result<(), Error> {
    if ids.is_empty() {
        return Ok(());
    }
    diesel::sql_query(
        "WITH moved AS (
             UPDATE products p SET reserved = p.reserved + u.r, inventory = p.inventory + u.i
             FROM unnest($1::bigint[], $2::int[], $3::int[], $4::int[]) AS u(id, r, i, q)
             WHERE p.id = u.id
             RETURNING p.id, p.tenant_id, p.inventory, p.reserved, u.q)
         INSERT INTO stock_movements (tenant_id, product_id, kind, quantity, inventory, reserved, cause, order_id,
             created_at)
         SELECT tenant_id, id, $5, q, inventory, reserved, $6, $7, $8 FROM moved ORDER BY id",
    )
    .bind::<Array<BigInt>, _>(ids)
    .bind::<Array<Integer>, _>(reserved)
    .bind::<Array<Integer>, _>(inventory)
    .bind::<Array<Integer>, _>(quantities)
    .bind::<Text, _>(kind)
    .bind::<Text, _>(why.cause)
    .bind::<BigInt, _>(why.order_id)
    .bind::<Timestamptz, _>(why.now)
    .prepared()
    .execute(conn)
    .await?;
    Ok(())
}

/// Why holds move: the order and what happened to it.
pub(crate) struct OrderCause<'a> {
    pub order_id: i64,
    pub cause: &'a str,
    pub now: OffsetDateTime,
}

/// A product's stock as read under its row lock.
#[derive(QueryableByName)]
pub(crate) struct Figures {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = Nullable<Integer>)]
    pub inventory: Option<i32>,
    #[diesel(sql_type = Integer)]
    pub reserved: i32,
}

/// Holds up to `wanted` units of each product: all of them when stock is untracked or backorder
/// is allowed, else what is available. Answers the units held per product.
pub(crate) async fn hold(
    conn: &mut store::Conn,
    wanted: &[(i64, i32)],
    allow_backorder: bool,
    why: &OrderCause<'_>,
) -> Result<HashMap<i64, i32>, Error> {
    let ids: Vec<i64> = wanted.iter().map(|(id, _)| *id).collect();
    let figures = lock(conn, &ids).await?;
    hold_locked(conn, &figures, wanted, allow_backorder, why).await
}

/// `hold`, for products the caller has locked (in id order) and read.
pub(crate) async fn hold_locked(
    conn: &mut store::Conn,
    figures: &HashMap<i64, Figures>,
    wanted: &[(i64, i32)],
    allow_backorder: bool,
    why: &OrderCause<'_>,
) -> Result<HashMap<i64, i32>, Error> {
    let mut held = HashMap::new();
    for (id, quantity) in wanted {
        let take = match figures.get(id) {
            None => 0,
            Some(Figures { inventory: None, .. }) => *quantity,
            Some(_) if allow_backorder => *quantity,
            Some(Figures { inventory: Some(on_hand), reserved, .. }) => (*quantity).min((on_hand - reserved).max(0)),
        };
        held.insert(*id, take);
    }
    let mut taken: Vec<(i64, i32)> = held.iter().filter(|(_, t)| **t > 0).map(|(i, t)| (*i, *t)).collect();
    taken.sort_unstable();
    let (ids, takes): (Vec<i64>, Vec<i32>) = taken.into_iter().unzip();
    let negative: Vec<i32> = takes.iter().map(|t| -t).collect();
    shift(conn, &ids, (&takes, &vec![0; ids.len()]), ("reserve", &negative), why).await?;
    Ok(held)
}

/// Ends holds without taking the units (a cancellation, a refund, an expiry).
pub(crate) async fn release(conn: &mut store::Conn, held: &[(i64, i32)], why: &OrderCause<'_>) -> Result<(), Error> {
    let (ids, quantities) = positive(held);
    lock(conn, &ids).await?;
    let negative: Vec<i32> = quantities.iter().map(|q| -q).collect();
    shift(conn, &ids, (&negative, &vec![0; ids.len()]), ("release", &quantities), why).await
}

/// Turns holds into sales: under `svc` the units leave the count on hand; under `external` the
/// outside system owns the count, so only the hold ends (contract: Order status).
pub(crate) async fn commit(
    conn: &mut store::Conn,
    held: &[(i64, i32)],
    policy: &str,
    why: &OrderCause<'_>,
) -> Result<(), Error> {
    let (ids, quantities) = positive(held);
    lock(conn, &ids).await?;
    let negative: Vec<i32> = quantities.iter().map(|q| -q).collect();
    let on_hand = if policy == "svc" { negative.clone() } else { vec![0; ids.len()] };
    shift(conn, &ids, (&negative, &on_hand), ("commit", &negative), why).await
}

/// Puts committed units back on hand (a confirmed order cancelled or sent back); under
/// `external` there is nothing of ours to put back.
pub(crate) async fn restock(
    conn: &mut store::Conn,
    committed: &[(i64, i32)],
    policy: &str,
    why: &OrderCause<'_>,
) -> Result<(), Error> {
    if policy != "svc" {
        return Ok(());
    }
    let (ids, quantities) = positive(committed);
    lock(conn, &ids).await?;
    shift(conn, &ids, (&vec![0; ids.len()], &quantities), ("release", &quantities), why).await
}

fn positive(quantities: &[(i64, i32)]) -> (Vec<i64>, Vec<i32>) {
    quantities.iter().filter(|(_, q)| *q > 0).copied().unzip()
}

/// Emits `stock.low` for the products whose `available` is at or below the shop's threshold,
/// at most once per product per UTC day (contract: Payload shapes).
pub(crate) async fn check_low(
    conn: &mut store::Conn,
    shop: &Shop,
    ids: &[i64],
    now: OffsetDateTime,
) -> Result<(), Error> {
    let Some(threshold) = shop.low_stock_threshold else {
        return Ok(());
    };
    if ids.is_empty() {
        return Ok(());
    }
    let today = now.to_offset(time::UtcOffset::UTC).date();
    #[derive(QueryableByName)]
    struct Low {
        #[diesel(sql_type = BigInt)]
        id: i64,
    }
    let low: Vec<Low> = diesel::sql_query(
        "UPDATE products SET low_stock_alerted_on = $2
         WHERE id = ANY($1) AND inventory IS NOT NULL AND inventory - reserved <= $3
           AND low_stock_alerted_on IS DISTINCT FROM $2
         RETURNING id",
    )
    .bind::<Array<BigInt>, _>(ids)
    .bind::<Date, _>(today)
    .bind::<Integer, _>(threshold)
    .prepared()
    .load(conn)
    .await?;
    if low.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = low.into_iter().map(|l| l.id).collect();
    for product in products::views(conn, shop, &ids).await? {
        let payload = crate::events::stock_low(shop.id, &product, threshold);
        store::outbox::emit(conn, kernel::TenantId(shop.tenant_id), "stock.low", payload, now).await?;
    }
    Ok(())
}

fn level_of(row: (i64, String, Option<i32>, i32, Option<String>), shop: &Shop) -> Level {
    let (product_id, sku, inventory, reserved, explicit) = row;
    Level {
        availability: explicit
            .unwrap_or_else(|| derived_availability(inventory, reserved, shop.allow_backorder).to_owned()),
        sku,
        product_id,
        inventory,
        reserved,
        available: inventory.map(|n| n - reserved),
    }
}

type LevelRow = (i64, String, Option<i32>, i32, Option<String>);
const LEVEL_COLUMNS: (p::id, p::sku, p::inventory, p::reserved, p::availability) =
    (p::id, p::sku, p::inventory, p::reserved, p::availability);

impl CommerceService {
    /// Absolute on-hand counts for up to 5,000 codes.
    pub async fn push_levels(
        &self,
        caller: &Caller,
        catalogue: CatalogueId,
        body: LevelsPush,
    ) -> Result<Pushed, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = self.shop(&mut conn, caller, Permission::CATALOGUE_MANAGE, catalogue).await?;
        let levels = check_levels(&body)?;
        let received = levels.len();
        // the last row for a code wins
        let mut wanted: HashMap<String, i32> = HashMap::new();
        let mut order: Vec<String> = Vec::new();
        for (sku, count) in levels {
            if wanted.insert(sku.clone(), count).is_none() {
                order.push(sku);
            }
        }
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let skus: Vec<&String> = order.iter().collect();
            let ids: Vec<i64> = p::table
                .filter(p::catalogue_id.eq(shop.id).and(p::retired_at.is_null()).and(p::sku.eq_any(&skus)))
                .select(p::id)
                .load(conn)
                .await?;
            lock(conn, &ids).await?;
            let rows: Vec<LevelRow> = p::table.filter(p::id.eq_any(&ids)).select(LEVEL_COLUMNS).load(conn).await?;
            let by_sku: HashMap<String, LevelRow> = rows.into_iter().map(|r| (r.1.clone(), r)).collect();
            let mut changed: Vec<(i64, i32, i32)> = Vec::new();
            let mut unknown = Vec::new();
            let mut unchanged = 0;
            for sku in &order {
                let count = wanted[sku];
                match by_sku.get(sku) {
                    None => unknown.push(sku.clone()),
                    Some(row) if row.2 == Some(count) => unchanged += 1,
                    Some(row) => changed.push((row.0, count, count - row.2.unwrap_or(0))),
                }
            }
            let ids: Vec<i64> = changed.iter().map(|c| c.0).collect();
            let counts: Vec<i32> = changed.iter().map(|c| c.1).collect();
            let deltas: Vec<i32> = changed.iter().map(|c| c.2).collect();
            diesel::sql_query(
                "UPDATE products p SET inventory = u.n, updated_at = $3
                 FROM unnest($1::bigint[], $2::int[]) AS u(id, n) WHERE p.id = u.id",
            )
            .bind::<Array<BigInt>, _>(&ids)
            .bind::<Array<Integer>, _>(&counts)
            .bind::<Timestamptz, _>(now)
            .prepared()
            .execute(conn)
            .await?;
            record_counts(conn, &ids, &deltas, "sync", "inventory push", None, now).await?;
            check_low(conn, &shop, &ids, now).await?;
            // the platforms show stock (availability, units to sell): changed levels are sent
            if crate::publish::mark(conn, &shop, &ids, None, now).await? {
                crate::publish::queue(conn, &shop).await?;
            }
            let known: Vec<i64> = order.iter().filter_map(|s| by_sku.get(s).map(|r| r.0)).collect();
            let rows: Vec<LevelRow> = p::table.filter(p::id.eq_any(&known)).select(LEVEL_COLUMNS).load(conn).await?;
            let mut by_id: HashMap<i64, LevelRow> = rows.into_iter().map(|r| (r.0, r)).collect();
            let derived = known.iter().filter_map(|id| by_id.remove(id)).map(|r| level_of(r, &shop)).collect();
            Ok(Pushed { received, updated: changed.len(), unchanged, unknown_skus: unknown, derived })
        })
        .await
    }

    /// The shelf's stock, by product id.
    pub async fn levels(
        &self,
        caller: &Caller,
        catalogue: CatalogueId,
        filter: &LevelFilter,
        page: PageRequest,
    ) -> Result<Page<Level>, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = self.shop(&mut conn, caller, Permission::CATALOGUE_VIEW, catalogue).await?;
        let query = || {
            let mut query = p::table.filter(p::catalogue_id.eq(shop.id).and(p::retired_at.is_null())).into_boxed();
            if !filter.skus.is_empty() {
                query = query.filter(p::sku.eq_any(filter.skus.clone()));
            }
            if filter.tracked_only {
                query = query.filter(p::inventory.is_not_null());
            }
            query
        };
        let total: i64 = query().count().get_result(&mut conn).await?;
        let rows: Vec<LevelRow> = query()
            .order(p::id.asc())
            .limit(page.per_page)
            .offset(page.offset())
            .select(LEVEL_COLUMNS)
            .load(&mut conn)
            .await?;
        Ok(Page::new(rows.into_iter().map(|r| level_of(r, &shop)).collect(), page, total))
    }

    /// A product's movements, newest first.
    pub async fn movements(
        &self,
        caller: &Caller,
        catalogue: CatalogueId,
        product: &ProductRef,
        page: PageRequest,
    ) -> Result<Page<MovementView>, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = self.shop(&mut conn, caller, Permission::CATALOGUE_VIEW, catalogue).await?;
        let id = product.resolve(&mut conn, shop.id).await?;
        let total: i64 = m::table.filter(m::product_id.eq(id)).count().get_result(&mut conn).await?;
        let rows: Vec<Movement> = m::table
            .filter(m::product_id.eq(id))
            .order(m::id.desc())
            .limit(page.per_page)
            .offset(page.offset())
            .select(Movement::as_select())
            .load(&mut conn)
            .await?;
        let items = rows
            .into_iter()
            .map(|movement| MovementView { available: movement.inventory.map(|n| n - movement.reserved), movement })
            .collect();
        Ok(Page::new(items, page, total))
    }
}

/// The push's rows, or one 422 naming every bad one (`levels.3.inventory`).
fn check_levels(body: &LevelsPush) -> Result<Vec<(String, i32)>, Error> {
    let mut rules = Rules::new();
    let levels = rules.rows("levels", &body.levels, MAX_LEVELS, |rules, row| {
        let sku = rules.sku(sent(row.sku.clone()), sent(row.retailer_id.clone()));
        let sku = rules.required("sku", sku);
        let count = rules.int("inventory", Patch::Set(row.inventory), 0, i32::MAX.into());
        let count = rules.required("inventory", count);
        Some((sku?, count? as i32))
    });
    rules.finish()?;
    Ok(levels)
}
