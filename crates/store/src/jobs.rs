//! The job queue (house rule 6): typed jobs in PostgreSQL, claimed in batches with
//! `FOR UPDATE SKIP LOCKED`, leased so a crashed worker's job comes back, retried with
//! exponential backoff (with jitter) up to `max_attempts`, then kept as `dead` for inspection.
//! Workers wake on `LISTEN/NOTIFY` and poll as a fallback.
//!
//! Leases are short (30 s by default) and renewed by the running worker's heartbeat
//! (`crate::workers`) three times per lease, so a job runs as long as it needs while its
//! worker lives, and comes back within one lease once its worker died. A handler that panics
//! is a failed attempt, recorded at once.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use diesel::sql_types::{BigInt, Integer, Jsonb, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use futures_util::FutureExt;
use kernel::{Clock, Error, TenantId};
use serde::Serialize;
use serde::de::DeserializeOwned;
use time::{Duration, OffsetDateTime};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tracing::Instrument;
use uuid::Uuid;

use crate::Prepare;
use crate::{Conn, Pool};

/// The channel enqueues notify and workers listen on.
const CHANNEL: &str = "svc_jobs";

/// A kind of background work. Its payload is the serialized value itself; handlers must be
/// idempotent, since a job whose worker dies runs again.
pub trait Job: Serialize + DeserializeOwned + Send + 'static {
    const NAME: &'static str;
    const MAX_ATTEMPTS: i32 = 10;
    /// What the handler needs (services, clients), given once at registration.
    type State: Send + Sync + 'static;

    fn run(self, state: Arc<Self::State>, ctx: JobContext) -> impl Future<Output = Result<(), JobError>> + Send;
}

/// What a running job knows about itself.
#[derive(Clone)]
pub struct JobContext {
    pub pool: Pool,
    pub clock: Clock,
    pub job_id: i64,
    /// 1 on the first run.
    pub attempt: i32,
    pub tenant_id: Option<TenantId>,
}

impl JobContext {
    /// The tenant the job was enqueued for: whose rows its connections may see.
    pub fn tenant(&self) -> Result<TenantId, JobError> {
        self.tenant_id.ok_or_else(|| JobError("a tenant's job enqueued without its tenant".into()))
    }
}

/// A failed run; it is retried with backoff until its attempts are used up.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct JobError(pub String);

impl From<Error> for JobError {
    fn from(error: Error) -> Self {
        Self(error.into_details().message)
    }
}

/// Where and when a job runs.
#[derive(Debug, Clone, Default)]
pub struct Enqueue {
    pub tenant_id: Option<TenantId>,
    /// While a job with the same name and key is queued or running, another is not added.
    pub dedupe_key: Option<String>,
    /// Higher runs first.
    pub priority: i16,
    /// `None` runs as soon as a worker is free.
    pub run_at: Option<OffsetDateTime>,
}

/// Adds a job inside the caller's transaction: it exists only if that transaction commits.
/// Returns `None` when a job with the same dedupe key is already waiting.
pub async fn enqueue<J: Job>(conn: &mut Conn, job: &J, options: Enqueue) -> Result<Option<i64>, Error> {
    let payload = serde_json::to_value(job).map_err(Error::internal)?;
    let ids: Vec<JobId> = diesel::sql_query(
        "INSERT INTO jobs (name, payload, tenant_id, dedupe_key, priority, run_at, max_attempts)
         VALUES ($1, $2, $3, $4, $5, COALESCE($6, '-infinity'::timestamptz), $7)
         ON CONFLICT (name, dedupe_key) WHERE dedupe_key IS NOT NULL AND state <> 'dead' DO NOTHING
         RETURNING id",
    )
    .bind::<Text, _>(J::NAME)
    .bind::<Jsonb, _>(payload)
    .bind::<Nullable<BigInt>, _>(options.tenant_id.map(|t| t.0))
    .bind::<Nullable<Text>, _>(options.dedupe_key)
    .bind::<SmallInt, _>(options.priority)
    .bind::<Nullable<Timestamptz>, _>(options.run_at)
    .bind::<Integer, _>(J::MAX_ATTEMPTS)
    .prepared()
    .get_results(conn)
    .await?;
    let Some(JobId { id }) = ids.into_iter().next() else {
        return Ok(None);
    };
    // Delivered at commit, so a worker never wakes for a job it cannot see yet. A job due later
    // wakes nobody: the workers' poll finds it when it is due.
    if options.run_at.is_none() {
        diesel::sql_query(format!("NOTIFY {CHANNEL}")).execute(conn).await?;
    }
    Ok(Some(id))
}

