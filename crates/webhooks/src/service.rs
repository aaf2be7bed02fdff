//! The webhooks service: what the REST routes, the delivery loop and the gateway call.

use std::sync::Arc;
use std::time::Duration;

use kernel::{Caller, Clock, Error, Permission};

use crate::catalogue::{Catalogue, Listing};
use crate::guard;

/// Tunables, from the environment in the gateway (docs/operations.md).
#[derive(Debug, Clone)]
pub struct WebhooksConfig {
    pub policy: guard::Policy,
    /// The whole attempt, connection to last byte read.
    pub timeout: Duration,
    /// Deliveries in flight at once in one process.
    pub concurrency: usize,
    /// Deliveries in flight at once to one receiver, so a slow one never holds back the rest.
    pub per_receiver: usize,
    /// How long a claimed delivery stays claimed before another process may try it, unless the
    /// claiming process renews it (three times per lease while it holds the claim): also how
    /// soon a dead process's claims come back.
    pub lease: time::Duration,
    /// Fallback poll when no notification arrives.
    pub poll_interval: Duration,
    /// Bytes of a receiver's answer kept in the log.
    pub excerpt_limit: usize,
    /// Consecutive failed attempts that pause a receiver.
    pub pause_after: i32,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        Self {
            policy: guard::Policy::default(),
            timeout: Duration::from_secs(10),
            concurrency: 64,
            per_receiver: 16,
            lease: time::Duration::seconds(30),
            poll_interval: Duration::from_secs(1),
            excerpt_limit: 1_024,
            pause_after: 50,
        }
    }
}

/// Cheap to clone: everything inside is shared.
#[derive(Clone)]
pub struct WebhookService {
    pub(crate) pool: store::Pool,
    pub(crate) clock: Clock,
    pub(crate) catalogue: Arc<Catalogue>,
    pub(crate) config: Arc<WebhooksConfig>,
    /// Seals custom header values and signing secrets (`store::secrets`).
    pub(crate) keyring: store::secrets::Keyring,
    pub(crate) client: reqwest::Client,
}

impl WebhookService {
    /// `keyring` seals custom header values and signing secrets.
    pub fn new(
        pool: store::Pool,
        clock: Clock,
        catalogue: Catalogue,
        config: WebhooksConfig,
        keyring: store::secrets::Keyring,
    ) -> Result<Self, Error> {
        let client = guard::client(config.policy, config.timeout).map_err(Error::internal)?;
        Ok(Self { pool, clock, catalogue: Arc::new(catalogue), config: Arc::new(config), keyring, client })
    }

    pub fn config(&self) -> &WebhooksConfig {
        &self.config
    }

    pub fn catalogue(&self) -> &Catalogue {
        &self.catalogue
    }

    /// `GET /webhooks/events`: the catalogue, grouped, with a sample body for each event.
    pub fn events(&self, caller: &Caller) -> Result<Listing, Error> {
        caller.require(Permission::WEBHOOKS_VIEW)?;
        Ok(self.catalogue.listing())
    }

    /// A connection that sees `tenant`'s rows only (row-level security).
    pub(crate) async fn conn(&self, tenant: kernel::TenantId) -> Result<store::PooledConn, Error> {
        store::connect(&self.pool, tenant).await
    }

    /// A connection across tenants, for work that finds out whose it is (docs/operations.md,
    /// "Row-level security").
    pub(crate) async fn system_conn(&self) -> Result<store::PooledConn, Error> {
        store::connect_system(&self.pool).await
    }
}
