//! Orders (contract: Order, Order status): one intake for every platform that prices and freezes
//! the lines and holds stock, status changes with their stock effects, the hold's expiry, and
//! the order events.

pub(crate) mod intake;
mod payment;
mod status;

pub use intake::{IntakeLine, NewLine, NewOrder, OrderIntake};
pub use payment::{PAYMENT_STATUSES, Payable, conversation_of, payable, set_payment_status};
pub use status::{ExpireHold, OrderFilter, StatusChange};

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::Error;
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::OrderId;
use crate::schema::{order_lines, orders};
use crate::status::{Hold, OrderStatus};

/// Lists are 25 a page.
pub const PER_PAGE: i64 = 25;
pub const PLATFORMS: &[&str] = &["chat", "storefront", "ivr", "manual"];

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = orders)]
pub(crate) struct Row {
    pub id: i64,
    pub tenant_id: i64,
    pub catalogue_id: i64,
    pub platform: String,
    pub status: OrderStatus,
    pub stock_policy: String,
    pub hold: Hold,
    pub hold_expires_at: Option<OffsetDateTime>,
    pub reservation_ttl_hours: i32,
    pub allow_backorder: bool,
    pub customer_handle: Option<String>,
    pub customer_name: Option<String>,
    pub total_minor: i64,
    pub currency: String,
    pub conversation_id: Option<i64>,
    pub priced_at: OffsetDateTime,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
    pub payment_status: String,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = order_lines)]
pub(crate) struct LineRow {
    pub order_id: i64,
    pub position: i32,
    pub product_id: Option<i64>,
    pub sku: String,
    pub name: Option<String>,
    pub quantity: i32,
    pub unit_price_minor: Option<i64>,
    pub line_total_minor: Option<i64>,
    pub currency: Option<String>,
    pub reserved: i32,
    pub stock_short: bool,
    pub unresolved: bool,
}

/// One line, frozen at creation but for what it holds.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Line {
    pub sku: String,
    /// null when the code is not on the shelf.
    pub name: Option<String>,
    pub quantity: i32,
    pub unit_price_minor: Option<i64>,
    pub line_total_minor: Option<i64>,
    pub currency: Option<String>,
    /// Units held (or committed) for the line; 0 once released.
    pub reserved: i32,
    /// Fewer units could be held than ordered.
    pub stock_short: bool,
    /// The code is not on the shelf.
    pub unresolved: bool,
}

/// What the order does to stock now.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Reservation {
    /// `held` (pending), `committed` or `released`.
    pub state: String,
    /// When a hold lapses on its own.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
}

