//! The commerce workloads, each with shops of its own made through the API on a fresh gateway
//! (the tenant's earlier shops deleted first, with everything in them).
//!
//! 10, product batch: the same batches of 5,000 products, one after another, on each side. The
//! API side times each from `POST .../products/batch` until `GET .../syncs/{sync}` (read every
//! 25 ms) says `completed`; the raw side upserts the same rows into another shop in one
//! transaction. The first batch creates the products, the later ones change every price.
//!
//! 11, orders with reservations: two shops with stock policy `svc` and the same 200 products
//! with 50 units each (put there by an API batch), then the same 4,000 orders on each side from
//! 32 tasks (order `n` is the same on both sides: [`data::order_lines`]), after a warm-up of
//! orders for a code no shop has (they hold nothing). A fixed count rather than a fixed time:
//! demand outruns the stock near the end, and both sides must get the same demand. After each
//! side the shop's stock is checked in the tables (see [`StockCheck`]); a shop oversold, or
//! whose figures disagree, fails the workload once both sides have run.

mod raw;

use std::fmt::Write;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::time::Instant;

use self::raw::{BatchRows, BatchStatements, RawOrders};
use super::load::{Measured, Timing, drive, drive_count};
use super::report::{Facts, Outcome, thousands};
use super::{Gateway, Run, Workload, data, sql};
use crate::Result;

/// Batches per side, and with `--quick`.
pub const BATCH_RUNS: usize = 5;
pub const QUICK_BATCH_RUNS: usize = 2;
/// On hand per product of the batch workload: the same in every batch (only prices change).
const BATCH_INVENTORY: i32 = 100;
/// How often the API side reads a run's report.
const POLL: Duration = Duration::from_millis(25);
/// A run not completed after this long fails the workload.
const GIVE_UP_AFTER: Duration = Duration::from_secs(120);

/// Products of each shop of the orders workload.
pub const ORDER_PRODUCTS: u64 = 200;
/// Orders per side and units on hand per product (about 3 units an order: demand outruns the
/// stock in the last sixth of the orders), and with `--quick`.
pub const ORDERS: u64 = 4_000;
pub const ORDER_INVENTORY: i32 = 50;
pub const QUICK_ORDERS: u64 = 1_000;
pub const QUICK_ORDER_INVENTORY: i32 = 12;
/// Warm-up orders name a code no shop has: they are created with an unresolved line and
/// hold nothing.
const WARMUP_SKU: &str = "BENCH-WARMUP";
const WARMUP_HANDLE: &str = "bench-warmup";

/// A shop's stock after the orders, per product: held more than on hand; `reserved` not the
/// sum of its lines' nor of its `reserve` movements, or the count on hand moved; a short line
/// while units are still available. Then the totals.
const CHECK_STOCK: &str = "WITH lines AS ( \
    SELECT l.product_id, sum(l.reserved) AS held, sum(l.quantity) AS ordered, \
           count(*) FILTER (WHERE l.stock_short) AS short \
    FROM order_lines l JOIN orders o ON o.id = l.order_id WHERE o.catalogue_id = $1 GROUP BY l.product_id), \
  moves AS ( \
    SELECT m.product_id, -sum(m.quantity) AS held FROM stock_movements m JOIN products p ON p.id = m.product_id \
    WHERE p.catalogue_id = $1 AND m.kind = 'reserve' GROUP BY m.product_id) \
  SELECT count(*) FILTER (WHERE p.reserved > p.inventory), \
         count(*) FILTER (WHERE p.reserved <> coalesce(l.held, 0) OR p.reserved <> coalesce(m.held, 0) \
                          OR p.inventory IS DISTINCT FROM $2), \
         count(*) FILTER (WHERE coalesce(l.short, 0) > 0 AND p.inventory - p.reserved > 0), \
         count(*) FILTER (WHERE p.inventory - p.reserved <= 0), \
         coalesce(sum(p.reserved), 0)::bigint, coalesce(sum(l.short), 0)::bigint, coalesce(sum(l.ordered), 0)::bigint \
  FROM products p LEFT JOIN lines l ON l.product_id = p.id LEFT JOIN moves m ON m.product_id = p.id \
  WHERE p.catalogue_id = $1";
