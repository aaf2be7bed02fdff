//! The agent-tasks workload (issue 21): 23, sandbox runs of three tool steps each, submitted to
//! `POST /api/engine/tasks` and executed by the gateway's job workers (`agents.advance`), against
//! the same three tool calls made directly: MCP `tools/call` on `/mcp/v1/contacts`, the tools the
//! runs reach in process (workload 14's notion of a direct call).
//!
//! Each run's task is `{"instructions", "input": {"script": [...], "output"}, "tools"}` for the
//! scripted sandbox model (`providers::ModelSandbox`, the gateway's default): `get_lead` of one
//! lead, `set_lead_stage` of `{{results.0.id}}` to `contacted`, `add_lead_note` on
//! `{{results.1.id}}`; so a run is seven steps, four model turns (the last answers the script's
//! `output`) and three tool calls.
//!
//! One gateway (the service's defaults, its job workers included) serves both sides, the API side
//! first. Before each side the tenant's leads are replaced by workload 9's 10,000 preloaded ones
//! (by SQL) and its agent runs deleted; run (or sequence) `n` works on preloaded lead `n`, and
//! lead `runs` is the one checked before the clock starts: one run submitted, waited for and read
//! whole through `GET /api/engine/runs/{run_uuid}` (completed, seven steps completed, the
//! output; the lead `contacted` with its note), and on the direct side one sequence of the three
//! calls.
//!
//! API side: from the first submission until the database says every run is `completed` (read
//! every 50 ms), 32 connections submit the runs (each answer 202 with the run `queued`) while
//! the workers execute them; a run that ends otherwise, or a minute without a run completed,
//! fails the workload. Its rate is runs per second over that time; its latencies are the steps'
//! (`finished_at - started_at` of every `agent_steps` row, in microseconds: what the API's
//! `duration_ms` says in whole milliseconds), model turns and tool calls alike. Direct side: 32
//! connections make the three calls for each lead in turn, one after another; its rate is
//! sequences per second from the first call to the last answer, its latencies each call's.
//! After each side the bench counts what it wrote and fails unless every run completed with three
//! tool calls and every lead was moved and noted.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::load::{Measured, OpResult, drive_count};
use super::report::Outcome;
use super::{Gateway, Run, Workload, sql, sys};
use crate::Result;

/// Runs per side, and with `--quick`.
pub const RUNS: u64 = 1_000;
pub const QUICK_RUNS: u64 = 200;
/// Targets: the agent machinery (a job, four model turns, seven recorded and charged steps) may
/// cost up to three quarters of what the same calls cost made directly; a step under 100 ms.
pub const MIN_RATIO: f64 = 0.25;
pub const MAX_P99_MS: f64 = 100.0;

/// What the direct side runs per run.
pub const RAW_CALLS: &str = "not SQL: the same three tool calls made directly, MCP tools/call on /mcp/v1/contacts \
    (stateless, the bench's MCP connection, the same issuer): get_lead {lead}, set_lead_stage {lead, stage: \
    contacted}, add_lead_note {lead, body}, one after another per lead, 32 connections";

/// The tools a run may call, in the order it calls them.
const TOOLS: [&str; 3] = ["get_lead", "set_lead_stage", "add_lead_note"];
const STAGE: &str = "contacted";
const OUTPUT: &str = "Contacted and noted.";
/// Four model turns and three tool calls.
const STEPS_PER_RUN: i64 = 7;
/// How a submission answered 202 shows in its body.
const QUEUED: &[u8] = b"\"status\":\"queued\"";
const POLL: Duration = Duration::from_millis(50);
/// The longest a side may go without a run completed (or the check run take).
const STALL: Duration = Duration::from_secs(60);

fn note(n: u64) -> String {
    format!("Bench note {n}")
}

