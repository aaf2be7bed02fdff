//! What the provider reports about groups (the chat webhook's group fields, and the sandbox's
//! announced confirmations), applied once: each change moves the local group only from the
//! state it names, so a delivery applied twice emits nothing twice.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Error, TenantId};
use providers::chat::ChatInbound;
use providers::chat_groups::GroupUpdate;
use serde_json::{Value, json};
use store::jobs::Enqueue;
use time::OffsetDateTime;

use super::{Row, row};
use crate::MessagingService;
use crate::schema::{
    chat_group_join_requests as jr, chat_group_messages as gm, chat_group_participants as gp, chat_groups as g,
    conversations,
};

/// Emits `name` with the group summary, and `extra` members beside it.
pub(crate) async fn emit(
    conn: &mut store::Conn,
    group: &Row,
    name: &str,
    extra: Option<Value>,
    now: OffsetDateTime,
) -> Result<(), Error> {
    let mut payload = group.summary();
    if let (Some(Value::Object(extra)), Value::Object(payload)) = (extra, &mut payload) {
        payload.extend(extra);
    }
    store::outbox::emit(conn, TenantId(group.tenant_id), name, payload, now).await?;
    Ok(())
}

/// `participant:{phone, name}` of a participant event: the name the customer's conversation
/// knows, if any.
pub(crate) async fn participant(conn: &mut store::Conn, group: &Row, wa_id: &str) -> Result<Value, Error> {
    let phone = format!("+{wa_id}");
    let name: Option<Option<String>> = conversations::table
        .filter(conversations::tenant_id.eq(group.tenant_id))
        .filter(conversations::phone_number_id.eq(&group.phone_number_id))
        .filter(conversations::customer.eq(&phone))
        .select(conversations::customer_name)
        .first(conn)
        .await
        .optional()?;
    Ok(json!({ "participant": { "phone": phone, "name": name.flatten() } }))
}

/// Moves a group from `from` to `status` with `set`'s other columns; `None` when it was not in
/// one of `from` (already moved).
async fn moved(
    conn: &mut store::Conn,
    group: &Row,
    from: &[&str],
    status: &str,
    now: OffsetDateTime,
) -> Result<Option<Row>, Error> {
    Ok(diesel::update(g::table.filter(g::tenant_id.eq(group.tenant_id)).find(group.id))
        .filter(g::status.eq_any(from))
        .set((g::status.eq(status), g::updated_at.eq(now)))
        .returning(Row::as_returning())
        .get_result(conn)
        .await
        .optional()?)
}

/// A creation the provider refused or failed: `failed` with why (`group.updated`).
pub(crate) async fn fail_creation(
    conn: &mut store::Conn,
    group: &Row,
    why: &str,
    now: OffsetDateTime,
) -> Result<Row, Error> {
    conn.transaction(async |conn| {
        let Some(_) = moved(conn, group, &["creating"], "failed", now).await? else {
            return row(conn, TenantId(group.tenant_id), group.id).await;
        };
        let failed: Row = diesel::update(g::table.filter(g::tenant_id.eq(group.tenant_id)).find(group.id))
            .set(g::failure.eq(why))
            .returning(Row::as_returning())
            .get_result(conn)
            .await?;
        emit(conn, &failed, "group.updated", None, now).await?;
        Ok(failed)
    })
    .await
}

/// A changed subject and/or description (`None`: unchanged; `Some(None)` clears the
/// description).
pub(crate) struct Settings {
    pub subject: Option<String>,
    pub description: Option<Option<String>>,
}

/// Applies changed settings (`group.updated` when something differs).
pub(crate) async fn settings(
    conn: &mut store::Conn,
    group: &Row,
    update: Settings,
    now: OffsetDateTime,
) -> Result<Row, Error> {
    let subject = update.subject.unwrap_or_else(|| group.subject.clone());
    let description = update.description.unwrap_or_else(|| group.description.clone());
    if subject == group.subject && description == group.description {
        return Ok(group.clone());
    }
    conn.transaction(async |conn| {
        let changed: Row = diesel::update(g::table.filter(g::tenant_id.eq(group.tenant_id)).find(group.id))
            .set((g::subject.eq(&subject), g::description.eq(&description), g::updated_at.eq(now)))
            .returning(Row::as_returning())
            .get_result(conn)
            .await?;
        emit(conn, &changed, "group.updated", None, now).await?;
        Ok(changed)
    })
    .await
}

