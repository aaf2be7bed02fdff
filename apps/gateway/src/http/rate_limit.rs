//! 120 requests per minute per Bearer token (contract: Limits), as a sliding log of accepted
//! request times: never more than the limit in any rolling 60 seconds. A fixed window or a
//! token bucket would let up to twice the limit through around a boundary.
//!
//! Keys are SHA-256 hashes of the token, never the token. The in-memory limiter is exact for
//! one gateway; the PostgreSQL limiter keeps the log in the database so the limit holds
//! across any number of gateways.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use diesel::sql_types::{Array, BigInt, Bytea, Integer, Interval, Nullable, Timestamptz};
use diesel_async::RunQueryDsl;
use kernel::{Clock, Error};
use time::{Duration, OffsetDateTime};

/// The rolling window.
pub const WINDOW: Duration = Duration::minutes(1);

/// What the limiter decided for one request; its numbers become the `X-RateLimit-*` headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Unix seconds when the oldest counted request ages out.
    pub reset: i64,
    /// Seconds to wait before a retry can succeed (0 when allowed).
    pub retry_after: i64,
}

pub enum RateLimiter {
    Memory(MemoryLimiter),
    Postgres(PostgresLimiter),
}

impl RateLimiter {
    pub async fn check(&self, key: &[u8], clock: &Clock) -> Result<Decision, Error> {
        match self {
            Self::Memory(limiter) => Ok(limiter.check(key, clock.now())),
            Self::Postgres(limiter) => limiter.check(key, clock.now()).await,
        }
    }
}

fn decide(limit: u32, used_after: u32, allowed: bool, oldest: OffsetDateTime, now: OffsetDateTime) -> Decision {
    let reset_at = oldest + WINDOW;
    Decision {
        allowed,
        limit,
        remaining: limit.saturating_sub(used_after),
        reset: reset_at.unix_timestamp() + i64::from(reset_at.nanosecond() > 0),
        // At `reset_at` itself the oldest request no longer counts, so waiting exactly the
        // rest of the window (rounded up to whole seconds) is enough.
        retry_after: if allowed { 0 } else { ceil_seconds(reset_at - now).max(1) },
    }
}

fn ceil_seconds(duration: Duration) -> i64 {
    duration.whole_seconds() + i64::from(duration.subsec_nanoseconds() > 0)
}

const SHARDS: usize = 16;
/// Entries a shard holds before idle tokens are swept out.
const SWEEP_AT: usize = 4096;

/// Per-process sliding logs, sharded to keep lock contention low. Memory stays bounded: a log
/// never holds more than `limit` times, and tokens idle for a window are swept.
pub struct MemoryLimiter {
    limit: u32,
    shards: Vec<Mutex<HashMap<[u8; 16], VecDeque<OffsetDateTime>>>>,
}

impl MemoryLimiter {
    pub fn new(limit: u32) -> Self {
        Self { limit, shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect() }
    }

    pub fn check(&self, key: &[u8], now: OffsetDateTime) -> Decision {
        let short = short_key(key);
        let shard = &self.shards[short[0] as usize % SHARDS];
        let mut logs = shard.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if logs.len() >= SWEEP_AT {
            logs.retain(|_, log| log.back().is_some_and(|last| *last > now - WINDOW));
        }
        let log = logs.entry(short).or_default();
        while log.front().is_some_and(|at| *at <= now - WINDOW) {
            log.pop_front();
        }
        let allowed = (log.len() as u32) < self.limit;
        if allowed {
            log.push_back(now);
        }
        let oldest = log.front().copied().unwrap_or(now);
        decide(self.limit, log.len() as u32, allowed, oldest, now)
    }
}

/// Permits one lease may hold at most: one statement serves up to this many requests.
const MAX_LEASE: i32 = 256;
/// How long a lease's permits may be spent. Its unspent permits count against the token (for
/// every gateway) until the lease is settled, or at worst for this long plus the window.
const LEASE_LIFE: Duration = Duration::seconds(1);
/// Spend times are rounded up to this, so that a settled lease writes a few rows, not one per
/// request. Rounding up only makes a request count a little longer, never shorter.
const SPEND_GRAIN_NANOS: i128 = 100_000_000;

/// The sliding log in PostgreSQL, shared by every gateway, taken in leases: one statement
/// (`rate_limit_lease` in the migrations) grants this gateway up to an eighth of what the token
/// has free, and the gateway spends those permits in the process for up to [`LEASE_LIFE`]. The
/// next statement for the token settles the ended leases with the times their permits were
/// spent. A token near its limit gets leases of one permit: exact, request by request.
///
/// Never more than the limit in any rolling window, across gateways: a permit is in the log from
/// its grant until at least a window after it was spent. The price is on the safe side: a
/// token can be refused early by the permits other gateways hold unspent (see
/// docs/operations.md, "Rate limiting across several gateways").
pub struct PostgresLimiter {
    limit: u32,
    pool: store::Pool,
    shards: Vec<Mutex<HashMap<[u8; 16], Leases>>>,
}

/// One token's leases in this process.
#[derive(Default)]
struct Leases {
    open: Vec<Lease>,
    /// What the token had free in the log at the last statement, this gateway's leases counted as used.
    free: u32,
    /// The oldest counted time at the last statement, for `X-RateLimit-Reset`.
    oldest: Option<OffsetDateTime>,
}

struct Lease {
    id: i64,
    until: OffsetDateTime,
    left: u32,
    /// Spend times rounded up to the grain, with the permits spent at each.
    spent: Vec<(OffsetDateTime, i32)>,
}

