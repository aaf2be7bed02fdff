//! `GET /payments` and `GET /payments/{payment}` (contract: Payments (read only)).

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{Caller, Error, PageRequest, TenantId};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::payment::{LedgerEntry, Payment, PaymentDetail, Row, TimelineEntry};
use crate::schema::{ledger_entries, payment_timeline, payments};
use crate::service::PaymentService;
use crate::state::PaymentState;

/// The list's default page size.
pub const DEFAULT_PER_PAGE: i64 = 25;

/// `GET /payments` filters (paging is [`kernel::page::PageQuery`]).
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PaymentFilter {
    /// `open` (draft, pending, authorised), one state, or `all`; trimmed and lowercased. An
    /// unrecognized value leaves the list unfiltered, as does leaving it out.
    pub state: Option<String>,
    /// The subject's id (an order's id).
    pub subject_id: Option<String>,
}

/// The payments envelope's `meta`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Meta {
    pub current_page: i64,
    pub per_page: i64,
    pub total: i64,
    pub last_page: i64,
}

/// `{data:[...], meta:{...}}`, no `status` (contract: Errors, envelopes).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PaymentList {
    pub data: Vec<Payment>,
    pub meta: Meta,
}

/// `{data:{...}}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PaymentRead {
    pub data: PaymentDetail,
}

impl PaymentService {
    /// Newest first.
    pub async fn list(&self, caller: &Caller, filter: &PaymentFilter, page: PageRequest) -> Result<PaymentList, Error> {
        Self::may_read(caller)?;
        let tenant = caller.tenant_id.0;
        let states = PaymentState::filter(filter.state.as_deref());
        let subject = filter.subject_id.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
        let query = || {
            let mut query = payments::table.filter(payments::tenant_id.eq(tenant)).into_boxed();
            if let Some(states) = &states {
                query = query.filter(payments::state.eq_any(states.clone()));
            }
            if let Some(subject) = &subject {
                query = query.filter(payments::subject_id.eq(subject.clone()));
            }
            query
        };
        let mut conn = self.conn(caller.tenant_id).await?;
        let total: i64 = query().count().get_result(&mut conn).await?;
        let rows: Vec<Row> = query()
            .order((payments::created_at.desc(), payments::id.desc()))
            .limit(page.per_page)
            .offset(page.offset())
            .select(Row::as_select())
            .load(&mut conn)
            .await?;
        Ok(PaymentList {
            data: rows.iter().map(|row| row.view(&self.public_url)).collect(),
            meta: Meta {
                current_page: page.page,
                per_page: page.per_page,
                total,
                last_page: ((total + page.per_page - 1) / page.per_page).max(1),
            },
        })
    }

    /// One payment by id or reference, with its timeline, ledger and refunds.
    pub async fn get(&self, caller: &Caller, payment: &str) -> Result<PaymentRead, Error> {
        Self::may_read(caller)?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let row = find(&mut conn, tenant, payment, false).await?;
        Ok(PaymentRead { data: self.detail(&mut conn, row).await? })
    }

    pub(crate) async fn detail(&self, conn: &mut store::Conn, row: Row) -> Result<PaymentDetail, Error> {
        let timeline: Vec<TimelineEntry> = payment_timeline::table
            .filter(payment_timeline::tenant_id.eq(row.tenant_id).and(payment_timeline::payment_id.eq(row.id)))
            .order(payment_timeline::id)
            .select(TimelineEntry::as_select())
            .load(conn)
            .await?;
        let ledger: Vec<LedgerEntry> = ledger_entries::table
            .filter(ledger_entries::tenant_id.eq(row.tenant_id).and(ledger_entries::payment_id.eq(row.id)))
            .order(ledger_entries::entry_no)
            .select(LedgerEntry::as_select())
            .load(conn)
            .await?;
        let refunds: Vec<Row> = payments::table
            .filter(payments::tenant_id.eq(row.tenant_id).and(payments::refund_of.eq(row.id)))
            .order((payments::created_at.desc(), payments::id.desc()))
            .select(Row::as_select())
            .load(conn)
            .await?;
        Ok(PaymentDetail {
            payment: row.view(&self.public_url),
            created_by: row.created_by.clone(),
            timeline,
            ledger,
            refunds: refunds.iter().map(|r| r.view(&self.public_url)).collect(),
        })
    }
}

/// The payment a path names, by UUID or by reference (`PAY-<digits>-<digits>`, any case); 404
/// for anything else or another tenant's.
pub(crate) async fn find(conn: &mut store::Conn, tenant: TenantId, key: &str, lock: bool) -> Result<Row, Error> {
    let key = key.trim();
    let id = if let Ok(id) = Uuid::parse_str(key) {
        id
    } else if is_reference(key) {
        payments::table
            .filter(payments::tenant_id.eq(tenant.0).and(payments::reference.eq(key.to_ascii_uppercase())))
            .select(payments::id)
            .first(conn)
            .await
            .optional()?
            .ok_or_else(|| Error::not_found("Payment"))?
    } else {
        return Err(Error::not_found("Payment"));
    };
    crate::lifecycle::load(conn, tenant, id, lock).await
}

/// `PAY-<digits>-<digits>`.
fn is_reference(key: &str) -> bool {
    let upper = key.to_ascii_uppercase();
    let Some(rest) = upper.strip_prefix("PAY-") else { return false };
    let mut parts = rest.split('-');
    let digits = |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    digits(parts.next()) && digits(parts.next()) && parts.next().is_none()
}

#[cfg(test)]
mod tests {
    #[test]
    fn references_are_pay_digits_digits() {
        assert!(super::is_reference("PAY-20261207-000042"));
        assert!(super::is_reference("pay-1-2"));
        for not in ["PAY-2026-", "PAY-x-1", "PAY-1-2-3", "20261207-000042", "PAY-1"] {
            assert!(!super::is_reference(not), "{not}");
        }
    }
}
