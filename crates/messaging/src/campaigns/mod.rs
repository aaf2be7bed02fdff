//! SMS campaigns (contract: Campaign, Campaign status, `POST /sms/campaign`): one campaign per
//! contact group, dispatched by a chain of jobs that each write one batch of personalized,
//! priced and paid-for messages, so 100,000 contacts are never one transaction or one job.

mod dispatch;
mod status;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::state::{Event as _, Status as _};
use kernel::{Caller, Error, Permission, TenantId};
use serde::{Deserialize, Serialize};
use store::jobs::Enqueue;
use time::OffsetDateTime;
use uuid::Uuid;

pub(crate) use dispatch::count;
use dispatch::eligible;
pub use dispatch::{DispatchCampaign, wallet_topped_up};
pub use status::{CampaignEvent, CampaignStatus, IllegalTransition, TRANSITIONS};

pub use crate::ids::{CampaignId, CampaignRef, CampaignUid};

use crate::channels::Route;
use crate::dispatch::{Delta, settle};
use crate::messages::Message;
use crate::schema::{campaigns, messages};
use crate::send::{NO_ROUTE, parse_schedule, too_long};
use crate::status::MessageEvent;
use crate::{MessagingService, channels};

/// `POST /sms/campaign`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct CampaignRequest {
    /// Contact group ids or UUIDs separated by commas, semicolons or whitespace (at most 2,000);
    /// required, not blank.
    #[schema(required = true, nullable = false, value_type = String, pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]", max_length = 2000)]
    pub contact_list_id: Option<String>,
    /// The text before personalization (at most 4,096); required, not blank.
    #[schema(required = true, nullable = false, value_type = String, pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]", max_length = 4096)]
    pub message: Option<String>,
    #[schema(max_length = 64)]
    pub sender_id: Option<String>,
    /// At most 160; defaults to the group's name.
    #[schema(max_length = 160)]
    pub name: Option<String>,
    #[schema(schema_with = crate::send::schedule_time)]
    pub schedule_time: Option<String>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct GroupSummary {
    pub id: i64,
    pub uid: Uuid,
    pub name: String,
}

/// The Campaign resource (contract: Campaign).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Campaign {
    pub id: i64,
    pub uid: String,
    pub name: String,
    /// `draft`, `scheduled`, `running`, `paused`, `completed`, `cancelled`.
    #[schema(value_type = String)]
    pub status: CampaignStatus,
    /// Why it is paused or cancelled.
    pub status_reason: Option<String>,
    pub channel_type: String,
    pub tenant_channel_id: Option<i64>,
    pub channel_code: Option<String>,
    pub message: String,
    pub sender: Option<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub scheduled_at: Option<OffsetDateTime>,
    /// Contacts dispatch messages: the group's contacts with a number that is not blacklisted.
    pub total_recipients: i32,
    pub sent_count: i32,
    pub failed_count: i32,
    pub contact_group: Option<GroupSummary>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub completed_at: Option<OffsetDateTime>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CampaignsCreated {
    pub campaigns: Vec<Campaign>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = campaigns)]
pub(crate) struct CampaignRow {
    id: i64,
    uid: String,
    tenant_id: i64,
    name: String,
    status: CampaignStatus,
    status_reason: Option<String>,
    channel_type: String,
    tenant_channel_id: Option<i64>,
    channel_code: Option<String>,
    message: String,
    sender: Option<String>,
    scheduled_at: Option<OffsetDateTime>,
    contact_group_id: Option<i64>,
    total_recipients: i32,
    sent_count: i32,
    failed_count: i32,
    cursor: i64,
    last_contact_id: Option<i64>,
    dispatch_token: Uuid,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
    completed_at: Option<OffsetDateTime>,
}

impl CampaignRow {
    fn into_campaign(self, group: Option<GroupSummary>) -> Campaign {
        Campaign {
            id: self.id,
            uid: self.uid,
            name: self.name,
            status: self.status,
            status_reason: self.status_reason,
            channel_type: self.channel_type,
            tenant_channel_id: self.tenant_channel_id,
            channel_code: self.channel_code,
            message: self.message,
            sender: self.sender,
            scheduled_at: self.scheduled_at,
            total_recipients: self.total_recipients,
            sent_count: self.sent_count,
            failed_count: self.failed_count,
            contact_group: group,
            created_at: self.created_at,
            updated_at: self.updated_at,
            completed_at: self.completed_at,
        }
    }
}

