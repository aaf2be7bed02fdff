//! The data-table workloads (crate `data-tables`, routes under `/api/v3/data/...`), on tables
//! of their own defined with the admin CLI (`gateway admin data-table apply --json`), every
//! table with the same five columns: `name` (text), `phone` (phone), `segment` (select:
//! retail, wholesale), `score` (number, `indexed: true`) and `city` (text).
//!
//! 12, data table page: one table, `bench_customers`, filled with 1,000,000 records by SQL
//! (`INSERT ... SELECT FROM generate_series`, 100,000 a statement, then `VACUUM ANALYZE`);
//! then a gateway is started and the bench waits until the schema says the `score` index is
//! `ready` and `data_indexes` says the same of every index of the table (the search index
//! `$q` too), and analyzes again (statistics of the index expressions). Three rows in the
//! report, each with a fresh gateway, 32 tasks on each side for the usual time: a page of 50
//! filtered by `segment` and `score` and sorted by `score` descending, a page of 50
//! searched with `q=amina` (record `n` is named `Amina n` when `n` is a multiple of 1,000,
//! `Customer n` otherwise), and one searched with `q=oma` (three cities in ten). Before the clock starts each row's API page is checked against the
//! raw statement's (the same 50 ids in the same order, `has_more` alike) and the raw
//! statement's plan is printed (`EXPLAIN (ANALYZE, BUFFERS)`). The raw sides run
//! [`RAW_PAGE`], [`RAW_SEARCH`] and its common term with the table's id written in, after the authentication
//! lookup.
//!
//! 13, data record creates: two empty tables, one per side (their indexes ready first); the
//! API side creates records with `POST .../records` `{data}`, the raw side inserts the same
//! records into the other table with one single-row `INSERT` each (after the authentication
//! lookup). Afterwards the records of each table are counted, and the API side's `created`
//! history rows.

mod raw;

use std::fmt::Write;
use std::fs;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::time::Instant;
use uuid::Uuid;

use self::raw::{RawCreates, RawReads};
use super::load::drive;
use super::report::{self, Facts, Outcome, thousands};
use super::{Gateway, Run, Work, Workload};
use crate::Result;

/// Records of the page workload's table, and with `--quick`.
pub const RECORDS: u64 = 1_000_000;
pub const QUICK_RECORDS: u64 = 50_000;
/// The p99 wanted of a page of 50 (both rows of 12).
pub const PAGE_P99_LIMIT_MS: f64 = 50.0;
/// Records loaded by one statement.
const LOAD_CHUNK: u64 = 100_000;
/// Every 1,000th record is named `Amina n`: 1,000 of 1,000,000 match the search.
const SEARCH_EVERY: u64 = 1_000;
/// The page size asked for; the raw statements read one more, as a keyset page does to know
/// whether there is more.
const PAGE_SIZE: usize = 50;
/// Three of the ten contain `oma`: the common term of 12's third row matches 300,000 of 1,000,000.
const CITIES: [&str; 10] =
    ["Dar es Salaam", "Arusha", "Mwanza", "Dodoma", "Mbeya", "Morogoro", "Tanga", "Zanzibar", "Kigoma", "Musoma"];
/// How long the indexes may take to become ready (1,000,000 records: a trigram index).
const INDEX_WAIT: Duration = Duration::from_secs(30 * 60);
const INDEX_POLL: Duration = Duration::from_secs(2);

const PAGE_GROUP: &str = "bench_pages";
const PAGE_TABLE: &str = "bench_customers";
const CREATE_GROUP: &str = "bench_creates";
const CREATE_TABLES: [&str; 2] = ["bench_creates_api", "bench_creates_raw"];

/// What the report says each raw side runs.
pub const RAW_PAGE: &str = "authentication lookup; SELECT id, data, source, created_at, updated_at FROM data_records \
    WHERE table_id = '<table>' AND deleted_at IS NULL AND data->'segment' = '\"retail\"'::jsonb AND data->'score' > \
    '50'::jsonb AND data->'score' IS NOT NULL ORDER BY data->'score' DESC NULLS FIRST, id DESC LIMIT 51";
