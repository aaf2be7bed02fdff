//! The message state machine (contract: States and transitions — Message status), one table
//! that both [`MessageStatus::apply`] and the SQL guards ([`MessageEvent::sources`]) read.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    Queued,
    Processing,
    Sent,
    CheckingDelivery,
    Delivered,
    Read,
    Failed,
    /// Inbound only; recorded in this state and never moves.
    Received,
}

/// What happens to a message; each event has exactly one target status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageEvent {
    /// A worker or an immediate request claims it.
    Claim,
    /// The provider accepts it (the caller sets `sent_at`).
    Accept,
    /// Provider refusal or send exception (the caller sets `error_message`).
    Refuse,
    /// Delivery receipt, also one obtained by a status check (the caller sets `delivered_at`).
    Deliver,
    /// Failed delivery receipt.
    DeliveryFail,
    /// No receipt after the configured wait. Our choice: the contract leaves the position of
    /// `checking_delivery` open, so it sits between `sent` and a receipt.
    ReceiptOverdue,
    /// Chat only, read receipts on (the caller sets `read_at`).
    ReadReceipt,
    /// Its campaign was cancelled before dispatch. Our choice: the contract has no `cancelled`
    /// message status, so the message fails.
    Cancel,
}

use MessageEvent as E;
use MessageStatus as S;

/// Every allowed transition: (from, event, to).
pub const TRANSITIONS: &[(MessageStatus, MessageEvent, MessageStatus)] = &[
    (S::Queued, E::Claim, S::Processing),
    (S::Queued, E::Cancel, S::Failed),
    (S::Processing, E::Accept, S::Sent),
    (S::Processing, E::Refuse, S::Failed),
    (S::Sent, E::Refuse, S::Failed),
    (S::Sent, E::Deliver, S::Delivered),
    (S::Sent, E::DeliveryFail, S::Failed),
    (S::Sent, E::ReceiptOverdue, S::CheckingDelivery),
    (S::CheckingDelivery, E::Deliver, S::Delivered),
    (S::CheckingDelivery, E::DeliveryFail, S::Failed),
    (S::Delivered, E::ReadReceipt, S::Read),
];

impl MessageStatus {
    pub const ALL: [Self; 8] =
        [S::Queued, S::Processing, S::Sent, S::CheckingDelivery, S::Delivered, S::Read, S::Failed, S::Received];

    /// The contract's wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            S::Queued => "queued",
            S::Processing => "processing",
            S::Sent => "sent",
            S::CheckingDelivery => "checking_delivery",
            S::Delivered => "delivered",
            S::Read => "read",
            S::Failed => "failed",
            S::Received => "received",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == s)
    }

    /// No event leaves it: `read`, `failed`, `received`. `delivered` is not final because a
    /// chat read receipt may follow; an SMS simply stays `delivered`.
    pub fn is_final(self) -> bool {
        !TRANSITIONS.iter().any(|&(from, _, _)| from == self)
    }

    pub fn apply(self, event: MessageEvent) -> Result<MessageStatus, IllegalTransition> {
        TRANSITIONS
            .iter()
            .find(|&&(from, on, _)| from == self && on == event)
            .map(|&(_, _, to)| to)
            .ok_or(IllegalTransition { from: self, event })
    }
}

impl fmt::Display for MessageStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl MessageEvent {
    pub const ALL: [Self; 8] =
        [E::Claim, E::Accept, E::Refuse, E::Deliver, E::DeliveryFail, E::ReceiptOverdue, E::ReadReceipt, E::Cancel];

    pub fn target(self) -> MessageStatus {
        match self {
            E::Claim => S::Processing,
            E::Accept => S::Sent,
            E::Refuse | E::DeliveryFail | E::Cancel => S::Failed,
            E::Deliver => S::Delivered,
            E::ReceiptOverdue => S::CheckingDelivery,
            E::ReadReceipt => S::Read,
        }
    }

    /// The statuses this event may leave, as wire values: for SQL `WHERE status = ANY($1)`, so
    /// the database applies the same table under concurrency.
    pub fn sources(self) -> Vec<&'static str> {
        TRANSITIONS.iter().filter(|&&(_, on, _)| on == self).map(|&(from, _, _)| from.as_str()).collect()
    }
}

/// An event the message's current status does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IllegalTransition {
    pub from: MessageStatus,
    pub event: MessageEvent,
}

impl fmt::Display for IllegalTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {} message cannot take the {:?} event", self.from, self.event)
    }
}