/// Lines holding more than ordered, or marked short when fully held (or the reverse).
const BAD_LINES: &str = "SELECT count(*) FROM order_lines l JOIN orders o ON o.id = l.order_id \
    WHERE o.catalogue_id = $1 AND l.product_id IS NOT NULL \
      AND (l.reserved > l.quantity OR l.stock_short <> (l.reserved < l.quantity))";
const TIMED_ORDERS: &str = "SELECT count(*) FROM orders WHERE catalogue_id = $1 AND customer_handle <> $2";

/// The product batch workload: the same batches on each side, one after another.
#[derive(Serialize, Clone)]
pub struct BatchFacts {
    /// Products in each batch.
    pub products: u64,
    /// From the POST until the report said `completed`, per batch (the first creates the
    /// products, the others change every price).
    pub api_seconds: Vec<f64>,
    /// The raw transaction, authentication included, per batch.
    pub raw_seconds: Vec<f64>,
}

/// Issue 24: the median batch of 5,000 products, request to `completed`.
pub const BATCH_MEDIAN_LIMIT_S: f64 = 0.25;

impl BatchFacts {
    pub fn slowest_api_s(&self) -> f64 {
        self.api_seconds.iter().copied().fold(0.0, f64::max)
    }

    /// The median batch (the upper one of an even count).
    pub fn median_api_s(&self) -> f64 {
        let mut seconds = self.api_seconds.clone();
        seconds.sort_by(f64::total_cmp);
        seconds.get(seconds.len() / 2).copied().unwrap_or_default()
    }

    /// What the report says under its table.
    pub fn paragraph(&self, number: u8) -> String {
        let times = |seconds: &[f64]| seconds.iter().map(|s| format!("{s:.2}")).collect::<Vec<_>>().join(", ");
        format!(
            "\n{number}. is {} batches of {} products per side, one after another, its rates rows per second and its \
             p50 and p99 batch times: the API side from `POST .../products/batch` until `GET .../syncs/{{sync}}` \
             said `completed` ({} s; the first creates the products, the others change every price), the raw side \
             one transaction upserting the same rows into another shop ({} s).\n",
            self.api_seconds.len(),
            thousands(self.products),
            times(&self.api_seconds),
            times(&self.raw_seconds),
        )
    }
}

/// The orders workload: the same orders drawn on the same stock on each side, and the stock
/// checked after each side.
#[derive(Serialize, Clone)]
pub struct OrderFacts {
    /// Orders timed on each side (the warm-up's are not counted).
    pub orders: u64,
    pub products: u64,
    /// On hand per product at the start.
    pub inventory_each: i32,
    pub api: StockCheck,
    pub raw: StockCheck,
}

/// A shop's stock after the orders, read from the tables.
#[derive(Serialize, Clone, Debug, Default)]
pub struct StockCheck {
    /// Orders with a resolved line (the timed ones).
    pub orders: i64,
    pub units_ordered: i64,
    pub units_held: i64,
    /// Lines held in part or not at all.
    pub short_lines: i64,
    /// Products with nothing left to hold.
    pub sold_out: i64,
    /// Products holding more than they have on hand: must be 0.
    pub oversold: i64,
    /// Products whose `reserved` is not the sum of their lines' `reserved`, or of their
    /// `reserve` movements, or whose on-hand count moved: must be 0.
    pub mismatched: i64,
    /// Products with a short line and units still available: must be 0 (no unit comes back
    /// during the run, so a short line means its product was sold out from then on).
    pub undersold: i64,
}

impl StockCheck {
    pub fn is_exact(&self) -> bool {
        self.oversold == 0 && self.mismatched == 0 && self.undersold == 0
    }

    fn describe(&self) -> String {
        let n = |v: i64| thousands(u64::try_from(v).unwrap_or(0));
        format!(
            "{} orders, {} of {} units held, {} short lines, {} products sold out; oversold {}, mismatched {}, \
             undersold {}",
            n(self.orders),
            n(self.units_held),
            n(self.units_ordered),
            n(self.short_lines),
            self.sold_out,
            self.oversold,
            self.mismatched,
            self.undersold
        )
    }
}

