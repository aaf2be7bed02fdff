//! The publishing workloads (issue 18), each with its shop made through the API on a fresh
//! gateway (the tenant's earlier shops deleted first, with everything in them), against raw
//! SQL on the same database like every other row.
//!
//! 17, a 5,000-product publish to the chat catalogue: a `cloud` chat account made with the
//! admin CLI (`gateway admin chat-account add --provider cloud --base-url http://127.0.0.1:<port>
//! --access-token ...`) whose Graph API is a fake in the bench's own process ([`graph`]), a shop
//! connected to it (`PATCH /api/v3/catalogues/{id}` `{"waba_id", "channels": ["chat"]}`), then
//! the same batches as workload 10, one after another, each timed from `POST .../products/batch`
//! until `GET .../syncs/{sync}` says `completed` with `platforms.chat.synced` 5,000: the run
//! ingests the rows, then publishes them through the provider (one `items_batch` POST). The raw
//! side writes the same rows into another shop with their chat listings `pending`, then claims,
//! reads and POSTs them to the same fake and marks them `synced` ([`raw::RawSide::publish`]).
//!
//! 18, a drift check over 50,000 listings: a `sandbox` chat account (the sandbox platform keeps
//! its copy of each product in `sandbox_catalogue_items`), a shop connected to it, and 50,000
//! products written by SQL with `synced` chat listings and copies equal to the shop's but for
//! every 100th product's price. The API side is `gateway admin commerce check-drift --tenant T
//! --catalogue C --json`, as an operator runs it, timed from the spawn to its exit; it must
//! report every listing checked and the 1 % drifted and pushed. The raw side reads and writes
//! the same ([`raw::RawSide::check_drift`]). The sides take turns, three checks each, the
//! copies drifted again by SQL before each: one check is a single timed operation of a few
//! seconds, which a burst of other work on the machine would skew for one side alone.
//!
//! The shared report knows neither kind of row: what it cannot say (the batch and check times,
//! the fake's counts, 18's time limit) is a [`Note`] that [`markdown`] prints under the report
//! and [`annotate`] adds to latest.json.

mod graph;
mod raw;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use self::graph::Graph;
use self::raw::{BatchRows, RawSide};
use super::load::Measured;
use super::report::{Outcome, thousands};
use super::sys::{self, CpuShare};
use super::{Gateway, Run, Workload, data};
use crate::Result;

/// What the raw side of 17 does.
pub const RAW_PUBLISH: &str = "authentication lookup; BEGIN; INSERT catalogue_brands and catalogue_categories ... SELECT \
    FROM unnest ON CONFLICT DO NOTHING; one INSERT INTO products ... SELECT FROM unnest(5,000 rows) ON CONFLICT DO UPDATE \
    with, in the same statement, a 'sync' stock_movements row per product created and its chat product_listings row \
    'pending' (ON CONFLICT DO UPDATE); COMMIT; the claim (UPDATE product_listings SET state 'syncing' WHERE product_id IN \
    (... LIMIT 5000 FOR UPDATE SKIP LOCKED) RETURNING); the products read with their brand and category names; one POST \
    of the items_batch body (5,000 UPDATE requests) to the same fake Graph API; UPDATE product_listings SET state \
    'synced' WHERE product_id = ANY AND state 'syncing'";
/// What the raw side of 18 does.
pub const RAW_DRIFT: &str = "per chunk of 1,000: the shop's synced chat listings joined to their products, brand and \
    category names and sandbox_catalogue_items copies (ORDER BY product_id LIMIT 1000), compared in the client; for a \
    chunk with drifted ones, BEGIN; UPDATE product_listings SET state 'drifted' WHERE product_id = ANY; INSERT events \
    ('product.drifted', unnest of the payloads); COMMIT; then the claim, the products read, the sandbox_catalogue_items \
    upsert (unnest, ON CONFLICT DO UPDATE) and UPDATE product_listings SET state 'synced'";
/// 18's time limit (issue 18), seconds.
pub const DRIFT_LIMIT_S: f64 = 30.0;
/// Listings of 18's shop, and with `--quick`.
pub const DRIFT_LISTINGS: u64 = 50_000;
pub const QUICK_DRIFT_LISTINGS: u64 = 5_000;
/// Checks per side, the sides taking turns.
const DRIFT_ROUNDS: usize = 3;
/// Every this many products one has a platform copy with another price.
const DRIFT_EVERY: u64 = 100;
/// How much more the drifted copies ask, minor units.
const DRIFT_PRICE_MINOR: i64 = 100;

/// 17's business account (cloud, the fake Graph API) and 18's (sandbox).
const PUBLISH_WABA: &str = "100000000000017";
const DRIFT_WABA: &str = "100000000000018";
/// On hand per product (the same in every batch: only prices change).
const INVENTORY: i32 = 100;
/// How often the API side reads a run's report, and when it gives up.
const POLL: Duration = Duration::from_millis(25);
const GIVE_UP_AFTER: Duration = Duration::from_secs(120);
/// How often the CLI's peak RSS is read while it runs.
const RSS_POLL: Duration = Duration::from_millis(100);
/// How long the database gets to reap the backends of the CLI's connections after it exits.
const REAP: Duration = Duration::from_millis(300);