pub const RAW_SEARCH: &str = "authentication lookup; SELECT id, data, source, created_at, updated_at FROM data_records \
    WHERE table_id = '<table>' AND deleted_at IS NULL AND svc_record_text(data, '{name,phone,city}') ~~~ '%amina%' \
    ORDER BY created_at DESC, id DESC LIMIT 51 (the expression of the table's trigram index, the service's leakproof LIKE)";
pub const RAW_SEARCH_COMMON: &str = "as the row above, with '%oma%' (300,000 matches)";
pub const RAW_CREATE: &str = "authentication lookup; one statement: INSERT INTO data_records (id, tenant_id, table_id, \
    data, source, created_at, updated_at) VALUES (gen_random_uuid(), $1, '<table>', $2::text::jsonb, 'api', now(), now()) \
    and its `created` data_record_history row (the changes from jsonb_each of the data), as every create writes them";

/// The second row of 12: the same table, searched.
static SEARCH_ROW: Workload = Workload {
    number: 12,
    name: "data table page, q search",
    work: Work::DataPage,
    connections: report::CONNECTIONS,
    min_ratio: Some(0.5),
    // issue 24: at least 300 pages a second at 32 connections
    min_rate: Some(300.0),
    max_p99_ms: Some(PAGE_P99_LIMIT_MS),
    max_rss_mb: report::RSS_LIMIT_MB,
    max_seconds: None,
    open_loop_p99_ms: None,
    raw_sql: RAW_SEARCH,
};

/// The third row of 12: the same search with a term that matches three records in ten.
static COMMON_ROW: Workload = Workload {
    number: 12,
    name: "data table page, q search of a common term",
    work: Work::DataPage,
    connections: report::CONNECTIONS,
    min_ratio: Some(0.5),
    min_rate: None,
    max_p99_ms: Some(PAGE_P99_LIMIT_MS),
    max_rss_mb: report::RSS_LIMIT_MB,
    max_seconds: None,
    open_loop_p99_ms: None,
    raw_sql: RAW_SEARCH_COMMON,
};

/// One row of 12: the API's query string, and the raw statement's condition and order.
struct PageQuery {
    /// What the report says of the row.
    what: &'static str,
    api: &'static [(&'static str, &'static str)],
    filter: &'static str,
    order: &'static str,
}

const FILTERED: PageQuery = PageQuery {
    what: "The page filtered by segment and score and sorted by score",
    api: &[
        (
            "filter",
            r#"{"all":[{"column":"segment","op":"equals","value":"retail"},{"column":"score","op":"greater_than","value":50}]}"#,
        ),
        ("sort", "score"),
        ("dir", "desc"),
        ("limit", "50"),
    ],
    filter: "data->'segment' = '\"retail\"'::jsonb AND data->'score' > '50'::jsonb AND data->'score' IS NOT NULL",
    order: "data->'score' DESC NULLS FIRST, id DESC",
};

const SEARCHED: PageQuery = PageQuery {
    what: "The page searched with q=amina",
    api: &[("q", "amina"), ("limit", "50")],
    filter: "svc_record_text(data, '{name,phone,city}') ~~~ '%amina%'",
    order: "created_at DESC, id DESC",
};

const SEARCHED_COMMON: PageQuery = PageQuery {
    what: "The page searched with q=oma",
    api: &[("q", "oma"), ("limit", "50")],
    filter: "svc_record_text(data, '{name,phone,city}') ~~~ '%oma%'",
    order: "created_at DESC, id DESC",
};

impl PageQuery {
    /// The raw statement on `table`, reading `columns`.
    fn sql(&self, columns: &str, table: Uuid) -> String {
        format!(
            "SELECT {columns} FROM data_records WHERE table_id = '{table}' AND deleted_at IS NULL AND {} \
             ORDER BY {} LIMIT {}",
            self.filter,
            self.order,
            PAGE_SIZE + 1
        )
    }
}