impl OrderFacts {
    /// What the report says under its table.
    pub fn paragraph(&self, number: u8, connections: usize) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "\n{number}. is {} orders per side (a fixed count, after a warm-up of orders that hold nothing) on a \
             shop of {} products with {} units each (stock policy `svc`), {connections} at a time; stock after the \
             API side: {}; after the raw side: {}.",
            thousands(self.orders),
            self.products,
            self.inventory_each,
            self.api.describe(),
            self.raw.describe(),
        );
        out
    }
}

/// One API batch: from the request to `completed`, to the 202, and by the report's own times
/// the wait for a worker and the run (seconds).
struct BatchTime {
    elapsed: Duration,
    accepted: Duration,
    waited: f64,
    ran: f64,
}

/// A batch request's body: products `0..count` at price `variant`, serialized once.
fn batch_body(count: u64, variant: u64, inventory: i32) -> Result<Vec<u8>> {
    let products: Vec<Value> = (0..count)
        .map(|i| {
            let p = data::product(i, variant, inventory);
            json!({
                "sku": p.sku, "name": p.name, "price": p.price, "currency": data::SHOP_CURRENCY,
                "inventory": p.inventory, "description": p.description, "brand": p.brand, "category": p.category,
            })
        })
        .collect();
    Ok(serde_json::to_vec(&json!({ "mode": "upsert", "products": products }))?)
}

/// What the report of a completed run must say: every row created (the first batch) or
/// updated (the later ones), none rejected.
fn check_report(report: &Value, count: u64, creates: bool) -> Result<()> {
    let number = |name: &str| report.get(name).and_then(Value::as_u64).unwrap_or(u64::MAX);
    let (created, updated) = if creates { (count, 0) } else { (0, count) };
    if number("received") != count
        || number("created") != created
        || number("updated") != updated
        || number("rejected") != 0
    {
        return Err(
            format!("the run reported other counts than {created} created and {updated} updated: {report}").into()
        );
    }
    Ok(())
}

