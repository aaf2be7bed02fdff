//! The named-operations workload (issue 20): 22, `POST /api/v3/operations/{name}/runs`, one
//! run of a three-step operation the workspace defines, against raw SQL writing what the run
//! writes: the run's own bookkeeping (`automations::operations::run`) and its three domain
//! steps (`leads::upsert`, `leads::stage`, `data_tables::records::write`).
//!
//! Setup, once: a data-table group with two tables (`name` text, `phone` phone), one per side,
//! defined with `gateway admin data-table apply --json`; the operation [`OPERATION`] defined
//! with `gateway admin operation apply --json FILE` (both files written beside the gateway's
//! log): inputs `phone` (a phone) and `name` (a string), steps `lead` (`create_lead` with the
//! phone and the name), `stage` (`set_lead_stage` of `{{steps.lead.id}}` to `qualified`) and
//! `record` (`write_record` of the name and the phone into the API side's table). A gateway is
//! started (its workers build the tables' indexes) and serves both sides; the bench waits until
//! `data_indexes` says every index of both tables is ready.
//!
//! Before each side the tenant's leads (their identities and timelines with them), its `lead.*`
//! events and its operation runs are deleted, then `VACUUM ANALYZE`, so both sides start alike
//! and run `n` creates person `n` ([`data::lead_digits`], [`data::lead_name`]) on both. Before
//! the API side's clock starts one run is made and read whole: 201, status `succeeded`, three
//! steps `succeeded`, the lead `qualified` and the record written (or the workload fails). Then a
//! closed loop of 32 connections on each side, the API side first; each API answer must be 201
//! with four `"status":"succeeded"` (the run's and its three steps'; the body is searched, not
//! parsed). After each side the runs, leads, events and records are counted: as many of each as
//! runs, every run `succeeded` and every lead `qualified`, or the workload fails.

use std::fs;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::time::Instant;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};
use uuid::Uuid;

use super::load::{Measured, OpResult, drive};
use super::report::Outcome;
use super::{Gateway, Run, Workload, data, sql, sys};
use crate::Result;

/// The operation's name.
pub const OPERATION: &str = "bench_qualify_lead";
/// Targets: a write of three domain steps plus the run's own bookkeeping.
pub const MIN_RATIO: f64 = 0.25;
pub const MAX_P99_MS: f64 = 100.0;

/// The data-table group, and its tables: the API side's (the operation's step writes there),
/// then the raw side's.
const GROUP: &str = "bench_operations";
const TABLES: [&str; 2] = ["bench_operation_leads_api", "bench_operation_leads_raw"];
/// The person of the run checked before the clock starts (past any run's).
const CHECKED_PERSON: u64 = 59_000_000;
/// How the measured answers say success: the run's status and each step's.
const SUCCEEDED: &[u8] = b"\"status\":\"succeeded\"";
const SUCCEEDED_PER_RUN: usize = 4;
/// How long the tables' indexes may take (empty tables: seconds).
const INDEX_WAIT: Duration = Duration::from_secs(300);
const INDEX_POLL: Duration = Duration::from_millis(250);

/// What the raw side runs per operation.
pub const RAW_RUN: &str = "authentication lookup; the operation (SELECT version, definition FROM operations); BEGIN; \
    INSERT operation_runs ('running', the input, steps '[]', created_by, fingerprint) ON CONFLICT DO NOTHING; INSERT \
    jobs ('operations.recover', due in 1 minute); COMMIT; UPDATE operation_runs SET steps (step 1 running); BEGIN; the \
    identity lookup; INSERT leads RETURNING the row; INSERT lead_identities; INSERT events ('lead.created', the lead); \
    INSERT lead_activities ('created'); COMMIT; UPDATE operation_runs SET steps; BEGIN; SELECT the lead FOR UPDATE; \
    UPDATE leads SET stage 'qualified' RETURNING the row; INSERT lead_activities ('stage_changed'); INSERT events \
    ('lead.stage_changed'); COMMIT; UPDATE operation_runs SET steps; one statement writing the data record and its \
    'created' history row; UPDATE operation_runs SET steps, status 'succeeded', finished_at; SELECT the run";

/// The operation the workspace defines: a lead made, qualified, and written to `table`.
fn definition(table: Uuid) -> Value {
    json!({
        "name": OPERATION,
        "description": "Bench: a new lead by phone, qualified, and noted in a data table.",
        "inputs": [
            {"name": "phone", "type": "phone"},
            {"name": "name", "type": "string", "max_length": 191}
        ],
        "steps": [
            {"id": "lead", "action": "create_lead", "with": {"phone": "{{inputs.phone}}", "name": "{{inputs.name}}"}},
            {"id": "stage", "action": "set_lead_stage", "with": {"lead": "{{steps.lead.id}}", "stage": "qualified"}},
            {"id": "record", "action": "write_record",
             "with": {"table": table.to_string(), "data": {"name": "{{inputs.name}}", "phone": "{{inputs.phone}}"}}}
        ]
    })
}

