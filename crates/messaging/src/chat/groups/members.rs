//! Who is in a group: invitations (the invite link sent to each person, as text or with a
//! stored template), the invite link, join requests and removals.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::error::FieldErrors;
use kernel::{Caller, Error, Permission, TenantId};
use providers::chat::{ChatContent, OutboundChat};
use providers::{SendOutcome, chat_groups::GroupError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::updates::{self, emit};
use super::{MAX_INVITEES, MAX_PARTICIPANTS, Row, group_error, numbers, row, stored_template};
use crate::MessagingService;
use crate::schema::{chat_group_join_requests as jr, chat_groups as g};

/// Removals of one request (contract: Limits, Chat groups).
pub const MAX_REMOVALS: usize = 8;
/// Join requests answered at once (the provider's batch).
pub const MAX_JOIN_REQUESTS: usize = 100;

/// `POST /chat/groups/{id}/invites`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct InviteRequest {
    /// 1 to 7 numbers, in any common form.
    #[schema(min_items = 1, max_items = 7)]
    pub recipients: Option<Vec<String>>,
    /// A stored template's name to send the invitation with (the group's `invite_template`
    /// when left out); without either, the invitation goes as text.
    #[schema(max_length = 191)]
    pub template: Option<String>,
}

/// One person's invitation.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Invitation {
    /// E.164.
    pub phone: String,
    /// The provider's id of the invitation message.
    pub message_id: Option<String>,
    /// Why it was not sent, in the provider's words.
    pub error: Option<String>,
}

/// The answer of an invitation: who was sent the link and who was not.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Invited {
    pub successes: Vec<Invitation>,
    pub failures: Vec<Invitation>,
}

/// A pending request to join.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JoinRequestView {
    /// The provider's request id (what approve and reject take).
    pub id: String,
    /// E.164.
    pub phone: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

/// `POST /chat/groups/{id}/join-requests/approve` and `/reject`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct JoinRequestsBody {
    /// The provider's request ids (`GET .../join-requests`), 1 to 100.
    #[schema(min_items = 1, max_items = 100)]
    pub join_requests: Option<Vec<String>>,
}

/// One request's outcome.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JoinRequestOutcome {
    pub id: String,
    pub error: Option<String>,
}

/// The answer of approve or reject.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JoinRequestsAnswer {
    pub successes: Vec<JoinRequestOutcome>,
    pub failures: Vec<JoinRequestOutcome>,
}

/// `DELETE /chat/groups/{id}/participants`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct RemoveParticipants {
    /// 1 to 8 participants: their chat ids (digits) or numbers.
    #[schema(min_items = 1, max_items = 8)]
    pub participants: Option<Vec<String>>,
}

/// The answer of a removal.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Removed {
    pub successes: Vec<JoinRequestOutcome>,
    pub failures: Vec<JoinRequestOutcome>,
    pub group: super::Group,
}

/// The invite link of a reset.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InviteLink {
    pub invite_link: String,
}

fn outcome(id: &str, error: Option<String>) -> JoinRequestOutcome {
    JoinRequestOutcome { id: id.to_owned(), error }
}

impl MessagingService {
    /// `POST /chat/groups/{id}/invites`: the invite link to each recipient, one message each.
    pub async fn invite_to_group(&self, caller: &Caller, id: i64, body: InviteRequest) -> Result<Invited, Error> {
        caller.require_issuer()?;
        caller.require(Permission::GROUPS_MANAGE)?;
        let mut errors = FieldErrors::new();
        let given = body.recipients.unwrap_or_default();
        let recipients = numbers(&mut errors, caller, "recipients", &given, true, MAX_INVITEES);
        let template = super::text(&mut errors, "template", body.template.as_deref(), 191);
        errors.finish()?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let group = row(&mut conn, caller.tenant_id, id).await?;
        let template = template.or_else(|| group.invite_template.clone());
        if let Some(name) = &template {
            stored_template(&mut conn, caller.tenant_id, group.account_id, name, None).await.map_err(|_| {
                Error::field("template", "The template is not a stored template of the group's business account.")
            })?;
        }
        drop(conn);
        self.invite(&group, &recipients, template.as_deref()).await
    }