/// The data-table workloads' own facts, per row of the report.
#[derive(Serialize, Clone)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DataFacts {
    /// A row of 12.
    Page {
        /// Which page.
        what: &'static str,
        /// Live records of the table.
        records: u64,
        /// Records matching the row's filter or search (counted by SQL).
        matching: i64,
        /// The load by SQL, and from the gateway's start until every index was ready (on the
        /// first row only).
        load_seconds: Option<f64>,
        index_seconds: Option<f64>,
        /// Whether the API's page held the raw statement's first 50 ids, in order, and said
        /// `has_more` when the raw statement read 51 rows.
        same_page: bool,
    },
    /// 13: records written on each side (warm-up included), and the API side's `created`
    /// history rows.
    Creates { api_records: i64, api_history: i64, raw_records: i64 },
}

impl DataFacts {
    /// The workload's name in the report.
    pub fn name(&self, name: &str) -> String {
        match self {
            Self::Page { records, .. } => format!("{name}, {} records", thousands(*records)),
            Self::Creates { .. } => name.to_owned(),
        }
    }

    /// What the report says under its table.
    pub fn paragraph(&self, number: u8, connections: usize) -> String {
        let count = |n: i64| thousands(u64::try_from(n).unwrap_or(0));
        match self {
            Self::Page { what, records, matching, load_seconds, index_seconds, same_page } => {
                let mut out = String::from("\n");
                // Writing to a String cannot fail.
                if let (Some(load), Some(index)) = (load_seconds, index_seconds) {
                    let _ = write!(
                        out,
                        "{number}. reads pages of 50 of one table of {} records written by SQL ({load:.1} s; its \
                         indexes ready {index:.1} s after the gateway started), {connections} requests at a time. ",
                        thousands(*records)
                    );
                }
                let page = if *same_page {
                    "the API's first page was the raw statement's"
                } else {
                    "THE API'S FIRST PAGE DIFFERED FROM THE RAW STATEMENT'S"
                };
                if load_seconds.is_none() {
                    let _ = write!(out, "{number}. ");
                }
                let matching = thousands(u64::try_from(*matching).unwrap_or(0));
                let _ = writeln!(out, "{what}: {matching} records match; {page}.");
                out
            }
            Self::Creates { api_records, api_history, raw_records } => format!(
                "\n{number}. creates records from {connections} tasks into an empty table per side: {} written \
                 through the API ({} `created` history rows), {} by the raw side (warm-ups included).\n",
                count(*api_records),
                count(*api_history),
                count(*raw_records)
            ),
        }
    }
}

/// What `gateway admin data-table apply --json` prints.
#[derive(Deserialize)]
struct Applied {
    group: Named,
    tables: Vec<Named>,
}

#[derive(Deserialize, Clone)]
struct Named {
    id: Uuid,
    slug: String,
}

/// A group of tables with the bench's columns, one per slug.
fn definition(group: &str, slugs: &[&str]) -> Value {
    let columns = json!([
        {"key": "name", "type": "text"},
        {"key": "phone", "type": "phone"},
        {"key": "segment", "type": "select", "config": {"options": ["retail", "wholesale"]}},
        {"key": "score", "type": "number", "indexed": true},
        {"key": "city", "type": "text"},
    ]);
    let tables: Vec<Value> =
        slugs.iter().map(|slug| json!({ "slug": slug, "name": format!("Bench {slug}"), "columns": columns })).collect();
    json!({ "group": { "slug": group, "name": format!("Bench {group}") }, "tables": tables })
}

/// The JSON the CLI printed: the whole output, or else its last line that is an object.
fn parse_applied(stdout: &str) -> Result<Applied> {
    if let Ok(applied) = serde_json::from_str(stdout.trim()) {
        return Ok(applied);
    }
    let line = stdout.lines().map(str::trim).rfind(|line| line.starts_with('{'));
    let line = line.ok_or_else(|| format!("no JSON object in what the CLI printed: {stdout:?}"))?;
    Ok(serde_json::from_str(line).map_err(|e| format!("{e} in {line:?}"))?)
}

