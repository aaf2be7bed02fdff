//! The load generator both sides share: `connections` tasks, each running one operation after
//! another for a warm-up and then a measured window, recording every operation's latency
//! (closed loop, at saturation); and [`drive_open`], operations started on a fixed schedule
//! (open loop, latency at a given rate).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::Result;

/// What an operation may fail with; Send, so that it can leave a load task.
pub type OpError = Box<dyn std::error::Error + Send + Sync>;
pub type OpResult = std::result::Result<(), OpError>;

#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Run but not recorded: fills caches, pools and connections.
    pub warmup: Duration,
    pub measure: Duration,
}

/// Which operation a task is about to run.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    /// The task's index, `0..connections`: picks the task's own database connection.
    pub worker: usize,
    /// Unique across all tasks of one run: makes phone numbers and uids unique.
    pub seq: u64,
}

/// The operations that completed inside the measured window.
pub struct Measured {
    /// Sorted, shortest first.
    latencies: Vec<Duration>,
    seconds: f64,
    /// What the rate counts: one per operation, or the messages of one long operation.
    items: u64,
}

impl Measured {
    /// One operation that did `items` things (a campaign's messages) in `elapsed`: its rate
    /// is items per second, and both percentiles are `elapsed`.
    pub fn single(elapsed: Duration, items: u64) -> Self {
        Self { latencies: vec![elapsed], seconds: elapsed.as_secs_f64().max(1e-9), items }
    }

    /// Operations timed one by one (any order) over `seconds` in all, which did `items` things:
    /// batches of rows, or orders counted one each.
    pub fn of(mut latencies: Vec<Duration>, seconds: f64, items: u64) -> Self {
        latencies.sort_unstable();
        Self { latencies, seconds: seconds.max(1e-9), items }
    }

    pub fn ops(&self) -> usize {
        self.latencies.len()
    }

    /// Operations (or items) per second.
    pub fn rate(&self) -> f64 {
        self.items as f64 / self.seconds
    }

    /// The `p`th percentile (0 < p <= 100) in milliseconds, by nearest rank.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        percentile(&self.latencies, p).as_secs_f64() * 1000.0
    }
}

/// Nearest rank: the smallest latency that at least `p` percent of the sorted ones do not exceed.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Runs `op` from `connections` concurrent tasks for `timing.warmup + timing.measure`. An
/// operation counts when it completes inside the measured window, so the rate is unbiased at
/// both edges however long one operation takes. The first failing operation ends the run.
pub async fn drive<F, Fut>(label: &str, connections: usize, timing: Timing, op: F) -> Result<Measured>
where
    F: Fn(Op) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = OpResult> + Send + 'static,
{
    let op = Arc::new(op);
    let seq = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let from = start + timing.warmup;
    let until = from + timing.measure;
    // Dropped on an early return (error, Ctrl-C): that aborts every task still running.
    let mut tasks = JoinSet::new();
    for worker in 0..connections {
        let (op, seq) = (Arc::clone(&op), Arc::clone(&seq));
        tasks.spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let began = Instant::now();
                if began >= until {
                    return Ok::<_, OpError>(latencies);
                }
                op(Op { worker, seq: seq.fetch_add(1, Ordering::Relaxed) }).await?;
                let ended = Instant::now();
                if ended >= from && ended < until {
                    latencies.push(ended - began);
                }
            }
        });
    }

    let bar = progress(label, timing);
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let mut latencies = Vec::new();
    loop {
        tokio::select! {
            joined = tasks.join_next() => match joined {
                None => break,
                Some(joined) => {
                    let task = joined.map_err(|e| format!("{label}: a load task failed: {e}"))?;
                    latencies.extend(task.map_err(|e| format!("{label}: {e}"))?);
                }
            },
            _ = tick.tick() => bar.set_position(start.elapsed().as_millis() as u64),
        }
    }
    bar.finish_and_clear();
    latencies.sort_unstable();
    let items = latencies.len() as u64;
    Ok(Measured { latencies, seconds: timing.measure.as_secs_f64(), items })
}

