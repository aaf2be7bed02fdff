//! What payments need of an order (contract: `order.paid`): what is owed, and the payment status
//! their settlements and refunds give it. Called inside the payment's own transaction, so the
//! order moves with the money.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{Error, TenantId};
use time::OffsetDateTime;

use super::{Row, row_of};
use crate::OrderId;
use crate::schema::orders;
use crate::status::OrderStatus;

/// An order as a payment sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payable {
    pub id: i64,
    pub total_minor: i64,
    pub currency: String,
    pub conversation_id: Option<i64>,
    pub customer_name: Option<String>,
    /// `unpaid`, `pending`, `paid`, `partly_refunded`, `refunded`.
    pub payment_status: String,
}

/// The order's payment statuses.
pub const PAYMENT_STATUSES: [&str; 5] = ["unpaid", "pending", "paid", "partly_refunded", "refunded"];

/// The order `id`, locked, when money may still be asked for it: 404 for another tenant's or an
/// unknown order, 409 for a cancelled or refunded one, one already paid, or one with nothing to
/// pay.
pub async fn payable(conn: &mut store::Conn, tenant: TenantId, id: OrderId) -> Result<Payable, Error> {
    let row: Row = row_of(conn, tenant.0, id, true).await?;
    if matches!(row.status, OrderStatus::Cancelled | OrderStatus::Refunded) {
        return Err(Error::conflict(format!("Order {} is {}: nothing is owed on it.", row.id, row.status.as_str())));
    }
    if row.payment_status != "unpaid" && row.payment_status != "pending" {
        return Err(Error::conflict(format!("Order {} is {} already.", row.id, row.payment_status)));
    }
    if row.total_minor <= 0 {
        return Err(Error::conflict(format!("Order {} has no priced total to pay.", row.id)));
    }
    Ok(Payable {
        id: row.id,
        total_minor: row.total_minor,
        currency: row.currency,
        conversation_id: row.conversation_id,
        customer_name: row.customer_name,
        payment_status: row.payment_status,
    })
}

/// Records what the order's payments did to it; an unknown order (deleted with its shop) is
/// left alone.
pub async fn set_payment_status(
    conn: &mut store::Conn,
    tenant: TenantId,
    id: OrderId,
    status: &'static str,
    now: OffsetDateTime,
) -> Result<(), Error> {
    debug_assert!(PAYMENT_STATUSES.contains(&status));
    diesel::update(orders::table.filter(orders::id.eq(id.0).and(orders::tenant_id.eq(tenant.0))))
        .set((orders::payment_status.eq(status), orders::updated_at.eq(now)))
        .execute(conn)
        .await?;
    Ok(())
}

/// The conversation an order came from (`order.paid` names it).
pub async fn conversation_of(conn: &mut store::Conn, tenant: TenantId, id: OrderId) -> Result<Option<i64>, Error> {
    Ok(orders::table
        .filter(orders::id.eq(id.0).and(orders::tenant_id.eq(tenant.0)))
        .select(orders::conversation_id)
        .first::<Option<i64>>(conn)
        .await
        .optional()?
        .flatten())
}
