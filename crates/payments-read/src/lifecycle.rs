//! A payment's life: asked for (a draft with a checkout link, or a prompt on the payer's phone
//! at once), pushed by a job (network never inside a transaction), answered by the provider's
//! callback or a status query, settled into the ledger with `order.paid`, or failed, cancelled
//! or expired. Every move goes through [`PaymentEvent`]'s table, in SQL as `state = ANY(...)`,
//! so a late or repeated answer changes nothing twice.

use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::state::{Event, Status};
use kernel::{Caller, Error, TenantId};
use providers::{PushOutcome, PushRequest, PushResult};
use serde::{Deserialize, Serialize};
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::payment::{Payment, Row};
use crate::schema::payments;
use crate::service::{PaymentService, Source};
use crate::state::{PaymentEvent, PaymentState};
use crate::{PaymentId, ledger, timeline};

/// Random, URL-safe secrets: 32 hex characters from the system's generator.
pub(crate) fn secret() -> String {
    let mut bytes = [0u8; 16];
    if ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).is_err() {
        bytes = *Uuid::new_v4().as_bytes();
    }
    hex::encode(bytes)
}

fn duration(d: std::time::Duration) -> time::Duration {
    time::Duration::try_from(d).unwrap_or(time::Duration::MAX)
}

/// The secrets a payment is found by without a key.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Token {
    /// The checkout page's (`/pay/{token}`).
    Checkout,
    /// The provider's callback URL's (`/hooks/payments/{token}`).
    Callback,
}

/// The checkout page's view of a payment.
#[derive(Debug, Clone)]
pub struct Checkout {
    pub payment: Payment,
    /// The order's customer, to greet them.
    pub customer_name: Option<String>,
}

impl PaymentService {
    /// Money for an order (the admin CLI's `payment request`, the basket page's pay step): the
    /// order's open payment when it has one, else a new draft with a checkout link; with `phone`
    /// the payer's phone is asked at once. 404 for an unknown order, 409 for one that is paid,
    /// cancelled or refunded, or whose payment is waiting for the payer already.
    pub async fn request_for_order(
        &self,
        caller: &Caller,
        order: commerce::OrderId,
        phone: Option<&str>,
        source: Source,
    ) -> Result<Payment, Error> {
        let phone = phone.map(|raw| payer(raw, &caller.calling_code)).transpose()?;
        let row = self.request(caller.tenant_id, order, phone, source, &caller.key_name).await?;
        Ok(row.view(&self.public_url))
    }

    /// The basket page's pay step: the order's open payment (a new draft when it has none),
    /// or `None` when nothing is owed on it any more (paid, cancelled, refunded).
    pub async fn checkout_for_order(
        &self,
        tenant: TenantId,
        order: commerce::OrderId,
    ) -> Result<Option<Payment>, Error> {
        match self.request(tenant, order, None, Source::Checkout, "customer").await {
            Ok(row) => Ok(Some(row.view(&self.public_url))),
            Err(error) if error.is(kernel::ErrorKind::Conflict) => Ok(None),
            Err(error) => Err(error),
        }
    }

    async fn request(
        &self,
        tenant: TenantId,
        order: commerce::OrderId,
        phone: Option<String>,
        source: Source,
        label: &str,
    ) -> Result<Row, Error> {
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        conn.transaction::<_, Error, _>(async |conn| {
            let payable = commerce::orders::payable(conn, tenant, order).await?;
            let open: Option<Row> = payments::table
                .filter(payments::tenant_id.eq(tenant.0))
                .filter(payments::subject_type.eq("order").and(payments::subject_id.eq(payable.id.to_string())))
                .filter(payments::refund_of.is_null())
                .filter(payments::state.eq_any(["draft", "pending", "authorised", "failed"]))
                .select(Row::as_select())
                .for_update()
                .first(conn)
                .await
                .optional()?;
            let row = match open {
                Some(row) => row,
                None => self.insert_draft(conn, tenant, &payable, label, source, now).await?,
            };
            match phone {
                Some(phone) => self.push(conn, row, &phone, source, now).await,
                None => Ok(row),
            }
        })
        .await
    }

