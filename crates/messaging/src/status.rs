//! The message state machine (contract: States and transitions — Message status), one table
//! that both [`MessageStatus::apply`] and the SQL guards ([`MessageEvent::sources`]) read.

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
    // Our choice: a read receipt that overtakes its delivery receipt (providers do not promise
    // their order) stands for both.
    (S::Sent, E::ReadReceipt, S::Read),
    (S::CheckingDelivery, E::ReadReceipt, S::Read),
];

impl kernel::state::Status for MessageStatus {
    type Event = MessageEvent;
    const ALL: &'static [Self] =
        &[S::Queued, S::Processing, S::Sent, S::CheckingDelivery, S::Delivered, S::Read, S::Failed, S::Received];

    /// The contract's wire value.
    fn as_str(self) -> &'static str {
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
}

kernel::wire_text!(MessageStatus);

impl kernel::state::Event for MessageEvent {
    type Status = MessageStatus;
    const ALL: &'static [Self] =
        &[E::Claim, E::Accept, E::Refuse, E::Deliver, E::DeliveryFail, E::ReceiptOverdue, E::ReadReceipt, E::Cancel];
    const TRANSITIONS: &'static [(MessageStatus, MessageEvent, MessageStatus)] = TRANSITIONS;
}

/// An event the message's current status does not allow.
pub type IllegalTransition = kernel::state::IllegalTransition<MessageStatus, MessageEvent>;

#[cfg(test)]
mod tests {
    use kernel::state::{Event as _, Status as _};

    use super::*;

    #[test]
    fn the_table_keeps_the_rules_of_every_table() {
        kernel::state::check::<S>();
    }

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
        for &event in E::ALL {
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
    /// `delivered` is not final: a chat read receipt may follow (an SMS simply stays there).
    fn final_statuses_are_read_failed_received() {
        let finals: Vec<_> = S::ALL.iter().copied().filter(|s| s.is_final()).collect();
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
        for &status in S::ALL {
            assert_eq!(S::parse(status.as_str()), Some(status));
            assert_eq!(serde_json::to_value(status).ok(), Some(serde_json::json!(status.as_str())));
        }
        assert_eq!(S::parse("Queued"), None);
        assert_eq!(S::parse("cancelled"), None);
    }

    #[test]
    fn illegal_transition_says_what_was_refused() {
        let err = S::Failed.apply(E::Accept).err();
        assert_eq!(err.map(|e| e.to_string()).as_deref(), Some("failed cannot take the Accept event"));
    }
}
