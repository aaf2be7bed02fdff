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
use providers::catalogue::CatalogueError;

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
    pub waba_id: Option<String>,
    pub storefront_token: Option<String>,
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
    /// The business account the shop publishes to, while connected.
    pub waba_id: Option<String>,
    /// The platforms the shop publishes to: `chat`, `storefront`; may be empty.
    #[schema(value_type = Vec<Platform>)]
    pub channels: Vec<String>,
    /// The public shop page, while `storefront` is one of the `channels`.
    pub storefront_url: Option<String>,
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
    pub(crate) fn of(row: Row, products_count: i64, orders_count: i64, public_url: &str) -> Self {
        let channels = crate::publish::channels_of(&row);
        let storefront_url = match &row.storefront_token {
            Some(token) if channels.iter().any(|c| c == crate::publish::STOREFRONT) => {
                Some(crate::storefront::url(public_url, token))
            }
            _ => None,
        };
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
            waba_id: row.waba_id,
            channels,
            storefront_url,
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
    /// Connects the shop to this business account (`GET /chat/accounts`), creating its
    /// provider catalogue unless `meta_catalogue_id` names one to adopt; null disconnects.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 64)]
    pub waba_id: Patch<String>,
    /// Adopts this provider catalogue (connecting to `waba_id`, or to the only business
    /// account); never null (disconnect with `waba_id: null`).
    #[serde(default)]
    #[schema(value_type = String, max_length = 64)]
    pub meta_catalogue_id: Patch<String>,
    /// `true` connects to the only business account (422 when there are several and no
    /// `waba_id`); `false` disconnects. Never null.
    #[serde(default)]
    #[schema(value_type = bool)]
    pub is_connected_to_waba: Patch<bool>,
    /// Where the shop is published: `chat` (needs a business account) and `storefront`; may
    /// be empty, never null. Left out, connecting adds `chat` and disconnecting removes it.
    #[serde(default)]
    #[schema(value_type = Vec<Platform>, max_items = 2)]
    pub channels: Patch<Vec<String>>,
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
    /// A platform a shop publishes to: `chat` or `storefront`.
    Platform = crate::publish::PLATFORMS;
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

/// What a body asks of the shop's platforms (`waba_id`, `meta_catalogue_id`,
/// `is_connected_to_waba`, `channels`), checked.
#[derive(Debug, Default)]
pub(crate) struct Platforms {
    waba_id: Patch<String>,
    meta_catalogue_id: Patch<String>,
    is_connected_to_waba: Patch<bool>,
    channels: Patch<Vec<String>>,
}

impl Platforms {
    /// Takes the platform members out of `body`, checking them.
    fn take(rules: &mut Rules, body: &mut CatalogueSettings) -> Self {
        let waba_id = rules.text("waba_id", std::mem::take(&mut body.waba_id), 64);
        let meta_catalogue_id = rules.text("meta_catalogue_id", std::mem::take(&mut body.meta_catalogue_id), 64);
        if matches!(meta_catalogue_id, Patch::Null) {
            rules.error("meta_catalogue_id", "The meta_catalogue_id may not be null: disconnect with waba_id null.");
        }
        let is_connected_to_waba = std::mem::take(&mut body.is_connected_to_waba);
        if matches!(is_connected_to_waba, Patch::Null) {
            rules.error("is_connected_to_waba", "The is_connected_to_waba field must be true or false.");
        }
        let channels = std::mem::take(&mut body.channels).map(|list| {
            let mut kept: Vec<String> = Vec::new();
            for channel in list {
                let channel = channel.trim().to_ascii_lowercase();
                if !crate::publish::PLATFORMS.contains(&channel.as_str()) {
                    rules
                        .error("channels", format!("The channels may hold only chat and storefront, not {channel:?}."));
                } else if !kept.contains(&channel) {
                    kept.push(channel);
                }
            }
            kept
        });
        if matches!(channels, Patch::Null) {
            rules.error("channels", "The channels may not be null: send [] to publish nowhere.");
        }
        let conflicting = matches!(waba_id, Patch::Null) || is_connected_to_waba == Patch::Set(false);
        if conflicting && matches!(meta_catalogue_id, Patch::Set(_)) {
            rules.error("meta_catalogue_id", "A catalogue cannot be adopted while disconnecting.");
        }
        Self { waba_id, meta_catalogue_id, is_connected_to_waba, channels }
    }

    fn is_empty(&self) -> bool {
        self.waba_id.is_absent()
            && self.meta_catalogue_id.is_absent()
            && self.is_connected_to_waba.is_absent()
            && self.channels.is_absent()
    }
}

fn provider_failure(e: providers::SendError) -> Error {
    Error::new(kernel::ErrorKind::ProviderFailure, format!("The chat provider: {e}"))
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
        let platforms = Platforms::take(&mut rules, &mut body);
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
        if platforms.is_empty() {
            return Ok(Catalogue::of(row, 0, 0, &self.public_url));
        }
        // a connection the provider refuses leaves the shop made, unconnected: the answer says why
        self.apply_platforms(&mut conn, &row, platforms).await?;
        self.catalogue_of(&mut conn, caller, CatalogueId(row.id)).await
    }

    /// Any setting but `sku_prefix` (contract: fixed after creation).
    pub async fn update_catalogue(
        &self,
        caller: &Caller,
        id: CatalogueId,
        mut body: CatalogueSettings,
    ) -> Result<Catalogue, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        self.shop(&mut conn, caller, Permission::CATALOGUE_MANAGE, id).await?;
        let mut rules = Rules::new();
        if !body.sku_prefix.is_absent() {
            rules.error("sku_prefix", "The sku_prefix is fixed once the catalogue exists.");
        }
        let platforms = Platforms::take(&mut rules, &mut body);
        let changes = settings(&mut rules, body, false);
        rules.finish()?;
        let row: Row = diesel::update(catalogues::table.find(id.0))
            .set((&changes, catalogues::updated_at.eq(self.clock.now())))
            .returning(Row::as_returning())
            .get_result(&mut conn)
            .await?;
        if !platforms.is_empty() {
            self.apply_platforms(&mut conn, &row, platforms).await?;
        }
        self.catalogue_of(&mut conn, caller, id).await
    }

    pub async fn get_catalogue(&self, caller: &Caller, id: CatalogueId) -> Result<Catalogue, Error> {
        caller.require(Permission::CATALOGUE_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        self.catalogue_of(&mut conn, caller, id).await
    }

    /// Connects, disconnects and publishes the shop as `wanted` says. The provider is asked
    /// first (no transaction is open while it answers), then the shop and its listings change
    /// together.
    async fn apply_platforms(&self, conn: &mut store::Conn, shop: &Row, wanted: Platforms) -> Result<(), Error> {
        let tenant = kernel::TenantId(shop.tenant_id);
        let (mut waba_id, mut catalogue_id, mut connected) =
            (shop.waba_id.clone(), shop.meta_catalogue_id.clone(), shop.is_connected_to_waba);
        let disconnect = matches!(wanted.waba_id, Patch::Null) || wanted.is_connected_to_waba == Patch::Set(false);
        let named = wanted.waba_id.clone().set();
        let connect = !disconnect
            && (named.is_some()
                || wanted.is_connected_to_waba == Patch::Set(true)
                || !wanted.meta_catalogue_id.is_absent());
        if disconnect {
            (waba_id, catalogue_id, connected) = (None, None, false);
        } else if connect {
            let Some(messaging) = &self.messaging else {
                return Err(Error::validation("No chat account is configured for this account."));
            };
            // staying on the account it is connected to, unless another is named
            let account = named.or_else(|| waba_id.clone().filter(|_| connected));
            let chat = messaging.chat_catalogue(tenant, account.as_deref()).await?;
            let same_account = connected && waba_id.as_deref() == Some(chat.waba_id.as_str());
            match wanted.meta_catalogue_id.clone().set() {
                Some(adopted) => {
                    chat.gateway.connect_catalogue(&chat.waba_id, &adopted).await.map_err(|e| match e {
                        CatalogueError::Refused { reason } => Error::field("meta_catalogue_id", reason),
                        CatalogueError::Failed(e) => provider_failure(e),
                    })?;
                    catalogue_id = Some(adopted);
                }
                None if same_account && catalogue_id.is_some() => {}
                None => {
                    let made = chat.gateway.create_catalogue(&chat.waba_id, &shop.name).await.map_err(|e| match e {
                        CatalogueError::Refused { reason } => Error::new(
                            kernel::ErrorKind::ProviderFailure,
                            format!("The chat provider refused to create the catalogue: {reason}"),
                        ),
                        CatalogueError::Failed(e) => provider_failure(e),
                    })?;
                    catalogue_id = Some(made);
                }
            }
            (waba_id, connected) = (Some(chat.waba_id), true);
        }
        let before = crate::publish::channels_of(shop);
        let channels_sent = !wanted.channels.is_absent();
        let mut channels = match wanted.channels {
            Patch::Set(list) => list,
            _ => before.clone(),
        };
        if !channels_sent && connect && !shop.is_connected_to_waba {
            channels.push(crate::publish::CHAT.to_owned());
        }
        if !connected {
            if channels_sent && channels.iter().any(|c| c == crate::publish::CHAT) {
                return Err(Error::field(
                    "channels",
                    "The chat platform needs a business account: connect the shop with waba_id first.",
                ));
            }
            channels.retain(|c| c != crate::publish::CHAT);
        }
        channels.dedup();
        let moved = waba_id != shop.waba_id || catalogue_id != shop.meta_catalogue_id;
        let added: Vec<String> = channels
            .iter()
            .filter(|c| !before.contains(c) || (moved && c.as_str() == crate::publish::CHAT))
            .cloned()
            .collect();
        let removed: Vec<&String> = before.iter().filter(|c| !channels.contains(c)).collect();
        let token = match &shop.storefront_token {
            None if channels.iter().any(|c| c == crate::publish::STOREFRONT) => {
                Some(uuid::Uuid::new_v4().simple().to_string())
            }
            kept => kept.clone(),
        };
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let row: Row = diesel::update(catalogues::table.find(shop.id))
                .set((
                    catalogues::waba_id.eq(&waba_id),
                    catalogues::meta_catalogue_id.eq(&catalogue_id),
                    catalogues::is_connected_to_waba.eq(connected),
                    catalogues::channels.eq(serde_json::json!(channels)),
                    catalogues::storefront_token.eq(&token),
                    catalogues::updated_at.eq(now),
                ))
                .returning(Row::as_returning())
                .get_result(conn)
                .await?;
            for platform in removed {
                crate::publish::unlist(conn, &row, platform).await?;
            }
            crate::publish::list_shelf(conn, &row, &added, now).await?;
            if crate::publish::publishes_to_chat(&row) {
                if added.iter().any(|c| c == crate::publish::CHAT) {
                    crate::publish::queue(conn, &row).await?;
                }
                crate::drift::schedule(conn, &row, now).await?;
            }
            Ok(())
        })
        .await
    }

    async fn catalogue_of(&self, conn: &mut store::Conn, caller: &Caller, id: CatalogueId) -> Result<Catalogue, Error> {
        let row = crate::service::shop_of(conn, caller.tenant_id, id).await?;
        let mut counts = counts(conn, &[id.0]).await?;
        let (products, orders) = counts.remove(&id.0).unwrap_or_default();
        Ok(Catalogue::of(row, products, orders, &self.public_url))
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
                Catalogue::of(row, products, orders, &self.public_url)
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
