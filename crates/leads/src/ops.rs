//! The operations on one lead (contract: Leads): `PATCH` (null clears), notes, assignment,
//! deletion, and the timeline read.

use std::collections::BTreeMap;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::error::FieldErrors;
use kernel::page::{Timeline, TimelineQuery};
use kernel::{Caller, Error, Patch, Permission, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::LeadId;
use crate::identity::normalize_email;
use crate::lead::{self, Lead};
use crate::schema::{lead_activities, lead_identities, leads};
use crate::service::LeadService;
use crate::stage::{LeadStage, Transition, Via};
use crate::timeline::{self, Activity, LeadEvent};

/// `PATCH /leads/{lead}`: a member left out stays, `null` (or an empty string) clears it.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct LeadPatch {
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 191)]
    pub name: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 191)]
    pub title: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 191)]
    pub company: Patch<String>,
    /// Any common form, read with the account's calling code.
    #[serde(default)]
    #[schema(schema_with = crate::doc::phone_patch)]
    pub phone: Patch<String>,
    #[serde(default)]
    #[schema(schema_with = crate::doc::email_patch)]
    pub email: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 191)]
    pub location: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 2000)]
    pub interest: Patch<String>,
    /// In main currency units, at least 0.
    #[serde(default)]
    #[schema(value_type = Option<f64>, minimum = 0, exclusive_maximum = 1e15)]
    pub estimated_value: Patch<f64>,
    /// ISO 4217; null puts back the workspace's currency.
    #[serde(default)]
    #[schema(schema_with = crate::doc::currency_patch)]
    pub currency: Patch<String>,
    /// 0 to 100.
    #[serde(default)]
    #[schema(value_type = Option<i64>, minimum = 0, maximum = 100)]
    pub score: Patch<i64>,
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 2000)]
    pub score_reason: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 2000)]
    pub summary: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 191)]
    pub source_channel: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 191)]
    pub source_detail: Patch<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 191)]
    pub next_action: Patch<String>,
    /// RFC 3339.
    #[serde(default)]
    #[schema(schema_with = crate::doc::date_time_or_null)]
    pub next_action_at: Patch<String>,
    /// Archives (`archived_at` set) or restores the lead.
    #[serde(default)]
    #[schema(value_type = bool)]
    pub archived: Patch<bool>,
    /// As the stage operation; a won lead answers `won_locked` here.
    #[serde(default)]
    #[schema(schema_with = crate::doc::stage_patch)]
    pub stage: Patch<String>,
    /// Required when the edit moves the lead to `lost` or `unqualified` (`reason_required`);
    /// sending the stage the lead already has is no move.
    pub reason: Option<String>,
    /// Merged; a key sent as null is removed.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub custom_fields: Patch<Map<String, Value>>,
    /// Members the record does not have: each is refused by name.
    #[serde(flatten)]
    #[schema(ignore)]
    pub unknown: BTreeMap<String, Value>,
}

