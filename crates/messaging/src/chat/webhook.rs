//! The chat provider's webhook (`/hooks/chat/{token}`): the verification challenge, and signed
//! deliveries of statuses, customers' messages, echoes of messages the business sent from its
//! own app, and number quality changes. A delivery applied twice changes nothing twice:
//! statuses move only forward, and a message (inbound or echo) is stored once by its provider id.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::state::Status as _;
use kernel::{Error, TenantId};
use providers::ReceiptStatus;
use providers::chat::{ChatEvent, ChatInbound, ChatQuality, ChatStatus};
use serde::Serialize;
use serde_json::{Value, json};
use store::jobs::Enqueue;
use time::OffsetDateTime;

use crate::channels::{self, Channel};
use crate::chat::accounts::{self, AccountRow, ChatCredentials};
use crate::chat::conversations::Writer;
use crate::chat::orders::TakeChatOrder;
use crate::dispatch::{Delta, settle};
use crate::messages::Message;
use crate::receipts::{ApplyReceipts, ReceiptItem};
use crate::schema::{chat_group_messages, chat_phone_numbers, messages};
use crate::send::{NewMessage, new_uid};
use crate::status::MessageStatus;

/// A status that matched no message may have overtaken the answer to its send (the provider
/// writes before our record commits): it is tried once more this much later.
const RACE_RETRY: time::Duration = time::Duration::seconds(10);

/// What one delivery did (the answer to the provider, and the callback log's outcome).
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct WebhookOutcome {
    /// Messages whose status moved.
    pub statuses_applied: usize,
    /// Statuses that said nothing new (late or repeated).
    pub statuses_late: usize,
    /// Statuses of no known message yet (tried again shortly).
    pub statuses_unknown: usize,
    /// Customers' messages stored.
    pub messages_received: usize,
    /// Echoes stored.
    pub echoes: usize,
    /// Templates whose review state the delivery reported.
    pub templates_updated: usize,
    /// Group changes applied (creations confirmed, people joining and leaving, requests...).
    pub group_updates: usize,
    /// Participants' messages written in groups, stored.
    pub group_messages: usize,
    /// Form replies stored as answers.
    pub form_answers: usize,
    /// Form versions whose provider status the delivery reported.
    pub flows_updated: usize,
    /// Messages (inbound or echoes) already stored by an earlier delivery.
    pub duplicates: usize,
    /// What the delivery carried that this service does not act on.
    pub ignored: Vec<String>,
}

impl crate::MessagingService {
    /// The chat channel a webhook path names, and its account's credentials.
    async fn chat_channel(&self, token: &str) -> Result<(Channel, ChatCredentials), Error> {
        let channel = channels::by_callback_token(&mut *self.global_conn().await?, token).await?;
        if channel.kind != "chat" {
            return Err(Error::not_found("Channel"));
        }
        let credentials = ChatCredentials::open(self.gateways.keyring(), &channel)?;
        Ok((channel, credentials))
    }

    /// `GET /hooks/chat/{token}`: the provider's subscription check. Answers the challenge to
    /// echo when the mode is `subscribe` and the verify token is the account's; 403 otherwise.
    pub async fn chat_challenge(
        &self,
        token: &str,
        mode: Option<&str>,
        verify_token: Option<&str>,
        challenge: Option<&str>,
    ) -> Result<String, Error> {
        let (_, credentials) = self.chat_channel(token).await?;
        let matches = verify_token.is_some_and(|given| same(given.as_bytes(), credentials.verify_token.as_bytes()));
        match (mode, matches, challenge) {
            (Some("subscribe"), true, Some(challenge)) => Ok(challenge.to_owned()),
            _ => Err(Error::forbidden("The verification request does not match this webhook's verify token.")),
        }
    }

