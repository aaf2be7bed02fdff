//! Shops (contract: Catalogue (shop)): their settings, the counts, and the publishing fields that
//! publishing will fill.

use std::collections::HashMap;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, Page, PageRequest, Permission};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::fields::{Body, Member, object};
use crate::schema::{catalogues, orders, products};
use crate::service::CommerceService;

/// Lists are 25 a page (contract: Identifiers and list conventions).
pub const PER_PAGE: i64 = 25;
pub const STOCK_POLICIES: &[&str] = &["external", "svc"];
pub const SOURCES_OF_TRUTH: &[&str] = &["api", "svc", "platform"];
/// A month: a hold longer than that is a stock leak, not a reservation.
const MAX_TTL_HOURS: i64 = 720;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = catalogues)]
pub(crate) struct Row {
    pub id: i64,
    pub tenant_id: i64,
    pub name: String,
    pub description: Option<String>,
    pub vertical: Option<String>,
    pub default_currency: Option<String>,
    pub sku_prefix: Option<String>,
    pub stock_policy: String,
    pub source_of_truth: String,
    pub allow_backorder: bool,
    pub reservation_ttl_hours: i32,
    pub low_stock_threshold: Option<i32>,
    pub meta_catalogue_id: Option<String>,
    pub is_connected_to_waba: bool,
    pub is_catalogue_visible: bool,
    pub is_cart_enabled: bool,
    pub channels: Value,
    pub last_synced_at: Option<OffsetDateTime>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

/// A shop, as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Catalogue {
    pub id: i64,
    pub name: String,
    pub description: Option<String>,
    /// Commerce vertical, free text.
    pub vertical: Option<String>,
    /// ISO 4217.
    pub default_currency: Option<String>,
    /// Accepted on create only.
    pub sku_prefix: Option<String>,
    /// `external` or `svc`.
    pub stock_policy: String,
    /// `api`, `svc` or `platform`.
    pub source_of_truth: String,
    pub allow_backorder: bool,
    pub reservation_ttl_hours: i32,
    /// null: never alert.
    pub low_stock_threshold: Option<i32>,
    pub meta_catalogue_id: Option<String>,
    pub is_connected_to_waba: bool,
    pub is_catalogue_visible: bool,
    pub is_cart_enabled: bool,
    #[schema(value_type = Vec<Object>)]
    pub channels: Value,
    pub products_count: i64,
    pub orders_count: i64,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_synced_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl Catalogue {
    pub(crate) fn of(row: Row, products_count: i64, orders_count: i64) -> Self {
        Self {
            id: row.id,
            name: row.name,
            description: row.description,
            vertical: row.vertical,
            default_currency: row.default_currency,
            sku_prefix: row.sku_prefix,
            stock_policy: row.stock_policy,
            source_of_truth: row.source_of_truth,
            allow_backorder: row.allow_backorder,
            reservation_ttl_hours: row.reservation_ttl_hours,
            low_stock_threshold: row.low_stock_threshold,
            meta_catalogue_id: row.meta_catalogue_id,
            is_connected_to_waba: row.is_connected_to_waba,
            is_catalogue_visible: row.is_catalogue_visible,
            is_cart_enabled: row.is_cart_enabled,
            channels: row.channels,
            products_count,
            orders_count,
            last_synced_at: row.last_synced_at,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// `POST /catalogues` and `PATCH /catalogues/{catalogue}` (documentation; the service reads the
/// object itself so a null can clear).
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CatalogueSettings {
    /// Required on create, up to 191 characters.
    pub name: Option<String>,
    pub description: Option<String>,
    pub vertical: Option<String>,
    pub default_currency: Option<String>,
    /// Create only: 1 to 12 letters, digits or `-`.
    pub sku_prefix: Option<String>,
    /// `external` (default) or `svc`.
    pub stock_policy: Option<String>,
    /// `api` (default), `svc` or `platform`.
    pub source_of_truth: Option<String>,
    pub allow_backorder: Option<bool>,
    /// 1 to 720; default 48.
    pub reservation_ttl_hours: Option<i32>,
    pub low_stock_threshold: Option<i32>,
    pub is_catalogue_visible: Option<bool>,
    pub is_cart_enabled: Option<bool>,
}

/// The settings a body sets; `None` leaves a setting as it is, `Some(None)` clears it.
#[derive(Default, AsChangeset)]
#[diesel(table_name = catalogues)]
struct Changes {
    name: Option<String>,
    description: Option<Option<String>>,
    vertical: Option<Option<String>>,
    default_currency: Option<Option<String>>,
    stock_policy: Option<&'static str>,
    source_of_truth: Option<&'static str>,
    allow_backorder: Option<bool>,
    reservation_ttl_hours: Option<i32>,
    low_stock_threshold: Option<Option<i32>>,
    is_catalogue_visible: Option<bool>,
    is_cart_enabled: Option<bool>,
}

fn settings(body: &mut Body<'_>, creating: bool) -> Changes {
    let name = body.text("name", 191);
    if creating && !matches!(name, Member::Set(_)) && !body.has_error("name") {
        body.error("name", "The name field is required.");
    } else if !creating && matches!(name, Member::Null) {
        body.error("name", "The name may not be empty.");
    }
    let required_flag = |body: &mut Body<'_>, key: &str| match body.bool(key) {
        Member::Null => {
            body.error(key, format!("The {key} field must be true or false."));
            None
        }
        other => other.set(),
    };
    let changes = Changes {
        name: name.set(),
        description: body.text("description", 2_000).change(),
        vertical: body.text("vertical", 64).change(),
        default_currency: body.currency("default_currency").change(),
        stock_policy: body.one_of("stock_policy", STOCK_POLICIES).set(),
        source_of_truth: body.one_of("source_of_truth", SOURCES_OF_TRUTH).set(),
        allow_backorder: required_flag(body, "allow_backorder"),
        reservation_ttl_hours: body.int("reservation_ttl_hours", 1, MAX_TTL_HOURS).set().map(|h| h as i32),
        low_stock_threshold: body.int("low_stock_threshold", 0, i32::MAX.into()).change().map(|t| t.map(|t| t as i32)),
        is_catalogue_visible: required_flag(body, "is_catalogue_visible"),
        is_cart_enabled: required_flag(body, "is_cart_enabled"),
    };
    for key in ["stock_policy", "source_of_truth", "reservation_ttl_hours"] {
        if body.is_null(key) {
            body.error(key, format!("The {key} may not be null."));
        }
    }
    changes
}

fn sku_prefix(body: &mut Body<'_>) -> Option<String> {
    if body.is_blank("sku_prefix") {
        body.error("sku_prefix", "The sku_prefix must be 1 to 12 letters, digits or '-'.");
        return None;
    }
    let prefix = body.text("sku_prefix", 12).set()?;
    if prefix.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        Some(prefix.to_ascii_uppercase())
    } else {
        body.error("sku_prefix", "The sku_prefix may contain only letters, digits and '-'.");
        None
    }
}

impl CommerceService {
    pub async fn create_catalogue(&self, caller: &Caller, body: Value) -> Result<Catalogue, Error> {
        caller.require(Permission::CATALOGUE_MANAGE)?;
        let mut body = Body::new(object(&body)?);
        let changes = settings(&mut body, true);
        let prefix = sku_prefix(&mut body);
        body.errors.finish()?;
        let now = self.clock.now();
        let mut conn = self.conn().await?;
        let row = conn
            .transaction::<_, Error, _>(async |conn| {
                let id = diesel::insert_into(catalogues::table)
                    .values((
                        catalogues::tenant_id.eq(caller.tenant_id.0),
                        catalogues::name.eq(changes.name.clone().unwrap_or_default()),
                        catalogues::sku_prefix.eq(prefix),
                        // contract: default `external` for shops made through the API, `api` the truth
                        catalogues::stock_policy.eq(changes.stock_policy.unwrap_or("external")),
                        catalogues::source_of_truth.eq(changes.source_of_truth.unwrap_or("api")),
                        catalogues::created_at.eq(now),
                        catalogues::updated_at.eq(now),
                    ))
                    .returning(catalogues::id)
                    .get_result::<i64>(conn)
                    .await?;
                let row = diesel::update(catalogues::table.find(id))
                    .set(&changes)
                    .returning(Row::as_returning())
                    .get_result(conn)
                    .await?;
                Ok(row)
            })
            .await?;
        Ok(Catalogue::of(row, 0, 0))
    }

    /// Any setting but `sku_prefix` (contract: fixed after creation).
    pub async fn update_catalogue(&self, caller: &Caller, id: i64, body: Value) -> Result<Catalogue, Error> {
        let mut conn = self.conn().await?;
        self.shop(&mut conn, caller, Permission::CATALOGUE_MANAGE, id).await?;
        let mut body = Body::new(object(&body)?);
        if body.has("sku_prefix") {
            body.error("sku_prefix", "The sku_prefix is fixed once the catalogue exists.");
        }
        let changes = settings(&mut body, false);
        body.errors.finish()?;
        diesel::update(catalogues::table.find(id))
            .set((&changes, catalogues::updated_at.eq(self.clock.now())))
            .execute(&mut conn)
            .await?;
        self.catalogue_of(&mut conn, caller, id).await
    }

    pub async fn get_catalogue(&self, caller: &Caller, id: i64) -> Result<Catalogue, Error> {
        caller.require(Permission::CATALOGUE_VIEW)?;
        let mut conn = self.conn().await?;
        self.catalogue_of(&mut conn, caller, id).await
    }

    async fn catalogue_of(&self, conn: &mut store::Conn, caller: &Caller, id: i64) -> Result<Catalogue, Error> {
        let row = crate::service::shop_of(conn, caller.tenant_id, id).await?;
        let mut counts = counts(conn, &[id]).await?;
        let (products, orders) = counts.remove(&id).unwrap_or_default();
        Ok(Catalogue::of(row, products, orders))
    }

    /// The tenant's shops, oldest first.
    pub async fn list_catalogues(&self, caller: &Caller, page: PageRequest) -> Result<Page<Catalogue>, Error> {
        caller.require(Permission::CATALOGUE_VIEW)?;
        let mut conn = self.conn().await?;
        let mine = catalogues::tenant_id.eq(caller.tenant_id.0);
        let total: i64 = catalogues::table.filter(mine).count().get_result(&mut conn).await?;
        let rows: Vec<Row> = catalogues::table
            .filter(mine)
            .order(catalogues::id.asc())
            .limit(page.per_page)
            .offset(page.offset())
            .select(Row::as_select())
            .load(&mut conn)
            .await?;
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let counts = counts(&mut conn, &ids).await?;
        let items = rows
            .into_iter()
            .map(|row| {
                let (products, orders) = counts.get(&row.id).copied().unwrap_or_default();
                Catalogue::of(row, products, orders)
            })
            .collect();
        Ok(Page::new(items, page, total))
    }
}

/// `(products on the shelf, orders)` per shop.
async fn counts(conn: &mut store::Conn, ids: &[i64]) -> Result<HashMap<i64, (i64, i64)>, Error> {
    let shelf: Vec<(i64, i64)> = products::table
        .filter(products::catalogue_id.eq_any(ids).and(products::retired_at.is_null()))
        .group_by(products::catalogue_id)
        .select((products::catalogue_id, diesel::dsl::count_star()))
        .load(conn)
        .await?;
    let made: Vec<(i64, i64)> = orders::table
        .filter(orders::catalogue_id.eq_any(ids))
        .group_by(orders::catalogue_id)
        .select((orders::catalogue_id, diesel::dsl::count_star()))
        .load(conn)
        .await?;
    let mut counts: HashMap<i64, (i64, i64)> = HashMap::new();
    for (id, n) in shelf {
        counts.entry(id).or_default().0 = n;
    }
    for (id, n) in made {
        counts.entry(id).or_default().1 = n;
    }
    Ok(counts)
}