impl LeadPatch {
    /// The free-text members with their longest value, taken out.
    fn take_texts(&mut self) -> [(&'static str, usize, Patch<String>); 10] {
        lead::take_texts([
            &mut self.name,
            &mut self.title,
            &mut self.company,
            &mut self.location,
            &mut self.interest,
            &mut self.summary,
            &mut self.score_reason,
            &mut self.source_channel,
            &mut self.source_detail,
            &mut self.next_action,
        ])
    }
}

/// A patch, checked: each member sent, as it will be stored.
#[derive(Debug, Default)]
struct Checked {
    text: Vec<(&'static str, Option<String>)>,
    phone: Patch<String>,
    email: Patch<String>,
    estimated_value_cents: Patch<i64>,
    /// Null puts back the workspace's.
    currency: Option<String>,
    score: Patch<i32>,
    next_action_at: Patch<OffsetDateTime>,
    archived: Option<bool>,
    stage: Option<LeadStage>,
    reason: Option<String>,
    /// Checked values, and keys sent as null (to remove).
    custom_fields: Option<Map<String, Value>>,
}

impl Checked {
    /// Each member sent (custom fields aside) as the record shows it, for `changes`.
    fn shown(&self) -> Result<Vec<(&'static str, Value)>, Error> {
        let mut shown: Vec<(&'static str, Value)> =
            self.text.iter().map(|(field, value)| (*field, json!(value))).collect();
        let patch = |p: &Patch<String>| p.clone().change().map(|v| json!(v));
        if let Some(v) = patch(&self.phone) {
            shown.push(("phone", v));
        }
        if let Some(v) = patch(&self.email) {
            shown.push(("email", v));
        }
        if let Some(cents) = self.estimated_value_cents.clone().change() {
            shown.push(("estimated_value", json!(cents.map(lead::main_units))));
        }
        if let Some(currency) = &self.currency {
            shown.push(("currency", json!(currency)));
        }
        if let Some(score) = self.score.clone().change() {
            shown.push(("score", json!(score)));
        }
        if let Some(at) = self.next_action_at.clone().change() {
            // as the record shows it: UTC
            let at = at.map(|at| at.to_offset(time::UtcOffset::UTC).format(&Rfc3339)).transpose();
            shown.push(("next_action_at", json!(at.map_err(Error::internal)?)));
        }
        if let Some(archived) = self.archived {
            shown.push(("archived", json!(archived)));
        }
        Ok(shown)
    }
}

/// Trimmed; an empty string clears as null does.
fn cleared_if_blank(value: Patch<String>) -> Patch<String> {
    match value {
        Patch::Set(s) if s.trim().is_empty() => Patch::Null,
        Patch::Set(s) => Patch::Set(s.trim().to_owned()),
        other => other,
    }
}

/// The patch's rules, every bad member named at once (custom values are checked against the
/// workspace's fields by the caller).
fn check(mut patch: LeadPatch, calling_code: &str, workspace_currency: &str, errors: &mut FieldErrors) -> Checked {
    let mut checked = Checked::default();
    for (field, max, value) in patch.take_texts() {
        // the limit counts the text as sent, as the description's maxLength does
        let long = matches!(&value, Patch::Set(s) if s.chars().count() > max);
        match cleared_if_blank(value) {
            Patch::Absent => {}
            Patch::Set(_) if long => errors.add(field, format!("The {field} may not be longer than {max} characters.")),
            value => checked.text.push((field, value.set())),
        }
    }
    checked.phone = match cleared_if_blank(patch.phone) {
        Patch::Set(raw) => match kernel::phone::normalize(&raw, calling_code) {
            Some(e164) => Patch::Set(e164),
            None => {
                errors.add("phone", "The phone is not a valid number.");
                Patch::Absent
            }
        },
        other => other,
    };
    checked.email = match cleared_if_blank(patch.email) {
        Patch::Set(raw) => match normalize_email(&raw) {
            Some(email) => Patch::Set(email),
            None => {
                errors.add("email", "The email is not a valid address.");
                Patch::Absent
            }
        },
        other => other,
    };
    checked.estimated_value_cents = match patch.estimated_value {
        Patch::Set(v) if v.is_finite() && (0.0..1e15).contains(&v) => Patch::Set((v * 100.0).round() as i64),
        Patch::Set(_) => {
            errors.add("estimated_value", "The estimated_value must be a number of at least 0, or null.");
            Patch::Absent
        }
        Patch::Null => Patch::Null,
        Patch::Absent => Patch::Absent,
    };
    checked.currency = match patch.currency.map(|c| c.trim().to_owned()) {
        Patch::Absent => None,
        Patch::Null => Some(workspace_currency.to_owned()),
        Patch::Set(c) if c.len() == 3 && c.chars().all(|ch| ch.is_ascii_alphabetic()) => Some(c.to_ascii_uppercase()),
        Patch::Set(_) => {
            errors.add("currency", "The currency must be a three-letter ISO 4217 code.");
            None
        }
    };
    checked.score = match patch.score {
        Patch::Set(s) if (0..=100).contains(&s) => Patch::Set(s as i32),
        Patch::Set(_) => {
            errors.add("score", "The score must be a whole number from 0 to 100, or null.");
            Patch::Absent
        }
        Patch::Null => Patch::Null,
        Patch::Absent => Patch::Absent,
    };
    checked.next_action_at = match patch.next_action_at {
        Patch::Set(raw) => match OffsetDateTime::parse(raw.trim(), &Rfc3339) {
            Ok(at) => Patch::Set(at),
            Err(_) => {
                errors.add("next_action_at", "The next_action_at must be an RFC 3339 time, or null.");
                Patch::Absent
            }
        },
        Patch::Null => Patch::Null,
        Patch::Absent => Patch::Absent,
    };
    checked.archived = match patch.archived {
        Patch::Set(archived) => Some(archived),
        Patch::Null => {
            errors.add("archived", "The archived must be true or false.");
            None
        }
        Patch::Absent => None,
    };
    checked.stage = match patch.stage {
        Patch::Absent => None,
        Patch::Set(raw) if LeadStage::parse(&raw).is_some() => LeadStage::parse(&raw),
        _ => {
            errors.add("stage", LeadStage::INVALID);
            None
        }
    };
    checked.reason = patch.reason.as_deref().map(str::trim).filter(|r| !r.is_empty()).map(str::to_owned);
    checked.custom_fields = match patch.custom_fields {
        Patch::Set(fields) => Some(fields),
        Patch::Null => {
            errors.add("custom_fields", "The custom_fields must be an object.");
            None
        }
        Patch::Absent => None,
    };
    for key in patch.unknown.keys() {
        errors.add(key.as_str(), format!("{key} cannot be changed here."));
    }
    checked
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct NewNote {
    /// 1 to 10,000 characters, not only spaces.
    #[schema(required = true, schema_with = crate::doc::note_body)]
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
        id: LeadId,
        now: OffsetDateTime,
    ) -> Result<Lead, Error> {
        let row = lead::row(conn, tenant, id).await?;
        lead::views(conn, vec![row], &self.public_url, now).await?.pop().ok_or_else(|| Error::not_found("Lead"))
    }

    /// `PATCH /leads/{lead}`: sets what is sent, clears what is sent as null.
    pub async fn update(&self, caller: &Caller, id: LeadId, patch: LeadPatch) -> Result<Lead, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let actor = self.access(&mut conn, caller, Permission::LEADS_EDIT).await?;
        let workspace = accounts::tenants::get(&mut conn, caller.tenant_id).await?;
        let tenant = caller.tenant_id;
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let row = lead::locked(conn, tenant, id, &actor).await?;
            let mut errors = FieldErrors::new();
            let mut checked = check(patch, &caller.calling_code, &workspace.currency, &mut errors);
            // custom values are checked against the workspace's fields; null removes a key
            if let Some(fields) = checked.custom_fields.take() {
                let (removed, values): (Map<String, Value>, Map<String, Value>) =
                    fields.into_iter().partition(|(_, v)| v.is_null());
                let mut undefined = Vec::new();
                let mut kept =
                    crate::upsert::check_custom_fields(conn, tenant, values, &mut undefined, &mut errors).await?;
                for field in undefined {
                    errors.add(field.as_str(), "The workspace has no such custom field (GET /lead-fields).");
                }
                kept.extend(removed);
                checked.custom_fields = Some(kept);
            }
            if !errors.is_empty() {
                return Err(invalid(errors));
            }
            let reason = checked.reason.clone();
            let stage_change = match checked.stage {
                Some(to) => match row.stage.transition(to, Via::Edit, reason.as_deref())? {
                    Transition::Move { from, to } => Some((from, to)),
                    Transition::Stay => None,
                },
                None => None,
            };
            // the changes, field by field, against the lead as the API shows it
            let current =
                serde_json::to_value(lead::views(conn, vec![row.clone()], &self.public_url, now).await?.pop())
                    .map_err(Error::internal)?;
            let mut changes = Map::new();
            for (key, value) in checked.shown()? {
                let before = current.get(key).cloned().unwrap_or(Value::Null);
                if before != value {
                    changes.insert(key.to_owned(), json!({ "from": before, "to": value }));
                }
            }
            let mut custom = match &row.custom_fields {
                Value::Object(map) => map.clone(),
                _ => Map::new(),
            };
            for (k, v) in checked.custom_fields.iter().flatten() {
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
            let text = |field: &str, old: &Option<String>| match checked.text.iter().find(|(f, _)| *f == field) {
                Some((_, value)) => value.clone(),
                None => old.clone(),
            };
            let archived_at = match checked.archived {
                Some(true) => row.archived_at.or(Some(now)),
                Some(false) => None,
                None => row.archived_at,
            };
            let (new_stage, closed_at, lost_reason) = match stage_change {
                Some((_, to)) => {
                    let (closed_at, lost_reason) = to.settle(row.closed_at, reason.clone(), now);
                    (to, closed_at, lost_reason)
                }
                None => (row.stage, row.closed_at, row.lost_reason.clone()),
            };
            let touched = !changes.is_empty() || stage_change.is_some();
            diesel::update(leads::table.filter(leads::tenant_id.eq(tenant)).filter(leads::id.eq(id)))
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
                    leads::phone.eq(checked.phone.clone().apply_to(row.phone.clone())),
                    leads::email.eq(checked.email.clone().apply_to(row.email.clone())),
                    leads::currency.eq(checked.currency.clone().unwrap_or_else(|| row.currency.clone())),
                    leads::estimated_value_cents
                        .eq(checked.estimated_value_cents.clone().apply_to(row.estimated_value_cents)),
                    leads::score.eq(checked.score.clone().apply_to(row.score)),
                    leads::next_action_at.eq(checked.next_action_at.clone().apply_to(row.next_action_at)),
                    leads::archived_at.eq(archived_at),
                    leads::custom_fields.eq(Value::Object(custom)),
                    leads::stage.eq(new_stage),
                    leads::closed_at.eq(closed_at),
                    leads::lost_reason.eq(lost_reason),
                    leads::updated_at.eq(if touched { now } else { row.updated_at }),
                    leads::last_activity_at.eq(if touched { now } else { row.last_activity_at }),
                ))
                .execute(conn)
                .await?;
            // a new phone or email finds the lead too (unless another lead already has it)
            for (kind, value) in [("phone", checked.phone.clone().set()), ("email", checked.email.clone().set())] {
                if let Some(v) = value {
                    diesel::insert_into(lead_identities::table)
                        .values((
                            lead_identities::tenant_id.eq(tenant),
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
            if let Some((from, to)) = stage_change {
                let moved = crate::stage::moved_changes(from, to);
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
    pub async fn add_note(&self, caller: &Caller, id: LeadId, input: NewNote) -> Result<Note, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let actor = self.access(&mut conn, caller, Permission::LEADS_EDIT).await?;
        let raw = input.body.as_deref().unwrap_or_default();
        let body = raw.trim().to_owned();
        // the limit counts the text as sent, as the description's maxLength does
        if body.is_empty() || raw.chars().count() > 10_000 {
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
    pub async fn assign(&self, caller: &Caller, id: LeadId, input: Assignment) -> Result<Lead, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
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
    pub async fn delete(&self, caller: &Caller, id: LeadId) -> Result<Lead, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
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
    pub async fn activities(&self, caller: &Caller, id: LeadId, query: &TimelineQuery) -> Result<Activities, Error> {
        let page = Timeline::parse(query)?;
        let mut conn = self.conn(caller.tenant_id).await?;
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