    /// `POST /hooks/chat/{token}`: a delivery, verified by `X-Hub-Signature-256` against the
    /// account's app secret (401 when it does not hold, before anything is read).
    pub async fn chat_webhook(
        &self,
        token: &str,
        signature: Option<&str>,
        body: &[u8],
    ) -> Result<WebhookOutcome, Error> {
        let (channel, credentials) = self.chat_channel(token).await?;
        if !providers::chat::signature_holds(&credentials.app_secret, body, signature) {
            return Err(Error::unauthenticated("The X-Hub-Signature-256 of this delivery does not hold."));
        }
        let tenant = TenantId(channel.tenant_id);
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        let webhook = match providers::chat::parse_webhook(body) {
            Ok(webhook) => webhook,
            Err(error) => {
                crate::receipts::log_chat(&mut conn, &channel, body, "invalid", now).await?;
                return Err(Error::validation(format!("The webhook delivery could not be read: {error}")));
            }
        };
        let account = accounts::of_channel(&mut conn, tenant, channel.id).await?;
        let mut outcome = WebhookOutcome { ignored: webhook.ignored.clone(), ..Default::default() };
        let mut receipts = Vec::new();
        // form replies are taken once this delivery's connection is back in the pool: taking
        // one needs connections of its own (the answer, a menu's order, a data-table row), and
        // holding one while asking for more would let a burst of replies exhaust the pool
        let mut replies: Vec<(Option<i64>, ChatInbound)> = Vec::new();
        for event in webhook.events {
            match event {
                ChatEvent::Status(status) => receipts.push(receipt(&status)),
                ChatEvent::Inbound(inbound) if inbound.group_id.is_some() => {
                    let group = inbound.group_id.as_deref().unwrap_or_default();
                    match crate::chat::groups::updates::group_message(
                        &mut conn, tenant, account.id, &inbound, group, now,
                    )
                    .await?
                    {
                        Some(true) => outcome.group_messages += 1,
                        Some(false) => outcome.duplicates += 1,
                        None => outcome.ignored.push(format!("group_message:{group}")),
                    }
                }
                ChatEvent::Inbound(inbound) => {
                    let stored = self.store_inbound(&mut conn, &channel, &account, &inbound, now).await?;
                    if stored {
                        outcome.messages_received += 1
                    } else {
                        outcome.duplicates += 1
                    }
                    // a form's reply is an answer too (stored once by its message id)
                    if inbound.raw["interactive"]["type"] == "nfm_reply" {
                        let conversation = conversation_of(&mut conn, tenant, &inbound).await?;
                        replies.push((conversation, inbound));
                    }
                }
                ChatEvent::Flow(status) => {
                    if crate::chat::forms::publish::flow_status(&mut conn, tenant, &status, now).await? {
                        outcome.flows_updated += 1;
                    } else {
                        outcome.ignored.push(format!("flows:{}", status.flow_id));
                    }
                }
                ChatEvent::Group { phone_number_id, update } => {
                    let known = crate::chat::groups::updates::apply(
                        &mut conn,
                        tenant,
                        account.id,
                        &phone_number_id,
                        &update,
                        now,
                    )
                    .await?;
                    if known {
                        outcome.group_updates += 1;
                    } else {
                        outcome.ignored.push(format!("group:{}", update.group_id().unwrap_or("request")));
                    }
                }
                ChatEvent::Echo(echo) => {
                    let stored = self.store_echo(&mut conn, &channel, &account, &echo, now).await?;
                    if stored { outcome.echoes += 1 } else { outcome.duplicates += 1 }
                }
                ChatEvent::Quality(quality) => quality_changed(&mut conn, tenant, &account, &quality, now).await?,
                ChatEvent::TemplateStatus(update) => {
                    let found = conn
                        .transaction(async |conn| {
                            crate::chat::templates::review::provider_status(conn, &account, &update, now).await
                        })
                        .await?;
                    if found {
                        outcome.templates_updated += 1;
                    } else {
                        outcome.ignored.push(format!("message_template_status_update:{}", update.template_id));
                    }
                }
            }
        }
        let receipts: Vec<ReceiptItem> = receipts.into_iter().flatten().collect();
        if !receipts.is_empty() {
            let changed = crate::receipts::apply(&mut conn, &channel, &receipts, now).await?;
            let known = known_ids(&mut conn, &channel, &receipts).await?;
            let unknown: Vec<ReceiptItem> =
                receipts.iter().filter(|r| !known.contains(&r.gateway_message_id)).cloned().collect();
            outcome.statuses_applied = changed.len();
            outcome.statuses_unknown = unknown.len();
            outcome.statuses_late = receipts.len().saturating_sub(changed.len() + unknown.len());
            if !unknown.is_empty() {
                let job = ApplyReceipts { tenant_id: tenant, channel_id: channel.id, receipts: unknown };
                let options = Enqueue { tenant_id: Some(tenant), run_at: Some(now + RACE_RETRY), ..Default::default() };
                store::jobs::enqueue(&mut conn, &job, options).await?;
            }
        }
        let applied = outcome.statuses_applied
            + outcome.messages_received
            + outcome.echoes
            + outcome.templates_updated
            + outcome.group_updates
            + outcome.group_messages
            + outcome.flows_updated;
        let summary = if applied > 0 {
            "applied"
        } else if outcome.duplicates + outcome.statuses_late > 0 {
            "late"
        } else {
            "unknown"
        };
        crate::receipts::log_chat(&mut conn, &channel, body, summary, now).await?;
        drop(conn);
        for (conversation, inbound) in replies {
            if self.take_form_reply(tenant, conversation, &inbound, now).await? {
                outcome.form_answers += 1;
            }
        }
        Ok(outcome)
    }

