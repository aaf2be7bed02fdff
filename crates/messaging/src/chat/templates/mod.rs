//! Message templates (contract: Message template, Template review state, Chat templates): one
//! name + one language + one business account, submitted to the provider for review. Reads need
//! `communications.templates.view`, writes `communications.templates.manage`.

pub mod body;
pub mod review;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{Caller, Error, Permission, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use time::OffsetDateTime;

use crate::schema::{chat_accounts, chat_templates};

pub use body::{TemplateButton, TemplateCreate, TemplatePatch};
pub use review::{Deployed, PollTemplate, SubmitTemplate, SyncError, SyncReport};

/// The provider's review state (contract: Template review state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChatStatus {
    /// Taken by the provider, under review.
    InReview,
    /// The provider refused it; fix it and submit again.
    Rejected,
    /// Not yet with the provider (it could not be reached): queued and retried.
    Pending,
    Approved,
    /// A quality action of the provider.
    Paused,
    /// A quality action of the provider.
    Disabled,
}

impl ChatStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InReview => "in_review",
            Self::Rejected => "rejected",
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Paused => "paused",
            Self::Disabled => "disabled",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        [Self::InReview, Self::Rejected, Self::Pending, Self::Approved, Self::Paused, Self::Disabled]
            .into_iter()
            .find(|s| s.as_str() == raw)
    }

    /// The provider's word (`APPROVED`, `PENDING`, `IN_APPEAL`...) in the contract's states.
    pub fn of_provider(word: &str) -> Option<Self> {
        Some(match word.to_ascii_uppercase().as_str() {
            "APPROVED" => Self::Approved,
            "PENDING" | "IN_APPEAL" | "PENDING_REVIEW" | "IN_REVIEW" => Self::InReview,
            "REJECTED" => Self::Rejected,
            "PAUSED" | "FLAGGED" => Self::Paused,
            "DISABLED" | "LIMIT_EXCEEDED" => Self::Disabled,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = chat_templates)]
pub struct Row {
    pub id: i64,
    pub tenant_id: i64,
    pub account_id: i64,
    pub name: String,
    pub language: String,
    pub category: String,
    pub display_name: Option<String>,
    pub components: Value,
    pub status: String,
    pub chat_status: Option<String>,
    pub rejection_reason: Option<String>,
    pub chat_template_id: Option<String>,
    pub submitted: bool,
    pub queued: bool,
    pub submission_message: Option<String>,
    pub pending_edit: bool,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
}

impl Row {
    fn components(&self) -> Vec<Value> {
        self.components.as_array().cloned().unwrap_or_default()
    }

    /// Under review at the provider (an edit is held locally meanwhile).
    fn in_review(&self) -> bool {
        self.chat_status.as_deref() == Some("in_review") || self.queued
    }
}

/// `submission` of a template.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Submission {
    /// The provider has it (under review, or judged).
    pub submitted: bool,
    /// Waiting to reach the provider: retried automatically.
    pub queued: bool,
    pub message: Option<String>,
}

/// A sibling of a template on another business account (`deployments[]`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Deployment {
    /// The sibling template's id.
    pub id: i64,
    pub waba_id: String,
    pub chat_status: Option<String>,
}

