//! The call campaign workload (24, issue 22): a group of callees loaded by SQL (as 7's), then one
//! `POST /api/v3/call-campaigns` timed until every callee has a call that reached the provider
//! (the in-process sandbox answered with its call id), against the same campaign, target, call
//! and job rows written by raw SQL in one transaction. One operation per side, so its rate is
//! calls per second dispatched.
//!
//! The contract caps a campaign at 600 calls a minute, and the service dispatches a minute's
//! calls per tick of `voice.dispatch_call_campaign`, each tick queuing the next one a minute
//! later. So that 10,000 callees do not take 17 real minutes, the bench skips the waiting
//! minutes: while it polls, it moves the campaign's queued next tick to now by SQL
//! ([`MOVE_TICK`]) and notifies the job workers, as the enqueue of a job due at once does. The
//! time measured is the service's dispatch and placing work, with up to one poll's wait
//! ([`POLL`]) between a tick's commit and the next tick's start; none of the minutes a real
//! campaign waits between ticks.
//!
//! The tenant's voice route is made with the admin CLI the first time a run needs it: a sandbox
//! voice channel ([`CHANNEL_CODE`]) with the caller number [`CALLER`] (the demo's), and a voice
//! rate of [`PRICE_MINOR`] per started minute (`gateway admin rate set --voice`); the setup's
//! wallet credit holds every minute of both sides many times over. The sandbox answers each call
//! after `SVC_SANDBOX_DELIVERY_DELAY_MS` (1 s by default) and its `voice.play_sandbox_call` jobs
//! play the calls out during the API side, as they would in production; the measurement ends
//! at "placed", not at the calls' ends.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tokio::time::Instant;
use tokio_postgres::{Client, Statement};

use super::load::Measured;
use super::report::{CallCampaignFacts, Facts, Outcome};
use super::{Gateway, Run, Workload, sql, sys};
use crate::Result;

/// The target of workload 24 (see its entry in [`super::WORKLOADS`]): ten campaigns at the
/// contract's top rate (600 calls a minute each) dispatched at once.
pub const MIN_CALLS_PER_SECOND: f64 = 100.0;
/// The campaign's rate: the contract's maximum.
pub const CALLS_PER_MINUTE: i32 = 600;
/// The tenant's sandbox voice channel and its caller number (the demo's number).
const CHANNEL_CODE: &str = "bench-voice";
const CALLER: &str = "+255222110000";
/// What one started minute costs the bench tenant (`gateway admin rate set --voice`).
const PRICE_MINOR: i64 = 1;
/// What every call says.
const MESSAGE: &str = "Hello from the bench. This is a test call.";

/// How often the API side moves the next tick and counts the placed calls.
const POLL: Duration = Duration::from_millis(100);
/// A campaign that places nothing for this long has stalled: the run fails.
const STALLED_AFTER: Duration = Duration::from_secs(60);
/// The longest a campaign may take before the run gives up.
const GIVE_UP_AFTER: Duration = Duration::from_secs(20 * 60);
/// Calls per placing job when the environment does not say (`SVC_SMS_SEND_CHUNK`, as the
/// gateway reads it for `write_calls`): the raw side writes its jobs in the same chunks.
const DEFAULT_SEND_CHUNK: i64 = 500;

/// The skipped minute: the campaign's queued next dispatch tick made due now.
const MOVE_TICK: &str = "UPDATE jobs SET run_at = now(), updated_at = now() \
                         WHERE name = 'voice.dispatch_call_campaign' AND state = 'queued' AND run_at > now()";
const PROGRESS: &str = "SELECT status, status_reason FROM call_campaigns WHERE id = $1";
/// The campaign's calls: written, placed (the provider's id), failed.
const CALLS: &str = "SELECT count(*), count(provider_call_id), count(*) FILTER (WHERE status = 'failed') \
                     FROM calls WHERE call_campaign_id = $1";
const FIRST_FAILURE: &str =
    "SELECT recipient, error FROM calls WHERE call_campaign_id = $1 AND status = 'failed' ORDER BY id LIMIT 1";
/// Afterwards: calls and distinct callees, and targets turned into calls.
const CHECK: &str = "SELECT (SELECT count(*) FROM calls WHERE call_campaign_id = $1), \
                     (SELECT count(DISTINCT recipient) FROM calls WHERE call_campaign_id = $1), \
                     (SELECT count(*) FROM call_campaign_targets WHERE campaign_id = $1 AND call_id IS NOT NULL)";