/// The campaign of `tenant` that `campaign` names; another tenant's is `None`.
pub(crate) async fn id_of(
    conn: &mut store::Conn,
    tenant: TenantId,
    campaign: &CampaignRef,
) -> Result<Option<CampaignId>, Error> {
    let query = campaigns::table.filter(campaigns::tenant_id.eq(tenant.0)).select(campaigns::id).into_boxed();
    let query = match campaign {
        CampaignRef::Id(id) => query.filter(campaigns::id.eq(id.0)),
        CampaignRef::Uid(uid) => query.filter(campaigns::uid.eq(uid)),
    };
    Ok(query.first::<i64>(conn).await.optional()?.map(CampaignId))
}

/// The campaign's group, read within the campaign's tenant.
async fn group_summary(
    conn: &mut store::Conn,
    tenant: TenantId,
    group: Option<i64>,
) -> Result<Option<GroupSummary>, Error> {
    let Some(group) = group else { return Ok(None) };
    let found = ::contacts::group::name_of(conn, tenant, ::contacts::GroupId(group)).await?;
    Ok(found.map(|g| GroupSummary { id: g.id, uid: g.uid, name: g.name }))
}

/// The payload of `campaign.completed` and `campaign.failed`.
pub(crate) fn event_payload(campaign: Campaign, reason: Option<String>) -> serde_json::Value {
    serde_json::json!({ "campaign": campaign, "reason": reason })
}

async fn emit(conn: &mut store::Conn, name: &str, row: CampaignRow, now: OffsetDateTime) -> Result<(), Error> {
    let tenant = TenantId(row.tenant_id);
    let reason = row.status_reason.clone();
    let group = group_summary(conn, tenant, row.contact_group_id).await?;
    store::outbox::emit(conn, tenant, name, event_payload(row.into_campaign(group), reason), now).await?;
    Ok(())
}