/// The data tables' group, one table per slug.
fn tables_definition() -> Value {
    let columns = json!([{"key": "name", "type": "text"}, {"key": "phone", "type": "phone"}]);
    let tables: Vec<Value> =
        TABLES.iter().map(|slug| json!({"slug": slug, "name": format!("Bench {slug}"), "columns": columns})).collect();
    json!({"group": {"slug": GROUP, "name": "Bench operations"}, "tables": tables})
}

/// Person `n`'s phone (E.164, as the service stores it) and name, on both sides.
fn person(n: u64) -> (String, String) {
    (format!("+{}", data::lead_digits(n)), data::lead_name(n))
}

/// The run's input as the service stores it (members sorted, as `serde_json` keeps them).
fn input(n: u64) -> Value {
    let (phone, name) = person(n);
    json!({"name": name, "phone": phone})
}

#[derive(Deserialize)]
struct AppliedTables {
    tables: Vec<Named>,
}

#[derive(Deserialize)]
struct Named {
    id: Uuid,
    slug: String,
}

#[derive(Deserialize)]
struct AppliedOperation {
    name: String,
    version: i32,
    outcome: String,
}

/// The last line of `stdout` that is a JSON object, read as `T`.
fn last_object<T: serde::de::DeserializeOwned>(stdout: &str) -> Result<T> {
    if let Ok(value) = serde_json::from_str(stdout.trim()) {
        return Ok(value);
    }
    let line = stdout.lines().map(str::trim).rfind(|line| line.starts_with('{'));
    let line = line.ok_or_else(|| format!("no JSON object in what the CLI printed: {stdout:?}"))?;
    Ok(serde_json::from_str(line).map_err(|e| format!("{e} in {line:?}"))?)
}