/// A template as the API shows it (contract: Message template).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Template {
    pub id: i64,
    pub name: String,
    pub language: String,
    /// `utility`, `marketing` or `authentication`.
    pub category: String,
    /// The local row: `active`, or `archived` once deleted from the provider.
    pub status: String,
    /// The provider's review state; null for a draft never submitted.
    pub chat_status: Option<String>,
    pub approved: bool,
    /// Active and approved: a send may use it.
    pub sendable: bool,
    pub rejection_reason: Option<String>,
    /// The business account's WABA id.
    pub chat_business_account_id: String,
    /// The provider's id of the template.
    pub chat_template_id: Option<String>,
    /// The placeholders of its header and body, in order.
    pub variables: Vec<String>,
    #[schema(value_type = Vec<Object>)]
    pub components: Vec<Value>,
    pub deployments: Vec<Deployment>,
    pub submission: Submission,
    pub display_name: Option<String>,
    /// An edit saved while a review was ongoing, sent on the next submit.
    pub pending_edit: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl Template {
    fn new(row: Row, waba_id: String, deployments: Vec<Deployment>) -> Self {
        let approved = row.chat_status.as_deref() == Some("approved");
        let components = row.components();
        Self {
            id: row.id,
            variables: body::variables(&components),
            components,
            sendable: approved && row.status == "active",
            approved,
            name: row.name,
            language: row.language,
            category: row.category,
            status: row.status,
            chat_status: row.chat_status,
            rejection_reason: row.rejection_reason,
            chat_business_account_id: waba_id,
            chat_template_id: row.chat_template_id,
            deployments,
            submission: Submission { submitted: row.submitted, queued: row.queued, message: row.submission_message },
            display_name: row.display_name,
            pending_edit: row.pending_edit,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// Filters of `GET /chat/templates`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TemplateFilter {
    /// Only templates changed at or after this time (ISO 8601 with an offset or `Z`).
    #[param(schema_with = updated_since)]
    pub updated_since: Option<String>,
}

fn updated_since() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .max_length(Some(100))
        .pattern(Some(kernel::schema::trimmed(&kernel::schema::date_time())))
        .description(Some("Only templates changed at or after this time (ISO 8601 with an offset or `Z`)."))
        .into()
}

/// Rows with their account's WABA id, shaped with their deployments.
async fn shape(conn: &mut store::Conn, tenant: TenantId, rows: Vec<(Row, String)>) -> Result<Vec<Template>, Error> {
    let names: Vec<String> = rows.iter().map(|(r, _)| r.name.clone()).collect();
    let siblings: Vec<(i64, String, String, Option<String>, String)> = chat_templates::table
        .inner_join(chat_accounts::table)
        .filter(chat_templates::tenant_id.eq(tenant.0))
        .filter(chat_templates::name.eq_any(names))
        .select((
            chat_templates::id,
            chat_templates::name,
            chat_templates::language,
            chat_templates::chat_status,
            chat_accounts::waba_id,
        ))
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(row, waba)| {
            let deployments = siblings
                .iter()
                .filter(|(id, name, language, _, _)| *id != row.id && *name == row.name && *language == row.language)
                .map(|(id, _, _, status, waba)| Deployment {
                    id: *id,
                    waba_id: waba.clone(),
                    chat_status: status.clone(),
                })
                .collect();
            Template::new(row, waba, deployments)
        })
        .collect())
}

/// A template of `tenant` with its account's WABA id.
pub(crate) async fn row(conn: &mut store::Conn, tenant: TenantId, id: i64) -> Result<(Row, String), Error> {
    chat_templates::table
        .inner_join(chat_accounts::table)
        .filter(chat_templates::tenant_id.eq(tenant.0))
        .filter(chat_templates::id.eq(id))
        .select((Row::as_select(), chat_accounts::waba_id))
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Template"))
}

pub(crate) async fn read(conn: &mut store::Conn, tenant: TenantId, id: i64) -> Result<Template, Error> {
    let found = row(conn, tenant, id).await?;
    let mut shaped = shape(conn, tenant, vec![found]).await?;
    shaped.pop().ok_or_else(|| Error::not_found("Template"))
}

/// `template.status_changed` (contract: Payload shapes) when the review state moved.
pub(crate) async fn status_changed(
    conn: &mut store::Conn,
    before: &Row,
    after: &Row,
    waba_id: &str,
    now: OffsetDateTime,
) -> Result<(), Error> {
    if before.chat_status == after.chat_status {
        return Ok(());
    }
    let payload = json!({
        "template_id": after.id,
        "name": after.name,
        "language": after.language,
        "category": after.category,
        "chat_business_account_id": waba_id,
        "chat_template_id": after.chat_template_id,
        "previous_status": before.chat_status,
        "chat_status": after.chat_status,
        "rejection_reason": after.rejection_reason,
    });
    store::outbox::emit(conn, TenantId(after.tenant_id), "template.status_changed", payload, now).await?;
    Ok(())
}

impl crate::MessagingService {
    /// `GET /chat/templates`: by name then language, `updated_since` to read only changes.
    pub async fn templates(&self, caller: &Caller, filter: &TemplateFilter) -> Result<Vec<Template>, Error> {
        caller.require_issuer()?;
        caller.require(Permission::TEMPLATES_VIEW)?;
        if filter.updated_since.as_deref().is_some_and(|s| s.chars().count() > 100) {
            return Err(Error::field("updated_since", "The updated_since may not be greater than 100 characters."));
        }
        let since = crate::send::parse_schedule(filter.updated_since.as_deref()).map_err(|_| {
            Error::field("updated_since", "The updated_since must be an ISO 8601 time with an offset or Z.")
        })?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let mut query = chat_templates::table
            .inner_join(chat_accounts::table)
            .filter(chat_templates::tenant_id.eq(tenant.0))
            .into_boxed();
        if let Some(since) = since {
            query = query.filter(chat_templates::updated_at.ge(since));
        }
        let rows: Vec<(Row, String)> = query
            .order((chat_templates::name, chat_templates::language, chat_accounts::waba_id))
            .select((Row::as_select(), chat_accounts::waba_id))
            .load(&mut conn)
            .await?;
        shape(&mut conn, tenant, rows).await
    }

    /// `GET /chat/templates/{id}`.
    pub async fn template(&self, caller: &Caller, id: i64) -> Result<Template, Error> {
        caller.require_issuer()?;
        caller.require(Permission::TEMPLATES_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        read(&mut conn, caller.tenant_id, id).await
    }
}