/// Runs `op` `count` times from `connections` concurrent tasks (operations numbered `0..count`,
/// each taken by the next free task) and times each; the rate is `count` over the time from
/// the first start to the last end. For work whose total must be the same on both sides (the
/// orders drawing on one stock). The first failing operation ends the run.
pub async fn drive_count<F, Fut>(label: &str, connections: usize, count: u64, op: F) -> Result<Measured>
where
    F: Fn(Op) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = OpResult> + Send + 'static,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicU64::new(0));
    let bar = ProgressBar::new(count).with_message(label.to_owned());
    bar.set_style(
        ProgressStyle::with_template("{msg:<44} [{bar:30}] {pos}/{len} ({per_sec})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for worker in 0..connections {
        let (op, next, bar) = (Arc::clone(&op), Arc::clone(&next), bar.clone());
        tasks.spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let seq = next.fetch_add(1, Ordering::Relaxed);
                if seq >= count {
                    return Ok::<_, OpError>(latencies);
                }
                let began = Instant::now();
                op(Op { worker, seq }).await?;
                latencies.push(began.elapsed());
                bar.inc(1);
            }
        });
    }
    let mut latencies = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    while let Some(joined) = tasks.join_next().await {
        let task = joined.map_err(|e| format!("{label}: a load task failed: {e}"))?;
        latencies.extend(task.map_err(|e| format!("{label}: {e}"))?);
    }
    let seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    Ok(Measured::of(latencies, seconds, count))
}

/// Runs `op` on a fixed schedule (open loop): operation `i` is due at `i / rate` seconds after
/// the start whether or not earlier ones have answered, with up to `in_flight` running at once.
/// Its latency runs from when it was due, not from when it could start, so a stall counts
/// against every request it held back (no coordinated omission). Operations due inside the
/// measured window are recorded; they are numbered from `first_seq`. The first failing
/// operation ends the run.
pub async fn drive_open<F, Fut>(
    label: &str,
    rate: f64,
    in_flight: usize,
    first_seq: u64,
    timing: Timing,
    op: F,
) -> Result<Measured>
where
    F: Fn(Op) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = OpResult> + Send + 'static,
{
    if !(rate.is_finite() && rate > 0.0) {
        return Err(format!("{label}: no rate to run at ({rate})").into());
    }
    let op = Arc::new(op);
    let slots = Arc::new(Semaphore::new(in_flight));
    let start = Instant::now();
    let from = start + timing.warmup;
    let until = from + timing.measure;
    let bar = progress(label, timing);
    let mut tasks = JoinSet::new();
    let mut latencies = Vec::new();
    let mut collect = |joined: std::result::Result<std::result::Result<Option<Duration>, OpError>, _>| -> Result<()> {
        let latency = joined.map_err(|e| format!("{label}: a load task failed: {e}"))?;
        latencies.extend(latency.map_err(|e| format!("{label}: {e}"))?);
        Ok(())
    };
    for i in 0u64.. {
        let due = start + Duration::from_secs_f64(i as f64 / rate);
        if due >= until {
            break;
        }
        while let Some(joined) = tasks.try_join_next() {
            collect(joined)?;
        }
        tokio::time::sleep_until(due).await;
        bar.set_position(start.elapsed().as_millis() as u64);
        // Waiting for a free slot delays the start, and the latency counts the wait.
        let slot = Arc::clone(&slots).acquire_owned().await.map_err(|e| format!("{label}: {e}"))?;
        let op = Arc::clone(&op);
        tasks.spawn(async move {
            let _slot = slot;
            op(Op { worker: i as usize % in_flight, seq: first_seq + i }).await?;
            Ok::<_, OpError>((due >= from).then(|| due.elapsed()))
        });
    }
    while let Some(joined) = tasks.join_next().await {
        collect(joined)?;
    }
    bar.finish_and_clear();
    let items = latencies.len() as u64;
    Ok(Measured::of(latencies, timing.measure.as_secs_f64(), items))
}

