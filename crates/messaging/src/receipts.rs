//! What comes back from providers: delivery receipts (from callbacks, from the sandbox's
//! announced receipts, or from asking the provider when a receipt is overdue) and inbound
//! messages, with the opt-out keywords they may carry.

use kernel::state::{Event as _, Status as _};
use std::sync::Arc;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Text, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use futures_util::StreamExt;
use kernel::{Error, TenantId};
use providers::ReceiptStatus;
use serde::{Deserialize, Serialize};
use store::Prepare;
use store::jobs::{Job, JobContext, JobError};
use time::OffsetDateTime;

use crate::channels::Channel;
use crate::dispatch::{Delta, settle};
use crate::messages::Message;
use crate::schema::{messages, provider_callbacks};
use crate::send::{NewMessage, encoding_name, new_uid};
use crate::status::{MessageEvent, MessageStatus};
use crate::{MessagingService, blacklist, channels};

/// One receipt: delivered, read (chat; implies delivered), or failed with a reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptItem {
    pub gateway_message_id: String,
    pub delivered: bool,
    /// Absent in receipts queued before chat existed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read: bool,
    pub reason: Option<String>,
}

impl ReceiptItem {
    pub fn new(gateway_message_id: String, status: &ReceiptStatus) -> Self {
        match status {
            ReceiptStatus::Failed { reason } => {
                Self { gateway_message_id, delivered: false, read: false, reason: Some(reason.clone()) }
            }
            ReceiptStatus::Read => Self { gateway_message_id, delivered: true, read: true, reason: None },
            _ => Self { gateway_message_id, delivered: true, read: false, reason: None },
        }
    }
}

/// Receipts a provider announced when it took the messages (the sandbox), applied when due.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApplyReceipts {
    #[serde(default = "crate::service::no_tenant")]
    pub tenant_id: TenantId,
    pub channel_id: i64,
    pub receipts: Vec<ReceiptItem>,
}

impl Job for ApplyReceipts {
    const NAME: &'static str = "messaging.apply_receipts";
    type State = MessagingService;

    async fn run(self, state: Arc<MessagingService>, ctx: JobContext) -> Result<(), JobError> {
        let tenant = crate::service::job_tenant(self.tenant_id, &ctx)?;
        let mut conn = state.conn(tenant).await?;
        let now = state.clock.now();
        let channel = channels::get(&mut conn, tenant, self.channel_id).await?;
        apply(&mut conn, &channel, &self.receipts, now).await?;
        Ok(())
    }
}

/// Sent messages whose receipt is overdue: `checking_delivery`, then ask the provider.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckDelivery {
    #[serde(default = "crate::service::no_tenant")]
    pub tenant_id: TenantId,
    pub ids: Vec<i64>,
}

impl Job for CheckDelivery {
    const NAME: &'static str = "messaging.check_delivery";
    type State = MessagingService;

    async fn run(self, state: Arc<MessagingService>, ctx: JobContext) -> Result<(), JobError> {
        state.check_delivery(crate::service::job_tenant(self.tenant_id, &ctx)?, &self.ids).await?;
        Ok(())
    }
}

/// The ids of channel `$1`'s messages with the provider ids `$2`: one probe of the channel's
/// index of provider ids each, in a subquery the planner cannot flatten into a join (a join is
/// planned from statistics that lag a burst, and read the channel's whole history per batch;
/// see `dispatch::BY_POSITION`).
const BY_GATEWAY_IDS: &str = "ARRAY(SELECT x.id FROM unnest($2::text[]) AS g (gid), LATERAL (
         SELECT id FROM messages WHERE tenant_channel_id = $1 AND gateway_message_id = g.gid OFFSET 0) x)";

