//! Chat groups (contract: Chat group, Chat group status, Chat groups): a business number's
//! groups of up to eight (the business included). The provider confirms a creation later, so a
//! group starts `creating`; what customers do in it (join, leave, ask to join, write) arrives
//! on the chat webhook and is applied by [`updates`]. Every change that matters to others is a
//! `group.*` event carrying the group summary.

pub mod members;
pub mod talk;
pub mod updates;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::error::FieldErrors;
use kernel::{Caller, Error, Page, PageRequest, Permission, TenantId};
use providers::chat_groups::{GroupError, JOIN_APPROVAL_MODES, NewGroup};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use store::jobs::Enqueue;
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use crate::MessagingService;
use crate::chat::accounts;
use crate::schema::{chat_groups as g, chat_templates};

pub use members::{Invited, JoinRequestView, JoinRequestsAnswer, Removed};
pub use talk::{GroupMessage, GroupMessageSend, GroupPinRequest};

/// Subject length (contract: Limits, Chat groups).
pub const MAX_SUBJECT: usize = 128;
pub const MAX_DESCRIPTION: usize = 2_048;
/// People in a group, the business included.
pub const MAX_PARTICIPANTS: i32 = 8;
/// Initial invitees of a creation, and recipients of one invitation.
pub const MAX_INVITEES: usize = 7;
/// The list's page (contract: Limits, chat group list default 20).
pub const PER_PAGE: i64 = 20;
/// The statuses of a group.
pub const STATUSES: &[&str] = &["creating", "active", "suspended", "deleted", "failed"];

/// A group as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Group {
    /// The local id.
    pub id: i64,
    pub subject: String,
    pub description: Option<String>,
    /// `auto_approve` or `approval_required`.
    pub join_approval_mode: String,
    /// `creating`, `active`, `suspended`, `deleted` or `failed`.
    pub status: String,
    /// The provider's group id; null until the provider confirms the creation.
    pub provider_group_id: Option<String>,
    /// The business phone number's provider id that owns the group.
    pub sender_id: String,
    /// The link customers join by; null until the group is active.
    pub invite_link: Option<String>,
    /// People in the group, the business included (at most eight).
    pub participants_count: i32,
    /// The stored template invitations go out with.
    pub invite_template: Option<String>,
    /// The first invitations (`invitees` of the creation) and what became of each:
    /// `{phone, status: pending|sent|failed, error}`.
    #[schema(value_type = Vec<Object>)]
    pub invites: Value,
    /// Why the creation failed, in the provider's words.
    pub failure: Option<String>,
    /// When a participant last wrote: free-form messages need one within 24 hours.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_participant_message_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub deleted_at: Option<OffsetDateTime>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = g, check_for_backend(diesel::pg::Pg))]
pub(crate) struct Row {
    pub id: i64,
    pub tenant_id: i64,
    pub account_id: i64,
    pub phone_number_id: String,
    pub subject: String,
    pub description: Option<String>,
    pub join_approval_mode: String,
    pub status: String,
    pub provider_group_id: Option<String>,
    pub invite_link: Option<String>,
    pub invite_template: Option<String>,
    pub invitees: Value,
    pub invites: Value,
    pub failure: Option<String>,
    pub participants_count: i32,
    pub last_participant_message_at: Option<OffsetDateTime>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
    pub deleted_at: Option<OffsetDateTime>,
}

impl From<Row> for Group {
    fn from(row: Row) -> Self {
        Group {
            id: row.id,
            subject: row.subject,
            description: row.description,
            join_approval_mode: row.join_approval_mode,
            status: row.status,
            provider_group_id: row.provider_group_id,
            sender_id: row.phone_number_id,
            invite_link: row.invite_link,
            participants_count: row.participants_count + 1,
            invite_template: row.invite_template,
            invites: row.invites,
            failure: row.failure,
            last_participant_message_at: row.last_participant_message_at,
            created_at: row.created_at,
            updated_at: row.updated_at,
            deleted_at: row.deleted_at,
        }
    }
}

