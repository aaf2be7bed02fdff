//! Burst folding (contract: Events): updates to one lead within about five seconds become one
//! `lead.updated`, whose `changes` hold each field's first `from` and last `to`. The first update
//! of a burst parks its changes and queues a job due five seconds later; later ones merge in;
//! the job sends the event with the lead as it is then.

use std::sync::Arc;

use crate::LeadId;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Error, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::OffsetDateTime;

use crate::lead;
use crate::schema::lead_pending_updates;
use crate::service::{Actor, LeadService};

/// How long a burst stays open after its first update.
pub const WINDOW: time::Duration = time::Duration::seconds(5);

/// Parks `changes` for the lead's next `lead.updated`, in the change's transaction.
pub(crate) async fn park(
    conn: &mut store::Conn,
    tenant: TenantId,
    lead: LeadId,
    actor: &Actor,
    changes: &Map<String, Value>,
    now: OffsetDateTime,
) -> Result<(), Error> {
    let pending: Option<Value> = lead_pending_updates::table
        .filter(lead_pending_updates::tenant_id.eq(tenant.0))
        .filter(lead_pending_updates::lead_id.eq(lead))
        .select(lead_pending_updates::changes)
        .for_update()
        .first(conn)
        .await
        .optional()?;
    match pending {
        Some(Value::Object(mut folded)) => {
            for (field, change) in changes {
                match folded.get_mut(field) {
                    // the burst's first `from` stays; the latest `to` wins
                    Some(Value::Object(kept)) => {
                        kept.insert("to".into(), change.get("to").cloned().unwrap_or(Value::Null));
                    }
                    _ => {
                        folded.insert(field.clone(), change.clone());
                    }
                }
            }
            diesel::update(
                lead_pending_updates::table
                    .filter(lead_pending_updates::tenant_id.eq(tenant.0))
                    .filter(lead_pending_updates::lead_id.eq(lead)),
            )
            .set((
                lead_pending_updates::changes.eq(Value::Object(folded)),
                lead_pending_updates::actor.eq(actor.json()),
            ))
            .execute(conn)
            .await?;
        }
        _ => {
            diesel::insert_into(lead_pending_updates::table)
                .values((
                    lead_pending_updates::lead_id.eq(lead),
                    lead_pending_updates::tenant_id.eq(tenant.0),
                    lead_pending_updates::changes.eq(Value::Object(changes.clone())),
                    lead_pending_updates::actor.eq(actor.json()),
                    lead_pending_updates::first_at.eq(now),
                ))
                .on_conflict((lead_pending_updates::lead_id, lead_pending_updates::tenant_id))
                .do_update()
                .set(lead_pending_updates::changes.eq(Value::Object(changes.clone())))
                .execute(conn)
                .await?;
            let options = Enqueue {
                tenant_id: Some(tenant),
                dedupe_key: Some(lead.to_string()),
                run_at: Some(now + WINDOW),
                ..Enqueue::default()
            };
            store::jobs::enqueue(conn, &FlushUpdate { lead }, options).await?;
        }
    }
    Ok(())
}

/// Sends a lead's folded `lead.updated`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FlushUpdate {
    pub lead: LeadId,
}

impl Job for FlushUpdate {
    const NAME: &'static str = "leads.flush_update";
    type State = LeadService;

    async fn run(self, service: Arc<LeadService>, ctx: JobContext) -> Result<(), JobError> {
        let mut conn = store::connect(&ctx.pool, ctx.tenant()?).await?;
        let now = ctx.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let parked: Option<(i64, Value, Value)> = diesel::delete(lead_pending_updates::table.find(self.lead))
                .returning((
                    lead_pending_updates::tenant_id,
                    lead_pending_updates::changes,
                    lead_pending_updates::actor,
                ))
                .get_result(conn)
                .await
                .optional()?;
            // gone with its lead, or already sent
            let Some((tenant, Value::Object(changes), actor)) = parked else { return Ok(()) };
            // a field changed and changed back within the burst did not change
            let changes: Map<String, Value> =
                changes.into_iter().filter(|(_, c)| c.get("from") != c.get("to")).collect();
            if changes.is_empty() {
                return Ok(());
            }
            let tenant = TenantId(tenant);
            let row = lead::row(conn, tenant, self.lead).await?;
            let lead = lead::views(conn, vec![row], &service.public_url, now)
                .await?
                .pop()
                .ok_or_else(|| Error::not_found("Lead"))?;
            let payload = json!({
                "lead": lead,
                "changes": changes,
                "reason": null,
                "actor": actor,
                "source": { "kind": "api", "id": null, "channel": lead.source_channel },
            });
            store::outbox::emit(conn, tenant, "lead.updated", payload, now).await?;
            Ok(())
        })
        .await?;
        Ok(())
    }
}

impl LeadService {
    pub fn register_jobs(self: &Arc<Self>, registry: &mut store::jobs::Registry) {
        registry.register::<FlushUpdate>(self.clone());
    }
}
