//! The payments service: what the REST reads, the checkout page, the provider's callbacks,
//! the admin CLI and MCP call.

use std::sync::Arc;
use std::time::Duration;

use kernel::{Caller, Clock, Error, Permission, TenantId};
use providers::MobileMoney;

/// How long payments wait (docs/operations.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentsConfig {
    /// How long a prompt sent to the payer's phone waits for an answer before the payment
    /// expires (M-Pesa's own prompt lapses after about a minute).
    pub push_ttl: Duration,
    /// How long a checkout link stays payable before its draft expires.
    pub checkout_ttl: Duration,
    /// How often a waiting payment asks the provider, when no callback came.
    pub check_every: Duration,
}

impl Default for PaymentsConfig {
    fn default() -> Self {
        Self {
            push_ttl: Duration::from_secs(180),
            checkout_ttl: Duration::from_secs(24 * 3600),
            check_every: Duration::from_secs(20),
        }
    }
}

/// The mobile-money provider payments go through.
#[derive(Clone)]
pub enum Provider {
    /// The default: settles by the payer's number (docs/api.md, "Payments").
    Sandbox(Arc<providers::PaymentSandbox>),
    Mpesa(Arc<providers::Mpesa>),
}

/// Cheap to clone.
#[derive(Clone)]
pub struct PaymentService {
    pub(crate) pool: store::Pool,
    pub(crate) clock: Clock,
    pub(crate) provider: Arc<dyn MobileMoney>,
    /// `sandbox` or `mpesa`, as payments name their provider.
    pub(crate) provider_name: &'static str,
    sandbox: Option<Arc<providers::PaymentSandbox>>,
    /// The origin of checkout links and of the provider's callback URLs.
    pub(crate) public_url: String,
    pub(crate) config: PaymentsConfig,
}

impl PaymentService {
    pub fn new(
        pool: store::Pool,
        clock: Clock,
        provider: Provider,
        public_url: String,
        config: PaymentsConfig,
    ) -> Self {
        let (provider, provider_name, sandbox): (Arc<dyn MobileMoney>, _, _) = match provider {
            Provider::Sandbox(sandbox) => (sandbox.clone(), "sandbox", Some(sandbox)),
            Provider::Mpesa(mpesa) => (mpesa, "mpesa", None),
        };
        Self { pool, clock, provider, provider_name, sandbox, public_url, config }
    }

    /// The sandbox provider, when it is the one in use (tests look at what it was asked).
    pub fn sandbox(&self) -> Option<&providers::PaymentSandbox> {
        self.sandbox.as_deref()
    }

    /// A connection that sees `tenant`'s rows only (row-level security).
    pub(crate) async fn conn(&self, tenant: TenantId) -> Result<store::PooledConn, Error> {
        store::connect(&self.pool, tenant).await
    }

    /// Payment reads (contract: Authentication 3 and 4): `payments.view`, from a key whose
    /// issuer is known and active.
    pub(crate) fn may_read(caller: &Caller) -> Result<(), Error> {
        caller.require_issuer()?;
        caller.require(Permission::PAYMENTS_VIEW)
    }

    pub(crate) fn callback_url(&self, token: &str) -> String {
        format!("{}/hooks/payments/{token}", self.public_url.trim_end_matches('/'))
    }

    pub fn register_jobs(self: &Arc<Self>, registry: &mut store::jobs::Registry) {
        registry.register::<crate::lifecycle::PushPayment>(self.clone());
        registry.register::<crate::lifecycle::CheckPayment>(self.clone());
        registry.register::<crate::refund::SendRefund>(self.clone());
    }
}

/// Where a change came from, as the timeline names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The admin command line.
    Operator,
    /// The customer, on the checkout page.
    Checkout,
    /// The provider's answer, callback or status query.
    Provider,
    /// Nobody answered in time.
    Expiry,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Operator => "operator",
            Self::Checkout => "checkout",
            Self::Provider => "provider",
            Self::Expiry => "expiry",
        }
    }
}