#[derive(diesel::QueryableByName)]
struct JobId {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

/// The longest a failed run waits before the next attempt: 2 s, 4 s, 8 s... capped at an hour.
pub fn backoff(attempt: i32) -> Duration {
    let exponent = attempt.clamp(1, 12) as u32;
    Duration::seconds(2_i64.pow(exponent)).min(Duration::hours(1))
}

/// The wait before the next attempt: "equal jitter" over [`backoff`], between half of it and all
/// of it, placed by `unit` (in `[0, 1]`; out-of-range values are clamped). Jobs that failed
/// together (a provider outage) do not all come back in the same second.
pub fn jittered_backoff(attempt: i32, unit: f64) -> Duration {
    let ceiling = backoff(attempt);
    let half: Duration = ceiling / 2;
    let unit = if unit.is_nan() { 0.0 } else { unit.clamp(0.0, 1.0) };
    // whole milliseconds, so the stored time reads back equal
    let extra = Duration::milliseconds((half.whole_milliseconds() as f64 * unit) as i64);
    half + extra
}

/// A uniform number in `[0, 1)` from the operating system's randomness (through a v4 UUID,
/// which the queue already depends on).
fn random_unit() -> f64 {
    let bits = (Uuid::new_v4().as_u128() >> 64) as u64 >> 11;
    bits as f64 / (1_u64 << 53) as f64
}

type BoxFuture = Pin<Box<dyn Future<Output = Result<(), JobError>> + Send>>;
type Runner = Arc<dyn Fn(serde_json::Value, JobContext) -> BoxFuture + Send + Sync>;

/// The handlers a worker knows, by job name.
#[derive(Default, Clone)]
pub struct Registry {
    runners: HashMap<&'static str, Runner>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register<J: Job>(&mut self, state: Arc<J::State>) -> &mut Self {
        let runner: Runner = Arc::new(move |payload, ctx| {
            let state = state.clone();
            Box::pin(async move {
                let job: J =
                    serde_json::from_value(payload).map_err(|e| JobError(format!("payload of {}: {e}", J::NAME)))?;
                job.run(state, ctx).await
            })
        });
        self.runners.insert(J::NAME, runner);
        self
    }
}

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Jobs run at once by one worker.
    pub concurrency: usize,
    /// How long a claim holds before another worker may take the job again; the worker's
    /// heartbeat (`run`) renews it three times per lease while the job runs, so this is also
    /// how soon the jobs of a dead worker come back.
    pub lease: Duration,
    /// Fallback poll when no notification arrives.
    pub poll_interval: std::time::Duration,
    /// How long shutdown waits for running jobs before releasing them.
    pub shutdown_grace: std::time::Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            concurrency: 8,
            lease: Duration::seconds(30),
            poll_interval: std::time::Duration::from_secs(2),
            shutdown_grace: std::time::Duration::from_secs(10),
        }
    }
}

#[derive(diesel::QueryableByName, Debug)]
struct Claimed {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Jsonb)]
    payload: serde_json::Value,
    #[diesel(sql_type = Nullable<BigInt>)]
    tenant_id: Option<i64>,
    #[diesel(sql_type = Integer)]
    attempts: i32,
}

/// Claims and runs jobs. Clones share one identity, so a lease taken by one clone is theirs.
#[derive(Clone)]
pub struct Worker {
    inner: Arc<WorkerInner>,
}

struct WorkerInner {
    id: Uuid,
    pool: Pool,
    clock: Clock,
    registry: Registry,
    config: WorkerConfig,
    /// The jobs whose handlers are running here now: only their leases are renewed, so a job
    /// whose outcome could not be recorded comes back after its lease like a dead worker's.
    running: std::sync::Mutex<std::collections::HashSet<i64>>,
}

/// Marks a job as running here for as long as it lives (an aborted run drops it too).
struct Running<'a> {
    worker: &'a WorkerInner,
    id: i64,
}