/// A group gone from the provider: `deleted` (`group.deleted`), once.
pub(crate) async fn deleted(conn: &mut store::Conn, group: &Row, now: OffsetDateTime) -> Result<Row, Error> {
    conn.transaction(async |conn| {
        let from = ["creating", "active", "suspended", "failed"];
        let Some(gone) = moved(conn, group, &from, "deleted", now).await? else {
            return row(conn, TenantId(group.tenant_id), group.id).await;
        };
        let gone: Row = diesel::update(g::table.filter(g::tenant_id.eq(group.tenant_id)).find(gone.id))
            .set(g::deleted_at.eq(now))
            .returning(Row::as_returning())
            .get_result(conn)
            .await?;
        diesel::update(jr::table.filter(jr::tenant_id.eq(group.tenant_id)).filter(jr::group_id.eq(group.id)))
            .filter(jr::state.eq("pending"))
            .set((jr::state.eq("revoked"), jr::updated_at.eq(now)))
            .execute(conn)
            .await?;
        emit(conn, &gone, "group.deleted", None, now).await?;
        Ok(gone)
    })
    .await
}

/// Adds participants (`group.participant_joined` for each one new); answers the group.
pub(crate) async fn joined(
    conn: &mut store::Conn,
    group: &Row,
    wa_ids: &[String],
    now: OffsetDateTime,
) -> Result<Row, Error> {
    let mut current = group.clone();
    for wa_id in wa_ids {
        let added = diesel::insert_into(gp::table)
            .values((
                gp::tenant_id.eq(group.tenant_id),
                gp::group_id.eq(group.id),
                gp::wa_id.eq(wa_id),
                gp::joined_at.eq(now),
            ))
            .on_conflict_do_nothing()
            .execute(conn)
            .await?;
        if added == 0 {
            continue;
        }
        // an approved request is done once its person is in
        diesel::update(jr::table.filter(jr::tenant_id.eq(group.tenant_id)).filter(jr::group_id.eq(group.id)))
            .filter(jr::wa_id.eq(wa_id).and(jr::state.eq("pending")))
            .set((jr::state.eq("approved"), jr::updated_at.eq(now)))
            .execute(conn)
            .await?;
        current = recount(conn, &current, now).await?;
        let who = participant(conn, &current, wa_id).await?;
        emit(conn, &current, "group.participant_joined", Some(who), now).await?;
    }
    Ok(current)
}

/// Takes participants out (`group.participant_removed` when the business removed them,
/// `group.participant_left` otherwise, for each one who was in); answers the group.
pub(crate) async fn left(
    conn: &mut store::Conn,
    group: &Row,
    wa_ids: &[String],
    removed: bool,
    now: OffsetDateTime,
) -> Result<Row, Error> {
    let mut current = group.clone();
    for wa_id in wa_ids {
        let gone = diesel::delete(
            gp::table
                .filter(gp::tenant_id.eq(group.tenant_id))
                .filter(gp::group_id.eq(group.id))
                .filter(gp::wa_id.eq(wa_id)),
        )
        .execute(conn)
        .await?;
        if gone == 0 {
            continue;
        }
        current = recount(conn, &current, now).await?;
        let who = participant(conn, &current, wa_id).await?;
        let name = if removed { "group.participant_removed" } else { "group.participant_left" };
        emit(conn, &current, name, Some(who), now).await?;
    }
    Ok(current)
}