    async fn insert_draft(
        &self,
        conn: &mut store::Conn,
        tenant: TenantId,
        order: &commerce::orders::Payable,
        label: &str,
        source: Source,
        now: OffsetDateTime,
    ) -> Result<Row, Error> {
        let reference = next_reference(conn, now).await?;
        let created_by = serde_json::json!({
            "kind": source.as_str(),
            "id": null,
            "label": label,
        });
        let row: Row = diesel::insert_into(payments::table)
            .values((
                payments::id.eq(Uuid::now_v7()),
                payments::tenant_id.eq(tenant.0),
                payments::reference.eq(reference),
                payments::state.eq(PaymentState::Draft),
                payments::amount_minor.eq(order.total_minor),
                payments::currency.eq(&order.currency),
                payments::method.eq("mobile_money"),
                payments::provider.eq(self.provider_name),
                payments::expires_at.eq(now + duration(self.config.checkout_ttl)),
                payments::subject_type.eq("order"),
                payments::subject_id.eq(order.id.to_string()),
                payments::checkout_token.eq(secret()),
                payments::callback_token.eq(secret()),
                payments::created_by.eq(created_by),
                payments::created_at.eq(now),
                payments::updated_at.eq(now),
            ))
            .returning(Row::as_returning())
            .get_result(conn)
            .await?;
        timeline::record(conn, &row, None, PaymentState::Draft, source, Some("checkout link made"), now).await?;
        // the draft lapses unless somebody pays
        let check = CheckPayment { payment: PaymentId(row.id), attempt: 0 };
        enqueue_check(conn, tenant, &check, row.expires_at.unwrap_or(now)).await?;
        Ok(row)
    }

    /// Asks the payer's phone: the draft (or the failed payment, tried again) moves to
    /// `pending` and a job sends the prompt. 409 while a prompt is waiting already.
    pub(crate) async fn push(
        &self,
        conn: &mut store::Conn,
        row: Row,
        phone: &str,
        source: Source,
        now: OffsetDateTime,
    ) -> Result<Row, Error> {
        let Ok(next) = row.state.apply(PaymentEvent::Push) else {
            return Err(Error::conflict(format!(
                "Payment {} is {}: its payer's phone is not asked again.",
                row.reference, row.state
            ))
            .with_reason("payment_not_payable"));
        };
        let moved: Row = diesel::update(payments::table.filter(payments::id.eq(row.id)))
            .filter(payments::tenant_id.eq(row.tenant_id))
            .filter(payments::state.eq_any(PaymentEvent::Push.sources()))
            .set((
                payments::state.eq(next),
                payments::payer.eq(phone),
                payments::attempts.eq(payments::attempts + 1),
                payments::provider_request_id.eq(None::<String>),
                payments::last_error.eq(None::<String>),
                payments::expires_at.eq(now + duration(self.config.push_ttl)),
                payments::updated_at.eq(now),
            ))
            .returning(Row::as_returning())
            .get_result(conn)
            .await?;
        let message = format!("payment prompt sent to {phone}");
        timeline::record(conn, &moved, Some(row.state), next, source, Some(&message), now).await?;
        if let Some(order) = moved.order() {
            commerce::orders::set_payment_status(conn, TenantId(moved.tenant_id), order, "pending", now).await?;
        }
        let push = PushPayment { payment: PaymentId(moved.id), attempt: moved.attempts };
        let options = Enqueue { tenant_id: Some(TenantId(moved.tenant_id)), priority: 10, ..Enqueue::default() };
        store::jobs::enqueue(conn, &push, options).await?;
        Ok(moved)
    }

    /// The checkout page: the payment behind a checkout link (404 for an unknown token).
    pub async fn checkout(&self, token: &str) -> Result<Checkout, Error> {
        let (tenant, id) = self.by_token(Token::Checkout, token).await?;
        let mut conn = self.conn(tenant).await?;
        let row = load(&mut conn, tenant, id, false).await?;
        let customer_name = match row.order() {
            Some(order) => commerce::orders::payable(&mut conn, tenant, order).await.ok().and_then(|o| o.customer_name),
            None => None,
        };
        Ok(Checkout { payment: row.view(&self.public_url), customer_name })
    }

    /// The customer pays from the checkout page with `phone` (422 for a number no plan knows,
    /// 409 when the payment cannot take money now).
    pub async fn pay_checkout(&self, token: &str, phone: &str) -> Result<Payment, Error> {
        let (tenant, id) = self.by_token(Token::Checkout, token).await?;
        let mut conn = self.conn(tenant).await?;
        let calling_code = accounts::tenants::get(&mut conn, tenant).await?.default_country_code;
        let phone = payer(phone, &calling_code)?;
        let now = self.clock.now();
        let row = conn
            .transaction::<_, Error, _>(async |conn| {
                let row = load(conn, tenant, id, true).await?;
                if row.state == PaymentState::Draft && row.expires_at.is_some_and(|at| at <= now) {
                    return Err(Error::conflict("This checkout link has expired."));
                }
                self.push(conn, row, &phone, Source::Checkout, now).await
            })
            .await?;
        Ok(row.view(&self.public_url))
    }

