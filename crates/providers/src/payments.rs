//! The mobile-money interface, in the shape of M-Pesa's STK push (Daraja): ask the payer's
//! phone for a payment, read the provider's result callback, ask what became of a request, and
//! send money back (a reversal).

use std::time::Duration;

pub use crate::sms::{CallbackError, SendError};

/// One payment to ask the payer's phone for.
#[derive(Debug, Clone, Copy)]
pub struct PushRequest<'a> {
    /// Our payment reference (`PAY-20261207-000042`): the account reference the payer sees.
    pub reference: &'a str,
    /// The payer's number, E.164 with the leading `+`.
    pub phone: &'a str,
    /// Minor units, 100 per major unit (contract: Payment).
    pub amount_minor: i64,
    pub currency: &'a str,
    /// What the payer is paying for (the transaction description; providers cut it short).
    pub description: &'a str,
    /// Where the provider posts the result.
    pub callback_url: &'a str,
}

/// The provider's answer to a push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    /// The prompt is on its way to the payer's phone; the result comes by callback or query.
    Accepted {
        /// The provider's id of the request (M-Pesa's `CheckoutRequestID`).
        checkout_request_id: String,
        /// Set only by the sandbox, which announces when its result can be read by [`query`]
        /// (it posts no callback).
        ///
        /// [`query`]: MobileMoney::query
        answer_after: Option<Duration>,
    },
    /// The provider refused the request; nothing reached the payer.
    Refused { reason: String },
}

/// What became of a push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushResult {
    /// The money moved.
    Paid {
        /// The provider's receipt (M-Pesa's `MpesaReceiptNumber`).
        receipt: String,
        /// What the payer paid, in minor units, when the provider says.
        amount_minor: Option<i64>,
        /// The paying number as the provider wrote it (`255712345678`), when it says.
        phone: Option<String>,
    },
    /// The payer could not pay (insufficient funds, a wrong PIN...).
    Failed { code: String, reason: String },
    /// The payer dismissed the prompt.
    Cancelled { code: String, reason: String },
    /// The payer never answered the prompt.
    Expired { code: String, reason: String },
    /// The provider has no result yet.
    Pending,
}

/// A result callback read from the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushCallback {
    pub checkout_request_id: String,
    pub result: PushResult,
}

/// The provider's answer to a reversal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefundOutcome {
    /// The provider took the reversal (its own id of it).
    Accepted {
        provider_reference: String,
    },
    Refused {
        reason: String,
    },
}

/// A mobile-money provider.
#[async_trait::async_trait]
pub trait MobileMoney: Send + Sync {
    /// Sends the payment prompt to the payer's phone.
    async fn push(&self, request: PushRequest<'_>) -> Result<PushOutcome, SendError>;

    /// Asks what became of a push (`Pending` while the payer has not answered).
    async fn query(&self, checkout_request_id: &str) -> Result<PushResult, SendError>;

    /// Sends `amount_minor` of a paid push (its `receipt`) back to the payer.
    async fn refund(&self, receipt: &str, amount_minor: i64, reference: &str) -> Result<RefundOutcome, SendError>;

    /// Reads a result callback body.
    fn parse_callback(&self, body: &[u8]) -> Result<PushCallback, CallbackError>;
}
