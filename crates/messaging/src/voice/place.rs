//! The job that asks the provider for queued calls. A call is claimed (`initiated`, committed)
//! before its request leaves, so it is never asked for twice: a later run of the job that finds
//! a claimed call with no provider id fails it as "outcome unknown" rather than calling again.

use std::collections::HashMap;
use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use futures_util::StreamExt;
use kernel::{Error, TenantId};
use providers::{OutboundCall, PlaceOutcome, SendError, VoiceGateway};
use serde::{Deserialize, Serialize};
use store::jobs::{Job, JobContext, JobError};

use super::CallRecord;
use super::callbacks::fail;
use super::player::PlayCall;
use crate::MessagingService;
use crate::schema::calls;
use crate::service::{job_tenant, no_tenant};

/// Why a claimed call is failed when its placing's outcome is unknown.
pub const OUTCOME_UNKNOWN: &str =
    "The call request's outcome is unknown (the process placing it stopped); it is not retried.";

/// Places queued calls (those due: a scheduled call's job runs at its time).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlaceCalls {
    #[serde(default = "no_tenant")]
    pub tenant_id: TenantId,
    pub ids: Vec<i64>,
}

impl Job for PlaceCalls {
    const NAME: &'static str = "voice.place_calls";
    type State = MessagingService;

    async fn run(self, service: Arc<MessagingService>, ctx: JobContext) -> Result<(), JobError> {
        let tenant = job_tenant(self.tenant_id, &ctx)?;
        service.place_calls(tenant, &self.ids).await.map_err(JobError::from)
    }
}

impl MessagingService {
    pub(crate) async fn place_calls(&self, tenant: TenantId, ids: &[i64]) -> Result<(), Error> {
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        let in_doubt: Vec<CallRecord> = calls::table
            .filter(calls::tenant_id.eq(tenant.0))
            .filter(calls::id.eq_any(ids))
            .filter(calls::status.eq("initiated"))
            .filter(calls::provider_call_id.is_null())
            .select(CallRecord::as_select())
            .load(&mut conn)
            .await?;
        for call in in_doubt {
            conn.transaction(async |conn| fail(conn, call, OUTCOME_UNKNOWN, now).await).await?;
        }
        let queued: Vec<CallRecord> = calls::table
            .filter(calls::tenant_id.eq(tenant.0))
            .filter(calls::id.eq_any(ids))
            .filter(calls::status.eq("queued"))
            .order(calls::id)
            .select(CallRecord::as_select())
            .load(&mut conn)
            .await?;
        drop(conn);
        let mut providers: HashMap<i64, Arc<dyn VoiceGateway>> = HashMap::new();
        for call in &queued {
            if let std::collections::hash_map::Entry::Vacant(entry) = providers.entry(call.channel_id) {
                let mut conn = self.conn(tenant).await?;
                let channel = crate::channels::get(&mut conn, tenant, call.channel_id).await?;
                entry.insert(self.gateways.voice(&channel)?);
            }
        }
        let providers = &providers;
        let results: Vec<Result<(), Error>> = futures_util::stream::iter(queued)
            .map(|call| async move {
                // claimed one by one, just before its request: a process that dies leaves in
                // doubt only the calls it was asking for, not the rest of the job
                let Some(call) = self.claim(tenant, call.id).await? else { return Ok(()) };
                let provider = &providers[&call.channel_id];
                let request = OutboundCall { reference: &call.uid, to: &call.recipient, from: call.caller.as_deref() };
                let outcome = provider.place(request).await;
                self.placed(tenant, call, outcome).await
            })
            .buffer_unordered(self.config.send_concurrency.max(1))
            .collect()
            .await;
        results.into_iter().collect()
    }

    /// Marks a queued call `initiated` (committed) before its request leaves; `None` when it is
    /// queued no more (cancelled, or claimed by another run).
    async fn claim(&self, tenant: TenantId, id: i64) -> Result<Option<CallRecord>, Error> {
        let mut conn = self.conn(tenant).await?;
        Ok(diesel::update(
            calls::table.find(id).filter(calls::tenant_id.eq(tenant.0)).filter(calls::status.eq("queued")),
        )
        .set((calls::status.eq("initiated"), calls::updated_at.eq(self.clock.now())))
        .returning(CallRecord::as_returning())
        .get_result(&mut conn)
        .await
        .optional()?)
    }

    /// Records the provider's answer to one call request.
    async fn placed(
        &self,
        tenant: TenantId,
        call: CallRecord,
        outcome: Result<PlaceOutcome, SendError>,
    ) -> Result<(), Error> {
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        match outcome {
            Ok(PlaceOutcome::Placed { provider_call_id, script }) => {
                conn.transaction(async move |conn| {
                    {
                        // a callback that raced this answer may have set it already
                        diesel::update(calls::table.find(call.id).filter(calls::provider_call_id.is_null()))
                            .set((calls::provider_call_id.eq(&provider_call_id), calls::updated_at.eq(now)))
                            .execute(conn)
                            .await?;
                        if let Some(script) = script {
                            let run_at = now + script.after;
                            let job = PlayCall { tenant_id: tenant, call_id: call.id, provider_call_id, script };
                            let options = store::jobs::Enqueue {
                                tenant_id: Some(tenant),
                                run_at: Some(run_at),
                                ..Default::default()
                            };
                            store::jobs::enqueue(conn, &job, options).await?;
                        }
                        Ok(())
                    }
                })
                .await
            }
            Ok(PlaceOutcome::Refused { reason }) => {
                let reason = format!("Refused by the provider: {reason}");
                conn.transaction(async move |conn| fail(conn, call, &reason, now).await.map(drop)).await
            }
            Err(error) => {
                tracing::warn!(call = call.id, %error, "a call request failed");
                let reason = match error {
                    SendError::Timeout => OUTCOME_UNKNOWN.to_owned(),
                    other => format!("The provider could not take the call: {other}"),
                };
                conn.transaction(async move |conn| fail(conn, call, &reason, now).await.map(drop)).await
            }
        }
    }
}
