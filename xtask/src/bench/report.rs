//! The results: targets checked, a Markdown table for stdout (and docs/benchmarks.md), and the
//! same numbers as JSON in target/bench/latest.json.

use std::fmt::Write;

use serde::Serialize;

use super::Workload;
use super::commerce::{BatchFacts, OrderFacts};
use super::data_tables::DataFacts;
use super::load::Measured;
use super::sys::{CpuShare, Machine};

/// The concurrency the p99 target is set for.
pub const CONNECTIONS: usize = 32;
pub const P99_LIMIT_MS: f64 = 20.0;
pub const RSS_LIMIT_MB: f64 = 150.0;
/// p99 wanted at a fixed rate of half the raw side's (open loop), reads and writes.
pub const OPEN_READ_P99_MS: f64 = 10.0;
pub const OPEN_WRITE_P99_MS: f64 = 20.0;

/// One workload's two runs.
pub struct Outcome {
    pub workload: &'static Workload,
    pub api: Measured,
    pub raw: Measured,
    /// VmHWM of the workload's own gateway after the API run; None when /proc could not tell.
    pub rss_mb: Option<f64>,
    pub api_cpu: CpuShare,
    pub raw_cpu: CpuShare,
    /// What the workload checked or counted beside its rates; None for the plain ones.
    pub facts: Option<Facts>,
    /// The API side again at a fixed rate, for the workloads with a latency target there.
    pub open: Option<OpenRun>,
}

/// An open-loop run of the API side (see [`super::load::drive_open`]).
pub struct OpenRun {
    /// Requests started per second: half of the raw side's rate in the same run.
    pub offered: f64,
    pub measured: Measured,
}

/// Latency at a fixed rate, against the workload's target for it.
#[derive(Serialize)]
pub struct OpenLoopResult {
    pub offered_per_second: f64,
    pub ops: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub target: Check,
}

/// A workload's own facts, beside its rates (in the JSON report, a member named by the kind).
#[derive(Serialize, Clone)]
#[serde(rename_all = "snake_case")]
pub enum Facts {
    /// Rates are messages per second, p50 and p99 the campaign's whole time.
    Campaign(CampaignFacts),
    /// Rates are deliveries (POSTs) per second, p50 and p99 the whole time.
    Webhooks(WebhookFacts),
    /// Rates are rows per second, p50 and p99 the batch times.
    Batch(BatchFacts),
    /// The stock checked after each side.
    Orders(OrderFacts),
    /// The table read or written, and what was checked.
    Data(DataFacts),
    /// Rates are calls per second dispatched (placed with the provider), p50 and p99 the
    /// campaign's whole time.
    CallCampaign(CallCampaignFacts),
}

fn campaign(facts: &Option<Facts>) -> Option<&CampaignFacts> {
    if let Some(Facts::Campaign(c)) = facts { Some(c) } else { None }
}

fn call_campaign(facts: &Option<Facts>) -> Option<&CallCampaignFacts> {
    if let Some(Facts::CallCampaign(c)) = facts { Some(c) } else { None }
}

fn webhooks(facts: &Option<Facts>) -> Option<&WebhookFacts> {
    if let Some(Facts::Webhooks(h)) = facts { Some(h) } else { None }
}

fn batch(facts: &Option<Facts>) -> Option<&BatchFacts> {
    if let Some(Facts::Batch(b)) = facts { Some(b) } else { None }
}

/// One campaign on each side: how many contacts and how long each side took.
#[derive(Serialize, Clone)]
pub struct CampaignFacts {
    pub contacts: u64,
    /// From `POST /sms/campaign` until every message was `sent` or `delivered`.
    pub api_seconds: f64,
    /// From the request until every message was written (queued).
    pub written_after_s: Option<f64>,
    /// The campaign's status once every message was sent (`completed` is what the service should say).
    pub final_status: String,
    /// The raw side's transaction, authentication included.
    pub raw_seconds: f64,
}

