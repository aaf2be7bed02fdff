//! The payments workload (issue 20): 21, `GET /api/v3/payments?per_page=100`, the first page
//! of 100 of one tenant's 100,000 payments, newest first, against raw SQL running what the
//! request runs (`payments_read::reads` `list`, unfiltered): the authentication lookup, the
//! tenant's payments counted, and the page (`ORDER BY created_at DESC, id DESC LIMIT 100 OFFSET
//! 0`). A closed loop of 32 connections on each side, one gateway serving both, the API side
//! first; no open loop, and the report has no facts of its kind.
//!
//! The payments are written straight into the tables of migration `..._000058_payments` by SQL:
//! the tenant's earlier ones deleted (their timelines and ledger entries with them), then
//! [`PAYMENTS`] in one `INSERT INTO payments ... SELECT FROM generate_series` (a mix of states
//! by `n mod 20`, amounts spread by a multiplicative hash, `subject_type` `order` with subject id
//! `n`, references `PAY-20261207-<n>`, unique checkout and callback tokens of 32 hex digits,
//! `created_by` as the service writes it, created 30 s apart up to now), each payment's timeline
//! (`INSERT ... SELECT FROM payments`: made, asked, and the outcome) and each settled payment's
//! two settlement entries in the ledger; then `VACUUM ANALYZE`. No refund payments are written:
//! the refunded amounts are on the payments alone. The key's issuer (the bench user, every
//! permission) holds `payments.view`.
//!
//! Before the clock starts, the API's first page is compared with the raw statement's (the same
//! 100 ids in the same order, the same total), and the plans of the count, the first page and
//! page 500 are printed (`EXPLAIN (ANALYZE, BUFFERS)`), as the raw side runs them (the
//! superuser, whom row-level security does not apply to, as on every other raw side) and as the
//! service does (role `svc_app` in the tenant's scope).

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use tokio::time::Instant;
use tokio_postgres::{Client, Statement};

use super::load::{Measured, OpResult, drive};
use super::report::Outcome;
use super::{Gateway, Run, Workload, sql, sys};
use crate::Result;

/// The tenant's payments.
pub const PAYMENTS: i64 = 100_000;
/// The page size asked for (the most a page may hold).
const PER_PAGE: i64 = 100;
/// The deep page whose plan is printed beside the first's.
const DEEP_PAGE: i64 = 500;
/// How the measured answers end: the meta with the total (`{"data":[...],"meta":{...}}`).
const TOTAL: &str = "\"total\":100000,";
/// The bytes at the end of an answer searched for [`TOTAL`].
const TAIL: usize = 160;

/// What the raw side runs per operation.
pub const RAW_LIST: &str = "authentication lookup; SELECT count(*) FROM payments WHERE tenant_id = $1; SELECT the 26 \
                            columns of a payment FROM payments WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC \
                            LIMIT $2 OFFSET $3 (100, 0): payments-read's list, unfiltered, as the superuser (no \
                            row-level security, as on every raw side)";

/// The columns `payments_read::payment::Row` selects, in its order.
const COLUMNS: &str = "id, tenant_id, reference, state, amount_minor, currency, refunded_minor, refunding_minor, payer, \
                       method, provider, provider_request_id, provider_receipt, attempts, last_error, expires_at, \
                       settled_at, subject_type, subject_id, checkout_token, callback_token, refund_of, reason, \
                       created_by, created_at, updated_at";
/// The list's total (diesel's `count()` of the same filter).
const COUNT: &str = "SELECT count(*) FROM payments WHERE tenant_id = $1";

/// The list's page.
fn page_sql() -> String {
    format!("SELECT {COLUMNS} FROM payments WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3")
}

