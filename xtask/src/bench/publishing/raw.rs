//! The raw sides of 17 and 18: what the service writes and reads for a publish and a drift
//! check, run with tokio-postgres (one connection, every statement prepared before the clock
//! starts) without HTTP, a job, an ORM or a second pool checkout in between. The statements
//! follow `commerce::publish` (`claim`, `views`, `record`), `commerce::drift` and the sandbox
//! platform (`messaging::chat::catalogue`); the product batch's are workload 10's.

use std::time::Duration;

use serde_json::{Value, json};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Statement};

use super::graph::ACCESS_TOKEN;
use crate::Result;
use crate::bench::{data, sql};

/// Workload 10's brand and category records.
const BRANDS: &str = "INSERT INTO catalogue_brands (tenant_id, catalogue_id, name, created_at) \
                      SELECT $1, $2, n, now() FROM unnest($3::text[]) AS n \
                      ON CONFLICT (catalogue_id, lower(name), tenant_id) DO NOTHING";
const CATEGORIES: &str = "INSERT INTO catalogue_categories (tenant_id, catalogue_id, name, created_at) \
                          SELECT $1, $2, n, now() FROM unnest($3::text[]) AS n \
                          ON CONFLICT (catalogue_id, lower(name), tenant_id) DO NOTHING";
/// Workload 10's upsert, with in the same statement each product's chat listing written
/// `pending` (`publish::mark`: the run's write asks for a publish).
const UPSERT_LISTED: &str = "WITH up AS ( \
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
    RETURNING 1), \
  listed AS ( \
    INSERT INTO product_listings (product_id, platform, state, problem, updated_at, tenant_id, sync_id) \
    SELECT id, 'chat', 'pending', NULL, now(), $1, NULL FROM up \
    ON CONFLICT (product_id, platform, tenant_id) DO UPDATE SET state = excluded.state, problem = NULL, \
        updated_at = excluded.updated_at, sync_id = excluded.sync_id \
    RETURNING 1) \
  SELECT count(*) FILTER (WHERE inserted), count(*) FILTER (WHERE NOT inserted), (SELECT count(*) FROM listed) FROM up";
/// Products written as they are (18's shop, loaded before the clock starts).
const INSERT_PRODUCTS: &str = "INSERT INTO products (tenant_id, catalogue_id, sku, name, price, description, currency, \
    inventory, brand_id, category_id, created_at, updated_at) \
    SELECT $1, $2, u.sku, u.name, u.price, u.description, $10, u.inventory, b.id, c.id, now(), now() \
    FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::int[], $8::text[], $9::text[]) \
         AS u(sku, name, price, description, inventory, brand, category) \
    LEFT JOIN catalogue_brands b ON b.catalogue_id = $2 AND lower(b.name) = lower(u.brand) \
    LEFT JOIN catalogue_categories c ON c.catalogue_id = $2 AND lower(c.name) = lower(u.category)";
/// `publish::claim`: up to a batch of the shop's waiting chat listings, `syncing`.
const CLAIM: &str = "UPDATE product_listings l SET state = 'syncing', updated_at = now() \
    WHERE l.tenant_id = $1 AND l.platform = 'chat' AND l.product_id IN ( \
        SELECT w.product_id FROM product_listings w JOIN products p ON p.id = w.product_id AND p.tenant_id = $1 \
        WHERE w.tenant_id = $1 AND w.platform = 'chat' AND p.catalogue_id = $2 \
          AND (w.state IN ('pending', 'failed', 'drifted') \
               OR (w.state = 'syncing' AND w.updated_at < now() - interval '10 minutes')) \
        ORDER BY w.product_id LIMIT $3 FOR UPDATE OF w SKIP LOCKED) \
    RETURNING l.product_id";
/// The columns a product is sent with (`products::views` without the listings).
const PRODUCT_COLUMNS: &str = "p.id, p.sku, p.name, p.description, p.price, p.sale_price, p.currency, p.image_url, \
                               p.inventory, p.reserved, p.availability, b.name, c.name";
/// `publish::record`: the listings still as claimed, `synced`.
const RECORD: &str = "UPDATE product_listings SET state = 'synced', problem = NULL, updated_at = now() \
                      WHERE tenant_id = $1 AND platform = 'chat' AND product_id = ANY($2) AND state = 'syncing'";