impl Run<'_> {
    /// Workload 22 (see the module's documentation).
    pub(super) async fn operation_run(&self, workload: &'static Workload) -> Result<Outcome> {
        let label = format!("{}. {}", workload.number, workload.name);
        let (n, timing) = (workload.connections, self.timing);
        self.prepare(workload, "both sides").await?;
        let tables = self.apply_operation_tables().await?;
        let (api_table, raw_table) = (tables[0], tables[1]);
        self.apply_operation(api_table).await?;
        let gateway = Gateway::start(self.setup, workload.limiter(), self.api).await?;
        self.wait_for_table_indexes(&tables).await?;

        self.clear_runs().await?;
        self.prepare(workload, "API").await?;
        let http = Arc::new(Http::new(self, n)?);
        self.check_one_run(&label, &http, api_table).await?;
        let api_label = format!("{label} · API");
        let before = self.meter.read(gateway.pid);
        let client = Arc::clone(&http);
        let api = drive(&api_label, n, timing, move |op| {
            let http = Arc::clone(&client);
            async move { http.run(op.seq).await }
        })
        .await?;
        let api_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        let rss_mb = sys::peak_rss_mb(gateway.pid).ok();
        super::print_run(&api_label, &api, &api_cpu);
        self.check_written(&api_label, api_table, api.ops()).await?;

        self.clear_runs().await?;
        let (raw, raw_cpu) = raw_run(self, workload, &gateway, raw_table).await?;
        self.check_written(&format!("{label} · raw SQL"), raw_table, raw.ops()).await?;
        gateway.stop().await?;
        Ok(Outcome { workload, api, raw, rss_mb, api_cpu, raw_cpu, facts: None, open: None })
    }

    /// `gateway admin ... --json` with `args`: what it printed, or Err with its stderr.
    async fn admin_json(&self, args: &[&str]) -> Result<String> {
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
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// The two tables, defined with the admin CLI; their ids in the order of [`TABLES`].
    async fn apply_operation_tables(&self) -> Result<[Uuid; 2]> {
        let file = self.setup.gateway_log.with_file_name(format!("data-tables-{GROUP}.json"));
        fs::write(&file, serde_json::to_vec_pretty(&tables_definition())?)?;
        let (tenant, path) =
            (self.setup.tenant.to_string(), file.to_str().ok_or("the bench's directory is not UTF-8")?);
        let stdout = self.admin_json(&["admin", "data-table", "apply", "--tenant", &tenant, "--json", path]).await?;
        let applied: AppliedTables = last_object(&stdout)?;
        let id = |slug: &str| {
            applied
                .tables
                .iter()
                .find(|t| t.slug == slug)
                .map(|t| t.id)
                .ok_or_else(|| format!("`data-table apply` printed no table {slug}"))
        };
        let tables = [id(TABLES[0])?, id(TABLES[1])?];
        println!("xtask: data tables applied: {} {}, {} {}", TABLES[0], tables[0], TABLES[1], tables[1]);
        Ok(tables)
    }

    /// The operation, defined with the admin CLI, writing its records to `table`.
    async fn apply_operation(&self, table: Uuid) -> Result<()> {
        let file = self.setup.gateway_log.with_file_name(format!("operation-{OPERATION}.json"));
        fs::write(&file, serde_json::to_vec_pretty(&definition(table))?)?;
        let (tenant, path) =
            (self.setup.tenant.to_string(), file.to_str().ok_or("the bench's directory is not UTF-8")?);
        let stdout = self.admin_json(&["admin", "operation", "apply", "--tenant", &tenant, "--json", path]).await?;
        let applied: AppliedOperation = last_object(&stdout)?;
        println!(
            "xtask: operation applied: {} version {} ({}), from {}",
            applied.name,
            applied.version,
            applied.outcome,
            file.display()
        );
        if applied.name != OPERATION {
            return Err(format!("`operation apply` applied {:?}, not {OPERATION}", applied.name).into());
        }
        Ok(())
    }

    /// Waits until `data_indexes` says every index of `tables` is ready (the gateway's workers
    /// build them); a failed one is an error.
    async fn wait_for_table_indexes(&self, tables: &[Uuid]) -> Result<()> {
        let started = Instant::now();
        let ids: Vec<String> = tables.iter().map(Uuid::to_string).collect();
        loop {
            let rows = self
                .db
                .query(
                    "SELECT column_key, status, coalesce(error, '') FROM data_indexes \
                     WHERE table_id = ANY($1::text[]::uuid[]) ORDER BY column_key",
                    &[&ids],
                )
                .await?;
            let mut pending = Vec::new();
            for row in &rows {
                let (key, status, error): (String, String, String) = (row.get(0), row.get(1), row.get(2));
                match status.as_str() {
                    "ready" => {}
                    "failed" => return Err(format!("data_indexes: the index of {key} failed: {error}").into()),
                    _ => pending.push(format!("{key} {status}")),
                }
            }
            if pending.is_empty() {
                println!(
                    "xtask: the operation's tables have {} indexes, ready after {:.1} s",
                    rows.len(),
                    started.elapsed().as_secs_f64()
                );
                return Ok(());
            }
            if started.elapsed() > INDEX_WAIT {
                return Err(format!("indexes not ready after {INDEX_WAIT:?}: {}", pending.join(", ")).into());
            }
            tokio::time::sleep(INDEX_POLL).await;
        }
    }

    /// The tenant's leads (identities and timelines with them), `lead.*` events and operation
    /// runs deleted, then `VACUUM ANALYZE`: each side starts alike and makes the same people.
    async fn clear_runs(&self) -> Result<()> {
        let tenant = self.setup.tenant;
        self.db.batch_execute("BEGIN").await?;
        self.db.execute("DELETE FROM operation_runs WHERE tenant_id = $1", &[&tenant]).await?;
        self.db.execute("DELETE FROM leads WHERE tenant_id = $1", &[&tenant]).await?;
        self.db.execute("DELETE FROM events WHERE tenant_id = $1 AND name LIKE 'lead.%'", &[&tenant]).await?;
        self.db.batch_execute("COMMIT").await?;
        self.db
            .batch_execute("VACUUM ANALYZE operation_runs, leads, lead_identities, lead_activities, events, jobs")
            .await?;
        Ok(())
    }

    /// One run through the API, read whole before the clock starts: 201, `succeeded` with three
    /// `succeeded` steps, the lead `qualified`, the record in `table`.
    async fn check_one_run(&self, label: &str, http: &Http, table: Uuid) -> Result<()> {
        let (status, body) = http.post(CHECKED_PERSON).await?;
        let body = body.as_ref();
        if status != StatusCode::CREATED {
            return Err(format!("{label}: the first run answered {status}, not 201: {}", shown(body)).into());
        }
        let answer: Value = serde_json::from_slice(body)?;
        let run = answer.get("data").ok_or_else(|| format!("{label}: no data in {answer}"))?;
        let steps = run.get("steps").and_then(Value::as_array).cloned().unwrap_or_default();
        let statuses: Vec<&str> =
            steps.iter().map(|s| s.get("status").and_then(Value::as_str).unwrap_or("?")).collect();
        let ok = run.get("status").and_then(Value::as_str) == Some("succeeded")
            && statuses == ["succeeded", "succeeded", "succeeded"];
        if !ok {
            return Err(format!("{label}: the first run did not succeed with three steps: {run}").into());
        }
        let count = SUCCEEDED_PER_RUN;
        let found = body.windows(SUCCEEDED.len()).filter(|w| *w == SUCCEEDED).count();
        if found != count {
            return Err(format!("{label}: the answer holds {found} `\"status\":\"succeeded\"`, not {count}").into());
        }
        let (phone, _) = person(CHECKED_PERSON);
        let tenant = self.setup.tenant;
        let stage: Option<String> = self
            .db
            .query_opt("SELECT stage FROM leads WHERE tenant_id = $1 AND phone = $2", &[&tenant, &phone])
            .await?
            .map(|row| row.get(0));
        let record = run.pointer("/steps/2/result/id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let records: i64 = self
            .db
            .query_one(
                "SELECT count(*) FROM data_records WHERE table_id = $1::text::uuid AND id::text = $2",
                &[&table.to_string(), &record],
            )
            .await?
            .get(0);
        if stage.as_deref() != Some("qualified") || records != 1 {
            return Err(format!("{label}: after the first run the lead's stage is {stage:?}, records {records}").into());
        }
        let ms = |step: &Value| step.get("duration_ms").and_then(Value::as_i64).unwrap_or(-1);
        println!(
            "xtask: {label}: one run answered 201, succeeded in {} ms (steps {} / {} / {} ms), {} bytes; the lead \
             qualified, the record written",
            run.get("duration_ms").and_then(Value::as_i64).unwrap_or(-1),
            ms(&steps[0]),
            ms(&steps[1]),
            ms(&steps[2]),
            body.len()
        );
        Ok(())
    }

    /// Counts what a side wrote and fails unless every run succeeded and wrote its rows.
    async fn check_written(&self, label: &str, table: Uuid, ops: usize) -> Result<()> {
        let tenant = self.setup.tenant;
        let db = self.db;
        let row = db
            .query_one(
                "SELECT count(*) FILTER (WHERE status = 'succeeded'), count(*) FROM operation_runs \
                 WHERE tenant_id = $1 AND operation = $2",
                &[&tenant, &OPERATION],
            )
            .await?;
        let (succeeded, runs): (i64, i64) = (row.get(0), row.get(1));
        let row = db
            .query_one(
                "SELECT count(*) FILTER (WHERE stage = 'qualified'), count(*) FROM leads WHERE tenant_id = $1",
                &[&tenant],
            )
            .await?;
        let (qualified, leads): (i64, i64) = (row.get(0), row.get(1));
        let row = db
            .query_one(
                "SELECT count(*) FILTER (WHERE name = 'lead.created'), count(*) FILTER (WHERE name = \
                 'lead.stage_changed') FROM events WHERE tenant_id = $1 AND name LIKE 'lead.%'",
                &[&tenant],
            )
            .await?;
        let (created_events, stage_events): (i64, i64) = (row.get(0), row.get(1));
        // every run so far wrote one; the table is the side's own
        let records: i64 = db
            .query_one(
                "SELECT count(*) FROM data_records WHERE table_id = $1::text::uuid AND deleted_at IS NULL",
                &[&table.to_string()],
            )
            .await?
            .get(0);
        let recover_jobs: i64 = db
            .query_one(
                "SELECT count(*) FROM jobs WHERE name = 'operations.recover' AND tenant_id = $1 AND state = 'queued'",
                &[&tenant],
            )
            .await?
            .get(0);
        println!(
            "xtask: {label}: {runs} runs ({succeeded} succeeded), {leads} leads ({qualified} qualified), \
             {created_events} lead.created and {stage_events} lead.stage_changed events, {records} records in the \
             side's table (all runs of the bench), {recover_jobs} operations.recover jobs queued"
        );
        let alike = succeeded == runs
            && qualified == leads
            && leads == runs
            && created_events == runs
            && stage_events == runs
            && records >= runs
            && usize::try_from(runs)? >= ops;
        if !alike {
            return Err(
                format!("{label}: ***** the runs did not all write what they must ({ops} timed runs) *****").into()
            );
        }
        if recover_jobs != runs {
            println!("xtask: {label}: note: {recover_jobs} recovery jobs queued for {runs} runs");
        }
        Ok(())
    }
}

/// The HTTP side: one client to 127.0.0.1, kept-alive connections, the body read whole.
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
            url: format!("http://{}/api/v3/operations/{OPERATION}/runs", run.setup.addr),
            authorization: format!("Bearer {}", run.setup.key),
        })
    }

    /// `POST /operations/{name}/runs` `{"input": {"phone", "name"}}` for person `n`.
    async fn post(&self, n: u64) -> reqwest::Result<(StatusCode, impl AsRef<[u8]> + use<>)> {
        let (phone, name) = person(n);
        let body = format!(r#"{{"input":{{"phone":"{phone}","name":"{name}"}}}}"#);
        let response = self
            .client
            .post(&self.url)
            .header("authorization", &self.authorization)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await?;
        let status = response.status();
        Ok((status, response.bytes().await?))
    }

    /// The measured call: Err unless 201 with the run and its three steps `succeeded`.
    async fn run(&self, n: u64) -> OpResult {
        let (status, body) = self.post(n).await?;
        let body = body.as_ref();
        let found = body.windows(SUCCEEDED.len()).filter(|w| *w == SUCCEEDED).count();
        if status != StatusCode::CREATED || found != SUCCEEDED_PER_RUN {
            return Err(
                format!("expected 201 with a succeeded run of three steps, got {status}: {}", shown(body)).into()
            );
        }
        Ok(())
    }
}