/// One call campaign on each side (workload 24): how many callees and how long each side took.
#[derive(Serialize, Clone)]
pub struct CallCampaignFacts {
    pub callees: u64,
    pub calls_per_minute: i32,
    /// From `POST /call-campaigns` until every callee's call had the provider's id.
    pub api_seconds: f64,
    /// From the request until every callee had a call row.
    pub written_after_s: Option<f64>,
    /// Dispatch ticks the bench made due at once (the skipped minutes).
    pub ticks_moved: u64,
    /// The campaign's status once every call was placed (`running`: calls are still live).
    pub final_status: String,
    /// The raw side's transaction, authentication included.
    pub raw_seconds: f64,
    /// The raw side's `voice.place_calls` jobs.
    pub raw_place_jobs: u64,
}

/// The webhook workload: N events delivered on one side, N signed POSTs on the other.
#[derive(Serialize, Clone)]
pub struct WebhookFacts {
    /// Events written, so deliveries (one receiver), and POSTs of the raw side.
    pub deliveries: u64,
    /// Deliveries in flight in the gateway (and to the receiver); raw tasks.
    pub concurrency: usize,
    /// One raw POST's body, as big as a delivery's.
    pub body_bytes: usize,
    /// The `INSERT` of the events, their deliveries written by the fan-out trigger.
    pub insert_seconds: f64,
    /// From the `INSERT` until the receiver had counted every delivery.
    pub api_seconds: f64,
    /// From the `INSERT` until every delivery was recorded `delivered`.
    pub recorded_after_s: f64,
    /// From the first raw POST to the last answer.
    pub raw_seconds: f64,
    /// Statements that recorded the attempts (one per batch of attempts ended together).
    pub record_statements: i64,
    /// Transactions committed on the database from the `INSERT` until the gateway exited:
    /// the claims and records, and whatever else the gateway did meanwhile.
    pub transactions: i64,
}

#[derive(Serialize)]
pub struct Report {
    pub date: String,
    pub machine: Machine,
    pub postgres: Postgres,
    pub gateway: Gateway,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub connections: usize,
    /// None when no workload of the run read the contacts (`--only 8`).
    pub load: Option<Load>,
    /// Leads written by SQL before each side of the lead upsert workload; None without it.
    pub preloaded_leads: Option<u64>,
    pub workloads: Vec<WorkloadResult>,
}

#[derive(Serialize)]
pub struct Postgres {
    pub version: String,
    /// The same server, with these settings, serves both sides.
    pub settings: Vec<String>,
}

#[derive(Serialize)]
pub struct Gateway {
    pub http_workers: String,
    pub db_pool_size: String,
    pub rate_limit_per_minute: u64,
    pub worker_concurrency: String,
    pub sms_send_chunk: String,
    pub sms_send_concurrency: String,
    pub sms_inline_max: String,
    pub campaign_batch_size: String,
    pub sandbox_delivery_delay_ms: String,
    pub sms_channel_throughput: u32,
    /// `off` when the run measured the gateway without row-level security.
    pub row_security: String,
}

#[derive(Serialize)]
pub struct Load {
    pub contacts: u64,
    pub seconds: f64,
    pub contacts_per_second: f64,
    /// Batch requests at once.
    pub in_flight: usize,
    pub cpu: CpuShare,
}

#[derive(Serialize)]
pub struct WorkloadResult {
    pub number: u8,
    pub name: String,
    pub connections: usize,
    pub raw_sql: &'static str,
    pub api: Side,
    pub raw: Side,
    pub api_raw_ratio: f64,
    pub gateway_peak_rss_mb: Option<f64>,
    pub cpu_api_run: CpuShare,
    pub cpu_raw_run: CpuShare,
    #[serde(flatten)]
    pub facts: Option<Facts>,
    pub targets: Vec<Check>,
    /// Latency at half the raw side's rate; None for the workloads not measured so.
    pub open_loop: Option<OpenLoopResult>,
}

#[derive(Serialize)]
pub struct Side {
    pub ops: usize,
    pub per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl From<&Measured> for Side {
    fn from(m: &Measured) -> Self {
        Self { ops: m.ops(), per_second: m.rate(), p50_ms: m.percentile_ms(50.0), p99_ms: m.percentile_ms(99.0) }
    }
}

/// One target and whether it was met; `off_by_pct` says how far it was missed (0 when met).
#[derive(Serialize)]
pub struct Check {
    pub target: String,
    pub value: f64,
    #[serde(skip)]
    unit: &'static str,
    pub met: bool,
    pub off_by_pct: f64,
}

impl Check {
    fn at_least(target: String, value: f64, unit: &'static str, min: f64) -> Self {
        Self { target, value, unit, met: value >= min, off_by_pct: ((min - value) / min * 100.0).max(0.0) }
    }

