//! The receiver status and the delivery state machine, one table each that both the Rust code
//! ([`WebhookStatus::apply`], [`DeliveryState::apply`]) and the SQL guards (`sources`, and
//! [`DeliveryState::sql`] where a partial index needs the literal) read. No other code spells a
//! status.

use std::fmt;

/// A receiver's status: `active`, or `paused` after consecutive failed attempts (stored as
/// `paused_at`: a receiver is paused exactly when it has one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebhookStatus {
    Active,
    /// New events are held for it until a replay or a recovery resumes it.
    Paused,
}

/// What happens to a receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WebhookEvent {
    /// Its consecutive failures reached the configured bound (fifty by default).
    Pause,
    /// A replay or `POST /webhooks/{webhook}/recover`.
    Resume,
}

/// Every allowed receiver transition: (from, event, to).
pub const WEBHOOK_TRANSITIONS: &[(WebhookStatus, WebhookEvent, WebhookStatus)] = &[
    (WebhookStatus::Active, WebhookEvent::Pause, WebhookStatus::Paused),
    (WebhookStatus::Paused, WebhookEvent::Resume, WebhookStatus::Active),
];

impl WebhookStatus {
    pub const ALL: [Self; 2] = [Self::Active, Self::Paused];

    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Paused => "paused",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == s)
    }

    /// The status a stored receiver is in.
    pub fn of<T>(paused_at: Option<T>) -> Self {
        if paused_at.is_some() { Self::Paused } else { Self::Active }
    }

    pub fn apply(self, event: WebhookEvent) -> Result<Self, IllegalTransition<Self, WebhookEvent>> {
        WEBHOOK_TRANSITIONS
            .iter()
            .find(|&&(from, on, _)| from == self && on == event)
            .map(|&(_, _, to)| to)
            .ok_or(IllegalTransition { from: self, event })
    }
}

