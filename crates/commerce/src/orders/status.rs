//! Status changes and what they do to stock (contract: Order status), the hold's expiry, and the
//! order reads.

use std::collections::HashMap;
use std::sync::Arc;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Integer};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, Page, PageRequest, Patch, Permission, TenantId};
use serde::{Deserialize, Serialize};
use store::Prepare;
use store::jobs::{Job, JobContext, JobError};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::{IntoParams, ToSchema};

use super::intake::schedule_expiry;
use super::{LineRow, Order, PLATFORMS, Row, allocate, held_by_product, lines_of, row_of, view, wanted};
use crate::rules::{Rules, choice};
use crate::schema::{order_lines, orders};
use crate::service::{CommerceService, shop_of};
use crate::status::{Hold, OrderEvent, OrderStatus, StockStep};
use crate::stock::{self, OrderCause};
use crate::{CatalogueId, OrderId};

/// `PUT /catalogues/orders/{order}/status`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct StatusChange {
    /// Any order status: `pending`, `confirmed`, `processing`, `shipped`, `delivered`,
    /// `cancelled` or `refunded` (read without case).
    #[schema(value_type = OrderStatusName)]
    pub status: String,
}

choice! {
    /// An order status.
    OrderStatusName = &OrderStatus::names();
    /// A platform orders come from.
    PlatformName = PLATFORMS;
}

/// `GET /catalogues/orders` filters.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OrderFilter {
    #[param(value_type = Option<OrderStatusName>, inline)]
    pub status: Option<String>,
    #[param(value_type = Option<PlatformName>, inline)]
    pub platform: Option<String>,
    #[param(value_type = Option<i64>)]
    pub catalogue_id: Option<String>,
    /// ISO 8601 with an offset (RFC 3339); orders changed at or after it.
    #[param(value_type = Option<String>, format = DateTime)]
    pub updated_since: Option<String>,
}

