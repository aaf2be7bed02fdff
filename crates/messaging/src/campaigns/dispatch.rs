//! A campaign's dispatch chain: each `messaging.dispatch_campaign` job writes one batch of
//! personalized, priced and paid-for messages with their send jobs, then queues the next.

use kernel::state::{Event as _, Status as _};
use std::sync::Arc;

use ::contacts::recipients;
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Error, ErrorKind, TenantId};
use serde::{Deserialize, Serialize};
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{CampaignEvent, CampaignId, CampaignRow, CampaignStatus, emit};
use crate::channels::RateCard;
use crate::personalize::{ContactVars, Template};
use crate::schema::campaigns;
use crate::send::{NO_ROUTE, NewMessage, encoding_name, enqueue_dispatch, new_uid};
use crate::status::MessageStatus;
use crate::{MessagingService, blacklist, channels};

/// Writes one batch of a campaign's messages, then queues the next batch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DispatchCampaign {
    #[serde(default = "crate::service::no_tenant")]
    pub tenant_id: TenantId,
    pub campaign_id: CampaignId,
    /// Only the chain holding the campaign's current token runs (resuming issues a new one).
    pub token: Uuid,
}

impl Job for DispatchCampaign {
    const NAME: &'static str = "messaging.dispatch_campaign";
    type State = MessagingService;

    async fn run(self, state: Arc<MessagingService>, ctx: JobContext) -> Result<(), JobError> {
        let tenant = crate::service::job_tenant(self.tenant_id, &ctx)?;
        state.dispatch_campaign(tenant, self.campaign_id, self.token).await?;
        Ok(())
    }
}

/// How many contacts of a group up to the contact id `last` dispatch messages: those with a
/// number that is not blacklisted (contract: dispatch skips both; `is_subscribed` is not read).
pub(super) async fn eligible(conn: &mut store::Conn, tenant: TenantId, group: i64, last: i64) -> Result<i64, Error> {
    let opted_out = blacklist::all(conn, tenant).await?;
    recipients::count(conn, tenant, group, last, &opted_out).await
}

/// Adds to a campaign's counts and completes it when every written message has left the queue.
pub(crate) async fn count(
    conn: &mut store::Conn,
    tenant: TenantId,
    campaign: i64,
    sent: i32,
    failed: i32,
    now: OffsetDateTime,
) -> Result<(), Error> {
    diesel::update(campaigns::table.find(campaign).filter(campaigns::tenant_id.eq(tenant.0)))
        .set((
            campaigns::sent_count.eq(campaigns::sent_count + sent),
            campaigns::failed_count.eq(campaigns::failed_count + failed),
            campaigns::updated_at.eq(now),
        ))
        .execute(conn)
        .await?;
    complete_if_done(conn, tenant, campaign, now).await
}

/// contract: running -> completed when all recipient jobs are dispatched.
async fn complete_if_done(
    conn: &mut store::Conn,
    tenant: TenantId,
    campaign: i64,
    now: OffsetDateTime,
) -> Result<(), Error> {
    let done: Option<CampaignRow> = diesel::update(
        campaigns::table
            .find(campaign)
            .filter(campaigns::tenant_id.eq(tenant.0))
            .filter(campaigns::status.eq_any(CampaignEvent::Complete.sources()))
            .filter(campaigns::last_contact_id.is_not_null())
            .filter(campaigns::cursor.nullable().ge(campaigns::last_contact_id))
            .filter((campaigns::sent_count + campaigns::failed_count).ge(campaigns::dispatched)),
    )
    .set((
        campaigns::status.eq(CampaignEvent::Complete.target()),
        campaigns::completed_at.eq(now),
        campaigns::updated_at.eq(now),
        campaigns::total_recipients.eq(campaigns::dispatched),
    ))
    .returning(CampaignRow::as_returning())
    .get_result(conn)
    .await
    .optional()?;
    if let Some(row) = done {
        emit(conn, "campaign.completed", row, now).await?;
    }
    Ok(())
}

