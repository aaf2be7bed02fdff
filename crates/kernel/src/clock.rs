//! Time comes from the clock (house rule 7): schedules, TTLs, retry delays, rate-limit windows
//! and idempotency windows read it, so tests move time instead of sleeping.

use std::sync::{Arc, Mutex};

use time::{Duration, OffsetDateTime};

#[derive(Debug, Clone, Default)]
pub struct Clock {
    /// `None` is the system clock; `Some` is a manual clock shared by its clones.
    manual: Option<Arc<Mutex<OffsetDateTime>>>,
}

impl Clock {
    pub fn system() -> Self {
        Self { manual: None }
    }

    /// A clock that stands still until moved.
    pub fn manual(start: OffsetDateTime) -> Self {
        Self { manual: Some(Arc::new(Mutex::new(start))) }
    }

    pub fn now(&self) -> OffsetDateTime {
        match &self.manual {
            None => OffsetDateTime::now_utc(),
            Some(at) => *at.lock().unwrap_or_else(|poisoned| poisoned.into_inner()),
        }
    }

    /// Moves a manual clock forward; the system clock ignores it.
    pub fn advance(&self, by: Duration) {
        if let Some(at) = &self.manual {
            let mut at = at.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            *at += by;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_for_every_clone() {
        let clock = Clock::manual(OffsetDateTime::UNIX_EPOCH);
        let other = clock.clone();
        clock.advance(Duration::seconds(5));
        assert_eq!(other.now(), OffsetDateTime::UNIX_EPOCH + Duration::seconds(5));
    }
}