/// Counts the group's participants again.
async fn recount(conn: &mut store::Conn, group: &Row, now: OffsetDateTime) -> Result<Row, Error> {
    let count: i64 = gp::table
        .filter(gp::tenant_id.eq(group.tenant_id))
        .filter(gp::group_id.eq(group.id))
        .count()
        .get_result(conn)
        .await?;
    Ok(diesel::update(g::table.filter(g::tenant_id.eq(group.tenant_id)).find(group.id))
        .set((g::participants_count.eq(count as i32), g::updated_at.eq(now)))
        .returning(Row::as_returning())
        .get_result(conn)
        .await?)
}

/// The join-request event payload member.
pub(crate) fn request(join_request_id: &str, wa_id: &str) -> Value {
    json!({ "request": { "id": join_request_id, "phone": format!("+{wa_id}") } })
}

/// Runs the first invitations of a group the provider confirmed.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct SendInvites {
    pub group_id: i64,
}

impl store::jobs::Job for SendInvites {
    const NAME: &'static str = "chat.group_invites";
    type State = MessagingService;

    async fn run(
        self,
        service: std::sync::Arc<MessagingService>,
        ctx: store::jobs::JobContext,
    ) -> Result<(), store::jobs::JobError> {
        service.send_first_invites(ctx.tenant()?, self.group_id).await?;
        Ok(())
    }
}

impl MessagingService {
    /// Applies one provider report about a group of the business account `account`. Answers
    /// whether it named a group this service knows.
    pub async fn apply_group_update(
        &self,
        tenant: TenantId,
        account: i64,
        phone_number_id: &str,
        update: &GroupUpdate,
    ) -> Result<bool, Error> {
        let mut conn = self.conn(tenant).await?;
        apply(&mut conn, tenant, account, phone_number_id, update, self.clock.now()).await
    }
}

/// [`MessagingService::apply_group_update`] on a connection (the webhook's).
pub(crate) async fn apply(
    conn: &mut store::Conn,
    tenant: TenantId,
    account: i64,
    _phone_number_id: &str,
    update: &GroupUpdate,
    now: OffsetDateTime,
) -> Result<bool, Error> {
    let found: Option<Row> = match update {
        GroupUpdate::Created { request_id, .. } | GroupUpdate::CreateFailed { request_id, .. } => {
            by(conn, tenant, account, request_id, true).await?
        }
        other => by(conn, tenant, account, other.group_id().unwrap_or_default(), false).await?,
    };
    let Some(group) = found else { return Ok(false) };
    conn.transaction::<_, Error, _>(async |conn| {
        match update {
            GroupUpdate::Created { group_id, invite_link, .. } => {
                let Some(_) = moved(conn, &group, &["creating"], "active", now).await? else { return Ok(()) };
                let active: Row = diesel::update(g::table.filter(g::tenant_id.eq(tenant.0)).find(group.id))
                    .set((g::provider_group_id.eq(group_id), g::invite_link.eq(invite_link)))
                    .returning(Row::as_returning())
                    .get_result(conn)
                    .await?;
                emit(conn, &active, "group.created", None, now).await?;
                if active.invitees.as_array().is_some_and(|i| !i.is_empty()) {
                    let job = SendInvites { group_id: active.id };
                    store::jobs::enqueue(conn, &job, Enqueue { tenant_id: Some(tenant), ..Default::default() }).await?;
                }
            }
            GroupUpdate::CreateFailed { reason, .. } => {
                fail_creation(conn, &group, reason, now).await?;
            }
            GroupUpdate::Deleted { .. } => {
                deleted(conn, &group, now).await?;
            }
            GroupUpdate::Joined { wa_ids, .. } => {
                joined(conn, &group, wa_ids, now).await?;
            }
            GroupUpdate::Left { wa_ids, removed, .. } => {
                left(conn, &group, wa_ids, *removed, now).await?;
            }
            GroupUpdate::JoinRequested { request, .. } => {
                let added = diesel::insert_into(jr::table)
                    .values((
                        jr::tenant_id.eq(tenant.0),
                        jr::group_id.eq(group.id),
                        jr::join_request_id.eq(&request.join_request_id),
                        jr::wa_id.eq(&request.wa_id),
                        jr::state.eq("pending"),
                        jr::created_at.eq(now),
                        jr::updated_at.eq(now),
                    ))
                    .on_conflict_do_nothing()
                    .execute(conn)
                    .await?;
                if added > 0 {
                    let extra = self::request(&request.join_request_id, &request.wa_id);
                    emit(conn, &group, "group.join_request_received", Some(extra), now).await?;
                }
            }
            GroupUpdate::JoinRequestRevoked { join_request_id, .. } => {
                diesel::update(jr::table.filter(jr::tenant_id.eq(tenant.0)).filter(jr::group_id.eq(group.id)))
                    .filter(jr::join_request_id.eq(join_request_id).and(jr::state.eq("pending")))
                    .set((jr::state.eq("revoked"), jr::updated_at.eq(now)))
                    .execute(conn)
                    .await?;
            }
            GroupUpdate::Settings { subject, description, .. } => {
                let update = Settings { subject: subject.clone(), description: description.clone().map(Some) };
                settings(conn, &group, update, now).await?;
            }
            GroupUpdate::Suspended { .. } => {
                if let Some(suspended) = moved(conn, &group, &["active"], "suspended", now).await? {
                    emit(conn, &suspended, "group.suspended", None, now).await?;
                }
            }
            GroupUpdate::SuspensionCleared { .. } => {
                if let Some(active) = moved(conn, &group, &["suspended"], "active", now).await? {
                    emit(conn, &active, "group.updated", None, now).await?;
                }
            }
        }
        Ok(())
    })
    .await?;
    Ok(true)
}