/// The campaign row `POST /call-campaigns` writes, running from the start (the first tick's
/// `set_status`), with the API side's plan and language.
const RAW_CAMPAIGN: &str = "INSERT INTO call_campaigns (uid, tenant_id, name, status, contact_group_id, plan, \
                            language, calls_per_minute, hours_start, hours_end, utc_offset_minutes, max_attempts, \
                            retry_minutes, token, created_at, updated_at, started_at) \
                            VALUES ('ccmp_' || replace(gen_random_uuid()::text, '-', ''), $1, $2, 'running', $3, \
                            $4::text::jsonb, $5, $6, 0, 1440, 0, 1, 30, gen_random_uuid(), now(), now(), now()) \
                            RETURNING id";
/// One target per callee with a number, opted-out numbers left out, due now (`write_targets`).
const RAW_TARGETS: &str = "INSERT INTO call_campaign_targets (tenant_id, campaign_id, contact_id, recipient, next_at) \
    SELECT c.tenant_id, $2, c.id, '+' || c.full_phone_number, now() \
    FROM contacts c \
    WHERE c.tenant_id = $1 AND c.group_id = $3 AND c.phone_number <> '' \
      AND NOT EXISTS (SELECT 1 FROM sms_blacklist b \
                      WHERE b.tenant_id = c.tenant_id AND b.number = '+' || c.full_phone_number) \
    ORDER BY c.id \
    ON CONFLICT DO NOTHING";
/// Every due target's call (as `write_calls` writes them: routed, priced, one minute held,
/// `queued`), the targets `calling` with their call, and the placing jobs in chunks, in one
/// statement: 17 dispatch ticks' work at once. The targets are marked first, each given its
/// call's id from the calls' own sequence, and the calls written from what that returns: a join
/// of the marked targets to the written calls (by recipient) was planned, on the targets' stale
/// statistics (written in the same transaction), as a nested loop over both, quadratic (1.7 s
/// for 2,000 callees against 0.2 s so).
pub const RAW_CALLS: &str = "WITH t AS ( \
    UPDATE call_campaign_targets t \
    SET status = 'calling', attempts = t.attempts + 1, call_id = nextval('calls_id_seq') \
    WHERE t.tenant_id = $1 AND t.campaign_id = $2 AND t.status = 'pending' AND t.next_at <= now() \
    RETURNING t.call_id, t.recipient, t.tenant_id, t.campaign_id), \
  c AS ( \
    INSERT INTO calls (id, uid, tenant_id, kind, channel_id, caller, recipient, status, plan, language, rate_minor, \
                       price_minor, metadata, scheduled_at, created_at, updated_at, call_campaign_id) \
    SELECT t.call_id, 'call_' || replace(gen_random_uuid()::text, '-', ''), t.tenant_id, 'message', $3, $4, \
           t.recipient, 'queued', $5::text::jsonb, $6, $7, $7, NULL, NULL, now(), now(), t.campaign_id \
    FROM t \
    RETURNING id, price_minor), \
  j AS ( \
    INSERT INTO jobs (name, payload, tenant_id, max_attempts) \
    SELECT 'voice.place_calls', jsonb_build_object('tenant_id', $1::bigint, 'ids', jsonb_agg(id ORDER BY id)), $1, 10 \
    FROM (SELECT id, (row_number() OVER (ORDER BY id) - 1) / $8 AS chunk FROM c) AS numbered \
    GROUP BY chunk \
    RETURNING id) \
  SELECT (SELECT count(*) FROM c), (SELECT coalesce(sum(price_minor), 0)::bigint FROM c), (SELECT count(*) FROM t), \
         (SELECT count(*) FROM j)";
const RAW_TOTAL: &str = "UPDATE call_campaigns SET total_targets = $2, updated_at = now() WHERE id = $1";

/// What the report says the raw side runs.
pub const RAW_DESCRIPTION: &str = "authentication lookup; BEGIN; INSERT call_campaigns; INSERT call_campaign_targets \
    ... SELECT FROM contacts WHERE group_id (opted-out numbers left out); one statement UPDATEing the due targets \
    'calling' with their call_id (nextval of the calls' sequence), INSERTing their calls rows from it (queued, \
    priced, uid call_ + hex) and the voice.place_calls jobs (chunks of 500); UPDATE wallets (debit of the held \
    minutes); INSERT wallet_ledger; UPDATE call_campaigns (total_targets); COMMIT";

/// The tenant's sandbox voice channel (its caller number is [`CALLER`]).
struct Route {
    channel_id: i64,
}

