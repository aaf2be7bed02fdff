//! Shops (contract: Catalogue (shop)): their settings, the counts, and the publishing fields that
//! publishing will fill.

use std::collections::HashMap;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, Page, PageRequest, Patch, Permission};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use utoipa::__dev::ComposeSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;
use utoipa::{PartialSchema, ToSchema};

use crate::CatalogueId;
use crate::rules::{Hours, MAX_TTL_HOURS, Rules, Units, Whole, choice};
use crate::schema::{catalogues, orders, products};
use crate::service::CommerceService;

/// Lists are 25 a page (contract: Identifiers and list conventions).
pub const PER_PAGE: i64 = 25;
pub const STOCK_POLICIES: &[&str] = &["external", "svc"];
pub const SOURCES_OF_TRUTH: &[&str] = &["api", "svc", "platform"];

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

/// `POST /catalogues` (and, read the same way, `PATCH /catalogues/{catalogue}`, described as
/// [`CatalogueChanges`]): a member left out keeps the setting (or takes its default on create), a
/// null clears an optional one.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct CatalogueSettings {
    /// Required on create, up to 191 characters; never null or blank.
    #[serde(default)]
    #[schema(value_type = String, required = true, max_length = 191, pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]")]
    pub name: Patch<String>,
    /// Up to 2,000 characters.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 2000)]
    pub description: Patch<String>,
    /// Commerce vertical, free text up to 64 characters.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 64)]
    pub vertical: Patch<String>,
    /// ISO 4217: three letters (upper-cased); blank or null clears it.
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = r"^[\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*(?:[A-Za-z]{3})?[\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$")]
    pub default_currency: Patch<String>,
    /// Create only: 1 to 12 letters, digits or `-` (upper-cased).
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = r"^[\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[A-Za-z0-9-]{1,12}[\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$")]
    pub sku_prefix: Patch<String>,
    /// `external` (default) or `svc`; never null.
    #[serde(default)]
    #[schema(value_type = StockPolicy)]
    pub stock_policy: Patch<String>,
    /// `api` (default), `svc` or `platform`; never null.
    #[serde(default)]
    #[schema(value_type = SourceOfTruth)]
    pub source_of_truth: Patch<String>,
    /// Never null.
    #[serde(default)]
    #[schema(value_type = bool)]
    pub allow_backorder: Patch<bool>,
    /// 1 to 720 (default 48); never null.
    #[serde(default)]
    #[schema(value_type = Hours)]
    pub reservation_ttl_hours: Patch<Whole>,
    /// 0 or more; null: never alert.
    #[serde(default)]
    #[schema(value_type = Option<Units>)]
    pub low_stock_threshold: Patch<Whole>,
    /// Never null.
    #[serde(default)]
    #[schema(value_type = bool)]
    pub is_catalogue_visible: Patch<bool>,
    /// Never null.
    #[serde(default)]
    #[schema(value_type = bool)]
    pub is_cart_enabled: Patch<bool>,
}

/// The schema of `PATCH /catalogues/{catalogue}`: [`CatalogueSettings`] without `sku_prefix`
/// (fixed once the shop exists: sending it is 422) and with nothing required.
pub struct CatalogueChanges;

impl ComposeSchema for CatalogueChanges {
    fn compose(_: Vec<RefOr<Schema>>) -> RefOr<Schema> {
        let mut schema = <CatalogueSettings as PartialSchema>::schema();
        if let RefOr::T(Schema::Object(object)) = &mut schema {
            object.properties.shift_remove("sku_prefix");
            object.required.clear();
            object.description = Some(
                "`PATCH /catalogues/{catalogue}`: a member left out keeps the setting, a null clears an optional \
                 one; `sku_prefix` is fixed once the shop exists (sending it is 422)."
                    .to_owned(),
            );
        }
        schema
    }
}

impl ToSchema for CatalogueChanges {}

