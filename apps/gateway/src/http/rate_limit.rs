//! 120 requests per minute per Bearer token (contract: Limits), as a sliding log of accepted
//! request times: never more than the limit in any rolling 60 seconds. A fixed window or a
//! token bucket would let up to twice the limit through around a boundary.
//!
//! Keys are SHA-256 hashes of the token, never the token. The in-memory limiter is exact for
//! one gateway; the PostgreSQL limiter keeps the log in the database so the limit holds
//! across any number of gateways.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use diesel::sql_types::{Bool, Bytea, Integer, Interval, Nullable, Timestamptz};
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
        let mut short = [0u8; 16];
        for (slot, byte) in short.iter_mut().zip(key) {
            *slot = *byte;
        }
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

/// The sliding log in PostgreSQL (`rate_limit_hit` in the store migration), one round trip
/// per request, serialized per token by an advisory lock.
pub struct PostgresLimiter {
    limit: u32,
    pool: store::Pool,
}

#[derive(diesel::QueryableByName)]
struct Hit {
    #[diesel(sql_type = Bool)]
    allowed: bool,
    #[diesel(sql_type = Integer)]
    used: i32,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    oldest: Option<OffsetDateTime>,
}

impl PostgresLimiter {
    pub fn new(limit: u32, pool: store::Pool) -> Self {
        Self { limit, pool }
    }

    pub async fn check(&self, key: &[u8], now: OffsetDateTime) -> Result<Decision, Error> {
        let mut conn = store::connect(&self.pool).await?;
        let hit: Hit = diesel::sql_query("SELECT * FROM rate_limit_hit($1, $2, $3, $4)")
            .bind::<Bytea, _>(key)
            .bind::<Timestamptz, _>(now)
            .bind::<Interval, _>(diesel::data_types::PgInterval::from_microseconds(WINDOW.whole_microseconds() as i64))
            .bind::<Integer, _>(self.limit as i32)
            .get_result(&mut conn)
            .await?;
        Ok(decide(self.limit, hit.used as u32, hit.allowed, hit.oldest.unwrap_or(now), now))
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