impl std::error::Error for IllegalTransition {}

#[cfg(test)]
mod tests {
    use super::*;

    // One test per row of the contract's Message status table. Rows "(created) -> queued" and
    // "(inbound) -> received" are insertions, not transitions; the caller writes those statuses.

    #[test]
    fn queued_worker_or_immediate_request_claims_it_processing() {
        assert_eq!(S::Queued.apply(E::Claim), Ok(S::Processing));
    }

    #[test]
    fn processing_provider_accepts_sent() {
        assert_eq!(S::Processing.apply(E::Accept), Ok(S::Sent));
    }

    #[test]
    fn sent_delivery_receipt_delivered() {
        assert_eq!(S::Sent.apply(E::Deliver), Ok(S::Delivered));
    }

    #[test]
    fn delivered_read_receipt_read() {
        assert_eq!(S::Delivered.apply(E::ReadReceipt), Ok(S::Read));
    }

    #[test]
    fn processing_or_sent_provider_refusal_or_send_exception_failed() {
        assert_eq!(S::Processing.apply(E::Refuse), Ok(S::Failed));
        assert_eq!(S::Sent.apply(E::Refuse), Ok(S::Failed));
    }

    #[test]
    fn inbound_received_takes_no_event() {
        for event in E::ALL {
            assert_eq!(S::Received.apply(event), Err(IllegalTransition { from: S::Received, event }));
        }
    }

    // Our choices where the contract says "not shown".

    #[test]
    fn checking_delivery_sits_between_sent_and_a_receipt() {
        assert_eq!(S::Sent.apply(E::ReceiptOverdue), Ok(S::CheckingDelivery));
        assert_eq!(S::CheckingDelivery.apply(E::Deliver), Ok(S::Delivered));
        assert_eq!(S::CheckingDelivery.apply(E::DeliveryFail), Ok(S::Failed));
        assert_eq!(S::Sent.apply(E::DeliveryFail), Ok(S::Failed));
    }

    #[test]
    fn cancelled_campaign_fails_its_queued_messages() {
        assert_eq!(S::Queued.apply(E::Cancel), Ok(S::Failed));
        assert!(S::Processing.apply(E::Cancel).is_err());
    }

    #[test]
    fn every_pair_outside_the_table_is_refused() {
        for from in S::ALL {
            for event in E::ALL {
                let row = TRANSITIONS.iter().find(|&&(f, e, _)| f == from && e == event);
                match row {
                    Some(&(_, _, to)) => assert_eq!(from.apply(event), Ok(to)),
                    None => assert_eq!(from.apply(event), Err(IllegalTransition { from, event })),
                }
            }
        }
    }

    #[test]
    fn each_event_has_exactly_one_target() {
        for &(from, event, to) in TRANSITIONS {
            assert_eq!(to, event.target(), "{from} {event:?}");
        }
        for event in E::ALL {
            assert!(TRANSITIONS.iter().any(|&(_, e, _)| e == event), "{event:?} is in no row");
        }
    }

    #[test]
    fn no_duplicate_rows() {
        for (i, &(from, event, _)) in TRANSITIONS.iter().enumerate() {
            assert!(!TRANSITIONS[i + 1..].iter().any(|&(f, e, _)| f == from && e == event));
        }
    }

    #[test]
    fn final_statuses_are_read_failed_received() {
        let finals: Vec<_> = S::ALL.into_iter().filter(|s| s.is_final()).collect();
        assert_eq!(finals, [S::Read, S::Failed, S::Received]);
    }

    #[test]
    fn sources_list_the_rows_of_the_event() {
        assert_eq!(E::Refuse.sources(), ["processing", "sent"]);
        assert_eq!(E::Deliver.sources(), ["sent", "checking_delivery"]);
        assert_eq!(E::Claim.sources(), ["queued"]);
    }

    #[test]
    fn wire_values_round_trip() {
        for status in S::ALL {
            assert_eq!(S::parse(status.as_str()), Some(status));
            assert_eq!(serde_json::to_value(status).ok(), Some(serde_json::json!(status.as_str())));
        }
        assert_eq!(S::parse("Queued"), None);
        assert_eq!(S::parse("cancelled"), None);
    }

    #[test]
    fn illegal_transition_says_what_was_refused() {
        let err = S::Failed.apply(E::Accept).err();
        assert_eq!(err.map(|e| e.to_string()).as_deref(), Some("a failed message cannot take the Accept event"));
    }
}
