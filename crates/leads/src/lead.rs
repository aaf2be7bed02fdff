//! The Lead resource (contract: Lead, Lead stage): the stored row, and the record the API shows.

use std::collections::BTreeMap;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{Error, Patch, TenantId};
use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::schema::{lead_identities, lead_label_links, lead_labels, leads};
use crate::stage::LeadStage;
use crate::{LabelId, LeadId};

/// The lead's free-text fields, with their longest value: what an upsert fills and a `PATCH`
/// sets or clears.
pub const TEXT_FIELDS: [(&str, usize); 10] = [
    ("name", 191),
    ("title", 191),
    ("company", 191),
    ("location", 191),
    ("interest", 2_000),
    ("summary", 2_000),
    ("score_reason", 2_000),
    ("source_channel", 191),
    ("source_detail", 191),
    ("next_action", 191),
];

/// The free-text members of a body, in the order of [`TEXT_FIELDS`], taken out of it with
/// their names and longest values.
pub(crate) fn take_texts(members: [&mut Patch<String>; 10]) -> [(&'static str, usize, Patch<String>); 10] {
    let mut members = members.into_iter();
    TEXT_FIELDS.map(|(field, max)| (field, max, members.next().map(std::mem::take).unwrap_or_default()))
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = leads)]
pub(crate) struct Row {
    pub id: LeadId,
    pub tenant_id: i64,
    pub name: Option<String>,
    pub title: Option<String>,
    pub company: Option<String>,
    pub phone: Option<String>,
    pub email: Option<String>,
    pub location: Option<String>,
    pub stage: LeadStage,
    pub closed_at: Option<OffsetDateTime>,
    pub archived_at: Option<OffsetDateTime>,
    pub lost_reason: Option<String>,
    pub interest: Option<String>,
    pub estimated_value_cents: Option<i64>,
    pub currency: String,
    pub score: Option<i32>,
    pub score_reason: Option<String>,
    pub summary: Option<String>,
    pub source_channel: Option<String>,
    pub source_detail: Option<String>,
    pub assigned_to: Option<i64>,
    pub next_action: Option<String>,
    pub next_action_at: Option<OffsetDateTime>,
    pub created_by_kind: String,
    pub created_by_id: Option<i64>,
    pub last_activity_at: OffsetDateTime,
    pub sources: Value,
    pub custom_fields: Value,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct Label {
    #[schema(value_type = i64)]
    pub id: LabelId,
    pub name: String,
    pub color: String,
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct Assignee {
    pub id: i64,
    pub name: String,
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct CreatedBy {
    /// `api` for API keys (then `id` is the key's issuer), `ai`, `user`...
    pub kind: String,
    pub id: Option<i64>,
}

/// One way the person is found again.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct Identity {
    /// `phone` (digits of the E.164 number), `email` (lower case) or `chat`.
    pub kind: String,
    pub value: String,
}

/// Another lead that may be the same person (same name, no shared identity).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct Duplicate {
    #[schema(value_type = uuid::Uuid)]
    pub id: LeadId,
    pub name: Option<String>,
}

/// The Lead record (contract: Lead).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Lead {
    #[schema(value_type = uuid::Uuid)]
    pub id: LeadId,
    pub name: Option<String>,
    pub title: Option<String>,
    pub company: Option<String>,
    /// E.164.
    pub phone: Option<String>,
    pub email: Option<String>,
    pub location: Option<String>,
    pub stage: LeadStage,
    pub stage_label: String,
    pub closed: bool,
    pub archived: bool,
    #[serde(with = "time::serde::rfc3339::option")]
    pub closed_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub archived_at: Option<OffsetDateTime>,
    pub lost_reason: Option<String>,
    pub labels: Vec<Label>,
    pub interest: Option<String>,
    /// In main currency units (not minor units).
    pub estimated_value: Option<f64>,
    pub currency: String,
    pub score: Option<i32>,
    pub score_reason: Option<String>,
    pub summary: Option<String>,
    pub source_channel: Option<String>,
    pub source_detail: Option<String>,
    pub assigned_to: Option<Assignee>,
    pub next_action: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub next_action_at: Option<OffsetDateTime>,
    /// `next_action_at` has passed on an open lead.
    pub overdue: bool,
    pub created_by: CreatedBy,
    #[serde(with = "time::serde::rfc3339")]
    pub last_activity_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[schema(value_type = Vec<Object>)]
    pub sources: Value,
    #[schema(value_type = Object)]
    pub custom_fields: Value,
    pub url: String,
    /// The single read only: how the person is found again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identities: Option<Vec<Identity>>,
    /// The single read only: another lead that may be the same person, or null.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub possible_duplicate: Option<Option<Duplicate>>,
}

/// Hundredths to a number in main units.
pub(crate) fn main_units(cents: i64) -> f64 {
    cents as f64 / 100.0
}

