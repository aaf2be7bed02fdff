//! Crash recovery in seconds: heartbeats in `workers`, leases renewed while a job runs and back
//! within one lease once its worker stopped beating, panics recorded as failed attempts at once,
//! and the jitter of the retry backoff.

use std::sync::Arc;

use diesel::sql_types::{Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use store::jobs::{Job, JobContext, JobError, Registry, Worker, backoff, jittered_backoff};
use store::workers;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::common::{
    LEASE, PATIENCE, Probe, Record, Run, config, conn, enqueue_now, env, eventually, job, job_row, worker, worker_with,
};

#[derive(diesel::QueryableByName, Debug)]
struct WorkerRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Timestamptz)]
    started_at: OffsetDateTime,
    #[diesel(sql_type = Timestamptz)]
    last_seen_at: OffsetDateTime,
}

async fn worker_rows(pool: &store::Pool) -> Vec<WorkerRow> {
    diesel::sql_query("SELECT id, started_at, last_seen_at FROM workers ORDER BY started_at, id")
        .load(&mut *conn(pool).await)
        .await
        .expect("read workers")
}

#[test]
fn the_jittered_backoff_lies_between_half_the_backoff_and_all_of_it() {
    for attempt in [-1, 1, 2, 3, 7, 12, 40] {
        let ceiling = backoff(attempt);
        assert_eq!(jittered_backoff(attempt, 0.0), ceiling / 2, "attempt {attempt}");
        assert_eq!(jittered_backoff(attempt, 1.0), ceiling, "attempt {attempt}");
        let middle = jittered_backoff(attempt, 0.5);
        assert!(middle > ceiling / 2 && middle < ceiling, "attempt {attempt}: {middle}");
        // out of range is clamped, never outside the window
        assert_eq!(jittered_backoff(attempt, -3.0), ceiling / 2);
        assert_eq!(jittered_backoff(attempt, 7.0), ceiling);
        assert_eq!(jittered_backoff(attempt, f64::NAN), ceiling / 2);
    }
    assert_eq!(jittered_backoff(1, 0.25), Duration::milliseconds(1_250));
    assert_eq!(jittered_backoff(12, 0.0), Duration::minutes(30));
}

#[tokio::test]
async fn retries_of_jobs_that_failed_together_are_spread_out() {
    let env = env().await;
    let probe = Probe::failing(i32::MAX);
    let worker = worker(&env, &probe, 16);
    let mut ids = Vec::new();
    for n in 0..16 {
        ids.push(enqueue_now(&env.pool, &Record { n }).await);
    }
    let start = env.clock.now();
    assert_eq!(worker.work_once().await.expect("work"), 16);
    let mut waits = std::collections::BTreeSet::new();
    for id in ids {
        let wait = job(&env.pool, id).await.run_at.expect("a retry time") - start;
        assert!(wait >= Duration::seconds(1) && wait <= Duration::seconds(2), "waits {wait}");
        waits.insert(wait);
    }
    // 16 draws of a millisecond in a thousand: all equal only if the jitter is missing
    assert!(waits.len() > 1, "every retry at the same time: {waits:?}");
}

/// A job whose handler panics.
#[derive(serde::Serialize, serde::Deserialize)]
struct Panics {
    n: i64,
}

impl Job for Panics {
    const NAME: &'static str = "test.panics";
    const MAX_ATTEMPTS: i32 = 2;
    type State = ();

    async fn run(self, _: Arc<()>, ctx: JobContext) -> Result<(), JobError> {
        tokio::task::yield_now().await;
        panic!("kaboom {} on attempt {}", self.n, ctx.attempt);
    }
}