impl Lease {
    fn spend(&mut self, now: OffsetDateTime) {
        self.left -= 1;
        let at = grain(now);
        match self.spent.last_mut() {
            Some((last, n)) if *last == at => *n += 1,
            _ => self.spent.push((at, 1)),
        }
    }
}

fn grain(at: OffsetDateTime) -> OffsetDateTime {
    let nanos = at.unix_timestamp_nanos();
    let up = (nanos + SPEND_GRAIN_NANOS - 1).div_euclid(SPEND_GRAIN_NANOS) * SPEND_GRAIN_NANOS;
    OffsetDateTime::from_unix_timestamp_nanos(up).unwrap_or(at)
}

impl Leases {
    /// Permits still spendable here at `now`.
    fn left(&self, now: OffsetDateTime) -> u32 {
        self.open.iter().filter(|l| now < l.until).map(|l| l.left).sum()
    }
}

#[derive(diesel::QueryableByName)]
struct Granted {
    #[diesel(sql_type = Integer)]
    granted: i32,
    #[diesel(sql_type = Integer)]
    used: i32,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    oldest: Option<OffsetDateTime>,
}

fn short_key(key: &[u8]) -> [u8; 16] {
    let mut short = [0u8; 16];
    for (slot, byte) in short.iter_mut().zip(key) {
        *slot = *byte;
    }
    short
}

impl PostgresLimiter {
    pub fn new(limit: u32, pool: store::Pool) -> Self {
        Self { limit, pool, shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect() }
    }

    fn shard(&self, short: &[u8; 16]) -> std::sync::MutexGuard<'_, HashMap<[u8; 16], Leases>> {
        self.shards[short[0] as usize % SHARDS].lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The headers' count: what the log had free, plus what this gateway holds unspent.
    fn decision(&self, leases: &Leases, allowed: bool, now: OffsetDateTime) -> Decision {
        let remaining = leases.free.saturating_add(leases.left(now)).min(self.limit);
        decide(self.limit, self.limit - remaining, allowed, leases.oldest.unwrap_or(now), now)
    }

    pub async fn check(&self, key: &[u8], now: OffsetDateTime) -> Result<Decision, Error> {
        let short = short_key(key);
        // Spend a permit of an open lease; else take the ended leases out to settle them.
        let ended = {
            let mut tokens = self.shard(&short);
            if tokens.len() >= SWEEP_AT {
                // A token dropped here keeps its unsettled permits counted until they age out.
                tokens.retain(|_, t| t.open.iter().any(|l| l.until > now - WINDOW));
            }
            let leases = tokens.entry(short).or_default();
            if let Some(lease) = leases.open.iter_mut().find(|l| l.left > 0 && now < l.until) {
                lease.spend(now);
                return Ok(self.decision(leases, true, now));
            }
            std::mem::take(&mut leases.open)
        };
        let (mut settled, mut spent_at, mut spent) = (Vec::new(), Vec::new(), Vec::new());
        for lease in &ended {
            settled.push(lease.id);
            for (at, n) in &lease.spent {
                spent_at.push(*at);
                spent.push(*n);
            }
        }
        let id = i64::from_ne_bytes(uuid::Uuid::new_v4().as_bytes()[..8].try_into().unwrap_or_default());
        let until = now + LEASE_LIFE;
        let mut conn = store::connect_global(&self.pool).await?;
        let lease: Granted =
            diesel::sql_query("SELECT * FROM rate_limit_lease($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)")
                .bind::<Bytea, _>(key)
                .bind::<Timestamptz, _>(now)
                .bind::<Interval, _>(diesel::data_types::PgInterval::from_microseconds(
                    WINDOW.whole_microseconds() as i64
                ))
                .bind::<Integer, _>(self.limit as i32)
                .bind::<Integer, _>(MAX_LEASE)
                .bind::<BigInt, _>(id)
                .bind::<Timestamptz, _>(until)
                .bind::<Array<BigInt>, _>(settled)
                .bind::<Array<Timestamptz>, _>(spent_at)
                .bind::<Array<Integer>, _>(spent)
                .get_result(&mut conn)
                .await?;
        drop(conn);

        let mut tokens = self.shard(&short);
        let leases = tokens.entry(short).or_default();
        leases.free = self.limit.saturating_sub(lease.used.max(0) as u32);
        leases.oldest = lease.oldest;
        let allowed = lease.granted > 0;
        if allowed {
            let mut granted = Lease { id, until, left: lease.granted as u32, spent: Vec::with_capacity(4) };
            granted.spend(now);
            leases.open.push(granted);
        }
        Ok(self.decision(leases, allowed, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_more_than_the_limit_in_any_rolling_window() {
        let limiter = MemoryLimiter::new(3);
        let t0 = OffsetDateTime::UNIX_EPOCH + Duration::days(1);
        let key = [7u8; 32];
        assert!(limiter.check(&key, t0).allowed);
        assert!(limiter.check(&key, t0 + Duration::seconds(50)).allowed);
        assert!(limiter.check(&key, t0 + Duration::seconds(59)).allowed);
        let refused = limiter.check(&key, t0 + Duration::seconds(59));
        assert!(!refused.allowed);
        assert_eq!(refused.remaining, 0);
        assert_eq!(refused.reset, (t0 + Duration::seconds(60)).unix_timestamp());
        // One request aged out: one more fits, then no more until the next ages out.
        assert!(limiter.check(&key, t0 + Duration::seconds(61)).allowed);
        assert!(!limiter.check(&key, t0 + Duration::seconds(62)).allowed);
        assert!(limiter.check(&key, t0 + Duration::seconds(111)).allowed);
        // Other tokens have their own log.
        assert!(limiter.check(&[8u8; 32], t0 + Duration::seconds(62)).allowed);
    }
}
