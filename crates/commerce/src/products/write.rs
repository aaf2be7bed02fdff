//! Loading products to change them (under row locks) and writing them back in bulk: one
//! statement per kind of change, whether one product changes (`PUT`) or five thousand (a sync
//! run). Stock counts written here leave a movement; `reserved` is never written here.

use std::collections::HashMap;

use diesel::QueryableByName;
use diesel::pg::Pg;
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::sql_types::{Array, BigInt, Bool, Integer, Nullable, Text, Timestamptz};
use diesel_async::RunQueryDsl;
use kernel::Error;
use time::OffsetDateTime;

use super::Draft;
use crate::catalogues::Row as Shop;

/// A product as loaded for a change.
#[derive(Debug, Clone, QueryableByName)]
pub(crate) struct Loaded {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = Bool)]
    pub retired: bool,
    #[diesel(sql_type = Text)]
    pub sku: String,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = BigInt)]
    pub price: i64,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub sale_price: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    pub description: Option<String>,
    #[diesel(sql_type = Text)]
    pub currency: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub image_url: Option<String>,
    #[diesel(sql_type = Nullable<Integer>)]
    pub inventory: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    pub availability: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub brand: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub category: Option<String>,
}

impl Loaded {
    pub fn draft(&self) -> Draft {
        Draft {
            sku: self.sku.clone(),
            name: self.name.clone(),
            price: self.price,
            sale_price: self.sale_price,
            description: self.description.clone(),
            currency: self.currency.clone(),
            image_url: self.image_url.clone(),
            inventory: self.inventory,
            availability: self.availability.clone(),
            brand: self.brand.clone(),
            category: self.category.clone(),
        }
    }
}

/// Locks and loads the shop's products (retired ones included) matching `sku` or `id`, or all of
/// them when both are `None`. Locks are taken in id order, as orders take theirs.
pub(crate) async fn load_drafts(
    conn: &mut store::Conn,
    shop: i64,
    sku: Option<&str>,
    id: Option<i64>,
) -> Result<Vec<Loaded>, Error> {
    const WHERE: &str =
        "p.catalogue_id = $1 AND ($2::text IS NULL OR p.sku = $2) AND ($3::bigint IS NULL OR p.id = $3)";
    diesel::sql_query(format!("SELECT p.id FROM products p WHERE {WHERE} ORDER BY p.id FOR UPDATE"))
        .bind::<BigInt, _>(shop)
        .bind::<Nullable<Text>, _>(sku)
        .bind::<Nullable<BigInt>, _>(id)
        .execute(conn)
        .await?;
    let rows = diesel::sql_query(format!(
        "SELECT p.id, p.retired_at IS NOT NULL AS retired, p.sku, p.name, p.price, p.sale_price, p.description,
                p.currency, p.image_url, p.inventory, p.availability, b.name AS brand, c.name AS category
         FROM products p
         LEFT JOIN catalogue_brands b ON b.id = p.brand_id
         LEFT JOIN catalogue_categories c ON c.id = p.category_id
         WHERE {WHERE} ORDER BY p.id"
    ))
    .bind::<BigInt, _>(shop)
    .bind::<Nullable<Text>, _>(sku)
    .bind::<Nullable<BigInt>, _>(id)
    .load(conn)
    .await?;
    Ok(rows)
}

/// One product to write: a new one (`id: None`), a changed one, or a retired one put back.
#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub id: Option<i64>,
    pub draft: Draft,
    /// The count before, for the movement.
    pub old_inventory: Option<i32>,
    pub revive: bool,
}

/// Why stock counts moved, for the movements this write leaves.
pub(crate) struct Cause<'a> {
    /// `adjust` (a product update) or `sync` (a sync run).
    pub kind: &'static str,
    pub cause: &'a str,
    pub sync_id: Option<i64>,
}

/// What a write did.
pub(crate) struct Written {
    /// The id of each change, in order.
    pub ids: Vec<i64>,
    /// Chat listings now wait for a publish.
    pub publish: bool,
}

#[derive(QueryableByName)]
struct IdSku {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Text)]
    sku: String,
}

#[derive(QueryableByName)]
struct IdName {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Text)]
    name: String,
}

/// Another product of the shop has the code (a rename, or a code created meanwhile).
fn code_taken(error: diesel::result::Error) -> Error {
    if store::is_unique_violation(&error, Some("products_sku")) {
        Error::conflict("Another product of this catalogue already has this sku.")
            .with_field("sku", "The sku is already used by another product.")
    } else {
        error.into()
    }
}