impl<'a> Running<'a> {
    fn new(worker: &'a WorkerInner, id: i64) -> Self {
        worker.running.lock().unwrap_or_else(|e| e.into_inner()).insert(id);
        Self { worker, id }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.worker.running.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
    }
}

impl Worker {
    pub fn new(pool: Pool, clock: Clock, registry: Registry, config: WorkerConfig) -> Self {
        Self::with_id(Uuid::new_v4(), pool, clock, registry, config)
    }

    /// A worker whose identity (its row in `workers`) is `id`: the process's own, when other
    /// parts of the process mark what they hold with it too.
    pub fn with_id(id: Uuid, pool: Pool, clock: Clock, registry: Registry, config: WorkerConfig) -> Self {
        let running = std::sync::Mutex::default();
        Self { inner: Arc::new(WorkerInner { id, pool, clock, registry, config, running }) }
    }

    /// Writes this worker's heartbeat row (`run` does it too); a process calls it before it
    /// starts anything that marks rows with the worker's id.
    pub async fn register(&self) -> Result<(), Error> {
        let mut conn = crate::connect_global(&self.inner.pool).await?;
        crate::workers::register(&mut conn, self.inner.id, self.inner.clock.now()).await
    }

    /// One heartbeat: this worker is alive, and every job it is running is leased for another
    /// lease. `run` beats three times per lease; answers how many leases were renewed.
    pub async fn beat(&self) -> Result<usize, Error> {
        let running: Vec<i64> = self.inner.running.lock().unwrap_or_else(|e| e.into_inner()).iter().copied().collect();
        let mut conn = crate::connect_global(&self.inner.pool).await?;
        crate::workers::beat(&mut conn, self.inner.id, &running, self.inner.clock.now(), self.inner.config.lease).await
    }

    /// Beats until the task is aborted; a failed beat is logged and tried at the next tick
    /// (two more fit in a lease).
    async fn keep_beating(self) {
        let interval = crate::workers::heartbeat_interval(self.inner.config.lease);
        loop {
            tokio::time::sleep(interval).await;
            if let Err(error) = self.beat().await {
                tracing::warn!(%error, "heartbeat failed; the leases of running jobs were not renewed");
            }
        }
    }

    pub fn id(&self) -> Uuid {
        self.inner.id
    }

    async fn claim(&self, limit: usize) -> Result<Vec<Claimed>, Error> {
        let inner = &self.inner;
        let now = inner.clock.now();
        let mut conn = crate::connect_global(&inner.pool).await?;
        // A job whose worker died on its last attempt is dead, not retried forever.
        diesel::sql_query(
            "UPDATE jobs SET state = 'dead', locked_by = NULL, locked_until = NULL, updated_at = now(),
                    last_error = COALESCE(last_error || '; ', '') || 'worker lost during the last attempt'
             WHERE state = 'running' AND locked_until < $1 AND attempts >= max_attempts",
        )
        .bind::<Timestamptz, _>(now)
        .execute(&mut conn)
        .await?;
        // A running job whose lease ran out belongs to a worker that died: take it again.
        let claimed = diesel::sql_query(
            "UPDATE jobs SET state = 'running', attempts = attempts + 1, locked_by = $1,
                    locked_until = $2, updated_at = now()
             WHERE id IN (
                 SELECT id FROM jobs
                 WHERE (state = 'queued' AND run_at <= $3)
                    OR (state = 'running' AND locked_until < $3 AND attempts < max_attempts)
                 ORDER BY priority DESC, run_at, id
                 LIMIT $4
                 FOR UPDATE SKIP LOCKED)
             RETURNING id, name, payload, tenant_id, attempts",
        )
        .bind::<SqlUuid, _>(inner.id)
        .bind::<Timestamptz, _>(now + inner.config.lease)
        .bind::<Timestamptz, _>(now)
        .bind::<BigInt, _>(limit as i64)
        // not kept prepared: a plan made for any `now` would not know that few jobs are due
        .get_results(&mut conn)
        .await?;
        Ok(claimed)
    }