/// Run `n`'s task: the script of the three calls on `lead`.
fn task(lead: &str, n: u64) -> Value {
    json!({
        "instructions": "Follow the script.",
        "input": {
            "script": [
                {"tool": TOOLS[0], "arguments": {"lead": lead}},
                {"tool": TOOLS[1], "arguments": {"lead": "{{results.0.id}}", "stage": STAGE}},
                {"tool": TOOLS[2], "arguments": {"lead": "{{results.1.id}}", "body": note(n)}}
            ],
            "output": OUTPUT
        },
        "tools": TOOLS,
        "metadata": {"bench": "23"}
    })
}

/// The run of an answer (the run itself, or under `data`).
fn run_of(answer: &Value) -> &Value {
    answer.get("data").filter(|d| d.get("run_uuid").is_some()).unwrap_or(answer)
}

/// Nearest rank of `sorted` in ms (see [`Measured::percentile_ms`]).
fn ms(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1].as_secs_f64() * 1000.0
}

fn spread(label: &str, mut values: Vec<Duration>) -> String {
    values.sort_unstable();
    format!(
        "{label} p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        ms(&values, 50.0),
        ms(&values, 99.0),
        ms(&values, 100.0)
    )
}

fn micros(us: i64) -> Duration {
    Duration::from_micros(u64::try_from(us).unwrap_or(0))
}