/// Payments `1..=$2` of tenant `$1`, payment `n` created `$2 - n` times 30 s ago (100,000: about
/// 35 days), newest last. States by `n mod 20`: 9 paid, 1 partly refunded, 1 refunded, 1
/// pending, 1 authorised, 2 drafts, 2 failed, 2 expired, 1 cancelled.
const LOAD: &str = "INSERT INTO payments (id, tenant_id, reference, state, amount_minor, currency, refunded_minor, \
    refunding_minor, payer, method, provider, provider_request_id, provider_receipt, attempts, last_error, expires_at, \
    settled_at, subject_type, subject_id, checkout_token, callback_token, refund_of, reason, created_by, created_at, \
    updated_at) \
    SELECT gen_random_uuid(), $1::bigint, 'PAY-20261207-' || lpad(p.n::text, 6, '0'), s.state, a.amount, 'TZS', \
        CASE s.state WHEN 'refunded' THEN a.amount WHEN 'partly_refunded' THEN a.amount / 4 ELSE 0 END, 0, \
        CASE WHEN s.state = 'draft' THEN NULL ELSE '+2557' || lpad((p.n * 7919 % 100000000)::text, 8, '0') END, \
        'mobile_money', 'sandbox', \
        CASE WHEN s.state = 'draft' THEN NULL ELSE 'sbx-req-' || p.n END, \
        CASE WHEN s.state IN ('paid', 'partly_refunded', 'refunded') \
            THEN 'SBX' || upper(substr(md5('receipt-' || p.n), 1, 10)) END, \
        CASE s.state WHEN 'draft' THEN 0 WHEN 'failed' THEN 2 ELSE 1 END, \
        CASE WHEN s.state = 'failed' THEN 'The payer cancelled the prompt.' END, \
        CASE WHEN s.state = 'draft' THEN t.at + interval '24 hours' \
            WHEN s.state IN ('pending', 'authorised') THEN t.at + interval '180 seconds' END, \
        CASE WHEN s.state IN ('paid', 'partly_refunded', 'refunded') THEN t.at + interval '40 seconds' END, \
        'order', p.n::text, md5('checkout-' || p.n), md5('callback-' || p.n), NULL, NULL, \
        jsonb_build_object('kind', CASE WHEN p.n % 5 = 0 THEN 'operator' ELSE 'checkout' END, 'id', NULL, \
            'label', CASE WHEN p.n % 5 = 0 THEN 'Bench' ELSE 'Checkout page' END), \
        t.at, t.at + CASE WHEN s.state = 'draft' THEN interval '0' ELSE interval '40 seconds' END \
    FROM generate_series(1, $2::bigint) AS p(n), \
        LATERAL (SELECT now() - ($2::bigint - p.n)::float8 * interval '30 seconds' AS at) AS t, \
        LATERAL (SELECT (ARRAY['paid', 'paid', 'paid', 'paid', 'paid', 'paid', 'paid', 'paid', 'paid', \
            'partly_refunded', 'refunded', 'pending', 'authorised', 'draft', 'draft', 'failed', 'failed', 'expired', \
            'expired', 'cancelled'])[(p.n % 20 + 1)::int] AS state) AS s, \
        LATERAL (SELECT 100 * (500 + p.n * 7919 % 200000) AS amount) AS a";
/// Each payment's timeline: made (a draft), asked (pending), the outcome, the refund.
const LOAD_TIMELINE: &str = "INSERT INTO payment_timeline (tenant_id, payment_id, old_state, new_state, source, \
    message, at) \
    SELECT p.tenant_id, p.id, s.old_state, s.new_state, s.source, s.message, p.created_at + s.after \
    FROM payments p CROSS JOIN LATERAL (VALUES \
        (1, NULL::text, 'draft', p.created_by->>'kind', 'checkout link made', interval '0'), \
        (2, 'draft', 'pending', p.created_by->>'kind', 'payment prompt sent to ' || p.payer, interval '5 seconds'), \
        (3, 'pending', CASE WHEN p.state IN ('partly_refunded', 'refunded') THEN 'paid' ELSE p.state END, \
            CASE p.state WHEN 'expired' THEN 'expiry' WHEN 'cancelled' THEN 'operator' ELSE 'provider' END, NULL, \
            interval '40 seconds'), \
        (4, 'paid', p.state, 'operator', NULL, interval '1 hour')) \
        AS s(step, old_state, new_state, source, message, after) \
    WHERE p.tenant_id = $1 AND (s.step = 1 OR (s.step = 2 AND p.state <> 'draft') \
        OR (s.step = 3 AND p.state NOT IN ('draft', 'pending')) \
        OR (s.step = 4 AND p.state IN ('partly_refunded', 'refunded'))) \
    ORDER BY p.created_at, s.step";