/// A target the shared report cannot check for these rows, checked here.
#[derive(Debug, Clone)]
pub struct Verdict {
    target: String,
    value: f64,
    unit: &'static str,
    met: bool,
    off_by_pct: f64,
}

impl Verdict {
    fn below(target: String, value: f64, unit: &'static str, max: f64) -> Self {
        Self { target, value, unit, met: value < max, off_by_pct: ((value - max) / max * 100.0).max(0.0) }
    }

    fn describe(&self) -> String {
        let value = format!("{:.2}{}", self.value, self.unit);
        if self.met {
            format!("{}: met ({value})", self.target)
        } else {
            format!("{}: **missed** ({value}, {:.0}% off)", self.target, self.off_by_pct)
        }
    }
}

/// What a row of this module adds to the report: its facts (a member of its entry in
/// latest.json), a paragraph under the report's table, and its own targets.
#[derive(Debug, Clone)]
pub struct Note {
    number: u8,
    name: &'static str,
    key: &'static str,
    facts: Value,
    paragraph: String,
    checks: Vec<Verdict>,
}

/// The notes as Markdown, to print after the report (empty without any).
pub fn markdown(notes: &[Note]) -> String {
    let mut out = String::new();
    for note in notes {
        out.push_str(&format!("\n{}. {}\n", note.number, note.paragraph));
        for check in &note.checks {
            out.push_str(&format!("- {}. {}: {}\n", note.number, note.name, check.describe()));
        }
    }
    out
}

/// Adds each note's facts and targets to its workload's entry of the JSON report.
pub fn annotate(report: &mut Value, notes: &[Note]) {
    let Some(workloads) = report.get_mut("workloads").and_then(Value::as_array_mut) else { return };
    for note in notes {
        let Some(entry) = workloads.iter_mut().find(|w| w["number"] == json!(note.number)) else { continue };
        entry[note.key] = note.facts.clone();
        let targets = note
            .checks
            .iter()
            .map(|c| json!({ "target": c.target, "value": c.value, "met": c.met, "off_by_pct": c.off_by_pct }));
        match entry.get_mut("targets").and_then(Value::as_array_mut) {
            Some(list) => list.extend(targets),
            None => entry["targets"] = Value::Array(targets.collect()),
        }
    }
}

/// A batch request's body: products `0..count` at price `variant`, serialized once (workload
/// 10's bodies).
fn batch_body(count: u64, variant: u64) -> Result<Vec<u8>> {
    let products: Vec<Value> = (0..count)
        .map(|i| {
            let p = data::product(i, variant, INVENTORY);
            json!({
                "sku": p.sku, "name": p.name, "price": p.price, "currency": data::SHOP_CURRENCY,
                "inventory": p.inventory, "description": p.description, "brand": p.brand, "category": p.category,
            })
        })
        .collect();
    Ok(serde_json::to_vec(&json!({ "mode": "upsert", "products": products }))?)
}

/// What the report of a completed publishing run must say: every row created (the first
/// batch) or updated (the later ones), none rejected, and every one synced to the chat
/// catalogue, none blocked.
fn check_report(report: &Value, count: u64, creates: bool) -> Result<()> {
    let number = |pointer: &str| report.pointer(pointer).and_then(Value::as_u64).unwrap_or(u64::MAX);
    let (created, updated) = if creates { (count, 0) } else { (0, count) };
    if number("/received") != count
        || number("/created") != created
        || number("/updated") != updated
        || number("/rejected") != 0
        || number("/platforms/chat/synced") != count
        || number("/platforms/chat/blocked") != 0
    {
        return Err(format!(
            "the run reported other counts than {created} created, {updated} updated and {count} synced to chat: {report}"
        )
        .into());
    }
    Ok(())
}

/// The products of 18 whose platform copy is priced differently: every 100th, from the 50th.
fn drifts(i: u64) -> bool {
    i % DRIFT_EVERY == DRIFT_EVERY / 2
}

/// What `check-drift --json` must have found: every listing checked, the drifted ones pushed.
fn check_drift_report(reports: &Value, shop: i64, listings: u64) -> Result<()> {
    let drifted = (0..listings).filter(|&i| drifts(i)).count() as u64;
    let expected = json!([{
        "catalogue_id": shop, "checked": listings, "drifted": drifted, "pushed": drifted, "pulled": 0, "missing": 0,
    }]);
    if *reports != expected {
        return Err(format!("check-drift reported {reports}, not {expected}").into());
    }
    Ok(())
}

/// 18's shop, after its products (`raw::BatchRows::insert`): their `synced` chat listings, and
/// the sandbox platform's copies as the publish wrote them.
const LOAD_LISTINGS: &str = "INSERT INTO product_listings (product_id, platform, state, problem, updated_at, tenant_id) \
    SELECT id, 'chat', 'synced', NULL, now(), tenant_id FROM products WHERE tenant_id = $1 AND catalogue_id = $2";