impl Row {
    /// The group summary every `group.*` event carries (docs/api.md, Events).
    pub(crate) fn summary(&self) -> Value {
        json!({ "group": {
            "id": self.id,
            "subject": self.subject,
            "description": self.description,
            "status": self.status,
            "participants_count": self.participants_count + 1,
            "invite_link": self.invite_link,
            "created_at": rfc3339(self.created_at),
        }})
    }

    /// The provider's group id of a group that is live on the provider (active or
    /// suspended); 409 otherwise.
    pub(crate) fn live(&self) -> Result<&str, Error> {
        match (self.status.as_str(), &self.provider_group_id) {
            ("active" | "suspended", Some(id)) => Ok(id),
            ("creating", _) => Err(Error::conflict("The group is still being created: try again once it is active.")),
            (status, _) => Err(Error::conflict(format!("The group is {status}."))),
        }
    }
}

/// `POST /chat/groups`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct GroupCreate {
    /// The business number that owns the group: its phone number id or the number; left out,
    /// the workspace default.
    #[schema(max_length = 64)]
    pub sender_id: Option<String>,
    /// Required, at most 128 characters.
    #[schema(max_length = 128, required = true)]
    pub subject: Option<String>,
    /// At most 2,048 characters.
    #[schema(max_length = 2048)]
    pub description: Option<String>,
    /// `auto_approve` (default) or `approval_required`.
    #[schema(value_type = Option<JoinApprovalMode>)]
    pub join_approval_mode: Option<String>,
    /// A stored template's name (`GET /chat/templates`) the invitations go out with; without
    /// one they go as text, which reaches only customers whose 24-hour window is open.
    #[schema(max_length = 191)]
    pub invite_template: Option<String>,
    /// At most seven numbers, invited once the provider confirms the group.
    #[schema(max_items = 7)]
    pub invitees: Option<Vec<String>>,
}

/// How a group admits people (schema only: the body reads it as text, to answer a bad value
/// with the field's own message).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum JoinApprovalMode {
    AutoApprove,
    ApprovalRequired,
}

/// `PATCH /chat/groups/{id}`: the subject and/or the description.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct ChatGroupPatch {
    /// At most 128 characters; not blank.
    #[schema(max_length = 128)]
    pub subject: Option<String>,
    /// At most 2,048 characters; an empty string clears it.
    #[schema(max_length = 2048)]
    pub description: Option<String>,
}

/// `GET /chat/groups` filters.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GroupFilter {
    /// One status, or `all`; left out, every status but `deleted`.
    #[param(max_length = 20)]
    pub status: Option<String>,
    /// Only the groups of this business number (its phone number id).
    #[param(max_length = 64)]
    pub sender_id: Option<String>,
}

/// Trimmed text, `None` when blank; an error under `field` past `max` characters.
pub(crate) fn text(errors: &mut FieldErrors, field: &str, value: Option<&str>, max: usize) -> Option<String> {
    let value = value.map(str::trim).filter(|v| !v.is_empty())?;
    if value.chars().count() > max {
        errors.add(field, format!("The {field} may not be greater than {max} characters."));
    }
    Some(value.to_owned())
}

/// Numbers read under the caller's calling code, each checked under `field[i]`; 1 to `max` of
/// them when `required`, at most `max` otherwise.
pub(crate) fn numbers(
    errors: &mut FieldErrors,
    caller: &Caller,
    field: &str,
    given: &[String],
    required: bool,
    max: usize,
) -> Vec<String> {
    if (required && given.is_empty()) || given.len() > max {
        let least = if required { 1 } else { 0 };
        errors.add(field, format!("The {field} must have {least} to {max} entries."));
        return Vec::new();
    }
    let mut numbers: Vec<String> = Vec::new();
    for (i, raw) in given.iter().enumerate() {
        match crate::recipients::normalize(raw, &caller.calling_code) {
            Some(number) if !numbers.contains(&number) => numbers.push(number),
            Some(_) => {}
            None => errors.add(format!("{field}.{i}"), format!("The {field}.{i} is not a valid phone number.")),
        }
    }
    numbers
}