/// Writes `changes`.
pub(crate) async fn write(
    conn: &mut store::Conn,
    shop: &Shop,
    changes: &[Change],
    why: Cause<'_>,
    now: OffsetDateTime,
) -> Result<Written, Error> {
    let brands =
        named(conn, shop, "catalogue_brands", changes.iter().filter_map(|c| c.draft.brand.as_deref()), now).await?;
    let categories =
        named(conn, shop, "catalogue_categories", changes.iter().filter_map(|c| c.draft.category.as_deref()), now)
            .await?;
    let name_id = |map: &HashMap<String, i64>, name: &Option<String>| {
        name.as_ref().and_then(|n| map.get(&n.to_lowercase()).copied())
    };

    let mut columns = Columns::default();
    for change in changes {
        columns.push(change, name_id(&brands, &change.draft.brand), name_id(&categories, &change.draft.category));
    }
    // new products
    let new: Vec<usize> = (0..changes.len()).filter(|i| changes[*i].id.is_none()).collect();
    let mut ids: Vec<i64> = changes.iter().map(|c| c.id.unwrap_or(0)).collect();
    if !new.is_empty() {
        let part = columns.select(&new);
        let created: Vec<IdSku> = with_columns(
            format!(
                "INSERT INTO products (tenant_id, catalogue_id, sku, name, price, sale_price, description, currency,
                 image_url, inventory, availability, brand_id, category_id, created_at, updated_at)
             SELECT $1, $2, u.sku, u.name, u.price, u.sale_price, u.description, u.currency, u.image_url,
                 u.inventory, u.availability, u.brand_id, u.category_id, $3, $3
             FROM {UNNEST}
             RETURNING id, sku"
            ),
            shop,
            now,
            part,
        )
        .load(conn)
        .await
        .map_err(code_taken)?;
        let by_sku: HashMap<String, i64> = created.into_iter().map(|r| (r.sku, r.id)).collect();
        for i in new {
            ids[i] = by_sku.get(&changes[i].draft.sku).copied().unwrap_or_default();
        }
    }
    // changed and revived products
    let old: Vec<usize> = (0..changes.len()).filter(|i| changes[*i].id.is_some()).collect();
    if !old.is_empty() {
        let part = columns.select(&old);
        with_columns(
            format!(
                "UPDATE products p SET sku = u.sku, name = u.name, price = u.price, sale_price = u.sale_price,
                 description = u.description, currency = u.currency, image_url = u.image_url,
                 inventory = u.inventory, availability = u.availability, brand_id = u.brand_id,
                 category_id = u.category_id, retired_at = NULL, updated_at = $3,
                 created_at = CASE WHEN u.revive THEN $3 ELSE p.created_at END
             FROM {UNNEST}
             WHERE p.id = u.id AND p.catalogue_id = $2 AND p.tenant_id = $1"
            ),
            shop,
            now,
            part,
        )
        .execute(conn)
        .await
        .map_err(code_taken)?;
    }
    // stock counts that moved
    let moved: Vec<(i64, i32)> = changes
        .iter()
        .zip(&ids)
        .filter(|(c, _)| c.draft.inventory != c.old_inventory)
        .map(|(c, id)| (*id, c.draft.inventory.unwrap_or(0) - c.old_inventory.unwrap_or(0)))
        .collect();
    if !moved.is_empty() {
        let (moved_ids, quantities): (Vec<i64>, Vec<i32>) = moved.into_iter().unzip();
        crate::stock::record_counts(conn, &moved_ids, &quantities, why.kind, why.cause, why.sync_id, now).await?;
        crate::stock::check_low(conn, shop, &moved_ids, now).await?;
    }
    // every platform shows the new copy: the storefront at once, the chat catalogue once sent
    let publish = crate::publish::mark(conn, shop, &ids, why.sync_id, now).await?;
    Ok(Written { ids, publish })
}

const UNNEST: &str = "unnest($4::bigint[], $5::text[], $6::text[], $7::bigint[], $8::bigint[], $9::text[], $10::text[],
                 $11::text[], $12::int[], $13::text[], $14::bigint[], $15::bigint[], $16::bool[])
             AS u(id, sku, name, price, sale_price, description, currency, image_url, inventory, availability,
                  brand_id, category_id, revive)";

