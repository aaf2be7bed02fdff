//! `GET /leads` (contract: Leads): every filter of the contract, standard page-number
//! pagination, within the issuer's visibility; newest activity first.

use diesel::dsl::sql;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Text};
use diesel_async::RunQueryDsl;
use kernel::error::FieldErrors;
use kernel::{Caller, Error, Page, PageRequest, Permission};
use serde::Deserialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use utoipa::IntoParams;

use crate::LeadStage;
use crate::lead::{self, Lead, Row};
use crate::schema::{lead_label_links, lead_labels, leads};
use crate::service::LeadService;

pub const PER_PAGE: i64 = 20;

/// The filters of `GET /leads`; lists are comma-separated. Spaces around a value are ignored.
/// The patterns are written out (a parameter built by `schema_with` loses its description):
/// each is `kernel::schema::trimmed` of its values.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LeadFilter {
    /// `open` (the default: neither closed nor archived), `closed`, `archived` or `all`.
    #[param(
        pattern = "^[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*(open|closed|archived|all)?[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*$"
    )]
    pub status: Option<String>,
    /// One stage or several.
    #[param(
        pattern = "^[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*((new|contacted|qualified|opportunity|won|lost|unqualified)(,(new|contacted|qualified|opportunity|won|lost|unqualified))*)?[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*$"
    )]
    pub stage: Option<String>,
    /// Label names or ids; several mean any of them.
    pub label: Option<String>,
    /// The lead's `source_channel`, any case.
    pub channel: Option<String>,
    /// `me`, `none` or a user id.
    #[param(
        pattern = "^[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*(me|none|-?[0-9]{1,18})?[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*$"
    )]
    pub assigned_to: Option<String>,
    /// A user id, `me`, or a creator kind (`api`, `ai`, `user`).
    pub created_by: Option<String>,
    /// Searched in name, company, phone and email.
    pub q: Option<String>,
    /// RFC 3339 or a date; with `date_field`.
    #[param(
        pattern = "^[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*([0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])(T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))?)?[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*$"
    )]
    pub from: Option<String>,
    /// RFC 3339 or a date (its whole day); with `date_field`.
    #[param(
        pattern = "^[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*([0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])(T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))?)?[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*$"
    )]
    pub to: Option<String>,
    /// `created_at` (the default), `updated_at`, `last_activity_at` or `next_action_at`.
    #[param(
        pattern = "^[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*(created_at|updated_at|last_activity_at|next_action_at)?[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*$"
    )]
    pub date_field: Option<String>,
    /// A whole number.
    #[param(
        pattern = "^[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*(-?[0-9]{1,9})?[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*$"
    )]
    pub score_min: Option<String>,
    /// A whole number.
    #[param(
        pattern = "^[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*(-?[0-9]{1,9})?[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*$"
    )]
    pub score_max: Option<String>,
    /// RFC 3339 or a date: leads changed since.
    #[param(
        pattern = "^[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*([0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])(T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))?)?[\\t\\n\\x0B\\x0C\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000]*$"
    )]
    pub updated_since: Option<String>,
}

type Query<'a> = leads::BoxedQuery<'a, Pg>;

fn list(raw: &Option<String>) -> Vec<String> {
    raw.as_deref().unwrap_or_default().split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

/// A time as RFC 3339, or a date: its first moment (UTC), or with `end` its last, so `to` takes
/// in the whole day it names.
fn moment(raw: &str, end: bool) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(raw, &Rfc3339).ok().or_else(|| {
        let day = time::Date::parse(raw, &time::macros::format_description!("[year]-[month]-[day]")).ok()?;
        let start = day.midnight().assume_utc();
        Some(if end { start + time::Duration::days(1) - time::Duration::microseconds(1) } else { start })
    })
}

impl LeadService {
    pub async fn list(&self, caller: &Caller, filter: &LeadFilter, page: PageRequest) -> Result<Page<Lead>, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let actor = self.access(&mut conn, caller, Permission::LEADS_VIEW).await?;
        let me = actor.user.map(|u| u.0);
        let mut errors = FieldErrors::new();
        let tenant = caller.tenant_id.0;

