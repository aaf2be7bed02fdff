//! `POST /sms/send` (contract: SMS send body): validate, route, price and bill, then write one
//! message per recipient with its dispatch job in one transaction.

use kernel::state::Status as _;
use std::collections::BTreeMap;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, TenantId};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::openapi::schema::{
    AllOfBuilder, AnyOfBuilder, ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::channels::{Channel, RateCard, Route};
use crate::dispatch::{Delta, SendMessages, settle};
use crate::messages::Message;
use crate::recipients::Recipient;
use crate::schema::messages;
use crate::segments::{Encoding, estimate};
use crate::status::MessageStatus;
use crate::{MessagingService, blacklist, channels};

/// What an empty message is replaced by (contract: "An empty message is replaced by a generic body").
pub const GENERIC_BODY: &str = "(no message)";
/// Distinct recipients one request may name; bigger audiences are what campaigns are for.
pub const MAX_RECIPIENTS: usize = 10_000;

/// Numbers as the schema describes them: tokens of 6 to 20 digits after an optional `+`,
/// separated by commas, semicolons or whitespace; empty is no number. (The reader also drops
/// punctuation inside a number and answers a token that is no number with a `failed` record.)
pub const NUMBERS_PATTERN: &str = r"^[\s,;]*(\+?[0-9]{6,20}([\s,;]+\+?[0-9]{6,20})*)?[\s,;]*$";
/// `plain`, `text`, `sms` or `chat` in any case, spaces around trimmed; empty is the default.
pub const MESSAGE_TYPE_PATTERN: &str =
    r"^\s*([Pp][Ll][Aa][Ii][Nn]|[Tt][Ee][Xx][Tt]|[Ss][Mm][Ss]|[Cc][Hh][Aa][Tt])?\s*$";

/// The SMS send body. `tenant_channel_id` and unknown members are ignored.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct SendRequest {
    /// Numbers separated by commas, semicolons or whitespace (at most 4,000 characters).
    #[schema(max_length = 4000, pattern = r"^[\s,;]*(\+?[0-9]{6,20}([\s,;]+\+?[0-9]{6,20})*)?[\s,;]*$")]
    pub recipient: Option<String>,
    /// More numbers; each entry at most 191 characters and may hold separators too.
    #[schema(schema_with = recipients_schema)]
    pub recipients: Option<Vec<String>>,
    /// An approved sender id, SMS-capable assigned number or active short code (at most 64).
    #[schema(max_length = 64)]
    pub sender_id: Option<String>,
    /// The text (at most 4,096); wins over `body`. Empty or blank counts as absent; with
    /// neither, the text is `(no message)`.
    #[schema(max_length = 4096)]
    pub message: Option<String>,
    #[schema(max_length = 4096)]
    pub body: Option<String>,
    /// `plain` (default), `text` or `sms` (any case) send an SMS; `chat` sends a chat message
    /// as `POST /chat/send` does. Wins over `type`.
    #[schema(
        max_length = 60,
        pattern = r"^\s*([Pp][Ll][Aa][Ii][Nn]|[Tt][Ee][Xx][Tt]|[Ss][Mm][Ss]|[Cc][Hh][Aa][Tt])?\s*$"
    )]
    pub message_type: Option<String>,
    /// Read like `message_type` when that is absent or null (ignored otherwise).
    #[serde(rename = "type")]
    #[schema(max_length = 60)]
    pub kind: Option<String>,
    #[schema(schema_with = schedule_time)]
    pub schedule_time: Option<String>,
    #[schema(max_length = 2048)]
    pub media_url: Option<String>,
    #[schema(max_length = 32)]
    pub media_type: Option<String>,
    /// With `message_type: chat`: as in `POST /chat/send`.
    #[schema(max_length = 191)]
    pub in_reply_to_gateway_id: Option<String>,
    /// With `message_type: chat`: as in `POST /chat/send`.
    pub template: Option<crate::chat::send::TemplateBody>,
    /// With `message_type: chat`: as in `POST /chat/send`.
    #[schema(value_type = Option<Object>)]
    pub interactive: Option<serde_json::Value>,
    /// With `message_type: chat`: as in `POST /chat/send`.
    pub reaction: Option<crate::chat::send::ReactionBody>,
}