/// Applies receipts of one channel's messages; answers the messages that changed. A receipt
/// for a message that has moved on (late) or that no message matches changes nothing.
pub(crate) async fn apply(
    conn: &mut store::Conn,
    channel: &Channel,
    receipts: &[ReceiptItem],
    now: OffsetDateTime,
) -> Result<Vec<Message>, Error> {
    let delivered: Vec<&str> =
        receipts.iter().filter(|r| r.delivered && !r.read).map(|r| r.gateway_message_id.as_str()).collect();
    let read: Vec<&str> = receipts.iter().filter(|r| r.read).map(|r| r.gateway_message_id.as_str()).collect();
    let (failed, reasons): (Vec<&str>, Vec<String>) = receipts
        .iter()
        .filter(|r| !r.delivered)
        .map(|r| (r.gateway_message_id.as_str(), r.reason.clone().unwrap_or_else(|| "Delivery failed".to_owned())))
        .unzip();
    // `tenant_id + 0`: found by the gateway's id, the tenant checked (see `dispatch`).
    conn.transaction(async |conn| {
        let done: Vec<Message> = diesel::sql_query(format!(
            "UPDATE messages m SET status = $6, delivered_at = $3, updated_at = $3
             WHERE m.id = ANY ({BY_GATEWAY_IDS}) AND m.tenant_id + 0 = $5 AND m.status = ANY($4)
             RETURNING {}",
            crate::messages::columns("m.")
        ))
        .bind::<BigInt, _>(channel.id)
        .bind::<Array<Text>, _>(&delivered)
        .bind::<Timestamptz, _>(now)
        .bind::<Array<Text>, _>(MessageEvent::Deliver.sources())
        .bind::<BigInt, _>(channel.tenant_id)
        .bind::<Text, _>(MessageEvent::Deliver.target().as_str())
        .prepared()
        .get_results(conn)
        .await?;
        // a read receipt that overtook its delivery receipt stands for both
        let seen: Vec<Message> = if read.is_empty() {
            Vec::new()
        } else {
            diesel::sql_query(format!(
                "UPDATE messages m SET status = $6, read_at = $3, delivered_at = coalesce(m.delivered_at, $3), updated_at = $3
                 WHERE m.id = ANY ({BY_GATEWAY_IDS}) AND m.tenant_id + 0 = $5 AND m.status = ANY($4)
                 RETURNING {}",
                crate::messages::columns("m.")
            ))
            .bind::<BigInt, _>(channel.id)
            .bind::<Array<Text>, _>(&read)
            .bind::<Timestamptz, _>(now)
            .bind::<Array<Text>, _>(MessageEvent::ReadReceipt.sources())
            .bind::<BigInt, _>(channel.tenant_id)
            .bind::<Text, _>(MessageEvent::ReadReceipt.target().as_str())
            .prepared()
            .get_results(conn)
            .await?
        };
        let lost: Vec<Message> = diesel::sql_query(format!(
            "UPDATE messages m
             SET status = $7, updated_at = $4,
                 error_message = 'Not delivered: ' || ($3::text[])[array_position($2::text[], m.gateway_message_id)]
             WHERE m.id = ANY ({BY_GATEWAY_IDS}) AND m.tenant_id + 0 = $6 AND m.status = ANY($5)
             RETURNING {}",
            crate::messages::columns("m.")
        ))
        .bind::<BigInt, _>(channel.id)
        .bind::<Array<Text>, _>(&failed)
        .bind::<Array<Text>, _>(&reasons)
        .bind::<Timestamptz, _>(now)
        .bind::<Array<Text>, _>(MessageEvent::DeliveryFail.sources())
        .bind::<BigInt, _>(channel.tenant_id)
        .bind::<Text, _>(MessageEvent::DeliveryFail.target().as_str())
        .prepared()
        .get_results(conn)
        .await?;
        let changed: Vec<(Message, Delta)> = done
            .into_iter()
            .chain(seen)
            .map(|m| (m, Delta::None))
            .chain(lost.into_iter().map(|m| (m, Delta::SentThenFailed)))
            .collect();
        settle(conn, &changed, now).await?;
        Ok(changed.into_iter().map(|(m, _)| m).collect())
    })
    .await
}

/// What a provider callback led to, as the callback log records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallbackOutcome {
    /// A message changed status, or an inbound message was stored.
    Applied,
    /// The receipt's message had already moved on (or the receipt said nothing new).
    Late,
    /// No message of the channel has that provider id.
    Unknown,
}

impl CallbackOutcome {
    fn as_str(self) -> &'static str {
        match self {
            Self::Applied => "applied",
            Self::Late => "late",
            Self::Unknown => "unknown",
        }
    }
}

struct Logged<'a> {
    tenant_id: i64,
    channel_id: i64,
    kind: &'static str,
    provider_message_id: Option<&'a str>,
    provider_status: Option<&'a str>,
    message_id: Option<i64>,
    outcome: &'a str,
    body: &'a [u8],
}