fn shown(body: &[u8]) -> String {
    String::from_utf8_lossy(body).chars().take(600).collect()
}

/// `operations::run::find`.
const FIND: &str = "SELECT version, definition FROM operations WHERE tenant_id = $1 AND name = $2";
/// The run, `running`, as `start` writes it.
const RUN_INSERT: &str = "INSERT INTO operation_runs (id, tenant_id, operation, version, status, input, steps, \
    created_by, idempotency_key, fingerprint, started_at) \
    VALUES ($1::text::uuid, $2, $3, $4, 'running', $5::text::jsonb, '[]', $6::text::jsonb, NULL, $7, now()) \
    ON CONFLICT DO NOTHING";
/// Its recovery job, as `store::jobs::enqueue` writes it (due when `RECOVER_AFTER` has passed).
const RECOVER_JOB: &str = "INSERT INTO jobs (name, payload, tenant_id, dedupe_key, priority, run_at, max_attempts) \
    VALUES ('operations.recover', jsonb_build_object('run', $1::text), $2, NULL, 0, now() + interval '1 minute', 10) \
    ON CONFLICT (name, dedupe_key) WHERE dedupe_key IS NOT NULL AND state <> 'dead' DO NOTHING RETURNING id";
/// `record`: the steps so far, and at the end the outcome.
const RUN_RECORD: &str = "UPDATE operation_runs SET steps = $3::text::jsonb, status = coalesce($4::text, status), \
    error = coalesce($5::text::jsonb, error), finished_at = CASE WHEN $4::text IS NULL THEN NULL ELSE now() END \
    WHERE tenant_id = $1 AND id = $2::text::uuid AND status = 'running'";