/// `schedule_time` of a send or a campaign.
pub(crate) fn schedule_time() -> Schema {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .max_length(Some(100))
        .pattern(Some(kernel::schema::trimmed(&kernel::schema::date_time())))
        .description(Some("ISO 8601 with an offset or `Z`; a future time queues the sending until then."))
        .into()
}

fn recipients_schema() -> Schema {
    OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .item(
            ArrayBuilder::new().items(
                ObjectBuilder::new().schema_type(Type::String).max_length(Some(191)).pattern(Some(NUMBERS_PATTERN)),
            ),
        )
        .description(Some("More numbers; each entry at most 191 characters and may hold separators too."))
        .into()
}

/// `POST /sms/send`: a [`SendRequest`] that names at least one number (in `recipient` or
/// `recipients`) and whose `type` is a known one when `message_type` does not win over it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(transparent)]
pub struct SendBody(pub SendRequest);

impl PartialSchema for SendBody {
    fn schema() -> RefOr<Schema> {
        let recipient = ObjectBuilder::new()
            .schema_type(Type::Object)
            .required("recipient")
            .property("recipient", ObjectBuilder::new().schema_type(Type::String).pattern(Some("[0-9]")));
        // at least one entry holds a digit (empty entries are dropped); the derive has no
        // `contains`, so it is written into the array's own members
        let mut contains = utoipa::openapi::extensions::Extensions::default();
        contains.insert("contains".to_owned(), serde_json::json!({"type": "string", "pattern": "[0-9]"}));
        let recipients = ObjectBuilder::new().schema_type(Type::Object).required("recipients").property(
            "recipients",
            ArrayBuilder::new()
                .items(ObjectBuilder::new().schema_type(Type::String))
                .min_items(Some(1))
                .extensions(Some(contains)),
        );
        let message_type = ObjectBuilder::new()
            .schema_type(Type::Object)
            .required("message_type")
            .property("message_type", ObjectBuilder::new().schema_type(Type::String));
        let kind = ObjectBuilder::new().schema_type(Type::Object).property(
            "type",
            ObjectBuilder::new()
                .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
                .pattern(Some(MESSAGE_TYPE_PATTERN)),
        );
        AllOfBuilder::new()
            .item(Ref::from_schema_name(SendRequest::name()))
            .item(AnyOfBuilder::new().item(recipient).item(recipients))
            .item(AnyOfBuilder::new().item(message_type).item(kind))
            .description(Some(
                "A `SendRequest` naming at least one number in `recipient` or `recipients`; `type` \
                 follows the `message_type` rule when `message_type` is absent or null.",
            ))
            .into()
    }
}

impl ToSchema for SendBody {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((SendRequest::name().into(), SendRequest::schema()));
        <SendRequest as ToSchema>::schemas(schemas);
    }
}

/// One message of a send's answer (contract: `data.messages[]`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SentMessage {
    pub id: i64,
    pub uid: String,
    pub recipient: String,
    pub status: String,
    pub gateway_message_id: Option<String>,
    pub error_message: Option<String>,
    /// Segment estimate.
    pub segments: i32,
    /// `gsm7` or `ucs2`.
    pub encoding: String,
    pub price_minor: i64,
    /// When a scheduled message will be sent.
    #[serde(with = "time::serde::rfc3339::option")]
    pub scheduled_at: Option<OffsetDateTime>,
}