pub(crate) fn group_error(error: GroupError) -> Error {
    match error {
        GroupError::Refused { reason } => {
            Error::new(kernel::ErrorKind::ProviderFailure, format!("The provider refused: {reason}"))
        }
        GroupError::Failed(e) => {
            Error::new(kernel::ErrorKind::ProviderFailure, format!("The provider could not be reached: {e}"))
        }
    }
}

/// Sends a sandbox creation's announced outcome at its time (the Cloud API reports it by
/// webhook instead).
#[derive(Debug, Serialize, Deserialize)]
pub struct ConfirmGroup {
    pub account_id: i64,
    pub phone_number_id: String,
    pub request_id: String,
    /// The provider's group id and invite link, or why the creation failed.
    pub outcome: Result<(String, Option<String>), String>,
}

impl store::jobs::Job for ConfirmGroup {
    const NAME: &'static str = "chat.group_confirm";
    type State = MessagingService;

    async fn run(
        self,
        service: std::sync::Arc<MessagingService>,
        ctx: store::jobs::JobContext,
    ) -> Result<(), store::jobs::JobError> {
        use providers::chat_groups::GroupUpdate;
        let update = match self.outcome {
            Ok((group_id, invite_link)) => GroupUpdate::Created { request_id: self.request_id, group_id, invite_link },
            Err(reason) => GroupUpdate::CreateFailed { request_id: self.request_id, reason },
        };
        let tenant = ctx.tenant()?;
        service.apply_group_update(tenant, self.account_id, &self.phone_number_id, &update).await?;
        Ok(())
    }
}

impl MessagingService {
    /// `POST /chat/groups`: the local group in `creating`, asked of the provider at once.
    pub async fn create_group(&self, caller: &Caller, body: GroupCreate) -> Result<Group, Error> {
        caller.require_issuer()?;
        caller.require(Permission::GROUPS_MANAGE)?;
        let mut errors = FieldErrors::new();
        let subject = text(&mut errors, "subject", body.subject.as_deref(), MAX_SUBJECT);
        if subject.is_none() {
            errors.add("subject", "The subject is required.");
        }
        let description = text(&mut errors, "description", body.description.as_deref(), MAX_DESCRIPTION);
        let mode = match body.join_approval_mode.as_deref().map(str::trim) {
            None | Some("") => "auto_approve",
            Some(mode) => JOIN_APPROVAL_MODES.iter().copied().find(|m| *m == mode).unwrap_or_else(|| {
                errors.add("join_approval_mode", "The join_approval_mode must be auto_approve or approval_required.");
                "auto_approve"
            }),
        };
        let template = text(&mut errors, "invite_template", body.invite_template.as_deref(), 191);
        let invitees =
            numbers(&mut errors, caller, "invitees", body.invitees.as_deref().unwrap_or_default(), false, MAX_INVITEES);
        errors.finish()?;
        let subject = subject.expect("checked");
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let sender = accounts::sender(&mut conn, tenant, &caller.calling_code, body.sender_id.as_deref()).await?;
        if let Some(name) = &template {
            stored_template(&mut conn, tenant, sender.account_id, name, None).await.map_err(|_| {
                Error::field(
                    "invite_template",
                    "The invite_template is not a stored template of this number's business account (GET /chat/templates).",
                )
            })?;
        }
        let now = self.clock.now();
        let invites: Vec<Value> =
            invitees.iter().map(|p| json!({ "phone": p, "status": "pending", "error": null })).collect();
        let row: Row = diesel::insert_into(g::table)
            .values((
                g::tenant_id.eq(tenant.0),
                g::account_id.eq(sender.account_id),
                g::phone_number_id.eq(&sender.phone_number_id),
                g::subject.eq(&subject),
                g::description.eq(&description),
                g::join_approval_mode.eq(mode),
                g::status.eq("creating"),
                g::invite_template.eq(&template),
                g::invitees.eq(json!(invitees)),
                g::invites.eq(json!(invites)),
                g::created_at.eq(now),
                g::updated_at.eq(now),
            ))
            .returning(Row::as_returning())
            .get_result(&mut conn)
            .await?;
        drop(conn);
        let gateway = self.gateways.chat(&sender.channel)?;
        let asked = gateway
            .create_group(NewGroup {
                phone_number_id: &sender.phone_number_id,
                subject: &subject,
                description: description.as_deref(),
                join_approval_mode: mode,
            })
            .await;
        let mut conn = self.conn(tenant).await?;
        let now = self.clock.now();
        let row = match asked {
            Ok(requested) => {
                if let Some((after, update)) = &requested.scheduled {
                    use providers::chat_groups::GroupUpdate;
                    let outcome = match update {
                        GroupUpdate::Created { group_id, invite_link, .. } => {
                            Ok((group_id.clone(), invite_link.clone()))
                        }
                        GroupUpdate::CreateFailed { reason, .. } => Err(reason.clone()),
                        _ => Err("the provider announced no outcome".to_owned()),
                    };
                    let job = ConfirmGroup {
                        account_id: sender.account_id,
                        phone_number_id: sender.phone_number_id.clone(),
                        request_id: requested.request_id.clone(),
                        outcome,
                    };
                    let at = now + time::Duration::try_from(*after).map_err(Error::internal)?;
                    let options = Enqueue { tenant_id: Some(tenant), run_at: Some(at), ..Default::default() };
                    store::jobs::enqueue(&mut conn, &job, options).await?;
                }
                diesel::update(g::table.filter(g::tenant_id.eq(tenant.0)).find(row.id))
                    .set(g::request_id.eq(&requested.request_id))
                    .returning(Row::as_returning())
                    .get_result(&mut conn)
                    .await?
            }
            Err(error) => {
                let why = group_error(error).message.clone();
                updates::fail_creation(&mut conn, &row, &why, now).await?
            }
        };
        Ok(row.into())
    }