/// `load_run`: the run as answered.
const RUN_LOAD: &str = "SELECT id, operation, version, status, input, steps, error, created_by, started_at, finished_at \
    FROM operation_runs WHERE tenant_id = $1 AND id = $2::text::uuid";
/// The upsert's lookup of the person by the E.164 digits.
const IDENTITY: &str =
    "SELECT lead_id::text FROM lead_identities WHERE tenant_id = $1 AND kind = 'phone' AND value = $2";
/// The new lead with the columns `leads::upsert` writes for a name and a phone.
const LEAD_INSERT: &str = "INSERT INTO leads AS l (id, tenant_id, name, phone, stage, currency, created_by_kind, \
    created_by_id, last_activity_at, sources, custom_fields, created_at, updated_at) \
    VALUES ($1::text::uuid, $2, $3, $4, 'new', $5, 'api', $6, now(), \
    jsonb_build_array(jsonb_build_object('kind', 'api', 'id', NULL, 'channel', NULL, 'at', now())), '{}', now(), now()) \
    RETURNING to_jsonb(l)::text";
const IDENTITY_INSERT: &str = "INSERT INTO lead_identities (tenant_id, kind, value, lead_id, created_at) \
    VALUES ($1, 'phone', $2, $3::text::uuid, now()) ON CONFLICT DO NOTHING";
const ACTIVITY: &str = "INSERT INTO lead_activities (tenant_id, lead_id, kind, details, reason, actor_kind, actor_id, \
    source_kind, source_id, created_at) VALUES ($1, $2::text::uuid, $3, $4::text::jsonb, NULL, 'api', $5, 'api', NULL, now())";
const EVENT: &str = "INSERT INTO events (id, tenant_id, name, payload, occurred_at) \
    VALUES (gen_random_uuid(), $1, $2, $3::text::jsonb, now())";
/// `set_stage`: the lead locked, moved, returned.
const LEAD_LOCK: &str = "SELECT stage FROM leads WHERE tenant_id = $1 AND id = $2::text::uuid FOR UPDATE";
const LEAD_STAGE: &str = "UPDATE leads AS l SET stage = 'qualified', closed_at = NULL, lost_reason = NULL, \
    updated_at = now(), last_activity_at = now() WHERE tenant_id = $1 AND id = $2::text::uuid RETURNING to_jsonb(l)::text";