        // each filter is one closure building its condition, so count and page share them
        let build = |errors: &mut FieldErrors| -> Query<'static> {
            let mut q: Query<'static> = leads::table.filter(leads::tenant_id.eq(tenant)).into_boxed();
            if !actor.sees_all {
                let mine = me.unwrap_or(-1);
                q = q.filter(
                    leads::assigned_to
                        .is_null()
                        .or(leads::assigned_to.eq(mine))
                        .or(leads::created_by_kind.eq("api").and(leads::created_by_id.eq(mine))),
                );
            }
            let closed = leads::stage.eq_any(LeadStage::closing());
            q = match filter.status.as_deref().map(str::trim).unwrap_or("open") {
                "" | "open" => q.filter(closed.clone().eq(false)).filter(leads::archived_at.is_null()),
                "closed" => q.filter(closed),
                "archived" => q.filter(leads::archived_at.is_not_null()),
                "all" => q,
                _ => {
                    errors.add("status", "The status must be open, closed, archived or all.");
                    q
                }
            };
            let stages = list(&filter.stage);
            if !stages.is_empty() {
                let mut wanted = Vec::with_capacity(stages.len());
                for stage in &stages {
                    match LeadStage::parse(stage) {
                        Some(stage) => wanted.push(stage),
                        None => errors.add("stage", format!("\"{}\" is not a lead stage.", stage.to_ascii_lowercase())),
                    }
                }
                q = q.filter(leads::stage.eq_any(wanted));
            }
            let labels = list(&filter.label);
            if !labels.is_empty() {
                let ids: Vec<i64> = labels.iter().filter_map(|l| l.parse().ok()).collect();
                let names: Vec<String> = labels.iter().map(|l| l.to_lowercase()).collect();
                let tagged = lead_label_links::table
                    .inner_join(lead_labels::table)
                    .filter(lead_label_links::tenant_id.eq(tenant))
                    .filter(lead_labels::tenant_id.eq(tenant))
                    .filter(
                        lead_labels::id.eq_any(ids).or(sql::<Bool>("lower(lead_labels.name) = ANY(")
                            .bind::<diesel::sql_types::Array<Text>, _>(names)
                            .sql(")")),
                    )
                    .select(lead_label_links::lead_id);
                q = q.filter(leads::id.eq_any(tagged));
            }
            if let Some(channel) = filter.channel.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
                q = q.filter(
                    sql::<Bool>("lower(leads.source_channel) = lower(").bind::<Text, _>(channel.to_owned()).sql(")"),
                );
            }
            match filter.assigned_to.as_deref().map(str::trim) {
                None | Some("") => {}
                Some("me") => q = q.filter(leads::assigned_to.eq(me.unwrap_or(-1))),
                Some("none") => q = q.filter(leads::assigned_to.is_null()),
                Some(id) => match id.parse::<i64>() {
                    Ok(id) => q = q.filter(leads::assigned_to.eq(id)),
                    Err(_) => errors.add("assigned_to", "The assigned_to must be me, none or a user id."),
                },
            }
            match filter.created_by.as_deref().map(str::trim) {
                None | Some("") => {}
                Some("me") => q = q.filter(leads::created_by_id.eq(me.unwrap_or(-1))),
                Some(value) => match value.parse::<i64>() {
                    Ok(id) => q = q.filter(leads::created_by_id.eq(id)),
                    Err(_) => q = q.filter(leads::created_by_kind.eq(value.to_owned())),
                },
            }
            if let Some(text) = filter.q.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
                // the expression of the leads_search index, through the leakproof operator
                q = q.filter(
                    sql::<Bool>(&format!(
                        "svc_words(leads.name, leads.company, leads.phone, leads.email) {} ",
                        store::search::ILIKE
                    ))
                    .bind::<Text, _>(store::search::contains(text)),
                );
            }
            let field = filter.date_field.as_deref().map(str::trim).filter(|f| !f.is_empty()).unwrap_or("created_at");
            if !["created_at", "updated_at", "last_activity_at", "next_action_at"].contains(&field) {
                errors.add(
                    "date_field",
                    "The date_field must be created_at, updated_at, last_activity_at or next_action_at.",
                );
            }
            for (name, raw, after) in [("from", &filter.from, true), ("to", &filter.to, false)] {
                let Some(raw) = raw.as_deref().map(str::trim).filter(|r| !r.is_empty()) else { continue };
                let Some(at) = moment(raw, !after) else {
                    errors.add(name, format!("The {name} must be a date or an RFC 3339 time."));
                    continue;
                };
                let column = match field {
                    "updated_at" => "leads.updated_at",
                    "last_activity_at" => "leads.last_activity_at",
                    "next_action_at" => "leads.next_action_at",
                    _ => "leads.created_at",
                };
                let op = if after { ">=" } else { "<=" };
                q = q.filter(sql::<Bool>(&format!("{column} {op} ")).bind::<diesel::sql_types::Timestamptz, _>(at));
            }
            for (name, raw, min) in [("score_min", &filter.score_min, true), ("score_max", &filter.score_max, false)] {
                let Some(raw) = raw.as_deref().map(str::trim).filter(|r| !r.is_empty()) else { continue };
                match raw.parse::<i32>() {
                    Ok(score) if min => q = q.filter(leads::score.ge(score)),
                    Ok(score) => q = q.filter(leads::score.le(score)),
                    Err(_) => errors.add(name, format!("The {name} must be a whole number.")),
                }
            }
            if let Some(raw) = filter.updated_since.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
                match moment(raw, false) {
                    Some(at) => q = q.filter(leads::updated_at.ge(at)),
                    None => errors.add("updated_since", "The updated_since must be a date or an RFC 3339 time."),
                }
            }
            q
        };
        let counted = build(&mut errors);
        if !errors.is_empty() {
            return Err(Error::fields(errors.into_map()).with_reason("invalid"));
        }
        let total: i64 = counted.count().get_result(&mut conn).await?;
        let rows: Vec<Row> = build(&mut FieldErrors::new())
            .order((leads::updated_at.desc(), leads::id.desc()))
            .limit(page.per_page)
            .offset(page.offset())
            .select(Row::as_select())
            .load(&mut conn)
            .await?;
        let items = lead::views(&mut conn, rows, &self.public_url, self.clock.now()).await?;
        Ok(Page::new(items, page, total))
    }
}