    /// Stores a customer's message and opens the window; `false` when it was stored before.
    async fn store_inbound(
        &self,
        conn: &mut store::Conn,
        channel: &Channel,
        account: &AccountRow,
        inbound: &ChatInbound,
        now: OffsetDateTime,
    ) -> Result<bool, Error> {
        let tenant = TenantId(channel.tenant_id);
        let customer = e164(&inbound.customer);
        let business = business_number(conn, tenant, account, inbound).await?;
        conn.transaction(async |conn| {
            let writer = Writer {
                account: account.id,
                phone_number_id: &inbound.phone_number_id,
                customer: &customer,
                chat_id: &inbound.customer,
                name: inbound.profile_name.as_deref(),
            };
            let conversation = crate::chat::conversations::of_customer(conn, tenant, writer, now).await?;
            let row = message_row(channel, inbound, conversation, "inbound", (customer.clone(), business), now);
            let Some(message) = insert_once(conn, &row).await? else { return Ok(false) };
            crate::chat::conversations::customer_wrote(conn, conversation, &message, now).await?;
            settle(conn, &[(message.clone(), Delta::None)], now).await?;
            // an order from the chat catalogue goes to the shops, with the message
            if inbound.kind == "order" {
                let job = TakeChatOrder { tenant_id: tenant, message_id: message.id };
                store::jobs::enqueue(conn, &job, Enqueue { tenant_id: Some(tenant), ..Default::default() }).await?;
            }
            // A reaction to one of the business's messages shows on that message too.
            if inbound.kind == "reaction"
                && let Some(target) = inbound.raw["reaction"]["message_id"].as_str()
            {
                reacted(conn, channel, target, &inbound.raw["reaction"], now).await?;
            }
            Ok(true)
        })
        .await
    }

    /// Stores a message the business sent from its own app (`message.echoed`); `false` when it
    /// was stored before.
    async fn store_echo(
        &self,
        conn: &mut store::Conn,
        channel: &Channel,
        account: &AccountRow,
        echo: &ChatInbound,
        now: OffsetDateTime,
    ) -> Result<bool, Error> {
        let tenant = TenantId(channel.tenant_id);
        let customer = e164(&echo.customer);
        conn.transaction(async |conn| {
            let writer = Writer {
                account: account.id,
                phone_number_id: &echo.phone_number_id,
                customer: &customer,
                chat_id: &echo.customer,
                name: None,
            };
            let conversation = crate::chat::conversations::of_customer(conn, tenant, writer, now).await?;
            let mut row =
                message_row(channel, echo, conversation, "outbound", (echo.phone_number_id.clone(), customer), now);
            row.status = MessageStatus::Sent.as_str();
            let Some(message) = insert_once(conn, &row).await? else { return Ok(false) };
            let message: Message = diesel::update(messages::table.find(message.id))
                .set(messages::sent_at.eq(now))
                .returning(Message::as_returning())
                .get_result(conn)
                .await?;
            crate::chat::conversations::wrote(conn, tenant, std::slice::from_ref(&message), now).await?;
            store::outbox::emit(conn, tenant, "message.echoed", message.event_payload(), now).await?;
            Ok(true)
        })
        .await
    }
}

