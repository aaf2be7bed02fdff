//! The receiver status and the delivery state machine, one table each that both the Rust code
//! ([`WebhookStatus::apply`], [`DeliveryState::apply`]) and the SQL guards (`sources`, and
//! [`DeliveryState::sql`] where a partial index needs the literal) read. No other code spells a
//! status.

use kernel::state::{Event, Status};

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

impl Status for WebhookStatus {
    type Event = WebhookEvent;
    const ALL: &'static [Self] = &[Self::Active, Self::Paused];

    /// The wire value.
    fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Paused => "paused",
        }
    }
}

impl Event for WebhookEvent {
    type Status = WebhookStatus;
    const ALL: &'static [Self] = &[Self::Pause, Self::Resume];
    const TRANSITIONS: &'static [(WebhookStatus, WebhookEvent, WebhookStatus)] = WEBHOOK_TRANSITIONS;
}

impl WebhookStatus {
    /// The status a stored receiver is in.
    pub fn of<T>(paused_at: Option<T>) -> Self {
        if paused_at.is_some() { Self::Paused } else { Self::Active }
    }
}

kernel::wire_text!(WebhookStatus);

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

impl Status for DeliveryState {
    type Event = DeliveryEvent;
    const ALL: &'static [Self] = &[S::Screening, S::Pending, S::Held, S::Delivered, S::Failed];

    /// The stored and wire value.
    fn as_str(self) -> &'static str {
        match self {
            S::Screening => "screening",
            S::Pending => "pending",
            S::Held => "held",
            S::Delivered => "delivered",
            S::Failed => "failed",
        }
    }
}

impl Event for DeliveryEvent {
    type Status = DeliveryState;
    const ALL: &'static [Self] = &[E::Admit, E::Hold, E::Release, E::Retry, E::Deliver, E::Fail, E::Cancel];
    const TRANSITIONS: &'static [(DeliveryState, DeliveryEvent, DeliveryState)] = DELIVERY_TRANSITIONS;
}

impl DeliveryState {
    /// The states the delivery log shows and filters by, in the order its message names them.
    pub const SHOWN: [Self; 4] = [S::Pending, S::Delivered, S::Failed, S::Held];

    /// The value as an SQL literal, for statements whose plan must see it (the partial indexes
    /// `WHERE state = 'pending'` are only used when the query names the state literally).
    pub fn sql(self) -> String {
        format!("'{}'", self.as_str())
    }

    /// A state the delivery log shows.
    pub fn parse_shown(s: &str) -> Option<Self> {
        Self::SHOWN.into_iter().find(|state| state.as_str() == s)
    }
}

kernel::wire_text!(DeliveryState);

pub use kernel::state::IllegalTransition;

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
        let finals: Vec<_> = S::ALL.iter().copied().filter(|s| s.is_final()).collect();
        assert_eq!(finals, [S::Delivered, S::Failed]);
    }

    #[test]
    fn both_tables_keep_the_rules_of_every_table() {
        kernel::state::check::<WebhookStatus>();
        kernel::state::check::<DeliveryState>();
    }

    #[test]
    fn sources_list_the_rows_of_the_event() {
        assert_eq!(E::Hold.sources(), ["screening", "pending"]);
        assert_eq!(E::Release.sources(), ["held"]);
        assert_eq!(E::Cancel.sources(), ["pending"]);
    }

    #[test]
    fn wire_values_round_trip_and_screening_is_never_shown() {
        for &state in S::ALL {
            assert_eq!(S::parse(state.as_str()), Some(state));
            assert_eq!(serde_json::to_value(state).ok(), Some(serde_json::json!(state.as_str())));
        }
        for &status in WebhookStatus::ALL {
            assert_eq!(WebhookStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(S::parse_shown("screening"), None);
        assert_eq!(S::Pending.sql(), "'pending'");
    }
}
