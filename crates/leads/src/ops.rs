//! The operations on one lead (contract: Leads): `PATCH` (null clears), notes, assignment,
//! deletion, and the timeline read.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::error::FieldErrors;
use kernel::page::{Timeline, TimelineQuery};
use kernel::{Caller, Error, Permission, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::identity::normalize_email;
use crate::lead::{self, Lead, closes, is_stage, needs_reason};
use crate::schema::{lead_activities, lead_identities, leads};
use crate::service::LeadService;
use crate::timeline::{self, Activity, LeadEvent};

/// `PATCH /leads/{lead}` (for the documentation; the service reads the object itself so null can
/// clear).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct LeadPatch {
    pub name: Option<String>,
    pub title: Option<String>,
    pub company: Option<String>,
    pub phone: Option<String>,
    pub email: Option<String>,
    pub location: Option<String>,
    pub interest: Option<String>,
    pub estimated_value: Option<f64>,
    pub currency: Option<String>,
    pub score: Option<i32>,
    pub score_reason: Option<String>,
    pub summary: Option<String>,
    pub source_channel: Option<String>,
    pub source_detail: Option<String>,
    pub next_action: Option<String>,
    pub next_action_at: Option<String>,
    /// Archives (`archived_at` set) or restores the lead.
    pub archived: Option<bool>,
    /// As the stage operation; a won lead answers `won_locked` here.
    pub stage: Option<String>,
    pub reason: Option<String>,
    /// Merged; a key sent as null is removed.
    #[schema(value_type = Option<Object>)]
    pub custom_fields: Option<Value>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct NewNote {
    pub body: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Note {
    pub id: Uuid,
    pub body: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct Assignment {
    /// A user of the workspace, or null for the pool.
    pub user_id: Option<i64>,
}

/// One entry of the timeline.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ActivityView {
    pub id: i64,
    /// created, updated, stage_changed, label_added, label_removed, note_added, assigned
    pub kind: String,
    #[schema(value_type = Object)]
    pub details: Value,
    pub reason: Option<String>,
    #[schema(value_type = Object)]
    pub actor: Value,
    #[schema(value_type = Object)]
    pub source: Value,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Activities {
    pub items: Vec<ActivityView>,
    /// Pass as `before` for the next (older) page; null at the end.
    pub next_before: Option<i64>,
}

fn invalid(errors: FieldErrors) -> Error {
    Error::fields(errors.into_map()).with_reason("invalid")
}

impl LeadService {
    async fn view_of(
        &self,
        conn: &mut store::Conn,
        tenant: TenantId,
        id: Uuid,
        now: OffsetDateTime,
    ) -> Result<Lead, Error> {
        let row = lead::row(conn, tenant, id).await?;
        lead::views(conn, vec![row], &self.public_url, now).await?.pop().ok_or_else(|| Error::not_found("Lead"))
    }

    /// `PATCH /leads/{lead}`: sets what is sent, clears what is sent as null.
    pub async fn update(&self, caller: &Caller, id: Uuid, body: Value) -> Result<Lead, Error> {
        let mut conn = self.conn().await?;
        let actor = self.access(&mut conn, caller, Permission::LEADS_EDIT).await?;
        let Value::Object(body) = body else {
            return Err(Error::field("body", "The body must be a JSON object.").with_reason("invalid"));
        };
        let workspace = accounts::tenants::get(&mut conn, caller.tenant_id).await?;
        let tenant = caller.tenant_id;
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let row = lead::locked(conn, tenant, id, &actor).await?;
            let mut errors = FieldErrors::new();
            let mut changes = Map::new();
            let mut set: Map<String, Value> = Map::new();
            let mut stage: Option<String> = None;
            let mut reason: Option<String> = None;
            let current =
                serde_json::to_value(lead::views(conn, vec![row.clone()], &self.public_url, now).await?.pop())
                    .map_err(Error::internal)?;
            for (key, value) in body {
                if let Some((_, max)) = lead::TEXT_FIELDS.iter().find(|(f, _)| *f == key) {
                    match value {
                        Value::Null => {
                            set.insert(key, Value::Null);
                        }
                        Value::String(s) if s.trim().is_empty() => {
                            set.insert(key, Value::Null);
                        }
                        Value::String(s) if s.trim().chars().count() <= *max => {
                            set.insert(key, Value::String(s.trim().to_owned()));
                        }
                        Value::String(_) => {
                            errors.add(key.as_str(), format!("The {key} may not be longer than {max} characters."))
                        }
                        _ => errors.add(key.as_str(), format!("The {key} must be a string or null.")),
                    }
                    continue;
                }
                match key.as_str() {
                    "phone" => match value.as_str().map(str::trim) {
                        None if value.is_null() => {
                            set.insert(key, Value::Null);
                        }
                        Some("") => {
                            set.insert(key, Value::Null);
                        }
                        Some(raw) => match kernel::phone::normalize(raw, &caller.calling_code) {
                            Some(e164) => {
                                set.insert(key, Value::String(e164));
                            }
                            None => errors.add("phone", "The phone is not a valid number."),
                        },
                        None => errors.add("phone", "The phone must be a string or null."),
                    },
                    "email" => match value.as_str().map(str::trim) {
                        None if value.is_null() => {
                            set.insert(key, Value::Null);
                        }
                        Some("") => {
                            set.insert(key, Value::Null);
                        }
                        Some(raw) => match normalize_email(raw) {
                            Some(email) => {
                                set.insert(key, Value::String(email));
                            }
                            None => errors.add("email", "The email is not a valid address."),
                        },
                        None => errors.add("email", "The email must be a string or null."),
                    },
                    "estimated_value" => match &value {
                        Value::Null => {
                            set.insert(key, Value::Null);
                        }
                        Value::Number(n) if n.as_f64().is_some_and(|v| v.is_finite() && (0.0..1e15).contains(&v)) => {
                            // as the record shows it: hundredths, as a number in main units
                            let cents = n.as_f64().map_or(0, |v| (v * 100.0).round() as i64);
                            set.insert(key, json!(lead::main_units(cents)));
                        }
                        _ => errors
                            .add("estimated_value", "The estimated_value must be a number of at least 0, or null."),
                    },
                    "currency" => match value.as_str().map(str::trim) {
                        None if value.is_null() => {
                            set.insert(key, Value::String(workspace.currency.clone()));
                        }
                        Some(c) if c.len() == 3 && c.chars().all(|ch| ch.is_ascii_alphabetic()) => {
                            set.insert(key, Value::String(c.to_ascii_uppercase()));
                        }
                        _ => errors.add("currency", "The currency must be a three-letter ISO 4217 code."),
                    },
                    "score" => match &value {
                        Value::Null => {
                            set.insert(key, Value::Null);
                        }
                        Value::Number(n) if n.as_i64().is_some_and(|s| (0..=100).contains(&s)) => {
                            set.insert(key, value.clone());
                        }
                        _ => errors.add("score", "The score must be a whole number from 0 to 100, or null."),
                    },
                    "next_action_at" => match value.as_str().map(str::trim) {
                        None if value.is_null() => {
                            set.insert(key, Value::Null);
                        }
                        Some(raw) if OffsetDateTime::parse(raw, &Rfc3339).is_ok() => {
                            // as the record shows it: UTC
                            let at = OffsetDateTime::parse(raw, &Rfc3339).map_err(Error::internal)?;
                            let utc = at.to_offset(time::UtcOffset::UTC).format(&Rfc3339).map_err(Error::internal)?;
                            set.insert(key, Value::String(utc));
                        }
                        _ => errors.add("next_action_at", "The next_action_at must be an RFC 3339 time, or null."),
                    },
                    "archived" => match value {
                        Value::Bool(archived) => {
                            set.insert(key, Value::Bool(archived));
                        }
                        _ => errors.add("archived", "The archived must be true or false."),
                    },
                    "stage" => match value.as_str().map(|s| s.trim().to_ascii_lowercase()) {
                        Some(s) if is_stage(&s) => stage = Some(s),
                        _ => errors.add(
                            "stage",
                            "The stage must be one of new, contacted, qualified, opportunity, won, lost, unqualified.",
                        ),
                    },
                    "reason" => reason = value.as_str().map(str::trim).filter(|r| !r.is_empty()).map(str::to_owned),
                    "custom_fields" => match value {
                        Value::Object(fields) => {
                            set.insert(key, Value::Object(fields));
                        }
                        _ => errors.add("custom_fields", "The custom_fields must be an object."),
                    },
                    _ => errors.add(key.as_str(), format!("{key} cannot be changed here.")),
                }
            }
            // custom values are checked against the workspace's fields; null removes a key
            if let Some(Value::Object(fields)) = set.remove("custom_fields") {
                let (removed, values): (Map<String, Value>, Map<String, Value>) =
                    fields.into_iter().partition(|(_, v)| v.is_null());
                let mut undefined = Vec::new();
                let mut kept =
                    crate::upsert::check_custom_fields(conn, tenant, values, &mut undefined, &mut errors).await?;
                for field in undefined {
                    errors.add(field.as_str(), "The workspace has no such custom field (GET /lead-fields).");
                }
                kept.extend(removed);
                set.insert("custom_fields".into(), Value::Object(kept));
            }
            if !errors.is_empty() {
                return Err(invalid(errors));
            }
            let stage_change = match stage {
                Some(to) if to != row.stage => {
                    if row.stage == "won" {
                        return Err(Error::conflict(
                            "This lead is won: change its stage through POST /leads/{lead}/stage.",
                        )
                        .with_reason("won_locked"));
                    }
                    if needs_reason(&to) && reason.is_none() {
                        return Err(Error::field("reason", format!("A reason is required to mark a lead {to}."))
                            .with_reason("reason_required"));
                    }
                    Some((row.stage.clone(), to))
                }
                _ => None,
            };
            // the changes, field by field, against the lead as the API shows it
            for (key, value) in &set {
                if key == "custom_fields" {
                    continue;
                }
                let before = current.get(key).cloned().unwrap_or(Value::Null);
                if before != *value {
                    changes.insert(key.clone(), json!({ "from": before, "to": value }));
                }
            }
            let mut custom = match &row.custom_fields {
                Value::Object(map) => map.clone(),
                _ => Map::new(),
            };
            if let Some(Value::Object(fields)) = set.get("custom_fields") {
                for (k, v) in fields {
                    let before = custom.get(k).cloned().unwrap_or(Value::Null);
                    if before != *v {
                        changes.insert(format!("custom_fields.{k}"), json!({ "from": before, "to": v }));
                    }
                    if v.is_null() {
                        custom.remove(k);
                    } else {
                        custom.insert(k.clone(), v.clone());
                    }
                }
            }
            let text = |field: &str, old: &Option<String>| match set.get(field) {
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => None,
                None => old.clone(),
            };
            let archived_at = match set.get("archived") {
                Some(Value::Bool(true)) => row.archived_at.or(Some(now)),
                Some(Value::Bool(false)) => None,
                _ => row.archived_at,
            };
            let (new_stage, closed_at, lost_reason) = match &stage_change {
                Some((_, to)) => (
                    to.clone(),
                    if closes(to) { row.closed_at.or(Some(now)) } else { None },
                    if needs_reason(to) { reason.clone() } else { None },
                ),
                None => (row.stage.clone(), row.closed_at, row.lost_reason.clone()),
            };
            let cents = match set.get("estimated_value") {
                Some(Value::Number(n)) => n.as_f64().map(|v| (v * 100.0).round() as i64),
                Some(_) => None,
                None => row.estimated_value_cents,
            };
            let score = match set.get("score") {
                Some(Value::Number(n)) => n.as_i64().map(|s| s as i32),
                Some(_) => None,
                None => row.score,
            };
            let next_action_at = match set.get("next_action_at") {
                Some(Value::String(s)) => OffsetDateTime::parse(s, &Rfc3339).ok(),
                Some(_) => None,
                None => row.next_action_at,
            };
            let touched = !changes.is_empty() || stage_change.is_some();
            diesel::update(leads::table.filter(leads::id.eq(id)))
                .set((
                    leads::name.eq(text("name", &row.name)),
                    leads::title.eq(text("title", &row.title)),
                    leads::company.eq(text("company", &row.company)),
                    leads::location.eq(text("location", &row.location)),
                    leads::interest.eq(text("interest", &row.interest)),
                    leads::summary.eq(text("summary", &row.summary)),
                    leads::score_reason.eq(text("score_reason", &row.score_reason)),
                    leads::source_channel.eq(text("source_channel", &row.source_channel)),
                    leads::source_detail.eq(text("source_detail", &row.source_detail)),
                    leads::next_action.eq(text("next_action", &row.next_action)),
                    leads::phone.eq(text("phone", &row.phone)),
                    leads::email.eq(text("email", &row.email)),
                    leads::currency.eq(text("currency", &Some(row.currency.clone())).unwrap_or(row.currency.clone())),
                    leads::estimated_value_cents.eq(cents),
                    leads::score.eq(score),
                    leads::next_action_at.eq(next_action_at),
                    leads::archived_at.eq(archived_at),
                    leads::custom_fields.eq(Value::Object(custom)),
                    leads::stage.eq(&new_stage),
                    leads::closed_at.eq(closed_at),
                    leads::lost_reason.eq(lost_reason),
                    leads::updated_at.eq(if touched { now } else { row.updated_at }),
                    leads::last_activity_at.eq(if touched { now } else { row.last_activity_at }),
                ))
                .execute(conn)
                .await?;
            // a new phone or email finds the lead too (unless another lead already has it)
            for (kind, value) in [("phone", set.get("phone")), ("email", set.get("email"))] {
                if let Some(Value::String(v)) = value {
                    diesel::insert_into(lead_identities::table)
                        .values((
                            lead_identities::tenant_id.eq(tenant.0),
                            lead_identities::kind.eq(kind),
                            lead_identities::value.eq(v.trim_start_matches('+')),
                            lead_identities::lead_id.eq(id),
                            lead_identities::created_at.eq(now),
                        ))
                        .on_conflict_do_nothing()
                        .execute(conn)
                        .await?;
                }
            }
            let lead = self.view_of(conn, tenant, id, now).await?;
            let mut activities = Vec::new();
            if !changes.is_empty() {
                activities.push(Activity { kind: "updated", details: Value::Object(changes.clone()), reason: None });
                crate::fold::park(conn, tenant, id, &actor, &changes, now).await?;
            }
            if let Some((from, to)) = &stage_change {
                let moved = Map::from_iter([("stage".to_owned(), json!({ "from": from, "to": to }))]);
                activities.push(Activity {
                    kind: "stage_changed",
                    details: Value::Object(moved.clone()),
                    reason: reason.as_deref(),
                });
                let event = LeadEvent {
                    name: "lead.stage_changed",
                    lead: &lead,
                    changes: Some(&moved),
                    reason: reason.as_deref(),
                    extra: Map::new(),
                };
                timeline::emit(conn, tenant, &actor, event, now).await?;
            }
            timeline::record(conn, tenant, id, &actor, &activities, now).await?;
            Ok(lead)
        })
        .await
    }

    /// `POST /leads/{lead}/notes`.
    pub async fn add_note(&self, caller: &Caller, id: Uuid, input: NewNote) -> Result<Note, Error> {
        let mut conn = self.conn().await?;
        let actor = self.access(&mut conn, caller, Permission::LEADS_EDIT).await?;
        let body = input.body.as_deref().map(str::trim).unwrap_or_default().to_owned();
        if body.is_empty() || body.chars().count() > 10_000 {
            return Err(Error::field("body", "The body is required, up to 10,000 characters.").with_reason("invalid"));
        }
        let (tenant, now) = (caller.tenant_id, self.clock.now());
        conn.transaction::<_, Error, _>(async |conn| {
            lead::locked(conn, tenant, id, &actor).await?;
            diesel::update(leads::table.filter(leads::id.eq(id)))
                .set(leads::last_activity_at.eq(now))
                .execute(conn)
                .await?;
            let note = Note { id: Uuid::new_v4(), body, created_at: now };
            let value = serde_json::to_value(&note).map_err(Error::internal)?;
            let activity = Activity { kind: "note_added", details: json!({ "note": value }), reason: None };
            timeline::record(conn, tenant, id, &actor, &[activity], now).await?;
            let lead = self.view_of(conn, tenant, id, now).await?;
            let extra = Map::from_iter([("note".to_owned(), value)]);
            let event = LeadEvent { name: "lead.note_added", lead: &lead, changes: None, reason: None, extra };
            timeline::emit(conn, tenant, &actor, event, now).await?;
            Ok(note)
        })
        .await
    }

    /// `POST /leads/{lead}/assign`: a user of the workspace, or null for the pool.
    pub async fn assign(&self, caller: &Caller, id: Uuid, input: Assignment) -> Result<Lead, Error> {
        let mut conn = self.conn().await?;
        let actor = self.access(&mut conn, caller, Permission::LEADS_ASSIGN).await?;
        let (tenant, now) = (caller.tenant_id, self.clock.now());
        if let Some(user) = input.user_id {
            match accounts::users::of_tenant(&mut conn, tenant, kernel::UserId(user)).await {
                Ok(_) => {}
                Err(e) if e.kind == kernel::ErrorKind::NotFound => {
                    return Err(Error::field("user_id", "No user of this workspace has this id.")
                        .with_reason("assignee_unknown"));
                }
                Err(e) => return Err(e),
            }
        }
        conn.transaction::<_, Error, _>(async |conn| {
            let row = lead::locked(conn, tenant, id, &actor).await?;
            if row.assigned_to == input.user_id {
                return self.view_of(conn, tenant, id, now).await;
            }
            let before = lead::views(conn, vec![row], &self.public_url, now).await?.pop().map(|l| l.assigned_to);
            diesel::update(leads::table.filter(leads::id.eq(id)))
                .set((leads::assigned_to.eq(input.user_id), leads::updated_at.eq(now), leads::last_activity_at.eq(now)))
                .execute(conn)
                .await?;
            let lead = self.view_of(conn, tenant, id, now).await?;
            let changes = Map::from_iter([(
                "assigned_to".to_owned(),
                json!({ "from": before.flatten(), "to": lead.assigned_to }),
            )]);
            let activity = Activity { kind: "assigned", details: Value::Object(changes.clone()), reason: None };
            timeline::record(conn, tenant, id, &actor, &[activity], now).await?;
            let event = LeadEvent {
                name: "lead.assigned",
                lead: &lead,
                changes: Some(&changes),
                reason: None,
                extra: Map::new(),
            };
            timeline::emit(conn, tenant, &actor, event, now).await?;
            Ok(lead)
        })
        .await
    }

    /// `DELETE /leads/{lead}`: `lead.deleted` carries its last state.
    pub async fn delete(&self, caller: &Caller, id: Uuid) -> Result<Lead, Error> {
        let mut conn = self.conn().await?;
        let actor = self.access(&mut conn, caller, Permission::LEADS_DELETE).await?;
        let (tenant, now) = (caller.tenant_id, self.clock.now());
        conn.transaction::<_, Error, _>(async |conn| {
            lead::locked(conn, tenant, id, &actor).await?;
            let lead = self.view_of(conn, tenant, id, now).await?;
            diesel::delete(leads::table.filter(leads::id.eq(id))).execute(conn).await?;
            let event = LeadEvent { name: "lead.deleted", lead: &lead, changes: None, reason: None, extra: Map::new() };
            timeline::emit(conn, tenant, &actor, event, now).await?;
            Ok(lead)
        })
        .await
    }

    /// `GET /leads/{lead}/activities`: newest first, 50 a page unless `limit` says otherwise
    /// (at most 100); `before` takes `next_before`.
    pub async fn activities(&self, caller: &Caller, id: Uuid, query: &TimelineQuery) -> Result<Activities, Error> {
        let page = Timeline::parse(query)?;
        let mut conn = self.conn().await?;
        let actor = self.access(&mut conn, caller, Permission::LEADS_VIEW).await?;
        let row = lead::row(&mut conn, caller.tenant_id, id).await?;
        if !actor.sees(row.assigned_to, &row.created_by_kind, row.created_by_id) {
            return Err(Error::not_found("Lead"));
        }
        type Entry = (i64, String, Value, Option<String>, String, Option<i64>, String, Option<String>, OffsetDateTime);
        let mut rows: Vec<Entry> = lead_activities::table
            .filter(lead_activities::lead_id.eq(id))
            .filter(lead_activities::id.lt(page.before))
            .order(lead_activities::id.desc())
            .limit(page.limit + 1)
            .select((
                lead_activities::id,
                lead_activities::kind,
                lead_activities::details,
                lead_activities::reason,
                lead_activities::actor_kind,
                lead_activities::actor_id,
                lead_activities::source_kind,
                lead_activities::source_id,
                lead_activities::created_at,
            ))
            .load(&mut conn)
            .await?;
        let next_before = page.cut(&mut rows, |r| r.0);
        let items = rows
            .into_iter()
            .map(|(id, kind, details, reason, actor_kind, actor_id, source_kind, source_id, created_at)| ActivityView {
                id,
                kind,
                details,
                reason,
                actor: json!({ "kind": actor_kind, "id": actor_id }),
                source: json!({ "kind": source_kind, "id": source_id }),
                created_at,
            })
            .collect();
        Ok(Activities { items, next_before })
    }
}
