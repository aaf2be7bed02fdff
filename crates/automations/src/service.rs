//! The automations service.

use std::sync::Arc;
use std::time::Duration;

use kernel::{Caller, Clock, Error, Permission, TenantId};

/// What the callbacks go through.
#[derive(Debug, Clone, Copy)]
pub struct AutomationsConfig {
    /// The webhooks' address guard: callbacks reach no private or internal address.
    pub policy: webhooks::guard::Policy,
    /// One callback attempt, answer included.
    pub timeout: Duration,
}

/// Cheap to clone.
#[derive(Clone)]
pub struct AutomationService {
    pub(crate) pool: store::Pool,
    pub(crate) clock: Clock,
    pub(crate) keyring: store::secrets::Keyring,
    pub(crate) config: AutomationsConfig,
    pub(crate) client: reqwest::Client,
    /// The event names of the webhooks' catalogue: subscriptions and discovery name them as
    /// live.
    pub(crate) live: Arc<Vec<String>>,
    /// The domain services operations' steps act through (see [`AutomationService::with_steps`]).
    pub(crate) steps: Option<crate::operations::Steps>,
}

impl AutomationService {
    pub fn new(
        pool: store::Pool,
        clock: Clock,
        keyring: store::secrets::Keyring,
        config: AutomationsConfig,
    ) -> Result<Self, Error> {
        let live = webhooks::catalogue::GROUPS.iter().flat_map(|g| g.events).map(|e| e.name.to_owned()).collect();
        let client = webhooks::guard::client(config.policy, config.timeout).map_err(Error::internal)?;
        Ok(Self { pool, clock, keyring, config, client, live: Arc::new(live), steps: None })
    }

    /// Events other domains emit for automations only, not webhooks (agent runs' `run.*`):
    /// subscriptions may follow them and discovery names them live.
    pub fn with_events(mut self, names: &[&str]) -> Self {
        let mut live = self.live.as_ref().clone();
        live.extend(names.iter().map(|name| (*name).to_owned()));
        self.live = Arc::new(live);
        self
    }

    /// Named operations run their steps through these services.
    pub fn with_steps(mut self, steps: crate::operations::Steps) -> Self {
        self.steps = Some(steps);
        self
    }

    pub(crate) fn steps(&self) -> Result<&crate::operations::Steps, Error> {
        self.steps.as_ref().ok_or_else(|| Error::internal("operations need AutomationService::with_steps"))
    }

    pub(crate) async fn conn(&self, tenant: TenantId) -> Result<store::PooledConn, Error> {
        store::connect(&self.pool, tenant).await
    }

    /// Automation reads (contract: Authentication 3 and 4): `automations.view`, from a key whose
    /// issuer is known and active.
    pub(crate) fn may_read(caller: &Caller) -> Result<(), Error> {
        caller.require_issuer()?;
        caller.require(Permission::AUTOMATIONS_VIEW)
    }

    pub fn register_jobs(self: &Arc<Self>, registry: &mut store::jobs::Registry) {
        registry.register::<crate::deliver::Deliver>(self.clone());
        registry.register::<crate::schedules::FireSchedule>(self.clone());
        registry.register::<crate::operations::run::RecoverRun>(self.clone());
        registry.register::<crate::operations::run::RunScheduled>(self.clone());
    }
}