/// The sandbox platform's write (`SandboxCatalogue::upsert_items`), for all items at once.
const SANDBOX_UPSERT: &str = "INSERT INTO sandbox_catalogue_items (tenant_id, catalogue_ref, retailer_id, item, updated_at) \
    SELECT $1, $2, u.r, u.i::jsonb, now() FROM unnest($3::text[], $4::text[]) AS u(r, i) \
    ON CONFLICT (catalogue_ref, retailer_id, tenant_id) DO UPDATE SET item = excluded.item, updated_at = excluded.updated_at";
/// `publish::MAX_BATCH`: the Cloud API's `items_batch` limit.
pub(super) const MAX_BATCH: i64 = 5_000;
/// What drift.rs reads at a time.
pub(super) const CHUNK: i64 = 1_000;
/// Marks the drifted listings of a chunk (`drift::set`).
const MARK_DRIFTED: &str = "UPDATE product_listings SET state = 'drifted', problem = NULL \
                            WHERE tenant_id = $1 AND platform = 'chat' AND product_id = ANY($2)";
/// Their `product.drifted` events.
const DRIFTED_EVENTS: &str = "INSERT INTO events (id, tenant_id, name, payload, occurred_at) \
                              SELECT gen_random_uuid(), $1, 'product.drifted', p::jsonb, now() FROM unnest($2::text[]) AS p";

/// The chunk after `$4` of the shop's live chat listings, each with its product (brand and
/// category by name) and the sandbox platform's copy: drift.rs's three reads as one statement.
fn drift_chunk() -> String {
    format!(
        "SELECT {PRODUCT_COLUMNS}, s.item::text FROM product_listings l \
         JOIN products p ON p.id = l.product_id AND p.tenant_id = l.tenant_id \
         LEFT JOIN catalogue_brands b ON b.id = p.brand_id \
         LEFT JOIN catalogue_categories c ON c.id = p.category_id \
         LEFT JOIN sandbox_catalogue_items s ON s.tenant_id = l.tenant_id AND s.catalogue_ref = $3 AND s.retailer_id = p.sku \
         WHERE l.tenant_id = $1 AND l.platform = 'chat' AND l.state IN ('synced', 'drifted') AND p.catalogue_id = $2 \
           AND l.product_id > $4 \
         ORDER BY l.product_id LIMIT {CHUNK}"
    )
}

fn products_by_id() -> String {
    format!(
        "SELECT {PRODUCT_COLUMNS} FROM products p LEFT JOIN catalogue_brands b ON b.id = p.brand_id \
         LEFT JOIN catalogue_categories c ON c.id = p.category_id WHERE p.tenant_id = $1 AND p.id = ANY($2) ORDER BY p.id"
    )
}

/// A product as the platforms are sent it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ShopProduct {
    pub id: i64,
    pub sku: String,
    pub name: String,
    pub description: Option<String>,
    pub price: i64,
    pub sale_price: Option<i64>,
    pub currency: String,
    pub image_url: Option<String>,
    pub inventory: Option<i32>,
    pub reserved: i32,
    pub availability: Option<String>,
    pub brand: Option<String>,
    pub category: Option<String>,
}

/// `45000.00 TZS`, as the batch API takes a price.
fn graph_price(minor: i64, currency: &str) -> String {
    let sign = if minor < 0 { "-" } else { "" };
    let minor = minor.unsigned_abs();
    format!("{sign}{}.{:02} {currency}", minor / 100, minor % 100)
}

impl ShopProduct {
    fn read(row: &Row) -> Self {
        Self {
            id: row.get(0),
            sku: row.get(1),
            name: row.get(2),
            description: row.get(3),
            price: row.get(4),
            sale_price: row.get(5),
            currency: row.get(6),
            image_url: row.get(7),
            inventory: row.get(8),
            reserved: row.get(9),
            availability: row.get(10),
            brand: row.get(11),
            category: row.get(12),
        }
    }

    /// What customers can buy; null when stock is not tracked.
    fn available(&self) -> Option<i32> {
        self.inventory.map(|on_hand| on_hand - self.reserved)
    }

    /// Explicit, or derived from what is left (the bench's shops allow no backorder).
    fn availability(&self) -> String {
        match (&self.availability, self.available()) {
            (Some(explicit), _) => explicit.clone(),
            (None, Some(left)) if left <= 0 => "out of stock".to_owned(),
            (None, _) => "in stock".to_owned(),
        }
    }

