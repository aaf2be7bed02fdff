//! The messaging service: what REST, jobs, provider callbacks and the admin CLI all call.

use std::sync::Arc;
use std::time::Duration;

use kernel::{Clock, Error, TenantId};

use crate::gateways::Gateways;

/// Tunables, from the environment in the gateway (docs/operations.md).
#[derive(Debug, Clone)]
pub struct MessagingConfig {
    /// Price of one segment when the tenant's rate card has no matching row.
    pub default_price_minor: i64,
    /// Sends with at most this many recipients are tried inline, before the answer.
    pub inline_max: usize,
    /// How long the answer waits for an inline send before leaving it to the queue.
    pub inline_timeout: Duration,
    /// A `sent` message without a receipt after this long moves to `checking_delivery`.
    pub receipt_wait: Duration,
    /// Contacts written per campaign dispatch job.
    pub campaign_batch: i64,
    /// Messages per send job.
    pub send_chunk: usize,
    /// Provider calls in flight per send job.
    pub send_concurrency: usize,
    /// How often a paused campaign checks whether the wallet can pay for its next batch.
    pub paused_recheck: Duration,
    /// A message left in `processing` this long is in doubt whoever holds it (a sender that
    /// died mid-call, or one that could not record the answer): failed as "outcome unknown".
    pub stale_after: Duration,
    /// This process's id in `workers`, when it keeps a heartbeat there (`gateway serve` and
    /// `gateway worker`): the messages it claims are marked with it, and are in doubt as soon
    /// as that heartbeat has been missing for `dead_after`, without waiting for `stale_after`.
    pub process: Option<uuid::Uuid>,
    /// How long a heartbeat may be missing before its process counts as dead (the job lease).
    pub dead_after: Duration,
    /// Inbound keywords that put the sender on the blacklist, and that take it off.
    pub opt_out_keywords: Vec<String>,
    pub opt_in_keywords: Vec<String>,
    /// How chat messages are charged, and the price (docs/api.md, "Chat billing").
    pub chat_billing: crate::chat::send::ChatBilling,
    pub chat_price_minor: i64,
    /// Price of one started minute of a call when the tenant's voice rates have no match.
    pub voice_price_minor: i64,
}

impl Default for MessagingConfig {
    fn default() -> Self {
        Self {
            default_price_minor: 2_000,
            inline_max: 5,
            inline_timeout: Duration::from_secs(3),
            receipt_wait: Duration::from_secs(3600),
            campaign_batch: 1_000,
            send_chunk: 500,
            send_concurrency: 32,
            paused_recheck: Duration::from_secs(60),
            stale_after: Duration::from_secs(300),
            process: None,
            dead_after: Duration::from_secs(30),
            // Twilio's standard opt-out and opt-in words.
            opt_out_keywords: ["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"].map(String::from).to_vec(),
            opt_in_keywords: ["START", "UNSTOP", "YES"].map(String::from).to_vec(),
            chat_billing: crate::chat::send::ChatBilling::PerMessage,
            chat_price_minor: 1_000,
            voice_price_minor: 5_000,
        }
    }
}

impl MessagingConfig {
    /// When the queued fallback of an inline send looks at its messages: once a dead sender
    /// would be noticed (with a heartbeat), else once its messages would count as stale.
    pub(crate) fn fallback_after(&self) -> Duration {
        match self.process {
            Some(_) => self.dead_after.min(self.stale_after),
            None => self.stale_after,
        }
    }
}

/// The tenant of a job of this crate: its payload's. A payload queued before payloads carried
/// their tenant reads as tenant 0 ([`no_tenant`]); the job row's tenant, which every messaging
/// job is enqueued with, stands in for it.
pub(crate) fn job_tenant(payload: TenantId, ctx: &store::jobs::JobContext) -> Result<TenantId, store::jobs::JobError> {
    match (payload, ctx.tenant_id) {
        (TenantId(id), _) if id > 0 => Ok(payload),
        (_, Some(tenant)) => Ok(tenant),
        (_, None) => Err(store::jobs::JobError("a messaging job without a tenant".to_owned())),
    }
}

pub(crate) fn no_tenant() -> TenantId {
    TenantId(0)
}