    fn below(target: String, value: f64, unit: &'static str, max: f64) -> Self {
        Self { target, value, unit, met: value < max, off_by_pct: ((value - max) / max * 100.0).max(0.0) }
    }

    fn describe(&self) -> String {
        let digits = if self.unit.is_empty() { 2 } else { 1 };
        let value = format!("{:.digits$}{}", self.value, self.unit);
        if self.met {
            format!("{}: met ({value})", self.target)
        } else {
            format!("{}: **missed** ({value}, {:.0}% off)", self.target, self.off_by_pct)
        }
    }
}

impl WorkloadResult {
    pub fn new(outcome: &Outcome) -> Self {
        let w = outcome.workload;
        let (api, raw) = (Side::from(&outcome.api), Side::from(&outcome.raw));
        let ratio = if raw.per_second > 0.0 { api.per_second / raw.per_second } else { 0.0 };
        let mut targets = Vec::new();
        if let Some(min) = w.min_ratio {
            targets.push(Check::at_least(format!("API/raw ≥ {min}"), ratio, "", min));
        }
        if let Some(min) = w.min_rate {
            let unit = items(outcome);
            let target = format!("≥ {} {unit}/s", thousands(min as u64));
            targets.push(Check::at_least(target, api.per_second, "/s", min));
        }
        if let Some(max) = w.max_p99_ms {
            targets.push(Check::below(format!("p99 < {max} ms"), api.p99_ms, " ms", max));
        }
        if let (Some(per_100k), Some(campaign)) = (w.max_seconds, campaign(&outcome.facts)) {
            // The target is for 100,000 contacts; a smaller campaign (--quick) gets its share.
            let max = per_100k * campaign.contacts as f64 / 100_000.0;
            let target = if campaign.contacts == 100_000 {
                format!("all sent in < {per_100k} s")
            } else {
                format!("all sent in < {max:.1} s ({per_100k} s per 100,000)")
            };
            targets.push(Check::below(target, campaign.api_seconds, " s", max));
        }
        if let (Some(max), Some(batch)) = (w.max_seconds, batch(&outcome.facts)) {
            let target = format!("every batch of {} completed in < {max} s", thousands(batch.products));
            targets.push(Check::below(target, batch.slowest_api_s(), " s", max));
            let median = super::commerce::BATCH_MEDIAN_LIMIT_S;
            targets.push(Check::below(format!("median batch < {median} s"), batch.median_api_s(), " s", median));
        }
        if let Some(rss) = outcome.rss_mb {
            let max = w.max_rss_mb;
            targets.push(Check::below(format!("RSS < {max} MB"), rss, " MB", max));
        }
        let name = match &outcome.facts {
            Some(Facts::Campaign(c)) => format!("{} of {} contacts", w.name, thousands(c.contacts)),
            Some(Facts::Webhooks(h)) => format!("{} of {} events", w.name, thousands(h.deliveries)),
            Some(Facts::Batch(b)) => format!("{} of {} products", w.name, thousands(b.products)),
            Some(Facts::Orders(o)) => format!("{}, {} orders", w.name, thousands(o.orders)),
            Some(Facts::Data(d)) => d.name(w.name),
            Some(Facts::CallCampaign(c)) => {
                format!("{} of {} callees through the sandbox", w.name, thousands(c.callees))
            }
            None => w.name.to_owned(),
        };
        let open_loop = outcome.open.as_ref().zip(w.open_loop_p99_ms).map(|(run, max)| {
            let p99 = run.measured.percentile_ms(99.0);
            OpenLoopResult {
                offered_per_second: run.offered,
                ops: run.measured.ops(),
                p50_ms: run.measured.percentile_ms(50.0),
                p99_ms: p99,
                p999_ms: run.measured.percentile_ms(99.9),
                target: Check::below(format!("p99 < {max} ms at a fixed rate"), p99, " ms", max),
            }
        });
        Self {
            number: w.number,
            name,
            connections: w.connections,
            raw_sql: w.raw_sql,
            api,
            raw,
            api_raw_ratio: ratio,
            gateway_peak_rss_mb: outcome.rss_mb,
            cpu_api_run: outcome.api_cpu,
            cpu_raw_run: outcome.raw_cpu,
            facts: outcome.facts.clone(),
            targets,
            open_loop,
        }
    }

