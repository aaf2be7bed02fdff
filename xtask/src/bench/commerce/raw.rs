//! The raw-SQL sides of the commerce workloads: what the service writes for a product batch
//! and for an order, run with tokio-postgres without HTTP, JSON, a job or an ORM in between.

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use super::BATCH_INVENTORY;
use crate::Result;
use crate::bench::load::OpResult;
use crate::bench::{data, sql};

/// The statements the orders raw side runs, on each connection (see [`RawOrders::order`]).
const SHOP: &str = "SELECT stock_policy, allow_backorder, reservation_ttl_hours, default_currency FROM catalogues \
                    WHERE id = $1 AND tenant_id = $2";
const LOCK: &str = "SELECT id, sku, name, COALESCE(sale_price, price), currency, inventory, reserved FROM products \
                    WHERE catalogue_id = $1 AND retired_at IS NULL AND sku = ANY($2) ORDER BY id FOR UPDATE";
const HOLD: &str = "UPDATE products p SET reserved = p.reserved + u.r FROM unnest($1::bigint[], $2::int[]) AS u(id, r) \
                    WHERE p.id = u.id";
const INSERT_ORDER: &str = "INSERT INTO orders (tenant_id, catalogue_id, platform, status, stock_policy, hold, \
                            hold_expires_at, reservation_ttl_hours, allow_backorder, customer_handle, total_minor, \
                            currency, priced_at, created_at, updated_at) \
                            VALUES ($1, $2, 'manual', 'pending', $3, 'held', now() + make_interval(hours => $4), $4, $5, \
                            $6, $7, $8, now(), now(), now()) RETURNING id";
const INSERT_LINES: &str = "INSERT INTO order_lines (tenant_id, order_id, position, product_id, sku, name, \
                            quantity, unit_price_minor, line_total_minor, currency, reserved, stock_short, unresolved) \
                            SELECT $13, $1, u.* FROM unnest($2::int[], $3::bigint[], $4::text[], $5::text[], $6::int[], \
                            $7::bigint[], $8::bigint[], $9::text[], $10::int[], $11::bool[], $12::bool[]) AS u";
const RESERVE_MOVEMENTS: &str = "INSERT INTO stock_movements (tenant_id, product_id, kind, quantity, inventory, \
                                 reserved, cause, order_id, created_at) \
                                 SELECT p.tenant_id, p.id, 'reserve', -u.q, p.inventory, p.reserved, $3, $4, now() \
                                 FROM unnest($1::bigint[], $2::int[]) WITH ORDINALITY AS u(id, q, n) \
                                 JOIN products p ON p.id = u.id ORDER BY u.n";
const EXPIRY_JOB: &str = "INSERT INTO jobs (name, payload, tenant_id, run_at, max_attempts) \
                          VALUES ('commerce.expire_hold', jsonb_build_object('order_id', $1::bigint), $2, \
                          now() + make_interval(hours => $3), 10)";
const ORDER_EVENT: &str = "INSERT INTO events (id, tenant_id, name, payload, occurred_at) \
                           VALUES (gen_random_uuid(), $1, 'order.received', jsonb_build_object('order_id', $2::bigint), now())";

/// The batch raw side: the brand and category records, then every product in one upsert, with
/// a `sync` movement for each product created with a count (as the service writes them).
const RAW_BRANDS: &str = "INSERT INTO catalogue_brands (tenant_id, catalogue_id, name, created_at) \
                          SELECT $1, $2, n, now() FROM unnest($3::text[]) AS n \
                          ON CONFLICT (catalogue_id, lower(name), tenant_id) DO NOTHING";
const RAW_CATEGORIES: &str = "INSERT INTO catalogue_categories (tenant_id, catalogue_id, name, created_at) \
                              SELECT $1, $2, n, now() FROM unnest($3::text[]) AS n \
                              ON CONFLICT (catalogue_id, lower(name), tenant_id) DO NOTHING";