impl MessagingService {
    /// `POST /sms/campaign`: one campaign per active group found; unresolved ids are skipped,
    /// none resolved is a 404. Without a usable route the campaign is created `cancelled`.
    pub async fn create_campaigns(&self, caller: &Caller, req: CampaignRequest) -> Result<CampaignsCreated, Error> {
        let tenant = caller.tenant_id;
        let mut errors = std::collections::BTreeMap::new();
        too_long(&mut errors, "contact_list_id", req.contact_list_id.as_deref(), 2_000);
        too_long(&mut errors, "message", req.message.as_deref(), 4_096);
        too_long(&mut errors, "sender_id", req.sender_id.as_deref(), 64);
        too_long(&mut errors, "name", req.name.as_deref(), 160);
        too_long(&mut errors, "schedule_time", req.schedule_time.as_deref(), 100);
        if !errors.is_empty() {
            return Err(Error::fields(errors));
        }
        let list = req.contact_list_id.as_deref().map(str::trim).filter(|l| !l.is_empty());
        let Some(list) = list else {
            return Err(Error::field("contact_list_id", "The contact_list_id field is required."));
        };
        let Some(message) = req.message.filter(|m| !m.trim().is_empty()) else {
            return Err(Error::field("message", "The message field is required."));
        };
        let schedule = parse_schedule(req.schedule_time.as_deref())?;
        let now = self.clock.now();
        let due = schedule.filter(|at| *at > now);
        let (mut ids, mut uids) = (Vec::new(), Vec::new());
        // the recipient rules' splitting: comma, semicolon, whitespace; duplicates collapsed
        let tokens = crate::recipients::split(Some(list), &[]);
        for token in &tokens {
            match ::contacts::GroupRef::parse(token) {
                Ok(::contacts::GroupRef::Id(id)) => ids.push(id),
                Ok(::contacts::GroupRef::Uid(uid)) => uids.push(uid),
                Err(_) => {}
            }
        }
        let mut conn = self.conn(tenant).await?;
        // contract: inactive groups count as unresolved (the issue); ids and uids of one group collapse
        let mut groups: Vec<(i64, Uuid, String)> = ::contacts::group::active_among(&mut conn, tenant, &ids, &uids)
            .await?
            .into_iter()
            .map(|g| (g.id, g.uid, g.name))
            .collect();
        if groups.is_empty() {
            return Err(Error::not_found("Contact group"));
        }
        let position = |g: &(i64, Uuid, String)| {
            tokens.iter().position(|t| match ::contacts::GroupRef::parse(t) {
                Ok(::contacts::GroupRef::Id(id)) => id.0 == g.0,
                Ok(::contacts::GroupRef::Uid(uid)) => uid == g.1,
                Err(_) => false,
            })
        };
        groups.sort_by_key(position);
        let route = channels::route(&mut conn, tenant, req.sender_id.as_deref()).await?;
        let rows = conn
            .transaction(async |conn| {
                let mut rows = Vec::new();
                for (group_id, _, group_name) in groups {
                    // insertions, not transitions: a campaign starts draft, scheduled or cancelled
                    let (status, reason) = match (&route, due) {
                        (None, _) => (CampaignStatus::Cancelled, Some(NO_ROUTE.to_owned())),
                        (Some(_), Some(_)) => (CampaignStatus::Scheduled, None),
                        (Some(_), None) => (CampaignStatus::Draft, None),
                    };
                    let total = eligible(conn, tenant, group_id, i64::MAX).await?;
                    let token = Uuid::new_v4();
                    let row: CampaignRow = diesel::insert_into(campaigns::table)
                        .values((
                            campaigns::uid.eq(CampaignUid::generate()),
                            campaigns::tenant_id.eq(tenant.0),
                            campaigns::name.eq(req
                                .name
                                .clone()
                                .filter(|n| !n.trim().is_empty())
                                .unwrap_or_else(|| group_name.clone())),
                            campaigns::status.eq(status),
                            campaigns::status_reason.eq(reason),
                            campaigns::tenant_channel_id.eq(route.as_ref().map(|r: &Route| r.channel.id)),
                            campaigns::channel_code.eq(route.as_ref().map(|r| r.channel.code.clone())),
                            campaigns::message.eq(&message),
                            campaigns::sender.eq(route.as_ref().and_then(|r| r.sender.clone())),
                            campaigns::scheduled_at.eq(due),
                            campaigns::contact_group_id.eq(group_id),
                            campaigns::total_recipients.eq(i32::try_from(total).unwrap_or(i32::MAX)),
                            campaigns::dispatch_token.eq(token),
                            campaigns::created_at.eq(now),
                            campaigns::updated_at.eq(now),
                        ))
                        .returning(CampaignRow::as_returning())
                        .get_result(conn)
                        .await?;
                    if status == CampaignStatus::Cancelled {
                        emit(conn, "campaign.failed", row.clone(), now).await?;
                    } else {
                        let job = DispatchCampaign { tenant_id: tenant, campaign_id: CampaignId(row.id), token };
                        let options = Enqueue { tenant_id: Some(tenant), run_at: due, ..Default::default() };
                        store::jobs::enqueue(conn, &job, options).await?;
                    }
                    rows.push(row);
                }
                Ok::<_, Error>(rows)
            })
            .await?;
        let mut campaigns = Vec::with_capacity(rows.len());
        for row in rows {
            let group = group_summary(&mut conn, TenantId(row.tenant_id), row.contact_group_id).await?;
            campaigns.push(row.into_campaign(group));
        }
        Ok(CampaignsCreated { campaigns })
    }

    async fn campaign_row(
        conn: &mut store::Conn,
        tenant: TenantId,
        campaign: &CampaignRef,
    ) -> Result<CampaignRow, Error> {
        let query =
            campaigns::table.filter(campaigns::tenant_id.eq(tenant.0)).select(CampaignRow::as_select()).into_boxed();
        let query = match campaign {
            CampaignRef::Id(id) => query.filter(campaigns::id.eq(id.0)),
            CampaignRef::Uid(uid) => query.filter(campaigns::uid.eq(uid.clone())),
        };
        query.first(conn).await.optional()?.ok_or_else(|| Error::not_found("Campaign"))
    }

    /// The campaign, locked: a dispatch step or a completion cannot change it under us.
    async fn locked_row(
        conn: &mut store::Conn,
        tenant: TenantId,
        campaign: &CampaignRef,
    ) -> Result<CampaignRow, Error> {
        let row = Self::campaign_row(conn, tenant, campaign).await?;
        Ok(campaigns::table
            .find(row.id)
            .filter(campaigns::tenant_id.eq(row.tenant_id))
            .for_update()
            .select(CampaignRow::as_select())
            .first(conn)
            .await?)
    }

