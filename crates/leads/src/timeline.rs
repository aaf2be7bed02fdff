//! The timeline and the events: every change is an activity row (with actor and source) and,
//! where the catalogue has one, a lead event in the outbox, in the change's transaction.

use crate::LeadId;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{Error, TenantId};
use serde_json::{Map, Value, json};
use store::Prepare;
use time::OffsetDateTime;

use crate::lead::Lead;
use crate::schema::lead_activities;
use crate::service::Actor;

/// One entry of the timeline.
pub(crate) struct Activity<'a> {
    /// created, updated, stage_changed, label_added, label_removed, note_added, assigned
    pub kind: &'static str,
    pub details: Value,
    pub reason: Option<&'a str>,
}

pub(crate) async fn record(
    conn: &mut store::Conn,
    tenant: TenantId,
    lead: LeadId,
    actor: &Actor,
    activities: &[Activity<'_>],
    now: OffsetDateTime,
) -> Result<(), Error> {
    let rows: Vec<_> = activities
        .iter()
        .map(|a| {
            (
                lead_activities::tenant_id.eq(tenant.0),
                lead_activities::lead_id.eq(lead),
                lead_activities::kind.eq(a.kind),
                lead_activities::details.eq(a.details.clone()),
                lead_activities::reason.eq(a.reason),
                lead_activities::actor_kind.eq("api"),
                lead_activities::actor_id.eq(actor.user.map(|u| u.0)),
                lead_activities::source_kind.eq("api"),
                lead_activities::source_id.eq(None::<String>),
                lead_activities::created_at.eq(now),
            )
        })
        .collect();
    if !rows.is_empty() {
        // one row or a few: kept prepared (a multi-row insert is not, by default)
        diesel::insert_into(lead_activities::table).values(rows).prepared().execute(conn).await?;
    }
    Ok(())
}

/// A lead event: the contract's `{lead, changes, reason, actor, source}` plus `extra` fields
/// (`label`, `note`); `changes` only where the contract has it.
pub(crate) struct LeadEvent<'a> {
    pub name: &'static str,
    pub lead: &'a Lead,
    pub changes: Option<&'a Map<String, Value>>,
    pub reason: Option<&'a str>,
    pub extra: Map<String, Value>,
}

pub(crate) async fn emit(
    conn: &mut store::Conn,
    tenant: TenantId,
    actor: &Actor,
    event: LeadEvent<'_>,
    now: OffsetDateTime,
) -> Result<(), Error> {
    let name = event.name;
    store::outbox::emit(conn, tenant, name, payload(actor, event)?, now).await?;
    Ok(())
}

/// The event's payload, as delivered (and as the catalogue's samples show it).
pub(crate) fn payload(actor: &Actor, event: LeadEvent<'_>) -> Result<Value, Error> {
    let mut payload = Map::new();
    payload.insert("lead".into(), serde_json::to_value(event.lead).map_err(Error::internal)?);
    if let Some(changes) = event.changes {
        payload.insert("changes".into(), Value::Object(changes.clone()));
    }
    payload.insert("reason".into(), event.reason.map_or(Value::Null, |r| Value::String(r.to_owned())));
    payload.insert("actor".into(), actor.json());
    payload.insert("source".into(), json!({ "kind": "api", "id": null, "channel": event.lead.source_channel }));
    payload.extend(event.extra);
    Ok(Value::Object(payload))
}