/// Each settled payment's settlement: provider clearing debited, customer payments credited.
const LOAD_LEDGER: &str = "INSERT INTO ledger_entries (tenant_id, payment_id, kind, direction, account, amount_minor, \
    currency, at) \
    SELECT p.tenant_id, p.id, 'settlement', e.direction, e.account, p.amount_minor, p.currency, p.settled_at \
    FROM payments p CROSS JOIN (VALUES (1, 'debit', 'provider_clearing'), (2, 'credit', 'customer_payments')) \
        AS e(step, direction, account) \
    WHERE p.tenant_id = $1 AND p.state IN ('paid', 'partly_refunded', 'refunded') \
    ORDER BY p.settled_at, e.step";

impl Run<'_> {
    /// Workload 21 (see the module's documentation).
    pub(super) async fn payments_page(&self, workload: &'static Workload) -> Result<Outcome> {
        let label = format!("{}. {}", workload.number, workload.name);
        self.load_payments(&label).await?;
        self.explain_payments(&label).await?;

        self.prepare(workload, "API").await?;
        let gateway = Gateway::start(self.setup, workload.limiter(), self.api).await?;
        let http = Arc::new(Http::new(self, workload.connections)?);
        self.same_payments_page(&label, &http).await?;
        let api_label = format!("{label} · API");
        let before = self.meter.read(gateway.pid);
        let client = Arc::clone(&http);
        let api = drive(&api_label, workload.connections, self.timing, move |_| {
            let http = Arc::clone(&client);
            async move { http.first_page().await }
        })
        .await?;
        let api_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        let rss_mb = sys::peak_rss_mb(gateway.pid).ok();
        super::print_run(&api_label, &api, &api_cpu);

        let (raw, raw_cpu) = raw_run(self, workload, &gateway).await?;
        gateway.stop().await?;
        Ok(Outcome { workload, api, raw, rss_mb, api_cpu, raw_cpu, facts: None, open: None })
    }

    /// The tenant's payments replaced by [`PAYMENTS`] written by SQL, with their timelines and
    /// ledger entries; then `VACUUM ANALYZE`.
    async fn load_payments(&self, label: &str) -> Result<()> {
        let tenant = self.setup.tenant;
        let started = Instant::now();
        self.db.batch_execute("BEGIN").await?;
        self.db.execute("DELETE FROM payments WHERE tenant_id = $1", &[&tenant]).await?;
        let payments = self.db.execute(LOAD, &[&tenant, &PAYMENTS]).await?;
        let timeline = self.db.execute(LOAD_TIMELINE, &[&tenant]).await?;
        let ledger = self.db.execute(LOAD_LEDGER, &[&tenant]).await?;
        // a payment the service makes later takes the next number
        self.db.execute("SELECT setval('payment_references', $1)", &[&PAYMENTS]).await?;
        self.db.batch_execute("COMMIT").await?;
        self.db.batch_execute("VACUUM ANALYZE payments, payment_timeline, ledger_entries").await?;
        let states = self
            .db
            .query(
                "SELECT state, count(*) FROM payments WHERE tenant_id = $1 GROUP BY 1 ORDER BY 2 DESC, 1",
                &[&tenant],
            )
            .await?;
        let states: Vec<String> =
            states.iter().map(|r| format!("{} {}", r.get::<_, i64>(1), r.get::<_, String>(0))).collect();
        println!(
            "xtask: {label}: {payments} payments ({}), {timeline} timeline rows and {ledger} ledger entries written \
             by SQL in {:.1} s",
            states.join(", "),
            started.elapsed().as_secs_f64()
        );
        if payments != PAYMENTS as u64 {
            return Err(format!("{label}: {payments} payments written, not {PAYMENTS}").into());
        }
        Ok(())
    }

    /// The plans of the count, the first page and page [`DEEP_PAGE`], as the raw side runs them
    /// and as the service does (its role, the tenant's scope), printed.
    async fn explain_payments(&self, label: &str) -> Result<()> {
        let tenant = self.setup.tenant;
        let page = |n: i64| {
            format!(
                "SELECT {COLUMNS} FROM payments WHERE tenant_id = {tenant} ORDER BY created_at DESC, id DESC \
                 LIMIT {PER_PAGE} OFFSET {}",
                (n - 1) * PER_PAGE
            )
        };
        let statements = [
            ("the count", format!("SELECT count(*) FROM payments WHERE tenant_id = {tenant}")),
            ("the first page", page(1)),
            ("page 500", page(DEEP_PAGE)),
        ];
        for service in [false, true] {
            let who = if service { "as the service (svc_app, the tenant's scope)" } else { "as the raw side" };
            for (what, statement) in &statements {
                self.db.batch_execute("BEGIN").await?;
                if service {
                    self.db
                        .batch_execute(&format!(
                            "SET LOCAL ROLE {}; SELECT set_config('svc.tenant_id', '{tenant}', true), \
                             set_config('svc.scope', 'tenant', true)",
                            SERVICE_ROLE
                        ))
                        .await?;
                }
                let plan = self.db.query(&format!("EXPLAIN (ANALYZE, BUFFERS) {statement}"), &[]).await;
                self.db.batch_execute("ROLLBACK").await?;
                println!("xtask: {label}: plan of {what} {who}:");
                for row in plan? {
                    println!("    {}", row.get::<_, String>(0));
                }
            }
        }
        Ok(())
    }

    /// Whether the API's first page is the raw statements' (the same ids in the same order, the
    /// same total); loud when not.
    async fn same_payments_page(&self, label: &str, http: &Http) -> Result<()> {
        let body = http.page_json().await?;
        let data = body.get("data").and_then(Value::as_array).ok_or_else(|| format!("no data in {body}"))?;
        let api: Vec<&str> = data.iter().map(|p| p.get("id").and_then(Value::as_str).unwrap_or("?")).collect();
        let total = body.pointer("/meta/total").and_then(Value::as_i64);
        let tenant = self.setup.tenant;
        let raw_total: i64 = self.db.query_one(COUNT, &[&tenant]).await?.get(0);
        let raw: Vec<String> = self
            .db
            .query(
                "SELECT id::text FROM payments WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2",
                &[&tenant, &PER_PAGE],
            )
            .await?
            .iter()
            .map(|row| row.get(0))
            .collect();
        if api == raw && total == Some(raw_total) {
            println!(
                "xtask: {label}: the API's first page is the raw statement's ({} payments of {raw_total})",
                api.len()
            );
        } else {
            let first = |ids: &[&str]| ids.iter().take(3).copied().collect::<Vec<_>>().join(", ");
            let raw: Vec<&str> = raw.iter().map(String::as_str).collect();
            println!(
                "xtask: {label}: ***** THE API'S PAGE DIFFERS: {} payments ({}...), total {total:?}; raw: {} ({}...), \
                 total {raw_total} *****",
                api.len(),
                first(&api),
                raw.len(),
                first(&raw)
            );
        }
        Ok(())
    }
}

