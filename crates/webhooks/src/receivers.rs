//! Receivers (contract: Webhook receiver, Webhooks management): registration, reads, updates,
//! deletion and secret rotation. Every query is scoped to the caller's tenant, so another
//! tenant's receiver is simply not found.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::error::FieldErrors;
use kernel::{Caller, Error, Page, PageRequest, Patch, Permission, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use time::macros::datetime;
use utoipa::ToSchema;

use crate::headers::{self, Sealed};
use crate::schema::webhooks;
use crate::status::WebhookStatus;
use crate::{WebhookId, WebhookService, catalogue, guard, signing};

/// Endpoints registered over http before this keep receiving until their URL is edited.
pub const LEGACY_HTTP_BEFORE: OffsetDateTime = datetime!(2026-09-26 00:00 UTC);
const MAX_URL_LEN: usize = crate::doc::URL_MAX;
pub const PER_PAGE: i64 = 20;
use crate::doc::LEAD_STAGES;

/// A receiver as the API shows it. Header values are never returned: each name maps to null,
/// which an update may send back to keep the stored value.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Webhook {
    pub id: i64,
    pub url: String,
    pub events: Vec<String>,
    pub filters: Option<Filters>,
    #[schema(value_type = Object)]
    pub headers: serde_json::Map<String, Value>,
    /// `active`, or `paused` after fifty consecutive failed attempts.
    #[schema(inline)]
    pub status: WebhookStatus,
    #[serde(with = "time::serde::rfc3339::option")]
    pub paused_at: Option<OffsetDateTime>,
    pub paused_reason: Option<String>,
    pub consecutive_failures: i32,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// A receiver with its signing secret: the answer to registration and rotation only.
#[derive(Clone, Serialize, ToSchema)]
pub struct WithSecret {
    #[serde(flatten)]
    pub webhook: Webhook,
    pub secret: String,
}

// Debug leaves the secret out.
impl std::fmt::Debug for WithSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithSecret").field("webhook", &self.webhook).finish_non_exhaustive()
    }
}

/// Lead-event filters: each non-empty list must name the lead as it is after the change.
/// These three members only (`additionalProperties: false`), each optional in a request
/// (answers carry all three).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Filters {
    #[schema(schema_with = crate::doc::filter_stages)]
    pub stages: Vec<String>,
    /// Label names, any case.
    #[schema(schema_with = crate::doc::filter_names)]
    pub labels: Vec<String>,
    /// Matched against the lead's `source_channel`.
    #[schema(schema_with = crate::doc::filter_names)]
    pub channels: Vec<String>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = webhooks)]
pub(crate) struct Row {
    pub id: i64,
    pub url: String,
    pub events: Vec<String>,
    pub filters: Option<Value>,
    pub headers: Value,
    pub secret: String,
    pub consecutive_failures: i32,
    pub paused_at: Option<OffsetDateTime>,
    pub paused_reason: Option<String>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
    pub url_changed_at: OffsetDateTime,
}

impl Row {
    pub(crate) fn sealed_headers(&self) -> Vec<Sealed> {
        serde_json::from_value(self.headers.clone()).unwrap_or_default()
    }

    /// Registered over http before the cutoff and not re-pointed since.
    pub(crate) fn legacy_http(&self) -> bool {
        self.url_changed_at < LEGACY_HTTP_BEFORE
    }