impl Row {
    pub(crate) fn view(
        self,
        labels: Vec<Label>,
        assignee: Option<Assignee>,
        public_url: &str,
        now: OffsetDateTime,
    ) -> Lead {
        let closed = self.stage.closes();
        Lead {
            id: self.id,
            stage_label: self.stage.label().to_owned(),
            closed,
            archived: self.archived_at.is_some(),
            overdue: !closed && self.next_action_at.is_some_and(|at| at < now),
            url: format!("{}/leads/{}", public_url.trim_end_matches('/'), self.id),
            name: self.name,
            title: self.title,
            company: self.company,
            phone: self.phone,
            email: self.email,
            location: self.location,
            stage: self.stage,
            closed_at: self.closed_at,
            archived_at: self.archived_at,
            lost_reason: self.lost_reason,
            labels,
            interest: self.interest,
            estimated_value: self.estimated_value_cents.map(main_units),
            currency: self.currency,
            score: self.score,
            score_reason: self.score_reason,
            summary: self.summary,
            source_channel: self.source_channel,
            source_detail: self.source_detail,
            assigned_to: assignee,
            next_action: self.next_action,
            next_action_at: self.next_action_at,
            created_by: CreatedBy { kind: self.created_by_kind, id: self.created_by_id },
            last_activity_at: self.last_activity_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
            sources: self.sources,
            custom_fields: self.custom_fields,
            identities: None,
            possible_duplicate: None,
        }
    }
}

pub(crate) async fn row(conn: &mut store::Conn, tenant: TenantId, id: LeadId) -> Result<Row, Error> {
    leads::table
        .filter(leads::tenant_id.eq(tenant))
        .filter(leads::id.eq(id))
        .select(Row::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Lead"))
}

/// The lead, locked for a change; one the actor may not see is not found.
pub(crate) async fn locked(
    conn: &mut store::Conn,
    tenant: TenantId,
    id: LeadId,
    actor: &crate::service::Actor,
) -> Result<Row, Error> {
    let row: Row = leads::table
        .filter(leads::tenant_id.eq(tenant))
        .filter(leads::id.eq(id))
        .select(Row::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Lead"))?;
    if !actor.sees(row.assigned_to, &row.created_by_kind, row.created_by_id) {
        return Err(Error::not_found("Lead"));
    }
    Ok(row)
}

/// The records of `rows`, labels and assignees read in two queries.
pub(crate) async fn views(
    conn: &mut store::Conn,
    rows: Vec<Row>,
    public_url: &str,
    now: OffsetDateTime,
) -> Result<Vec<Lead>, Error> {
    let ids: Vec<LeadId> = rows.iter().map(|r| r.id).collect();
    let tenants: Vec<i64> = rows.iter().map(|r| r.tenant_id).collect();
    let linked: Vec<(LeadId, LabelId, String, String)> = lead_label_links::table
        .inner_join(lead_labels::table)
        .filter(lead_label_links::tenant_id.eq_any(&tenants))
        .filter(lead_labels::tenant_id.eq_any(&tenants))
        .filter(lead_label_links::lead_id.eq_any(&ids))
        .order((lead_labels::name, lead_labels::id))
        .select((lead_label_links::lead_id, lead_labels::id, lead_labels::name, lead_labels::color))
        .load(conn)
        .await?;
    let mut labels: BTreeMap<LeadId, Vec<Label>> = BTreeMap::new();
    for (lead, id, name, color) in linked {
        labels.entry(lead).or_default().push(Label { id, name, color });
    }
    let mut names: BTreeMap<i64, String> = BTreeMap::new();
    for tenant in tenants.iter().collect::<std::collections::BTreeSet<_>>() {
        let assignee_ids: Vec<i64> =
            rows.iter().filter(|r| r.tenant_id == *tenant).filter_map(|r| r.assigned_to).collect();
        names.extend(accounts::users::names(conn, TenantId(*tenant), &assignee_ids).await?);
    }
    Ok(rows
        .into_iter()
        .map(|row| {
            let assignee =
                row.assigned_to.and_then(|id| names.get(&id).map(|name| Assignee { id, name: name.clone() }));
            let labels = labels.remove(&row.id).unwrap_or_default();
            row.view(labels, assignee, public_url, now)
        })
        .collect())
}

/// One lead as the single read shows it: with its identities and a possible duplicate.
pub(crate) async fn full(
    conn: &mut store::Conn,
    row: Row,
    public_url: &str,
    now: OffsetDateTime,
) -> Result<Lead, Error> {
    let (tenant, id, name) = (row.tenant_id, row.id, row.name.clone());
    let mut lead = views(conn, vec![row], public_url, now).await?.pop().ok_or_else(|| Error::not_found("Lead"))?;
    let identities = lead_identities::table
        .filter(lead_identities::lead_id.eq(id))
        .order((lead_identities::kind, lead_identities::value))
        .select((lead_identities::kind, lead_identities::value))
        .load::<(String, String)>(conn)
        .await?
        .into_iter()
        .map(|(kind, value)| Identity { kind, value })
        .collect();
    lead.identities = Some(identities);
    lead.possible_duplicate = Some(duplicate_of(conn, TenantId(tenant), id, name.as_deref()).await?);
    Ok(lead)
}

/// Another lead of the workspace with the same name, any case (a person who reached the
/// business by another number or address).
pub(crate) async fn duplicate_of(
    conn: &mut store::Conn,
    tenant: TenantId,
    id: LeadId,
    name: Option<&str>,
) -> Result<Option<Duplicate>, Error> {
    let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) else { return Ok(None) };
    let found: Option<(LeadId, Option<String>)> = leads::table
        .filter(leads::tenant_id.eq(tenant))
        .filter(leads::id.ne(id))
        .filter(
            // svc_lower: lower() that stays an index condition under row-level security
            diesel::dsl::sql::<diesel::sql_types::Bool>("svc_lower(name) = svc_lower(")
                .bind::<diesel::sql_types::Text, _>(name)
                .sql(")"),
        )
        .order(leads::created_at)
        .select((leads::id, leads::name))
        .first(conn)
        .await
        .optional()?;
    Ok(found.map(|(id, name)| Duplicate { id, name }))
}
