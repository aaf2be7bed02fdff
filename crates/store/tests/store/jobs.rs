//! The job queue: transactional enqueue, leases, backoff, the dead state, exclusive claims,
//! dedupe, scheduling, priority, release, the long-lived loop and its statistics.

use std::collections::HashSet;
use std::sync::Arc;

use diesel_async::AsyncConnection;
use kernel::{Error, TenantId};
use store::jobs::{self, Enqueue, Job, backoff};
use time::Duration;

use crate::common::{
    Fragile, LEASE, PATIENCE, Probe, Record, Run, config, conn, enqueue_now, env, eventually, job, job_row, job_rows,
    worker, worker_with,
};

async fn enqueue<J: Job>(pool: &store::Pool, job: &J, options: Enqueue) -> Option<i64> {
    jobs::enqueue(&mut *conn(pool).await, job, options).await.expect("enqueue")
}

#[tokio::test]
async fn a_job_enqueued_in_a_rolled_back_transaction_never_runs() {
    let env = env().await;
    let probe = Probe::new();
    let worker = worker(&env, &probe, 4);
    let mut conn = conn(&env.pool).await;

    let rolled_back = conn
        .transaction(async |conn| {
            jobs::enqueue(conn, &Record { n: 1 }, Enqueue::default()).await?;
            Err::<(), Error>(Error::validation("rollback"))
        })
        .await;
    assert!(rolled_back.is_err());
    assert!(job_rows(&env.pool).await.is_empty());
    assert_eq!(worker.work_once().await.expect("work"), 0);

    let committed = conn
        .transaction(async |conn| {
            let options = Enqueue { tenant_id: Some(TenantId(7)), ..Enqueue::default() };
            jobs::enqueue(conn, &Record { n: 2 }, options).await
        })
        .await
        .expect("commit")
        .expect("a job id");
    let row = job(&env.pool, committed).await;
    assert_eq!(row.run_at, None, "no run_at: '-infinity', as soon as a worker is free");
    assert_eq!((row.name.as_str(), row.tenant_id, row.state.as_str()), ("test.record", Some(7), "queued"));
    assert_eq!(worker.work_once().await.expect("work"), 1);
    assert_eq!(probe.runs(), vec![Run { n: 2, job_id: committed, attempt: 1, tenant_id: Some(TenantId(7)) }]);
    assert!(job_rows(&env.pool).await.is_empty(), "a job that succeeded is deleted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_worker_died_runs_again_once_the_lease_runs_out() {
    let env = env().await;
    let stuck = Probe::blocking();
    let a = worker(&env, &stuck, 4);
    let probe = Probe::new();
    let b = worker(&env, &probe, 4);
    let id = enqueue_now(&env.pool, &Record { n: 1 }).await;

    let dying = tokio::spawn({
        let a = a.clone();
        async move { a.work_once().await }
    });
    stuck.wait_started().await;
    dying.abort();
    assert!(dying.await.expect_err("aborted").is_cancelled());

    let held = job(&env.pool, id).await;
    assert_eq!(held.state, "running");
    assert_eq!(held.attempts, 1);
    assert_eq!(held.locked_by, Some(a.id()));
    assert_eq!(held.locked_until, Some(env.clock.now() + LEASE));

    assert_eq!(b.work_once().await.expect("work"), 0, "the lease still holds");
    env.clock.advance(LEASE);
    assert_eq!(b.work_once().await.expect("work"), 0, "the lease holds until it has passed");
    env.clock.advance(Duration::seconds(1));
    assert_eq!(b.work_once().await.expect("work"), 1);
    assert_eq!(probe.runs(), vec![Run { n: 1, job_id: id, attempt: 2, tenant_id: None }]);
    assert!(job_row(&env.pool, id).await.is_none(), "done after the second attempt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_lease_was_taken_over_cannot_record_an_outcome() {
    let env = env().await;
    let slow = Probe::blocking();
    let a = worker(&env, &slow, 4);
    let failing = Probe::failing(1);
    let b = worker(&env, &failing, 4);
    let id = enqueue_now(&env.pool, &Record { n: 1 }).await;

    let late = tokio::spawn({
        let a = a.clone();
        async move { a.work_once().await }
    });
    slow.wait_started().await;
    env.clock.advance(LEASE + Duration::seconds(1));
    assert_eq!(b.work_once().await.expect("work"), 1);
    let retrying = job(&env.pool, id).await;
    assert_eq!((retrying.state.as_str(), retrying.attempts), ("queued", 2));

    // A finishes successfully after all, but the job is no longer A's to delete.
    slow.open();
    assert_eq!(late.await.expect("join").expect("work"), 1);
    let after = job(&env.pool, id).await;
    assert_eq!((after.state.as_str(), after.attempts), ("queued", 2));
    assert_eq!(after.last_error.as_deref(), Some("boom 1 on attempt 2"));
}

#[test]
fn backoff_doubles_from_two_seconds_up_to_an_hour() {
    assert_eq!(backoff(1), Duration::seconds(2));
    assert_eq!(backoff(2), Duration::seconds(4));
    assert_eq!(backoff(3), Duration::seconds(8));
    assert_eq!(backoff(10), Duration::seconds(1024));
    assert_eq!(backoff(11), Duration::seconds(2048));
    assert_eq!(backoff(12), Duration::hours(1));
    assert_eq!(backoff(1_000), Duration::hours(1));
    assert_eq!(backoff(0), Duration::seconds(2));
    assert_eq!(backoff(-5), Duration::seconds(2));
}

#[tokio::test]
async fn a_failed_job_is_retried_after_its_backoff() {
    let env = env().await;
    let probe = Probe::failing(2);
    let worker = worker(&env, &probe, 4);
    let id = enqueue_now(&env.pool, &Record { n: 1 }).await;
    let start = env.clock.now();

    assert_eq!(worker.work_once().await.expect("work"), 1);
    let first = job(&env.pool, id).await;
    assert_eq!(first.state, "queued");
    assert_eq!(first.attempts, 1);
    // jittered: between half the backoff and all of it
    let wait = first.run_at.expect("a retry time") - start;
    assert!(wait >= backoff(1) / 2 && wait <= backoff(1), "waits {wait}");
    assert!(wait >= Duration::seconds(1) && wait <= Duration::seconds(2), "waits {wait}");
    assert_eq!(first.last_error.as_deref(), Some("boom 1 on attempt 1"));
    assert_eq!((first.locked_by, first.locked_until), (None, None));

    assert_eq!(worker.work_once().await.expect("work"), 0);
    env.clock.advance(wait - Duration::milliseconds(1));
    assert_eq!(worker.work_once().await.expect("work"), 0, "not before the backoff is over");
    env.clock.advance(Duration::milliseconds(1));
    assert_eq!(worker.work_once().await.expect("work"), 1);

    let second = job(&env.pool, id).await;
    assert_eq!((second.state.as_str(), second.attempts), ("queued", 2));
    let wait = second.run_at.expect("a retry time") - env.clock.now();
    assert!(wait >= Duration::seconds(2) && wait <= Duration::seconds(4), "waits {wait}");
    assert_eq!(second.last_error.as_deref(), Some("boom 1 on attempt 2"));

    env.clock.advance(wait - Duration::milliseconds(1));
    assert_eq!(worker.work_once().await.expect("work"), 0);
    env.clock.advance(Duration::milliseconds(1));
    assert_eq!(worker.work_once().await.expect("work"), 1);
    assert!(job_row(&env.pool, id).await.is_none(), "the third attempt succeeded");
    let attempts: Vec<i32> = probe.runs().iter().map(|run| run.attempt).collect();
    assert_eq!(attempts, vec![1, 2, 3]);
}

#[tokio::test]
async fn a_job_that_used_up_its_attempts_is_dead_and_kept() {
    let env = env().await;
    let probe = Probe::failing(i32::MAX);
    let worker = worker(&env, &probe, 4);
    let id = enqueue_now(&env.pool, &Fragile { n: 3 }).await;
    assert_eq!(job(&env.pool, id).await.max_attempts, 2);

    assert_eq!(worker.work_once().await.expect("work"), 1);
    assert_eq!(job(&env.pool, id).await.state, "queued");
    env.clock.advance(backoff(1));
    assert_eq!(worker.work_once().await.expect("work"), 1);

    let dead = job(&env.pool, id).await;
    assert_eq!(dead.state, "dead");
    assert_eq!(dead.attempts, 2);
    assert_eq!(dead.last_error.as_deref(), Some("boom 3 on attempt 2"));
    assert_eq!((dead.locked_by, dead.locked_until), (None, None));

    env.clock.advance(Duration::days(30));
    assert_eq!(worker.work_once().await.expect("work"), 0, "a dead job is never claimed");
    assert_eq!(probe.runs().len(), 2);
    assert_eq!(job(&env.pool, id).await.state, "dead");
}

#[tokio::test]
async fn a_job_without_a_handler_fails_and_is_kept() {
    let env = env().await;
    let probe = Probe::new();
    let worker = worker(&env, &probe, 4);

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Unknown;
    impl Job for Unknown {
        const NAME: &'static str = "test.unknown";
        type State = ();
        async fn run(self, _: Arc<()>, _: jobs::JobContext) -> Result<(), jobs::JobError> {
            Ok(())
        }
    }

    let id = enqueue_now(&env.pool, &Unknown).await;
    assert_eq!(worker.work_once().await.expect("work"), 1);
    let failed = job(&env.pool, id).await;
    assert_eq!((failed.state.as_str(), failed.attempts), ("queued", 1));
    assert_eq!(failed.last_error.as_deref(), Some("no handler for job test.unknown"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_never_run_the_same_job() {
    const JOBS: i64 = 50;
    let env = env().await;
    let probe = Probe::new();
    let mut ids = HashSet::new();
    for n in 0..JOBS {
        ids.insert(enqueue_now(&env.pool, &Record { n }).await);
    }

    let mut drains = Vec::new();
    for _ in 0..2 {
        // Each worker has its own pool, as two processes would.
        let worker = store::jobs::Worker::new(
            env.db.pool(),
            env.clock.clone(),
            {
                let mut registry = store::jobs::Registry::new();
                registry.register::<Record>(probe.clone());
                registry
            },
            config(4),
        );
        drains.push(tokio::spawn(async move {
            let mut ran = 0;
            loop {
                match worker.work_once().await.expect("work") {
                    0 => break ran,
                    n => ran += n,
                }
            }
        }));
    }
    let mut per_worker = Vec::new();
    for drain in drains {
        per_worker.push(tokio::time::timeout(PATIENCE * 6, drain).await.expect("drained").expect("join"));
    }

    assert_eq!(per_worker.iter().sum::<usize>(), JOBS as usize, "claims per worker: {per_worker:?}");
    let runs = probe.runs();
    assert_eq!(runs.len(), JOBS as usize, "every job ran exactly once");
    let ran: HashSet<i64> = runs.iter().map(|run| run.job_id).collect();
    assert_eq!(ran, ids, "every job ran, none twice");
    let mut ns: Vec<i64> = runs.iter().map(|run| run.n).collect();
    ns.sort_unstable();
    assert_eq!(ns, (0..JOBS).collect::<Vec<_>>());
    assert!(runs.iter().all(|run| run.attempt == 1), "no job was claimed twice");
    assert_eq!(probe.overlaps(), 0);
    assert!(job_rows(&env.pool).await.is_empty());
}

#[tokio::test]
async fn a_dedupe_key_keeps_one_waiting_job_per_name() {
    let env = env().await;
    let probe = Probe::new();
    let worker = worker(&env, &probe, 8);
    let keyed = || Enqueue { dedupe_key: Some("contact-9".into()), ..Enqueue::default() };

    let first = enqueue(&env.pool, &Record { n: 1 }, keyed()).await.expect("first is added");
    assert_eq!(enqueue(&env.pool, &Record { n: 2 }, keyed()).await, None);
    let other_name = enqueue(&env.pool, &Fragile { n: 3 }, keyed()).await;
    assert!(other_name.is_some(), "the key is per job name");
    let other_key = Enqueue { dedupe_key: Some("contact-10".into()), ..Enqueue::default() };
    assert!(enqueue(&env.pool, &Record { n: 4 }, other_key).await.is_some());
    assert!(enqueue(&env.pool, &Record { n: 5 }, Enqueue::default()).await.is_some());
    assert!(enqueue(&env.pool, &Record { n: 6 }, Enqueue::default()).await.is_some(), "no key, no dedupe");
    assert_eq!(job(&env.pool, first).await.dedupe_key.as_deref(), Some("contact-9"));

    assert_eq!(worker.work_once().await.expect("work"), 5);
    let mut ns = probe.ns();
    ns.sort_unstable();
    assert_eq!(ns, vec![1, 3, 4, 5, 6]);
    assert!(
        enqueue(&env.pool, &Record { n: 7 }, keyed()).await.is_some(),
        "once the job is done, the key is free again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dedupe_key_holds_while_running_and_retrying_but_not_once_dead() {
    let env = env().await;
    let keyed = || Enqueue { dedupe_key: Some("k".into()), ..Enqueue::default() };
    let stuck = Probe::blocking();
    let a = worker(&env, &stuck, 1);
    let id = enqueue(&env.pool, &Fragile { n: 1 }, keyed()).await.expect("added");

    let running = tokio::spawn({
        let a = a.clone();
        async move { a.work_once().await }
    });
    stuck.wait_started().await;
    assert_eq!(job(&env.pool, id).await.state, "running");
    assert_eq!(enqueue(&env.pool, &Fragile { n: 2 }, keyed()).await, None, "running");
    running.abort();
    let _ = running.await;

    let failing = Probe::failing(i32::MAX);
    let b = worker(&env, &failing, 1);
    env.clock.advance(LEASE + Duration::seconds(1));
    assert_eq!(b.work_once().await.expect("work"), 1);
    assert_eq!(job(&env.pool, id).await.state, "dead");
    let again = enqueue(&env.pool, &Fragile { n: 3 }, keyed()).await;
    assert!(again.is_some(), "a dead job does not hold its key");
    assert_eq!(job(&env.pool, id).await.state, "dead", "the dead job is kept");
}

#[tokio::test]
async fn a_scheduled_job_waits_for_its_time() {
    let env = env().await;
    let probe = Probe::new();
    let worker = worker(&env, &probe, 4);
    let at = env.clock.now() + Duration::minutes(10);
    let id =
        enqueue(&env.pool, &Record { n: 1 }, Enqueue { run_at: Some(at), ..Enqueue::default() }).await.expect("added");
    assert_eq!(job(&env.pool, id).await.run_at, Some(at));

    assert_eq!(worker.work_once().await.expect("work"), 0);
    env.clock.advance(Duration::minutes(10) - Duration::milliseconds(1));
    assert_eq!(worker.work_once().await.expect("work"), 0);
    env.clock.advance(Duration::milliseconds(1));
    assert_eq!(worker.work_once().await.expect("work"), 1);
    assert_eq!(probe.ns(), vec![1]);
}

#[tokio::test]
async fn higher_priority_runs_first() {
    let env = env().await;
    let probe = Probe::new();
    let worker = worker(&env, &probe, 1);
    let earlier = Some(env.clock.now() - Duration::minutes(1));
    for (n, priority, run_at) in [(1, 0, None), (2, 5, None), (3, -1, None), (4, 5, None), (5, 0, earlier)] {
        let options = Enqueue { priority, run_at, ..Enqueue::default() };
        let id = enqueue(&env.pool, &Record { n }, options).await.expect("added");
        assert_eq!(job(&env.pool, id).await.priority, priority);
    }
    while worker.work_once().await.expect("work") == 1 {}
    // Higher priority first; within one priority the earlier run_at, then the older job.
    assert_eq!(probe.ns(), vec![2, 4, 1, 5, 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_hands_jobs_back_without_counting_the_attempt() {
    let env = env().await;
    let stuck = Probe::blocking();
    let a = worker(&env, &stuck, 4);
    let probe = Probe::new();
    let b = worker(&env, &probe, 4);
    let id = enqueue_now(&env.pool, &Record { n: 1 }).await;

    let holding = tokio::spawn({
        let a = a.clone();
        async move { a.work_once().await }
    });
    stuck.wait_started().await;
    assert_eq!(job(&env.pool, id).await.attempts, 1);
    assert_eq!(b.release().await.expect("release"), 0, "b holds nothing");
    assert_eq!(job(&env.pool, id).await.state, "running");

    assert_eq!(a.release().await.expect("release"), 1);
    let released = job(&env.pool, id).await;
    assert_eq!((released.state.as_str(), released.attempts), ("queued", 0));
    assert_eq!((released.locked_by, released.locked_until), (None, None));

    // A's interrupted run ends after all; the job is no longer A's to finish.
    stuck.open();
    assert_eq!(holding.await.expect("join").expect("work"), 1);
    assert_eq!(job(&env.pool, id).await.state, "queued");

    // Another worker takes it at once, as a first attempt.
    assert_eq!(b.work_once().await.expect("work"), 1);
    assert_eq!(probe.runs(), vec![Run { n: 1, job_id: id, attempt: 1, tenant_id: None }]);
    assert!(job_row(&env.pool, id).await.is_none());
}

/// Whether the worker's listener has subscribed in the test database.
async fn listening(env: &crate::common::Env) -> bool {
    let (client, connection) = tokio_postgres::connect(env.db.url(), tokio_postgres::NoTls).await.expect("connect");
    let driver = tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND query = 'LISTEN svc_jobs'",
            &[],
        )
        .await
        .expect("pg_stat_activity");
    drop(client);
    let _ = driver.await;
    row.get::<_, i64>(0) > 0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_wakes_on_notify_and_stops_on_shutdown() {
    let env = env().await;
    let probe = Probe::new();
    // Polling every minute: a job done within seconds was woken by the notification.
    let worker = worker(&env, &probe, 4);
    let (shutdown, receiver) = tokio::sync::watch::channel(false);
    let running = tokio::spawn(worker.run(Some(env.db.url().to_owned()), receiver));
    eventually("the worker to listen", || listening(&env)).await;

    let id = enqueue_now(&env.pool, &Record { n: 1 }).await;
    eventually("the job to run", || async { probe.runs().len() == 1 }).await;
    eventually("the job to be deleted", || async { job_row(&env.pool, id).await.is_none() }).await;
    assert_eq!(probe.runs(), vec![Run { n: 1, job_id: id, attempt: 1, tenant_id: None }]);

    shutdown.send(true).expect("the worker listens");
    tokio::time::timeout(PATIENCE, running).await.expect("run ends on shutdown").expect("join");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_releases_what_outlives_the_shutdown_grace() {
    let env = env().await;
    let stuck = Probe::blocking();
    let mut config = config(4);
    config.shutdown_grace = std::time::Duration::from_millis(20);
    let worker = worker_with(&env, &stuck, config);
    let id = enqueue_now(&env.pool, &Record { n: 1 }).await;

    let (shutdown, receiver) = tokio::sync::watch::channel(false);
    let running = tokio::spawn(worker.run(None, receiver));
    stuck.wait_started().await;
    assert_eq!(job(&env.pool, id).await.state, "running");
    shutdown.send(true).expect("the worker listens");
    tokio::time::timeout(PATIENCE, running).await.expect("run ends on shutdown").expect("join");

    let released = job(&env.pool, id).await;
    assert_eq!((released.state.as_str(), released.attempts), ("queued", 0));
    assert_eq!(released.locked_by, None);
    assert_eq!(stuck.starts(), 1);
    assert!(stuck.runs().is_empty(), "the run was cut short");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_count_the_queue() {
    let env = env().await;
    let probe = Probe::failing(i32::MAX);
    let worker = worker(&env, &probe, 4);
    let stats = async |now| jobs::stats(&mut *conn(&env.pool).await, now).await.expect("stats");

    let empty = stats(env.clock.now()).await;
    assert_eq!((empty.queued, empty.running, empty.dead), (0, 0, 0));
    assert_eq!(empty.oldest_ready_age_seconds, 0.0);

    // A scheduled job counts as queued, but waits only from its run_at on.
    let at = env.clock.now() + Duration::seconds(10);
    enqueue(&env.pool, &Fragile { n: 1 }, Enqueue { run_at: Some(at), ..Enqueue::default() }).await.expect("added");
    let scheduled = stats(env.clock.now()).await;
    assert_eq!((scheduled.queued, scheduled.running, scheduled.dead), (1, 0, 0));
    assert_eq!(scheduled.oldest_ready_age_seconds, 0.0, "not due yet");
    env.clock.advance(Duration::seconds(60));
    let waiting = stats(env.clock.now()).await;
    assert!((waiting.oldest_ready_age_seconds - 50.0).abs() < 1e-6, "due for 50 s: {waiting:?}");

    // Two failures make it dead.
    assert_eq!(worker.work_once().await.expect("work"), 1);
    env.clock.advance(backoff(1));
    assert_eq!(worker.work_once().await.expect("work"), 1);
    let dead = stats(env.clock.now()).await;
    assert_eq!((dead.queued, dead.running, dead.dead), (0, 0, 1));
    assert_eq!(dead.oldest_ready_age_seconds, 0.0, "a dead job is not waiting");

    // One running, one waiting since it was created.
    let stuck = Probe::blocking();
    let busy = worker_with(&env, &stuck, config(1));
    enqueue_now(&env.pool, &Record { n: 2 }).await;
    let holding = tokio::spawn({
        let busy = busy.clone();
        async move { busy.work_once().await }
    });
    stuck.wait_started().await;
    enqueue_now(&env.pool, &Record { n: 3 }).await;
    let created = crate::common::start_time();
    env.clock.advance(Duration::seconds(5));
    let now = env.clock.now();
    let mixed = stats(now).await;
    assert_eq!((mixed.queued, mixed.running, mixed.dead), (1, 1, 1));
    // The job was created (by the database's clock) no later than `created`.
    let at_least = (now - created).as_seconds_f64();
    assert!(
        mixed.oldest_ready_age_seconds >= at_least - 1e-6 && mixed.oldest_ready_age_seconds < at_least + 5.0,
        "{mixed:?}, expected about {at_least}"
    );

    stuck.open();
    assert_eq!(holding.await.expect("join").expect("work"), 1);
}