    async fn run_job(&self, job: Claimed) {
        let inner = &self.inner;
        let ctx = JobContext {
            pool: inner.pool.clone(),
            clock: inner.clock.clone(),
            job_id: job.id,
            attempt: job.attempts,
            tenant_id: job.tenant_id.map(TenantId),
        };
        let span = tracing::info_span!("job", id = job.id, name = %job.name, attempt = job.attempts);
        let _running = Running::new(inner, job.id);
        async {
            let outcome = match inner.registry.runners.get(job.name.as_str()) {
                // A panic is a failed attempt like any other, recorded now rather than when
                // the lease would have run out.
                Some(runner) => match std::panic::AssertUnwindSafe(runner(job.payload, ctx)).catch_unwind().await {
                    Ok(outcome) => outcome,
                    Err(panic) => Err(JobError(format!("the handler panicked: {}", panic_message(&*panic)))),
                },
                None => Err(JobError(format!("no handler for job {}", job.name))),
            };
            self.record(job.id, job.attempts, outcome).await;
        }
        .instrument(span)
        .await
    }

    /// Records a job's outcome. While the database is away the outcome waits here (the job still
    /// counts as running, so its lease is renewed once beats get through): when the database is
    /// back, the job is done or retried on its schedule at once instead of waiting out its lease
    /// and running again.
    async fn record(&self, id: i64, attempt: i32, outcome: Result<(), JobError>) {
        let lease = self.inner.config.lease.unsigned_abs();
        if let Err(error) = crate::persist(lease, || self.finish(id, attempt, &outcome)).await {
            tracing::error!(%error, job = id, "recording the job outcome failed; it runs again after its lease");
        }
    }

    async fn finish(&self, id: i64, attempt: i32, outcome: &Result<(), JobError>) -> Result<(), Error> {
        let inner = &self.inner;
        let mut conn = crate::connect_global(&inner.pool).await?;
        // `locked_by` guards against a worker whose lease expired and was taken over.
        match outcome {
            Ok(()) => {
                diesel::sql_query("DELETE FROM jobs WHERE id = $1 AND locked_by = $2")
                    .bind::<BigInt, _>(id)
                    .bind::<SqlUuid, _>(inner.id)
                    .prepared()
                    .execute(&mut conn)
                    .await?;
            }
            Err(JobError(message)) => {
                tracing::warn!(job = id, attempt, error = %message, "job failed");
                diesel::sql_query(
                    "UPDATE jobs SET state = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'queued' END,
                            run_at = $3, last_error = $4, locked_by = NULL, locked_until = NULL,
                            updated_at = now()
                     WHERE id = $1 AND locked_by = $2",
                )
                .bind::<BigInt, _>(id)
                .bind::<SqlUuid, _>(inner.id)
                .bind::<Timestamptz, _>(inner.clock.now() + jittered_backoff(attempt, random_unit()))
                .bind::<Text, _>(message.as_str())
                .prepared()
                .execute(&mut conn)
                .await?;
            }
        }
        Ok(())
    }

    /// Claims what is due (up to the concurrency), runs it all to the end, and says how many
    /// jobs ran. Tests drive the queue with it; `run` is the long-lived loop.
    pub async fn work_once(&self) -> Result<usize, Error> {
        let jobs = self.claim(self.inner.config.concurrency).await?;
        let count = jobs.len();
        let mut running = JoinSet::new();
        for job in jobs {
            let worker = self.clone();
            running.spawn(async move { worker.run_job(job).await });
        }
        while running.join_next().await.is_some() {}
        Ok(count)
    }