    /// `GET /campaign/{uid}/view`.
    pub async fn campaign(&self, caller: &Caller, campaign: &CampaignRef) -> Result<Campaign, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let row = Self::campaign_row(&mut conn, caller.tenant_id, campaign).await?;
        let group = group_summary(&mut conn, TenantId(row.tenant_id), row.contact_group_id).await?;
        Ok(row.into_campaign(group))
    }

    /// `POST /campaign/{uid}/resume`: a paused campaign runs again with a new dispatch chain;
    /// if the wallet still cannot pay, its next batch pauses it again.
    pub async fn resume_campaign(&self, caller: &Caller, campaign: &CampaignRef) -> Result<Campaign, Error> {
        caller.require_issuer()?;
        caller.require(Permission::SEND)?;
        let now = self.clock.now();
        let mut conn = self.conn(caller.tenant_id).await?;
        let tenant = caller.tenant_id;
        let row = conn
            .transaction(async |conn| {
                let row = Self::locked_row(conn, tenant, campaign).await?;
                let Ok(status) = row.status.apply(CampaignEvent::Resume) else {
                    return Err(Error::conflict(format!(
                        "Only a paused campaign can be resumed; this one is {}.",
                        row.status
                    )));
                };
                let token = Uuid::new_v4();
                let row: CampaignRow =
                    diesel::update(campaigns::table.find(row.id).filter(campaigns::tenant_id.eq(row.tenant_id)))
                        .set((
                            campaigns::status.eq(status),
                            campaigns::status_reason.eq(None::<String>),
                            campaigns::dispatch_token.eq(token),
                            campaigns::updated_at.eq(now),
                        ))
                        .returning(CampaignRow::as_returning())
                        .get_result(conn)
                        .await?;
                let job = DispatchCampaign { tenant_id: tenant, campaign_id: CampaignId(row.id), token };
                store::jobs::enqueue(conn, &job, Enqueue { tenant_id: Some(tenant), ..Default::default() }).await?;
                Ok(row)
            })
            .await?;
        let group = group_summary(&mut conn, TenantId(row.tenant_id), row.contact_group_id).await?;
        Ok(row.into_campaign(group))
    }

    /// `POST /campaign/{uid}/cancel`: stops dispatch; messages not yet handed to the provider
    /// fail (refunded) and are never sent.
    pub async fn cancel_campaign(&self, caller: &Caller, campaign: &CampaignRef) -> Result<Campaign, Error> {
        caller.require_issuer()?;
        caller.require(Permission::SEND)?;
        let now = self.clock.now();
        let mut conn = self.conn(caller.tenant_id).await?;
        let tenant = caller.tenant_id;
        let row = conn
            .transaction(async |conn| {
                let row = Self::locked_row(conn, tenant, campaign).await?;
                let Ok(status) = row.status.apply(CampaignEvent::Cancel) else {
                    return Err(Error::conflict(format!("The campaign is already {}.", row.status)));
                };
                let row: CampaignRow =
                    diesel::update(campaigns::table.find(row.id).filter(campaigns::tenant_id.eq(row.tenant_id)))
                        .set((
                            campaigns::status.eq(status),
                            campaigns::status_reason.eq("Cancelled through the API."),
                            campaigns::dispatch_token.eq(Uuid::new_v4()),
                            campaigns::updated_at.eq(now),
                        ))
                        .returning(CampaignRow::as_returning())
                        .get_result(conn)
                        .await?;
                let dropped: Vec<Message> = diesel::update(
                    messages::table
                        .filter(messages::tenant_id.eq(row.tenant_id))
                        .filter(messages::campaign_id.eq(row.id))
                        .filter(messages::status.eq_any(MessageEvent::Cancel.sources())),
                )
                .set((
                    messages::status.eq(MessageEvent::Cancel.target().as_str()),
                    messages::error_message.eq("The campaign was cancelled before this message was sent."),
                    messages::updated_at.eq(now),
                ))
                .returning(Message::as_returning())
                .get_results(conn)
                .await?;
                let refund: i64 = dropped.iter().map(|m| m.price_minor).sum();
                accounts::wallet::refund(conn, tenant, refund, &format!("Refund of campaign {} (cancelled)", row.uid))
                    .await?;
                let changed: Vec<(Message, Delta)> = dropped.into_iter().map(|m| (m, Delta::Failed)).collect();
                settle(conn, &changed, now).await?;
                Self::campaign_row(conn, tenant, &CampaignRef::Id(CampaignId(row.id))).await
            })
            .await?;
        let group = group_summary(&mut conn, TenantId(row.tenant_id), row.contact_group_id).await?;
        Ok(row.into_campaign(group))
    }
}