choice! {
    /// How stock is counted: `external` or `svc`.
    StockPolicy = STOCK_POLICIES;
    /// Where the catalogue's truth lives: `api`, `svc` or `platform`.
    SourceOfTruth = SOURCES_OF_TRUTH;
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

fn settings(rules: &mut Rules, body: CatalogueSettings, creating: bool) -> Changes {
    let name = rules.text("name", body.name, 191);
    if creating && !matches!(name, Patch::Set(_)) && !rules.has_error("name") {
        rules.error("name", "The name field is required.");
    } else if !creating && matches!(name, Patch::Null) {
        rules.error("name", "The name may not be empty.");
    }
    let required_flag = |rules: &mut Rules, key: &str, value: Patch<bool>| match value {
        Patch::Null => {
            rules.error(key, format!("The {key} field must be true or false."));
            None
        }
        other => other.set(),
    };
    for (key, null) in [
        ("stock_policy", matches!(body.stock_policy, Patch::Null)),
        ("source_of_truth", matches!(body.source_of_truth, Patch::Null)),
        ("reservation_ttl_hours", matches!(body.reservation_ttl_hours, Patch::Null)),
    ] {
        if null {
            rules.error(key, format!("The {key} may not be null."));
        }
    }
    Changes {
        name: name.set(),
        description: rules.text("description", body.description, 2_000).change(),
        vertical: rules.text("vertical", body.vertical, 64).change(),
        default_currency: rules.currency("default_currency", body.default_currency).change(),
        stock_policy: rules.one_of("stock_policy", body.stock_policy, STOCK_POLICIES).set(),
        source_of_truth: rules.one_of("source_of_truth", body.source_of_truth, SOURCES_OF_TRUTH).set(),
        allow_backorder: required_flag(rules, "allow_backorder", body.allow_backorder),
        reservation_ttl_hours: rules
            .int("reservation_ttl_hours", body.reservation_ttl_hours, 1, MAX_TTL_HOURS)
            .set()
            .map(|h| h as i32),
        low_stock_threshold: rules
            .int("low_stock_threshold", body.low_stock_threshold, 0, i32::MAX.into())
            .change()
            .map(|t| t.map(|t| t as i32)),
        is_catalogue_visible: required_flag(rules, "is_catalogue_visible", body.is_catalogue_visible),
        is_cart_enabled: required_flag(rules, "is_cart_enabled", body.is_cart_enabled),
    }
}

fn sku_prefix(rules: &mut Rules, prefix: Patch<String>) -> Option<String> {
    if matches!(&prefix, Patch::Set(p) if p.trim().is_empty()) {
        rules.error("sku_prefix", "The sku_prefix must be 1 to 12 letters, digits or '-'.");
        return None;
    }
    let prefix = rules.text("sku_prefix", prefix.map(|p| p.trim().to_owned()), 12).set()?;
    if prefix.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        Some(prefix.to_ascii_uppercase())
    } else {
        rules.error("sku_prefix", "The sku_prefix may contain only letters, digits and '-'.");
        None
    }
}

impl CommerceService {
    pub async fn create_catalogue(&self, caller: &Caller, mut body: CatalogueSettings) -> Result<Catalogue, Error> {
        caller.require(Permission::CATALOGUE_MANAGE)?;
        let mut rules = Rules::new();
        let prefix = std::mem::take(&mut body.sku_prefix);
        let changes = settings(&mut rules, body, true);
        let prefix = sku_prefix(&mut rules, prefix);
        rules.finish()?;
        let now = self.clock.now();
        let mut conn = self.conn(caller.tenant_id).await?;
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
    pub async fn update_catalogue(
        &self,
        caller: &Caller,
        id: CatalogueId,
        body: CatalogueSettings,
    ) -> Result<Catalogue, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        self.shop(&mut conn, caller, Permission::CATALOGUE_MANAGE, id).await?;
        let mut rules = Rules::new();
        if !body.sku_prefix.is_absent() {
            rules.error("sku_prefix", "The sku_prefix is fixed once the catalogue exists.");
        }
        let changes = settings(&mut rules, body, false);
        rules.finish()?;
        diesel::update(catalogues::table.find(id.0))
            .set((&changes, catalogues::updated_at.eq(self.clock.now())))
            .execute(&mut conn)
            .await?;
        self.catalogue_of(&mut conn, caller, id).await
    }

    pub async fn get_catalogue(&self, caller: &Caller, id: CatalogueId) -> Result<Catalogue, Error> {
        caller.require(Permission::CATALOGUE_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        self.catalogue_of(&mut conn, caller, id).await
    }

    async fn catalogue_of(&self, conn: &mut store::Conn, caller: &Caller, id: CatalogueId) -> Result<Catalogue, Error> {
        let row = crate::service::shop_of(conn, caller.tenant_id, id).await?;
        let mut counts = counts(conn, &[id.0]).await?;
        let (products, orders) = counts.remove(&id.0).unwrap_or_default();
        Ok(Catalogue::of(row, products, orders))
    }

    /// The tenant's shops, oldest first.
    pub async fn list_catalogues(&self, caller: &Caller, page: PageRequest) -> Result<Page<Catalogue>, Error> {
        caller.require(Permission::CATALOGUE_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
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