const LOAD_COPIES: &str = "INSERT INTO sandbox_catalogue_items (tenant_id, catalogue_ref, retailer_id, item, updated_at) \
    SELECT p.tenant_id, $3, p.sku, jsonb_build_object('retailer_id', p.sku, 'name', p.name, \
        'description', p.description, 'price_minor', p.price, 'sale_price_minor', p.sale_price, 'currency', p.currency, \
        'availability', 'in stock', 'image_url', p.image_url, 'brand', b.name, 'category', c.name, \
        'inventory', p.inventory - p.reserved), now() \
    FROM products p LEFT JOIN catalogue_brands b ON b.id = p.brand_id \
    LEFT JOIN catalogue_categories c ON c.id = p.category_id WHERE p.tenant_id = $1 AND p.catalogue_id = $2";
/// Changes the platform's price of the drifted products (again, after the API side pushed it back).
const DRIFT_COPIES: &str = "UPDATE sandbox_catalogue_items SET item = jsonb_set(item, '{price_minor}', \
    to_jsonb((item->>'price_minor')::bigint + $4)) WHERE tenant_id = $1 AND catalogue_ref = $2 AND retailer_id = ANY($3)";
/// After a check: listings not `synced`, copies whose price is not the shop's, and the shop's
/// `product.drifted` events.
const AFTER_CHECK: &str = "SELECT \
    (SELECT count(*) FROM product_listings l JOIN products p ON p.id = l.product_id AND p.tenant_id = l.tenant_id \
     WHERE p.tenant_id = $1 AND p.catalogue_id = $2 AND l.platform = 'chat' AND l.state <> 'synced'), \
    (SELECT count(*) FROM sandbox_catalogue_items s JOIN products p ON p.tenant_id = s.tenant_id AND p.sku = s.retailer_id \
     WHERE s.tenant_id = $1 AND s.catalogue_ref = $3 AND p.catalogue_id = $2 AND (s.item->>'price_minor')::bigint <> p.price), \
    (SELECT count(*) FROM events WHERE tenant_id = $1 AND name = 'product.drifted' AND payload->>'catalogue_id' = $2::text)";

/// CPU shares of several runs, each weighed by its time.
fn mean_share(runs: &[(CpuShare, Duration)]) -> CpuShare {
    let total: f64 = runs.iter().map(|(_, t)| t.as_secs_f64()).sum::<f64>().max(1e-9);
    let mean = |pick: fn(&CpuShare) -> f64| runs.iter().map(|(c, t)| pick(c) * t.as_secs_f64()).sum::<f64>() / total;
    CpuShare {
        gateway_pct: mean(|c| c.gateway_pct),
        postgres_pct: mean(|c| c.postgres_pct),
        load_generator_pct: mean(|c| c.load_generator_pct),
        other_pct: mean(|c| c.other_pct),
    }
}

/// The CPU clock's ticks per second (`getconf CLK_TCK`), 100 when it cannot tell.
fn ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8_lossy(&out.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// CPU time of the reaped children of `pid` (cutime + cstime of /proc/<pid>/stat), in ticks:
/// what a process that has exited used, once its parent has waited for it.
fn reaped_ticks(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return 0 };
    let Some(end) = stat.rfind(')') else { return 0 };
    // after `pid (comm)`: state is field 0, cutime and cstime are 13 and 14
    let fields: Vec<u64> = stat[end + 1..].split_whitespace().skip(13).take(2).filter_map(|f| f.parse().ok()).collect();
    fields.iter().sum()
}

/// The postmaster's pid, from its pid file.
fn postmaster_pid(cluster: &Path) -> Result<u32> {
    let text = std::fs::read_to_string(cluster.join("postmaster.pid"))?;
    Ok(text.lines().next().and_then(|l| l.trim().parse().ok()).ok_or("no pid in postmaster.pid")?)
}

/// One timed run of the admin CLI.
struct CliRun {
    elapsed: Duration,
    stdout: String,
    cpu: CpuShare,
    peak_rss_mb: Option<f64>,
}