impl Run<'_> {
    /// Workload 23 (see the module's documentation).
    pub(super) async fn agent_runs(&self, workload: &'static Workload) -> Result<Outcome> {
        let label = format!("{}. {}", workload.number, workload.name);
        let (n, runs) = (workload.connections, self.setup.agent_runs);
        let gateway = Gateway::start(self.setup, workload.limiter(), self.api).await?;
        let http = Arc::new(Http::new(self, n)?);

        let leads = Arc::new(self.agent_side_leads(workload, "API", runs).await?);
        self.check_one_agent_run(&label, &http, &leads[runs as usize], runs).await?;
        self.db.execute("DELETE FROM agent_runs WHERE tenant_id = $1", &[&self.setup.tenant]).await?;
        let api_label = format!("{label} · API");
        let before = self.meter.read(gateway.pid);
        let started = Instant::now();
        let (client, ids) = (Arc::clone(&http), Arc::clone(&leads));
        let submitted = drive_count(&format!("{api_label}: submit"), n, runs, move |op| {
            let (http, ids) = (Arc::clone(&client), Arc::clone(&ids));
            async move { http.submit(&ids[op.seq as usize], op.seq).await }
        })
        .await?;
        let submitted_after = started.elapsed();
        let done_after = self.wait_for_agent_runs(&api_label, runs, started).await?;
        let api_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        let rss_mb = sys::peak_rss_mb(gateway.pid).ok();
        println!(
            "xtask: {api_label}: {runs} runs submitted in {:.2} s (202: p50 {:.1} ms, p99 {:.1} ms), all completed \
             after {:.2} s",
            submitted_after.as_secs_f64(),
            submitted.percentile_ms(50.0),
            submitted.percentile_ms(99.0),
            done_after.as_secs_f64()
        );
        let steps = self.agent_step_times().await?;
        let api = Measured::of(steps, done_after.as_secs_f64(), runs);
        super::print_run(&api_label, &api, &api_cpu);
        self.check_agent_side(&api_label, runs, true).await?;

        let leads = Arc::new(self.agent_side_leads(workload, "direct", runs).await?);
        let raw_label = format!("{label} · direct MCP calls");
        self.check_direct_calls(&raw_label, &leads[runs as usize], runs).await?;
        let calls = Arc::new(Mutex::new(Vec::with_capacity(3 * runs as usize)));
        let before = self.meter.read(gateway.pid);
        let started = Instant::now();
        let (api_client, ids, times) = (Arc::clone(self.api), Arc::clone(&leads), Arc::clone(&calls));
        drive_count(&raw_label, n, runs, move |op| {
            let (api, ids, times) = (Arc::clone(&api_client), Arc::clone(&ids), Arc::clone(&times));
            async move { direct(&api, &ids[op.seq as usize], op.seq, &times).await }
        })
        .await?;
        let seconds = started.elapsed().as_secs_f64();
        let raw_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        let calls = std::mem::take(&mut *calls.lock().map_err(|_| "a load task panicked")?);
        let raw = Measured::of(calls, seconds, runs);
        super::print_run(&raw_label, &raw, &raw_cpu);
        self.check_agent_side(&raw_label, runs, false).await?;
        gateway.stop().await?;
        Ok(Outcome { workload, api, raw, rss_mb, api_cpu, raw_cpu, facts: None, open: None })
    }

    /// Before a side: the queue and the rate-limit log emptied (`prepare`), the tenant's leads
    /// replaced by the 10,000 preloaded ones and its agent runs deleted; the ids of the first
    /// `runs + 1` leads.
    async fn agent_side_leads(&self, workload: &Workload, side: &str, runs: u64) -> Result<Vec<String>> {
        self.prepare(workload, side).await?;
        let tenant = self.setup.tenant;
        self.db.execute("DELETE FROM agent_runs WHERE tenant_id = $1", &[&tenant]).await?;
        sql::preload_leads(self.db, tenant, self.key_hash).await?;
        self.db.batch_execute("VACUUM ANALYZE agent_runs, agent_steps, jobs").await?;
        let limit = i64::try_from(runs + 1)?;
        let query = "SELECT id::text FROM leads WHERE tenant_id = $1 ORDER BY id LIMIT $2";
        let ids: Vec<String> = self.db.query(query, &[&tenant, &limit]).await?.iter().map(|r| r.get(0)).collect();
        if ids.len() as u64 != runs + 1 {
            return Err(format!("{} preloaded leads, not the {} the workload needs", ids.len(), runs + 1).into());
        }
        Ok(ids)
    }

    /// One run before the clock starts, waited for and read whole: completed after seven steps
    /// completed, with the script's output; its lead `contacted` with the note.
    async fn check_one_agent_run(&self, label: &str, http: &Http, lead: &str, n: u64) -> Result<()> {
        let started = Instant::now();
        let answer = http.submit_read(lead, n).await?;
        let id = run_of(&answer).get("run_uuid").and_then(Value::as_str).map(str::to_owned);
        let id = id.ok_or_else(|| format!("{label}: no run_uuid in the submission's answer {answer}"))?;
        let run = loop {
            let answer = http.read_run(&id).await?;
            let run = run_of(&answer).clone();
            match run.get("status").and_then(Value::as_str) {
                Some("queued" | "running") if started.elapsed() < STALL => tokio::time::sleep(POLL).await,
                _ => break run,
            }
        };
        let elapsed = started.elapsed();
        let steps = run.get("steps").and_then(Value::as_array).cloned().unwrap_or_default();
        let field = |step: &Value, name: &str| step.get(name).and_then(Value::as_str).unwrap_or("?").to_owned();
        let shown: Vec<String> = steps
            .iter()
            .map(|s| {
                let took = s.get("duration_ms").and_then(Value::as_i64).unwrap_or(-1);
                format!("{} {} {took} ms", field(s, "type"), field(s, "name"))
            })
            .collect();
        let ok = run.get("status").and_then(Value::as_str) == Some("completed")
            && run.get("output").and_then(Value::as_str) == Some(OUTPUT)
            && steps.len() as i64 == STEPS_PER_RUN
            && steps.iter().all(|s| field(s, "status") == "completed")
            && run.pointer("/usage/tool_calls").and_then(Value::as_i64) == Some(3);
        if !ok {
            return Err(format!("{label}: the first run did not complete with seven steps: {run}").into());
        }
        self.check_lead(label, lead, n).await?;
        println!(
            "xtask: {label}: one run completed {:.0} ms after its submission, cost {} minor units; steps: {}",
            elapsed.as_secs_f64() * 1000.0,
            run.pointer("/usage/cost_minor").and_then(Value::as_i64).unwrap_or(-1),
            shown.join(", ")
        );
        Ok(())
    }

    /// The three calls once, before the clock starts, and the lead checked.
    async fn check_direct_calls(&self, label: &str, lead: &str, n: u64) -> Result<()> {
        let times = Mutex::new(Vec::new());
        direct(self.api, lead, n, &times).await.map_err(|e| format!("{label}: the first calls: {e}"))?;
        self.check_lead(label, lead, n).await
    }

    /// Lead `lead` is `contacted` and carries note `n`.
    async fn check_lead(&self, label: &str, lead: &str, n: u64) -> Result<()> {
        let tenant = self.setup.tenant;
        let stage: String = self
            .db
            .query_one("SELECT stage FROM leads WHERE tenant_id = $1 AND id = $2::text::uuid", &[&tenant, &lead])
            .await?
            .get(0);
        let notes: i64 = self
            .db
            .query_one(
                "SELECT count(*) FROM lead_activities WHERE tenant_id = $1 AND lead_id = $2::text::uuid \
                 AND kind = 'note_added' AND details->'note'->>'body' = $3",
                &[&tenant, &lead, &note(n)],
            )
            .await?
            .get(0);
        if stage != STAGE || notes != 1 {
            return Err(format!("{label}: lead {lead} is {stage} with {notes} notes, not {STAGE} with its note").into());
        }
        Ok(())
    }

    /// Reads the runs' statuses every [`POLL`] until `runs` are completed: the time from
    /// `started`. A run that ended otherwise, or [`STALL`] without one completed, is an error.
    async fn wait_for_agent_runs(&self, label: &str, runs: u64, started: Instant) -> Result<Duration> {
        let bar = ProgressBar::new(runs).with_message(format!("{label}: completed"));
        bar.set_style(
            ProgressStyle::with_template("{msg:<44} [{bar:30}] {pos}/{len} ({per_sec})")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        let tenant = self.setup.tenant;
        let (mut last, mut moved) = (0, Instant::now());
        loop {
            let row = self
                .db
                .query_one(
                    "SELECT count(*) FILTER (WHERE status = 'completed'), \
                     count(*) FILTER (WHERE status NOT IN ('queued', 'running', 'completed')) \
                     FROM agent_runs WHERE tenant_id = $1",
                    &[&tenant],
                )
                .await?;
            let (completed, other): (i64, i64) = (row.get(0), row.get(1));
            let elapsed = started.elapsed();
            bar.set_position(u64::try_from(completed)?);
            if other > 0 {
                bar.abandon();
                let failed = self
                    .db
                    .query_one(
                        "SELECT id::text, status, coalesce(error::text, '') FROM agent_runs \
                         WHERE tenant_id = $1 AND status NOT IN ('queued', 'running', 'completed') LIMIT 1",
                        &[&tenant],
                    )
                    .await?;
                let (id, status, error): (String, String, String) = (failed.get(0), failed.get(1), failed.get(2));
                return Err(format!("{label}: {other} run(s) did not complete; run {id} is {status}: {error}").into());
            }
            if u64::try_from(completed)? >= runs {
                bar.finish_and_clear();
                return Ok(elapsed);
            }
            if completed > last {
                (last, moved) = (completed, Instant::now());
            } else if moved.elapsed() > STALL {
                bar.abandon();
                return Err(format!("{label}: no run completed for {STALL:?} ({completed} of {runs})").into());
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Every step's time (`finished_at - started_at`), and the runs' spread printed: the wait
    /// for a worker, the run's own time, and what it spent outside its steps.
    async fn agent_step_times(&self) -> Result<Vec<Duration>> {
        let tenant = self.setup.tenant;
        let rows = self
            .db
            .query(
                "SELECT kind, (extract(epoch FROM finished_at - started_at) * 1e6)::bigint FROM agent_steps \
                 WHERE tenant_id = $1 AND finished_at IS NOT NULL",
                &[&tenant],
            )
            .await?;
        let (mut turns, mut calls) = (Vec::new(), Vec::new());
        for row in &rows {
            let (kind, us): (String, i64) = (row.get(0), row.get(1));
            if kind == "model_turn" { turns.push(micros(us)) } else { calls.push(micros(us)) }
        }
        let rows = self
            .db
            .query(
                "SELECT (extract(epoch FROM r.started_at - r.created_at) * 1e6)::bigint, \
                 (extract(epoch FROM r.finished_at - r.started_at) * 1e6)::bigint, \
                 (extract(epoch FROM r.finished_at - r.started_at) * 1e6)::bigint - \
                 (SELECT coalesce(sum((extract(epoch FROM s.finished_at - s.started_at) * 1e6)::bigint), 0) \
                  FROM agent_steps s WHERE s.tenant_id = r.tenant_id AND s.run_id = r.id)::bigint \
                 FROM agent_runs r WHERE tenant_id = $1 AND finished_at IS NOT NULL",
                &[&tenant],
            )
            .await?;
        let (mut waits, mut walls, mut between) = (Vec::new(), Vec::new(), Vec::new());
        for row in &rows {
            let (wait, wall, gaps): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
            waits.push(micros(wait));
            walls.push(micros(wall));
            between.push(micros(gaps));
        }
        println!(
            "xtask: steps: {}; {}\nxtask: runs: {}; {}; {}",
            spread(&format!("{} model turns", turns.len()), turns.clone()),
            spread(&format!("{} tool calls", calls.len()), calls.clone()),
            spread("queued until started", waits),
            spread("started until finished", walls),
            spread("of which outside any step", between),
        );
        Ok(turns.into_iter().chain(calls).collect())
    }

    /// What a side wrote: (API side) every run completed with its seven steps, three of them
    /// tool calls; (both) every lead of the side `contacted` with its note, and their events.
    async fn check_agent_side(&self, label: &str, runs: u64, agents: bool) -> Result<()> {
        let tenant = self.setup.tenant;
        let db = self.db;
        let runs_i = i64::try_from(runs)?;
        let mut alike = true;
        if agents {
            let row = db
                .query_one(
                    "SELECT count(*), count(*) FILTER (WHERE status = 'completed' AND tool_calls = 3 AND output = $2), \
                     coalesce(sum(cost_minor), 0)::bigint FROM agent_runs WHERE tenant_id = $1",
                    &[&tenant, &OUTPUT],
                )
                .await?;
            let (all, completed, cost): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
            let row = db
                .query_one(
                    "SELECT count(*), count(*) FILTER (WHERE status = 'completed' AND kind = 'tool_call'), \
                     count(*) FILTER (WHERE status = 'completed' AND kind = 'model_turn') \
                     FROM agent_steps WHERE tenant_id = $1",
                    &[&tenant],
                )
                .await?;
            let (steps, calls, turns): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
            println!(
                "xtask: {label}: {all} runs ({completed} completed with three tool calls and the output), {steps} \
                 steps ({calls} tool calls and {turns} model turns completed), {cost} minor units charged"
            );
            alike &= all == runs_i
                && completed == runs_i
                && steps == runs_i * STEPS_PER_RUN
                && calls == runs_i * 3
                && turns == runs_i * 4;
        }
        // the lead checked before the clock included
        let row = db
            .query_one(
                "SELECT count(*) FILTER (WHERE stage = $2), \
                 (SELECT count(*) FROM lead_activities a WHERE a.tenant_id = $1 AND a.kind = 'note_added'), \
                 (SELECT count(*) FROM events e WHERE e.tenant_id = $1 AND e.name = 'lead.note_added'), \
                 (SELECT count(*) FROM events e WHERE e.tenant_id = $1 AND e.name = 'lead.stage_changed') \
                 FROM leads WHERE tenant_id = $1",
                &[&tenant, &STAGE],
            )
            .await?;
        let (moved, notes, note_events, stage_events): (i64, i64, i64, i64) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        println!(
            "xtask: {label}: {moved} leads {STAGE}, {notes} notes, {stage_events} lead.stage_changed and \
             {note_events} lead.note_added events (the lead checked before the clock included)"
        );
        let want = runs_i + 1;
        alike &= moved == want && notes == want && note_events == want && stage_events == want;
        if !alike {
            return Err(format!("{label}: ***** the side did not write what its {runs} runs must *****").into());
        }
        Ok(())
    }
}

/// The three calls on `lead`, one after another, each timed into `times`.
async fn direct(api: &super::api::Api, lead: &str, n: u64, times: &Mutex<Vec<Duration>>) -> OpResult {
    let calls = [json!({"lead": lead}), json!({"lead": lead, "stage": STAGE}), json!({"lead": lead, "body": note(n)})];
    let mut took = [Duration::ZERO; 3];
    for ((tool, arguments), took) in TOOLS.iter().zip(calls).zip(&mut took) {
        let began = Instant::now();
        api.mcp_tool(tool, arguments).await?;
        *took = began.elapsed();
    }
    times.lock().map_err(|_| "a load task panicked")?.extend(took);
    Ok(())
}

/// The API side's client: one reqwest client to 127.0.0.1, kept-alive connections.
struct Http {
    client: reqwest::Client,
    base: String,
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
            base: format!("http://{}/api/engine", run.setup.addr),
            authorization: format!("Bearer {}", run.setup.key),
        })
    }

    async fn post(&self, lead: &str, n: u64) -> reqwest::Result<(StatusCode, impl AsRef<[u8]> + use<>)> {
        let response = self
            .client
            .post(format!("{}/tasks", self.base))
            .header("authorization", &self.authorization)
            .json(&task(lead, n))
            .send()
            .await?;
        let status = response.status();
        Ok((status, response.bytes().await?))
    }

    /// The measured submission: Err unless 202 with the run `queued` (the body searched, not parsed).
    async fn submit(&self, lead: &str, n: u64) -> OpResult {
        let (status, body) = self.post(lead, n).await?;
        let body = body.as_ref();
        if status != StatusCode::ACCEPTED || !body.windows(QUEUED.len()).any(|w| w == QUEUED) {
            let shown: String = String::from_utf8_lossy(body).chars().take(300).collect();
            return Err(format!("expected 202 with a queued run, got {status}: {shown}").into());
        }
        Ok(())
    }

    /// A submission read whole: Err unless 202.
    async fn submit_read(&self, lead: &str, n: u64) -> Result<Value> {
        let (status, body) = self.post(lead, n).await?;
        let answer: Value = serde_json::from_slice(body.as_ref())?;
        if status != StatusCode::ACCEPTED {
            return Err(format!("the first submission answered {status}, not 202: {answer}").into());
        }
        Ok(answer)
    }

    /// `GET /api/engine/runs/{run_uuid}`, read whole.
    async fn read_run(&self, id: &str) -> Result<Value> {
        let response = self
            .client
            .get(format!("{}/runs/{id}", self.base))
            .header("authorization", &self.authorization)
            .send()
            .await?;
        let status = response.status();
        let answer: Value = serde_json::from_slice(&response.bytes().await?)?;
        if status != StatusCode::OK {
            return Err(format!("GET /api/engine/runs/{id} answered {status}: {answer}").into());
        }
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_chains_the_lead_through_the_calls() {
        let t = task("l-1", 7);
        let script = &t["input"]["script"];
        assert_eq!(script[0]["arguments"]["lead"], "l-1");
        assert_eq!(script[1]["arguments"]["lead"], "{{results.0.id}}");
        assert_eq!(script[2]["arguments"]["lead"], "{{results.1.id}}");
        assert_eq!(script[2]["arguments"]["body"], "Bench note 7");
        assert_eq!(t["tools"], json!(TOOLS));
        assert_eq!(run_of(&json!({"data": {"run_uuid": "x"}}))["run_uuid"], "x");
        assert_eq!(run_of(&json!({"run_uuid": "y"}))["run_uuid"], "y");
    }
}