    /// Whether the workload is one operation per side, timed whole (no latencies to show).
    fn whole(&self) -> bool {
        matches!(self.facts, Some(Facts::Campaign(_) | Facts::Webhooks(_) | Facts::CallCampaign(_)))
    }

    fn label(&self) -> String {
        match &self.facts {
            Some(Facts::Campaign(_)) => format!("{}. {} (messages/s)", self.number, self.name),
            Some(Facts::Webhooks(_)) => format!("{}. {} (deliveries/s)", self.number, self.name),
            Some(Facts::CallCampaign(_)) => format!("{}. {} (calls/s dispatched)", self.number, self.name),
            Some(Facts::Batch(_)) => format!("{}. {} (rows/s; p50, p99: batch time)", self.number, self.name),
            _ if self.connections == CONNECTIONS => format!("{}. {}", self.number, self.name),
            _ => format!("{}. {} ({} connections)", self.number, self.name, self.connections),
        }
    }
}

/// 5 against 1 when both ran: the shared rate limiter costs little, its rate and p99 within a
/// fifth of the in-memory limiter's.
pub fn compare_shared_limiter(results: &mut [WorkloadResult]) {
    let memory = results.iter().find(|w| w.number == 1).map(|w| (w.api.per_second, w.api.p99_ms));
    if let (Some((rate, p99)), Some(shared)) = (memory, results.iter_mut().find(|w| w.number == 5)) {
        let ratio = if rate > 0.0 { shared.api.per_second / rate } else { 0.0 };
        shared.targets.push(Check::at_least("rate ≥ 0.8 × 1's".to_owned(), ratio, "", 0.8));
        let max = p99 * 1.2;
        let target = format!("p99 ≤ 1.2 × 1's ({max:.1} ms)");
        shared.targets.push(Check::below(target, shared.api.p99_ms, " ms", max));
    }
}

/// What a workload's rate counts.
fn items(outcome: &Outcome) -> &'static str {
    match outcome.facts {
        Some(Facts::Campaign(_)) => "messages",
        Some(Facts::Webhooks(_)) => "deliveries",
        Some(Facts::Batch(_)) => "rows",
        Some(Facts::CallCampaign(_)) => "calls",
        _ => "requests",
    }
}

/// 100000 as 100,000.
pub(super) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Lines of a Markdown table, columns padded so that it also reads well in a terminal.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).chain([header[c].chars().count()]).max().unwrap_or(0))
        .collect();
    let line = |cells: Vec<String>| {
        let cells: Vec<String> = cells
            .iter()
            .enumerate()
            .map(
                |(c, cell)| {
                    if c == 0 { format!("{cell:<w$}", w = widths[c]) } else { format!("{cell:>w$}", w = widths[c]) }
                },
            )
            .collect();
        format!("| {} |\n", cells.join(" | "))
    };
    // Dashes the width of the column; a colon on the right aligns numbers right.
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(c, w)| if c == 0 { "-".repeat(*w) } else { format!("{}:", "-".repeat(w - 1)) })
        .collect();
    let mut out = line(header.iter().map(|h| (*h).to_owned()).collect());
    out.push_str(&format!("| {} |\n", rule.join(" | ")));
    for row in rows {
        out.push_str(&line(row.clone()));
    }
    out
}

fn rate(per_second: f64) -> String {
    if per_second >= 100.0 { format!("{per_second:.0}") } else { format!("{per_second:.1}") }
}

