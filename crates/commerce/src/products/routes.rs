//! The single-product operations: `PUT` (create or touch), read, delete, and the shelf list.
//! By code and by numeric id they behave the same, except that only a code can create.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, ErrorKind, Page, PageRequest, Permission};

use super::write::{Cause, Change};
use super::{Input, LIVE, Product, ProductBody, load_drafts, view, views, write};
use crate::catalogues::Row as Shop;
use crate::rules::Rules;
use crate::schema::{product_listings, products};
use crate::service::CommerceService;
use crate::{CatalogueId, ProductId};

/// How a path names a product.
#[derive(Debug, Clone)]
pub enum ProductRef {
    Sku(String),
    Id(ProductId),
}

impl ProductRef {
    /// The id of the shelf product this names, or 404.
    pub(crate) async fn resolve(&self, conn: &mut store::Conn, shop: i64) -> Result<i64, Error> {
        let mut query = products::table
            .filter(products::catalogue_id.eq(shop).and(products::retired_at.is_null()))
            .select(products::id)
            .into_boxed();
        query = match self {
            Self::Sku(sku) => query.filter(products::sku.eq(sku.clone())),
            Self::Id(id) => query.filter(products::id.eq(id.0)),
        };
        query.first(conn).await.optional()?.ok_or_else(|| Error::not_found("Product"))
    }

    fn parts(&self) -> (Option<&str>, Option<i64>) {
        match self {
            Self::Sku(sku) => (Some(sku.as_str()), None),
            Self::Id(id) => (None, Some(id.0)),
        }
    }
}

/// A `PUT`'s answer: the product, and whether it was created (201) or updated (200).
pub struct Put {
    pub product: Product,
    pub created: bool,
}

/// The currency of a new product sent without one: the shop's, else the account's.
pub(crate) async fn default_currency(conn: &mut store::Conn, shop: &Shop) -> Result<String, Error> {
    match &shop.default_currency {
        Some(currency) => Ok(currency.clone()),
        None => Ok(accounts::tenants::get(conn, kernel::TenantId(shop.tenant_id)).await?.currency),
    }
}