/// Cheap to clone: everything inside is shared.
#[derive(Clone)]
pub struct MessagingService {
    pub(crate) pool: store::Pool,
    pub(crate) clock: Clock,
    pub(crate) gateways: Gateways,
    pub(crate) config: Arc<MessagingConfig>,
    /// Who takes the orders customers place from the chat catalogue (commerce).
    pub(crate) chat_orders: Option<Arc<dyn crate::chat::orders::ChatOrders>>,
    /// Where form answers are saved as data-table rows (the data tables).
    pub(crate) form_records: Option<Arc<dyn crate::chat::forms::answers::FormRecords>>,
}

impl MessagingService {
    pub fn new(pool: store::Pool, clock: Clock, gateways: Gateways, config: MessagingConfig) -> Self {
        Self { pool, clock, gateways, config: Arc::new(config), chat_orders: None, form_records: None }
    }

    pub fn gateways(&self) -> &Gateways {
        &self.gateways
    }

    /// Re-seals every channel's provider credentials under the current key
    /// (`gateway admin secrets rotate`): answers how many changed.
    pub async fn reseal(&self) -> Result<u64, kernel::Error> {
        crate::credentials::reseal(&self.pool, self.gateways.keyring()).await
    }

    pub fn config(&self) -> &MessagingConfig {
        &self.config
    }

    /// A connection that sees `tenant`'s rows only (row-level security).
    pub(crate) async fn conn(&self, tenant: kernel::TenantId) -> Result<store::PooledConn, Error> {
        store::connect(&self.pool, tenant).await
    }

    /// A connection for the global tables only (channels, by their callback token).
    pub(crate) async fn global_conn(&self) -> Result<store::PooledConn, Error> {
        store::connect_global(&self.pool).await
    }

    /// Every job handler of this crate, for the worker's registry.
    pub fn register_jobs(self: &Arc<Self>, registry: &mut store::jobs::Registry) {
        registry
            .register::<crate::dispatch::SendMessages>(self.clone())
            .register::<crate::receipts::ApplyReceipts>(self.clone())
            .register::<crate::receipts::CheckDelivery>(self.clone())
            .register::<crate::campaigns::DispatchCampaign>(self.clone())
            .register::<crate::chat::templates::SubmitTemplate>(self.clone())
            .register::<crate::chat::templates::PollTemplate>(self.clone())
            .register::<crate::chat::orders::TakeChatOrder>(self.clone())
            .register::<crate::chat::groups::ConfirmGroup>(self.clone())
            .register::<crate::chat::forms::publish::RetireVersion>(self.clone())
            .register::<crate::chat::groups::updates::SendInvites>(self.clone())
            .register::<crate::voice::place::PlaceCalls>(self.clone())
            .register::<crate::voice::player::PlayCall>(self.clone())
            .register::<crate::voice::campaigns::DispatchCallCampaign>(self.clone());
    }
}

#[cfg(test)]
mod tests {
    use kernel::TenantId;
    use serde_json::json;

    use crate::campaigns::DispatchCampaign;
    use crate::dispatch::SendMessages;
    use crate::receipts::{ApplyReceipts, CheckDelivery};

    #[test]
    fn job_payloads_carry_their_tenant() {
        let job = SendMessages { tenant_id: TenantId(7), ids: vec![1, 2] };
        assert_eq!(serde_json::to_value(&job).ok(), Some(json!({"tenant_id": 7, "ids": [1, 2]})));
    }

    #[test]
    fn payloads_queued_before_they_carried_a_tenant_still_read() {
        let send: SendMessages = serde_json::from_value(json!({"ids": [1]})).expect("send");
        assert_eq!(send.tenant_id, TenantId(0));
        let check: CheckDelivery = serde_json::from_value(json!({"ids": [1]})).expect("check");
        assert_eq!(check.tenant_id, TenantId(0));
        let receipts: ApplyReceipts =
            serde_json::from_value(json!({"channel_id": 3, "receipts": []})).expect("receipts");
        assert_eq!(receipts.tenant_id, TenantId(0));
        let token = uuid::Uuid::nil();
        let campaign: DispatchCampaign =
            serde_json::from_value(json!({"campaign_id": 4, "token": token})).expect("campaign");
        assert_eq!((campaign.tenant_id, campaign.campaign_id.0), (TenantId(0), 4));
    }
}