/// What the API side saw.
struct ApiRun {
    campaign: i64,
    elapsed: Duration,
    /// When every callee had a call row (queued or later).
    written: Option<Duration>,
    /// Dispatch ticks the bench made due at once.
    ticks_moved: u64,
    status: String,
}

impl Run<'_> {
    /// Workload 24 on both sides, with a fresh gateway for the API side that is stopped before
    /// the raw side writes its rows (their jobs are due at once; no worker may take them).
    pub(super) async fn call_campaign(&self, workload: &'static Workload) -> Result<Outcome> {
        let callees = self.setup.call_campaign_callees;
        self.prepare(workload, "both sides").await?;
        let route = self.voice_route().await?;
        let group = self.load_campaign_group(workload, callees).await?;

        let gateway = Gateway::start(self.setup, workload.limiter(), self.api).await?;
        let label = format!("{}. call campaign of {callees} callees · API", workload.number);
        let before = self.meter.read(gateway.pid);
        let api = self.api_call_campaign(&label, group, callees).await;
        let api_cpu = self.meter.share(&before, &self.meter.read(gateway.pid));
        let rss_mb = sys::peak_rss_mb(gateway.pid).ok();
        let pid = gateway.pid;
        gateway.stop().await?;
        let api = api?;
        let api_measured = Measured::single(api.elapsed, callees);
        super::print_run(&label, &api_measured, &api_cpu);
        println!(
            "xtask: {label}: all {callees} calls written after {}, placed after {:.1} s; {} ticks made due by the \
             bench; campaign {}; gateway peak RSS {}",
            api.written.map_or_else(|| "?".to_owned(), |w| format!("{:.1} s", w.as_secs_f64())),
            api.elapsed.as_secs_f64(),
            api.ticks_moved,
            api.status,
            rss_mb.map_or_else(|| "?".to_owned(), |mb| format!("{mb:.1} MB")),
        );
        // The play-outs still queued, and the last tick, would run on no later gateway.
        self.db.execute("DELETE FROM jobs WHERE state = 'queued'", &[]).await?;
        self.db.batch_execute("CHECKPOINT").await?;

        let row = self
            .db
            .query_one("SELECT plan::text, language FROM call_campaigns WHERE id = $1", &[&api.campaign])
            .await?;
        let (plan, language): (String, String) = (row.get(0), row.get(1));
        let label = format!("{}. call campaign of {callees} callees · raw SQL", workload.number);
        let before = self.meter.read(pid);
        let raw = self.raw_call_campaign(group, &route, &plan, &language).await?;
        let raw_cpu = self.meter.share(&before, &self.meter.read(pid));
        if raw.calls != callees || raw.targets != callees {
            return Err(format!(
                "{label}: wrote {} calls and {} targets calling, not {callees}",
                raw.calls, raw.targets
            )
            .into());
        }
        let raw_measured = Measured::single(raw.elapsed, callees);
        super::print_run(&label, &raw_measured, &raw_cpu);
        println!(
            "xtask: {label}: {} calls, {} placing jobs in {:.3} s",
            raw.calls,
            raw.jobs,
            raw.elapsed.as_secs_f64()
        );
        // The raw rows' placing jobs are due: a gateway started on the kept database would place them.
        self.db.execute("DELETE FROM jobs WHERE state = 'queued'", &[]).await?;

        let facts = CallCampaignFacts {
            callees,
            calls_per_minute: CALLS_PER_MINUTE,
            api_seconds: api.elapsed.as_secs_f64(),
            written_after_s: api.written.map(|w| w.as_secs_f64()),
            ticks_moved: api.ticks_moved,
            final_status: api.status,
            raw_seconds: raw.elapsed.as_secs_f64(),
            raw_place_jobs: raw.jobs,
        };
        Ok(Outcome {
            workload,
            api: api_measured,
            raw: raw_measured,
            rss_mb,
            api_cpu,
            raw_cpu,
            facts: Some(Facts::CallCampaign(facts)),
            open: None,
        })
    }

    /// The tenant's sandbox voice channel, its caller number and a voice rate: made with the
    /// admin CLI the first time a run needs them.
    async fn voice_route(&self) -> Result<Route> {
        const CHANNEL: &str = "SELECT id FROM channels WHERE tenant_id = $1 AND code = $2 AND kind = 'voice'";
        let tenant = self.setup.tenant;
        if let Some(row) = self.db.query_opt(CHANNEL, &[&tenant, &CHANNEL_CODE]).await? {
            return Ok(Route { channel_id: row.get(0) });
        }
        let tenant_arg = tenant.to_string();
        let channel =
            ["admin", "channel", "add", "--tenant", &tenant_arg, "--kind", "voice", "--provider", "sandbox", "--code"];
        let channel: Vec<&str> = channel.into_iter().chain([CHANNEL_CODE]).collect();
        self.voice_admin(&channel).await?;
        let sender = [
            "admin",
            "sender",
            "add",
            "--tenant",
            &tenant_arg,
            "--channel",
            CHANNEL_CODE,
            "--type",
            "phone_number",
            "--value",
            CALLER,
        ];
        self.voice_admin(&sender).await?;
        let price = PRICE_MINOR.to_string();
        let rate = ["admin", "rate", "set", "--tenant", &tenant_arg, "--voice", "--price-minor", &price];
        self.voice_admin(&rate).await?;
        let route = Route { channel_id: self.db.query_one(CHANNEL, &[&tenant, &CHANNEL_CODE]).await?.get(0) };
        println!(
            "xtask: sandbox voice channel {} `{CHANNEL_CODE}`, caller {CALLER}, voice rate {PRICE_MINOR} a minute",
            route.channel_id
        );
        Ok(route)
    }

    /// `gateway admin ...`; Err with what it wrote when it fails.
    async fn voice_admin(&self, args: &[&str]) -> Result<()> {
        let mut cmd = super::gateway_command(&self.setup.gateway, &self.setup.database_url, &self.setup.root, args);
        cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
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
        Ok(())
    }

    /// From the request until every callee's call has the provider's id. Every poll the queued
    /// next tick is made due (the skipped minute) and the campaign's calls are counted (no index
    /// on `call_campaign_id`: a scan of the tenant's calls, this campaign's alone).
    async fn api_call_campaign(&self, label: &str, group: i64, callees: u64) -> Result<ApiRun> {
        let db = self.db;
        let target = i64::try_from(callees)?;
        let started = Instant::now();
        let campaign = self.api.create_call_campaign(group, MESSAGE, CALLS_PER_MINUTE, callees).await?;
        let bar = ProgressBar::new(callees).with_message(label.to_owned());
        bar.set_style(
            ProgressStyle::with_template("{msg:<44} [{bar:30}] {pos}/{len} placed ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        let mut tick = tokio::time::interval(POLL);
        let (mut written, mut ticks_moved) = (None, 0_u64);
        let (mut last_placed, mut last_progress) = (-1_i64, Instant::now());
        loop {
            tick.tick().await;
            let moved = db.execute(MOVE_TICK, &[]).await?;
            if moved > 0 {
                db.batch_execute("NOTIFY svc_jobs").await?;
                ticks_moved += moved;
            }
            let row = db.query_one(CALLS, &[&campaign]).await?;
            let (calls, placed, failed): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
            let now = Instant::now();
            if failed > 0 {
                let first = db.query_opt(FIRST_FAILURE, &[&campaign]).await?;
                let first = first.map_or_else(String::new, |r| {
                    format!(
                        "; first: {} ({})",
                        r.get::<_, String>(0),
                        r.get::<_, Option<String>>(1).unwrap_or_default()
                    )
                });
                bar.abandon();
                return Err(format!("call campaign {campaign}: {failed} calls failed{first}").into());
            }
            if written.is_none() && calls >= target {
                written = Some(started.elapsed());
            }
            bar.set_position(u64::try_from(placed).unwrap_or(0));
            if placed >= target {
                let elapsed = started.elapsed();
                bar.finish_and_clear();
                let status: String = db.query_one(PROGRESS, &[&campaign]).await?.get(0);
                let check = db.query_one(CHECK, &[&campaign]).await?;
                let (calls, distinct, targets): (i64, i64, i64) = (check.get(0), check.get(1), check.get(2));
                if calls != target || distinct != target || targets != target {
                    return Err(format!(
                        "call campaign {campaign}: {calls} calls to {distinct} numbers, {targets} targets with a \
                         call; wanted {target} of each"
                    )
                    .into());
                }
                return Ok(ApiRun { campaign, elapsed, written, ticks_moved, status });
            }
            let progress = db.query_one(PROGRESS, &[&campaign]).await?;
            let (status, reason): (String, Option<String>) = (progress.get(0), progress.get(1));
            if matches!(status.as_str(), "paused" | "cancelled" | "failed" | "completed") {
                bar.abandon();
                let reason = reason.unwrap_or_default();
                return Err(format!("call campaign {campaign} is {status} ({reason}) after {placed} placed").into());
            }
            if placed != last_placed {
                (last_placed, last_progress) = (placed, now);
            }
            if now - last_progress > STALLED_AFTER || now - started > GIVE_UP_AFTER {
                bar.abandon();
                return Err(format!(
                    "call campaign {campaign} stalled: {placed} of {callees} placed, {calls} written, status \
                     {status}, after {:.0} s",
                    started.elapsed().as_secs_f64()
                )
                .into());
            }
        }
    }

    /// Authentication, then in one transaction the campaign, its targets, its calls with their
    /// targets marked and their placing jobs, the wallet's hold with its ledger entry, and the
    /// campaign's total.
    async fn raw_call_campaign(&self, group: i64, route: &Route, plan: &str, language: &str) -> Result<RawRun> {
        let client = sql::connect(&self.setup.database_url).await?;
        let chunk: i64 =
            std::env::var("SVC_SMS_SEND_CHUNK").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_SEND_CHUNK);
        let st = RawStatements::prepare(&client).await?;
        let started = Instant::now();
        let counts =
            self.raw_call_campaign_statements(&client, &st, group, route, (plan, language), chunk.max(1)).await;
        let elapsed = started.elapsed();
        let (calls, targets, jobs) = counts?;
        Ok(RawRun { elapsed, calls, targets, jobs })
    }

    async fn raw_call_campaign_statements(
        &self,
        client: &Client,
        st: &RawStatements,
        group: i64,
        route: &Route,
        (plan, language): (&str, &str),
        chunk: i64,
    ) -> Result<(u64, u64, u64)> {
        let tenant = self.setup.tenant;
        client.query_one(&st.auth, &[&self.key_hash]).await?;
        client.batch_execute("BEGIN").await?;
        let name = "bench: raw call campaign";
        let campaign: i64 = client
            .query_one(&st.campaign, &[&tenant, &name, &group, &plan, &language, &CALLS_PER_MINUTE])
            .await?
            .get(0);
        let total = client.execute(&st.targets, &[&tenant, &campaign, &group]).await?;
        let row = client
            .query_one(
                &st.calls,
                &[&tenant, &campaign, &route.channel_id, &CALLER, &plan, &language, &PRICE_MINOR, &chunk],
            )
            .await?;
        let (calls, held, targets, jobs): (i64, i64, i64, i64) = (row.get(0), row.get(1), row.get(2), row.get(3));
        let Some(wallet) = client.query_opt(&st.debit, &[&tenant, &held]).await? else {
            client.batch_execute("ROLLBACK").await?;
            return Err("the wallet cannot hold the raw call campaign's first minutes".into());
        };
        let balance: i64 = wallet.get(1);
        client.execute(&st.ledger, &[&tenant, &held, &balance, &"voice: first minute held"]).await?;
        client.execute(&st.total, &[&campaign, &i32::try_from(total)?]).await?;
        client.batch_execute("COMMIT").await?;
        Ok((u64::try_from(calls)?, u64::try_from(targets)?, u64::try_from(jobs)?))
    }
}