/// The record, its unique keys (none: the table has no unique column) and its `created`
/// history row in one statement, as `create_record` writes them.
const RECORD_INSERT: &str = "WITH r AS ( \
        INSERT INTO data_records (id, tenant_id, table_id, data, source, created_at, updated_at) \
        VALUES ($1::text::uuid, $2, $3::text::uuid, $4::text::jsonb, 'api', now(), now()) \
        RETURNING id, data, source, created_at, updated_at), \
    k AS ( \
        INSERT INTO data_record_keys (tenant_id, table_id, name, value, record_id) \
        SELECT $2, $3::text::uuid, u.name, u.value, r.id FROM r, unnest($5::text[], $6::text[]) AS u (name, value)), \
    h AS ( \
        INSERT INTO data_record_history (tenant_id, table_id, record_id, action, changes, source, actor, at) \
        SELECT $2, $3::text::uuid, r.id, 'created', \
            (SELECT coalesce(jsonb_object_agg(e.key, jsonb_build_object('from', NULL, 'to', e.value)), '{}') \
             FROM jsonb_each(r.data) e), 'api', $7::text::jsonb, now() FROM r) \
    SELECT to_jsonb(r)::text FROM r";

struct Statements {
    auth: Statement,
    find: Statement,
    run_insert: Statement,
    recover_job: Statement,
    run_record: Statement,
    run_load: Statement,
    identity: Statement,
    lead_insert: Statement,
    identity_insert: Statement,
    activity: Statement,
    event: Statement,
    lead_lock: Statement,
    lead_stage: Statement,
    record_insert: Statement,
}

impl Statements {
    async fn prepare(client: &Client) -> Result<Self> {
        Ok(Self {
            auth: client.prepare(sql::AUTH).await?,
            find: client.prepare(FIND).await?,
            run_insert: client.prepare(RUN_INSERT).await?,
            recover_job: client.prepare(RECOVER_JOB).await?,
            run_record: client.prepare(RUN_RECORD).await?,
            run_load: client.prepare(RUN_LOAD).await?,
            identity: client.prepare(IDENTITY).await?,
            lead_insert: client.prepare(LEAD_INSERT).await?,
            identity_insert: client.prepare(IDENTITY_INSERT).await?,
            activity: client.prepare(ACTIVITY).await?,
            event: client.prepare(EVENT).await?,
            lead_lock: client.prepare(LEAD_LOCK).await?,
            lead_stage: client.prepare(LEAD_STAGE).await?,
            record_insert: client.prepare(RECORD_INSERT).await?,
        })
    }
}

/// Who runs, as the rows name them: read once from the key (the service reads the tenant per
/// lead, and has the key's issuer from its authentication).
struct Who {
    tenant: i64,
    key_hash: Vec<u8>,
    /// The issuer (a user id), who creates the leads.
    user: Option<i64>,
    currency: String,
    /// The run's `created_by`, the lead events' `actor` and the record history's `actor`.
    run_by: String,
    lead_actor: Value,
    record_actor: String,
    /// The raw side's table.
    table: String,
}

impl Who {
    async fn read(run: &Run<'_>, table: Uuid) -> Result<Self> {
        let row = run
            .db
            .query_one(
                "SELECT k.id, k.name, k.user_id, u.name, t.currency FROM api_keys k JOIN tenants t ON t.id = k.tenant_id \
                 LEFT JOIN users u ON u.id = k.user_id WHERE k.key_hash = $1",
                &[&run.key_hash],
            )
            .await?;
        let (key, key_name, user, user_name, currency): (i64, String, Option<i64>, Option<String>, String) =
            (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
        Ok(Self {
            tenant: run.setup.tenant,
            key_hash: run.key_hash.to_vec(),
            user,
            currency,
            run_by: json!({"kind": "api_key", "key_id": key, "user_id": user, "label": key_name}).to_string(),
            lead_actor: json!({"kind": "api", "id": user, "label": user_name.unwrap_or_else(|| "API key".into())}),
            record_actor: json!({"kind": "api_key", "id": key, "name": key_name, "user_id": user}).to_string(),
            table: table.to_string(),
        })
    }
}

/// A step as the run records it (`StepRecord`).
struct Step {
    id: &'static str,
    action: &'static str,
    started_at: String,
    finished_at: Option<String>,
    duration_ms: Option<i64>,
    result: Option<Value>,
    compensation: Option<Value>,
}

impl Step {
    fn start(id: &'static str, action: &'static str) -> (Self, std::time::Instant) {
        let step = Self {
            id,
            action,
            started_at: now(),
            finished_at: None,
            duration_ms: None,
            result: None,
            compensation: None,
        };
        (step, std::time::Instant::now())
    }

    fn finish(&mut self, started: std::time::Instant, result: Value, compensation: Value) {
        self.finished_at = Some(now());
        self.duration_ms = Some(started.elapsed().as_millis() as i64);
        self.result = Some(result);
        self.compensation = Some(compensation);
    }

