//! The SMS aggregator interface: send one message, read the provider's callbacks.

use std::time::Duration;

/// One message to send. `reference` is our message uid, given to providers that accept a
/// client reference so that a repeated send of the same message can be recognised.
#[derive(Debug, Clone, Copy)]
pub struct OutboundSms<'a> {
    pub reference: &'a str,
    /// E.164 with the leading `+`.
    pub to: &'a str,
    /// The sender identity (sender id, number or short code); `None` uses the provider default.
    pub from: Option<&'a str>,
    pub body: &'a str,
}

/// The provider's answer to one send.
#[derive(Debug, Clone, PartialEq)]
pub enum SendOutcome {
    /// The provider took the message; a receipt may follow.
    Accepted {
        provider_message_id: String,
        /// The provider's own cost text (e.g. `"TZS 20.0000"`), kept for audit.
        cost: Option<String>,
        /// Set only by providers that announce their receipts up front (the sandboxes): the
        /// receipts that will arrive, and after how long each.
        receipts: Vec<ScheduledReceipt>,
    },
    /// The provider refused this message; it will never be delivered.
    Refused { reason: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScheduledReceipt {
    pub after: Duration,
    pub status: ReceiptStatus,
}

/// What a receipt or a status query says about a sent message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceiptStatus {
    Delivered,
    /// Chat only: the customer read it (implies delivered).
    Read,
    Failed {
        reason: String,
    },
    /// Still on its way, or the provider cannot say.
    Pending,
}

/// A delivery receipt read from a provider callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryReceipt {
    pub provider_message_id: String,
    pub status: ReceiptStatus,
    /// The provider's own status word, kept for audit.
    pub provider_status: String,
}

/// An incoming message read from a provider callback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundSms {
    pub provider_message_id: Option<String>,
    /// The sender's number as the provider wrote it.
    pub from: String,
    /// Our number or short code.
    pub to: String,
    pub text: String,
}

/// A send whose outcome is unknown or whose answer could not be read (contract: a send
/// exception fails the message; it is never resent automatically).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("the provider did not answer in time")]
    Timeout,
    #[error("the provider answered HTTP {status}")]
    Status { status: u16 },
    #[error("the provider's answer could not be read: {0}")]
    Malformed(String),
    #[error("the provider could not be reached: {0}")]
    Transport(String),
}

/// A callback body that is not what the provider sends.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CallbackError(pub String);

/// An SMS aggregator.
#[async_trait::async_trait]
pub trait SmsGateway: Send + Sync {
    /// Sends one message.
    async fn send(&self, sms: OutboundSms<'_>) -> Result<SendOutcome, SendError>;

    /// Asks the provider what became of a sent message (`Pending` when it cannot say).
    async fn status(&self, provider_message_id: &str) -> Result<ReceiptStatus, SendError>;

    /// Reads a delivery-report callback body (`content_type` as the request carried it).
    fn parse_receipt(&self, content_type: &str, body: &[u8]) -> Result<DeliveryReceipt, CallbackError>;

    /// Reads an incoming-message callback body.
    fn parse_inbound(&self, content_type: &str, body: &[u8]) -> Result<InboundSms, CallbackError>;
}