impl Report {
    /// Each workload's API side beside the same workload of a run without row-level security
    /// (`SVC_ROW_SECURITY=off`, kept in `without`): what the policies and the per-checkout
    /// scope cost. Workloads only one of the runs measured are left out.
    pub fn row_security_cost(&self, without: &serde_json::Value) -> String {
        let mut out = String::new();
        let date = without["date"].as_str().unwrap_or("?");
        let _ = writeln!(out, "Row-level security: this run (on) against the run of {date} (off), API side");
        let _ = writeln!(out, "\n| # | Workload | rate on | rate off | on/off | p99 on (ms) | p99 off (ms) |");
        let _ = writeln!(out, "|---|---|---|---|---|---|---|");
        let earlier = without["workloads"].as_array().map(Vec::as_slice).unwrap_or_default();
        for w in &self.workloads {
            let Some(off) = earlier.iter().find(|o| o["name"].as_str() == Some(w.name.as_str())) else {
                continue;
            };
            let (rate, p99) = (off["api"]["per_second"].as_f64().unwrap_or(0.0), off["api"]["p99_ms"].as_f64());
            let ratio = if rate > 0.0 { w.api.per_second / rate } else { 0.0 };
            let _ = writeln!(
                out,
                "| {} | {} | {:.0} | {rate:.0} | {ratio:.2} | {:.1} | {} |",
                w.number,
                w.name,
                w.api.per_second,
                w.api.p99_ms,
                p99.map_or_else(|| "-".to_owned(), |p| format!("{p:.1}")),
            );
        }
        out
    }