/// Record `n`'s name: `Amina n` for every 1,000th, so that the search matches 1 in 1,000.
fn name(n: u64) -> String {
    if n.is_multiple_of(SEARCH_EVERY) { format!("Amina {n}") } else { format!("Customer {n}") }
}

/// Record `n`'s score in tenths, 0 to 1,000 (0.0 to 100.0), spread by a multiplicative hash.
fn score_tenths(n: u64) -> u64 {
    n * 7_919 % 1_001
}

/// Record `n` as the API side sends it and the raw side stores it: the phone in E.164 (a
/// Tanzanian mobile, as the service normalizes it), the score a JSON number without a
/// trailing `.0` (as the service normalizes it). The SQL of [`load_sql`] writes the same.
fn record(n: u64) -> Value {
    let tenths = score_tenths(n);
    let score = if tenths.is_multiple_of(10) { json!(tenths / 10) } else { json!(tenths as f64 / 10.0) };
    json!({
        "name": name(n),
        "phone": format!("+25571{:07}", n % 10_000_000),
        "segment": if n % 5 < 3 { "retail" } else { "wholesale" },
        "score": score,
        "city": CITIES[(n % CITIES.len() as u64) as usize],
    })
}

/// Records `$3..=$4` of `$5` for tenant `$1`, table `$2`, as [`record`] makes them, created
/// 30 s apart up to now (1,000,000 records: about a year), newest last.
fn load_sql() -> String {
    let cities: Vec<String> = CITIES.iter().map(|c| format!("'{c}'")).collect();
    format!(
        "INSERT INTO data_records (id, tenant_id, table_id, data, source, created_at, updated_at) \
         SELECT gen_random_uuid(), $1::bigint, $2::text::uuid, jsonb_build_object( \
             'name', CASE WHEN n % {SEARCH_EVERY} = 0 THEN 'Amina ' ELSE 'Customer ' END || n, \
             'phone', '+25571' || lpad((n % 10000000)::text, 7, '0'), \
             'segment', CASE WHEN n % 5 < 3 THEN 'retail' ELSE 'wholesale' END, \
             'score', trim_scale((n * 7919 % 1001) / 10.0), \
             'city', (ARRAY[{}])[(n % {} + 1)::int]), \
           'api', t.at, t.at \
         FROM generate_series($3::bigint, $4::bigint) AS n, \
              LATERAL (SELECT now() - ($5::bigint - n)::float8 * interval '30 seconds' AS at) AS t",
        cities.join(", "),
        CITIES.len()
    )
}

