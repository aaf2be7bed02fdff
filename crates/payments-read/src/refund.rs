//! Refunds, made by the operator only (contract: no payment write with an API key): a refund is
//! a payment of its own (`refund_of`, `is_refund`) that gives part or all of a settled payment
//! back. Its amount is reserved on the original under a row lock before the provider is asked,
//! so concurrent refunds never give back more than was paid.

use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::state::Status;
use kernel::{Caller, Error, TenantId};
use providers::RefundOutcome;
use serde::{Deserialize, Serialize};
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::lifecycle::{load, next_reference, secret};
use crate::payment::{Payment, Row};
use crate::reads::find;
use crate::schema::payments;
use crate::service::{PaymentService, Source};
use crate::state::{PaymentEvent, PaymentState};
use crate::{PaymentId, ledger, timeline};

/// How long the inline reversal has before the job takes over (it runs only if the refund is
/// still waiting then).
const FALLBACK_AFTER: time::Duration = time::Duration::minutes(2);

impl PaymentService {
    /// `gateway admin payment refund`: gives `amount_minor` of `payment` (id or reference) back.
    /// 422 for a non-positive amount or one beyond what is refundable, 409 for a payment that
    /// is not settled or is a refund itself. Answers the refund, settled or failed.
    pub async fn refund(
        &self,
        caller: &Caller,
        payment: &str,
        amount_minor: i64,
        reason: Option<&str>,
    ) -> Result<Payment, Error> {
        let tenant = caller.tenant_id;
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        let refund = conn
            .transaction::<_, Error, _>(async |conn| {
                let original = find(conn, tenant, payment, true).await?;
                if original.refund_of.is_some() {
                    return Err(Error::conflict(format!("{} is a refund: it is not refunded.", original.reference)));
                }
                if !original.state.is_settled() {
                    return Err(Error::conflict(format!(
                        "{} is {}: only money that settled is refunded.",
                        original.reference, original.state
                    )));
                }
                let refundable = original.refundable_minor();
                if amount_minor <= 0 || amount_minor > refundable {
                    return Err(Error::field(
                        "amount_minor",
                        format!("The amount must be between 1 and {refundable} (what is still refundable)."),
                    ));
                }
                diesel::update(payments::table.filter(payments::id.eq(original.id)))
                    .filter(payments::tenant_id.eq(tenant.0))
                    .set(payments::refunding_minor.eq(payments::refunding_minor + amount_minor))
                    .execute(conn)
                    .await?;
                let refund: Row = diesel::insert_into(payments::table)
                    .values((
                        payments::id.eq(Uuid::now_v7()),
                        payments::tenant_id.eq(tenant.0),
                        payments::reference.eq(next_reference(conn, now).await?),
                        payments::state.eq(PaymentState::Pending),
                        payments::amount_minor.eq(amount_minor),
                        payments::currency.eq(&original.currency),
                        payments::payer.eq(&original.payer),
                        payments::method.eq(&original.method),
                        payments::provider.eq(&original.provider),
                        payments::attempts.eq(1),
                        payments::subject_type.eq(&original.subject_type),
                        payments::subject_id.eq(&original.subject_id),
                        payments::callback_token.eq(secret()),
                        payments::refund_of.eq(original.id),
                        payments::reason.eq(reason),
                        payments::created_by
                            .eq(serde_json::json!({"kind": "operator", "id": null, "label": caller.key_name})),
                        payments::created_at.eq(now),
                        payments::updated_at.eq(now),
                    ))
                    .returning(Row::as_returning())
                    .get_result(conn)
                    .await?;
                let message = format!("refund of {} asked", crate::payment::display(amount_minor, &refund.currency));
                timeline::record(conn, &refund, None, PaymentState::Pending, Source::Operator, Some(&message), now)
                    .await?;
                let job = SendRefund { refund: PaymentId(refund.id) };
                let options =
                    Enqueue { tenant_id: Some(tenant), run_at: Some(now + FALLBACK_AFTER), ..Enqueue::default() };
                store::jobs::enqueue(conn, &job, options).await?;
                Ok(refund)
            })
            .await?;
        drop(conn);
        self.send_refund(tenant, refund.id).await?;
        let mut conn = self.conn(tenant).await?;
        Ok(load(&mut conn, tenant, refund.id, false).await?.view(&self.public_url))
    }