    /// Sends a group's first invitations (its `invitees`), once it is active.
    pub(crate) async fn send_first_invites(&self, tenant: TenantId, id: i64) -> Result<(), Error> {
        let mut conn = self.conn(tenant).await?;
        let group = row(&mut conn, tenant, id).await?;
        drop(conn);
        let pending: Vec<String> = group
            .invites
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["status"] == "pending")
            .filter_map(|i| i["phone"].as_str().map(str::to_owned))
            .collect();
        if pending.is_empty() {
            return Ok(());
        }
        let invited = self.invite(&group, &pending, group.invite_template.as_deref()).await?;
        let results: Vec<Value> = invited
            .successes
            .iter()
            .map(|i| json!({ "phone": i.phone, "status": "sent", "error": null }))
            .chain(invited.failures.iter().map(|i| json!({ "phone": i.phone, "status": "failed", "error": i.error })))
            .collect();
        let mut conn = self.conn(tenant).await?;
        diesel::update(g::table.filter(g::tenant_id.eq(tenant.0)).find(id))
            .set(g::invites.eq(json!(results)))
            .execute(&mut conn)
            .await?;
        Ok(())
    }

    /// Sends the invite link to each number (`group.participant_invited` for each sent).
    async fn invite(&self, group: &Row, recipients: &[String], template: Option<&str>) -> Result<Invited, Error> {
        let tenant = TenantId(group.tenant_id);
        group.live()?;
        if group.participants_count + 1 >= MAX_PARTICIPANTS {
            return Err(Error::field(
                "recipients",
                "The group is full: it holds at most eight people, the business included.",
            ));
        }
        let link = group.invite_link.clone().ok_or_else(|| Error::conflict("The group has no invite link yet."))?;
        let mut conn = self.conn(tenant).await?;
        let content = match template {
            Some(name) => {
                let (name, language, _) = stored_template(&mut conn, tenant, group.account_id, name, None).await?;
                let parameters = json!([{ "type": "text", "text": link }]);
                ChatContent::Template {
                    name,
                    language,
                    components: vec![json!({ "type": "body", "parameters": parameters })],
                }
            }
            None => ChatContent::Text { body: format!("You are invited to join \"{}\": {link}", group.subject) },
        };
        let gateway = self.group_gateway(&mut conn, group).await?;
        drop(conn);
        let (mut successes, mut failures) = (Vec::new(), Vec::new());
        for phone in recipients {
            let reference = crate::send::new_uid();
            let message = OutboundChat {
                reference: &reference,
                phone_number_id: &group.phone_number_id,
                to: phone,
                content: &content,
                reply_to: None,
            };
            match gateway.send(message).await {
                Ok(SendOutcome::Accepted { provider_message_id, .. }) => successes.push(Invitation {
                    phone: phone.clone(),
                    message_id: Some(provider_message_id),
                    error: None,
                }),
                Ok(SendOutcome::Refused { reason }) => {
                    failures.push(Invitation { phone: phone.clone(), message_id: None, error: Some(reason) })
                }
                Err(e) => failures.push(Invitation {
                    phone: phone.clone(),
                    message_id: None,
                    error: Some(format!("The provider could not be reached: {e}")),
                }),
            }
        }
        let mut conn = self.conn(tenant).await?;
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            for sent in &successes {
                let who = json!({ "participant": { "phone": sent.phone, "name": null } });
                emit(conn, group, "group.participant_invited", Some(who), now).await?;
            }
            Ok(())
        })
        .await?;
        Ok(Invited { successes, failures })
    }

    /// `POST /chat/groups/{id}/invite-link/reset`: the old link stops working
    /// (`group.invite_link_reset`).
    pub async fn reset_group_invite_link(&self, caller: &Caller, id: i64) -> Result<InviteLink, Error> {
        caller.require_issuer()?;
        caller.require(Permission::GROUPS_MANAGE)?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let group = row(&mut conn, tenant, id).await?;
        let group_id = group.live()?.to_owned();
        let gateway = self.group_gateway(&mut conn, &group).await?;
        drop(conn);
        let link = gateway.reset_group_invite_link(&group_id).await.map_err(group_error)?;
        let mut conn = self.conn(tenant).await?;
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let changed: Row = diesel::update(g::table.filter(g::tenant_id.eq(tenant.0)).find(id))
                .set((g::invite_link.eq(&link), g::updated_at.eq(now)))
                .returning(Row::as_returning())
                .get_result(conn)
                .await?;
            emit(conn, &changed, "group.invite_link_reset", None, now).await
        })
        .await?;
        Ok(InviteLink { invite_link: link })
    }

    /// `GET /chat/groups/{id}/join-requests`: the pending ones, oldest first.
    pub async fn group_join_requests(&self, caller: &Caller, id: i64) -> Result<Vec<JoinRequestView>, Error> {
        caller.require_issuer()?;
        caller.require(Permission::GROUPS_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let group = row(&mut conn, caller.tenant_id, id).await?;
        let rows: Vec<(String, String, OffsetDateTime)> = jr::table
            .filter(jr::tenant_id.eq(group.tenant_id))
            .filter(jr::group_id.eq(group.id))
            .filter(jr::state.eq("pending"))
            .order((jr::created_at, jr::join_request_id))
            .select((jr::join_request_id, jr::wa_id, jr::created_at))
            .load(&mut conn)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, wa_id, created_at)| JoinRequestView { id, phone: format!("+{wa_id}"), created_at })
            .collect())
    }

    /// `POST /chat/groups/{id}/join-requests/approve` (`approve`) or `/reject`: pending
    /// requests only; an approved person joins at once (`group.join_request_approved` then
    /// `group.participant_joined`), within the group's eight.
    pub async fn answer_group_join_requests(
        &self,
        caller: &Caller,
        id: i64,
        body: JoinRequestsBody,
        approve: bool,
    ) -> Result<JoinRequestsAnswer, Error> {
        caller.require_issuer()?;
        caller.require(Permission::GROUPS_MANAGE)?;
        let mut ids: Vec<String> = Vec::new();
        for id in body.join_requests.unwrap_or_default() {
            let id = id.trim().to_owned();
            if !id.is_empty() && !ids.contains(&id) {
                ids.push(id);
            }
        }
        if ids.is_empty() || ids.len() > MAX_JOIN_REQUESTS {
            return Err(Error::field("join_requests", "The join_requests must have 1 to 100 request ids."));
        }
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let group = row(&mut conn, tenant, id).await?;
        let group_id = group.live()?.to_owned();
        let pending: Vec<(String, String)> = jr::table
            .filter(jr::tenant_id.eq(tenant.0))
            .filter(jr::group_id.eq(group.id))
            .filter(jr::state.eq("pending"))
            .filter(jr::join_request_id.eq_any(&ids))
            .select((jr::join_request_id, jr::wa_id))
            .load(&mut conn)
            .await?;
        let mut failures: Vec<JoinRequestOutcome> = ids
            .iter()
            .filter(|id| !pending.iter().any(|(p, _)| p == *id))
            .map(|id| outcome(id, Some("No pending join request of this group has this id.".into())))
            .collect();
        let room = (MAX_PARTICIPANTS - 1 - group.participants_count).max(0) as usize;
        let (asked, over): (Vec<_>, Vec<_>) = if approve && pending.len() > room {
            (pending[..room].to_vec(), pending[room..].to_vec())
        } else {
            (pending, Vec::new())
        };
        failures.extend(
            over.iter().map(|(id, _)| outcome(id, Some("The group is full: it holds at most eight people.".into()))),
        );
        let mut done: Vec<(String, String)> = Vec::new();
        if !asked.is_empty() {
            let gateway = self.group_gateway(&mut conn, &group).await?;
            drop(conn);
            let request_ids: Vec<String> = asked.iter().map(|(id, _)| id.clone()).collect();
            let refused = gateway.answer_join_requests(&group_id, &request_ids, approve).await.map_err(group_error)?;
            for (id, wa_id) in asked {
                match refused.iter().find(|(r, _)| *r == id) {
                    Some((_, why)) => failures.push(outcome(&id, Some(why.clone()))),
                    None => done.push((id, wa_id)),
                }
            }
            conn = self.conn(tenant).await?;
        }
        let now = self.clock.now();
        let state = if approve { "approved" } else { "rejected" };
        conn.transaction::<_, Error, _>(async |conn| {
            let mut current = group.clone();
            for (id, wa_id) in &done {
                diesel::update(jr::table.filter(jr::tenant_id.eq(tenant.0)).filter(jr::group_id.eq(group.id)))
                    .filter(jr::join_request_id.eq(id))
                    .set((jr::state.eq(state), jr::updated_at.eq(now)))
                    .execute(conn)
                    .await?;
                let name = if approve { "group.join_request_approved" } else { "group.join_request_rejected" };
                emit(conn, &current, name, Some(updates::request(id, wa_id)), now).await?;
                if approve {
                    current = updates::joined(conn, &current, std::slice::from_ref(wa_id), now).await?;
                }
            }
            Ok(())
        })
        .await?;
        let successes = done.iter().map(|(id, _)| outcome(id, None)).collect();
        Ok(JoinRequestsAnswer { successes, failures })
    }

    /// `DELETE /chat/groups/{id}/participants`: removed on the provider, then here
    /// (`group.participant_removed` for each who was in).
    pub async fn remove_group_participants(
        &self,
        caller: &Caller,
        id: i64,
        body: RemoveParticipants,
    ) -> Result<Removed, Error> {
        caller.require_issuer()?;
        caller.require(Permission::GROUPS_MANAGE)?;
        let given = body.participants.unwrap_or_default();
        if given.is_empty() || given.len() > MAX_REMOVALS {
            return Err(Error::field("participants", "The participants must have 1 to 8 entries."));
        }
        let mut errors = FieldErrors::new();
        let mut wa_ids: Vec<String> = Vec::new();
        for (i, raw) in given.iter().enumerate() {
            match crate::recipients::normalize(raw, &caller.calling_code) {
                Some(number) => {
                    let wa_id = number.trim_start_matches('+').to_owned();
                    if !wa_ids.contains(&wa_id) {
                        wa_ids.push(wa_id);
                    }
                }
                None => {
                    errors.add(format!("participants.{i}"), format!("The participants.{i} is not a chat id or number."))
                }
            }
        }
        errors.finish()?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let group = row(&mut conn, tenant, id).await?;
        let group_id = group.live()?.to_owned();
        let gateway = self.group_gateway(&mut conn, &group).await?;
        drop(conn);
        let refused = match gateway.remove_group_participants(&group_id, &wa_ids).await {
            Ok(refused) => refused,
            Err(GroupError::Refused { reason }) => wa_ids.iter().map(|w| (w.clone(), reason.clone())).collect(),
            Err(error) => return Err(group_error(error)),
        };
        let (failed, removed): (Vec<String>, Vec<String>) =
            wa_ids.into_iter().partition(|w| refused.iter().any(|(r, _)| r == w));
        let mut conn = self.conn(tenant).await?;
        let now = self.clock.now();
        let group = conn.transaction(async |conn| updates::left(conn, &group, &removed, true, now).await).await?;
        let failures = failed
            .iter()
            .map(|w| outcome(w, refused.iter().find(|(r, _)| r == w).map(|(_, why)| why.clone())))
            .collect();
        Ok(Removed { successes: removed.iter().map(|w| outcome(w, None)).collect(), failures, group: group.into() })
    }
}