const RAW_UPSERT: &str = "WITH up AS ( \
    INSERT INTO products (tenant_id, catalogue_id, sku, name, price, description, currency, inventory, brand_id, \
                          category_id, created_at, updated_at) \
    SELECT $1::bigint, $2::bigint, u.sku, u.name, u.price, u.description, $10::text, u.inventory, b.id, c.id, now(), now() \
    FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::int[], $8::text[], $9::text[]) \
         AS u(sku, name, price, description, inventory, brand, category) \
    LEFT JOIN catalogue_brands b ON b.catalogue_id = $2 AND lower(b.name) = lower(u.brand) \
    LEFT JOIN catalogue_categories c ON c.catalogue_id = $2 AND lower(c.name) = lower(u.category) \
    ON CONFLICT (catalogue_id, sku, tenant_id) DO UPDATE SET name = excluded.name, price = excluded.price, \
        description = excluded.description, currency = excluded.currency, inventory = excluded.inventory, \
        brand_id = excluded.brand_id, category_id = excluded.category_id, retired_at = NULL, updated_at = now() \
    RETURNING id, inventory, (xmax = 0) AS inserted), \
  moved AS ( \
    INSERT INTO stock_movements (tenant_id, product_id, kind, quantity, inventory, reserved, cause, created_at) \
    SELECT $1, id, 'sync', inventory, inventory, 0, 'raw sync', now() FROM up WHERE inserted AND inventory IS NOT NULL \
    RETURNING 1) \
  SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted), (SELECT count(*) FROM moved) FROM up";

/// One batch's rows as columns for `unnest`, built before the clock starts.
pub(super) struct BatchRows {
    sku: Vec<String>,
    name: Vec<String>,
    price: Vec<i64>,
    description: Vec<String>,
    inventory: Vec<i32>,
    brand: Vec<String>,
    category: Vec<String>,
    brand_names: Vec<String>,
    category_names: Vec<String>,
}

impl BatchRows {
    pub(super) fn new(count: u64, variant: u64) -> Self {
        let products: Vec<data::ProductRow> = (0..count).map(|i| data::product(i, variant, BATCH_INVENTORY)).collect();
        let distinct = |names: Vec<String>| {
            let mut names = names;
            names.sort_unstable();
            names.dedup();
            names
        };
        let brand: Vec<String> = products.iter().map(|p| p.brand.clone()).collect();
        let category: Vec<String> = products.iter().map(|p| p.category.clone()).collect();
        Self {
            brand_names: distinct(brand.clone()),
            category_names: distinct(category.clone()),
            sku: products.iter().map(|p| p.sku.clone()).collect(),
            name: products.iter().map(|p| p.name.clone()).collect(),
            price: products.iter().map(|p| p.price).collect(),
            description: products.iter().map(|p| p.description.clone()).collect(),
            inventory: products.iter().map(|p| p.inventory).collect(),
            brand,
            category,
        }
    }
}

pub(super) struct BatchStatements {
    auth: Statement,
    brands: Statement,
    categories: Statement,
    upsert: Statement,
}

impl BatchStatements {
    pub(super) async fn prepare(client: &Client) -> Result<Self> {
        Ok(Self {
            auth: client.prepare(sql::AUTH).await?,
            brands: client.prepare(RAW_BRANDS).await?,
            categories: client.prepare(RAW_CATEGORIES).await?,
            upsert: client.prepare(RAW_UPSERT).await?,
        })
    }