    fn json(&self) -> Value {
        let status = if self.result.is_some() { "succeeded" } else { "running" };
        json!({
            "id": self.id, "action": self.action, "status": status, "started_at": self.started_at,
            "finished_at": self.finished_at, "duration_ms": self.duration_ms, "result": self.result, "error": null,
            "compensation": self.compensation, "compensated_at": null, "compensation_error": null
        })
    }
}

fn now() -> String {
    OffsetDateTime::now_utc().format(&Rfc3339).unwrap_or_default()
}

fn steps_json(steps: &[Step]) -> String {
    Value::Array(steps.iter().map(Step::json).collect()).to_string()
}

/// A lead event's payload (`leads::timeline::payload`): the lead, the changes, the actor.
fn lead_event(lead: &Value, changes: Option<&Value>, actor: &Value) -> String {
    let mut payload = Map::new();
    payload.insert("lead".into(), lead.clone());
    if let Some(changes) = changes {
        payload.insert("changes".into(), changes.clone());
    }
    payload.insert("reason".into(), Value::Null);
    payload.insert("actor".into(), actor.clone());
    payload.insert("source".into(), json!({"kind": "api", "id": null, "channel": null}));
    Value::Object(payload).to_string()
}

/// One connection per load task, every statement prepared on each.
struct RawDb {
    conns: Vec<(Client, Statements)>,
    who: Who,
    version: i32,
}

impl RawDb {
    async fn open(run: &Run<'_>, connections: usize, table: Uuid) -> Result<Self> {
        let mut conns = Vec::with_capacity(connections);
        for _ in 0..connections {
            let client = sql::connect(&run.setup.database_url).await?;
            let statements = Statements::prepare(&client).await?;
            conns.push((client, statements));
        }
        let who = Who::read(run, table).await?;
        let version: i32 = run.db.query_one(FIND, &[&run.setup.tenant, &OPERATION]).await?.get(0);
        Ok(Self { conns, who, version })
    }

    /// `statements` in a transaction: COMMIT when they succeed, ROLLBACK when not.
    async fn transaction<T>(
        client: &Client,
        work: impl std::future::Future<Output = std::result::Result<T, super::load::OpError>>,
    ) -> std::result::Result<T, super::load::OpError> {
        client.batch_execute("BEGIN").await?;
        match work.await {
            Ok(value) => {
                client.batch_execute("COMMIT").await?;
                Ok(value)
            }
            Err(error) => {
                client.batch_execute("ROLLBACK").await?;
                Err(error)
            }
        }
    }