impl fmt::Display for WebhookStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a delivery stands (`webhook_deliveries.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// Written by the fan-out for a receiver with filters: the event family's filter (code of
    /// the domain that owns the event, injected through the catalogue) has not looked at it
    /// yet. Never shown: the delivery log lists a delivery once it passed.
    Screening,
    /// Waiting for its next attempt (`next_attempt_at`).
    Pending,
    /// Its receiver is paused.
    Held,
    Delivered,
    /// Out of attempts, refused for good, or replaced by a replay.
    Failed,
}

/// What happens to a delivery; each event has exactly one target state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeliveryEvent {
    /// The filter passed it and its receiver is active. (One the filter refuses is deleted:
    /// it never existed for the receiver.)
    Admit,
    /// Its receiver is paused: when the filter passes it, or when the pause is recorded.
    Hold,
    /// Its receiver resumed: due now.
    Release,
    /// An attempt failed and the schedule allows another.
    Retry,
    /// An attempt succeeded.
    Deliver,
    /// The last attempt failed, or the answer means never again.
    Fail,
    /// A replay takes the place of its next automatic attempt.
    Cancel,
}

use DeliveryEvent as E;
use DeliveryState as S;

/// Every allowed delivery transition: (from, event, to).
pub const DELIVERY_TRANSITIONS: &[(DeliveryState, DeliveryEvent, DeliveryState)] = &[
    (S::Screening, E::Admit, S::Pending),
    (S::Screening, E::Hold, S::Held),
    (S::Pending, E::Hold, S::Held),
    (S::Held, E::Release, S::Pending),
    (S::Pending, E::Retry, S::Pending),
    (S::Pending, E::Deliver, S::Delivered),
    (S::Pending, E::Fail, S::Failed),
    (S::Pending, E::Cancel, S::Failed),
];

impl DeliveryState {
    pub const ALL: [Self; 5] = [S::Screening, S::Pending, S::Held, S::Delivered, S::Failed];
    /// The states the delivery log shows and filters by, in the order its message names them.
    pub const SHOWN: [Self; 4] = [S::Pending, S::Delivered, S::Failed, S::Held];

    /// The stored and wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            S::Screening => "screening",
            S::Pending => "pending",
            S::Held => "held",
            S::Delivered => "delivered",
            S::Failed => "failed",
        }
    }

    /// The value as an SQL literal, for statements whose plan must see it (the partial indexes
    /// `WHERE state = 'pending'` are only used when the query names the state literally).
    pub fn sql(self) -> String {
        format!("'{}'", self.as_str())
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.as_str() == s)
    }

    /// A state the delivery log shows.
    pub fn parse_shown(s: &str) -> Option<Self> {
        Self::SHOWN.into_iter().find(|state| state.as_str() == s)
    }

    pub fn is_final(self) -> bool {
        !DELIVERY_TRANSITIONS.iter().any(|&(from, _, _)| from == self)
    }

    pub fn apply(self, event: DeliveryEvent) -> Result<Self, IllegalTransition<Self, DeliveryEvent>> {
        DELIVERY_TRANSITIONS
            .iter()
            .find(|&&(from, on, _)| from == self && on == event)
            .map(|&(_, _, to)| to)
            .ok_or(IllegalTransition { from: self, event })
    }
}

impl fmt::Display for DeliveryState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl DeliveryEvent {
    pub const ALL: [Self; 7] = [E::Admit, E::Hold, E::Release, E::Retry, E::Deliver, E::Fail, E::Cancel];

    pub fn target(self) -> DeliveryState {
        match self {
            E::Admit | E::Release | E::Retry => S::Pending,
            E::Hold => S::Held,
            E::Deliver => S::Delivered,
            E::Fail | E::Cancel => S::Failed,
        }
    }

    /// The states this event may leave, as stored values: for SQL `state = ANY($1)`.
    pub fn sources(self) -> Vec<&'static str> {
        DELIVERY_TRANSITIONS.iter().filter(|&&(_, on, _)| on == self).map(|&(from, _, _)| from.as_str()).collect()
    }
}

/// An event the current status or state does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IllegalTransition<S, E> {
    pub from: S,
    pub event: E,
}

impl<S: fmt::Display, E: fmt::Debug> fmt::Display for IllegalTransition<S, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} cannot take the {:?} event", self.from, self.event)
    }
}

impl<S: fmt::Display + fmt::Debug, E: fmt::Debug> std::error::Error for IllegalTransition<S, E> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receiver_pauses_when_active_and_resumes_when_paused() {
        assert_eq!(WebhookStatus::Active.apply(WebhookEvent::Pause), Ok(WebhookStatus::Paused));
        assert_eq!(WebhookStatus::Paused.apply(WebhookEvent::Resume), Ok(WebhookStatus::Active));
        assert!(WebhookStatus::Paused.apply(WebhookEvent::Pause).is_err());
        assert!(WebhookStatus::Active.apply(WebhookEvent::Resume).is_err());
    }

    #[test]
    fn a_receiver_is_paused_exactly_when_it_has_a_pause_time() {
        assert_eq!(WebhookStatus::of(Some(1)), WebhookStatus::Paused);
        assert_eq!(WebhookStatus::of(None::<i32>), WebhookStatus::Active);
    }

    #[test]
    fn screening_admits_or_holds() {
        assert_eq!(S::Screening.apply(E::Admit), Ok(S::Pending));
        assert_eq!(S::Screening.apply(E::Hold), Ok(S::Held));
        assert!(S::Screening.apply(E::Deliver).is_err());
    }

    #[test]
    fn a_pending_delivery_is_delivered_retried_failed_cancelled_or_held() {
        assert_eq!(S::Pending.apply(E::Deliver), Ok(S::Delivered));
        assert_eq!(S::Pending.apply(E::Retry), Ok(S::Pending));
        assert_eq!(S::Pending.apply(E::Fail), Ok(S::Failed));
        assert_eq!(S::Pending.apply(E::Cancel), Ok(S::Failed));
        assert_eq!(S::Pending.apply(E::Hold), Ok(S::Held));
    }

    #[test]
    fn a_held_delivery_is_released() {
        assert_eq!(S::Held.apply(E::Release), Ok(S::Pending));
        assert!(S::Held.apply(E::Deliver).is_err());
    }

    #[test]
    fn delivered_and_failed_are_final() {
        let finals: Vec<_> = S::ALL.into_iter().filter(|s| s.is_final()).collect();
        assert_eq!(finals, [S::Delivered, S::Failed]);
    }

    #[test]
    fn every_pair_outside_the_table_is_refused_and_each_event_has_one_target() {
        for from in S::ALL {
            for event in E::ALL {
                match DELIVERY_TRANSITIONS.iter().find(|&&(f, e, _)| f == from && e == event) {
                    Some(&(_, _, to)) => assert_eq!(from.apply(event), Ok(to)),
                    None => assert_eq!(from.apply(event), Err(IllegalTransition { from, event })),
                }
            }
        }
        for &(from, event, to) in DELIVERY_TRANSITIONS {
            assert_eq!(to, event.target(), "{from} {event:?}");
        }
    }

    #[test]
    fn sources_list_the_rows_of_the_event() {
        assert_eq!(E::Hold.sources(), ["screening", "pending"]);
        assert_eq!(E::Release.sources(), ["held"]);
        assert_eq!(E::Cancel.sources(), ["pending"]);
    }

    #[test]
    fn wire_values_round_trip_and_screening_is_never_shown() {
        for state in S::ALL {
            assert_eq!(S::parse(state.as_str()), Some(state));
            assert_eq!(serde_json::to_value(state).ok(), Some(serde_json::json!(state.as_str())));
        }
        for status in WebhookStatus::ALL {
            assert_eq!(WebhookStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(S::parse_shown("screening"), None);
        assert_eq!(S::Pending.sql(), "'pending'");
    }
}