/// Compares secrets in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0_u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// A status as a receipt; `sent` says nothing the send's answer did not.
fn receipt(status: &ChatStatus) -> Option<ReceiptItem> {
    let id = status.provider_message_id.replace('\0', "");
    let status = match status.status.as_str() {
        "delivered" => ReceiptStatus::Delivered,
        "read" => ReceiptStatus::Read,
        "failed" => ReceiptStatus::Failed {
            reason: status.error.clone().unwrap_or_else(|| "The chat provider reported a failure".to_owned()),
        },
        _ => return None,
    };
    Some(ReceiptItem::new(id, &status))
}

/// The provider ids among `receipts` that some message of the channel has.
async fn known_ids(
    conn: &mut store::Conn,
    channel: &Channel,
    receipts: &[ReceiptItem],
) -> Result<std::collections::HashSet<String>, Error> {
    let ids: Vec<&str> = receipts.iter().map(|r| r.gateway_message_id.as_str()).collect();
    let found: Vec<Option<String>> = messages::table
        .filter(messages::tenant_id.eq(channel.tenant_id))
        .filter(messages::tenant_channel_id.eq(channel.id))
        .filter(messages::gateway_message_id.eq_any(&ids))
        .select(messages::gateway_message_id)
        .load(conn)
        .await?;
    // a group message's statuses are not followed: known, so not tried again
    let in_groups: Vec<Option<String>> = chat_group_messages::table
        .filter(chat_group_messages::tenant_id.eq(channel.tenant_id))
        .filter(chat_group_messages::provider_message_id.eq_any(&ids))
        .select(chat_group_messages::provider_message_id)
        .load(conn)
        .await?;
    Ok(found.into_iter().chain(in_groups).flatten().collect())
}

/// The conversation an inbound message was stored in.
async fn conversation_of(
    conn: &mut store::Conn,
    tenant: TenantId,
    inbound: &ChatInbound,
) -> Result<Option<i64>, Error> {
    use crate::schema::conversations;
    Ok(conversations::table
        .filter(conversations::tenant_id.eq(tenant.0))
        .filter(conversations::phone_number_id.eq(&inbound.phone_number_id))
        .filter(conversations::customer.eq(e164(&inbound.customer)))
        .select(conversations::id)
        .first(conn)
        .await
        .optional()?)
}

/// A chat id (digits) as E.164.
fn e164(chat_id: &str) -> String {
    let digits: String = chat_id.chars().filter(char::is_ascii_digit).collect();
    format!("+{digits}")
}

/// The business number a message came in on: the account's number with that id, else the
/// number the provider displays.
async fn business_number(
    conn: &mut store::Conn,
    tenant: TenantId,
    account: &AccountRow,
    inbound: &ChatInbound,
) -> Result<String, Error> {
    Ok(match accounts::number_of(conn, tenant, account.id, &inbound.phone_number_id).await? {
        Some((_, number)) => number,
        None => e164(&inbound.display_phone_number),
    })
}

/// The row of a stored inbound message or echo; `(sender, recipient)` as the direction has them.
fn message_row(
    channel: &Channel,
    inbound: &ChatInbound,
    conversation: i64,
    direction: &'static str,
    (sender, recipient): (String, String),
    now: OffsetDateTime,
) -> NewMessage {
    let media = providers::chat::MEDIA_TYPES.contains(&inbound.kind.as_str());
    let mut metadata = json!({
        "message_type": inbound.kind,
        "source": if direction == "inbound" { "customer" } else { "echo" },
        "message": inbound.raw,
    });
    if direction == "outbound" {
        metadata["echo"] = json!(true);
    }
    if let Some(name) = &inbound.profile_name {
        metadata["profile_name"] = json!(name);
    }
    if let Some(reply_to) = &inbound.reply_to {
        metadata["reply_to"] = json!(reply_to);
    }
    if let Some((id, mime)) = &inbound.media {
        metadata["media"] = json!({"id": id, "mime_type": mime});
    }
    let body = inbound.text.clone().unwrap_or_else(|| format!("[{}]", inbound.kind));
    NewMessage {
        uid: new_uid(),
        tenant_id: channel.tenant_id,
        direction,
        channel_type: "chat",
        tenant_channel_id: Some(channel.id),
        channel_code: Some(channel.code.clone()),
        sender: Some(sender),
        recipient,
        // PostgreSQL text cannot hold NUL
        body: body.replace('\0', ""),
        status: MessageStatus::Received.as_str(),
        media_url: None,
        media_type: media.then(|| inbound.kind.clone()),
        error_message: None,
        gateway_message_id: Some(inbound.provider_message_id.replace('\0', "")),
        segments: 1,
        encoding: "ucs2",
        price_minor: 0,
        campaign_id: None,
        contact_id: None,
        scheduled_at: None,
        created_at: now,
        updated_at: now,
        metadata: Some(strip_nul(metadata)),
        template_params: None,
        conversation_id: Some(conversation),
    }
}

