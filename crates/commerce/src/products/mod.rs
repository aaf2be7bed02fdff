//! Products (contract: Product): the record, what a body may set, and the one writer that the
//! single-product routes and sync runs share.

mod draft;
mod routes;
mod write;

pub use draft::{AVAILABILITIES, ProductBody};
pub(crate) use draft::{Draft, Input};
pub use routes::ProductRef;
pub use routes::Put;
pub(crate) use routes::default_currency;
pub(crate) use write::{Cause, Change, Loaded, load_drafts, write};

use std::collections::HashMap;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::Error;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::catalogues::Row as Shop;
use crate::schema::{catalogue_brands, catalogue_categories, product_listings, products};

/// Lists are 25 a page.
pub const PER_PAGE: i64 = 25;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = products)]
pub(crate) struct Row {
    pub id: i64,
    pub catalogue_id: i64,
    pub sku: String,
    pub name: String,
    pub price: i64,
    pub sale_price: Option<i64>,
    pub description: Option<String>,
    pub currency: String,
    pub image_url: Option<String>,
    pub inventory: Option<i32>,
    pub reserved: i32,
    pub availability: Option<String>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

/// One platform's copy of a product (contract: Product listing).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, Queryable, Selectable)]
#[diesel(table_name = product_listings)]
pub struct Listing {
    #[serde(skip)]
    pub product_id: i64,
    pub platform: String,
    /// `pending`, `syncing`, `synced`, `failed`, `blocked`, `drifted`.
    pub state: String,
    pub problem: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// Listing states in which a product counts as live on the platform (its code is frozen).
pub(crate) const LIVE: &[&str] = &["synced", "drifted"];

/// A product, as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Product {
    pub id: i64,
    pub catalogue_id: i64,
    pub sku: String,
    /// The same code, under the platforms' name.
    pub retailer_id: String,
    pub name: String,
    /// Minor units of `currency`.
    pub price: i64,
    pub sale_price: Option<i64>,
    pub description: Option<String>,
    pub currency: String,
    pub image_url: Option<String>,
    /// On hand; null when stock is not tracked.
    pub inventory: Option<i32>,
    /// Held by orders.
    pub reserved: i32,
    /// `inventory - reserved`; null when stock is not tracked.
    pub available: Option<i32>,
    pub availability: String,
    /// `explicit` or `derived`.
    pub availability_source: String,
    pub brand: Option<String>,
    pub category: Option<String>,
    pub listings: Vec<Listing>,
    /// The roll-up of `listings`; null without any.
    pub sync_status: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// `in stock` while units are available (or stock is untracked, or backorder is allowed), else
/// `out of stock` (contract: Product rules).
pub(crate) fn derived_availability(inventory: Option<i32>, reserved: i32, allow_backorder: bool) -> &'static str {
    match inventory {
        Some(on_hand) if on_hand - reserved <= 0 && !allow_backorder => "out of stock",
        _ => "in stock",
    }
}

/// The listings' roll-up: the most pressing state wins.
fn roll_up(listings: &[Listing]) -> Option<String> {
    const ORDER: &[&str] = &["blocked", "failed", "drifted", "syncing", "pending", "synced"];
    ORDER.iter().find(|state| listings.iter().any(|l| l.state == **state)).map(|s| (*s).to_owned())
}

impl Product {
    fn of(row: Row, shop: &Shop, brand: Option<String>, category: Option<String>, listings: Vec<Listing>) -> Self {
        let (availability, source) = match row.availability {
            Some(explicit) => (explicit, "explicit"),
            None => (derived_availability(row.inventory, row.reserved, shop.allow_backorder).to_owned(), "derived"),
        };
        Self {
            id: row.id,
            catalogue_id: row.catalogue_id,
            retailer_id: row.sku.clone(),
            sku: row.sku,
            name: row.name,
            price: row.price,
            sale_price: row.sale_price,
            description: row.description,
            currency: row.currency,
            image_url: row.image_url,
            inventory: row.inventory,
            reserved: row.reserved,
            available: row.inventory.map(|on_hand| on_hand - row.reserved),
            availability,
            availability_source: source.to_owned(),
            brand,
            category,
            sync_status: roll_up(&listings),
            listings,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// The products with these ids, as the API shows them, in the order of `ids`.
pub(crate) async fn views(conn: &mut store::Conn, shop: &Shop, ids: &[i64]) -> Result<Vec<Product>, Error> {
    let rows: Vec<(Row, Option<String>, Option<String>)> = products::table
        .left_join(catalogue_brands::table)
        .left_join(catalogue_categories::table)
        .filter(products::id.eq_any(ids))
        .select((Row::as_select(), catalogue_brands::name.nullable(), catalogue_categories::name.nullable()))
        .load(conn)
        .await?;
    let mut listings: HashMap<i64, Vec<Listing>> = HashMap::new();
    let found: Vec<Listing> = product_listings::table
        .filter(product_listings::tenant_id.eq(shop.tenant_id))
        .filter(product_listings::product_id.eq_any(ids))
        .order((product_listings::product_id, product_listings::platform))
        .select(Listing::as_select())
        .load(conn)
        .await?;
    for listing in found {
        listings.entry(listing.product_id).or_default().push(listing);
    }
    let mut by_id: HashMap<i64, Product> = rows
        .into_iter()
        .map(|(row, brand, category)| {
            let id = row.id;
            (id, Product::of(row, shop, brand, category, listings.remove(&id).unwrap_or_default()))
        })
        .collect();
    Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
}

pub(crate) async fn view(conn: &mut store::Conn, shop: &Shop, id: i64) -> Result<Product, Error> {
    views(conn, shop, &[id]).await?.pop().ok_or_else(|| Error::not_found("Product"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(state: &str) -> Listing {
        Listing {
            product_id: 1,
            platform: state.to_owned(),
            state: state.to_owned(),
            problem: None,
            updated_at: OffsetDateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn availability_follows_what_is_left_unless_untracked_or_backordered() {
        assert_eq!(derived_availability(None, 3, false), "in stock");
        assert_eq!(derived_availability(Some(5), 4, false), "in stock");
        assert_eq!(derived_availability(Some(5), 5, false), "out of stock");
        assert_eq!(derived_availability(Some(0), 0, false), "out of stock");
        assert_eq!(derived_availability(Some(0), 2, true), "in stock");
    }

    #[test]
    fn the_sync_status_is_the_most_pressing_listing_state() {
        assert_eq!(roll_up(&[]), None);
        assert_eq!(roll_up(&[listing("synced"), listing("pending")]).as_deref(), Some("pending"));
        assert_eq!(roll_up(&[listing("synced"), listing("blocked"), listing("drifted")]).as_deref(), Some("blocked"));
    }
}