/// The role the service's connections run as (`store::pool::SERVICE_ROLE`).
const SERVICE_ROLE: &str = "svc_app";

/// The HTTP side (the shared [`super::api::Api`] has no call of its own): one client to
/// 127.0.0.1, kept-alive connections, the body read whole; the measured calls parse no JSON.
struct Http {
    client: reqwest::Client,
    url: String,
    authorization: String,
}

impl Http {
    fn new(run: &Run<'_>, connections: usize) -> Result<Self> {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(connections)
            .tcp_nodelay(true)
            .no_proxy()
            .timeout(Duration::from_secs(60))
            .build()?;
        Ok(Self {
            client,
            url: format!("http://{}/api/v3/payments?per_page={PER_PAGE}", run.setup.addr),
            authorization: format!("Bearer {}", run.setup.key),
        })
    }

    /// `GET /payments?per_page=100`: the status and the body.
    async fn get(&self) -> reqwest::Result<(StatusCode, impl AsRef<[u8]> + use<>)> {
        let response = self.client.get(&self.url).header("authorization", &self.authorization).send().await?;
        let status = response.status();
        Ok((status, response.bytes().await?))
    }

    /// The first page, parsed (before the clock starts).
    async fn page_json(&self) -> Result<Value> {
        let (status, body) = self.get().await?;
        let body = body.as_ref();
        if status != StatusCode::OK {
            return Err(format!("GET /payments: expected 200, got {status}: {}", shown(body)).into());
        }
        Ok(serde_json::from_slice(body)?)
    }