    /// The tenant and id of the payment a checkout link or a callback URL names.
    pub(crate) async fn by_token(&self, kind: Token, token: &str) -> Result<(TenantId, Uuid), Error> {
        // a token is 32 hex characters: anything else names nothing, and is not looked up
        if token.len() != 32 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::not_found("Payment"));
        }
        let mut conn = store::connect_system(&self.pool).await?;
        let query = payments::table.select((payments::tenant_id, payments::id)).into_boxed();
        let query = match kind {
            Token::Checkout => query.filter(payments::checkout_token.eq(token)),
            Token::Callback => query.filter(payments::callback_token.eq(token)),
        };
        let found: Option<(i64, Uuid)> = query.first(&mut conn).await.optional()?;
        found.map(|(tenant, id)| (TenantId(tenant), id)).ok_or_else(|| Error::not_found("Payment"))
    }

    /// The provider's result callback, at `/hooks/payments/{token}` (the URL the push named):
    /// read by the provider's own parser, taken only for the request that payment sent, and
    /// applied once. 404 for an unknown token, 422 for a body that is not a callback or names
    /// another request.
    pub async fn callback(&self, token: &str, body: &[u8]) -> Result<(), Error> {
        let found = self.by_token(Token::Callback, token).await?;
        let callback = self
            .provider
            .parse_callback(body)
            .map_err(|e| Error::validation(format!("Not a payment callback: {e}")))?;
        self.answer(found.0, found.1, Some(&callback.checkout_request_id), callback.result, Source::Provider).await
    }

    /// Applies what the provider said of a push, once: the state moves only from the states
    /// the event leaves. `request` is the provider's id the answer is about: an answer about
    /// another push of this payment is refused.
    pub(crate) async fn answer(
        &self,
        tenant: TenantId,
        id: Uuid,
        request: Option<&str>,
        result: PushResult,
        source: Source,
    ) -> Result<(), Error> {
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        conn.transaction::<_, Error, _>(async |conn| {
            let row = load(conn, tenant, id, true).await?;
            if let (Some(sent), Some(answered)) = (row.provider_request_id.as_deref(), request)
                && sent != answered
            {
                return Err(Error::validation("The callback names another payment request."));
            }
            let (event, receipt, error) = match result {
                PushResult::Pending => return Ok(()),
                PushResult::Paid { receipt, amount_minor, .. } => {
                    if amount_minor.is_some_and(|paid| paid != row.amount_minor) {
                        // money moved, but not what was asked: the operator decides
                        let why = format!(
                            "The provider reports {} paid (receipt {receipt}) against {} asked.",
                            amount_minor.unwrap_or_default(),
                            row.amount_minor
                        );
                        diesel::update(payments::table.filter(payments::id.eq(row.id)))
                            .filter(payments::tenant_id.eq(row.tenant_id))
                            .set((payments::last_error.eq(&why), payments::updated_at.eq(now)))
                            .execute(conn)
                            .await?;
                        timeline::record(conn, &row, Some(row.state), row.state, source, Some(&why), now).await?;
                        return Ok(());
                    }
                    (PaymentEvent::Settle, Some(receipt), None)
                }
                PushResult::Failed { code, reason } => (PaymentEvent::Fail, None, Some(format!("{reason} ({code})"))),
                PushResult::Cancelled { code, reason } => {
                    (PaymentEvent::Cancel, None, Some(format!("{reason} ({code})")))
                }
                PushResult::Expired { code, reason } => {
                    (PaymentEvent::Expire, None, Some(format!("{reason} ({code})")))
                }
            };
            self.moved(conn, row, event, receipt, error, request, source, now).await.map(|_| ())
        })
        .await
    }

    /// Moves `row` by `event` (nothing when the table does not allow it from where it is now)
    /// with what goes with it: the ledger and `order.paid` on settlement, the order's payment
    /// status, the timeline.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn moved(
        &self,
        conn: &mut store::Conn,
        row: Row,
        event: PaymentEvent,
        receipt: Option<String>,
        error: Option<String>,
        request: Option<&str>,
        source: Source,
        now: OffsetDateTime,
    ) -> Result<Option<Row>, Error> {
        let Ok(next) = row.state.apply(event) else { return Ok(None) };
        let settled = event == PaymentEvent::Settle;
        let moved: Row = diesel::update(payments::table.filter(payments::id.eq(row.id)))
            .filter(payments::tenant_id.eq(row.tenant_id))
            .filter(payments::state.eq_any(event.sources()))
            .set((
                payments::state.eq(next),
                payments::provider_receipt.eq(receipt.or(row.provider_receipt.clone())),
                payments::provider_request_id.eq(row.provider_request_id.clone().or(request.map(str::to_owned))),
                payments::last_error.eq(error.clone().or(if settled { None } else { row.last_error.clone() })),
                payments::settled_at.eq(if settled { Some(now) } else { row.settled_at }),
                payments::updated_at.eq(now),
            ))
            .returning(Row::as_returning())
            .get_result(conn)
            .await?;
        let message = match (&error, &moved.provider_receipt) {
            (Some(error), _) => Some(error.clone()),
            (None, Some(receipt)) if settled => Some(format!("paid, receipt {receipt}")),
            _ => None,
        };
        timeline::record(conn, &moved, Some(row.state), next, source, message.as_deref(), now).await?;
        let tenant = TenantId(moved.tenant_id);
        if settled {
            ledger::settlement(conn, &moved, now).await?;
        }
        if let Some(order) = moved.order() {
            let status = if settled { "paid" } else { "unpaid" };
            commerce::orders::set_payment_status(conn, tenant, order, status, now).await?;
            if settled {
                order_paid(conn, &moved, order, now).await?;
            }
        }
        Ok(Some(moved))
    }

    /// [`PushPayment`]: sends the prompt, once per attempt.
    async fn send_push(&self, tenant: TenantId, id: Uuid, attempt: i32) -> Result<(), Error> {
        let mut conn = self.conn(tenant).await?;
        let row = load(&mut conn, tenant, id, false).await?;
        // a later attempt, an answer already in, or a prompt already sent: nothing to do
        if row.state != PaymentState::Pending || row.attempts != attempt || row.provider_request_id.is_some() {
            return Ok(());
        }
        drop(conn);
        let description = match row.order() {
            Some(order) => format!("Order {}", order.0),
            None => row.reference.clone(),
        };
        let request = PushRequest {
            reference: &row.reference,
            phone: row.payer.as_deref().unwrap_or_default(),
            amount_minor: row.amount_minor,
            currency: &row.currency,
            description: &description,
            callback_url: &self.callback_url(&row.callback_token),
        };
        let outcome = self.provider.push(request).await;
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        conn.transaction::<_, Error, _>(async |conn| {
            let row = load(conn, tenant, id, true).await?;
            if row.state != PaymentState::Pending || row.attempts != attempt {
                return Ok(());
            }
            match outcome {
                Ok(PushOutcome::Accepted { checkout_request_id, answer_after }) => {
                    diesel::update(payments::table.filter(payments::id.eq(row.id)))
                        .filter(payments::tenant_id.eq(row.tenant_id))
                        .set(payments::provider_request_id.eq(&checkout_request_id))
                        .execute(conn)
                        .await?;
                    let wait = duration(answer_after.unwrap_or(self.config.check_every));
                    let at = row.expires_at.map_or(now + wait, |expiry| expiry.min(now + wait));
                    enqueue_check(conn, tenant, &CheckPayment { payment: PaymentId(row.id), attempt }, at).await
                }
                Ok(PushOutcome::Refused { reason }) => {
                    let error = Some(format!("The provider refused the request: {reason}"));
                    self.moved(conn, row, PaymentEvent::Fail, None, error, None, Source::Provider, now)
                        .await
                        .map(|_| ())
                }
                // the prompt's fate is unknown; it is not sent twice (a payer must never be
                // asked to pay twice): the payment fails and may be tried again
                Err(error) => {
                    let error = Some(format!("The provider could not be asked: {error}"));
                    self.moved(conn, row, PaymentEvent::Fail, None, error, None, Source::Provider, now)
                        .await
                        .map(|_| ())
                }
            }
        })
        .await
    }

    /// [`CheckPayment`]: a lapsed draft expires; a waiting push asks the provider, and expires
    /// once its time is up.
    async fn check(&self, tenant: TenantId, id: Uuid, attempt: i32) -> Result<(), Error> {
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        let row = load(&mut conn, tenant, id, false).await?;
        let due = row.expires_at.is_some_and(|at| at <= now);
        if row.attempts != attempt || !row.state.is_open() {
            return Ok(());
        }
        let result = match (&row.state, &row.provider_request_id) {
            (PaymentState::Draft, _) if due => PushResult::Expired {
                code: "checkout_expired".into(),
                reason: "Nobody paid through the checkout link in time".into(),
            },
            (PaymentState::Draft, _) => return Ok(()),
            (_, Some(request)) => {
                drop(conn);
                let answer = self.provider.query(request).await;
                conn = self.conn(tenant).await?;
                match answer {
                    Ok(result) => result,
                    Err(error) => {
                        tracing::warn!(%error, payment = %row.reference, "a payment status query failed");
                        PushResult::Pending
                    }
                }
            }
            (_, None) => PushResult::Pending,
        };
        match result {
            PushResult::Pending if due => {
                let expired = PushResult::Expired {
                    code: "timeout".into(),
                    reason: "The payer did not answer the payment prompt in time".into(),
                };
                let source = Source::Expiry;
                drop(conn);
                self.answer(tenant, id, row.provider_request_id.as_deref(), expired, source).await
            }
            PushResult::Pending => {
                let at = row.expires_at.map_or(now, |expiry| expiry.min(now + duration(self.config.check_every)));
                enqueue_check(&mut conn, tenant, &CheckPayment { payment: PaymentId(id), attempt }, at).await
            }
            result => {
                let source = if row.state == PaymentState::Draft { Source::Expiry } else { Source::Provider };
                drop(conn);
                self.answer(tenant, id, row.provider_request_id.as_deref(), result, source).await
            }
        }
    }
}