impl Run<'_> {
    /// `gateway admin ...`; the last line it printed.
    async fn admin_line(&self, args: &[&str]) -> Result<String> {
        let mut cmd = super::gateway_command(&self.setup.gateway, &self.setup.database_url, &self.setup.root, args);
        cmd.stdin(Stdio::null()).kill_on_drop(true);
        let output = cmd.output().await?;
        if !output.status.success() {
            return Err(format!(
                "`gateway {}` failed ({}): {}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )
            .into());
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let line = stdout.lines().map(str::trim).rfind(|line| !line.is_empty());
        Ok(line.ok_or_else(|| format!("`gateway {}` printed nothing", args.join(" ")))?.to_owned())
    }

    /// The tenant's chat account `waba_id`, added with the admin CLI with `extra` (provider and
    /// credentials) unless it exists.
    async fn publishing_account(&self, waba_id: &str, name: &str, extra: &[&str]) -> Result<()> {
        let found = self
            .db
            .query_opt(
                "SELECT id FROM chat_accounts WHERE tenant_id = $1 AND waba_id = $2",
                &[&self.setup.tenant, &waba_id],
            )
            .await?;
        if found.is_some() {
            return Ok(());
        }
        let tenant = self.setup.tenant.to_string();
        let mut args = vec!["admin", "chat-account", "add", "--tenant", &tenant, "--waba-id", waba_id, "--name", name];
        args.extend_from_slice(extra);
        let id = self.admin_line(&args).await?;
        println!("xtask: chat account {id} (WABA {waba_id}, {} provider)", extra.get(1).copied().unwrap_or("sandbox"));
        Ok(())
    }

    /// Deletes the tenant's shops (products, listings, syncs and movements go with them) and
    /// the sandbox platform's copies.
    async fn clear_publishing(&self) -> Result<()> {
        let tenant = &self.setup.tenant;
        self.db.execute("DELETE FROM catalogues WHERE tenant_id = $1", &[tenant]).await?;
        self.db.execute("DELETE FROM sandbox_catalogue_items WHERE tenant_id = $1", &[tenant]).await?;
        self.db
            .batch_execute(
                "VACUUM ANALYZE catalogues, catalogue_brands, catalogue_categories, products, product_listings, \
                 stock_movements, catalogue_syncs, sandbox_catalogue_items",
            )
            .await?;
        Ok(())
    }

    /// `PATCH /api/v3/catalogues/{shop}` `{"waba_id", "channels": ["chat"]}`: the shop connected
    /// and publishing to the account's catalogue; its id at the provider.
    async fn connect_shop(&self, shop: i64, waba_id: &str) -> Result<String> {
        let client = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(60)).build()?;
        let response = client
            .patch(format!("http://{}/api/v3/catalogues/{shop}", self.setup.addr))
            .header("authorization", format!("Bearer {}", self.setup.key))
            .json(&json!({ "waba_id": waba_id, "channels": ["chat"] }))
            .send()
            .await?;
        let status = response.status();
        let body: Value = serde_json::from_slice(&response.bytes().await?)?;
        let data = &body["data"];
        let catalogue = data["meta_catalogue_id"].as_str();
        if status != reqwest::StatusCode::OK
            || data["is_connected_to_waba"] != json!(true)
            || data["channels"] != json!(["chat"])
        {
            return Err(format!("connecting shop {shop} to {waba_id}: {status} {body}").into());
        }
        Ok(catalogue.ok_or_else(|| format!("no data.meta_catalogue_id in {body}"))?.to_owned())
    }

    /// Sends one batch and waits for its run to complete; its time from the request.
    async fn publish_batch(&self, shop: i64, body: Vec<u8>, count: u64, creates: bool) -> Result<Duration> {
        let started = Instant::now();
        let sync = self.api.product_batch(shop, body).await?;
        loop {
            tokio::time::sleep(POLL).await;
            let report = self.api.sync_report(shop, sync).await?;
            match report.get("status").and_then(Value::as_str) {
                Some("completed") => {
                    let elapsed = started.elapsed();
                    check_report(&report, count, creates)?;
                    return Ok(elapsed);
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

    /// Workload 17 on both sides (see the module's documentation).
    pub(super) async fn chat_publish(&self, workload: &'static Workload) -> Result<(Outcome, Note)> {
        let (runs, count) = (self.setup.batch_runs, data::BATCH_PRODUCTS);
        let graph = Graph::start().await?;
        let base_url = graph.base_url();
        let cloud = [
            "--provider",
            "cloud",
            "--base-url",
            &base_url,
            "--api-version",
            graph::VERSION,
            "--access-token",
            graph::ACCESS_TOKEN,
        ];
        self.publishing_account(PUBLISH_WABA, "Bench publish", &cloud).await?;
        self.clear_publishing().await?;
        self.prepare(workload, "both sides").await?;
        let gateway = Gateway::start(self.setup, workload.limiter(), self.api).await?;
        let name = |side: &str| format!("bench: {}. {} ({side})", workload.number, workload.name);
        let api_shop = self.api.create_shop(&name("API"), "external").await?;
        let catalogue = self.connect_shop(api_shop, PUBLISH_WABA).await?;
        if catalogue != graph::CATALOGUE_ID {
            return Err(format!("shop {api_shop} was connected to catalogue {catalogue:?}, not the fake's").into());
        }
        let raw_shop = self.api.create_shop(&name("raw SQL"), "external").await?;
        println!(
            "xtask: shop {api_shop} publishes to catalogue {catalogue} of the fake Graph API at {base_url}; raw side shop \
             {raw_shop}"
        );
        let bodies = [batch_body(count, 0)?, batch_body(count, 1)?];

        let label = format!("{}. {} · API", workload.number, workload.name);
        let before = self.meter.read(gateway.pid);
        let at_start = graph.counts();
        let mut api_times = Vec::with_capacity(runs);
        for run in 0..runs {
            let posted = graph.counts();
            let time = self.publish_batch(api_shop, bodies[run % 2].clone(), count, run == 0).await;
            let time = time.map_err(|e| format!("{label}, batch {}: {e}", run + 1))?;
            let now = graph.counts();
            let rss = sys::rss_mb(gateway.pid).map_or_else(|_| "?".to_owned(), |mb| format!("{mb:.1} MB"));
            println!(
                "xtask: {label}: batch {} completed with {count} synced to chat after {:.2} s ({} items in {} items_batch \
                 POSTs); gateway RSS {rss}",
                run + 1,
                time.as_secs_f64(),
                now.items - posted.items,
                now.posts - posted.posts,
            );
            if now.items - posted.items != count {
                return Err(format!(
                    "{label}, batch {}: the fake received {} items",
                    run + 1,
                    now.items - posted.items
                )
                .into());
            }
            api_times.push(time);
        }
        let api_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        let rss_mb = sys::peak_rss_mb(gateway.pid).ok();
        let api_graph = graph.counts();
        let api_total: f64 = api_times.iter().map(Duration::as_secs_f64).sum();
        let api = Measured::of(api_times.clone(), api_total, count * runs as u64);
        super::print_run(&label, &api, &api_cpu);

        let label = format!("{}. {} · raw SQL", workload.number, workload.name);
        let side = RawSide::open(&self.setup.database_url, self.setup.tenant).await?;
        let items_url = graph.items_batch_url();
        let before = self.meter.read(gateway.pid);
        let mut raw_times = Vec::with_capacity(runs);
        let mut body_bytes = 0;
        for run in 0..runs {
            let rows = BatchRows::new(count, run as u64 % 2, INVENTORY);
            let started = Instant::now();
            let done = side.publish(self.key_hash, raw_shop, &rows, &items_url).await?;
            raw_times.push(started.elapsed());
            let (created, updated) = if run == 0 { (count, 0) } else { (0, count) };
            if (done.created, done.updated, done.listed, done.synced) != (created, updated, count, count) {
                return Err(format!(
                    "{label}, batch {}: {} created, {} updated, {} listed, {} synced",
                    run + 1,
                    done.created,
                    done.updated,
                    done.listed,
                    done.synced
                )
                .into());
            }
            body_bytes = done.body_bytes;
        }
        let raw_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        drop(side);
        let raw_total: f64 = raw_times.iter().map(Duration::as_secs_f64).sum();
        let raw = Measured::of(raw_times.clone(), raw_total, count * runs as u64);
        super::print_run(&label, &raw, &raw_cpu);
        gateway.stop().await?;
        let end = graph.counts();
        if end.refused > 0 || end.items - api_graph.items != count * runs as u64 {
            return Err(
                format!("{label}: the fake Graph API counted {end:?} (after the API side {api_graph:?})").into()
            );
        }

        let seconds = |times: &[Duration]| times.iter().map(Duration::as_secs_f64).collect::<Vec<_>>();
        let list = |times: &[Duration]| seconds(times).iter().map(|s| format!("{s:.2}")).collect::<Vec<_>>().join(", ");
        let (api_posts, raw_posts) = (api_graph.posts - at_start.posts, end.posts - api_graph.posts);
        let paragraph = format!(
            "is {runs} batches of {} products per side, one after another, into shops of a `cloud` chat account whose \
             Graph API is a fake in the bench's process (127.0.0.1): its rates rows per second and its p50 and p99 batch \
             times. The API side from `POST .../products/batch` until `GET .../syncs/{{sync}}` said `completed` with \
             `platforms.chat.synced` {} ({} s; the first creates the products, the others change every price; the \
             fake received {} items in {api_posts} `items_batch` POSTs), the raw side the same rows into another shop \
             in one transaction with their `pending` chat listings, then the claim, the products read, one POST of \
             the same `items_batch` body ({} bytes) to the same fake and the listings `synced` ({} s; {} items in \
             {raw_posts} POSTs).",
            thousands(count),
            thousands(count),
            list(&api_times),
            thousands(api_graph.items - at_start.items),
            thousands(body_bytes as u64),
            list(&raw_times),
            thousands(end.items - api_graph.items),
        );
        let facts = json!({
            "products": count,
            "api_seconds": seconds(&api_times),
            "raw_seconds": seconds(&raw_times),
            "items_batch_body_bytes": body_bytes,
            "graph": {
                "api_items": api_graph.items - at_start.items, "api_posts": api_posts,
                "raw_items": end.items - api_graph.items, "raw_posts": raw_posts,
            },
        });
        let note =
            Note { number: workload.number, name: workload.name, key: "publish", facts, paragraph, checks: Vec::new() };
        Ok((Outcome { workload, api, raw, rss_mb, api_cpu, raw_cpu, facts: None, open: None }, note))
    }

    /// Workload 18 on both sides (see the module's documentation).
    pub(super) async fn drift_check(&self, workload: &'static Workload) -> Result<(Outcome, Note)> {
        let listings = self.setup.drift_listings;
        let tenant = self.setup.tenant;
        self.publishing_account(DRIFT_WABA, "Bench drift", &["--provider", "sandbox"]).await?;
        self.clear_publishing().await?;
        let gateway = Gateway::start(self.setup, workload.limiter(), self.api).await?;
        let shop = self.api.create_shop(&format!("bench: {}. {}", workload.number, workload.name), "external").await?;
        let catalogue = self.connect_shop(shop, DRIFT_WABA).await?;
        gateway.stop().await?;

        let started = Instant::now();
        let rows = BatchRows::new(listings, 0, INVENTORY);
        self.load_drift_shop(shop, &catalogue, &rows, listings).await?;
        let drifted: Vec<String> = (0..listings).filter(|&i| drifts(i)).map(data::product_sku).collect();
        println!(
            "xtask: shop {shop} (sandbox catalogue {catalogue}): {} products with synced chat listings and platform copies, \
             {} of them priced differently on the platform, written in {:.1} s",
            thousands(listings),
            drifted.len(),
            started.elapsed().as_secs_f64()
        );

        let drift_again = async || -> Result<()> {
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
                [&tenant, &catalogue, &drifted, &DRIFT_PRICE_MINOR];
            self.db.execute(DRIFT_COPIES, &params).await?;
            self.db.batch_execute("VACUUM ANALYZE products, product_listings, sandbox_catalogue_items, events").await?;
            Ok(())
        };
        let api_label = format!("{}. {} · API (gateway admin commerce check-drift)", workload.number, workload.name);
        let raw_label = format!("{}. {} · raw SQL", workload.number, workload.name);
        let (tenant_arg, shop_arg) = (tenant.to_string(), shop.to_string());
        let args = ["admin", "commerce", "check-drift", "--tenant", &tenant_arg, "--catalogue", &shop_arg, "--json"];
        let side = RawSide::open(&self.setup.database_url, tenant).await?;
        let want =
            raw::Checked { checked: listings, drifted: drifted.len() as u64, missing: 0, synced: drifted.len() as u64 };
        let (mut api_times, mut raw_times) = (Vec::new(), Vec::new());
        let (mut api_shares, mut raw_shares) = (Vec::new(), Vec::new());
        let (mut peak_rss_mb, mut reports) = (None::<f64>, Value::Null);
        let mut events = 0;
        for round in 1..=DRIFT_ROUNDS {
            if round > 1 {
                drift_again().await?;
            }
            self.prepare(workload, "API").await?;
            let cli = self.timed_cli(&args).await?;
            reports =
                serde_json::from_str(&cli.stdout).map_err(|e| format!("check-drift printed {:?}: {e}", cli.stdout))?;
            check_drift_report(&reports, shop, listings)?;
            println!("xtask: {api_label}, round {round}: {:.2} s", cli.elapsed.as_secs_f64());
            events += drifted.len();
            self.after_check(&api_label, shop, &catalogue, events).await?;
            api_times.push(cli.elapsed);
            api_shares.push((cli.cpu, cli.elapsed));
            peak_rss_mb = cli.peak_rss_mb.map(|mb| peak_rss_mb.map_or(mb, |p| p.max(mb))).or(peak_rss_mb);

            drift_again().await?;
            self.prepare(workload, "raw SQL").await?;
            let before = self.meter.read(0);
            let started = Instant::now();
            let checked = side.check_drift(shop, &catalogue).await?;
            let elapsed = started.elapsed();
            raw_shares.push((self.meter.share(&before, &self.meter.read(0)), elapsed));
            if checked != want {
                return Err(format!("{raw_label}, round {round}: {checked:?}, not {want:?}").into());
            }
            println!("xtask: {raw_label}, round {round}: {:.2} s", elapsed.as_secs_f64());
            events += drifted.len();
            self.after_check(&raw_label, shop, &catalogue, events).await?;
            raw_times.push(elapsed);
        }
        drop(side);
        let measured = |times: &[Duration]| {
            let total = times.iter().map(Duration::as_secs_f64).sum();
            Measured::of(times.to_vec(), total, listings * times.len() as u64)
        };
        let (api, raw) = (measured(&api_times), measured(&raw_times));
        let (api_cpu, raw_cpu) = (mean_share(&api_shares), mean_share(&raw_shares));
        super::print_run(&api_label, &api, &api_cpu);
        super::print_run(&raw_label, &raw, &raw_cpu);

        let seconds = |times: &[Duration]| times.iter().map(Duration::as_secs_f64).collect::<Vec<_>>();
        let list = |times: &[Duration]| seconds(times).iter().map(|s| format!("{s:.2}")).collect::<Vec<_>>().join(", ");
        let slowest = api_times.iter().max().map_or(0.0, Duration::as_secs_f64);
        let limit = workload.max_seconds.unwrap_or(DRIFT_LIMIT_S);
        let checks = vec![Verdict::below(format!("every check < {limit} s"), slowest, " s", limit)];
        let paragraph = format!(
            "is {DRIFT_ROUNDS} drift checks per side, the sides taking turns (API, raw, API, ...), over {} `synced` chat \
             listings of a shop connected to a `sandbox` chat account, whose platform copies (`sandbox_catalogue_items`) \
             equal the shop's products but for {} prices (every {DRIFT_EVERY}th product's, {DRIFT_PRICE_MINOR} more; \
             drifted again by SQL before each check): its rates listings checked per second, its p50 and p99 the \
             median and slowest check. The API side `gateway admin commerce check-drift --tenant T --catalogue C --json` \
             from its spawn to its exit ({} s; each reported every listing checked and the {} drifted pushed back, \
             published to the sandbox platform before it exited; its CPU and peak RSS are the CLI process's), the raw \
             side the same reads in chunks of 1,000 and the same writes for the drifted ({} s).",
            thousands(listings),
            drifted.len(),
            list(&api_times),
            drifted.len(),
            list(&raw_times),
        );
        let facts = json!({
            "listings": listings,
            "drifted": drifted.len(),
            "api_seconds": seconds(&api_times),
            "raw_seconds": seconds(&raw_times),
            "check_drift_report": reports,
            "cli_peak_rss_mb": peak_rss_mb,
            "limit_s": limit,
        });
        let note = Note { number: workload.number, name: workload.name, key: "drift", facts, paragraph, checks };
        let outcome = Outcome { workload, api, raw, rss_mb: peak_rss_mb, api_cpu, raw_cpu, facts: None, open: None };
        Ok((outcome, note))
    }

    /// 18's shop filled by SQL: brands, categories, products, their listings and platform copies.
    async fn load_drift_shop(&self, shop: i64, catalogue: &str, rows: &BatchRows, listings: u64) -> Result<()> {
        let tenant = self.setup.tenant;
        let client = super::sql::connect(&self.setup.database_url).await?;
        let products = rows.insert(&client, tenant, shop).await?;
        let listed = client.execute(LOAD_LISTINGS, &[&tenant, &shop]).await?;
        let copied = client.execute(LOAD_COPIES, &[&tenant, &shop, &catalogue]).await?;
        let drifted: Vec<String> = (0..listings).filter(|&i| drifts(i)).map(data::product_sku).collect();
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
            [&tenant, &catalogue, &drifted, &DRIFT_PRICE_MINOR];
        let changed = client.execute(DRIFT_COPIES, &params).await?;
        if (products, listed, copied, changed) != (listings, listings, listings, drifted.len() as u64) {
            return Err(format!(
                "18's shop: {products} products, {listed} listings, {copied} copies, {changed} changed"
            )
            .into());
        }
        client
            .batch_execute(
                "VACUUM ANALYZE catalogue_brands, catalogue_categories, products, product_listings, sandbox_catalogue_items",
            )
            .await?;
        Ok(())
    }

    /// After a check: every listing `synced`, every copy at the shop's price, and `events`
    /// `product.drifted` events for the shop so far; loud otherwise.
    async fn after_check(&self, label: &str, shop: i64, catalogue: &str, events: usize) -> Result<()> {
        let row = self.db.query_one(AFTER_CHECK, &[&self.setup.tenant, &shop, &catalogue]).await?;
        let (unsynced, differing, announced): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
        println!(
            "xtask: {label}: {unsynced} listings not synced, {differing} copies priced differently, {announced} product.drifted events"
        );
        if unsynced != 0 || differing != 0 || announced != i64::try_from(events)? {
            return Err(format!("{label}: the check left {unsynced} listings not synced, {differing} copies differing and {announced} events ({events} wanted)").into());
        }
        Ok(())
    }

    /// Runs `gateway <args>` timed from the spawn to its exit, with its stdout, its CPU (the
    /// reaped child's time, and that of the backends of its connections, which end with it)
    /// and its peak RSS (VmHWM, read while it runs).
    async fn timed_cli(&self, args: &[&str]) -> Result<CliRun> {
        let postmaster = postmaster_pid(&self.setup.cluster_dir)?;
        let mut cmd = super::gateway_command(&self.setup.gateway, &self.setup.database_url, &self.setup.root, args);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        let before = self.meter.read(0);
        let (own_before, ended_before) = (reaped_ticks(std::process::id()), reaped_ticks(postmaster));
        let metered = Instant::now();
        let started = Instant::now();
        let child = cmd.spawn().map_err(|e| format!("cannot start {}: {e}", self.setup.gateway.display()))?;
        let pid = child.id();
        let output = child.wait_with_output();
        tokio::pin!(output);
        let mut peak: Option<f64> = None;
        let mut tick = tokio::time::interval(RSS_POLL);
        let output = loop {
            tokio::select! {
                output = &mut output => break output?,
                _ = tick.tick() => {
                    if let Some(mb) = pid.and_then(|pid| sys::peak_rss_mb(pid).ok()) {
                        peak = Some(peak.map_or(mb, |p: f64| p.max(mb)));
                    }
                }
            }
        };
        let elapsed = started.elapsed();
        if !output.status.success() {
            return Err(format!(
                "`gateway {}` failed ({}): {}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )
            .into());
        }
        tokio::time::sleep(REAP).await;
        let share = self.meter.share(&before, &self.meter.read(0));
        // shares of the metered window, the wait for the reaping included
        let window = metered.elapsed().as_secs_f64().max(1e-9);
        let per_second = ticks_per_second();
        let pct = |ticks: u64| ticks as f64 / per_second / window * 100.0;
        let cli = pct(reaped_ticks(std::process::id()).saturating_sub(own_before));
        let ended = pct(reaped_ticks(postmaster).saturating_sub(ended_before));
        // the CLI, its backends and this process work while it runs; others all along
        let during = window / elapsed.as_secs_f64().max(1e-9);
        let cpu = CpuShare {
            gateway_pct: cli * during,
            postgres_pct: (share.postgres_pct + ended) * during,
            load_generator_pct: share.load_generator_pct * during,
            other_pct: (share.other_pct - cli - ended).max(0.0),
        };
        Ok(CliRun {
            elapsed,
            stdout: String::from_utf8_lossy(&output.stdout).trim().to_owned(),
            cpu,
            peak_rss_mb: peak,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_product_in_a_hundred_drifts() {
        assert_eq!((0..DRIFT_LISTINGS).filter(|&i| drifts(i)).count(), 500);
        assert_eq!((0..QUICK_DRIFT_LISTINGS).filter(|&i| drifts(i)).count(), 50);
        assert!(drifts(50) && drifts(150) && !drifts(0) && !drifts(100));
    }

    #[test]
    fn a_publishing_report_must_sync_every_row_to_chat() {
        let good = json!({ "received": 5, "created": 5, "updated": 0, "rejected": 0,
                           "platforms": { "chat": { "synced": 5, "blocked": 0 } } });
        assert!(check_report(&good, 5, true).is_ok());
        assert!(check_report(&good, 5, false).is_err());
        let unpublished = json!({ "received": 5, "created": 5, "updated": 0, "rejected": 0, "platforms": {} });
        assert!(check_report(&unpublished, 5, true).is_err());
        let blocked = json!({ "received": 5, "created": 5, "updated": 0, "rejected": 0,
                              "platforms": { "chat": { "synced": 4, "blocked": 1 } } });
        assert!(check_report(&blocked, 5, true).is_err());
    }

    #[test]
    fn the_drift_report_must_push_back_what_drifted() {
        let report =
            json!([{ "catalogue_id": 9, "checked": 5000, "drifted": 50, "pushed": 50, "pulled": 0, "missing": 0 }]);
        assert!(check_drift_report(&report, 9, 5_000).is_ok());
        assert!(check_drift_report(&report, 9, 50_000).is_err());
        assert!(check_drift_report(&report, 8, 5_000).is_err());
    }

    #[test]
    fn notes_reach_the_markdown_and_the_json_report() {
        let note = Note {
            number: 18,
            name: "drift check",
            key: "drift",
            facts: json!({ "listings": 10 }),
            paragraph: "is a check.".into(),
            checks: vec![Verdict::below("check < 30 s".into(), 31.0, " s", 30.0)],
        };
        let text = markdown(std::slice::from_ref(&note));
        assert!(text.contains("\n18. is a check.\n"), "{text}");
        assert!(text.contains("- 18. drift check: check < 30 s: **missed** (31.00 s, 3% off)"), "{text}");
        let mut report = json!({ "workloads": [
            { "number": 17, "targets": [] },
            { "number": 18, "targets": [{ "target": "API/raw ≥ 0.5" }] },
        ]});
        annotate(&mut report, &[note]);
        assert_eq!(report["workloads"][1]["drift"]["listings"], 10);
        assert_eq!(report["workloads"][1]["targets"][1]["met"], false);
        assert!(report["workloads"][0].get("drift").is_none());
    }

    #[test]
    fn cpu_shares_of_several_runs_are_weighed_by_time() {
        let share =
            |pct: f64| CpuShare { gateway_pct: pct, postgres_pct: 2.0 * pct, load_generator_pct: 0.0, other_pct: 0.0 };
        let mean = mean_share(&[(share(10.0), Duration::from_secs(1)), (share(40.0), Duration::from_secs(3))]);
        assert!((mean.gateway_pct - 32.5).abs() < 1e-9 && (mean.postgres_pct - 65.0).abs() < 1e-9);
        assert_eq!(mean_share(&[]).gateway_pct, 0.0);
    }

    #[test]
    fn the_reaped_time_of_this_process_reads() {
        // no child reaped yet in the test binary, or some: either way a number
        let _ = reaped_ticks(std::process::id());
        assert_eq!(reaped_ticks(u32::MAX), 0);
    }
}
