//! Labels (contract: Leads — `/lead-labels`, `POST`/`DELETE /leads/{lead}/labels`): the
//! workspace's labels with how many leads carry each, their management (`leads.settings`), and
//! putting labels on and off one lead by name, any case.

use std::collections::BTreeMap;

use crate::{LabelId, LeadId};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sql_types::{Array, Bool, Text};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::error::FieldErrors;
use kernel::{Caller, Error, Patch, Permission, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, json};
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::lead::{self, Label, Lead};
use crate::schema::{lead_label_links, lead_labels, leads};
use crate::service::{Actor, LeadService};
use crate::timeline::{self, Activity, LeadEvent};
use crate::upsert::DEFAULT_LABEL_COLOR;

/// The longest label name (the upsert's limit too).
pub const NAME_MAX: usize = 60;
pub const DESCRIPTION_MAX: usize = 500;
/// Names one request may add to or remove from a lead.
pub const NAMES_MAX: usize = 100;

/// A label of the workspace, as `GET /lead-labels` lists it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LabelWithCount {
    #[schema(value_type = i64)]
    pub id: LabelId,
    pub name: String,
    /// `#RRGGBB`.
    pub color: String,
    pub description: Option<String>,
    /// The assistant may put this label on leads by itself.
    pub ai_assignable: bool,
    /// Leads carrying the label: every one of the workspace, closed and archived included,
    /// whoever may see them.
    pub lead_count: i64,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// `POST /lead-labels`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct NewLabel {
    /// Required; up to 60 characters; unique in the workspace, any case.
    #[schema(required = true, schema_with = crate::doc::new_label_name)]
    pub name: Option<String>,
    /// `#RRGGBB`; `#6B7280` when absent.
    #[schema(schema_with = crate::doc::label_color)]
    pub color: Option<String>,
    /// Up to 500 characters.
    #[schema(max_length = 500)]
    pub description: Option<String>,
    /// Default false.
    pub ai_assignable: Option<bool>,
}

/// `PATCH /lead-labels/{label}`: what is sent changes, what is absent stays.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct LabelPatch {
    /// Up to 60 characters; unique in the workspace, any case.
    #[schema(schema_with = crate::doc::label_name_patch)]
    pub name: Option<String>,
    /// `#RRGGBB`.
    #[schema(schema_with = crate::doc::label_color)]
    pub color: Option<String>,
    /// Up to 500 characters; null or an empty string clears it.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 500)]
    pub description: Patch<String>,
    pub ai_assignable: Option<bool>,
}

/// The answer of `DELETE /lead-labels/{label}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeletedLabel {
    #[schema(value_type = i64)]
    pub id: LabelId,
    pub name: String,
    pub deleted: bool,
    /// Leads that carried the label (it is gone from all of them).
    pub lead_count: i64,
}

/// `POST` and `DELETE /leads/{lead}/labels`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct LabelNames {
    /// Label names, any case; at least one, up to 100.
    #[schema(required = true, schema_with = crate::doc::label_names)]
    pub labels: Option<Vec<String>>,
}

/// The answer of `POST /leads/{lead}/labels`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LabelsAdded {
    pub lead: Lead,
    /// Labels newly on the lead (one it already carried is not repeated here).
    pub added: Vec<Label>,
    /// Names the workspace lacks and the issuer may not create (no `leads.settings`).
    pub refused: Vec<String>,
}

/// The answer of `DELETE /leads/{lead}/labels`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LabelsRemoved {
    pub lead: Lead,
    /// Labels taken off the lead; names it did not carry are not listed.
    pub removed: Vec<Label>,
}