    /// One request of an `items_batch` body, as `cloud_catalogue::item_data` writes it.
    pub fn batch_request(&self) -> Value {
        let mut data = serde_json::Map::new();
        data.insert("id".into(), json!(self.sku));
        data.insert("title".into(), json!(self.name));
        if let Some(description) = &self.description {
            data.insert("description".into(), json!(description));
        }
        data.insert("price".into(), json!(graph_price(self.price, &self.currency)));
        if let Some(sale_price) = self.sale_price {
            data.insert("sale_price".into(), json!(graph_price(sale_price, &self.currency)));
        }
        data.insert("availability".into(), json!(self.availability()));
        if let Some(image_link) = &self.image_url {
            data.insert("image_link".into(), json!(image_link));
        }
        if let Some(brand) = &self.brand {
            data.insert("brand".into(), json!(brand));
        }
        if let Some(category) = &self.category {
            data.insert("category".into(), json!(category));
        }
        if let Some(inventory) = self.available() {
            data.insert("inventory".into(), json!(inventory));
        }
        json!({ "method": "UPDATE", "data": Value::Object(data) })
    }

    /// The sandbox platform's copy (a serialized `CatalogueItem` of `publish::item_of`).
    pub fn sandbox_item(&self) -> Value {
        json!({
            "retailer_id": self.sku,
            "name": self.name,
            "description": self.description,
            "price_minor": self.price,
            "sale_price_minor": self.sale_price,
            "currency": self.currency,
            "availability": self.availability(),
            "image_url": self.image_url,
            "brand": self.brand,
            "category": self.category,
            "inventory": self.available(),
        })
    }