impl CommerceService {
    pub async fn get_order(&self, caller: &Caller, id: OrderId) -> Result<Order, Error> {
        caller.require(Permission::CATALOGUE_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let row = row_of(&mut conn, caller.tenant_id.0, id, false).await?;
        view(&mut conn, row).await
    }

    /// Any status from any status; the same one again changes nothing.
    pub async fn set_order_status(&self, caller: &Caller, id: OrderId, body: StatusChange) -> Result<Order, Error> {
        caller.require(Permission::CATALOGUE_MANAGE)?;
        let mut rules = Rules::new();
        let names = OrderStatus::names();
        let sent = rules.one_of("status", Patch::Set(body.status), &names);
        let Some(wanted) = rules.required("status", sent).and_then(OrderStatus::parse) else {
            return Err(Error::fields(rules.errors.into_map()));
        };
        let mut conn = self.conn(caller.tenant_id).await?;
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let row = row_of(conn, caller.tenant_id.0, id, true).await?;
            let status = row.status.apply(OrderEvent::Set(wanted)).map_err(Error::internal)?;
            if row.status == status {
                return view(conn, row).await;
            }
            let previous = row.status;
            let cause = format!("order {} {status}", row.id);
            let row = move_hold(conn, row, status.hold(), &cause, now).await?;
            let row: Row = diesel::update(orders::table.find(row.id).filter(orders::tenant_id.eq(row.tenant_id)))
                .set((orders::status.eq(status), orders::updated_at.eq(now)))
                .returning(Row::as_returning())
                .get_result(conn)
                .await?;
            let order = view(conn, row).await?;
            let previous = Some(previous.as_str());
            crate::events::order_event(conn, caller.tenant_id, &order, "order.status_changed", previous, now).await?;
            if status == OrderStatus::Cancelled {
                crate::events::order_event(conn, caller.tenant_id, &order, "order.cancelled", previous, now).await?;
            }
            Ok(order)
        })
        .await
    }

    /// Releases the hold of a pending order past its expiry; anything else is left alone.
    pub async fn expire_hold(&self, tenant: TenantId, id: OrderId) -> Result<(), Error> {
        let mut conn = self.conn(tenant).await?;
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let row: Option<Row> =
                orders::table.find(id.0).select(Row::as_select()).for_update().first(conn).await.optional()?;
            let Some(row) = row else { return Ok(()) };
            let due = row.hold_expires_at.is_some_and(|at| at <= now);
            // only a pending order's hold lapses, and only while it holds
            if row.status.apply(OrderEvent::HoldExpired).is_err() || row.hold != Hold::Held || !due {
                return Ok(());
            }
            let cause = format!("order {} hold expired", row.id);
            move_hold(conn, row, Hold::Released, &cause, now).await?;
            diesel::update(orders::table.find(id.0)).set(orders::updated_at.eq(now)).execute(conn).await?;
            Ok(())
        })
        .await
    }

    /// The tenant's orders, newest change first.
    pub async fn list_orders(
        &self,
        caller: &Caller,
        filter: &OrderFilter,
        page: PageRequest,
    ) -> Result<Page<Order>, Error> {
        caller.require(Permission::CATALOGUE_VIEW)?;
        let filter = Filter::parse(filter)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let tenant = caller.tenant_id.0;
        let query = || {
            let mut query = orders::table.filter(orders::tenant_id.eq(tenant)).into_boxed();
            if let Some(status) = filter.status {
                query = query.filter(orders::status.eq(status));
            }
            if let Some(platform) = &filter.platform {
                query = query.filter(orders::platform.eq(platform.clone()));
            }
            if let Some(catalogue) = filter.catalogue_id {
                query = query.filter(orders::catalogue_id.eq(catalogue));
            }
            if let Some(since) = filter.updated_since {
                query = query.filter(orders::updated_at.ge(since));
            }
            query
        };
        let total: i64 = query().count().get_result(&mut conn).await?;
        let rows: Vec<Row> = query()
            .order((orders::updated_at.desc(), orders::id.desc()))
            .limit(page.per_page)
            .offset(page.offset())
            .select(Row::as_select())
            .load(&mut conn)
            .await?;
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let mut lines: HashMap<i64, Vec<LineRow>> = HashMap::new();
        let found: Vec<LineRow> = order_lines::table
            .filter(order_lines::tenant_id.eq(tenant))
            .filter(order_lines::order_id.eq_any(&ids))
            .order((order_lines::order_id, order_lines::position))
            .select(LineRow::as_select())
            .load(&mut conn)
            .await?;
        for line in found {
            lines.entry(line.order_id).or_default().push(line);
        }
        let items = rows
            .into_iter()
            .map(|row| {
                let lines = lines.remove(&row.id).unwrap_or_default();
                Order::of(row, lines)
            })
            .collect();
        Ok(Page::new(items, page, total))
    }
}

struct Filter {
    status: Option<OrderStatus>,
    platform: Option<String>,
    catalogue_id: Option<i64>,
    updated_since: Option<OffsetDateTime>,
}

impl Filter {
    fn parse(query: &OrderFilter) -> Result<Self, Error> {
        let mut errors = kernel::error::FieldErrors::new();
        // A filter sent empty is refused like any other value outside its type, as on every list.
        let given = |v: &Option<String>| v.as_deref().map(str::trim).map(str::to_owned);
        let status = given(&query.status);
        let status = match status.as_deref().map(OrderStatus::parse) {
            Some(None) => {
                errors.add("status", format!("The status must be one of: {}.", OrderStatus::names().join(", ")));
                None
            }
            parsed => parsed.flatten(),
        };
        let platform = given(&query.platform);
        if platform.as_deref().is_some_and(|p| !PLATFORMS.contains(&p)) {
            errors.add("platform", format!("The platform must be one of: {}.", PLATFORMS.join(", ")));
        }
        let catalogue_id = match given(&query.catalogue_id) {
            None => None,
            Some(raw) => match raw.parse::<i64>() {
                Ok(id) => Some(id),
                Err(_) => {
                    errors.add("catalogue_id", "The catalogue_id must be an integer.");
                    None
                }
            },
        };
        let updated_since = match given(&query.updated_since) {
            None => None,
            Some(raw) => match OffsetDateTime::parse(&raw, &Rfc3339) {
                Ok(at) => Some(at),
                Err(_) => {
                    errors.add("updated_since", "The updated_since must be an ISO 8601 date-time with an offset.");
                    None
                }
            },
        };
        errors.finish()?;
        Ok(Self { status, platform, catalogue_id, updated_since })
    }
}