/// Labels that went on (`label_added`) or off (`label_removed`) one lead.
struct Moved<'a> {
    tenant: TenantId,
    lead: LeadId,
    activity: &'static str,
    event: &'static str,
    labels: &'a [Label],
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = lead_labels)]
struct LabelRow {
    id: LabelId,
    name: String,
    color: String,
    description: Option<String>,
    ai_assignable: bool,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

impl LabelRow {
    fn with_count(self, lead_count: i64) -> LabelWithCount {
        LabelWithCount {
            id: self.id,
            name: self.name,
            color: self.color,
            description: self.description,
            ai_assignable: self.ai_assignable,
            lead_count,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

fn invalid(errors: FieldErrors) -> Result<(), Error> {
    if errors.is_empty() { Ok(()) } else { Err(Error::fields(errors.into_map()).with_reason("invalid")) }
}

/// A unique-value conflict: 409 naming the field, as every taken unique value answers.
fn taken(name: &str) -> Error {
    let message = format!("A label named {name} already exists.");
    Error::conflict(message.clone()).with_field("name", message)
}

/// A label name as stored: trimmed, 1 to 60 characters. Limits here count the text as sent,
/// spaces included, as the description's `maxLength` does.
fn check_name(raw: &str, errors: &mut FieldErrors) -> String {
    let name = raw.trim();
    if name.is_empty() {
        errors.add("name", "The name field is required.");
    } else if raw.chars().count() > NAME_MAX {
        errors.add("name", format!("The name may not be longer than {NAME_MAX} characters."));
    }
    name.to_owned()
}

/// `#RRGGBB` (any case in, upper case stored, as the default colour is written).
pub fn check_color(raw: &str) -> Option<String> {
    let color = raw.trim();
    let hex = color.strip_prefix('#')?;
    (hex.len() == 6 && hex.chars().all(|c| c.is_ascii_hexdigit())).then(|| color.to_ascii_uppercase())
}

fn color(raw: &str, errors: &mut FieldErrors) -> String {
    check_color(raw).unwrap_or_else(|| {
        errors.add("color", "The color must be a hex colour written #RRGGBB, like #1D4ED8.");
        String::new()
    })
}

/// Trimmed; empty means none.
fn description(raw: Option<&str>, errors: &mut FieldErrors) -> Option<String> {
    let raw = raw?;
    let text = raw.trim();
    if text.is_empty() {
        return None;
    }
    if raw.chars().count() > DESCRIPTION_MAX {
        errors.add("description", format!("The description may not be longer than {DESCRIPTION_MAX} characters."));
    }
    Some(text.to_owned())
}

/// A new label's values, checked: name, colour, description, ai_assignable.
fn check_new(input: NewLabel) -> Result<(String, String, Option<String>, bool), Error> {
    let mut errors = FieldErrors::new();
    let name = check_name(input.name.as_deref().unwrap_or_default(), &mut errors);
    let color = match input.color.as_deref() {
        Some(raw) => color(raw, &mut errors),
        None => DEFAULT_LABEL_COLOR.to_owned(),
    };
    let description = description(input.description.as_deref(), &mut errors);
    invalid(errors)?;
    Ok((name, color, description, input.ai_assignable.unwrap_or(false)))
}

/// A patch, checked; `description` is `Some(None)` to clear.
struct Checked {
    name: Option<String>,
    color: Option<String>,
    description: Option<Option<String>>,
    ai_assignable: Option<bool>,
}

fn check_patch(patch: LabelPatch) -> Result<Checked, Error> {
    let mut errors = FieldErrors::new();
    let name = patch.name.as_deref().map(|n| check_name(n, &mut errors));
    let color = patch.color.as_deref().map(|c| color(c, &mut errors));
    let description = patch.description.change().map(|d| description(d.as_deref(), &mut errors));
    invalid(errors)?;
    Ok(Checked { name, color, description, ai_assignable: patch.ai_assignable })
}

/// The names of a `{labels[]}` body: trimmed, 1 to 60 characters each, each name once (any
/// case), at least one and at most 100.
pub fn check_names(labels: Option<Vec<String>>) -> Result<Vec<String>, Error> {
    let refuse = |message: String| Err(Error::field("labels", message).with_reason("invalid"));
    let Some(labels) = labels else { return refuse("The labels field is required.".to_owned()) };
    // the limit is on the list as sent, repeats included, as its `maxItems` counts it
    if labels.len() > NAMES_MAX {
        return refuse(format!("Send at most {NAMES_MAX} label names at once."));
    }
    let mut names: Vec<String> = Vec::new();
    for raw in &labels {
        let name = raw.trim();
        if name.is_empty() || raw.chars().count() > NAME_MAX {
            return refuse(format!("Labels are names of 1 to {NAME_MAX} characters."));
        }
        if !names.iter().any(|n| n.to_lowercase() == name.to_lowercase()) {
            names.push(name.to_owned());
        }
    }
    if names.is_empty() {
        return refuse("Send at least one label name.".to_owned());
    }
    Ok(names)
}

/// The workspace's label of this name, any case.
async fn find(conn: &mut store::Conn, tenant: TenantId, name: &str) -> Result<Option<Label>, Error> {
    let found: Option<(LabelId, String, String)> = lead_labels::table
        .filter(lead_labels::tenant_id.eq(tenant))
        .filter(diesel::dsl::sql::<Bool>("lower(name) = lower(").bind::<Text, _>(name).sql(")"))
        .select((lead_labels::id, lead_labels::name, lead_labels::color))
        .first(conn)
        .await
        .optional()?;
    Ok(found.map(|(id, name, color)| Label { id, name, color }))
}

/// The label of this name, any case; a missing one is made (default colour) when `may_create`,
/// else `None`. Two requests making one name at once end with the same label.
pub(crate) async fn find_or_create(
    conn: &mut store::Conn,
    tenant: TenantId,
    name: &str,
    may_create: bool,
    now: OffsetDateTime,
) -> Result<Option<Label>, Error> {
    if let Some(label) = find(conn, tenant, name).await? {
        return Ok(Some(label));
    }
    if !may_create {
        return Ok(None);
    }
    let made: Option<(LabelId, String, String)> = diesel::insert_into(lead_labels::table)
        .values((
            lead_labels::tenant_id.eq(tenant),
            lead_labels::name.eq(name),
            lead_labels::color.eq(DEFAULT_LABEL_COLOR),
            lead_labels::created_at.eq(now),
            lead_labels::updated_at.eq(now),
        ))
        .on_conflict_do_nothing()
        .returning((lead_labels::id, lead_labels::name, lead_labels::color))
        .get_result(conn)
        .await
        .optional()?;
    match made {
        Some((id, name, color)) => Ok(Some(Label { id, name, color })),
        None => find(conn, tenant, name).await,
    }
}

/// Puts the named labels (any case) on a lead; a missing one is made when `may_create`, else
/// refused. Answers the labels newly on the lead, and the names refused.
pub(crate) async fn link(
    conn: &mut store::Conn,
    tenant: TenantId,
    lead: LeadId,
    names: &[String],
    may_create: bool,
    now: OffsetDateTime,
) -> Result<(Vec<Label>, Vec<String>), Error> {
    let (mut added, mut refused) = (Vec::new(), Vec::new());
    for name in names {
        let Some(label) = find_or_create(conn, tenant, name, may_create, now).await? else {
            refused.push(name.clone());
            continue;
        };
        let linked = diesel::insert_into(lead_label_links::table)
            .values((
                lead_label_links::tenant_id.eq(tenant),
                lead_label_links::lead_id.eq(lead),
                lead_label_links::label_id.eq(label.id),
                lead_label_links::created_at.eq(now),
            ))
            .on_conflict_do_nothing()
            .execute(conn)
            .await?;
        if linked > 0 {
            added.push(label);
        }
    }
    Ok((added, refused))
}

async fn label_row(conn: &mut store::Conn, tenant: TenantId, id: LabelId) -> Result<LabelRow, Error> {
    lead_labels::table
        .filter(lead_labels::tenant_id.eq(tenant))
        .filter(lead_labels::id.eq(id))
        .select(LabelRow::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Lead label"))
}

/// Another label of the workspace has this name, any case.
async fn name_taken(conn: &mut store::Conn, tenant: TenantId, name: &str, except: LabelId) -> Result<bool, Error> {
    let found = find(conn, tenant, name).await?;
    Ok(found.is_some_and(|label| label.id != except))
}

async fn lead_count(conn: &mut store::Conn, tenant: TenantId, label: LabelId) -> Result<i64, Error> {
    Ok(lead_label_links::table
        .filter(lead_label_links::tenant_id.eq(tenant))
        .filter(lead_label_links::label_id.eq(label))
        .count()
        .get_result(conn)
        .await?)
}

impl LeadService {
    /// Every label of the workspace with its lead count, by name (any case).
    pub async fn labels(&self, caller: &Caller) -> Result<Vec<LabelWithCount>, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        self.access(&mut conn, caller, Permission::LEADS_VIEW).await?;
        let tenant = caller.tenant_id;
        let rows: Vec<LabelRow> = lead_labels::table
            .filter(lead_labels::tenant_id.eq(tenant))
            .select(LabelRow::as_select())
            .load(&mut conn)
            .await?;
        let counts: BTreeMap<LabelId, i64> = lead_label_links::table
            .inner_join(lead_labels::table)
            .filter(lead_label_links::tenant_id.eq(tenant))
            .filter(lead_labels::tenant_id.eq(tenant))
            .group_by(lead_label_links::label_id)
            .select((lead_label_links::label_id, diesel::dsl::count_star()))
            .load::<(LabelId, i64)>(&mut conn)
            .await?
            .into_iter()
            .collect();
        let mut labels: Vec<LabelWithCount> = rows
            .into_iter()
            .map(|row| {
                let n = counts.get(&row.id).copied().unwrap_or(0);
                row.with_count(n)
            })
            .collect();
        labels.sort_by_cached_key(|label| (label.name.to_lowercase(), label.id));
        Ok(labels)
    }

    /// A new label (`leads.settings`).
    pub async fn create_label(&self, caller: &Caller, input: NewLabel) -> Result<LabelWithCount, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        self.access(&mut conn, caller, Permission::LEADS_SETTINGS).await?;
        let (name, color, description, ai_assignable) = check_new(input)?;
        let now = self.clock.now();
        // the unique index on (tenant_id, lower(name)) is the only one a new row can meet
        let row: Option<LabelRow> = diesel::insert_into(lead_labels::table)
            .values((
                lead_labels::tenant_id.eq(caller.tenant_id),
                lead_labels::name.eq(&name),
                lead_labels::color.eq(&color),
                lead_labels::description.eq(&description),
                lead_labels::ai_assignable.eq(ai_assignable),
                lead_labels::created_at.eq(now),
                lead_labels::updated_at.eq(now),
            ))
            .on_conflict_do_nothing()
            .returning(LabelRow::as_returning())
            .get_result(&mut conn)
            .await
            .optional()?;
        Ok(row.ok_or_else(|| taken(&name))?.with_count(0))
    }

    /// Changes what is sent of a label (`leads.settings`); another workspace's label is not found.
    pub async fn update_label(&self, caller: &Caller, id: LabelId, patch: LabelPatch) -> Result<LabelWithCount, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        self.access(&mut conn, caller, Permission::LEADS_SETTINGS).await?;
        let tenant = caller.tenant_id;
        let current = label_row(&mut conn, tenant, id).await?;
        let patch = check_patch(patch)?;
        if let Some(name) = &patch.name
            && name_taken(&mut conn, tenant, name, id).await?
        {
            return Err(taken(name));
        }
        let name = patch.name.unwrap_or(current.name);
        let updated: Result<LabelRow, DieselError> =
            diesel::update(lead_labels::table.filter(lead_labels::tenant_id.eq(tenant)).filter(lead_labels::id.eq(id)))
                .set((
                    lead_labels::name.eq(&name),
                    lead_labels::color.eq(patch.color.unwrap_or(current.color)),
                    lead_labels::description.eq(patch.description.unwrap_or(current.description)),
                    lead_labels::ai_assignable.eq(patch.ai_assignable.unwrap_or(current.ai_assignable)),
                    lead_labels::updated_at.eq(self.clock.now()),
                ))
                .returning(LabelRow::as_returning())
                .get_result(&mut conn)
                .await;
        let row = match updated {
            Ok(row) => row,
            // another request took the name since the check
            Err(DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => return Err(taken(&name)),
            Err(DieselError::NotFound) => return Err(Error::not_found("Lead label")),
            Err(other) => return Err(other.into()),
        };
        let count = lead_count(&mut conn, caller.tenant_id, id).await?;
        Ok(row.with_count(count))
    }

    /// Deletes a label (`leads.settings`); it goes from every lead with it (the links cascade,
    /// without a `lead.label_removed` per lead: the workspace's vocabulary changed, not a lead).
    pub async fn delete_label(&self, caller: &Caller, id: LabelId) -> Result<DeletedLabel, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        self.access(&mut conn, caller, Permission::LEADS_SETTINGS).await?;
        let tenant = caller.tenant_id;
        conn.transaction::<_, Error, _>(async |conn| {
            let current = label_row(conn, tenant, id).await?;
            let count = lead_count(conn, tenant, id).await?;
            diesel::delete(lead_labels::table.filter(lead_labels::tenant_id.eq(tenant)).filter(lead_labels::id.eq(id)))
                .execute(conn)
                .await?;
            Ok(DeletedLabel { id, name: current.name, deleted: true, lead_count: count })
        })
        .await
    }

    /// `POST /leads/{lead}/labels` (`leads.edit`): puts the named labels on a lead. A name the
    /// workspace lacks is created when the issuer holds `leads.settings`, else listed in
    /// `refused`. Each label newly on the lead is a `label_added` activity and a
    /// `lead.label_added` event.
    pub async fn add_lead_labels(&self, caller: &Caller, id: LeadId, input: LabelNames) -> Result<LabelsAdded, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let actor = self.access(&mut conn, caller, Permission::LEADS_EDIT).await?;
        let names = check_names(input.labels)?;
        let tenant = caller.tenant_id;
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            lead::locked(conn, tenant, id, &actor).await?;
            let (added, refused) = link(conn, tenant, id, &names, actor.may_create_labels, now).await?;
            let moved = Moved { tenant, lead: id, activity: "label_added", event: "lead.label_added", labels: &added };
            self.changed(conn, &actor, moved, now).await?;
            let row = lead::row(conn, tenant, id).await?;
            let lead = lead::full(conn, row, &self.public_url, now).await?;
            Ok(LabelsAdded { lead, added, refused })
        })
        .await
    }

    /// `DELETE /leads/{lead}/labels` (`leads.edit`): takes the named labels (any case) off a
    /// lead. Each is a `label_removed` activity and a `lead.label_removed` event.
    pub async fn remove_lead_labels(
        &self,
        caller: &Caller,
        id: LeadId,
        input: LabelNames,
    ) -> Result<LabelsRemoved, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let actor = self.access(&mut conn, caller, Permission::LEADS_EDIT).await?;
        let names = check_names(input.labels)?;
        let tenant = caller.tenant_id;
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            lead::locked(conn, tenant, id, &actor).await?;
            let removed: Vec<Label> = lead_label_links::table
                .inner_join(lead_labels::table)
                .filter(lead_label_links::tenant_id.eq(tenant))
                .filter(lead_labels::tenant_id.eq(tenant))
                .filter(lead_label_links::lead_id.eq(id))
                .filter(
                    diesel::dsl::sql::<Bool>("lower(lead_labels.name) = ANY (SELECT lower(n) FROM unnest(")
                        .bind::<Array<Text>, _>(&names)
                        .sql(") AS n)"),
                )
                .order((lead_labels::name, lead_labels::id))
                .select((lead_labels::id, lead_labels::name, lead_labels::color))
                .load::<(LabelId, String, String)>(conn)
                .await?
                .into_iter()
                .map(|(id, name, color)| Label { id, name, color })
                .collect();
            let ids: Vec<LabelId> = removed.iter().map(|l| l.id).collect();
            if !ids.is_empty() {
                diesel::delete(
                    lead_label_links::table
                        .filter(lead_label_links::tenant_id.eq(tenant))
                        .filter(lead_label_links::lead_id.eq(id))
                        .filter(lead_label_links::label_id.eq_any(&ids)),
                )
                .execute(conn)
                .await?;
            }
            let moved =
                Moved { tenant, lead: id, activity: "label_removed", event: "lead.label_removed", labels: &removed };
            self.changed(conn, &actor, moved, now).await?;
            let row = lead::row(conn, tenant, id).await?;
            let lead = lead::full(conn, row, &self.public_url, now).await?;
            Ok(LabelsRemoved { lead, removed })
        })
        .await
    }

    /// After labels went on or off a lead: the lead is touched, and each label is an activity
    /// and an event carrying `label:{id, name, color}`. Nothing when no label moved.
    async fn changed(
        &self,
        conn: &mut store::Conn,
        actor: &Actor,
        moved: Moved<'_>,
        now: OffsetDateTime,
    ) -> Result<(), Error> {
        let Moved { tenant, lead: id, activity, event, labels } = moved;
        if labels.is_empty() {
            return Ok(());
        }
        diesel::update(leads::table.filter(leads::tenant_id.eq(tenant)).filter(leads::id.eq(id)))
            .set((leads::updated_at.eq(now), leads::last_activity_at.eq(now)))
            .execute(conn)
            .await?;
        let row = lead::row(conn, tenant, id).await?;
        let lead =
            lead::views(conn, vec![row], &self.public_url, now).await?.pop().ok_or_else(|| Error::not_found("Lead"))?;
        let mut activities = Vec::with_capacity(labels.len());
        for label in labels {
            let label = serde_json::to_value(label).map_err(Error::internal)?;
            activities.push(Activity { kind: activity, details: json!({ "label": label }), reason: None });
            let extra = Map::from_iter([("label".to_owned(), label)]);
            let event = LeadEvent { name: event, lead: &lead, changes: None, reason: None, extra };
            timeline::emit(conn, tenant, actor, event, now).await?;
        }
        timeline::record(conn, tenant, id, actor, &activities, now).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Option<Vec<String>> {
        Some(list.iter().map(|s| (*s).to_owned()).collect())
    }

    fn field_of(error: &Error) -> Vec<&str> {
        error.errors.keys().map(String::as_str).collect()
    }

    #[test]
    fn colours_are_six_hex_digits() {
        assert_eq!(check_color("#1d4ed8").as_deref(), Some("#1D4ED8"));
        assert_eq!(check_color(" #6B7280 ").as_deref(), Some("#6B7280"));
        for raw in ["", "#", "1D4ED8", "#1D4ED", "#1D4ED8F", "#GGGGGG", "red", "#1D 4ED"] {
            assert_eq!(check_color(raw), None, "{raw}");
        }
    }

    #[test]
    fn a_new_label_needs_a_name_of_up_to_60_characters() {
        let (name, color, description, ai) =
            check_new(NewLabel { name: Some("  VIP ".into()), ..NewLabel::default() }).expect("valid");
        assert_eq!((name.as_str(), color.as_str(), description, ai), ("VIP", DEFAULT_LABEL_COLOR, None, false));

        for name in [None, Some(""), Some("   ")] {
            let error =
                check_new(NewLabel { name: name.map(str::to_owned), ..NewLabel::default() }).expect_err("refused");
            assert_eq!(field_of(&error), ["name"]);
            assert_eq!(error.reason.as_deref(), Some("invalid"));
        }
        assert!(check_new(NewLabel { name: Some("x".repeat(60)), ..NewLabel::default() }).is_ok());
        let error = check_new(NewLabel { name: Some("é".repeat(61)), ..NewLabel::default() }).expect_err("refused");
        assert_eq!(field_of(&error), ["name"]);
    }

    #[test]
    fn every_bad_field_of_a_new_label_is_named() {
        let error = check_new(NewLabel {
            name: None,
            color: Some("blue".into()),
            description: Some("d".repeat(501)),
            ai_assignable: Some(true),
        })
        .expect_err("refused");
        assert_eq!(field_of(&error), ["color", "description", "name"]);
        let ok = check_new(NewLabel {
            name: Some("Hot".into()),
            color: Some("#ff0000".into()),
            // 500 as sent (the limit counts the spaces), 498 once trimmed
            description: Some(format!(" {} ", "d".repeat(498))),
            ai_assignable: Some(true),
        })
        .expect("valid");
        assert_eq!(ok.1, "#FF0000");
        assert_eq!(ok.2.map(|d| d.len()), Some(498));
        assert!(ok.3);
    }

    #[test]
    fn a_patch_changes_only_what_is_sent() {
        let patch: LabelPatch = serde_json::from_value(json!({})).expect("patch");
        let checked = check_patch(patch).expect("valid");
        assert!(checked.name.is_none() && checked.color.is_none() && checked.description.is_none());

        let patch: LabelPatch = serde_json::from_value(json!({ "description": null })).expect("patch");
        assert_eq!(check_patch(patch).expect("valid").description, Some(None));
        let patch: LabelPatch = serde_json::from_value(json!({ "description": "  " })).expect("patch");
        assert_eq!(check_patch(patch).expect("valid").description, Some(None));
        let patch: LabelPatch = serde_json::from_value(json!({ "description": "Big buyers" })).expect("patch");
        assert_eq!(check_patch(patch).expect("valid").description, Some(Some("Big buyers".to_owned())));

        let patch: LabelPatch = serde_json::from_value(json!({ "name": "", "color": "#12345" })).expect("patch");
        let error = check_patch(patch).err().expect("refused");
        assert_eq!(field_of(&error), ["color", "name"]);
        assert_eq!(error.reason.as_deref(), Some("invalid"));
    }

    #[test]
    fn names_are_trimmed_and_each_taken_once_in_any_case() {
        assert_eq!(check_names(names(&[" VIP ", "vip", "Hot", "HOT"])).expect("valid"), ["VIP", "Hot"]);
        for bad in [None, names(&[]), names(&[""]), names(&["ok", "  "]), Some(vec!["x".repeat(61)])] {
            let error = check_names(bad).expect_err("refused");
            assert_eq!(field_of(&error), ["labels"]);
            assert_eq!(error.reason.as_deref(), Some("invalid"));
        }
        let many: Vec<String> = (0..=NAMES_MAX).map(|i| format!("l{i}")).collect();
        assert!(check_names(Some(many[..NAMES_MAX].to_vec())).is_ok());
        assert!(check_names(Some(many)).is_err());
        let repeated = vec!["VIP".to_owned(); NAMES_MAX + 1];
        assert!(check_names(Some(repeated)).is_err(), "repeats count");
    }
}