fn progress(label: &str, timing: Timing) -> ProgressBar {
    let total_ms = (timing.warmup + timing.measure).as_millis() as u64;
    let bar = ProgressBar::new(total_ms).with_message(label.to_owned());
    bar.set_style(
        ProgressStyle::with_template("{msg:<44} [{bar:30}] {percent:>3}%")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|v| Duration::from_millis(*v)).collect()
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let sorted = ms(&(1..=100).collect::<Vec<_>>());
        assert_eq!(percentile(&sorted, 50.0), Duration::from_millis(50));
        assert_eq!(percentile(&sorted, 99.0), Duration::from_millis(99));
        assert_eq!(percentile(&sorted, 100.0), Duration::from_millis(100));
        assert_eq!(percentile(&ms(&[7]), 99.0), Duration::from_millis(7));
        assert_eq!(percentile(&ms(&[1, 2, 3]), 50.0), Duration::from_millis(2));
        assert_eq!(percentile(&[], 50.0), Duration::ZERO);
    }

    #[test]
    fn a_single_operation_rates_its_items() {
        let measured = Measured::single(Duration::from_secs(4), 10_000);
        assert_eq!(measured.ops(), 1);
        assert!((measured.rate() - 2_500.0).abs() < 1e-6);
        assert!((measured.percentile_ms(99.0) - 4_000.0).abs() < 1e-6);
    }

    #[tokio::test]
    async fn drive_counts_only_the_measured_window() {
        let timing = Timing { warmup: Duration::from_millis(100), measure: Duration::from_millis(300) };
        let measured = drive("test", 4, timing, |_| async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Ok(())
        })
        .await
        .expect("runs");
        // 4 tasks at ~100 ops/s each for 0.3 s: about 120, fewer on a loaded machine.
        assert!(measured.ops() > 20 && measured.ops() <= 130, "{} ops", measured.ops());
        assert!(measured.percentile_ms(50.0) >= 10.0);
    }

    #[tokio::test]
    async fn drive_count_runs_each_operation_once() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let measured = drive_count("test", 4, 50, move |op| {
            let record = Arc::clone(&record);
            async move {
                record.lock().expect("not poisoned").push(op.seq);
                tokio::task::yield_now().await;
                Ok(())
            }
        })
        .await
        .expect("runs");
        assert_eq!(measured.ops(), 50);
        let mut seen = seen.lock().expect("not poisoned").clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..50).collect::<Vec<u64>>());
    }

    #[test]
    fn batches_rate_their_rows() {
        let measured = Measured::of(vec![Duration::from_secs(3), Duration::from_secs(1)], 4.0, 10_000);
        assert!((measured.rate() - 2_500.0).abs() < 1e-6);
        assert!((measured.percentile_ms(50.0) - 1_000.0).abs() < 1e-6);
        assert!((measured.percentile_ms(99.0) - 3_000.0).abs() < 1e-6);
    }

    #[tokio::test]
    async fn the_first_error_ends_the_run() {
        let timing = Timing { warmup: Duration::ZERO, measure: Duration::from_secs(30) };
        let result = drive("test", 2, timing, |op| async move {
            // Real operations wait on I/O; only there can a task be stopped.
            tokio::task::yield_now().await;
            if op.seq == 5 { Err("boom".into()) } else { Ok(()) }
        })
        .await;
        assert!(result.is_err_and(|e| e.to_string().contains("boom")));
    }

    #[tokio::test]
    async fn drive_open_keeps_its_schedule_and_times_from_it() {
        // 200/s for 0.5 s measured: about 100 operations, started whether or not others ended.
        let timing = Timing { warmup: Duration::from_millis(100), measure: Duration::from_millis(500) };
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let measured = drive_open("test", 200.0, 64, 1_000, timing, move |op| {
            record.lock().expect("not poisoned").push(op.seq);
            // Slower than the schedule's interval: a closed loop of one would fall behind.
            async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok(())
            }
        })
        .await
        .expect("runs");
        assert!((95..=105).contains(&measured.ops()), "{} ops", measured.ops());
        assert!(measured.percentile_ms(50.0) >= 20.0);
        let seen = seen.lock().expect("not poisoned").clone();
        assert_eq!(seen.len(), 120, "every operation due in warm-up and window started");
        assert_eq!(seen.first(), Some(&1_000));
    }

    #[tokio::test]
    async fn drive_open_counts_a_stall_against_the_requests_it_held_back() {
        // One slot and 10 ms operations at 200/s: every request waits for the ones before it,
        // and that wait is in its latency.
        let timing = Timing { warmup: Duration::ZERO, measure: Duration::from_millis(200) };
        let measured = drive_open("test", 200.0, 1, 0, timing, |_| async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Ok(())
        })
        .await
        .expect("runs");
        assert_eq!(measured.ops(), 40);
        assert!(measured.percentile_ms(99.0) >= 150.0, "p99 {} ms", measured.percentile_ms(99.0));
    }
}