/// Moves the order's stock from its hold state to `target` (contract: Order status, stock
/// effects), updating what its lines hold.
async fn move_hold(
    conn: &mut store::Conn,
    row: Row,
    target: Hold,
    cause: &str,
    now: OffsetDateTime,
) -> Result<Row, Error> {
    let steps = row.hold.steps_to(target);
    if steps.is_empty() {
        return Ok(row);
    }
    let why = OrderCause { order_id: row.id, cause, now };
    let mut lines = lines_of(conn, row.tenant_id, row.id).await?;
    let holding = held_by_product(&lines);
    let policy = row.stock_policy.as_str();
    for step in steps {
        match step {
            StockStep::Commit => stock::commit(conn, &held_by_product(&lines), policy, &why).await?,
            StockStep::Release => {
                stock::release(conn, &held_by_product(&lines), &why).await?;
                clear(&mut lines);
            }
            StockStep::Restock => {
                stock::restock(conn, &held_by_product(&lines), policy, &why).await?;
                if target == Hold::Released {
                    clear(&mut lines);
                }
            }
            StockStep::Hold => {
                let held: HashMap<i64, i32> = stock::hold(conn, &wanted(&lines), row.allow_backorder, &why).await?;
                allocate(&mut lines, &held);
            }
        }
    }
    save_lines(conn, row.tenant_id, &lines).await?;
    let products: Vec<i64> =
        holding.iter().map(|(id, _)| *id).chain(wanted(&lines).iter().map(|(id, _)| *id)).collect();
    let shop = shop_of(conn, kernel::TenantId(row.tenant_id), CatalogueId(row.catalogue_id)).await?;
    stock::check_low(conn, &shop, &products, now).await?;
    let expires = (target == Hold::Held).then(|| now + time::Duration::hours(row.reservation_ttl_hours.into()));
    let row: Row = diesel::update(orders::table.find(row.id).filter(orders::tenant_id.eq(row.tenant_id)))
        .set((orders::hold.eq(target), orders::hold_expires_at.eq(expires)))
        .returning(Row::as_returning())
        .get_result(conn)
        .await?;
    if let Some(at) = expires {
        schedule_expiry(conn, &row, at).await?;
    }
    Ok(row)
}

fn clear(lines: &mut [LineRow]) {
    for line in lines {
        line.reserved = 0;
    }
}

async fn save_lines(conn: &mut store::Conn, tenant: i64, lines: &[LineRow]) -> Result<(), Error> {
    let Some(first) = lines.first() else { return Ok(()) };
    diesel::sql_query(
        "UPDATE order_lines l SET reserved = u.r, stock_short = u.s
         FROM unnest($2::int[], $3::int[], $4::bool[]) AS u(p, r, s)
         WHERE l.tenant_id = $5 AND l.order_id = $1 AND l.position = u.p",
    )
    .bind::<BigInt, _>(first.order_id)
    .bind::<Array<Integer>, _>(lines.iter().map(|l| l.position).collect::<Vec<_>>())
    .bind::<Array<Integer>, _>(lines.iter().map(|l| l.reserved).collect::<Vec<_>>())
    .bind::<Array<Bool>, _>(lines.iter().map(|l| l.stock_short).collect::<Vec<_>>())
    .bind::<BigInt, _>(tenant)
    .prepared()
    .execute(conn)
    .await?;
    Ok(())
}

/// Releases a pending order's hold once `reservation_ttl_hours` have passed (contract: Order
/// status); scheduled when the hold starts, run by the worker's clock.
#[derive(Debug, Serialize, Deserialize)]
pub struct ExpireHold {
    pub order_id: OrderId,
}

impl Job for ExpireHold {
    const NAME: &'static str = "commerce.expire_hold";
    type State = CommerceService;

    async fn run(self, service: Arc<CommerceService>, ctx: JobContext) -> Result<(), JobError> {
        Ok(service.expire_hold(ctx.tenant()?, self.order_id).await?)
    }
}
