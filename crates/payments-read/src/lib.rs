//! Payments (contract: Payment, Payment state, Payments (read only), `order.paid`): money that
//! settles orders. The API only reads them; they are asked for by the customer on an order's
//! checkout page or by the operator's command line, pushed to the payer's phone through a
//! [`providers::MobileMoney`] (M-Pesa's STK push shape, or the sandbox), settled by the
//! provider's callback or a status query, and refunded by the operator. Each state change goes
//! through one table ([`PaymentState`]); each money movement writes balanced entries into a
//! double-entry ledger in the same transaction.
//!
//! Everything goes through [`PaymentService`].

mod ledger;
mod lifecycle;
pub mod payment;
pub mod reads;
mod refund;
mod schema;
mod service;
pub mod state;
mod timeline;

pub use ledger::{CUSTOMER_PAYMENTS, PROVIDER_CLEARING};
pub use lifecycle::{CheckPayment, Checkout, PushPayment};
pub use payment::{Payment, PaymentDetail};
pub use reads::{PaymentFilter, PaymentList, PaymentRead};
pub use refund::SendRefund;
pub use service::{PaymentService, PaymentsConfig, Provider, Source};
pub use state::PaymentState;

kernel::id!(
    /// A payment (a UUID).
    PaymentId: Uuid
);