/// A new reference, `PAY-<yyyymmdd>-<number>`: the day it was made and a number no other
/// payment has.
pub(crate) async fn next_reference(conn: &mut store::Conn, now: OffsetDateTime) -> Result<String, Error> {
    let number: i64 = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>("nextval('payment_references')"))
        .get_result(conn)
        .await?;
    Ok(format!("PAY-{:04}{:02}{:02}-{number:06}", now.year(), u8::from(now.month()), now.day()))
}

/// The payer's number in E.164, read in the account's calling code.
fn payer(raw: &str, calling_code: &str) -> Result<String, Error> {
    kernel::phone::normalize(raw, calling_code)
        .ok_or_else(|| Error::field("phone", "The phone must be a valid mobile number."))
}

/// The payment `id` of `tenant`, locked when `lock`.
pub(crate) async fn load(conn: &mut store::Conn, tenant: TenantId, id: Uuid, lock: bool) -> Result<Row, Error> {
    let query =
        payments::table.filter(payments::id.eq(id).and(payments::tenant_id.eq(tenant.0))).select(Row::as_select());
    let row = if lock { query.for_update().first(conn).await } else { query.first(conn).await };
    row.optional()?.ok_or_else(|| Error::not_found("Payment"))
}

async fn enqueue_check(
    conn: &mut store::Conn,
    tenant: TenantId,
    check: &CheckPayment,
    at: OffsetDateTime,
) -> Result<(), Error> {
    let options = Enqueue { tenant_id: Some(tenant), run_at: Some(at), ..Enqueue::default() };
    store::jobs::enqueue(conn, check, options).await?;
    Ok(())
}