    /// Asks the provider to give a waiting refund's money back, and records its answer once.
    async fn send_refund(&self, tenant: TenantId, id: Uuid) -> Result<(), Error> {
        let mut conn = self.conn(tenant).await?;
        let refund = load(&mut conn, tenant, id, false).await?;
        let Some(original_id) = refund.refund_of.filter(|_| refund.state == PaymentState::Pending) else {
            return Ok(());
        };
        let original = load(&mut conn, tenant, original_id, false).await?;
        drop(conn);
        let receipt = original.provider_receipt.clone().unwrap_or_default();
        let outcome = self.provider.refund(&receipt, refund.amount_minor, &refund.reference).await;
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        conn.transaction::<_, Error, _>(async |conn| {
            // the original first, as the refund was made: two refunds never wait on each other
            let original = load(conn, tenant, original_id, true).await?;
            let refund = load(conn, tenant, id, true).await?;
            if refund.state != PaymentState::Pending {
                return Ok(());
            }
            let amount = refund.amount_minor;
            let (accepted, request, error) = match outcome {
                Ok(RefundOutcome::Accepted { provider_reference }) => (true, Some(provider_reference), None),
                Ok(RefundOutcome::Refused { reason }) => (false, None, Some(format!("The provider refused: {reason}"))),
                Err(error) => (false, None, Some(format!("The provider could not be asked: {error}"))),
            };
            let event = if accepted { PaymentEvent::Settle } else { PaymentEvent::Fail };
            let refund = self.moved_refund(conn, refund, event, request, error, now).await?;
            let (refunded, refunding) = if accepted {
                (original.refunded_minor + amount, original.refunding_minor - amount)
            } else {
                (original.refunded_minor, original.refunding_minor - amount)
            };
            let next_event =
                if refunded >= original.amount_minor { PaymentEvent::RefundAll } else { PaymentEvent::RefundPart };
            let next = if accepted { original.state.apply(next_event)? } else { original.state };
            let updated: Row = diesel::update(payments::table.filter(payments::id.eq(original.id)))
                .filter(payments::tenant_id.eq(tenant.0))
                .set((
                    payments::state.eq(next),
                    payments::refunded_minor.eq(refunded),
                    payments::refunding_minor.eq(refunding),
                    payments::updated_at.eq(now),
                ))
                .returning(Row::as_returning())
                .get_result(conn)
                .await?;
            if accepted {
                let message =
                    format!("{} refunded by {}", crate::payment::display(amount, &refund.currency), refund.reference);
                timeline::record(conn, &updated, Some(original.state), next, Source::Operator, Some(&message), now)
                    .await?;
                if let Some(order) = updated.order() {
                    let status = if next == PaymentState::Refunded { "refunded" } else { "partly_refunded" };
                    commerce::orders::set_payment_status(conn, tenant, order, status, now).await?;
                }
            }
            Ok(())
        })
        .await
    }

    /// A refund's own move: settled (the money went back, into the ledger) or failed.
    async fn moved_refund(
        &self,
        conn: &mut store::Conn,
        refund: Row,
        event: PaymentEvent,
        request: Option<String>,
        error: Option<String>,
        now: OffsetDateTime,
    ) -> Result<Row, Error> {
        let next = refund.state.apply(event)?;
        let settled = event == PaymentEvent::Settle;
        let moved: Row = diesel::update(payments::table.filter(payments::id.eq(refund.id)))
            .filter(payments::tenant_id.eq(refund.tenant_id))
            .set((
                payments::state.eq(next),
                payments::provider_request_id.eq(request),
                payments::last_error.eq(&error),
                payments::settled_at.eq(settled.then_some(now)),
                payments::updated_at.eq(now),
            ))
            .returning(Row::as_returning())
            .get_result(conn)
            .await?;
        let message = error.unwrap_or_else(|| "the money went back to the payer".to_owned());
        timeline::record(conn, &moved, Some(refund.state), next, Source::Provider, Some(&message), now).await?;
        if settled {
            ledger::refund(conn, &moved, now).await?;
        }
        Ok(moved)
    }
}

/// Sends a refund the operator's own attempt left waiting (its process died mid-way).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SendRefund {
    pub refund: PaymentId,
}

impl Job for SendRefund {
    const NAME: &'static str = "payments.refund";
    const MAX_ATTEMPTS: i32 = 3;
    type State = PaymentService;

    async fn run(self, service: Arc<PaymentService>, ctx: JobContext) -> Result<(), JobError> {
        Ok(service.send_refund(ctx.tenant()?, self.refund.0).await?)
    }
}