    pub(crate) fn view(&self) -> Webhook {
        Webhook {
            id: self.id,
            url: self.url.clone(),
            events: self.events.clone(),
            filters: self.filters.clone().and_then(|f| serde_json::from_value(f).ok()),
            headers: self.sealed_headers().into_iter().map(|h| (h.name, Value::Null)).collect(),
            status: WebhookStatus::of(self.paused_at),
            paused_at: self.paused_at,
            paused_reason: self.paused_reason.clone(),
            consecutive_failures: self.consecutive_failures,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// `POST /webhooks`.
#[derive(Clone, Default, Deserialize, ToSchema)]
pub struct NewWebhook {
    /// https; plain http only to loopback when `SVC_WEBHOOKS_ALLOW_LOOPBACK` allows it.
    #[schema(required = true, schema_with = crate::doc::url)]
    pub url: Option<String>,
    /// Names from `GET /webhooks/events`; at least one.
    #[schema(required = true, schema_with = crate::doc::events_list)]
    pub events: Option<Vec<String>>,
    /// Lead events only: `{stages, labels, channels}`.
    #[schema(value_type = Option<Filters>)]
    pub filters: Option<Value>,
    /// Up to five `{name: value}`; values are stored encrypted and never returned.
    #[schema(schema_with = crate::doc::headers_new)]
    pub headers: Option<Value>,
}

/// `PATCH /webhooks/{webhook}`.
#[derive(Clone, Default, Deserialize, ToSchema)]
pub struct WebhookPatch {
    /// As on registration; null or absent keeps it.
    #[schema(schema_with = crate::doc::url_patch)]
    pub url: Option<String>,
    /// As on registration; null or absent keeps them.
    #[schema(schema_with = crate::doc::events_patch)]
    pub events: Option<Vec<String>>,
    /// null removes the filters.
    #[serde(default)]
    #[schema(value_type = Option<Filters>)]
    pub filters: Patch<Value>,
    /// Replaces the set; a name sent as null keeps its stored value; `{}` (or null) removes all.
    #[serde(default)]
    #[schema(schema_with = crate::doc::headers_patch)]
    pub headers: Patch<Value>,
}

// Custom header values are secrets: what a body prints shows their names only.

/// The names of a `headers` member, without the values.
fn header_names(headers: &Value) -> Vec<&str> {
    headers.as_object().map(|h| h.keys().map(String::as_str).collect()).unwrap_or_default()
}

impl std::fmt::Debug for NewWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewWebhook")
            .field("url", &self.url)
            .field("events", &self.events)
            .field("filters", &self.filters)
            .field("header_names", &self.headers.as_ref().map(header_names))
            .finish()
    }
}

impl std::fmt::Debug for WebhookPatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers = match &self.headers {
            Patch::Absent => "absent".to_owned(),
            Patch::Null => "null".to_owned(),
            Patch::Set(v) => format!("{:?}", header_names(v)),
        };
        f.debug_struct("WebhookPatch")
            .field("url", &self.url)
            .field("events", &self.events)
            .field("filters", &self.filters)
            .field("header_names", &headers)
            .finish()
    }
}

/// The URL as it is stored: parsed and written back (`HTTPS://Hooks.example.com` becomes
/// `https://hooks.example.com/`), so what is shown is what deliveries go to.
fn check_url(service: &WebhookService, url: &str, errors: &mut FieldErrors) -> String {
    let url = url.trim();
    if url.is_empty() {
        errors.add("url", "The url field is required.");
    } else if url.len() > MAX_URL_LEN {
        errors.add("url", format!("The url may not be longer than {MAX_URL_LEN} characters."));
    } else {
        match guard::check_url(url, &service.config.policy) {
            Ok(parsed) => return parsed.to_string(),
            Err(refusal) => errors.add("url", format!("The url is refused: {refusal}.")),
        }
    }
    String::new()
}

/// Two spellings of one URL are one URL.
fn same_url(a: &str, b: &str) -> bool {
    let canonical = |u: &str| reqwest::Url::parse(u.trim()).map_or_else(|_| u.trim().to_owned(), |u| u.to_string());
    canonical(a) == canonical(b)
}

fn check_events(events: &[String], errors: &mut FieldErrors) -> Vec<String> {
    if events.is_empty() {
        errors.add("events", "Subscribe to at least one event.");
    }
    let mut unique: Vec<String> = Vec::with_capacity(events.len());
    for (i, event) in events.iter().enumerate() {
        if catalogue::find(event).is_none() {
            errors.add(
                format!("events[{i}]"),
                format!("\"{event}\" is not an event of the catalogue (GET /webhooks/events)."),
            );
        } else if !unique.contains(event) {
            unique.push(event.clone());
        }
    }
    unique
}