impl From<Message> for SentMessage {
    fn from(m: Message) -> Self {
        Self {
            id: m.id,
            uid: m.uid,
            recipient: m.recipient,
            status: m.status,
            gateway_message_id: m.gateway_message_id,
            error_message: m.error_message,
            segments: m.segments,
            encoding: m.encoding,
            price_minor: m.price_minor,
            scheduled_at: m.scheduled_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SendResult {
    pub messages: Vec<SentMessage>,
}

/// A send body that passed every rule.
struct Checked {
    recipients: Vec<Recipient>,
    sender_id: Option<String>,
    body: String,
    schedule: Option<OffsetDateTime>,
    media_url: Option<String>,
    media_type: Option<String>,
}

/// The contract's length limits; a NUL character (which PostgreSQL cannot store) is refused
/// here too, as bad input rather than a 500.
pub(crate) fn too_long(errors: &mut BTreeMap<String, Vec<String>>, field: &str, value: Option<&str>, max: usize) {
    let message = match value {
        Some(v) if v.chars().count() > max => format!("The {field} may not be greater than {max} characters."),
        Some(v) if v.contains('\0') => format!("The {field} must not contain NUL characters."),
        _ => return,
    };
    errors.entry(field.to_owned()).or_default().push(message);
}

/// ISO 8601 with an offset or `Z` (contract: `schedule_time`); anything else is a 422.
pub fn parse_schedule(raw: Option<&str>) -> Result<Option<OffsetDateTime>, Error> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else { return Ok(None) };
    OffsetDateTime::parse(raw, &time::format_description::well_known::Iso8601::DEFAULT).map(Some).map_err(|_| {
        Error::field(
            "schedule_time",
            "The schedule_time must be an ISO 8601 time with an offset or Z, like 2026-12-01T09:00:00+03:00.",
        )
    })
}

/// `plain`, `text`, `sms` mean SMS; `chat` routes to chat (answers whether it does).
/// `field` names the member the value came from (`message_type`, or its alias `type`).
fn check_message_type(field: &str, raw: Option<&str>) -> Result<bool, Error> {
    match raw.map(|t| t.trim().to_ascii_lowercase()).as_deref() {
        None | Some("" | "plain" | "text" | "sms") => Ok(false),
        Some("chat") => Ok(true),
        Some(_) => Err(Error::field(field, format!("The {field} must be plain, text, sms or chat."))),
    }
}

/// Whether an SMS send body asks for chat (contract: `chat` routes to chat).
fn is_chat(req: &SendRequest) -> Result<bool, Error> {
    match (&req.message_type, &req.kind) {
        (Some(kind), _) => check_message_type("message_type", Some(kind)),
        (None, kind) => check_message_type("type", kind.as_deref()),
    }
}

fn check(req: SendRequest, calling_code: &str) -> Result<Checked, Error> {
    let mut errors = BTreeMap::new();
    too_long(&mut errors, "recipient", req.recipient.as_deref(), 4_000);
    for (i, entry) in req.recipients.iter().flatten().enumerate() {
        too_long(&mut errors, &format!("recipients[{i}]"), Some(entry), 191);
    }
    too_long(&mut errors, "sender_id", req.sender_id.as_deref(), 64);
    too_long(&mut errors, "message", req.message.as_deref(), 4_096);
    too_long(&mut errors, "body", req.body.as_deref(), 4_096);
    too_long(&mut errors, "message_type", req.message_type.as_deref(), 60);
    too_long(&mut errors, "type", req.kind.as_deref(), 60);
    too_long(&mut errors, "schedule_time", req.schedule_time.as_deref(), 100);
    too_long(&mut errors, "media_url", req.media_url.as_deref(), 2_048);
    too_long(&mut errors, "media_type", req.media_type.as_deref(), 32);
    if !errors.is_empty() {
        return Err(Error::fields(errors));
    }
    let schedule = parse_schedule(req.schedule_time.as_deref())?;
    let recipients =
        crate::recipients::plan(req.recipient.as_deref(), req.recipients.as_deref().unwrap_or_default(), calling_code);
    if recipients.is_empty() {
        return Err(Error::field("recipient", "At least one recipient is required."));
    }
    if recipients.len() > MAX_RECIPIENTS {
        return Err(Error::field(
            "recipients",
            format!("A send may name at most {MAX_RECIPIENTS} numbers; use a campaign for more."),
        ));
    }
    if recipients.iter().all(|r| r.number.is_none()) {
        return Err(Error::field("recipient", "No recipient is a valid phone number."));
    }
    // contract: `message` wins over `body`; an empty one counts as absent.
    let nonempty = |v: Option<String>| v.filter(|v| !v.trim().is_empty());
    let body = nonempty(req.message).or(nonempty(req.body)).unwrap_or_else(|| GENERIC_BODY.to_owned());
    Ok(Checked {
        recipients,
        sender_id: req.sender_id.filter(|s| !s.trim().is_empty()),
        body,
        schedule,
        media_url: req.media_url.filter(|s| !s.is_empty()),
        media_type: req.media_type.filter(|s| !s.is_empty()),
    })
}

/// A message row about to be written.
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = messages)]
pub(crate) struct NewMessage {
    pub uid: String,
    pub tenant_id: i64,
    pub direction: &'static str,
    pub channel_type: &'static str,
    pub tenant_channel_id: Option<i64>,
    pub channel_code: Option<String>,
    pub sender: Option<String>,
    pub recipient: String,
    pub body: String,
    pub status: &'static str,
    pub media_url: Option<String>,
    pub media_type: Option<String>,
    pub error_message: Option<String>,
    pub gateway_message_id: Option<String>,
    pub segments: i32,
    pub encoding: &'static str,
    pub price_minor: i64,
    pub campaign_id: Option<i64>,
    pub contact_id: Option<i64>,
    pub scheduled_at: Option<OffsetDateTime>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
    pub metadata: Option<serde_json::Value>,
    pub template_params: Option<serde_json::Value>,
    pub conversation_id: Option<i64>,
}