    /// Runs until `shutdown` turns true: claims as slots free up, wakes on notifications
    /// (when `listen_url` is given) or polls. On shutdown, running jobs get a grace period;
    /// the rest are released for another worker.
    pub async fn run(self, listen_url: Option<String>, mut shutdown: watch::Receiver<bool>) {
        if let Err(error) = self.register().await {
            tracing::error!(%error, "writing the worker's heartbeat failed; the next beat tries again");
        }
        let heartbeat = tokio::spawn(self.clone().keep_beating());
        let wake = Arc::new(Notify::new());
        let listener = listen_url.map(|url| tokio::spawn(listen(url, CHANNEL, wake.clone())));
        let config = self.inner.config.clone();
        let mut running = JoinSet::new();
        while !*shutdown.borrow() {
            let free = config.concurrency.saturating_sub(running.len());
            let mut full_batch = false;
            if free > 0 {
                match self.claim(free).await {
                    Ok(jobs) => {
                        full_batch = jobs.len() == free;
                        for job in jobs {
                            let worker = self.clone();
                            running.spawn(async move { worker.run_job(job).await });
                        }
                    }
                    Err(error) => tracing::error!(%error, "claiming jobs failed"),
                }
            }
            if full_batch && running.len() < config.concurrency {
                continue;
            }
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(config.poll_interval) => {}
                Some(_) = running.join_next(), if !running.is_empty() => {}
                changed = shutdown.changed() => {
                    // A dropped sender means nobody can stop us any more: stop now.
                    if changed.is_err() {
                        break;
                    }
                }
            }
        }
        if let Some(listener) = listener {
            listener.abort();
        }
        let drained =
            tokio::time::timeout(config.shutdown_grace, async { while running.join_next().await.is_some() {} }).await;
        if drained.is_err() {
            running.abort_all();
            while running.join_next().await.is_some() {}
        }
        heartbeat.abort();
        match self.release().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(released = n, "released unfinished jobs"),
            Err(error) => tracing::error!(%error, "releasing jobs failed"),
        }
        // Gone: what it still marks as its own (a send cut off by the grace) is in doubt now.
        let forgotten = async {
            let mut conn = crate::connect_global(&self.inner.pool).await?;
            crate::workers::forget(&mut conn, self.inner.id).await
        };
        if let Err(error) = forgotten.await {
            tracing::warn!(%error, "removing the worker's heartbeat failed; it counts as dead after a lease");
        }
    }

    /// Hands back every job this worker still holds, without counting the interrupted attempt.
    pub async fn release(&self) -> Result<usize, Error> {
        let mut conn = crate::connect_global(&self.inner.pool).await?;
        let released = diesel::sql_query(
            "UPDATE jobs SET state = 'queued', attempts = GREATEST(attempts - 1, 0),
                    locked_by = NULL, locked_until = NULL, updated_at = now()
             WHERE locked_by = $1 AND state = 'running'",
        )
        .bind::<SqlUuid, _>(self.inner.id)
        .prepared()
        .execute(&mut conn)
        .await?;
        Ok(released)
    }
}

/// The text of a panic's payload (`panic!` with a literal or a formatted message).
fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// Wakes `wake` on every `NOTIFY` of `channel`, reconnecting after a failure; the listener's
/// owner polls as well, which covers the gaps.
pub async fn listen(url: String, channel: &'static str, wake: Arc<Notify>) {
    loop {
        if let Err(error) = listen_once(&url, channel, &wake).await {
            tracing::warn!(%error, channel, "listener lost its connection; polling until it is back");
        }
        wake.notify_one();
        tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    }
}

async fn listen_once(url: &str, channel: &str, wake: &Notify) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    let driver = async {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(tokio_postgres::AsyncMessage::Notification(_))) => wake.notify_one(),
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(error),
                None => return Ok(()),
            }
        }
    };
    let subscribe = async {
        client.batch_execute(&format!("LISTEN {channel}")).await?;
        std::future::pending::<Result<(), tokio_postgres::Error>>().await
    };
    tokio::select! {
        result = driver => result,
        result = subscribe => result,
    }
}

/// What `/metrics` shows of the queue.
#[derive(Debug, Clone, Default, diesel::QueryableByName)]
pub struct QueueStats {
    #[diesel(sql_type = BigInt)]
    pub queued: i64,
    #[diesel(sql_type = BigInt)]
    pub running: i64,
    #[diesel(sql_type = BigInt)]
    pub dead: i64,
    /// Seconds the oldest due job has waited (0 when none).
    #[diesel(sql_type = diesel::sql_types::Double)]
    pub oldest_ready_age_seconds: f64,
}

pub async fn stats(conn: &mut Conn, now: OffsetDateTime) -> Result<QueueStats, Error> {
    let stats = diesel::sql_query(
        "SELECT count(*) FILTER (WHERE state = 'queued') AS queued,
                count(*) FILTER (WHERE state = 'running') AS running,
                count(*) FILTER (WHERE state = 'dead') AS dead,
                COALESCE(EXTRACT(EPOCH FROM $1 - min(GREATEST(run_at, created_at))
                    FILTER (WHERE state = 'queued' AND run_at <= $1)), 0)::float8
                    AS oldest_ready_age_seconds
         FROM jobs",
    )
    .bind::<Timestamptz, _>(now)
    .get_result(conn)
    .await?;
    Ok(stats)
}
