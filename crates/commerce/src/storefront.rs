//! The storefront: the service's own public shop page, listing a shop's products on the
//! `storefront` platform with their prices and availability (contract: Catalogue `channels`).
//! It is reached by the shop's secret token, without a key, while `storefront` is one of the
//! shop's `channels`.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{Error, TenantId};

use crate::catalogues::Row as Shop;
use crate::products::{Product, views};
use crate::publish::{STOREFRONT, channels_of};
use crate::schema::{catalogues, product_listings, products};
use crate::service::CommerceService;

/// Products a page shows.
pub const PER_PAGE: i64 = 60;

/// The page's address.
pub fn url(public_url: &str, token: &str) -> String {
    format!("{}/shop/{token}", public_url.trim_end_matches('/'))
}

/// What the page shows.
#[derive(Debug, Clone)]
pub struct Storefront {
    pub name: String,
    pub description: Option<String>,
    /// This page's products, by name.
    pub products: Vec<Product>,
    /// 1-based.
    pub page: i64,
    pub last_page: i64,
}

impl CommerceService {
    /// The shop of a storefront token (any tenant's: the token is the credential); 404 for an
    /// unknown token and for a shop that no longer publishes to its storefront.
    pub(crate) async fn shop_by_token(&self, token: &str) -> Result<Shop, Error> {
        let mut conn = store::connect_system(&self.pool).await?;
        let shop: Option<Shop> = catalogues::table
            .filter(catalogues::storefront_token.eq(token))
            .select(Shop::as_select())
            .first(&mut conn)
            .await
            .optional()?;
        shop.filter(|s| channels_of(s).iter().any(|c| c == STOREFRONT)).ok_or_else(|| Error::not_found("Shop"))
    }

    /// One page (1-based) of a storefront.
    pub async fn storefront(&self, token: &str, page: i64) -> Result<Storefront, Error> {
        let shop = self.shop_by_token(token).await?;
        let mut conn = self.conn(TenantId(shop.tenant_id)).await?;
        let listed = product_listings::table
            .filter(product_listings::tenant_id.eq(shop.tenant_id))
            .filter(product_listings::platform.eq(STOREFRONT))
            .filter(product_listings::state.eq("synced"))
            .select(product_listings::product_id);
        let shelf =
            products::catalogue_id.eq(shop.id).and(products::retired_at.is_null()).and(products::id.eq_any(listed));
        let total: i64 = products::table.filter(shelf).count().get_result(&mut conn).await?;
        let last_page = ((total + PER_PAGE - 1) / PER_PAGE).max(1);
        let page = page.clamp(1, last_page);
        let ids: Vec<i64> = products::table
            .filter(shelf)
            .order((products::name.asc(), products::id.asc()))
            .limit(PER_PAGE)
            .offset((page - 1) * PER_PAGE)
            .select(products::id)
            .load(&mut conn)
            .await?;
        let products = views(&mut conn, &shop, &ids).await?;
        Ok(Storefront { name: shop.name, description: shop.description, products, page, last_page })
    }
}