    /// Authentication, then in one transaction the brands, the categories and the products
    /// (with the movements of those created); answers the products created and updated.
    pub(super) async fn run(
        &self,
        client: &Client,
        (tenant, key_hash): (i64, &[u8]),
        shop: i64,
        rows: &BatchRows,
    ) -> Result<(u64, u64)> {
        client.query_one(&self.auth, &[&key_hash]).await?;
        client.batch_execute("BEGIN").await?;
        client.execute(&self.brands, &[&tenant, &shop, &rows.brand_names]).await?;
        client.execute(&self.categories, &[&tenant, &shop, &rows.category_names]).await?;
        let params: [&(dyn ToSql + Sync); 10] = [
            &tenant,
            &shop,
            &rows.sku,
            &rows.name,
            &rows.price,
            &rows.description,
            &rows.inventory,
            &rows.brand,
            &rows.category,
            &data::SHOP_CURRENCY,
        ];
        let row = client.query_one(&self.upsert, &params).await?;
        client.batch_execute("COMMIT").await?;
        let (created, updated): (i64, i64) = (row.get(0), row.get(1));
        Ok((u64::try_from(created)?, u64::try_from(updated)?))
    }
}

struct OrderStatements {
    auth: Statement,
    shop: Statement,
    lock: Statement,
    hold: Statement,
    insert_order: Statement,
    insert_lines: Statement,
    movements: Statement,
    expiry_job: Statement,
    event: Statement,
}

impl OrderStatements {
    async fn prepare(client: &Client) -> Result<Self> {
        Ok(Self {
            auth: client.prepare(sql::AUTH).await?,
            shop: client.prepare(SHOP).await?,
            lock: client.prepare(LOCK).await?,
            hold: client.prepare(HOLD).await?,
            insert_order: client.prepare(INSERT_ORDER).await?,
            insert_lines: client.prepare(INSERT_LINES).await?,
            movements: client.prepare(RESERVE_MOVEMENTS).await?,
            expiry_job: client.prepare(EXPIRY_JOB).await?,
            event: client.prepare(ORDER_EVENT).await?,
        })
    }
}

/// The orders raw side: one connection per load task, every statement prepared on each.
pub(super) struct RawOrders {
    conns: Vec<(Client, OrderStatements)>,
    tenant: i64,
    key_hash: Vec<u8>,
    shop: i64,
}

/// The shop's settings an order is made with.
struct ShopSettings {
    policy: String,
    backorder: bool,
    ttl_hours: i32,
    currency: String,
}

/// A product as the raw side locks it.
struct Locked {
    id: i64,
    name: String,
    unit_price: i64,
    currency: String,
    inventory: Option<i32>,
    reserved: i32,
}

impl RawOrders {
    pub(super) async fn open(
        url: &str,
        (tenant, key_hash): (i64, &[u8]),
        shop: i64,
        connections: usize,
    ) -> Result<Self> {
        let mut conns = Vec::with_capacity(connections);
        for _ in 0..connections {
            let client = sql::connect(url).await?;
            let statements = OrderStatements::prepare(&client).await?;
            conns.push((client, statements));
        }
        Ok(Self { conns, tenant, key_hash: key_hash.to_vec(), shop })
    }

    /// Authentication and the shop, then in one transaction: the products locked in id order
    /// with their prices and figures, the holds, the order, its lines, the `reserve`
    /// movements, the hold's expiry job and the `order.received` event.
    pub(super) async fn order(&self, worker: usize, handle: &str, lines: &[(String, i32)]) -> OpResult {
        let (client, st) = &self.conns[worker];
        client.query_one(&st.auth, &[&self.key_hash]).await?;
        let row = client.query_one(&st.shop, &[&self.shop, &self.tenant]).await?;
        let shop = ShopSettings {
            policy: row.get(0),
            backorder: row.get(1),
            ttl_hours: row.get(2),
            currency: row.get::<_, Option<String>>(3).unwrap_or_else(|| data::SHOP_CURRENCY.to_owned()),
        };
        client.batch_execute("BEGIN").await?;
        let written = self.write_order(client, st, &shop, handle, lines).await;
        if let Err(error) = written {
            client.batch_execute("ROLLBACK").await?;
            return Err(error);
        }
        client.batch_execute("COMMIT").await?;
        Ok(())
    }