impl MessagingService {
    /// One step of a campaign's dispatch chain (see [`DispatchCampaign`]).
    ///
    /// The campaign row is read without a lock and each write to it is conditional on the row
    /// being as read ([`unchanged`]): a send recording adding to its counts never waits for a
    /// whole batch to be written. A step that finds the row changed under it (a cancel, a
    /// resume) rolls back everything it wrote; the change's own chain goes on.
    pub async fn dispatch_campaign(&self, tenant: TenantId, campaign_id: CampaignId, token: Uuid) -> Result<(), Error> {
        let now = self.clock.now();
        let config = self.config.clone();
        let mut conn = self.conn(tenant).await?;
        let step = conn
            .transaction(async |conn| {
                let row: Option<CampaignRow> = campaigns::table
                    .find(campaign_id.0)
                    .filter(campaigns::tenant_id.eq(tenant.0))
                    .select(CampaignRow::as_select())
                    .first(conn)
                    .await
                    .optional()?;
                let Some(mut row) = row else { return Ok(()) };
                if row.dispatch_token != token || row.status.is_final() {
                    return Ok(());
                }
                let Some(group) = row.contact_group_id else {
                    return cancel_for(conn, row, "The contact group was deleted.", now).await;
                };
                if let Ok(running) = row.status.apply(CampaignEvent::Start) {
                    // contract: draft/scheduled -> running when dispatch starts (the path is ours)
                    let route = match channels::route(conn, tenant, row.sender.as_deref()).await {
                        Ok(Some(route)) => route,
                        Ok(None) => return cancel_for(conn, row, NO_ROUTE, now).await,
                        // its sender identity is no longer usable
                        Err(e) if e.kind == ErrorKind::Validation => {
                            return cancel_for(conn, row, &e.message, now).await;
                        }
                        Err(e) => return Err(e),
                    };
                    let last = recipients::last_id(conn, tenant, group).await?;
                    let total = eligible(conn, tenant, group, last).await?;
                    row = diesel::update(campaigns::table.find(row.id).filter(unchanged(&row)))
                        .set((
                            campaigns::status.eq(running),
                            campaigns::tenant_channel_id.eq(route.channel.id),
                            campaigns::channel_code.eq(&route.channel.code),
                            campaigns::last_contact_id.eq(last),
                            campaigns::total_recipients.eq(i32::try_from(total).unwrap_or(i32::MAX)),
                            campaigns::updated_at.eq(now),
                        ))
                        .returning(CampaignRow::as_returning())
                        .get_result(conn)
                        .await
                        .optional()?
                        .ok_or_else(superseded)?;
                }
                let last = row.last_contact_id.unwrap_or(0);
                // One page of the group's contacts (keyset, by id), then its opted-out numbers left out.
                let batch = recipients::page(conn, tenant, group, row.cursor, last, config.campaign_batch).await?;
                let finished = (batch.len() as i64) < config.campaign_batch;
                let next_cursor = if finished { last } else { batch.last().map_or(last, |c| c.id) };
                let numbers: Vec<String> = batch.iter().map(::contacts::recipients::Recipient::e164).collect();
                let opted_out = blacklist::listed(conn, tenant, &numbers).await?;
                let template = Template::parse(&row.message);
                let rates = RateCard::load(conn, tenant, config.default_price_minor).await?;
                let empty = serde_json::Map::new();
                let rows: Vec<NewMessage> = batch
                    .iter()
                    .zip(numbers)
                    .filter(|(_, recipient)| !opted_out.contains(recipient))
                    .map(|(contact, recipient)| {
                        let vars = ContactVars {
                            name: &contact.name,
                            country_code: &contact.country_code,
                            phone_number: &contact.phone_number,
                            custom_fields: contact.custom_field_values.as_object().unwrap_or(&empty),
                        };
                        let body = template.render(&vars);
                        let estimate = crate::segments::estimate(&body);
                        NewMessage {
                            uid: new_uid(),
                            tenant_id: tenant.0,
                            direction: "outbound",
                            channel_type: "sms",
                            tenant_channel_id: row.tenant_channel_id,
                            channel_code: row.channel_code.clone(),
                            sender: row.sender.clone(),
                            price_minor: rates.price(&recipient) * i64::from(estimate.segments),
                            recipient,
                            body,
                            status: MessageStatus::Queued.as_str(),
                            media_url: None,
                            media_type: None,
                            error_message: None,
                            gateway_message_id: None,
                            segments: estimate.segments as i32,
                            encoding: encoding_name(estimate.encoding),
                            campaign_id: Some(row.id),
                            contact_id: Some(contact.id),
                            scheduled_at: None,
                            created_at: now,
                            updated_at: now,
                            metadata: None,
                            template_params: None,
                            conversation_id: None,
                        }
                    })
                    .collect();
                // Written first and paid for last (a savepoint), so the wallet row is held briefly
                // and only the messages actually written are charged.
                let paid = conn
                    .transaction(async |conn| {
                        let written = crate::send::insert(conn, &rows).await?;
                        let cost: i64 = written.iter().map(|m| m.price_minor).sum();
                        let note = format!("Campaign {}: {} message(s)", row.uid, written.len());
                        match accounts::wallet::debit(conn, tenant, cost, &note).await? {
                            Ok(_) => Ok(written),
                            Err(_) => {
                                Err(Error::payment_required("The prepaid balance cannot pay for the next batch."))
                            }
                        }
                    })
                    .await;
                let written = match paid {
                    Ok(written) => written,
                    Err(e) if e.kind == ErrorKind::PaymentRequired => {
                        // contract: a prepaid balance that cannot afford it pauses the campaign; it
                        // looks again periodically and after each top-up (docs/api.md)
                        // a paused campaign that still cannot pay stays paused
                        let paused = match row.status {
                            CampaignStatus::Paused => CampaignStatus::Paused,
                            status => status.apply(CampaignEvent::Pause)?,
                        };
                        let held = diesel::update(campaigns::table.find(row.id).filter(unchanged(&row)))
                            .set((
                                campaigns::status.eq(paused),
                                campaigns::status_reason.eq(e.message.clone()),
                                campaigns::updated_at.eq(now),
                            ))
                            .execute(conn)
                            .await?;
                        if held == 0 {
                            return Err(superseded());
                        }
                        let job = DispatchCampaign { tenant_id: tenant, campaign_id, token };
                        let run_at = Some(
                            now + time::Duration::try_from(config.paused_recheck).unwrap_or(time::Duration::MINUTE),
                        );
                        // one periodic check per chain, however many top-ups fall short
                        let dedupe_key = Some(format!("campaign:{}:{token}", row.id));
                        let options = Enqueue { tenant_id: Some(tenant), run_at, dedupe_key, ..Default::default() };
                        store::jobs::enqueue(conn, &job, options).await?;
                        return Ok(());
                    }
                    Err(e) => return Err(e),
                };
                // A paused campaign that can pay again runs with a new chain, so that any other
                // job holding the old token (a periodic check, a top-up) stops.
                let (status, token) = match row.status {
                    CampaignStatus::Paused => (row.status.apply(CampaignEvent::Resume)?, Uuid::new_v4()),
                    status => (status, token),
                };
                let ids: Vec<i64> = written.iter().map(|m| m.id).collect();
                enqueue_dispatch(conn, tenant, &ids, config.send_chunk, None).await?;
                if !finished {
                    let job = DispatchCampaign { tenant_id: tenant, campaign_id, token };
                    store::jobs::enqueue(conn, &job, Enqueue { tenant_id: Some(tenant), ..Default::default() }).await?;
                }
                // Last, so the campaign row is locked only from here to the commit.
                let held = diesel::update(campaigns::table.find(row.id).filter(unchanged(&row)))
                    .set((
                        campaigns::status.eq(status),
                        campaigns::status_reason.eq(None::<String>),
                        campaigns::dispatch_token.eq(token),
                        campaigns::cursor.eq(next_cursor),
                        campaigns::dispatched.eq(campaigns::dispatched + i32::try_from(ids.len()).unwrap_or(i32::MAX)),
                        campaigns::updated_at.eq(now),
                    ))
                    .execute(conn)
                    .await?;
                if held == 0 {
                    return Err(superseded());
                }
                if finished {
                    complete_if_done(conn, tenant, row.id, now).await?;
                }
                Ok(())
            })
            .await;
        match step {
            Err(e) if e.reason.as_deref() == Some(SUPERSEDED) => Ok(()),
            step => step,
        }
    }
}