    /// drift.rs's compared fields (stock, image and availability never are) and the shop's values.
    fn compared(&self) -> [(&'static str, Value); 7] {
        [
            ("name", json!(self.name)),
            ("description", json!(self.description)),
            ("price", json!(self.price)),
            ("sale_price", json!(self.sale_price)),
            ("currency", json!(self.currency)),
            ("brand", json!(self.brand)),
            ("category", json!(self.category)),
        ]
    }

    /// Where the platform's copy differs, as `drift::differences` names it: `[{field, local, platform}]`.
    pub fn differences(&self, copy: &Value) -> Vec<Value> {
        fn member(field: &str) -> &str {
            match field {
                "price" => "price_minor",
                "sale_price" => "sale_price_minor",
                other => other,
            }
        }
        self.compared()
            .into_iter()
            .filter_map(|(field, local)| {
                let platform = copy.get(member(field)).cloned().unwrap_or(Value::Null);
                (platform != local).then(|| json!({ "field": field, "local": local, "platform": platform }))
            })
            .collect()
    }

    /// The product as a `product.drifted` payload carries it (its listing now `drifted`).
    fn payload(&self, shop: i64, fields: Vec<Value>) -> Value {
        json!({
            "catalogue_id": shop,
            "platform": "chat",
            "product": {
                "id": self.id, "catalogue_id": shop, "sku": self.sku, "retailer_id": self.sku, "name": self.name,
                "price": self.price, "sale_price": self.sale_price, "description": self.description,
                "currency": self.currency, "image_url": self.image_url, "inventory": self.inventory,
                "reserved": self.reserved, "available": self.available(), "availability": self.availability(),
                "availability_source": if self.availability.is_some() { "explicit" } else { "derived" },
                "brand": self.brand, "category": self.category,
                "listings": [{ "platform": "chat", "state": "drifted", "problem": null }],
                "sync_status": "drifted",
            },
            "fields": fields,
            "source_of_truth": "api",
            "resolution": "pushed",
        })
    }
}

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
    pub fn new(count: u64, variant: u64, inventory: i32) -> Self {
        let products: Vec<data::ProductRow> = (0..count).map(|i| data::product(i, variant, inventory)).collect();
        let distinct = |mut names: Vec<String>| {
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

impl BatchRows {
    /// The rows' brands, categories and products written into `shop`; the products written.
    pub async fn insert(&self, client: &Client, tenant: i64, shop: i64) -> Result<u64> {
        client.execute(BRANDS, &[&tenant, &shop, &self.brand_names]).await?;
        client.execute(CATEGORIES, &[&tenant, &shop, &self.category_names]).await?;
        let params: [&(dyn ToSql + Sync); 10] = [
            &tenant,
            &shop,
            &self.sku,
            &self.name,
            &self.price,
            &self.description,
            &self.inventory,
            &self.brand,
            &self.category,
            &data::SHOP_CURRENCY,
        ];
        Ok(client.execute(INSERT_PRODUCTS, &params).await?)
    }
}

/// What one raw publish (17) did.
pub(super) struct Published {
    pub created: u64,
    pub updated: u64,
    pub listed: u64,
    pub synced: u64,
    /// The `items_batch` body's size.
    pub body_bytes: usize,
}

/// What one raw drift check (18) did, counted as `commerce::drift::DriftReport` counts.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Checked {
    pub checked: u64,
    pub drifted: u64,
    pub missing: u64,
    /// Listings sent back to the platform and `synced` again.
    pub synced: u64,
}

/// Both raw sides' statements, prepared on one connection.
pub(super) struct RawSide {
    client: Client,
    auth: Statement,
    brands: Statement,
    categories: Statement,
    upsert: Statement,
    claim: Statement,
    products: Statement,
    record: Statement,
    sandbox_upsert: Statement,
    drift_chunk: Statement,
    mark_drifted: Statement,
    drifted_events: Statement,
    http: reqwest::Client,
    tenant: i64,
}

impl RawSide {
    pub async fn open(url: &str, tenant: i64) -> Result<Self> {
        let client = sql::connect(url).await?;
        Ok(Self {
            auth: client.prepare(sql::AUTH).await?,
            brands: client.prepare(BRANDS).await?,
            categories: client.prepare(CATEGORIES).await?,
            upsert: client.prepare(UPSERT_LISTED).await?,
            claim: client.prepare(CLAIM).await?,
            products: client.prepare(&products_by_id()).await?,
            record: client.prepare(RECORD).await?,
            sandbox_upsert: client.prepare(SANDBOX_UPSERT).await?,
            drift_chunk: client.prepare(&drift_chunk()).await?,
            mark_drifted: client.prepare(MARK_DRIFTED).await?,
            drifted_events: client.prepare(DRIFTED_EVENTS).await?,
            http: reqwest::Client::builder().no_proxy().tcp_nodelay(true).timeout(Duration::from_secs(60)).build()?,
            client,
            tenant,
        })
    }

    /// 17's raw side for one batch: authentication; in one transaction the brands, the
    /// categories and the products with their movements and `pending` chat listings; then the
    /// claim, the products read, one `items_batch` POST of them to `items_url`, and the
    /// listings `synced`.
    pub async fn publish(&self, key_hash: &[u8], shop: i64, rows: &BatchRows, items_url: &str) -> Result<Published> {
        let (client, tenant) = (&self.client, &self.tenant);
        client.query_one(&self.auth, &[&key_hash]).await?;
        client.batch_execute("BEGIN").await?;
        client.execute(&self.brands, &[tenant, &shop, &rows.brand_names]).await?;
        client.execute(&self.categories, &[tenant, &shop, &rows.category_names]).await?;
        let params: [&(dyn ToSql + Sync); 10] = [
            tenant,
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
        let written = client.query_one(&self.upsert, &params).await?;
        client.batch_execute("COMMIT").await?;
        let (ids, products) = self.claim_products(shop).await?;
        let requests: Vec<Value> = products.iter().map(ShopProduct::batch_request).collect();
        let body =
            serde_json::to_vec(&json!({ "item_type": "PRODUCT_ITEM", "allow_upsert": true, "requests": requests }))?;
        let body_bytes = body.len();
        let response = self
            .http
            .post(items_url)
            .bearer_auth(ACCESS_TOKEN)
            .header("accept", "application/json")
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await?;
        let status = response.status();
        let answer: Value = serde_json::from_slice(&response.bytes().await?)?;
        let refused = answer.get("validation_status").and_then(Value::as_array).map_or(0, Vec::len);
        if !status.is_success() || refused > 0 {
            return Err(format!("the fake Graph API answered {status}: {answer}").into());
        }
        let synced = client.execute(&self.record, &[tenant, &ids]).await?;
        let count = |i: usize| -> Result<u64> { Ok(u64::try_from(written.get::<_, i64>(i))?) };
        Ok(Published { created: count(0)?, updated: count(1)?, listed: count(2)?, synced, body_bytes })
    }

    /// `publish::claim` and `products::views`: the claimed listings' products, by id.
    async fn claim_products(&self, shop: i64) -> Result<(Vec<i64>, Vec<ShopProduct>)> {
        let claimed = self.client.query(&self.claim, &[&self.tenant, &shop, &MAX_BATCH]).await?;
        let mut ids: Vec<i64> = claimed.iter().map(|r| r.get(0)).collect();
        ids.sort_unstable();
        let rows = self.client.query(&self.products, &[&self.tenant, &ids]).await?;
        Ok((ids, rows.iter().map(ShopProduct::read).collect()))
    }

    /// 18's raw side: the shop's live chat listings in chunks of [`CHUNK`], each with its
    /// product and its sandbox copy, compared in the client; per chunk with drifted ones, in
    /// one transaction, their listings `drifted` and their `product.drifted` events; then the
    /// publish of what drifted (claim, products, the sandbox platform's upsert, `synced`).
    pub async fn check_drift(&self, shop: i64, catalogue_ref: &str) -> Result<Checked> {
        let (client, tenant) = (&self.client, &self.tenant);
        let mut checked = Checked::default();
        let mut after = 0_i64;
        loop {
            let rows = client.query(&self.drift_chunk, &[tenant, &shop, &catalogue_ref, &after]).await?;
            let Some(last) = rows.last() else { break };
            after = last.get(0);
            let mut drifted: Vec<i64> = Vec::new();
            let mut payloads: Vec<String> = Vec::new();
            for row in &rows {
                let product = ShopProduct::read(row);
                let Some(copy) = row.get::<_, Option<String>>(13) else {
                    checked.missing += 1;
                    continue;
                };
                let fields = product.differences(&serde_json::from_str(&copy)?);
                if !fields.is_empty() {
                    drifted.push(product.id);
                    payloads.push(product.payload(shop, fields).to_string());
                }
            }
            checked.checked += rows.len() as u64;
            checked.drifted += drifted.len() as u64;
            if !drifted.is_empty() {
                client.batch_execute("BEGIN").await?;
                client.execute(&self.mark_drifted, &[tenant, &drifted]).await?;
                client.execute(&self.drifted_events, &[tenant, &payloads]).await?;
                client.batch_execute("COMMIT").await?;
            }
        }
        if checked.drifted + checked.missing > 0 {
            let (ids, products) = self.claim_products(shop).await?;
            let skus: Vec<&str> = products.iter().map(|p| p.sku.as_str()).collect();
            let items: Vec<String> = products.iter().map(|p| p.sandbox_item().to_string()).collect();
            client.execute(&self.sandbox_upsert, &[tenant, &catalogue_ref, &skus, &items]).await?;
            checked.synced = client.execute(&self.record, &[tenant, &ids]).await?;
        }
        Ok(checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product() -> ShopProduct {
        ShopProduct {
            id: 7,
            sku: "BENCH-00050".into(),
            name: "Bench product 50".into(),
            description: Some("A description".into()),
            price: 125_000,
            sale_price: None,
            currency: "TZS".into(),
            image_url: None,
            inventory: Some(100),
            reserved: 0,
            availability: None,
            brand: Some("Brand 10".into()),
            category: Some("Category 2".into()),
        }
    }

    #[test]
    fn a_batch_request_is_what_the_cloud_client_sends() {
        let request = product().batch_request();
        assert_eq!(
            request,
            json!({ "method": "UPDATE", "data": {
                "id": "BENCH-00050", "title": "Bench product 50", "description": "A description",
                "price": "1250.00 TZS", "availability": "in stock", "brand": "Brand 10", "category": "Category 2",
                "inventory": 100,
            }})
        );
        assert_eq!(graph_price(-5, "TZS"), "-0.05 TZS");
        let sold_out = ShopProduct { reserved: 100, ..product() };
        assert_eq!(sold_out.batch_request()["data"]["availability"], "out of stock");
        assert_eq!(sold_out.batch_request()["data"]["inventory"], 0);
    }

    #[test]
    fn the_sandbox_copy_differs_only_where_it_was_changed() {
        let product = product();
        let mut copy = product.sandbox_item();
        assert_eq!(product.differences(&copy), Vec::<Value>::new());
        // stock, availability and the image are never compared
        copy["inventory"] = json!(3);
        copy["availability"] = json!("out of stock");
        copy["image_url"] = json!("https://example.com/a.jpg");
        assert_eq!(product.differences(&copy), Vec::<Value>::new());
        copy["price_minor"] = json!(125_100);
        copy["brand"] = Value::Null;
        assert_eq!(
            product.differences(&copy),
            vec![
                json!({ "field": "price", "local": 125_000, "platform": 125_100 }),
                json!({ "field": "brand", "local": "Brand 10", "platform": null }),
            ]
        );
        let payload = product.payload(3, product.differences(&copy));
        assert_eq!(payload["product"]["sku"], "BENCH-00050");
        assert_eq!(payload["fields"][0]["field"], "price");
        assert_eq!(payload["resolution"], "pushed");
    }

    #[test]
    fn batch_rows_name_each_brand_and_category_once() {
        let rows = BatchRows::new(100, 0, 100);
        assert_eq!(rows.sku.len(), 100);
        assert_eq!(rows.brand_names.len(), 20);
        assert_eq!(rows.category_names.len(), 12);
        assert_eq!(rows.inventory[0], 100);
    }
}