impl Run<'_> {
    /// Defines `slugs` in group `group` with the admin CLI; the tables in the order of `slugs`.
    async fn apply_tables(&self, group: &str, slugs: &[&str]) -> Result<Vec<Named>> {
        let file = self.setup.gateway_log.with_file_name(format!("data-tables-{group}.json"));
        fs::write(&file, serde_json::to_vec_pretty(&definition(group, slugs))?)?;
        let tenant = self.setup.tenant.to_string();
        let path = file.to_str().ok_or("the bench's output directory is not UTF-8")?;
        let args = ["admin", "data-table", "apply", "--tenant", &tenant, "--json", path];
        let mut cmd = super::gateway_command(&self.setup.gateway, &self.setup.database_url, &self.setup.root, &args);
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
        let applied = parse_applied(&String::from_utf8_lossy(&output.stdout))?;
        let tables = slugs
            .iter()
            .map(|slug| {
                let table = applied.tables.iter().find(|t| t.slug == *slug);
                table.cloned().ok_or_else(|| format!("`data-table apply` printed no table {slug}"))
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let ids: Vec<String> = tables.iter().map(|t| format!("{} {}", t.slug, t.id)).collect();
        println!("xtask: data tables applied: group {group} {}; {}", applied.group.id, ids.join(", "));
        Ok(tables)
    }

    /// Writes `records` records into `table` by SQL, then `VACUUM ANALYZE`; the seconds taken.
    async fn load_records(&self, table: Uuid, records: u64) -> Result<f64> {
        let sql = load_sql();
        let bar = ProgressBar::new(records).with_message(format!("writing {PAGE_TABLE} records by SQL"));
        bar.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({per_sec}, {eta} left)")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        let started = Instant::now();
        let (tenant, id, total) = (self.setup.tenant, table.to_string(), i64::try_from(records)?);
        for first in (1..=records).step_by(LOAD_CHUNK as usize) {
            let last = (first + LOAD_CHUNK - 1).min(records);
            let (from, to) = (i64::try_from(first)?, i64::try_from(last)?);
            self.db.execute(&sql, &[&tenant, &id, &from, &to, &total]).await?;
            bar.set_position(last);
        }
        bar.finish_and_clear();
        let written = started.elapsed().as_secs_f64();
        // Hint bits set and the visibility map written now, not by the first side's reads.
        self.db.batch_execute("VACUUM ANALYZE data_records").await?;
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "xtask: wrote {} records into {PAGE_TABLE} in {written:.1} s ({:.0}/s), vacuumed and analyzed after \
             {seconds:.1} s",
            thousands(records),
            records as f64 / written
        );
        Ok(seconds)
    }

    /// Waits until the schema says every indexed column's index is `ready`, and `data_indexes`
    /// the same of every index of the tables; the seconds waited. A `failed` one is an error.
    async fn wait_for_indexes(&self, tables: &[&Named]) -> Result<f64> {
        let started = Instant::now();
        let mut last_print = Instant::now();
        loop {
            let mut pending = Vec::new();
            for table in tables {
                let schema = self.api.data_schema(&table.id.to_string()).await?;
                let columns = schema.get("columns").and_then(Value::as_array).ok_or("no columns in the schema")?;
                for column in columns.iter().filter(|c| c.get("indexed").and_then(Value::as_bool) == Some(true)) {
                    let key = column.get("key").and_then(Value::as_str).unwrap_or("?");
                    let status = column.pointer("/index/status").and_then(Value::as_str).unwrap_or("?");
                    match status {
                        "ready" => {}
                        "failed" => {
                            return Err(
                                format!("the schema says the index of {}.{key} failed: {column}", table.slug).into()
                            );
                        }
                        _ => pending.push(format!("{}.{key} {status} (schema)", table.slug)),
                    }
                }
                let rows = self
                    .db
                    .query(
                        "SELECT column_key, status, coalesce(error, '') FROM data_indexes \
                         WHERE table_id = $1::text::uuid ORDER BY column_key",
                        &[&table.id.to_string()],
                    )
                    .await?;
                if rows.is_empty() {
                    pending.push(format!("{}: no data_indexes rows yet", table.slug));
                }
                for row in rows {
                    let (key, status, error): (String, String, String) = (row.get(0), row.get(1), row.get(2));
                    match status.as_str() {
                        "ready" => {}
                        "failed" => {
                            return Err(
                                format!("data_indexes: the index of {}.{key} failed: {error}", table.slug).into()
                            );
                        }
                        _ => pending.push(format!("{}.{key} {status}", table.slug)),
                    }
                }
            }
            let waited = started.elapsed();
            if pending.is_empty() {
                println!("xtask: data table indexes ready after {:.1} s", waited.as_secs_f64());
                for table in tables {
                    self.print_indexes(table).await?;
                }
                return Ok(waited.as_secs_f64());
            }
            if waited > INDEX_WAIT {
                return Err(format!("indexes not ready after {INDEX_WAIT:?}: {}", pending.join(", ")).into());
            }
            if last_print.elapsed() >= Duration::from_secs(15) {
                println!("xtask: waiting for indexes ({:.0} s): {}", waited.as_secs_f64(), pending.join(", "));
                last_print = Instant::now();
            }
            tokio::time::sleep(INDEX_POLL).await;
        }
    }

    /// The partial indexes of `table` on `data_records`, as PostgreSQL has them.
    async fn print_indexes(&self, table: &Named) -> Result<()> {
        let rows = self
            .db
            .query(
                "SELECT pg_get_indexdef(i.indexrelid), i.indisvalid, pg_relation_size(i.indexrelid) FROM pg_index i \
                 WHERE i.indrelid = 'data_records'::regclass AND pg_get_expr(i.indpred, i.indrelid) LIKE '%' || $1 || '%'",
                &[&table.id.to_string()],
            )
            .await?;
        if rows.is_empty() {
            println!("xtask: {}: NO partial index of its own on data_records", table.slug);
        }
        for row in rows {
            let (definition, valid, bytes): (String, bool, i64) = (row.get(0), row.get(1), row.get(2));
            let valid = if valid { "" } else { " (NOT VALID)" };
            println!("xtask: {} index{valid}, {:.1} MB: {definition}", table.slug, bytes as f64 / 1e6);
        }
        Ok(())
    }

    /// `EXPLAIN (ANALYZE, BUFFERS)` of `sql`, printed.
    async fn explain(&self, label: &str, sql: &str) -> Result<()> {
        let rows = self.db.query(&format!("EXPLAIN (ANALYZE, BUFFERS) {sql}"), &[]).await?;
        println!("xtask: {label}: plan of the raw statement:");
        for row in rows {
            println!("    {}", row.get::<_, String>(0));
        }
        Ok(())
    }

    /// Whether the API's first page is the raw statement's (the same ids in the same order,
    /// `has_more` when the raw statement read one more); loud when not.
    async fn same_page(&self, label: &str, url: &reqwest::Url, query: &PageQuery, table: Uuid) -> Result<bool> {
        let body = self.api.data_list_json(url).await?;
        let records = body.get("records").and_then(Value::as_array).ok_or_else(|| format!("no records in {body}"))?;
        let api: Vec<&str> = records.iter().map(|r| r.get("id").and_then(Value::as_str).unwrap_or("?")).collect();
        let has_more = body.get("has_more").and_then(Value::as_bool);
        let raw: Vec<String> =
            self.db.query(&query.sql("id::text", table), &[]).await?.iter().map(|row| row.get(0)).collect();
        let raw_more = raw.len() > PAGE_SIZE;
        let raw_page: Vec<&str> = raw.iter().take(PAGE_SIZE).map(String::as_str).collect();
        let same = api == raw_page && has_more == Some(raw_more);
        if same {
            println!(
                "xtask: {label}: the API's first page is the raw statement's ({} records, has_more {raw_more})",
                api.len()
            );
        } else {
            let first = |ids: &[&str]| ids.iter().take(3).copied().collect::<Vec<_>>().join(", ");
            println!(
                "xtask: {label}: ***** THE API'S PAGE DIFFERS: {} records ({}...), has_more {has_more:?}; raw: {} \
                 ({}...), has_more {raw_more} *****",
                api.len(),
                first(&api),
                raw_page.len(),
                first(&raw_page)
            );
        }
        Ok(same)
    }

    /// Workload 12 on both sides (see the module's documentation): two rows.
    pub(super) async fn data_page(&self, workload: &'static Workload) -> Result<Vec<Outcome>> {
        let records = self.setup.data_records;
        self.prepare(workload, "both sides").await?;
        let table = self.apply_tables(PAGE_GROUP, &[PAGE_TABLE]).await?.remove(0);
        let load_seconds = self.load_records(table.id, records).await?;
        // The gateway's workers build the indexes (job `data.build_index`).
        let builder = Gateway::start(self.setup, workload.limiter(), self.api).await?;
        let index_seconds = self.wait_for_indexes(&[&table]).await;
        builder.stop().await?;
        let index_seconds = index_seconds?;
        // Statistics of the index expressions, which the search's estimate reads.
        self.db.batch_execute("ANALYZE data_records").await?;

        let mut outcomes = Vec::with_capacity(3);
        let first = (Some(load_seconds), Some(index_seconds));
        outcomes.push(self.page_row(workload, workload, &FILTERED, table.id, first).await?);
        outcomes.push(self.page_row(workload, &SEARCH_ROW, &SEARCHED, table.id, (None, None)).await?);
        outcomes.push(self.page_row(workload, &COMMON_ROW, &SEARCHED_COMMON, table.id, (None, None)).await?);
        Ok(outcomes)
    }

    /// One row of 12 on both sides, with a gateway of its own.
    async fn page_row(
        &self,
        workload: &'static Workload,
        row: &'static Workload,
        query: &PageQuery,
        table: Uuid,
        (load_seconds, index_seconds): (Option<f64>, Option<f64>),
    ) -> Result<Outcome> {
        let (n, timing) = (row.connections, self.timing);
        let count = format!(
            "SELECT count(*) FROM data_records WHERE table_id = '{table}' AND deleted_at IS NULL AND {}",
            query.filter
        );
        let matching: i64 = self.db.query_one(&count, &[]).await?.get(0);
        let rows = usize::try_from(matching)?.min(PAGE_SIZE + 1);
        let label = format!("{}. {}", row.number, row.name);
        println!("xtask: {label}: {matching} of {} records match", thousands(self.setup.data_records));
        self.explain(&label, &query.sql("id, data, source, created_at, updated_at", table)).await?;

        self.prepare(workload, "API").await?;
        let gateway = Gateway::start(self.setup, workload.limiter(), self.api).await?;
        let url = self.api.data_records_url(&table.to_string(), query.api)?;
        let same_page = self.same_page(&label, &url, query, table).await?;
        let api_label = format!("{label} · API");
        let before = self.meter.read(gateway.pid);
        let (api, url) = (Arc::clone(self.api), Arc::new(url));
        let open_url = Arc::clone(&url);
        let api_measured = drive(&api_label, n, timing, move |_| {
            let (api, url) = (Arc::clone(&api), Arc::clone(&url));
            async move { api.data_list(&url).await }
        })
        .await?;
        let api_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        let rss_mb = super::sys::peak_rss_mb(gateway.pid).ok();
        super::print_run(&api_label, &api_measured, &api_cpu);

        self.prepare(workload, "raw SQL").await?;
        let raw_label = format!("{label} · raw SQL");
        let sql = query.sql("id, data, source, created_at, updated_at", table);
        let raw = Arc::new(RawReads::open(&self.setup.database_url, self.key_hash, &sql, rows, n).await?);
        let conns = Arc::clone(&raw);
        let before = self.meter.read(gateway.pid);
        let raw_measured = drive(&raw_label, n, timing, move |op| {
            let raw = Arc::clone(&conns);
            async move { raw.read(op.worker).await }
        })
        .await?;
        let raw_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        drop(raw);
        super::print_run(&raw_label, &raw_measured, &raw_cpu);
        let open = match row.open_loop_p99_ms {
            Some(_) => {
                let (api, url) = (Arc::clone(self.api), open_url);
                let open = self
                    .open_run(row, raw_measured.rate(), move |_| {
                        let (api, url) = (Arc::clone(&api), Arc::clone(&url));
                        async move { api.data_list(&url).await }
                    })
                    .await?;
                Some(open)
            }
            None => None,
        };
        gateway.stop().await?;

        let records = self.setup.data_records;
        let facts = DataFacts::Page { what: query.what, records, matching, load_seconds, index_seconds, same_page };
        Ok(Outcome {
            workload: row,
            api: api_measured,
            raw: raw_measured,
            rss_mb,
            api_cpu,
            raw_cpu,
            facts: Some(Facts::Data(facts)),
            open,
        })
    }

    async fn count_records(&self, table: Uuid) -> Result<i64> {
        let sql = "SELECT count(*) FROM data_records WHERE table_id = $1::text::uuid AND deleted_at IS NULL";
        Ok(self.db.query_one(sql, &[&table.to_string()]).await?.get(0))
    }

    /// Workload 13 on both sides (see the module's documentation).
    pub(super) async fn data_creates(&self, workload: &'static Workload) -> Result<Outcome> {
        let (n, timing) = (workload.connections, self.timing);
        self.prepare(workload, "both sides").await?;
        let tables = self.apply_tables(CREATE_GROUP, &CREATE_TABLES).await?;
        let (api_table, raw_table) = (tables[0].id, tables[1].id);
        let gateway = Gateway::start(self.setup, workload.limiter(), self.api).await?;
        self.wait_for_indexes(&[&tables[0], &tables[1]]).await?;

        self.prepare(workload, "API").await?;
        let label = format!("{}. {} · API", workload.number, workload.name);
        let before = self.meter.read(gateway.pid);
        let (api, table) = (Arc::clone(self.api), Arc::new(api_table.to_string()));
        let api_measured = drive(&label, n, timing, move |op| {
            let (api, table) = (Arc::clone(&api), Arc::clone(&table));
            async move { api.data_create(&table, &record(op.seq)).await }
        })
        .await?;
        let api_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        let rss_mb = super::sys::peak_rss_mb(gateway.pid).ok();
        super::print_run(&label, &api_measured, &api_cpu);
        let api_records = self.count_records(api_table).await?;
        let api_history: i64 = self
            .db
            .query_one(
                "SELECT count(*) FROM data_record_history WHERE table_id = $1::text::uuid AND action = 'created'",
                &[&api_table.to_string()],
            )
            .await?
            .get(0);
        println!("xtask: {label}: {api_records} records written, {api_history} `created` history rows");
        if api_history != api_records {
            println!("xtask: {label}: ***** {api_records} records but {api_history} `created` history rows *****");
        }

        self.prepare(workload, "raw SQL").await?;
        let label = format!("{}. {} · raw SQL", workload.number, workload.name);
        let side = (self.setup.tenant, self.key_hash);
        let raw = Arc::new(RawCreates::open(&self.setup.database_url, side, raw_table, n).await?);
        let conns = Arc::clone(&raw);
        let before = self.meter.read(gateway.pid);
        let raw_measured = drive(&label, n, timing, move |op| {
            let raw = Arc::clone(&conns);
            async move { raw.create(op.worker, &record(op.seq).to_string()).await }
        })
        .await?;
        let raw_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        drop(raw);
        super::print_run(&label, &raw_measured, &raw_cpu);
        let raw_records = self.count_records(raw_table).await?;
        gateway.stop().await?;

        for (side, written, ops) in
            [("API", api_records, api_measured.ops()), ("raw SQL", raw_records, raw_measured.ops())]
        {
            if usize::try_from(written)? < ops {
                return Err(
                    format!("{}. {side}: {written} records in the table, {ops} created", workload.number).into()
                );
            }
        }
        Ok(Outcome {
            workload,
            api: api_measured,
            raw: raw_measured,
            rss_mb,
            api_cpu,
            raw_cpu,
            facts: Some(Facts::Data(DataFacts::Creates { api_records, api_history, raw_records })),
            open: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_written_as_the_service_stores_them() {
        let r = record(1_000);
        assert_eq!(r["name"], "Amina 1000");
        assert_eq!(r["phone"], "+255710001000");
        assert_eq!(r["segment"], "retail");
        assert_eq!(r["city"], CITIES[0]);
        // 1,000 × 7,919 mod 1,001 = 89 tenths
        assert_eq!(r["score"].to_string(), "8.9");
        // 10 tenths: an integer, as the service normalizes it
        let whole = (0..2_000).find(|n| score_tenths(*n).is_multiple_of(10) && score_tenths(*n) > 0).expect("one");
        assert_eq!(record(whole)["score"].to_string(), (score_tenths(whole) / 10).to_string());
        assert_eq!(record(7)["name"], "Customer 7");
    }

    #[test]
    fn the_cli_output_is_read_with_or_without_other_lines() {
        let json = r#"{"group":{"id":"6f1c7a2e-0000-4000-8000-000000000001","slug":"g","name":"G"},"tables":[{"id":"6f1c7a2e-0000-4000-8000-000000000002","slug":"t","name":"T"}]}"#;
        assert_eq!(parse_applied(json).expect("parses").tables[0].slug, "t");
        assert_eq!(parse_applied(&format!("applied\n{json}\n")).expect("parses").tables.len(), 1);
    }
}