fn refused((field, message): (&'static str, String)) -> Error {
    Error::field(field, message)
}

impl CommerceService {
    /// Creates the product when the code is new (or retired), else changes only what is sent.
    pub async fn put_product(
        &self,
        caller: &Caller,
        catalogue: CatalogueId,
        product: &ProductRef,
        body: ProductBody,
    ) -> Result<Put, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = self.shop(&mut conn, caller, Permission::CATALOGUE_MANAGE, catalogue).await?;
        let mut rules = Rules::new();
        let input = Input::read(body, &mut rules);
        rules.finish()?;
        let now = self.clock.now();
        // Two first PUTs of one code race to insert it; the loser's second try finds the
        // winner's product and updates it, as if it had come second.
        let mut tries = 0;
        loop {
            tries += 1;
            let put = self.put_once(&mut conn, &shop, product, &input, now).await;
            match put {
                Err(error)
                    if tries == 1
                        && matches!(product, ProductRef::Sku(_))
                        && error.is(ErrorKind::Conflict)
                        && error.errors.contains_key("sku") => {}
                other => return other,
            }
        }
    }

    async fn put_once(
        &self,
        conn: &mut store::Conn,
        shop: &Shop,
        product: &ProductRef,
        input: &Input,
        now: time::OffsetDateTime,
    ) -> Result<Put, Error> {
        conn.transaction::<_, Error, _>(async |conn| {
            let (sku, id) = product.parts();
            let loaded = load_drafts(conn, shop.id, sku, id).await?.pop();
            let (change, created) = match (loaded, product) {
                (Some(found), _) if !found.retired => {
                    let draft = input.apply(found.draft()).map_err(refused)?;
                    if draft.sku != found.sku && is_live(conn, shop.tenant_id, found.id).await? {
                        return Err(Error::conflict("The sku is frozen: the product is live on a platform.")
                            .with_field("sku", "The sku cannot change while the product is live on a platform."));
                    }
                    if draft == found.draft() {
                        return Ok(Put { product: view(conn, shop, found.id).await?, created: false });
                    }
                    (Change { id: Some(found.id), draft, old_inventory: found.inventory, revive: false }, false)
                }
                (_, ProductRef::Id(_)) => return Err(Error::not_found("Product")),
                (found, ProductRef::Sku(code)) => {
                    if input.sku.clone().set().is_some_and(|sent| &sent != code) {
                        return Err(Error::field("sku", "A new product takes the code of its path."));
                    }
                    let currency = default_currency(conn, shop).await?;
                    let draft = input.create(code.clone(), &currency).map_err(refused)?;
                    let change = Change {
                        id: found.as_ref().map(|f| f.id),
                        old_inventory: found.as_ref().and_then(|f| f.inventory),
                        revive: found.is_some(),
                        draft,
                    };
                    (change, true)
                }
            };
            let written =
                write(conn, shop, &[change], Cause { kind: "adjust", cause: "product update", sync_id: None }, now)
                    .await?;
            if written.publish {
                crate::publish::queue(conn, shop).await?;
            }
            let id = <[_]>::first(&written.ids).copied().unwrap_or_default();
            Ok(Put { product: view(conn, shop, id).await?, created })
        })
        .await
    }

    pub async fn get_product(
        &self,
        caller: &Caller,
        catalogue: CatalogueId,
        product: &ProductRef,
    ) -> Result<Product, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = self.shop(&mut conn, caller, Permission::CATALOGUE_VIEW, catalogue).await?;
        let id = product.resolve(&mut conn, shop.id).await?;
        view(&mut conn, &shop, id).await
    }

    /// Takes the product off the shelf and off every platform (contract: delete): the storefront
    /// at once, the chat catalogue by the publish this queues (docs/api.md, "Publishing"). It is
    /// retired rather than erased, so its movements and the orders naming it keep their history.
    pub async fn delete_product(
        &self,
        caller: &Caller,
        catalogue: CatalogueId,
        product: &ProductRef,
    ) -> Result<Product, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = self.shop(&mut conn, caller, Permission::CATALOGUE_MANAGE, catalogue).await?;
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let id = product.resolve(conn, shop.id).await?;
            let before = view(conn, &shop, id).await?;
            diesel::update(products::table.find(id))
                .set((products::retired_at.eq(now), products::updated_at.eq(now)))
                .execute(conn)
                .await?;
            if crate::publish::retire(conn, &shop, &[id]).await? {
                crate::publish::queue(conn, &shop).await?;
            }
            Ok(before)
        })
        .await
    }

    /// The shelf, oldest first.
    pub async fn list_products(
        &self,
        caller: &Caller,
        catalogue: CatalogueId,
        page: PageRequest,
    ) -> Result<Page<Product>, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = self.shop(&mut conn, caller, Permission::CATALOGUE_VIEW, catalogue).await?;
        let shelf = products::catalogue_id.eq(shop.id).and(products::retired_at.is_null());
        let total: i64 = products::table.filter(shelf).count().get_result(&mut conn).await?;
        let ids: Vec<i64> = products::table
            .filter(shelf)
            .order(products::id.asc())
            .limit(page.per_page)
            .offset(page.offset())
            .select(products::id)
            .load(&mut conn)
            .await?;
        Ok(Page::new(views(&mut conn, &shop, &ids).await?, page, total))
    }
}

/// Live on a platform: its code is frozen (contract: Product rules).
async fn is_live(conn: &mut store::Conn, tenant: i64, product: i64) -> Result<bool, Error> {
    let live: i64 = product_listings::table
        .filter(product_listings::tenant_id.eq(tenant))
        .filter(product_listings::product_id.eq(product).and(product_listings::state.eq_any(LIVE)))
        .count()
        .get_result(conn)
        .await?;
    Ok(live > 0)
}