    /// The whole report as Markdown: conditions, results, targets, CPU shares.
    pub fn markdown(&self) -> String {
        let (m, g) = (&self.machine, &self.gateway);
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = writeln!(out, "- Date: {}", self.date);
        let _ = writeln!(out, "- Machine: {} cores, {} MB, {}", m.cpus, m.memory_mb, m.cpu_model);
        let settings = self.postgres.settings.join(", ");
        let _ = writeln!(out, "- PostgreSQL {}, one server for both sides: {settings}", self.postgres.version);
        let _ = writeln!(
            out,
            "- Gateway (release build), started afresh for each workload: HTTP workers {}, database pool {}, \
             rate limit {}/min (in-memory limiter; the PostgreSQL one in 5)",
            g.http_workers, g.db_pool_size, g.rate_limit_per_minute
        );
        let _ = writeln!(
            out,
            "- Messaging: sandbox provider (receipts after {} ms), channel throughput {}/s, job workers {}, \
             send chunk {}, provider calls per job {}, inline send up to {} recipients, campaign batch {}",
            g.sandbox_delivery_delay_ms,
            g.sms_channel_throughput,
            g.worker_concurrency,
            g.sms_send_chunk,
            g.sms_send_concurrency,
            g.sms_inline_max,
            g.campaign_batch_size
        );
        let _ = writeln!(out, "- Row-level security: {} (SVC_ROW_SECURITY)", g.row_security);
        let _ = writeln!(
            out,
            "- Runs: {} s each after a {} s warm-up, {} connections unless noted, load generator on the same machine",
            self.duration_s, self.warmup_s, self.connections
        );
        if let Some(h) = self.workloads.iter().find_map(|w| webhooks(&w.facts)) {
            let _ = writeln!(
                out,
                "- Webhooks: gateway with SVC_WEBHOOKS_ALLOW_LOOPBACK=1, SVC_WEBHOOKS_CONCURRENCY={c}, \
                 SVC_WEBHOOKS_PER_RECEIVER={c}; one receiver in the load generator's process on 127.0.0.1 \
                 (hyper HTTP/1.1, kept-alive connections, every POST read, counted and answered 200 with an empty \
                 body, no signature checked); bodies of {} bytes",
                h.body_bytes,
                c = h.concurrency,
            );
        }
        match &self.load {
            Some(load) => {
                let _ = writeln!(
                    out,
                    "- Data: {} contacts in one group, loaded through the batch endpoint ({} requests at once) at \
                     {:.0} contacts/s (CPU: gateway {:.0}%, postgres {:.0}%); each write run writes into a fresh \
                     group, deleted before the next run",
                    load.contacts,
                    load.in_flight,
                    load.contacts_per_second,
                    load.cpu.gateway_pct,
                    load.cpu.postgres_pct,
                );
            }
            None => {
                let _ = writeln!(out, "- Data: no contacts loaded (no workload of this run reads them)");
            }
        }
        if let Some(leads) = self.preloaded_leads {
            let _ = writeln!(
                out,
                "- Leads: before each side of 9, the tenant's leads replaced by {} written by SQL (one phone \
                 identity each); even requests create a new person (`+255...`), odd ones find a preloaded one by \
                 its national form (`0...`) and change its company",
                thousands(leads)
            );
        }

        let header = ["workload", "API req/s", "p50 ms", "p99 ms", "raw SQL ops/s", "API/raw", "gateway peak RSS MB"];
        let rows: Vec<Vec<String>> = self
            .workloads
            .iter()
            .map(|w| {
                let (p50, p99) = if w.whole() {
                    ("-".to_owned(), "-".to_owned())
                } else {
                    (format!("{:.1}", w.api.p50_ms), format!("{:.1}", w.api.p99_ms))
                };
                vec![
                    w.label(),
                    rate(w.api.per_second),
                    p50,
                    p99,
                    rate(w.raw.per_second),
                    format!("{:.2}", w.api_raw_ratio),
                    w.gateway_peak_rss_mb.map_or_else(|| "?".to_owned(), |mb| format!("{mb:.1}")),
                ]
            })
            .collect();
        out.push('\n');
        out.push_str(&table(&header, &rows));

        for w in &self.workloads {
            if let Some(c) = campaign(&w.facts) {
                let written = c.written_after_s.map_or_else(|| "?".to_owned(), |s| format!("{s:.1} s"));
                let _ = writeln!(
                    out,
                    "\n{}. is one operation per side, its rates messages per second: the API side from \
                     `POST /sms/campaign` until all {} messages were sent through the sandbox ({:.1} s; all \
                     written after {written}; campaign {}), the raw side one transaction writing the same \
                     message and job rows ({:.2} s).",
                    w.number,
                    thousands(c.contacts),
                    c.api_seconds,
                    c.final_status,
                    c.raw_seconds
                );
            }
        }
        for w in &self.workloads {
            if let Some(c) = call_campaign(&w.facts) {
                let written = c.written_after_s.map_or_else(|| "?".to_owned(), |s| format!("{s:.1} s"));
                let _ = writeln!(
                    out,
                    "\n{}. is one operation per side, its rates calls per second dispatched: the API side from \
                     `POST /call-campaigns` ({} calls a minute) until all {} callees had a call placed with the \
                     sandbox provider ({:.1} s; all written after {written}; campaign {}), the minutes between \
                     dispatch ticks skipped ({} ticks made due at once by SQL), the raw side one transaction \
                     writing the same campaign, target, call and job rows ({:.2} s, {} placing jobs).",
                    w.number,
                    c.calls_per_minute,
                    thousands(c.callees),
                    c.api_seconds,
                    c.final_status,
                    c.ticks_moved,
                    c.raw_seconds,
                    c.raw_place_jobs
                );
            }
        }
        for w in &self.workloads {
            if let Some(h) = webhooks(&w.facts) {
                let _ = writeln!(
                    out,
                    "\n{}. is one operation per side, its rates deliveries (POSTs) per second: the API side from one \
                     `INSERT` of {} `message.sent` events (with their deliveries, written by the fan-out trigger, \
                     {:.2} s) until the receiver had all {} signed POSTs ({:.2} s; all recorded `delivered` after \
                     {:.2} s), the raw side the same number of signed POSTs from a plain reqwest loop, {} at a time, \
                     to the same receiver ({:.2} s).",
                    w.number,
                    thousands(h.deliveries),
                    h.insert_seconds,
                    thousands(h.deliveries),
                    h.api_seconds,
                    h.recorded_after_s,
                    h.concurrency,
                    h.raw_seconds
                );
            }
        }
        for w in &self.workloads {
            match &w.facts {
                Some(Facts::Batch(b)) => out.push_str(&b.paragraph(w.number)),
                Some(Facts::Orders(o)) => out.push_str(&o.paragraph(w.number, w.connections)),
                Some(Facts::Data(d)) => out.push_str(&d.paragraph(w.number, w.connections)),
                _ => {}
            }
        }
        out.push_str("\nTargets (issue 2, raised by issue 24): GET /me (1) API/raw ≥ 0.8; contact create (2) and ");
        let _ = writeln!(
            out,
            "batch (4) ≥ 0.7, search (3) ≥ 0.4 with p99 < 30 ms; p99 < {P99_LIMIT_MS} ms at {CONNECTIONS} \
             connections; gateway RSS < {RSS_LIMIT_MB} MB. SMS send (6): API/raw ≥ 0.6, p99 < 25 ms. Campaign \
             (7): 100,000 contacts all sent in < 10 s, gateway RSS < 200 MB. Webhooks (8): API/raw ≥ 0.8 (issue \
             24: 0.5 on the way), at least 8,000 deliveries/s. Lead upsert (9): API/raw ≥ 0.6, p99 < 30 ms. \
             Product batch (10): every 5,000-product batch completed in < 5 s, the median in < 0.25 s, API/raw \
             ≥ 0.6. Orders (11): API/raw ≥ 0.6, p99 < 30 ms. Data table pages (12, filtered and sorted, and \
             searched for a rare and a common term): API/raw ≥ 0.5, p99 < 50 ms; the rare term's search at \
             least 300 pages/s. Data record creates (13): API/raw ≥ 0.6. MCP (14, issue 16; its raw side is \
             the REST route): MCP/REST ≥ 0.7, p99 < 30 ms. Chat (issue 17): a text send (15) as the SMS send, \
             API/raw ≥ 0.6, p99 < 25 ms; inbound webhook deliveries (16) API/raw ≥ 0.5.\n"
        );
        for w in &self.workloads {
            let checks: Vec<String> = w.targets.iter().map(Check::describe).collect();
            let checks = if checks.is_empty() { "no target".to_owned() } else { checks.join("; ") };
            let _ = writeln!(out, "- {}: {checks}", w.label());
        }

        let open: Vec<Vec<String>> = self
            .workloads
            .iter()
            .filter_map(|w| {
                let o = w.open_loop.as_ref()?;
                let verdict = if o.target.met {
                    "met".to_owned()
                } else {
                    format!("**missed** ({:.0}% off)", o.target.off_by_pct)
                };
                Some(vec![
                    w.label(),
                    rate(o.offered_per_second),
                    format!("{:.1}", o.p50_ms),
                    format!("{:.1}", o.p99_ms),
                    format!("{:.1}", o.p999_ms),
                    o.target.target.replace(" at a fixed rate", ""),
                    verdict,
                ])
            })
            .collect();
        if !open.is_empty() {
            let _ = writeln!(
                out,
                "\nLatency at a fixed rate (open loop): requests started on a schedule at half the raw side's rate \
                 of the same run, whether or not earlier ones answered; each latency from its scheduled start. \
                 Targets: p99 < {OPEN_READ_P99_MS} ms for reads, < {OPEN_WRITE_P99_MS} ms for writes.\n"
            );
            let header = ["workload", "rate req/s", "p50 ms", "p99 ms", "p99.9 ms", "target", "result"];
            out.push_str(&table(&header, &open));
        }

        let cores = m.cpus * 100;
        let _ = writeln!(
            out,
            "\nCPU during each run, % of one core ({cores}% = every core busy; \"other\" is everything else on the \
             machine, which skews the run):\n"
        );
        let header = [
            "workload",
            "API run: gateway",
            "postgres",
            "load generator",
            "other",
            "raw run: postgres",
            "load generator",
            "other",
        ];
        let pct = |v: f64| format!("{v:.0}%");
        let rows: Vec<Vec<String>> = self
            .workloads
            .iter()
            .map(|w| {
                let (api, raw) = (&w.cpu_api_run, &w.cpu_raw_run);
                vec![
                    w.label(),
                    pct(api.gateway_pct),
                    pct(api.postgres_pct),
                    pct(api.load_generator_pct),
                    pct(api.other_pct),
                    pct(raw.postgres_pct),
                    pct(raw.load_generator_pct),
                    pct(raw.other_pct),
                ]
            })
            .collect();
        out.push_str(&table(&header, &rows));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_appear_in_the_json_report_under_their_kind() {
        #[derive(Serialize)]
        struct Row {
            number: u8,
            #[serde(flatten)]
            facts: Option<Facts>,
        }
        let campaign = CampaignFacts {
            contacts: 10,
            api_seconds: 1.5,
            written_after_s: None,
            final_status: "completed".into(),
            raw_seconds: 0.5,
        };
        let row = serde_json::to_value(Row { number: 7, facts: Some(Facts::Campaign(campaign)) }).expect("json");
        assert_eq!(row["campaign"]["contacts"], 10);
        assert_eq!(row["number"], 7);
        let plain = serde_json::to_value(Row { number: 1, facts: None }).expect("json");
        assert_eq!(plain, serde_json::json!({"number": 1}));
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(100_000), "100,000");
        assert_eq!(thousands(10_000), "10,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