/// `sql` with the shop ($1, $2), the time ($3) and `part`'s columns ($4 to $16, as `UNNEST`
/// names them) bound.
fn with_columns(sql: String, shop: &Shop, now: OffsetDateTime, part: Columns) -> BoxedSqlQuery<'static, Pg, SqlQuery> {
    diesel::sql_query(sql)
        .into_boxed()
        .bind::<BigInt, _>(shop.tenant_id)
        .bind::<BigInt, _>(shop.id)
        .bind::<Timestamptz, _>(now)
        .bind::<Array<BigInt>, _>(part.id)
        .bind::<Array<Text>, _>(part.sku)
        .bind::<Array<Text>, _>(part.name)
        .bind::<Array<BigInt>, _>(part.price)
        .bind::<Array<Nullable<BigInt>>, _>(part.sale_price)
        .bind::<Array<Nullable<Text>>, _>(part.description)
        .bind::<Array<Text>, _>(part.currency)
        .bind::<Array<Nullable<Text>>, _>(part.image_url)
        .bind::<Array<Nullable<Integer>>, _>(part.inventory)
        .bind::<Array<Nullable<Text>>, _>(part.availability)
        .bind::<Array<Nullable<BigInt>>, _>(part.brand_id)
        .bind::<Array<Nullable<BigInt>>, _>(part.category_id)
        .bind::<Array<Bool>, _>(part.revive)
}

/// The changes as columns, for `unnest`.
#[derive(Default)]
struct Columns {
    id: Vec<i64>,
    sku: Vec<String>,
    name: Vec<String>,
    price: Vec<i64>,
    sale_price: Vec<Option<i64>>,
    description: Vec<Option<String>>,
    currency: Vec<String>,
    image_url: Vec<Option<String>>,
    inventory: Vec<Option<i32>>,
    availability: Vec<Option<String>>,
    brand_id: Vec<Option<i64>>,
    category_id: Vec<Option<i64>>,
    revive: Vec<bool>,
}

impl Columns {
    fn push(&mut self, change: &Change, brand_id: Option<i64>, category_id: Option<i64>) {
        let d = &change.draft;
        self.id.push(change.id.unwrap_or(0));
        self.sku.push(d.sku.clone());
        self.name.push(d.name.clone());
        self.price.push(d.price);
        self.sale_price.push(d.sale_price);
        self.description.push(d.description.clone());
        self.currency.push(d.currency.clone());
        self.image_url.push(d.image_url.clone());
        self.inventory.push(d.inventory);
        self.availability.push(d.availability.clone());
        self.brand_id.push(brand_id);
        self.category_id.push(category_id);
        self.revive.push(change.revive);
    }

    fn select(&self, rows: &[usize]) -> Self {
        fn pick<T: Clone>(column: &[T], rows: &[usize]) -> Vec<T> {
            rows.iter().map(|i| column[*i].clone()).collect()
        }
        Self {
            id: pick(&self.id, rows),
            sku: pick(&self.sku, rows),
            name: pick(&self.name, rows),
            price: pick(&self.price, rows),
            sale_price: pick(&self.sale_price, rows),
            description: pick(&self.description, rows),
            currency: pick(&self.currency, rows),
            image_url: pick(&self.image_url, rows),
            inventory: pick(&self.inventory, rows),
            availability: pick(&self.availability, rows),
            brand_id: pick(&self.brand_id, rows),
            category_id: pick(&self.category_id, rows),
            revive: pick(&self.revive, rows),
        }
    }
}

/// The ids of brand or category records by lower-cased name, creating the missing ones
/// (contract: brand and category text create records on first use).
async fn named<'a>(
    conn: &mut store::Conn,
    shop: &Shop,
    table: &str,
    names: impl Iterator<Item = &'a str>,
    now: OffsetDateTime,
) -> Result<HashMap<String, i64>, Error> {
    let mut seen: HashMap<String, String> = HashMap::new();
    for name in names {
        seen.entry(name.to_lowercase()).or_insert_with(|| name.to_owned());
    }
    if seen.is_empty() {
        return Ok(HashMap::new());
    }
    let names: Vec<String> = seen.into_values().collect();
    diesel::sql_query(format!(
        "INSERT INTO {table} (tenant_id, catalogue_id, name, created_at)
         SELECT $1, $2, n, $3 FROM unnest($4::text[]) AS n
         ON CONFLICT (catalogue_id, lower(name), tenant_id) DO NOTHING"
    ))
    .bind::<BigInt, _>(shop.tenant_id)
    .bind::<BigInt, _>(shop.id)
    .bind::<Timestamptz, _>(now)
    .bind::<Array<Text>, _>(&names)
    .execute(conn)
    .await?;
    let rows: Vec<IdName> = diesel::sql_query(format!(
        "SELECT id, name FROM {table}
         WHERE tenant_id = $3 AND catalogue_id = $1 AND lower(name) = ANY(SELECT lower(n) FROM unnest($2::text[]) AS n)"
    ))
    .bind::<BigInt, _>(shop.id)
    .bind::<Array<Text>, _>(&names)
    .bind::<BigInt, _>(shop.tenant_id)
    .load(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.name.to_lowercase(), r.id)).collect())
}
