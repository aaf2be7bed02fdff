//! The double-entry ledger: every money movement is entries whose debits equal their credits,
//! written in the transaction that moves the payment's state.
//!
//! Two accounts per currency: `provider_clearing` (the money the provider holds for the business)
//! and `customer_payments` (what customers paid, net of refunds). A settlement debits the first
//! and credits the second; a refund does the opposite.

use diesel::ExpressionMethods;
use diesel_async::RunQueryDsl;
use kernel::Error;
use time::OffsetDateTime;

use crate::payment::Row;
use crate::schema::ledger_entries;

pub const PROVIDER_CLEARING: &str = "provider_clearing";
pub const CUSTOMER_PAYMENTS: &str = "customer_payments";

/// One side of a movement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Debit,
    Credit,
}

impl Side {
    fn as_str(self) -> &'static str {
        match self {
            Self::Debit => "debit",
            Self::Credit => "credit",
        }
    }
}

/// The money of a settled payment came in.
pub(crate) async fn settlement(conn: &mut store::Conn, row: &Row, at: OffsetDateTime) -> Result<(), Error> {
    post(
        conn,
        row,
        "settlement",
        &[(Side::Debit, PROVIDER_CLEARING, row.amount_minor), (Side::Credit, CUSTOMER_PAYMENTS, row.amount_minor)],
        at,
    )
    .await
}

/// The money of a settled refund (`row` is the refund) went back.
pub(crate) async fn refund(conn: &mut store::Conn, row: &Row, at: OffsetDateTime) -> Result<(), Error> {
    post(
        conn,
        row,
        "refund",
        &[(Side::Debit, CUSTOMER_PAYMENTS, row.amount_minor), (Side::Credit, PROVIDER_CLEARING, row.amount_minor)],
        at,
    )
    .await
}

/// Writes a balanced set of entries; an unbalanced one is a bug and writes nothing.
async fn post(
    conn: &mut store::Conn,
    row: &Row,
    kind: &str,
    entries: &[(Side, &str, i64)],
    at: OffsetDateTime,
) -> Result<(), Error> {
    if !balanced(entries) {
        return Err(Error::internal(format!("unbalanced {kind} entries for payment {}", row.id)));
    }
    let values: Vec<_> = entries
        .iter()
        .map(|&(side, account, amount)| {
            (
                ledger_entries::tenant_id.eq(row.tenant_id),
                ledger_entries::payment_id.eq(row.id),
                ledger_entries::kind.eq(kind),
                ledger_entries::direction.eq(side.as_str()),
                ledger_entries::account.eq(account),
                ledger_entries::amount_minor.eq(amount),
                ledger_entries::currency.eq(&row.currency),
                ledger_entries::at.eq(at),
            )
        })
        .collect();
    diesel::insert_into(ledger_entries::table).values(values).execute(conn).await?;
    Ok(())
}

pub(crate) fn balanced(entries: &[(Side, &str, i64)]) -> bool {
    let sum =
        |wanted: Side| entries.iter().filter(|(side, ..)| *side == wanted).map(|(.., amount)| *amount).sum::<i64>();
    entries.iter().all(|(.., amount)| *amount > 0) && sum(Side::Debit) == sum(Side::Credit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_balanced_positive_entries_are_posted() {
        assert!(balanced(&[(Side::Debit, "a", 5), (Side::Credit, "b", 5)]));
        assert!(!balanced(&[(Side::Debit, "a", 5), (Side::Credit, "b", 4)]));
        assert!(!balanced(&[(Side::Debit, "a", 0), (Side::Credit, "b", 0)]));
    }
}
