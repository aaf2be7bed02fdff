//! A payment as it is stored and as the API shows it (contract: Payment): the summary every
//! list row is, and the detail that adds who asked, the timeline, the ledger and the refunds.

use diesel::prelude::*;
use kernel::state::Status;
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::schema::{ledger_entries, payment_timeline, payments};
use crate::state::PaymentState;

/// Every currency is shown at 100 minor units per major unit (contract: Payment), TZS too.
pub const MINOR_PER_MAJOR: i64 = 100;

/// `425000` TZS → `"TZS 4,250.00"`.
pub fn display(amount_minor: i64, currency: &str) -> String {
    let sign = if amount_minor < 0 { "-" } else { "" };
    let abs = amount_minor.unsigned_abs();
    let major = (abs / MINOR_PER_MAJOR as u64).to_string();
    let mut grouped = String::with_capacity(major.len() + major.len() / 3);
    for (i, digit) in major.chars().enumerate() {
        if i > 0 && (major.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    format!("{currency} {sign}{grouped}.{:02}", abs % MINOR_PER_MAJOR as u64)
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = payments)]
pub(crate) struct Row {
    pub id: Uuid,
    pub tenant_id: i64,
    pub reference: String,
    pub state: PaymentState,
    pub amount_minor: i64,
    pub currency: String,
    pub refunded_minor: i64,
    pub refunding_minor: i64,
    pub payer: Option<String>,
    pub method: String,
    pub provider: String,
    pub provider_request_id: Option<String>,
    pub provider_receipt: Option<String>,
    pub attempts: i32,
    pub last_error: Option<String>,
    pub expires_at: Option<OffsetDateTime>,
    pub settled_at: Option<OffsetDateTime>,
    pub subject_type: Option<String>,
    pub subject_id: Option<String>,
    pub checkout_token: Option<String>,
    pub callback_token: String,
    pub refund_of: Option<Uuid>,
    pub reason: Option<String>,
    pub created_by: serde_json::Value,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

impl Row {
    /// What may still be given back: a settled payment's amount less what was refunded and what
    /// refunds are asking for now; nothing for a refund or an unsettled payment.
    pub fn refundable_minor(&self) -> i64 {
        if self.refund_of.is_some() || !self.state.is_settled() {
            return 0;
        }
        (self.amount_minor - self.refunded_minor - self.refunding_minor).max(0)
    }

    /// The order this pays for, when it pays for one.
    pub fn order(&self) -> Option<commerce::OrderId> {
        (self.subject_type.as_deref() == Some("order"))
            .then(|| self.subject_id.as_deref()?.parse().ok().map(commerce::OrderId))
            .flatten()
    }

    pub fn view(&self, public_url: &str) -> Payment {
        Payment {
            id: self.id,
            reference: self.reference.clone(),
            state: self.state.as_str(),
            amount_minor: self.amount_minor,
            amount: display(self.amount_minor, &self.currency),
            currency: self.currency.clone(),
            refunded_minor: self.refunded_minor,
            refundable_minor: self.refundable_minor(),
            refunded: (self.refunded_minor > 0).then(|| display(self.refunded_minor, &self.currency)),
            is_open: self.state.is_open(),
            is_settled: self.state.is_settled(),
            next_states: self.state.next_states(),
            payer: self.payer.clone(),
            method: self.method.clone(),
            provider: self.provider.clone(),
            provider_receipt: self.provider_receipt.clone(),
            attempts: self.attempts,
            last_error: self.last_error.clone(),
            expires_at: self.expires_at,
            settled_at: self.settled_at,
            subject_type: self.subject_type.clone(),
            subject_id: self.subject_id.clone(),
            // a checkout link is worth showing while it can still take money
            checkout_url: self
                .checkout_token
                .as_ref()
                .filter(|_| self.state.is_open() || self.state == PaymentState::Failed)
                .map(|token| format!("{}/pay/{token}", public_url.trim_end_matches('/'))),
            checkout_token: self.checkout_token.clone(),
            refund_of: self.refund_of,
            is_refund: self.refund_of.is_some(),
            reason: self.reason.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// A payment (contract: Payment, summary).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Payment {
    pub id: Uuid,
    /// `PAY-<yyyymmdd>-<number>`; `GET /payments/{payment}` takes it as well as the id.
    #[schema(example = "PAY-20261207-000042")]
    pub reference: String,
    /// `draft`, `pending`, `authorised`, `paid`, `partly_refunded`, `refunded`, `failed`,
    /// `expired` or `cancelled`.
    pub state: &'static str,
    /// Minor units, always 100 per major unit.
    pub amount_minor: i64,
    /// The amount for people: `TZS 4,250.00`.
    pub amount: String,
    pub currency: String,
    pub refunded_minor: i64,
    /// What an operator may still refund (refunds under way count as given back).
    pub refundable_minor: i64,
    /// `refunded_minor` for people; null when nothing was refunded.
    pub refunded: Option<String>,
    /// draft, pending or authorised.
    pub is_open: bool,
    /// paid, partly refunded or refunded.
    pub is_settled: bool,
    /// The states this one may move to (informational: the API has no payment write action).
    pub next_states: Vec<&'static str>,
    /// The paying number (E.164), once known.
    pub payer: Option<String>,
    /// `mobile_money`.
    pub method: String,
    /// `sandbox` or `mpesa`.
    pub provider: String,
    /// The provider's receipt of the money (M-Pesa's receipt number).
    pub provider_receipt: Option<String>,
    /// How many times the payer's phone was asked.
    pub attempts: i32,
    pub last_error: Option<String>,
    /// When an open payment stops waiting.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    /// When the money moved.
    #[serde(with = "time::serde::rfc3339::option")]
    pub settled_at: Option<OffsetDateTime>,
    /// `order`, for a payment of an order.
    pub subject_type: Option<String>,
    pub subject_id: Option<String>,
    /// The public checkout page, while it can take money.
    pub checkout_url: Option<String>,
    pub checkout_token: Option<String>,
    /// The payment a refund gives money back from.
    pub refund_of: Option<Uuid>,
    pub is_refund: bool,
    /// Why a refund was made.
    pub reason: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// One step of a payment's life.
#[derive(Debug, Clone, Serialize, ToSchema, Queryable, Selectable)]
#[diesel(table_name = payment_timeline)]
pub struct TimelineEntry {
    pub old_state: Option<String>,
    pub new_state: String,
    /// `operator`, `checkout`, `provider`, `expiry`.
    pub source: String,
    pub message: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

/// One ledger entry.
#[derive(Debug, Clone, Serialize, ToSchema, Queryable, Selectable)]
#[diesel(table_name = ledger_entries)]
pub struct LedgerEntry {
    pub entry_no: i64,
    /// `settlement` or `refund`.
    pub kind: String,
    /// `debit` or `credit`.
    pub direction: String,
    /// `provider_clearing` (money held for the business at the provider) or
    /// `customer_payments` (what customers paid, net of refunds).
    pub account: String,
    pub amount_minor: i64,
    pub currency: String,
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

/// A payment with its history (contract: Payment, detail).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PaymentDetail {
    #[serde(flatten)]
    pub payment: Payment,
    /// Who asked for it: `{kind, id, label}`, kind `operator`, `checkout` or `refund`.
    #[schema(value_type = Object)]
    pub created_by: serde_json::Value,
    /// Oldest first.
    pub timeline: Vec<TimelineEntry>,
    /// By `entry_no`.
    pub ledger: Vec<LedgerEntry>,
    /// Newest first.
    pub refunds: Vec<Payment>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_show_at_100_minor_units_for_every_currency() {
        assert_eq!(display(425_000, "TZS"), "TZS 4,250.00");
        assert_eq!(display(5, "KES"), "KES 0.05");
        assert_eq!(display(123_456_789, "UGX"), "UGX 1,234,567.89");
        assert_eq!(display(100_000, "TZS"), "TZS 1,000.00");
        assert_eq!(display(-250, "TZS"), "TZS -2.50");
    }
}