impl Run<'_> {
    /// Deletes the tenant's shops (products, syncs, orders and movements go with them).
    async fn clear_shops(&self) -> Result<()> {
        self.db.execute("DELETE FROM catalogues WHERE tenant_id = $1", &[&self.setup.tenant]).await?;
        self.db
            .batch_execute(
                "VACUUM ANALYZE catalogues, catalogue_brands, catalogue_categories, products, stock_movements, \
                 catalogue_syncs, orders, order_lines",
            )
            .await?;
        Ok(())
    }

    /// Sends one batch and waits for its run to complete.
    async fn api_batch(&self, shop: i64, body: Vec<u8>, count: u64, creates: bool) -> Result<BatchTime> {
        let started = Instant::now();
        let sync = self.api.product_batch(shop, body).await?;
        let accepted = started.elapsed();
        loop {
            tokio::time::sleep(POLL).await;
            let report = self.api.sync_report(shop, sync).await?;
            match report.get("status").and_then(Value::as_str) {
                Some("completed") => {
                    let elapsed = started.elapsed();
                    check_report(&report, count, creates)?;
                    let at = |name: &str| {
                        let at = report.get(name).and_then(Value::as_str).unwrap_or_default();
                        OffsetDateTime::parse(at, &Rfc3339).map_err(|e| format!("{name} {at:?} in {report}: {e}"))
                    };
                    let (created, run_started, finished) = (at("created_at")?, at("started_at")?, at("finished_at")?);
                    return Ok(BatchTime {
                        elapsed,
                        accepted,
                        waited: (run_started - created).as_seconds_f64(),
                        ran: (finished - run_started).as_seconds_f64(),
                    });
                }
                Some("failed") => return Err(format!("sync {sync} of shop {shop} failed: {report}").into()),
                _ if started.elapsed() > GIVE_UP_AFTER => {
                    return Err(
                        format!("sync {sync} of shop {shop} not completed after {GIVE_UP_AFTER:?}: {report}").into()
                    );
                }
                _ => {}
            }
        }
    }

    /// Workload 10 on both sides (see the module's documentation).
    pub(super) async fn product_batch(&self, workload: &'static Workload) -> Result<Outcome> {
        let (runs, count) = (self.setup.batch_runs, data::BATCH_PRODUCTS);
        self.clear_shops().await?;
        self.prepare(workload, "both sides").await?;
        let gateway = Gateway::start(self.setup, workload.limiter(), self.api).await?;
        let name = |side: &str| format!("bench: {}. {} ({side})", workload.number, workload.name);
        let api_shop = self.api.create_shop(&name("API"), "external").await?;
        let raw_shop = self.api.create_shop(&name("raw SQL"), "external").await?;
        let bodies = [batch_body(count, 0, BATCH_INVENTORY)?, batch_body(count, 1, BATCH_INVENTORY)?];

        let label = format!("{}. {} of {count} · API", workload.number, workload.name);
        let before = self.meter.read(gateway.pid);
        let mut api_times = Vec::with_capacity(runs);
        for run in 0..runs {
            let time = self.api_batch(api_shop, bodies[run % 2].clone(), count, run == 0).await;
            let time = time.map_err(|e| format!("{label}, batch {}: {e}", run + 1))?;
            let rss = super::sys::rss_mb(gateway.pid).map_or_else(|_| "?".to_owned(), |mb| format!("{mb:.1} MB"));
            println!(
                "xtask: {label}: batch {} completed after {:.2} s (202 after {:.2} s; by the report the job started \
                 {:.2} s after the run was created and ran {:.2} s); gateway RSS {rss}",
                run + 1,
                time.elapsed.as_secs_f64(),
                time.accepted.as_secs_f64(),
                time.waited,
                time.ran,
            );
            api_times.push(time.elapsed);
        }
        let api_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        let rss_mb = super::sys::peak_rss_mb(gateway.pid).ok();
        let api_total: f64 = api_times.iter().map(Duration::as_secs_f64).sum();
        let api = Measured::of(api_times.clone(), api_total, count * runs as u64);
        super::print_run(&label, &api, &api_cpu);

        let label = format!("{}. {} of {count} · raw SQL", workload.number, workload.name);
        let client = sql::connect(&self.setup.database_url).await?;
        let statements = BatchStatements::prepare(&client).await?;
        let before = self.meter.read(gateway.pid);
        let mut raw_times = Vec::with_capacity(runs);
        for run in 0..runs {
            let rows = BatchRows::new(count, run as u64 % 2);
            let started = Instant::now();
            let (created, updated) =
                statements.run(&client, (self.setup.tenant, self.key_hash), raw_shop, &rows).await?;
            let elapsed = started.elapsed();
            let expected = if run == 0 { (count, 0) } else { (0, count) };
            if (created, updated) != expected {
                return Err(format!("{label}, batch {}: {created} created, {updated} updated", run + 1).into());
            }
            raw_times.push(elapsed);
        }
        let raw_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        drop(client);
        let raw_total: f64 = raw_times.iter().map(Duration::as_secs_f64).sum();
        let raw = Measured::of(raw_times.clone(), raw_total, count * runs as u64);
        super::print_run(&label, &raw, &raw_cpu);
        gateway.stop().await?;

        let seconds = |times: &[Duration]| times.iter().map(Duration::as_secs_f64).collect();
        let facts = BatchFacts { products: count, api_seconds: seconds(&api_times), raw_seconds: seconds(&raw_times) };
        Ok(Outcome { workload, api, raw, rss_mb, api_cpu, raw_cpu, facts: Some(Facts::Batch(facts)), open: None })
    }

    /// A shop with stock policy `svc` holding [`ORDER_PRODUCTS`] products of `inventory` units,
    /// put there by an API batch.
    async fn stocked_shop(&self, workload: &Workload, side: &str, inventory: i32) -> Result<i64> {
        let shop =
            self.api.create_shop(&format!("bench: {}. {} ({side})", workload.number, workload.name), "svc").await?;
        self.api_batch(shop, batch_body(ORDER_PRODUCTS, 0, inventory)?, ORDER_PRODUCTS, true).await?;
        Ok(shop)
    }

    /// Workload 11 on both sides (see the module's documentation).
    pub(super) async fn orders(&self, workload: &'static Workload) -> Result<Outcome> {
        let (count, inventory, n) = (self.setup.orders, self.setup.order_inventory, workload.connections);
        self.clear_shops().await?;
        let gateway = Gateway::start(self.setup, workload.limiter(), self.api).await?;
        let api_shop = self.stocked_shop(workload, "API", inventory).await?;
        let raw_shop = self.stocked_shop(workload, "raw SQL", inventory).await?;
        // The open-loop run orders from a third shop with the same stock.
        let open_shop = self.stocked_shop(workload, "open loop", inventory).await?;
        self.db.batch_execute("VACUUM ANALYZE products, stock_movements, catalogue_syncs").await?;
        let skus: Arc<Vec<String>> = Arc::new((0..ORDER_PRODUCTS).map(data::product_sku).collect());
        let lines = move |seq: u64| -> Vec<(String, i32)> {
            data::order_lines(seq, ORDER_PRODUCTS).into_iter().map(|(p, q)| (skus[p as usize].clone(), q)).collect()
        };
        let lines = Arc::new(lines);
        let warmup = Timing { warmup: self.timing.warmup, measure: Duration::ZERO };
        let warmup_lines = || vec![(WARMUP_SKU.to_owned(), 1)];

        self.prepare(workload, "API").await?;
        let label = format!("{}. {} · API", workload.number, workload.name);
        let api = Arc::clone(self.api);
        drive(&format!("{label} (warm-up)"), n, warmup, move |_| {
            let api = Arc::clone(&api);
            async move { api.create_order(api_shop, WARMUP_HANDLE, &warmup_lines()).await }
        })
        .await?;
        let before = self.meter.read(gateway.pid);
        let (api, order) = (Arc::clone(self.api), Arc::clone(&lines));
        let api_measured = drive_count(&label, n, count, move |op| {
            let (api, lines) = (Arc::clone(&api), order(op.seq));
            async move { api.create_order(api_shop, &format!("bench-{}", op.seq), &lines).await }
        })
        .await?;
        let api_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        let rss_mb = super::sys::peak_rss_mb(gateway.pid).ok();
        super::print_run(&label, &api_measured, &api_cpu);
        let api_check = self.check_stock(&label, api_shop, inventory).await?;

        self.prepare(workload, "raw SQL").await?;
        let label = format!("{}. {} · raw SQL", workload.number, workload.name);
        let side = (self.setup.tenant, self.key_hash);
        let raw = Arc::new(RawOrders::open(&self.setup.database_url, side, raw_shop, n).await?);
        let conns = Arc::clone(&raw);
        drive(&format!("{label} (warm-up)"), n, warmup, move |op| {
            let raw = Arc::clone(&conns);
            async move { raw.order(op.worker, WARMUP_HANDLE, &warmup_lines()).await }
        })
        .await?;
        let before = self.meter.read(gateway.pid);
        let (conns, order) = (Arc::clone(&raw), Arc::clone(&lines));
        let raw_measured = drive_count(&label, n, count, move |op| {
            let (raw, lines) = (Arc::clone(&conns), order(op.seq));
            async move { raw.order(op.worker, &format!("bench-{}", op.seq), &lines).await }
        })
        .await?;
        let raw_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        drop(raw);
        super::print_run(&label, &raw_measured, &raw_cpu);
        let raw_check = self.check_stock(&label, raw_shop, inventory).await?;
        let open = match workload.open_loop_p99_ms {
            Some(_) => {
                self.prepare(workload, "open loop").await?;
                let (api, order) = (Arc::clone(self.api), Arc::clone(&lines));
                let open = self
                    .open_run(workload, raw_measured.rate(), move |op| {
                        let (api, lines) = (Arc::clone(&api), order(op.seq));
                        async move { api.create_order(open_shop, &format!("bench-{}", op.seq), &lines).await }
                    })
                    .await?;
                Some(open)
            }
            None => None,
        };
        gateway.stop().await?;

        for (side, check) in [("API", &api_check), ("raw SQL", &raw_check)] {
            if check.orders != i64::try_from(count)? {
                return Err(
                    format!("{}. {side}: {} orders in the shop, {count} sent", workload.number, check.orders).into()
                );
            }
        }
        if !api_check.is_exact() || !raw_check.is_exact() {
            return Err(format!(
                "{}. {}: THE STOCK IS WRONG: API side {api_check:?}; raw side {raw_check:?}",
                workload.number, workload.name
            )
            .into());
        }
        let facts = OrderFacts {
            orders: count,
            products: ORDER_PRODUCTS,
            inventory_each: inventory,
            api: api_check,
            raw: raw_check,
        };
        Ok(Outcome {
            workload,
            api: api_measured,
            raw: raw_measured,
            rss_mb,
            api_cpu,
            raw_cpu,
            facts: Some(Facts::Orders(facts)),
            open,
        })
    }

    /// The shop's stock read from the tables, printed; loud when it is wrong.
    async fn check_stock(&self, label: &str, shop: i64, inventory: i32) -> Result<StockCheck> {
        let row = self.db.query_one(CHECK_STOCK, &[&shop, &inventory]).await?;
        let bad_lines: i64 = self.db.query_one(BAD_LINES, &[&shop]).await?.get(0);
        let orders: i64 = self.db.query_one(TIMED_ORDERS, &[&shop, &WARMUP_HANDLE]).await?.get(0);
        let check = StockCheck {
            orders,
            oversold: row.get(0),
            mismatched: row.get::<_, i64>(1) + bad_lines,
            undersold: row.get(2),
            sold_out: row.get(3),
            units_held: row.get(4),
            short_lines: row.get(5),
            units_ordered: row.get(6),
        };
        println!(
            "xtask: {label}: {} orders; {} of {} units held, {} short lines, {} of {ORDER_PRODUCTS} products sold out; \
             oversold {}, mismatched {}, undersold {}",
            check.orders,
            check.units_held,
            check.units_ordered,
            check.short_lines,
            check.sold_out,
            check.oversold,
            check.mismatched,
            check.undersold
        );
        if !check.is_exact() {
            println!("xtask: {label}: ***** THE STOCK IS WRONG (see above): the workload will fail *****");
        }
        Ok(check)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_body_holds_every_product_once() {
        let body: Value = serde_json::from_slice(&batch_body(3, 1, 7).expect("serializes")).expect("json");
        let products = body["products"].as_array().expect("products");
        assert_eq!(products.len(), 3);
        assert_eq!(products[2]["sku"], "BENCH-00002");
        assert_eq!(products[2]["inventory"], 7);
        assert_eq!(products[2]["currency"], data::SHOP_CURRENCY);
        assert_eq!(products[2]["price"], data::product(2, 1, 7).price);
    }

    #[test]
    fn a_report_must_account_for_every_row() {
        let created = json!({ "received": 5, "created": 5, "updated": 0, "rejected": 0 });
        assert!(check_report(&created, 5, true).is_ok());
        assert!(check_report(&created, 5, false).is_err());
        let rejected = json!({ "received": 5, "created": 4, "updated": 0, "rejected": 1 });
        assert!(check_report(&rejected, 5, true).is_err());
    }

    #[test]
    fn the_demand_outruns_the_stock_near_the_end() {
        let units: u64 = (0..ORDERS).flat_map(|n| data::order_lines(n, ORDER_PRODUCTS)).map(|(_, q)| q as u64).sum();
        let stock = ORDER_PRODUCTS * ORDER_INVENTORY as u64;
        assert!(units > stock && units < stock * 13 / 10, "{units} units wanted of {stock}");
        let quick: u64 =
            (0..QUICK_ORDERS).flat_map(|n| data::order_lines(n, ORDER_PRODUCTS)).map(|(_, q)| q as u64).sum();
        let quick_stock = ORDER_PRODUCTS * QUICK_ORDER_INVENTORY as u64;
        assert!(quick > quick_stock && quick < quick_stock * 14 / 10, "{quick} units wanted of {quick_stock}");
    }
}