fn check_filters(raw: &Value, events: &[String], errors: &mut FieldErrors) -> Option<Filters> {
    let Value::Object(map) = raw else {
        errors.add("filters", "filters must be an object {stages, labels, channels}.");
        return None;
    };
    let mut filters = Filters::default();
    for (key, value) in map {
        let list = match key.as_str() {
            "stages" => &mut filters.stages,
            "labels" => &mut filters.labels,
            "channels" => &mut filters.channels,
            _ => {
                errors.add(format!("filters.{key}"), "Filters are stages, labels and channels only.");
                continue;
            }
        };
        let items = match value {
            Value::Null => continue,
            Value::Array(items) => items,
            _ => {
                errors.add(format!("filters.{key}"), format!("filters.{key} must be a list of strings."));
                continue;
            }
        };
        for item in items {
            match item.as_str().map(str::trim) {
                Some(text) if !text.is_empty() && text.len() <= 191 => {
                    if !list.iter().any(|l| l == text) {
                        list.push(text.to_owned());
                    }
                }
                _ => errors.add(format!("filters.{key}"), format!("filters.{key} must hold non-empty names.")),
            }
        }
    }
    for stage in &filters.stages {
        if !LEAD_STAGES.contains(&stage.as_str()) {
            errors.add("filters.stages", format!("\"{stage}\" is not a lead stage ({}).", LEAD_STAGES.join(", ")));
        }
    }
    if !events.iter().any(|e| e.starts_with("lead.")) {
        errors.add("filters", "Filters apply to lead events only: subscribe to at least one lead event.");
    }
    Some(filters)
}

impl WebhookService {
    pub(crate) async fn row(&self, conn: &mut store::Conn, tenant: TenantId, id: WebhookId) -> Result<Row, Error> {
        webhooks::table
            .filter(webhooks::tenant_id.eq(tenant.0))
            .filter(webhooks::id.eq(id.0))
            .select(Row::as_select())
            .first(conn)
            .await
            .optional()?
            .ok_or_else(|| Error::not_found("Webhook"))
    }

    /// `POST /webhooks`: the answer carries the signing secret, this once.
    pub async fn create(&self, caller: &Caller, input: NewWebhook) -> Result<WithSecret, Error> {
        caller.require(Permission::WEBHOOKS_MANAGE)?;
        let mut errors = FieldErrors::new();
        let url = check_url(self, input.url.as_deref().unwrap_or_default(), &mut errors);
        let events = match &input.events {
            Some(events) => check_events(events, &mut errors),
            None => {
                errors.add("events", "The events field is required.");
                Vec::new()
            }
        };
        let filters = match input.filters {
            None | Some(Value::Null) => None,
            Some(raw) => check_filters(&raw, &events, &mut errors),
        };
        let requested = match &input.headers {
            None | Some(Value::Null) => headers::Requested::new(),
            Some(raw) => headers::parse(raw, false, &mut errors),
        };
        let sealed = headers::apply(&self.keyring, &[], requested, &mut errors)?;
        errors.finish()?;
        let secret = signing::new_secret().map_err(|_| Error::internal("no randomness for a secret"))?;
        let now = self.clock.now();
        let mut conn = self.conn(caller.tenant_id).await?;
        let row: Row = diesel::insert_into(webhooks::table)
            .values((
                webhooks::tenant_id.eq(caller.tenant_id.0),
                webhooks::url.eq(&url),
                webhooks::events.eq(&events),
                webhooks::filters.eq(filters.map(|f| serde_json::to_value(f).unwrap_or_default())),
                webhooks::headers.eq(serde_json::to_value(&sealed).map_err(Error::internal)?),
                webhooks::secret.eq(self.keyring.seal(crate::secrets::SECRET, &secret)?),
                webhooks::created_at.eq(now),
                webhooks::updated_at.eq(now),
                webhooks::url_changed_at.eq(now),
            ))
            .returning(Row::as_returning())
            .get_result(&mut conn)
            .await?;
        Ok(WithSecret { webhook: row.view(), secret })
    }

