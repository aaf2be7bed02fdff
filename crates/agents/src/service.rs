//! The agents service and what it is configured with.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use kernel::{Caller, Clock, Error, TenantId};
use providers::{ModelGateway, TokenUsage};

use crate::toolbox::Toolbox;

/// What steps cost, in minor units of the tenant's wallet currency (as SMS segments are
/// priced): tokens per million, and each tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateCard {
    pub input_per_million_minor: i64,
    pub output_per_million_minor: i64,
    pub tool_call_minor: i64,
}

impl Default for RateCard {
    fn default() -> Self {
        Self { input_per_million_minor: 20_000, output_per_million_minor: 80_000, tool_call_minor: 1 }
    }
}

impl RateCard {
    /// A model turn's price, rounded up to a whole minor unit.
    pub fn turn(&self, usage: TokenUsage) -> i64 {
        let cost = i128::from(usage.input_tokens.max(0)) * i128::from(self.input_per_million_minor)
            + i128::from(usage.output_tokens.max(0)) * i128::from(self.output_per_million_minor);
        i64::try_from((cost + 999_999) / 1_000_000).unwrap_or(i64::MAX)
    }
}

#[derive(Debug, Clone)]
pub struct AgentsConfig {
    pub rates: RateCard,
    /// A prepaid wallet below this cannot start a run (402).
    pub minimum_balance_minor: i64,
    /// How long a `sync` submission waits for its run to end before answering it as it stands.
    pub sync_wait: Duration,
    /// How long a run waits for a person's approval before it ends `expired`.
    pub approval_ttl: time::Duration,
}

impl Default for AgentsConfig {
    fn default() -> Self {
        Self {
            rates: RateCard::default(),
            minimum_balance_minor: 100,
            sync_wait: Duration::from_secs(30),
            approval_ttl: time::Duration::hours(24),
        }
    }
}

/// Cheap to clone.
#[derive(Clone)]
pub struct AgentService {
    pub(crate) pool: store::Pool,
    pub(crate) clock: Clock,
    pub(crate) models: Arc<dyn ModelGateway>,
    pub(crate) config: AgentsConfig,
    /// Set once by [`AgentService::use_tools`]: the toolbox (the MCP catalogue) is built over
    /// the services, this one included, so it is held weakly to make no cycle.
    toolbox: Arc<OnceLock<Weak<dyn Toolbox>>>,
}

impl AgentService {
    pub fn new(pool: store::Pool, clock: Clock, models: Arc<dyn ModelGateway>, config: AgentsConfig) -> Self {
        Self { pool, clock, models, config, toolbox: Arc::new(OnceLock::new()) }
    }

    /// Runs call the tools of `toolbox` (kept while its owner keeps it).
    pub fn use_tools(&self, toolbox: &Arc<dyn Toolbox>) {
        let _ = self.toolbox.set(Arc::downgrade(toolbox));
    }

    pub(crate) fn toolbox(&self) -> Result<Arc<dyn Toolbox>, Error> {
        self.toolbox
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| Error::internal("agent runs need AgentService::use_tools"))
    }

    pub(crate) async fn conn(&self, tenant: TenantId) -> Result<store::PooledConn, Error> {
        store::connect(&self.pool, tenant).await
    }

    /// Agent tasks are the caller's own work with its issuer's tools: a key with a known,
    /// active issuer. What each tool call may do is its issuer's permissions, checked per call.
    pub(crate) fn may_run(caller: &Caller) -> Result<(), Error> {
        caller.require_issuer().map(drop)
    }

    pub fn register_jobs(self: &Arc<Self>, registry: &mut store::jobs::Registry) {
        registry.register::<crate::advance::Advance>(self.clone());
        registry.register::<crate::advance::Expire>(self.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_is_priced_per_million_tokens_rounded_up() {
        let rates = RateCard { input_per_million_minor: 20_000, output_per_million_minor: 80_000, tool_call_minor: 1 };
        assert_eq!(rates.turn(TokenUsage { input_tokens: 1_000, output_tokens: 100 }), 28);
        assert_eq!(rates.turn(TokenUsage { input_tokens: 1, output_tokens: 0 }), 1);
        assert_eq!(rates.turn(TokenUsage::default()), 0);
        // no overflow: a price past what a wallet can hold is the most it can hold
        let dear = RateCard { input_per_million_minor: i64::MAX, ..rates };
        assert_eq!(dear.turn(TokenUsage { input_tokens: i64::MAX, output_tokens: i64::MAX }), i64::MAX);
    }
}