#[tokio::test]
async fn a_job_that_panics_is_a_failed_attempt_recorded_at_once() {
    let env = env().await;
    let mut registry = Registry::new();
    registry.register::<Panics>(Arc::new(()));
    let worker = Worker::new(env.pool.clone(), env.clock.clone(), registry, config(4));
    let id = enqueue_now(&env.pool, &Panics { n: 7 }).await;
    let start = env.clock.now();

    assert_eq!(worker.work_once().await.expect("work"), 1);
    let failed = job(&env.pool, id).await;
    assert_eq!((failed.state.as_str(), failed.attempts), ("queued", 1), "not left running until the lease ends");
    assert_eq!((failed.locked_by, failed.locked_until), (None, None));
    assert_eq!(failed.last_error.as_deref(), Some("the handler panicked: kaboom 7 on attempt 1"));
    let wait = failed.run_at.expect("a retry time") - start;
    assert!(wait >= backoff(1) / 2 && wait <= backoff(1), "retried after its backoff: {wait}");

    // The worker goes on; the last attempt's panic buries the job like any failure.
    env.clock.advance(backoff(1));
    assert_eq!(worker.work_once().await.expect("work"), 1);
    let dead = job(&env.pool, id).await;
    assert_eq!((dead.state.as_str(), dead.attempts), ("dead", 2));
    assert_eq!(dead.last_error.as_deref(), Some("the handler panicked: kaboom 7 on attempt 2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_renews_the_lease_of_a_running_job_and_a_silent_worker_loses_it_within_a_lease() {
    let env = env().await;
    let stuck = Probe::blocking();
    let a = worker(&env, &stuck, 4);
    let probe = Probe::new();
    let b = worker(&env, &probe, 4);
    let id = enqueue_now(&env.pool, &Record { n: 1 }).await;
    a.register().await.expect("register");

    let running = tokio::spawn({
        let a = a.clone();
        async move { a.work_once().await }
    });
    stuck.wait_started().await;

    // A runs far longer than one lease, beating three times per lease: B never gets the job.
    for _ in 0..9 {
        env.clock.advance(LEASE / 3);
        assert_eq!(a.beat().await.expect("beat"), 1, "the lease of the running job is renewed");
        let held = job(&env.pool, id).await;
        assert_eq!(held.locked_by, Some(a.id()));
        assert_eq!(held.locked_until, Some(env.clock.now() + LEASE));
        assert_eq!(b.work_once().await.expect("work"), 0, "the renewed lease holds");
    }
    let seen = worker_rows(&env.pool).await;
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].id, seen[0].last_seen_at), (a.id(), env.clock.now()));
    assert!(seen[0].started_at < seen[0].last_seen_at);

    // A dies (its process is killed): no more beats. Within one lease its job is B's.
    running.abort();
    assert!(running.await.expect_err("aborted").is_cancelled());
    env.clock.advance(LEASE);
    assert_eq!(b.work_once().await.expect("work"), 0, "not before the lease has passed");
    let died_at = env.clock.now() - LEASE;
    let seen = workers::last_seen(&mut *conn(&env.pool).await, &[a.id(), b.id()]).await.expect("last seen");
    assert_eq!(seen.get(&a.id()), Some(&died_at));
    assert!(!seen.contains_key(&b.id()), "b never kept a heartbeat");
    assert!(!workers::is_dead(seen.get(&a.id()).copied(), env.clock.now(), LEASE));
    env.clock.advance(Duration::milliseconds(1));
    assert!(workers::is_dead(seen.get(&a.id()).copied(), env.clock.now(), LEASE));
    assert_eq!(b.work_once().await.expect("work"), 1);
    assert_eq!(probe.runs(), vec![Run { n: 1, job_id: id, attempt: 2, tenant_id: None }]);
    assert!(job_row(&env.pool, id).await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_keeps_a_heartbeat_while_it_runs_and_removes_it_when_it_stops() {
    let env = env().await;
    let stuck = Probe::blocking();
    let mut config = config(4);
    // three beats per lease: one every 100 ms of real time
    config.lease = Duration::milliseconds(300);
    config.shutdown_grace = std::time::Duration::from_millis(20);
    let worker = worker_with(&env, &stuck, config);
    let id = enqueue_now(&env.pool, &Record { n: 1 }).await;

    let (shutdown, receiver) = tokio::sync::watch::channel(false);
    let running = tokio::spawn(worker.clone().run(None, receiver));
    stuck.wait_started().await;
    let rows = worker_rows(&env.pool).await;
    assert_eq!(rows.iter().map(|r| r.id).collect::<Vec<_>>(), vec![worker.id()], "registered at start");

    // The clock moves on a minute; the next beat renews the lease from there.
    env.clock.advance(Duration::minutes(1));
    let renewed = env.clock.now() + Duration::milliseconds(300);
    eventually("a beat to renew the lease", || async { job(&env.pool, id).await.locked_until == Some(renewed) }).await;
    eventually("a beat to be seen", || async {
        let rows = worker_rows(&env.pool).await;
        <[WorkerRow]>::first(&rows).is_some_and(|r| r.last_seen_at == env.clock.now())
    })
    .await;

    shutdown.send(true).expect("the worker listens");
    tokio::time::timeout(PATIENCE, running).await.expect("run ends on shutdown").expect("join");
    assert!(worker_rows(&env.pool).await.is_empty(), "a worker that stopped is gone from `workers`");
    let released = job(&env.pool, id).await;
    assert_eq!((released.state.as_str(), released.locked_by), ("queued", None));
}

#[tokio::test]
async fn rows_of_workers_gone_for_a_day_are_swept_by_a_beat() {
    let env = env().await;
    let probe = Probe::new();
    let old = worker(&env, &probe, 1);
    let young = worker(&env, &probe, 1);
    old.register().await.expect("register");
    env.clock.advance(Duration::hours(20));
    young.register().await.expect("register");
    env.clock.advance(Duration::hours(5));
    young.beat().await.expect("beat");
    let ids: Vec<Uuid> = worker_rows(&env.pool).await.iter().map(|r| r.id).collect();
    assert_eq!(ids, vec![young.id()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_jobs_whose_handlers_are_still_running_here_are_renewed() {
    let env = env().await;
    let stuck = Probe::blocking();
    let a = worker(&env, &stuck, 4);
    let id = enqueue_now(&env.pool, &Record { n: 1 }).await;
    let running = tokio::spawn({
        let a = a.clone();
        async move { a.work_once().await }
    });
    stuck.wait_started().await;
    env.clock.advance(LEASE / 3);
    assert_eq!(a.beat().await.expect("beat"), 1);

    // The run is gone (here: aborted) while the row still names A, as when its outcome could not
    // be recorded: the heartbeat leaves the lease to run out, and the job comes back.
    running.abort();
    assert!(running.await.expect_err("aborted").is_cancelled());
    // The handler's own task is aborted with its `JoinSet`, and dropped by the runtime a moment
    // later: until then it still counts as running here.
    eventually("the aborted handler to be dropped", || async { a.beat().await.expect("beat") == 0 }).await;
    let renewed_until = job(&env.pool, id).await.locked_until;
    env.clock.advance(LEASE / 3);
    assert_eq!(a.beat().await.expect("beat"), 0, "nothing of A's is running");
    assert_eq!(job(&env.pool, id).await.locked_until, renewed_until);
    assert_eq!(job(&env.pool, id).await.locked_by, Some(a.id()));
}