/// Why a dispatch step rolled back: the campaign row changed after the step read it.
const SUPERSEDED: &str = "campaign_superseded";

fn superseded() -> Error {
    Error::conflict("The campaign changed while its batch was written.").with_reason(SUPERSEDED)
}

/// The campaign row is still as a dispatch step read it: the same chain, state and position.
#[diesel::dsl::auto_type(no_type_alias)]
fn unchanged(row: &CampaignRow) -> _ {
    let tenant: i64 = row.tenant_id;
    let token: Uuid = row.dispatch_token;
    let status: CampaignStatus = row.status;
    let cursor: i64 = row.cursor;
    campaigns::tenant_id
        .eq(tenant)
        .and(campaigns::dispatch_token.eq(token))
        .and(campaigns::status.eq(status))
        .and(campaigns::cursor.eq(cursor))
}

/// contract: any -> cancelled when no usable route exists; `campaign.failed` says why.
async fn cancel_for(conn: &mut store::Conn, row: CampaignRow, reason: &str, now: OffsetDateTime) -> Result<(), Error> {
    let cancelled = row.status.apply(CampaignEvent::Cancel)?;
    let row: CampaignRow = diesel::update(campaigns::table.find(row.id).filter(unchanged(&row)))
        .set((campaigns::status.eq(cancelled), campaigns::status_reason.eq(reason), campaigns::updated_at.eq(now)))
        .returning(CampaignRow::as_returning())
        .get_result(conn)
        .await
        .optional()?
        .ok_or_else(superseded)?;
    emit(conn, "campaign.failed", row, now).await
}

/// After a top-up: every paused campaign of the tenant checks at once whether it can go on
/// (besides its periodic check). Answers how many were nudged.
pub async fn wallet_topped_up(conn: &mut store::Conn, tenant: TenantId) -> Result<usize, Error> {
    let paused: Vec<(i64, Uuid)> = campaigns::table
        .filter(campaigns::tenant_id.eq(tenant.0))
        .filter(campaigns::status.eq(CampaignStatus::Paused))
        .select((campaigns::id, campaigns::dispatch_token))
        .load(conn)
        .await?;
    for (campaign_id, token) in &paused {
        let job = DispatchCampaign { tenant_id: tenant, campaign_id: CampaignId(*campaign_id), token: *token };
        store::jobs::enqueue(conn, &job, Enqueue { tenant_id: Some(tenant), ..Default::default() }).await?;
    }
    Ok(paused.len())
}