/// The account's group by the provider's group id, or (`request`) by its creation request id.
async fn by(
    conn: &mut store::Conn,
    tenant: TenantId,
    account: i64,
    id: &str,
    request: bool,
) -> Result<Option<Row>, Error> {
    let query = g::table.filter(g::tenant_id.eq(tenant.0)).filter(g::account_id.eq(account)).into_boxed();
    let query = if request { query.filter(g::request_id.eq(id)) } else { query.filter(g::provider_group_id.eq(id)) };
    Ok(query.select(Row::as_select()).first(conn).await.optional()?)
}

/// Stores a participant's message written in a group (once by its provider id) and opens the
/// group's 24-hour window; `None` when the group is unknown, `Some(false)` when stored before.
pub(crate) async fn group_message(
    conn: &mut store::Conn,
    tenant: TenantId,
    account: i64,
    inbound: &ChatInbound,
    group_id: &str,
    now: OffsetDateTime,
) -> Result<Option<bool>, Error> {
    let Some(group) = by(conn, tenant, account, group_id, false).await? else {
        return Ok(None);
    };
    // the provider may write the participant's number with its `+`: kept as a chat id (digits)
    let wa_id: String = inbound.customer.chars().filter(char::is_ascii_digit).collect();
    conn.transaction(async |conn| {
        let stored = diesel::insert_into(gm::table)
            .values((
                gm::tenant_id.eq(tenant.0),
                gm::group_id.eq(group.id),
                gm::uid.eq(crate::send::new_uid()),
                gm::direction.eq("inbound"),
                gm::participant.eq(&wa_id),
                gm::kind.eq(&inbound.kind),
                gm::body.eq(&inbound.text),
                gm::content.eq(&inbound.raw),
                gm::status.eq("received"),
                gm::provider_message_id.eq(&inbound.provider_message_id),
                gm::created_at.eq(now),
            ))
            .on_conflict_do_nothing()
            .execute(conn)
            .await?;
        if stored == 0 {
            return Ok(Some(false));
        }
        diesel::update(g::table.filter(g::tenant_id.eq(tenant.0)).find(group.id))
            .set(g::last_participant_message_at.eq(now))
            .execute(conn)
            .await?;
        // a person who writes is in the group, whatever the webhook said before
        joined(conn, &group, std::slice::from_ref(&wa_id), now).await?;
        Ok(Some(true))
    })
    .await
}