pub(crate) fn new_uid() -> String {
    crate::ids::MessageUid::generate().into()
}

pub(crate) fn encoding_name(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::Gsm7 => "gsm7",
        Encoding::Ucs2 => "ucs2",
    }
}

/// Writes messages in slices that stay under PostgreSQL's bind-parameter limit.
pub(crate) async fn insert(conn: &mut store::Conn, rows: &[NewMessage]) -> Result<Vec<Message>, Error> {
    let mut written = Vec::with_capacity(rows.len());
    for slice in rows.chunks(2_000) {
        let mut batch: Vec<Message> = diesel::insert_into(messages::table)
            .values(slice)
            .on_conflict_do_nothing()
            .returning(Message::as_returning())
            .get_results(conn)
            .await?;
        written.append(&mut batch);
    }
    Ok(written)
}

/// Queues dispatch of `ids` in chunks, in the caller's transaction.
pub(crate) async fn enqueue_dispatch(
    conn: &mut store::Conn,
    tenant: TenantId,
    ids: &[i64],
    chunk: usize,
    run_at: Option<OffsetDateTime>,
) -> Result<(), Error> {
    for ids in ids.chunks(chunk.max(1)) {
        let job = SendMessages { tenant_id: tenant, ids: ids.to_vec() };
        let options = store::jobs::Enqueue { tenant_id: Some(tenant), run_at, ..Default::default() };
        store::jobs::enqueue(conn, &job, options).await?;
    }
    Ok(())
}

/// What every send does with its rows, in its transaction: writes them, says which failed at
/// creation, queues their dispatch, and debits the wallet (402 when a prepaid one cannot pay).
/// Answers the messages and, for a small immediate send, the ids to try inline before answering.
pub(crate) async fn write(
    conn: &mut store::Conn,
    tenant: TenantId,
    rows: &[NewMessage],
    (now, due): (OffsetDateTime, Option<OffsetDateTime>),
    config: &crate::MessagingConfig,
    note: &str,
) -> Result<(Vec<Message>, Option<Vec<i64>>), Error> {
    let cost: i64 = rows.iter().map(|r| r.price_minor).sum();
    let messages = insert(conn, rows).await?;
    // records failed at creation (invalid, opted out, no route) say so too
    let failed: Vec<(Message, Delta)> = messages
        .iter()
        .filter(|m| m.status == MessageStatus::Failed.as_str())
        .map(|m| (m.clone(), Delta::None))
        .collect();
    settle(conn, &failed, now).await?;
    let queued: Vec<i64> =
        messages.iter().filter(|m| m.status == MessageStatus::Queued.as_str()).map(|m| m.id).collect();
    // A small immediate send is tried before answering; its job waits a little, as the
    // fallback should this process die mid-way.
    let inline = due.is_none() && !queued.is_empty() && queued.len() <= config.inline_max;
    let run_at = match (due, inline) {
        (Some(at), _) => Some(at),
        (None, true) => Some(now + config.fallback_after()),
        (None, false) => None,
    };
    enqueue_dispatch(conn, tenant, &queued, config.send_chunk, run_at).await?;
    // Last, so the wallet row is locked only until the commit that follows: the account's
    // concurrent sends queue on it for as short a time as possible.
    if let Err(short) = accounts::wallet::debit(conn, tenant, cost, note).await? {
        return Err(insufficient(conn, tenant, short).await);
    }
    Ok((messages, inline.then_some(queued)))
}