    pub async fn get(&self, caller: &Caller, id: WebhookId) -> Result<Webhook, Error> {
        caller.require(Permission::WEBHOOKS_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        Ok(self.row(&mut conn, caller.tenant_id, id).await?.view())
    }

    /// The tenant's receivers, oldest first.
    pub async fn list(&self, caller: &Caller, page: PageRequest) -> Result<Page<Webhook>, Error> {
        caller.require(Permission::WEBHOOKS_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let mine = webhooks::table.filter(webhooks::tenant_id.eq(caller.tenant_id.0));
        let total: i64 = mine.count().get_result(&mut conn).await?;
        let rows: Vec<Row> = mine
            .order(webhooks::id)
            .limit(page.per_page)
            .offset(page.offset())
            .select(Row::as_select())
            .load(&mut conn)
            .await?;
        Ok(Page::new(rows.iter().map(Row::view).collect(), page, total))
    }

    /// `PATCH /webhooks/{webhook}`. A new URL must be https (an http endpoint from before
    /// 26 September 2026 keeps its URL only while it is not edited).
    pub async fn update(&self, caller: &Caller, id: WebhookId, patch: WebhookPatch) -> Result<Webhook, Error> {
        caller.require(Permission::WEBHOOKS_MANAGE)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let row = self.row(&mut conn, caller.tenant_id, id).await?;
        let mut errors = FieldErrors::new();
        // the same URL sent again is not an edit (an http endpoint from before the cutoff keeps it)
        let new_url = patch.url.filter(|u| !same_url(u, &row.url)).map(|u| check_url(self, &u, &mut errors));
        let events = match &patch.events {
            Some(events) => check_events(events, &mut errors),
            None => row.events.clone(),
        };
        let filters_kept = patch.filters.is_absent();
        let filters = match patch.filters {
            Patch::Absent => row.filters.clone().and_then(|f| serde_json::from_value::<Filters>(f).ok()),
            Patch::Null => None,
            Patch::Set(raw) => check_filters(&raw, &events, &mut errors),
        };
        if patch.events.is_some() && filters_kept && filters.is_some() && !events.iter().any(|e| e.starts_with("lead."))
        {
            errors.add("filters", "Filters apply to lead events only: remove them or keep a lead event.");
        }
        let sealed = match patch.headers {
            Patch::Absent => row.sealed_headers(),
            Patch::Null => Vec::new(),
            Patch::Set(raw) => {
                let requested = headers::parse(&raw, true, &mut errors);
                headers::apply(&self.keyring, &row.sealed_headers(), requested, &mut errors)?
            }
        };
        errors.finish()?;
        let now = self.clock.now();
        let updated: Row = diesel::update(webhooks::table.filter(webhooks::id.eq(row.id)))
            .set((
                webhooks::url.eq(new_url.as_deref().unwrap_or(&row.url)),
                webhooks::url_changed_at.eq(if new_url.is_some() { now } else { row.url_changed_at }),
                webhooks::events.eq(&events),
                webhooks::filters.eq(filters.map(|f| serde_json::to_value(f).unwrap_or_default())),
                webhooks::headers.eq(serde_json::to_value(&sealed).map_err(Error::internal)?),
                webhooks::updated_at.eq(now),
            ))
            .returning(Row::as_returning())
            .get_result(&mut conn)
            .await?;
        Ok(updated.view())
    }

    /// Deletes the receiver and its delivery log; deliveries in flight are dropped.
    pub async fn delete(&self, caller: &Caller, id: WebhookId) -> Result<Webhook, Error> {
        caller.require(Permission::WEBHOOKS_MANAGE)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let row: Row = diesel::delete(
            webhooks::table.filter(webhooks::tenant_id.eq(caller.tenant_id.0)).filter(webhooks::id.eq(id.0)),
        )
        .returning(Row::as_returning())
        .get_result(&mut conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Webhook"))?;
        Ok(row.view())
    }

    /// A new secret, shown once. Every attempt reads the secret when it signs, so the old one
    /// signs nothing from now on.
    pub async fn rotate_secret(&self, caller: &Caller, id: WebhookId) -> Result<WithSecret, Error> {
        caller.require(Permission::WEBHOOKS_MANAGE)?;
        let secret = signing::new_secret().map_err(|_| Error::internal("no randomness for a secret"))?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let row: Row = diesel::update(
            webhooks::table.filter(webhooks::tenant_id.eq(caller.tenant_id.0)).filter(webhooks::id.eq(id.0)),
        )
        .set((
            webhooks::secret.eq(self.keyring.seal(crate::secrets::SECRET, &secret)?),
            webhooks::updated_at.eq(self.clock.now()),
        ))
        .returning(Row::as_returning())
        .get_result(&mut conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Webhook"))?;
        Ok(WithSecret { webhook: row.view(), secret })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printing_a_body_shows_header_names_not_values() {
        let headers = serde_json::json!({"X-Token": "s3cret-value"});
        let new = NewWebhook { headers: Some(headers.clone()), ..NewWebhook::default() };
        let patch = WebhookPatch { headers: Patch::Set(headers), ..WebhookPatch::default() };
        for printed in [format!("{new:?}"), format!("{patch:?}")] {
            assert!(printed.contains("X-Token") && !printed.contains("s3cret-value"), "{printed}");
        }
    }
}
