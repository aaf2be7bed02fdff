//! The `payments` tools (contract: Payments (read only)): the list and one payment with its
//! timeline, ledger and refunds, over `payments_read::PaymentService` and the methods
//! `GET /payments` and `GET /payments/{payment}` call (apps/gateway/src/v3/payments.rs), so
//! `payments.view` from a known, active issuer and the tenant's rows only are the service's.
//! Read only: no tool asks for, settles or refunds a payment.

use kernel::page::PageQuery;
use kernel::{Error, PageRequest, Permission};
use payments_read::reads::{DEFAULT_PER_PAGE, PaymentFilter, PaymentList, PaymentRead};
use serde_json::{Value, json};

use crate::tool::{Call, Effect, Tool, answer, object, params_of, query_input, schema_of};

const SERVER: &str = "payments";

/// The payments tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_payments",
            title: "List payments",
            description: "The workspace's payments, newest first (25 a page, at most 100), each with its reference (PAY-...), state (draft, pending, authorised, paid, partly_refunded, refunded, failed, expired, cancelled), amount, payer, provider and receipt, subject (the order it pays for) and what may still be refunded, as GET /payments does: state filters by open (draft, pending, authorised), one state or all (an unrecognized value leaves the list unfiltered); subject_id by the order's id. Answers {data, meta} with the page's meta (current_page, per_page, total, last_page).",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::PAYMENTS_VIEW),
            effect: Effect::Read,
            input: list_input,
            output: schema_of::<PaymentList>,
            call: |call| Box::pin(list_payments(call)),
        },
        Tool {
            name: "get_payment",
            title: "Get a payment",
            description: "One payment by its id (a UUID) or its reference (PAY-<digits>-<digits>, any case), as GET /payments/{payment} does: the payment with who asked for it (created_by), its timeline (each state change with its source, oldest first), its ledger entries (debit and credit by entry_no) and its refunds (newest first). Answers {data}.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::PAYMENTS_VIEW),
            effect: Effect::Read,
            input: || object(&[("payment", payment(), true)]),
            output: schema_of::<PaymentRead>,
            call: |call| Box::pin(get_payment(call)),
        },
    ]
}

/// The payment: the REST path's `{payment}`.
fn payment() -> Value {
    json!({"type": "string", "description": "The payment's id (a UUID) or its reference, such as PAY-20261207-000042."})
}

/// `GET /payments`' query: its page and its filters.
fn list_input() -> Value {
    query_input(&[], [params_of::<PageQuery>(), params_of::<PaymentFilter>()].concat())
}

async fn list_payments(call: Call) -> Result<Value, Error> {
    let members = list_input();
    let page: PageQuery = call.query(&members)?;
    let filter: PaymentFilter = call.query(&members)?;
    let page = PageRequest::parse(&page, DEFAULT_PER_PAGE)?;
    answer(call.domains.payments.list(&call.caller, &filter, page).await?)
}

async fn get_payment(mut call: Call) -> Result<Value, Error> {
    let payment = call.take_path("payment")?;
    answer(call.domains.payments.get(&call.caller, &payment).await?)
}