    /// `GET /chat/groups`: newest first.
    pub async fn groups(&self, caller: &Caller, filter: &GroupFilter, page: PageRequest) -> Result<Page<Group>, Error> {
        caller.require_issuer()?;
        caller.require(Permission::GROUPS_VIEW)?;
        if filter.status.as_deref().is_some_and(|s| s.chars().count() > 20) {
            return Err(Error::field("status", "The status may not be greater than 20 characters."));
        }
        let status = match filter.status.as_deref().map(str::trim) {
            None | Some("") => None,
            Some("all") => Some(None),
            Some(s) => match STATUSES.iter().find(|x| **x == s) {
                Some(s) => Some(Some(*s)),
                None => {
                    return Err(Error::field(
                        "status",
                        format!("The status must be all or one of {}.", STATUSES.join(", ")),
                    ));
                }
            },
        };
        let sender = filter.sender_id.as_deref().map(str::trim).filter(|s| !s.is_empty());
        if sender.is_some_and(|s| s.chars().count() > 64) {
            return Err(Error::field("sender_id", "The sender_id may not be greater than 64 characters."));
        }
        let query = || {
            let mut query = g::table.filter(g::tenant_id.eq(caller.tenant_id.0)).into_boxed();
            query = match status {
                None => query.filter(g::status.ne("deleted")),
                Some(None) => query,
                Some(Some(s)) => query.filter(g::status.eq(s)),
            };
            if let Some(sender) = sender {
                query = query.filter(g::phone_number_id.eq(sender.to_owned()));
            }
            query
        };
        let mut conn = self.conn(caller.tenant_id).await?;
        let total: i64 = query().count().get_result(&mut conn).await?;
        let rows: Vec<Row> = query()
            .order(g::id.desc())
            .limit(page.per_page)
            .offset(page.offset())
            .select(Row::as_select())
            .load(&mut conn)
            .await?;
        Ok(Page::new(rows.into_iter().map(Group::from).collect(), page, total))
    }