impl MessagingService {
    /// `POST /sms/send`. Invalid and opted-out numbers and a missing route become `failed`
    /// records (not charged); the rest are priced per segment and debited in one amount,
    /// refused with 402 and nothing written when a prepaid wallet cannot pay it all.
    pub async fn send(&self, caller: &Caller, req: SendRequest) -> Result<SendResult, Error> {
        if is_chat(&req)? {
            return self.send_chat(caller, req.into()).await;
        }
        let checked = check(req, &caller.calling_code)?;
        let tenant = caller.tenant_id;
        let now = self.clock.now();
        let due = checked.schedule.filter(|at| *at > now);
        let mut conn = self.conn(tenant).await?;
        let config = self.config.clone();
        let (messages, inline) = conn
            .transaction(async |conn| {
                let route = channels::route(conn, tenant, checked.sender_id.as_deref()).await?;
                let numbers: Vec<String> = checked.recipients.iter().filter_map(|r| r.number.clone()).collect();
                let opted_out = blacklist::listed(conn, tenant, &numbers).await?;
                let rates = RateCard::load(conn, tenant, config.default_price_minor).await?;
                let estimate = estimate(&checked.body);
                let rows: Vec<NewMessage> = checked
                    .recipients
                    .iter()
                    .map(|r| {
                        let (status, error, price) = match (&r.number, &route) {
                            (None, _) => {
                                (MessageStatus::Failed.as_str(), Some(format!("Invalid phone number: {}", r.input)), 0)
                            }
                            (Some(n), _) if opted_out.contains(n) => {
                                (MessageStatus::Failed.as_str(), Some(OPTED_OUT.to_owned()), 0)
                            }
                            (Some(_), None) => (MessageStatus::Failed.as_str(), Some(NO_ROUTE.to_owned()), 0),
                            (Some(n), Some(_)) => {
                                (MessageStatus::Queued.as_str(), None, rates.price(n) * i64::from(estimate.segments))
                            }
                        };
                        NewMessage {
                            uid: new_uid(),
                            tenant_id: tenant.0,
                            direction: "outbound",
                            channel_type: "sms",
                            tenant_channel_id: route.as_ref().map(|r| r.channel.id),
                            channel_code: route.as_ref().map(|r| r.channel.code.clone()),
                            sender: route.as_ref().and_then(|r: &Route| r.sender.clone()),
                            recipient: r.number.clone().unwrap_or_else(|| r.input.clone()),
                            body: checked.body.clone(),
                            status,
                            media_url: checked.media_url.clone(),
                            media_type: checked.media_type.clone(),
                            error_message: error,
                            gateway_message_id: None,
                            segments: estimate.segments as i32,
                            encoding: encoding_name(estimate.encoding),
                            price_minor: price,
                            campaign_id: None,
                            contact_id: None,
                            scheduled_at: due,
                            created_at: now,
                            updated_at: now,
                            metadata: None,
                            template_params: None,
                            conversation_id: None,
                        }
                    })
                    .collect();
                let note = format!("SMS send to {} recipient(s)", rows.len());
                let (messages, inline) = write(conn, tenant, &rows, (now, due), &config, &note).await?;
                let inline = inline.and_then(|queued| route.map(|r| (r.channel, queued)));
                Ok::<_, Error>((messages, inline))
            })
            .await?;
        drop(conn);
        let messages = match inline {
            Some((channel, ids)) => self.send_inline(tenant, channel, ids, messages).await,
            None => messages,
        };
        Ok(SendResult { messages: messages.into_iter().map(SentMessage::from).collect() })
    }

