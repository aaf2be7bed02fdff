//! `POST /leads/{lead}/stage` (contract: Lead stage): any stage, including reopening a closed
//! lead; `lost` and `unqualified` need a reason.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, Permission};
use serde::Deserialize;
use serde_json::{Map, json};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::lead::{self, Lead, closes, is_stage, needs_reason};
use crate::schema::leads;
use crate::service::LeadService;
use crate::timeline::{self, Activity, LeadEvent};

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct StageChange {
    pub stage: Option<String>,
    /// Required with `lost` and `unqualified`; kept as `lost_reason`.
    pub reason: Option<String>,
}

impl LeadService {
    pub async fn set_stage(&self, caller: &Caller, id: Uuid, input: StageChange) -> Result<Lead, Error> {
        let mut conn = self.conn().await?;
        let actor = self.access(&mut conn, caller, Permission::LEADS_EDIT).await?;
        let stage = input.stage.as_deref().map(|s| s.trim().to_ascii_lowercase()).unwrap_or_default();
        if !is_stage(&stage) {
            return Err(Error::field(
                "stage",
                "The stage must be one of new, contacted, qualified, opportunity, won, lost, unqualified.",
            )
            .with_reason("invalid"));
        }
        let reason = input.reason.as_deref().map(str::trim).filter(|r| !r.is_empty()).map(str::to_owned);
        if needs_reason(&stage) && reason.is_none() {
            return Err(Error::field("reason", format!("A reason is required to mark a lead {stage}."))
                .with_reason("reason_required"));
        }
        let tenant = caller.tenant_id;
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let row = lead::locked(conn, tenant, id, &actor).await?;
            // the same stage again with a new reason keeps the new reason
            if row.stage == stage && needs_reason(&stage) && reason.is_some() && row.lost_reason != reason {
                diesel::update(leads::table.filter(leads::id.eq(id)))
                    .set((leads::lost_reason.eq(&reason), leads::updated_at.eq(now)))
                    .execute(conn)
                    .await?;
            }
            if row.stage != stage {
                let closed_at = if closes(&stage) { row.closed_at.or(Some(now)) } else { None };
                let lost_reason = if needs_reason(&stage) { reason.clone() } else { None };
                diesel::update(leads::table.filter(leads::id.eq(id)))
                    .set((
                        leads::stage.eq(&stage),
                        leads::closed_at.eq(closed_at),
                        leads::lost_reason.eq(lost_reason),
                        leads::updated_at.eq(now),
                        leads::last_activity_at.eq(now),
                    ))
                    .execute(conn)
                    .await?;
                let moved = lead::row(conn, tenant, id).await?;
                let lead = lead::views(conn, vec![moved], &self.public_url, now)
                    .await?
                    .pop()
                    .ok_or_else(|| Error::not_found("Lead"))?;
                let changes = Map::from_iter([("stage".to_owned(), json!({ "from": row.stage, "to": stage }))]);
                let activity = Activity {
                    kind: "stage_changed",
                    details: serde_json::Value::Object(changes.clone()),
                    reason: reason.as_deref(),
                };
                timeline::record(conn, tenant, id, &actor, &[activity], now).await?;
                let event = LeadEvent {
                    name: "lead.stage_changed",
                    lead: &lead,
                    changes: Some(&changes),
                    reason: reason.as_deref(),
                    extra: Map::new(),
                };
                timeline::emit(conn, tenant, &actor, event, now).await?;
            }
            let row = lead::row(conn, tenant, id).await?;
            lead::full(conn, row, &self.public_url, now).await
        })
        .await
    }
}