    /// The measured call: Err unless 200 with the total of every payment in its meta (the end
    /// of the body searched, not parsed).
    async fn first_page(&self) -> OpResult {
        let (status, body) = self.get().await?;
        let body = body.as_ref();
        let tail = &body[body.len().saturating_sub(TAIL)..];
        if status != StatusCode::OK || !tail.windows(TOTAL.len()).any(|w| w == TOTAL.as_bytes()) {
            return Err(format!("expected 200 with {TOTAL} in the meta, got {status}: {}", shown(tail)).into());
        }
        Ok(())
    }
}

fn shown(body: &[u8]) -> String {
    String::from_utf8_lossy(body).chars().take(300).collect()
}

/// One connection per load task, both statements and the authentication lookup prepared on each.
struct RawDb {
    conns: Vec<(Client, Statement, Statement, Statement)>,
    tenant: i64,
    key_hash: Vec<u8>,
}

impl RawDb {
    async fn open(run: &Run<'_>, connections: usize) -> Result<Self> {
        let page = page_sql();
        let mut conns = Vec::with_capacity(connections);
        for _ in 0..connections {
            let client = sql::connect(&run.setup.database_url).await?;
            let auth = client.prepare(sql::AUTH).await?;
            let count = client.prepare(COUNT).await?;
            let page = client.prepare(&page).await?;
            conns.push((client, auth, count, page));
        }
        Ok(Self { conns, tenant: run.setup.tenant, key_hash: run.key_hash.to_vec() })
    }

    /// Authentication, the count, then the first page; Err unless they found every payment and
    /// a full page. The rows are not decoded.
    async fn list(&self, worker: usize) -> OpResult {
        let (client, auth, count, page) = &self.conns[worker];
        client.query_one(auth, &[&self.key_hash]).await?;
        let total: i64 = client.query_one(count, &[&self.tenant]).await?.get(0);
        let offset = 0i64;
        let rows = client.query(page, &[&self.tenant, &PER_PAGE, &offset]).await?;
        if total != PAYMENTS || rows.len() != PER_PAGE as usize {
            return Err(format!("counted {total} payments and read {} on the page", rows.len()).into());
        }
        Ok(())
    }
}

/// The raw side: 32 connections, every statement prepared on each.
async fn raw_run(run: &Run<'_>, workload: &'static Workload, gateway: &Gateway) -> Result<(Measured, sys::CpuShare)> {
    run.prepare(workload, "raw SQL").await?;
    let label = format!("{}. {} · raw SQL", workload.number, workload.name);
    let db = Arc::new(RawDb::open(run, workload.connections).await?);
    // `db` keeps the connections, and so their backends' CPU time, until the meter has read it.
    let conns = Arc::clone(&db);
    let before = run.meter.read(gateway.pid);
    let measured = drive(&label, workload.connections, run.timing, move |op| {
        let db = Arc::clone(&conns);
        async move { db.list(op.worker).await }
    })
    .await?;
    let cpu = run.meter.share(&before, &run.meter.read(gateway.pid));
    drop(db);
    super::print_run(&label, &measured, &cpu);
    Ok((measured, cpu))
}