/// What the raw side did.
struct RawRun {
    elapsed: Duration,
    calls: u64,
    targets: u64,
    jobs: u64,
}

struct RawStatements {
    auth: Statement,
    campaign: Statement,
    targets: Statement,
    calls: Statement,
    debit: Statement,
    ledger: Statement,
    total: Statement,
}

impl RawStatements {
    async fn prepare(client: &Client) -> Result<Self> {
        Ok(Self {
            auth: client.prepare(sql::AUTH).await?,
            campaign: client.prepare(RAW_CAMPAIGN).await?,
            targets: client.prepare(RAW_TARGETS).await?,
            calls: client.prepare(RAW_CALLS).await?,
            debit: client.prepare(sql::WALLET_DEBIT).await?,
            ledger: client.prepare(sql::WALLET_LEDGER).await?,
            total: client.prepare(RAW_TOTAL).await?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_raw_calls_are_written_as_the_service_writes_them() {
        // `CallUid::generate` is `call_` and a simple (hyphenless) UUID; a campaign's calls are
        // `message` calls (a text, no menu), the held minute priced at the rate.
        assert!(RAW_CALLS.contains("'call_' || replace(gen_random_uuid()::text, '-', '')"));
        assert!(RAW_CALLS.contains("'message'"));
        assert!(RAW_CALLS.contains("'voice.place_calls'"));
        assert!(RAW_CAMPAIGN.contains("'ccmp_'"));
        assert!(MOVE_TICK.contains("'voice.dispatch_call_campaign'"));
    }
}
