//! What the tests share: a database and clock per test, a probe job that records its runs
//! and can fail or block on demand, and readers of the rows the store writes.

use std::collections::HashSet;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use diesel::sql_types::{BigInt, Integer, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid};
use kernel::{Clock, TenantId};
use serde::{Deserialize, Serialize};
use store::jobs::{Job, JobContext, JobError, Registry, Worker, WorkerConfig};
use store::testing::TestDb;
use store::{Pool, PooledConn};
use time::OffsetDateTime;
use tokio::sync::{Notify, watch};
use uuid::Uuid;

/// The lease every test worker takes.
pub const LEASE: time::Duration = time::Duration::seconds(30);

/// How long a test waits for something another task does before it gives up.
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

pub struct Env {
    pub db: TestDb,
    pub pool: Pool,
    pub clock: Clock,
}

/// A fresh database and a manual clock standing at the current time.
pub async fn env() -> Env {
    let db = TestDb::new().await;
    let pool = db.pool();
    Env { db, pool, clock: Clock::manual(start_time()) }
}

/// Now, cut to the microseconds PostgreSQL keeps, so times read back compare equal.
pub fn start_time() -> OffsetDateTime {
    let now = OffsetDateTime::now_utc();
    now.replace_nanosecond(now.nanosecond() / 1_000 * 1_000).expect("valid nanosecond")
}

pub async fn conn(pool: &Pool) -> PooledConn {
    store::connect_system(pool).await.expect("connection")
}

/// Waits (in small steps, at most [`PATIENCE`]) until `check` holds.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

#[derive(diesel::QueryableByName, Debug, Clone)]
pub struct JobRow {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Text)]
    pub state: String,
    #[diesel(sql_type = Integer)]
    pub attempts: i32,
    #[diesel(sql_type = Integer)]
    pub max_attempts: i32,
    #[diesel(sql_type = SmallInt)]
    pub priority: i16,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub tenant_id: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    pub dedupe_key: Option<String>,
    /// `None` is '-infinity': as soon as a worker is free.
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub run_at: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    pub locked_by: Option<Uuid>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub locked_until: Option<OffsetDateTime>,
    #[diesel(sql_type = Nullable<Text>)]
    pub last_error: Option<String>,
}

pub async fn job_rows(pool: &Pool) -> Vec<JobRow> {
    use diesel_async::RunQueryDsl;
    diesel::sql_query(
        "SELECT id, name, state, attempts, max_attempts, priority, tenant_id, dedupe_key,
                CASE WHEN isfinite(run_at) THEN run_at END AS run_at,
                locked_by, locked_until, last_error
         FROM jobs ORDER BY id",
    )
    .load(&mut *conn(pool).await)
    .await
    .expect("read jobs")
}

pub async fn job_row(pool: &Pool, id: i64) -> Option<JobRow> {
    job_rows(pool).await.into_iter().find(|row| row.id == id)
}

/// The row of a job that must still exist.
pub async fn job(pool: &Pool, id: i64) -> JobRow {
    job_row(pool, id).await.unwrap_or_else(|| panic!("job {id} is gone"))
}

/// One run of a probe job, as its handler saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub n: i64,
    pub job_id: i64,
    pub attempt: i32,
    pub tenant_id: Option<TenantId>,
}

/// The state of the test jobs: records every run, fails the first `failures` runs, and
/// (when blocking) holds every run until the gate opens.
pub struct Probe {
    runs: Mutex<Vec<Run>>,
    failures: AtomicI32,
    blocking: bool,
    gate: watch::Sender<bool>,
    started: Notify,
    starts: AtomicUsize,
    in_flight: Mutex<HashSet<i64>>,
    overlaps: AtomicUsize,
}

impl Probe {
    fn build(failures: i32, blocking: bool) -> Arc<Self> {
        Arc::new(Self {
            runs: Mutex::default(),
            failures: AtomicI32::new(failures),
            blocking,
            gate: watch::Sender::new(false),
            started: Notify::new(),
            starts: AtomicUsize::new(0),
            in_flight: Mutex::default(),
            overlaps: AtomicUsize::new(0),
        })
    }