    /// `GET /chat/groups/{id}`.
    pub async fn group(&self, caller: &Caller, id: i64) -> Result<Group, Error> {
        caller.require_issuer()?;
        caller.require(Permission::GROUPS_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        Ok(row(&mut conn, caller.tenant_id, id).await?.into())
    }

    /// `PATCH /chat/groups/{id}`: the provider first, then the local row (`group.updated`).
    pub async fn update_group(&self, caller: &Caller, id: i64, patch: ChatGroupPatch) -> Result<Group, Error> {
        caller.require_issuer()?;
        caller.require(Permission::GROUPS_MANAGE)?;
        let mut errors = FieldErrors::new();
        let subject = text(&mut errors, "subject", patch.subject.as_deref(), MAX_SUBJECT);
        if patch.subject.is_some() && subject.is_none() {
            errors.add("subject", "The subject may not be blank.");
        }
        let description =
            patch.description.as_deref().map(|d| text(&mut errors, "description", Some(d), MAX_DESCRIPTION));
        errors.finish()?;
        if subject.is_none() && description.is_none() {
            return Err(Error::validation("Send a subject or a description to change."));
        }
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let current = row(&mut conn, tenant, id).await?;
        let group_id = current.live()?.to_owned();
        let gateway = self.group_gateway(&mut conn, &current).await?;
        drop(conn);
        gateway
            .update_group(&group_id, subject.as_deref(), description.as_ref().map(|d| d.as_deref().unwrap_or("")))
            .await
            .map_err(group_error)?;
        let mut conn = self.conn(tenant).await?;
        let update = updates::Settings { subject, description };
        Ok(updates::settings(&mut conn, &current, update, self.clock.now()).await?.into())
    }

    /// `DELETE /chat/groups/{id}`: deleted on the provider, then `deleted` here
    /// (`group.deleted`); a failed group is deleted here only; a deleted one answers as it is.
    pub async fn delete_group(&self, caller: &Caller, id: i64) -> Result<Group, Error> {
        caller.require_issuer()?;
        caller.require(Permission::GROUPS_MANAGE)?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let current = row(&mut conn, tenant, id).await?;
        match current.status.as_str() {
            "deleted" => return Ok(current.into()),
            "failed" => {}
            _ => {
                let group_id = current.live()?.to_owned();
                let gateway = self.group_gateway(&mut conn, &current).await?;
                drop(conn);
                gateway.delete_group(&group_id).await.map_err(group_error)?;
                conn = self.conn(tenant).await?;
            }
        }
        Ok(updates::deleted(&mut conn, &current, self.clock.now()).await?.into())
    }

    /// The chat provider of a group's business account.
    pub(crate) async fn group_gateway(
        &self,
        conn: &mut store::Conn,
        group: &Row,
    ) -> Result<std::sync::Arc<dyn providers::ChatGateway>, Error> {
        let channel = accounts::channel_of(conn, TenantId(group.tenant_id), group.account_id).await?;
        self.gateways.chat(&channel)
    }
}

fn rfc3339(at: OffsetDateTime) -> String {
    at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

/// A group of the tenant; 404 for another tenant's.
pub(crate) async fn row(conn: &mut store::Conn, tenant: TenantId, id: i64) -> Result<Row, Error> {
    g::table
        .filter(g::tenant_id.eq(tenant.0))
        .find(id)
        .select(Row::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Chat group"))
}

/// A stored template of the account by name (and language, when given): `(name, language,
/// sendable)`.
pub(crate) async fn stored_template(
    conn: &mut store::Conn,
    tenant: TenantId,
    account: i64,
    name: &str,
    language: Option<&str>,
) -> Result<(String, String, bool), Error> {
    let mut query = chat_templates::table
        .filter(chat_templates::tenant_id.eq(tenant.0))
        .filter(chat_templates::account_id.eq(account))
        .filter(chat_templates::name.eq(name))
        .into_boxed();
    if let Some(language) = language {
        query = query.filter(chat_templates::language.eq(language.to_owned()));
    }
    let found: Option<(String, String, String, Option<String>)> = query
        .order(chat_templates::id)
        .select((chat_templates::name, chat_templates::language, chat_templates::status, chat_templates::chat_status))
        .first(conn)
        .await
        .optional()?;
    let (name, language, status, review) = found.ok_or_else(|| Error::not_found("Template"))?;
    Ok((name, language, status == "active" && review.as_deref() == Some("approved")))
}