async fn log(conn: &mut store::Conn, entry: Logged<'_>, now: OffsetDateTime) -> Result<(), Error> {
    diesel::insert_into(provider_callbacks::table)
        .values((
            provider_callbacks::tenant_id.eq(entry.tenant_id),
            provider_callbacks::channel_id.eq(entry.channel_id),
            provider_callbacks::kind.eq(entry.kind),
            provider_callbacks::provider_message_id.eq(entry.provider_message_id),
            provider_callbacks::provider_status.eq(entry.provider_status),
            provider_callbacks::message_id.eq(entry.message_id),
            provider_callbacks::outcome.eq(entry.outcome),
            // PostgreSQL text cannot hold NUL; the log keeps everything else as received
            provider_callbacks::body.eq(String::from_utf8_lossy(entry.body).replace('\0', "")),
            provider_callbacks::received_at.eq(now),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

/// Logs a chat webhook delivery with what it led to (`applied`, `late`, `unknown`, `invalid`).
pub(crate) async fn log_chat(
    conn: &mut store::Conn,
    channel: &Channel,
    body: &[u8],
    outcome: &str,
    now: OffsetDateTime,
) -> Result<(), Error> {
    let entry = Logged {
        tenant_id: channel.tenant_id,
        channel_id: channel.id,
        kind: "chat",
        provider_message_id: None,
        provider_status: None,
        message_id: None,
        outcome,
        body,
    };
    log(conn, entry, now).await
}

/// Logs a callback that could not be read and says why, as the 422 to answer.
async fn invalid(
    conn: &mut store::Conn,
    channel: &Channel,
    kind: &'static str,
    body: &[u8],
    now: OffsetDateTime,
    error: providers::CallbackError,
) -> Error {
    let entry = Logged {
        tenant_id: channel.tenant_id,
        channel_id: channel.id,
        kind,
        provider_message_id: None,
        provider_status: None,
        message_id: None,
        outcome: "invalid",
        body,
    };
    if let Err(failure) = log(conn, entry, now).await {
        return failure;
    }
    let what = if kind == "delivery" { "delivery report" } else { "incoming message" };
    Error::validation(format!("The {what} could not be read: {error}"))
}

impl MessagingService {
    /// A delivery-report callback (`POST /hooks/sms/{token}/delivery`). Every callback is
    /// logged; one that cannot be read is logged as `invalid` and refused with 422.
    pub async fn delivery_callback(
        &self,
        token: &str,
        content_type: &str,
        body: &[u8],
    ) -> Result<CallbackOutcome, Error> {
        let now = self.clock.now();
        // the token says whose callback it is: the channel (a global table) first, the rest in
        // that tenant's scope
        let channel = channels::by_callback_token(&mut *self.global_conn().await?, token).await?;
        let mut conn = self.conn(TenantId(channel.tenant_id)).await?;
        let gateway = self.gateways.reader(&channel)?;
        let receipt = match gateway.parse_receipt(content_type, body) {
            Ok(receipt) => receipt,
            Err(error) => return Err(invalid(&mut conn, &channel, "delivery", body, now, error).await),
        };
        let gid = receipt.provider_message_id.replace('\0', "");
        let gid = gid.as_str();
        let changed = match &receipt.status {
            ReceiptStatus::Pending => Vec::new(),
            status => apply(&mut conn, &channel, &[ReceiptItem::new(gid.to_owned(), status)], now).await?,
        };
        let message_id = match <[Message]>::first(&changed) {
            Some(m) => Some(m.id),
            None => messages::table
                .filter(messages::tenant_id.eq(channel.tenant_id))
                .filter(messages::tenant_channel_id.eq(channel.id))
                .filter(messages::gateway_message_id.eq(gid))
                .select(messages::id)
                .first(&mut conn)
                .await
                .optional()?,
        };
        let outcome = match (changed.is_empty(), message_id) {
            (false, _) => CallbackOutcome::Applied,
            (true, Some(_)) => CallbackOutcome::Late,
            (true, None) => CallbackOutcome::Unknown,
        };
        let entry = Logged {
            tenant_id: channel.tenant_id,
            channel_id: channel.id,
            kind: "delivery",
            provider_message_id: Some(gid),
            provider_status: Some(&receipt.provider_status),
            message_id,
            outcome: outcome.as_str(),
            body,
        };
        log(&mut conn, entry, now).await?;
        Ok(outcome)
    }

    /// An incoming-message callback (`POST /hooks/sms/{token}/inbound`): stored as an
    /// `inbound`/`received` message; an opt-out keyword blacklists the sender with the message
    /// as proof, an opt-in keyword takes it off.
    pub async fn inbound_callback(&self, token: &str, content_type: &str, body: &[u8]) -> Result<Message, Error> {
        let now = self.clock.now();
        // the token says whose callback it is: the channel (a global table) first, the rest in
        // that tenant's scope
        let channel = channels::by_callback_token(&mut *self.global_conn().await?, token).await?;
        let mut conn = self.conn(TenantId(channel.tenant_id)).await?;
        let gateway = self.gateways.reader(&channel)?;
        let sms = match gateway.parse_inbound(content_type, body) {
            // PostgreSQL text cannot hold NUL
            Ok(sms) => providers::InboundSms {
                provider_message_id: sms.provider_message_id.map(|id| id.replace('\0', "")),
                from: sms.from.replace('\0', ""),
                to: sms.to.replace('\0', ""),
                text: sms.text.replace('\0', ""),
            },
            Err(error) => return Err(invalid(&mut conn, &channel, "inbound", body, now, error).await),
        };
        // A provider retrying a callback it thinks we missed: the message is stored once.
        if let Some(gid) = &sms.provider_message_id {
            let stored: Option<Message> = messages::table
                .filter(messages::tenant_id.eq(channel.tenant_id))
                .filter(messages::tenant_channel_id.eq(channel.id))
                .filter(messages::direction.eq("inbound"))
                .filter(messages::gateway_message_id.eq(gid))
                .select(Message::as_select())
                .first(&mut conn)
                .await
                .optional()?;
            if let Some(stored) = stored {
                let entry = Logged {
                    tenant_id: channel.tenant_id,
                    channel_id: channel.id,
                    kind: "inbound",
                    provider_message_id: Some(gid),
                    provider_status: None,
                    message_id: Some(stored.id),
                    outcome: "duplicate",
                    body,
                };
                log(&mut conn, entry, now).await?;
                return Ok(stored);
            }
        }
        // a sender written without a calling code is read in the account's own
        let calling_code = accounts::tenants::get(&mut conn, TenantId(channel.tenant_id)).await?.default_country_code;
        let from = crate::recipients::normalize(&sms.from, &calling_code).unwrap_or_else(|| sms.from.clone());
        let keyword = keyword(&sms.text);
        let opt_out = keyword.as_ref().is_some_and(|k| self.config.opt_out_keywords.iter().any(|w| w == k));
        let opt_in = keyword.as_ref().is_some_and(|k| self.config.opt_in_keywords.iter().any(|w| w == k));
        let tenant = TenantId(channel.tenant_id);
        conn.transaction(async |conn| {
            let estimate = crate::segments::estimate(&sms.text);
            let row = NewMessage {
                uid: new_uid(),
                tenant_id: tenant.0,
                direction: "inbound",
                channel_type: "sms",
                tenant_channel_id: Some(channel.id),
                channel_code: Some(channel.code.clone()),
                sender: Some(from.clone()),
                recipient: sms.to.clone(),
                body: sms.text.clone(),
                status: MessageStatus::Received.as_str(),
                media_url: None,
                media_type: None,
                error_message: None,
                gateway_message_id: sms.provider_message_id.clone(),
                segments: estimate.segments as i32,
                encoding: encoding_name(estimate.encoding),
                price_minor: 0,
                campaign_id: None,
                contact_id: None,
                scheduled_at: None,
                created_at: now,
                updated_at: now,
                metadata: None,
                template_params: None,
                conversation_id: None,
            };
            let inserted: Option<Message> = diesel::insert_into(messages::table)
                .values(&row)
                .on_conflict_do_nothing()
                .returning(Message::as_returning())
                .get_result(conn)
                .await
                .optional()?;
            // A retry of this callback that raced us stored it first (a unique index): that one counts.
            let Some(message) = inserted else {
                return Ok(messages::table
                    .filter(messages::tenant_id.eq(channel.tenant_id))
                    .filter(messages::tenant_channel_id.eq(channel.id))
                    .filter(messages::direction.eq("inbound"))
                    .filter(messages::gateway_message_id.eq(&sms.provider_message_id))
                    .select(Message::as_select())
                    .first(conn)
                    .await?);
            };
            settle(conn, &[(message.clone(), Delta::None)], now).await?;
            if opt_out {
                let reason = format!("Replied {}", keyword.as_deref().unwrap_or_default());
                blacklist::add(conn, tenant, &from, Some(&reason), Some(message.id), now).await?;
            } else if opt_in {
                blacklist::remove(conn, tenant, &from).await?;
            }
            let entry = Logged {
                tenant_id: channel.tenant_id,
                channel_id: channel.id,
                kind: "inbound",
                provider_message_id: sms.provider_message_id.as_deref(),
                provider_status: None,
                message_id: Some(message.id),
                outcome: "applied",
                body,
            };
            log(conn, entry, now).await?;
            Ok(message)
        })
        .await
    }

    /// Moves overdue `sent` messages to `checking_delivery` and asks their provider; a
    /// definite answer is applied like a receipt, `Pending` leaves them checking (a receipt
    /// may still come).
    pub async fn check_delivery(&self, tenant: TenantId, ids: &[i64]) -> Result<(), Error> {
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        let overdue: Vec<Message> = diesel::sql_query(format!(
            "UPDATE messages SET status = $5, updated_at = $2
             WHERE id = ANY($1) AND tenant_id + 0 = $4 AND status = ANY($3) RETURNING {}",
            crate::messages::columns("")
        ))
        .bind::<Array<BigInt>, _>(ids)
        .bind::<Timestamptz, _>(now)
        .bind::<Array<Text>, _>(MessageEvent::ReceiptOverdue.sources())
        .bind::<BigInt, _>(tenant)
        .bind::<Text, _>(MessageEvent::ReceiptOverdue.target().as_str())
        .prepared()
        .get_results(&mut conn)
        .await?;
        let mut by_channel: std::collections::BTreeMap<i64, Vec<String>> = Default::default();
        for m in overdue {
            if let (Some(channel), Some(gid)) = (m.tenant_channel_id, m.gateway_message_id) {
                by_channel.entry(channel).or_default().push(gid);
            }
        }
        for (channel_id, gids) in by_channel {
            let channel: Channel = channels::get(&mut conn, tenant, channel_id).await?;
            // the chat provider has no status query: its webhook is the only word
            if channel.kind == "chat" {
                continue;
            }
            let gateway = self.gateways.sms(&channel)?;
            let answers: Vec<ReceiptItem> = futures_util::stream::iter(gids)
                .map(|gid| {
                    let gateway = gateway.clone();
                    async move { gateway.status(&gid).await.ok().map(|status| (gid, status)) }
                })
                .buffer_unordered(self.config.send_concurrency.max(1))
                .filter_map(|answer| async move {
                    match answer {
                        Some((_, ReceiptStatus::Pending)) | None => None,
                        Some((gid, status)) => Some(ReceiptItem::new(gid, &status)),
                    }
                })
                .collect()
                .await;
            apply(&mut conn, &channel, &answers, self.clock.now()).await?;
        }
        Ok(())
    }
}

/// An inbound text that is one word, upper-cased without punctuation (`stop.` is `STOP`), for
/// keyword matching. Like the carriers' rule, only a message that is just the keyword counts,
/// so "stop by the shop" opts nobody out.
fn keyword(text: &str) -> Option<String> {
    let mut words = text.split_whitespace();
    let word = words.next()?;
    if words.next().is_some() {
        return None;
    }
    let word: String = word.chars().filter(|c| c.is_alphanumeric()).collect();
    (!word.is_empty()).then(|| word.to_uppercase())
}

#[cfg(test)]
mod tests {
    use super::keyword;

    #[test]
    fn keywords_are_the_first_word_without_punctuation() {
        assert_eq!(keyword("  stop. "), Some("STOP".to_owned()));
        assert_eq!(keyword("stop by the shop"), None);
        assert_eq!(keyword("Start"), Some("START".to_owned()));
        assert_eq!(keyword("   "), None);
        assert_eq!(keyword("!!"), None);
    }
}