    async fn write_order(
        &self,
        client: &Client,
        st: &OrderStatements,
        shop: &ShopSettings,
        handle: &str,
        lines: &[(String, i32)],
    ) -> OpResult {
        let skus: Vec<&str> = lines.iter().map(|(sku, _)| sku.as_str()).collect();
        let locked: Vec<(String, Locked)> = client
            .query(&st.lock, &[&self.shop, &skus])
            .await?
            .iter()
            .map(|r| {
                let product = Locked {
                    id: r.get(0),
                    name: r.get(2),
                    unit_price: r.get(3),
                    currency: r.get(4),
                    inventory: r.get(5),
                    reserved: r.get(6),
                };
                (r.get(1), product)
            })
            .collect();
        let find = |sku: &str| locked.iter().find(|(s, _)| s == sku).map(|(_, p)| p);
        // the lines name distinct products: each takes what its product has available
        let takes: Vec<i32> = lines
            .iter()
            .map(|(sku, quantity)| match find(sku) {
                None => 0,
                Some(Locked { inventory: None, .. }) => *quantity,
                Some(_) if shop.backorder => *quantity,
                Some(Locked { inventory: Some(on_hand), reserved, .. }) => (*quantity).min((on_hand - reserved).max(0)),
            })
            .collect();
        let (held_ids, held): (Vec<i64>, Vec<i32>) = lines
            .iter()
            .zip(&takes)
            .filter(|(_, take)| **take > 0)
            .filter_map(|((sku, _), take)| find(sku).map(|p| (p.id, *take)))
            .unzip();
        if !held_ids.is_empty() {
            client.execute(&st.hold, &[&held_ids, &held]).await?;
        }
        let total: i64 = lines.iter().filter_map(|(sku, q)| find(sku).map(|p| p.unit_price * i64::from(*q))).sum();
        let currency = locked.first().map_or(shop.currency.as_str(), |(_, p)| p.currency.as_str());
        let params: [&(dyn ToSql + Sync); 8] =
            [&self.tenant, &self.shop, &shop.policy, &shop.ttl_hours, &shop.backorder, &handle, &total, &currency];
        let order: i64 = client.query_one(&st.insert_order, &params).await?.get(0);

        let positions: Vec<i32> = (0..lines.len() as i32).collect();
        let products: Vec<Option<i64>> = skus.iter().map(|s| find(s).map(|p| p.id)).collect();
        let names: Vec<Option<String>> = skus.iter().map(|s| find(s).map(|p| p.name.clone())).collect();
        let quantities: Vec<i32> = lines.iter().map(|(_, q)| *q).collect();
        let units: Vec<Option<i64>> = skus.iter().map(|s| find(s).map(|p| p.unit_price)).collect();
        let totals: Vec<Option<i64>> =
            units.iter().zip(&quantities).map(|(u, q)| u.map(|u| u * i64::from(*q))).collect();
        let currencies: Vec<Option<String>> = skus.iter().map(|s| find(s).map(|p| p.currency.clone())).collect();
        let short: Vec<bool> =
            takes.iter().zip(&quantities).zip(&products).map(|((t, q), p)| p.is_some() && t < q).collect();
        let unresolved: Vec<bool> = products.iter().map(Option::is_none).collect();
        let params: [&(dyn ToSql + Sync); 13] = [
            &order,
            &positions,
            &products,
            &skus,
            &names,
            &quantities,
            &units,
            &totals,
            &currencies,
            &takes,
            &short,
            &unresolved,
            &self.tenant,
        ];
        client.execute(&st.insert_lines, &params).await?;
        if !held_ids.is_empty() {
            let cause = format!("order {order} created");
            // the statement writes them signed from the shelf's point of view: -held
            client.execute(&st.movements, &[&held_ids, &held, &cause, &order]).await?;
        }
        client.execute(&st.expiry_job, &[&order, &self.tenant, &shop.ttl_hours]).await?;
        client.execute(&st.event, &[&self.tenant, &order]).await?;
        Ok(())
    }
}