/// An order, as the API and the order events show it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Order {
    pub id: i64,
    pub catalogue_id: i64,
    /// `chat`, `storefront`, `ivr`, `manual`.
    pub platform: String,
    pub status: String,
    /// A line is short or unresolved.
    pub needs_attention: bool,
    /// The shop's stock policy when the order was made.
    pub stock_policy: String,
    pub customer_handle: Option<String>,
    /// Alias of `customer_handle`.
    pub customer_chat_id: Option<String>,
    pub customer_name: Option<String>,
    pub lines: Vec<Line>,
    pub total_minor: i64,
    pub currency: String,
    pub conversation_id: Option<i64>,
    #[serde(with = "time::serde::rfc3339")]
    pub priced_at: OffsetDateTime,
    pub reservation: Reservation,
    /// What its payments did: `unpaid`, `pending` (a payment is being asked for), `paid`,
    /// `partly_refunded`, `refunded` (docs/api.md, "Payments").
    pub payment_status: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl Order {
    pub(crate) fn of(row: Row, lines: Vec<LineRow>) -> Self {
        let lines: Vec<Line> = lines
            .into_iter()
            .map(|l| Line {
                sku: l.sku,
                name: l.name,
                quantity: l.quantity,
                unit_price_minor: l.unit_price_minor,
                line_total_minor: l.line_total_minor,
                currency: l.currency,
                reserved: l.reserved,
                stock_short: l.stock_short,
                unresolved: l.unresolved,
            })
            .collect();
        Self {
            id: row.id,
            catalogue_id: row.catalogue_id,
            platform: row.platform,
            status: row.status.as_str().to_owned(),
            needs_attention: lines.iter().any(|l| l.stock_short || l.unresolved),
            stock_policy: row.stock_policy,
            customer_chat_id: row.customer_handle.clone(),
            customer_handle: row.customer_handle,
            customer_name: row.customer_name,
            lines,
            total_minor: row.total_minor,
            currency: row.currency,
            conversation_id: row.conversation_id,
            priced_at: row.priced_at,
            reservation: Reservation {
                expires_at: (row.hold == Hold::Held).then_some(row.hold_expires_at).flatten(),
                state: row.hold.as_str().to_owned(),
            },
            payment_status: row.payment_status,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

pub(crate) async fn lines_of(conn: &mut store::Conn, tenant: i64, order: i64) -> Result<Vec<LineRow>, Error> {
    Ok(order_lines::table
        .filter(order_lines::tenant_id.eq(tenant))
        .filter(order_lines::order_id.eq(order))
        .order(order_lines::position)
        .select(LineRow::as_select())
        .load(conn)
        .await?)
}

pub(crate) async fn view(conn: &mut store::Conn, row: Row) -> Result<Order, Error> {
    let lines = lines_of(conn, row.tenant_id, row.id).await?;
    Ok(Order::of(row, lines))
}

/// The order `id` of `tenant`, locked when `lock`.
pub(crate) async fn row_of(conn: &mut store::Conn, tenant: i64, id: OrderId, lock: bool) -> Result<Row, Error> {
    let query = orders::table.filter(orders::id.eq(id.0).and(orders::tenant_id.eq(tenant))).select(Row::as_select());
    let row = if lock { query.for_update().first(conn).await } else { query.first(conn).await };
    row.optional()?.ok_or_else(|| Error::not_found("Order"))
}

/// The units each product holds for these lines, in product order.
pub(crate) fn held_by_product(lines: &[LineRow]) -> Vec<(i64, i32)> {
    per_product(lines, |line| line.reserved)
}

/// The units each product is wanted for by these lines, in product order.
pub(crate) fn wanted(lines: &[LineRow]) -> Vec<(i64, i32)> {
    per_product(lines, |line| line.quantity)
}

fn per_product(lines: &[LineRow], units: impl Fn(&LineRow) -> i32) -> Vec<(i64, i32)> {
    let mut sums: std::collections::BTreeMap<i64, i32> = std::collections::BTreeMap::new();
    for line in lines {
        if let Some(product) = line.product_id {
            *sums.entry(product).or_default() += units(line);
        }
    }
    sums.into_iter().collect()
}

/// Shares what each product holds among its lines in line order; a line held in part is short.
pub(crate) fn allocate(lines: &mut [LineRow], held: &std::collections::HashMap<i64, i32>) {
    let mut left = held.clone();
    for line in lines.iter_mut() {
        let Some(product) = line.product_id else { continue };
        let pool = left.entry(product).or_default();
        let take = line.quantity.min(*pool);
        *pool -= take;
        line.reserved = take;
        line.stock_short = take < line.quantity;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn line(position: i32, product: Option<i64>, quantity: i32) -> LineRow {
        LineRow {
            order_id: 1,
            position,
            product_id: product,
            sku: format!("S{position}"),
            name: None,
            quantity,
            unit_price_minor: None,
            line_total_minor: None,
            currency: None,
            reserved: 0,
            stock_short: false,
            unresolved: product.is_none(),
        }
    }

    #[test]
    fn what_a_product_holds_is_shared_among_its_lines_in_line_order() {
        let mut lines = vec![line(0, Some(7), 2), line(1, None, 5), line(2, Some(7), 3), line(3, Some(9), 1)];
        allocate(&mut lines, &HashMap::from([(7, 4), (9, 1)]));
        let held: Vec<(i32, bool)> = lines.iter().map(|l| (l.reserved, l.stock_short)).collect();
        assert_eq!(held, vec![(2, false), (0, false), (2, true), (1, false)]);
        assert_eq!(held_by_product(&lines), vec![(7, 4), (9, 1)]);
    }

    #[test]
    fn an_order_of_unresolved_lines_holds_nothing() {
        let mut lines = vec![line(0, None, 3)];
        allocate(&mut lines, &HashMap::new());
        assert_eq!((lines[0].reserved, lines[0].stock_short), (0, false));
        assert!(held_by_product(&lines).is_empty());
    }
}