    /// Every run succeeds.
    pub fn new() -> Arc<Self> {
        Self::build(0, false)
    }

    /// The first `k` runs fail.
    pub fn failing(k: i32) -> Arc<Self> {
        Self::build(k, false)
    }

    /// Every run waits for [`Probe::open`], then succeeds.
    pub fn blocking() -> Arc<Self> {
        Self::build(0, true)
    }

    pub fn runs(&self) -> Vec<Run> {
        self.runs.lock().expect("runs").clone()
    }

    pub fn ns(&self) -> Vec<i64> {
        self.runs().iter().map(|run| run.n).collect()
    }

    pub fn starts(&self) -> usize {
        self.starts.load(Ordering::SeqCst)
    }

    /// Runs of the same job that overlapped in time.
    pub fn overlaps(&self) -> usize {
        self.overlaps.load(Ordering::SeqCst)
    }

    /// Waits until a run has started (each start is one permit).
    pub async fn wait_started(&self) {
        tokio::time::timeout(PATIENCE, self.started.notified()).await.expect("the handler never started");
    }

    /// Lets every blocked run (and every later one) through.
    pub fn open(&self) {
        self.gate.send_replace(true);
    }

    async fn handle(&self, n: i64, ctx: JobContext) -> Result<(), JobError> {
        if !self.in_flight.lock().expect("in flight").insert(ctx.job_id) {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        self.starts.fetch_add(1, Ordering::SeqCst);
        self.started.notify_one();
        if self.blocking {
            let mut gate = self.gate.subscribe();
            gate.wait_for(|open| *open).await.expect("gate");
        }
        // Give another worker the chance to run the same job at the same time, if it could.
        tokio::task::yield_now().await;
        self.in_flight.lock().expect("in flight").remove(&ctx.job_id);
        self.runs.lock().expect("runs").push(Run {
            n,
            job_id: ctx.job_id,
            attempt: ctx.attempt,
            tenant_id: ctx.tenant_id,
        });
        if self.failures.fetch_sub(1, Ordering::SeqCst) > 0 {
            return Err(JobError(format!("boom {n} on attempt {}", ctx.attempt)));
        }
        Ok(())
    }
}

/// The everyday test job.
#[derive(Debug, Serialize, Deserialize)]
pub struct Record {
    pub n: i64,
}

impl Job for Record {
    const NAME: &'static str = "test.record";
    type State = Probe;

    async fn run(self, state: Arc<Probe>, ctx: JobContext) -> Result<(), JobError> {
        state.handle(self.n, ctx).await
    }
}

/// A job that gives up after two attempts.
#[derive(Debug, Serialize, Deserialize)]
pub struct Fragile {
    pub n: i64,
}

impl Job for Fragile {
    const NAME: &'static str = "test.fragile";
    const MAX_ATTEMPTS: i32 = 2;
    type State = Probe;

    async fn run(self, state: Arc<Probe>, ctx: JobContext) -> Result<(), JobError> {
        state.handle(self.n, ctx).await
    }
}

pub fn config(concurrency: usize) -> WorkerConfig {
    WorkerConfig {
        concurrency,
        lease: LEASE,
        // Long enough that a test which passes did not pass by polling.
        poll_interval: std::time::Duration::from_secs(60),
        shutdown_grace: std::time::Duration::from_secs(5),
    }
}

/// A worker that runs both test jobs with `probe`.
pub fn worker(env: &Env, probe: &Arc<Probe>, concurrency: usize) -> Worker {
    worker_with(env, probe, config(concurrency))
}

pub fn worker_with(env: &Env, probe: &Arc<Probe>, config: WorkerConfig) -> Worker {
    let mut registry = Registry::new();
    registry.register::<Record>(probe.clone()).register::<Fragile>(probe.clone());
    Worker::new(env.pool.clone(), env.clock.clone(), registry, config)
}

/// Enqueues `job` to run now; its id.
pub async fn enqueue_now<J: Job>(pool: &Pool, job: &J) -> i64 {
    store::jobs::enqueue(&mut *conn(pool).await, job, store::jobs::Enqueue::default())
        .await
        .expect("enqueue")
        .expect("a job id")
}