    /// Dispatches right away, waiting up to the inline timeout; what is not done by then goes
    /// on in the background and, should the process die, through the queued job.
    pub(crate) async fn send_inline(
        &self,
        tenant: TenantId,
        channel: Channel,
        ids: Vec<i64>,
        written: Vec<Message>,
    ) -> Vec<Message> {
        let service = self.clone();
        let task = tokio::spawn(async move { service.dispatch_fresh(&channel, &ids).await });
        let recorded = match tokio::time::timeout(self.config.inline_timeout, task).await {
            Ok(Ok(Ok((recorded, later)))) => {
                // held back by the channel's throughput: the queue sends them when it allows
                if let Some(later) = later
                    && let Err(error) = self.enqueue_later(tenant, later).await
                {
                    tracing::warn!(%error, "queueing deferred messages failed; the fallback job sends them");
                }
                recorded
            }
            Ok(Ok(Err(error))) => {
                tracing::warn!(%error, "inline send failed; the queue takes over");
                Vec::new()
            }
            Ok(Err(error)) => {
                tracing::error!(%error, "inline send panicked; the queue takes over");
                Vec::new()
            }
            Err(_) => {
                tracing::info!("inline send still running; answering with the current state");
                return self.reread(tenant, &written).await;
            }
        };
        written.into_iter().map(|m| recorded.iter().find(|r| r.id == m.id).cloned().unwrap_or(m)).collect()
    }

    async fn enqueue_later(&self, tenant: TenantId, later: crate::dispatch::Later) -> Result<(), Error> {
        let mut conn = self.conn(tenant).await?;
        let job = SendMessages { tenant_id: tenant, ids: later.ids };
        let options = store::jobs::Enqueue { tenant_id: Some(tenant), run_at: Some(later.at), ..Default::default() };
        store::jobs::enqueue(&mut conn, &job, options).await?;
        Ok(())
    }

    /// The messages as they are now (the written ones when reading fails).
    async fn reread(&self, tenant: TenantId, written: &[Message]) -> Vec<Message> {
        let ids: Vec<i64> = written.iter().map(|m| m.id).collect();
        let read = async {
            let mut conn = self.conn(tenant).await?;
            messages::table
                .filter(messages::tenant_id.eq(tenant.0))
                .filter(messages::id.eq_any(&ids))
                .order(messages::id)
                .select(Message::as_select())
                .load(&mut conn)
                .await
                .map_err(Error::from)
        };
        read.await.unwrap_or_else(|_| written.to_vec())
    }
}

/// Why a message to a blacklisted number failed.
pub const OPTED_OUT: &str = "The number opted out of messages from this account.";

/// Why a message failed before reaching any provider.
pub const NO_ROUTE: &str = "No usable SMS route: the account has no active SMS channel.";

/// The 402 of a prepaid wallet that cannot pay (docs/api.md).
pub(crate) async fn insufficient(
    conn: &mut store::Conn,
    tenant: TenantId,
    short: accounts::wallet::Shortfall,
) -> Error {
    let currency = accounts::wallet::get(conn, tenant).await.map(|w| w.currency).unwrap_or_default();
    Error::payment_required(format!(
        "Insufficient balance: this costs {} {currency} and the balance is {} {currency}.",
        kernel::money::format_minor(short.needed_minor, &currency),
        kernel::money::format_minor(short.balance_minor, &currency),
    ))
    .with_detail("cost_minor", short.needed_minor)
    .with_detail("balance_minor", short.balance_minor)
    .with_detail("currency", currency)
}