/// JSON text in PostgreSQL cannot hold `\u0000` either.
fn strip_nul(value: Value) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace('\0', "")),
        Value::Array(items) => Value::Array(items.into_iter().map(strip_nul).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k.replace('\0', ""), strip_nul(v))).collect())
        }
        other => other,
    }
}

/// Inserts a message unless its provider id is stored already (a unique index).
async fn insert_once(conn: &mut store::Conn, row: &NewMessage) -> Result<Option<Message>, Error> {
    Ok(diesel::insert_into(messages::table)
        .values(row)
        .on_conflict_do_nothing()
        .returning(Message::as_returning())
        .get_result(conn)
        .await
        .optional()?)
}

/// A customer reacted to the business's message `target`: the reaction is kept in its
/// metadata (an empty emoji removes it) and `message.updated` says so.
async fn reacted(
    conn: &mut store::Conn,
    channel: &Channel,
    target: &str,
    reaction: &Value,
    now: OffsetDateTime,
) -> Result<(), Error> {
    let emoji = reaction["emoji"].as_str().unwrap_or_default();
    let found: Option<Message> = messages::table
        .filter(messages::tenant_id.eq(channel.tenant_id))
        .filter(messages::tenant_channel_id.eq(channel.id))
        .filter(messages::gateway_message_id.eq(target))
        .filter(messages::direction.eq("outbound"))
        .select(Message::as_select())
        .first(conn)
        .await
        .optional()?;
    let Some(message) = found else { return Ok(()) };
    let mut metadata = message.metadata.clone().unwrap_or_else(|| json!({}));
    if emoji.is_empty() {
        if let Some(map) = metadata.as_object_mut() {
            map.remove("customer_reaction");
        }
    } else {
        metadata["customer_reaction"] = json!({"emoji": emoji, "at": now.unix_timestamp()});
    }
    let updated: Message = diesel::update(messages::table.find(message.id))
        .set((messages::metadata.eq(strip_nul(metadata)), messages::updated_at.eq(now)))
        .returning(Message::as_returning())
        .get_result(conn)
        .await?;
    store::outbox::emit(conn, TenantId(channel.tenant_id), "message.updated", updated.event_payload(), now).await?;
    Ok(())
}

/// A number's quality or tier changed: `FLAGGED` is a red rating, `UNFLAGGED` a green one;
/// the tier is the provider's current limit.
async fn quality_changed(
    conn: &mut store::Conn,
    tenant: TenantId,
    account: &AccountRow,
    quality: &ChatQuality,
    now: OffsetDateTime,
) -> Result<(), Error> {
    let rating = match quality.event.as_str() {
        "FLAGGED" => Some("RED"),
        "UNFLAGGED" => Some("GREEN"),
        _ => None,
    };
    let number = e164(&quality.display_phone_number);
    let target = || {
        chat_phone_numbers::table
            .filter(chat_phone_numbers::tenant_id.eq(tenant.0))
            .filter(chat_phone_numbers::account_id.eq(account.id))
            .filter(chat_phone_numbers::phone_number.eq(number.clone()))
    };
    if let Some(rating) = rating {
        diesel::update(target())
            .set((chat_phone_numbers::quality_rating.eq(rating), chat_phone_numbers::updated_at.eq(now)))
            .execute(conn)
            .await?;
    }
    if let Some(limit) = &quality.current_limit {
        diesel::update(target())
            .set((chat_phone_numbers::messaging_tier.eq(limit), chat_phone_numbers::updated_at.eq(now)))
            .execute(conn)
            .await?;
    }
    Ok(())
}
