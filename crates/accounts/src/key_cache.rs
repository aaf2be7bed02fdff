//! The keys a gateway has recently seen, so that a request is authenticated without a query
//! (docs/operations.md, "Authentication cache").
//!
//! A cached key is trusted only while the gateway listens to `svc_auth`, where the database
//! tells every gateway the tenant of each change to a key, a user or a tenant (migration
//! `2026-11-27-000044_auth_notify`): a revoked key, a user's new permissions or a suspended
//! account apply to the next request on every gateway. Without the listener (not started, or
//! its connection lost) nothing is cached and every request looks its key up. Entries also
//! age out after the configured time, and the cache empties when it reaches its size.

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use store::listen::Heard;

use crate::keys::KeyRecord;

/// The channel the migrations' triggers notify (payload: a tenant id).
pub const CHANNEL: &str = "svc_auth";

/// At most this many keys are kept; a full cache starts again empty.
const MAX_KEYS: usize = 100_000;

#[derive(Debug)]
pub struct KeyCache {
    keys: RwLock<HashMap<Vec<u8>, (KeyRecord, Instant)>>,
    /// Whether the listener holds: nothing is read from or written to the cache otherwise.
    listening: AtomicBool,
    /// Counts what could make a lookup stale: a lookup that began before a change is not kept.
    changes: AtomicU64,
    ttl: Duration,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// What `/metrics` shows of the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub keys: u64,
    pub listening: bool,
}

/// Where a lookup stands: the count of changes when it began.
#[derive(Debug, Clone, Copy)]
struct Ticket(u64);

impl KeyCache {
    /// A cache keeping keys for `ttl`; it holds nothing until [`KeyCache::hear`] says
    /// [`Heard::Listening`].
    pub fn new(ttl: Duration) -> Self {
        Self {
            keys: RwLock::new(HashMap::new()),
            listening: AtomicBool::new(false),
            changes: AtomicU64::new(0),
            ttl,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The key a Bearer token names: from the cache when it holds it, else looked up (on a
    /// global-scope connection) and kept.
    pub async fn key(&self, pool: &store::Pool, token: &str) -> Result<KeyRecord, kernel::Error> {
        let hash = crate::keys::hash(token);
        if let Some(key) = self.get(&hash) {
            return Ok(key);
        }
        let ticket = self.ticket();
        let key = crate::keys::lookup(&mut *store::connect_global(pool).await?, token).await?;
        self.put(hash, key.clone(), ticket);
        Ok(key)
    }

    /// The record of the key with this hash, when cached and fresh.
    fn get(&self, hash: &[u8]) -> Option<KeyRecord> {
        if !self.listening.load(Ordering::Acquire) {
            return None;
        }
        let keys = self.keys.read().unwrap_or_else(|e| e.into_inner());
        let found = keys.get(hash).filter(|(_, at)| at.elapsed() < self.ttl).map(|(record, _)| record.clone());
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Taken before a lookup, given back to [`KeyCache::put`].
    fn ticket(&self) -> Ticket {
        Ticket(self.changes.load(Ordering::Acquire))
    }

    /// Keeps a looked-up record, unless something changed since its lookup began.
    fn put(&self, hash: Vec<u8>, record: KeyRecord, ticket: Ticket) {
        if self.ttl.is_zero() || !self.listening.load(Ordering::Acquire) {
            return;
        }
        let mut keys = self.keys.write().unwrap_or_else(|e| e.into_inner());
        // checked under the lock that a change takes too, so no change slips in between
        if self.changes.load(Ordering::Acquire) != ticket.0 {
            return;
        }
        if keys.len() >= MAX_KEYS {
            keys.clear();
        }
        keys.insert(hash, (record, Instant::now()));
    }

    /// What the listener heard: a tenant's keys are dropped; a gained or lost listener
    /// empties the cache (messages may have been missed).
    pub fn hear(&self, heard: Heard) {
        let mut keys = self.keys.write().unwrap_or_else(|e| e.into_inner());
        self.changes.fetch_add(1, Ordering::AcqRel);
        match heard {
            Heard::Message(payload) => match payload.parse::<i64>() {
                Ok(tenant) => keys.retain(|_, (record, _)| record.tenant_id().0 != tenant),
                Err(_) => keys.clear(),
            },
            Heard::Listening => {
                keys.clear();
                self.listening.store(true, Ordering::Release);
            }
            Heard::Lost => {
                self.listening.store(false, Ordering::Release);
                keys.clear();
            }
        }
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            keys: self.len() as u64,
            listening: self.listening.load(Ordering::Acquire),
        }
    }

    pub fn len(&self) -> usize {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(tenant: i64) -> KeyRecord {
        KeyRecord {
            key_id: tenant * 10,
            tenant_id: tenant,
            key_name: "k".into(),
            legacy: false,
            expires_at: None,
            revoked_at: None,
            tenant_status: "active".into(),
            calling_code: "255".into(),
            user: None,
        }
    }

    fn listening() -> KeyCache {
        let cache = KeyCache::new(Duration::from_secs(60));
        cache.hear(Heard::Listening);
        cache
    }

    #[test]
    fn nothing_is_kept_until_the_listener_holds_nor_after_it_is_lost() {
        let cache = KeyCache::new(Duration::from_secs(60));
        cache.put(b"a".to_vec(), record(1), cache.ticket());
        assert!(cache.get(b"a").is_none());
        cache.hear(Heard::Listening);
        cache.put(b"a".to_vec(), record(1), cache.ticket());
        assert_eq!(cache.get(b"a").map(|r| r.tenant_id), Some(1));
        cache.hear(Heard::Lost);
        assert!(cache.get(b"a").is_none());
        cache.put(b"a".to_vec(), record(1), cache.ticket());
        assert!(cache.is_empty());
    }

    #[test]
    fn a_tenants_message_drops_that_tenants_keys_only() {
        let cache = listening();
        cache.put(b"a".to_vec(), record(1), cache.ticket());
        cache.put(b"b".to_vec(), record(2), cache.ticket());
        cache.hear(Heard::Message("1".into()));
        assert!(cache.get(b"a").is_none());
        assert!(cache.get(b"b").is_some());
        cache.hear(Heard::Message("not a tenant".into()));
        assert!(cache.is_empty(), "an unreadable message drops everything");
    }

    #[test]
    fn a_lookup_that_began_before_a_change_is_not_kept() {
        let cache = listening();
        let ticket = cache.ticket();
        cache.hear(Heard::Message("7".into()));
        cache.put(b"a".to_vec(), record(1), ticket);
        assert!(cache.get(b"a").is_none(), "it may have read the row before the change");
    }

    #[test]
    fn entries_age_out_and_a_zero_ttl_keeps_nothing() {
        let cache = KeyCache::new(Duration::from_millis(1));
        cache.hear(Heard::Listening);
        cache.put(b"a".to_vec(), record(1), cache.ticket());
        std::thread::sleep(Duration::from_millis(5));
        assert!(cache.get(b"a").is_none());
        let off = KeyCache::new(Duration::ZERO);
        off.hear(Heard::Listening);
        off.put(b"a".to_vec(), record(1), off.ticket());
        assert!(off.is_empty());
    }
}
