//! A payment's state (contract: Payment state), its rules in one table.

use diesel::deserialize::FromSqlRow;
use diesel::expression::AsExpression;
use diesel::sql_types::Text;
use kernel::state::{Event, Status};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, AsExpression, FromSqlRow)]
#[diesel(sql_type = Text)]
pub enum PaymentState {
    Draft,
    Pending,
    Authorised,
    Paid,
    PartlyRefunded,
    Refunded,
    Failed,
    Expired,
    Cancelled,
}

/// What happens to a payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentEvent {
    /// The payer's phone is asked (again, after a failure).
    Push,
    /// The provider holds the money but has not moved it (card-style flows; mobile money
    /// settles at once and never takes this step).
    Authorise,
    /// The money moved.
    Settle,
    /// The payer could not pay, or the provider refused the request.
    Fail,
    /// Nobody answered in time.
    Expire,
    /// The payer dismissed the prompt.
    Cancel,
    /// Part of the money went back; more remains.
    RefundPart,
    /// The last of the money went back.
    RefundAll,
}

impl Status for PaymentState {
    type Event = PaymentEvent;
    const ALL: &'static [Self] = &[
        Self::Draft,
        Self::Pending,
        Self::Authorised,
        Self::Paid,
        Self::PartlyRefunded,
        Self::Refunded,
        Self::Failed,
        Self::Expired,
        Self::Cancelled,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Pending => "pending",
            Self::Authorised => "authorised",
            Self::Paid => "paid",
            Self::PartlyRefunded => "partly_refunded",
            Self::Refunded => "refunded",
            Self::Failed => "failed",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
        }
    }
}

kernel::wire_text!(PaymentState);

use PaymentEvent as E;
use PaymentState as S;

impl Event for PaymentEvent {
    type Status = PaymentState;
    const ALL: &'static [Self] =
        &[E::Push, E::Authorise, E::Settle, E::Fail, E::Expire, E::Cancel, E::RefundPart, E::RefundAll];
    // contract: Payment state, row by row
    const TRANSITIONS: &'static [(S, E, S)] = &[
        (S::Draft, E::Push, S::Pending),
        (S::Draft, E::Cancel, S::Cancelled),
        (S::Draft, E::Expire, S::Expired),
        (S::Pending, E::Authorise, S::Authorised),
        (S::Pending, E::Settle, S::Paid),
        (S::Pending, E::Fail, S::Failed),
        (S::Pending, E::Expire, S::Expired),
        (S::Pending, E::Cancel, S::Cancelled),
        (S::Authorised, E::Settle, S::Paid),
        (S::Authorised, E::Fail, S::Failed),
        (S::Authorised, E::Expire, S::Expired),
        (S::Authorised, E::Cancel, S::Cancelled),
        (S::Paid, E::RefundPart, S::PartlyRefunded),
        (S::Paid, E::RefundAll, S::Refunded),
        (S::PartlyRefunded, E::RefundPart, S::PartlyRefunded),
        (S::PartlyRefunded, E::RefundAll, S::Refunded),
        (S::Failed, E::Push, S::Pending),
        (S::Failed, E::Cancel, S::Cancelled),
    ];
}

impl PaymentState {
    /// Money may still come: draft, pending, authorised.
    pub fn is_open(self) -> bool {
        matches!(self, Self::Draft | Self::Pending | Self::Authorised)
    }

    /// Money came: paid, partly refunded, refunded.
    pub fn is_settled(self) -> bool {
        matches!(self, Self::Paid | Self::PartlyRefunded | Self::Refunded)
    }

    /// The states the table lets this one move to, in the contract's order.
    pub fn next_states(self) -> Vec<&'static str> {
        let mut next: Vec<PaymentState> = Vec::new();
        for &(from, _, to) in PaymentEvent::TRANSITIONS {
            if from == self && !next.contains(&to) {
                next.push(to);
            }
        }
        next.into_iter().map(Status::as_str).collect()
    }

    /// The `state` filter of `GET /payments`: `open` (the three open states), one state, `all`;
    /// trimmed and lowercased; anything else (or nothing) leaves the list unfiltered.
    pub fn filter(raw: Option<&str>) -> Option<Vec<&'static str>> {
        let raw = raw?.trim().to_lowercase();
        if raw == "open" {
            return Some(Self::ALL.iter().filter(|s| s.is_open()).map(|s| s.as_str()).collect());
        }
        Self::parse(&raw).map(|state| vec![state.as_str()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_the_contracts() {
        kernel::state::check::<PaymentState>();
        let next = |s: PaymentState| s.next_states();
        assert_eq!(next(S::Draft), ["pending", "cancelled", "expired"]);
        assert_eq!(next(S::Pending), ["authorised", "paid", "failed", "expired", "cancelled"]);
        assert_eq!(next(S::Authorised), ["paid", "failed", "expired", "cancelled"]);
        assert_eq!(next(S::Paid), ["partly_refunded", "refunded"]);
        assert_eq!(next(S::PartlyRefunded), ["partly_refunded", "refunded"]);
        assert_eq!(next(S::Failed), ["pending", "cancelled"]);
        for end in [S::Expired, S::Cancelled, S::Refunded] {
            assert!(next(end).is_empty() && end.is_final(), "{end} is final");
        }
    }

    #[test]
    fn open_and_settled_are_the_contracts() {
        let open: Vec<_> = S::ALL.iter().filter(|s| s.is_open()).map(|s| s.as_str()).collect();
        assert_eq!(open, ["draft", "pending", "authorised"]);
        let settled: Vec<_> = S::ALL.iter().filter(|s| s.is_settled()).map(|s| s.as_str()).collect();
        assert_eq!(settled, ["paid", "partly_refunded", "refunded"]);
    }

    #[test]
    fn the_state_filter_reads_every_form() {
        assert_eq!(S::filter(Some(" Open ")), Some(vec!["draft", "pending", "authorised"]));
        assert_eq!(S::filter(Some("PAID")), Some(vec!["paid"]));
        assert_eq!(S::filter(Some("all")), None);
        assert_eq!(S::filter(Some("settled-ish")), None, "an unrecognized value leaves the list unfiltered");
        assert_eq!(S::filter(None), None);
    }
}