    /// Run `n`: what `POST /operations/{name}/runs` writes (see [`RAW_RUN`]).
    async fn run(&self, worker: usize, n: u64) -> OpResult {
        let (client, st) = &self.conns[worker];
        let who = &self.who;
        let tenant = &who.tenant;
        client.query_one(&st.auth, &[&who.key_hash]).await?;
        let version: i32 = client.query_one(&st.find, &[tenant, &OPERATION]).await?.get(0);
        if version != self.version {
            return Err(format!("the operation is at version {version}, not {}", self.version).into());
        }
        let (phone, name) = person(n);
        let digits = &phone[1..];
        let input = input(n).to_string();
        let fingerprint = hex::encode(ring::digest::digest(&ring::digest::SHA256, input.as_bytes()));
        let id = Uuid::now_v7().to_string();

        Self::transaction(client, async {
            let params: [&(dyn ToSql + Sync); 7] =
                [&id, tenant, &OPERATION, &version, &input, &who.run_by, &fingerprint];
            if client.execute(&st.run_insert, &params).await? != 1 {
                return Err(format!("run {id} exists already").into());
            }
            client.query_one(&st.recover_job, &[&id, tenant]).await?;
            Ok(())
        })
        .await?;

        let none: Option<&str> = None;
        let mut steps = Vec::with_capacity(3);
        let record = async |steps: &[Step], status: Option<&str>| -> OpResult {
            let params: [&(dyn ToSql + Sync); 5] = [tenant, &id, &steps_json(steps), &status, &none];
            if client.execute(&st.run_record, &params).await? != 1 {
                return Err(format!("run {id} is no longer running").into());
            }
            Ok(())
        };

        // the lead
        let (step, started) = Step::start("lead", "create_lead");
        steps.push(step);
        record(&steps, None).await?;
        let lead_id = Uuid::new_v4().to_string();
        let lead: Value = Self::transaction(client, async {
            if client.query_opt(&st.identity, &[tenant, &digits]).await?.is_some() {
                return Err(format!("a lead has the phone {phone} already").into());
            }
            let params: [&(dyn ToSql + Sync); 6] = [&lead_id, tenant, &name, &phone, &who.currency, &who.user];
            let lead: String = client.query_one(&st.lead_insert, &params).await?.get(0);
            let mut lead: Value = serde_json::from_str(&lead)?;
            client.execute(&st.identity_insert, &[tenant, &digits, &lead_id]).await?;
            let payload = lead_event(&lead, None, &who.lead_actor);
            client.execute(&st.event, &[tenant, &"lead.created", &payload]).await?;
            let params: [&(dyn ToSql + Sync); 5] = [tenant, &lead_id, &"created", &"{}", &who.user];
            client.execute(&st.activity, &params).await?;
            lead["created"] = Value::Bool(true);
            Ok(lead)
        })
        .await?;
        steps[0].finish(started, lead, json!({"action": "delete_lead", "lead": lead_id}));

        // the stage
        let (step, started) = Step::start("stage", "set_lead_stage");
        steps.push(step);
        record(&steps, None).await?;
        let changes = json!({"stage": {"from": "new", "to": "qualified"}});
        let moved: Value = Self::transaction(client, async {
            let stage: String = client.query_one(&st.lead_lock, &[tenant, &lead_id]).await?.get(0);
            if stage != "new" {
                return Err(format!("lead {lead_id} is {stage}, not new").into());
            }
            let lead: String = client.query_one(&st.lead_stage, &[tenant, &lead_id]).await?.get(0);
            let lead: Value = serde_json::from_str(&lead)?;
            let details = changes.to_string();
            let params: [&(dyn ToSql + Sync); 5] = [tenant, &lead_id, &"stage_changed", &details, &who.user];
            client.execute(&st.activity, &params).await?;
            let payload = lead_event(&lead, Some(&changes), &who.lead_actor);
            client.execute(&st.event, &[tenant, &"lead.stage_changed", &payload]).await?;
            Ok(lead)
        })
        .await?;
        let undo = json!({"action": "restore_stage", "lead": lead_id, "stage": "new", "reason": null});
        steps[1].finish(started, moved, undo);

        // the record
        let (step, started) = Step::start("record", "write_record");
        steps.push(step);
        record(&steps, None).await?;
        let record_id = Uuid::now_v7().to_string();
        let data = json!({"name": name, "phone": phone}).to_string();
        let no_keys: Vec<String> = Vec::new();
        let params: [&(dyn ToSql + Sync); 7] =
            [&record_id, tenant, &who.table, &data, &no_keys, &no_keys, &who.record_actor];
        let written: String = client.query_one(&st.record_insert, &params).await?.get(0);
        let undo = json!({"action": "delete_record", "table": who.table, "record": record_id});
        steps[2].finish(started, serde_json::from_str(&written)?, undo);

        record(&steps, Some("succeeded")).await?;
        let run = client.query_one(&st.run_load, &[tenant, &id]).await?;
        let status: String = run.get(3);
        if status != "succeeded" {
            return Err(format!("run {id} is {status}").into());
        }
        Ok(())
    }
}

/// The raw side: 32 connections, every statement prepared on each.
async fn raw_run(
    run: &Run<'_>,
    workload: &'static Workload,
    gateway: &Gateway,
    table: Uuid,
) -> Result<(Measured, sys::CpuShare)> {
    run.prepare(workload, "raw SQL").await?;
    let label = format!("{}. {} · raw SQL", workload.number, workload.name);
    let db = Arc::new(RawDb::open(run, workload.connections, table).await?);
    // `db` keeps the connections, and so their backends' CPU time, until the meter has read it.
    let conns = Arc::clone(&db);
    let before = run.meter.read(gateway.pid);
    let measured = drive(&label, workload.connections, run.timing, move |op| {
        let db = Arc::clone(&conns);
        async move { db.run(op.worker, op.seq).await }
    })
    .await?;
    let cpu = run.meter.share(&before, &run.meter.read(gateway.pid));
    drop(db);
    super::print_run(&label, &measured, &cpu);
    Ok((measured, cpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_definition_names_its_inputs_and_the_lead() {
        let table = Uuid::nil();
        let d = definition(table);
        assert_eq!(d["steps"][1]["with"]["lead"], "{{steps.lead.id}}");
        assert_eq!(d["steps"][2]["with"]["table"], table.to_string());
        let (phone, name) = person(0);
        assert_eq!((phone.as_str(), name.as_str()), ("+255710000000", "Lead 0"));
        assert_eq!(input(0).to_string(), r#"{"name":"Lead 0","phone":"+255710000000"}"#);
    }

    #[test]
    fn a_step_is_running_until_it_has_a_result() {
        let (mut step, started) = Step::start("lead", "create_lead");
        assert_eq!(step.json()["status"], "running");
        step.finish(started, json!({"id": "x"}), json!({"action": "delete_lead", "lead": "x"}));
        assert_eq!(step.json()["status"], "succeeded");
        assert_eq!(steps_json(&[step]).matches("\"status\":\"succeeded\"").count(), 1);
    }
}