/// `order.paid` (contract: Payload shapes): the money for an order settled.
async fn order_paid(
    conn: &mut store::Conn,
    row: &Row,
    order: commerce::OrderId,
    now: OffsetDateTime,
) -> Result<(), Error> {
    let conversation_id = commerce::orders::conversation_of(conn, TenantId(row.tenant_id), order).await?;
    let payload = serde_json::json!({
        "order_id": order.0,
        "payment_id": row.id,
        "method": row.method,
        "amount_minor": row.amount_minor,
        "currency": row.currency,
        "payer_msisdn": row.payer.as_deref().map(kernel::phone::digits),
        "paid_at": row.settled_at.unwrap_or(now).format(&time::format_description::well_known::Rfc3339).ok(),
        "conversation_id": conversation_id,
    });
    store::outbox::emit(conn, TenantId(row.tenant_id), "order.paid", payload, now).await?;
    Ok(())
}

/// Sends the prompt of one attempt to the payer's phone.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PushPayment {
    pub payment: PaymentId,
    pub attempt: i32,
}

impl Job for PushPayment {
    const NAME: &'static str = "payments.push";
    const MAX_ATTEMPTS: i32 = 5;
    type State = PaymentService;

    async fn run(self, service: Arc<PaymentService>, ctx: JobContext) -> Result<(), JobError> {
        Ok(service.send_push(ctx.tenant()?, self.payment.0, self.attempt).await?)
    }
}

/// Asks what became of an attempt, or lets a draft lapse.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckPayment {
    pub payment: PaymentId,
    pub attempt: i32,
}

impl Job for CheckPayment {
    const NAME: &'static str = "payments.check";
    type State = PaymentService;

    async fn run(self, service: Arc<PaymentService>, ctx: JobContext) -> Result<(), JobError> {
        Ok(service.check(ctx.tenant()?, self.payment.0, self.attempt).await?)
    }
}
