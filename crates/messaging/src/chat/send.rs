//! `POST /chat/send` (contract: Chat messages, the chat send body and the chat rows of Limits):
//! validate, resolve the business number, find or open each customer's conversation, price,
//! then write one message per recipient with its dispatch job in one transaction.

use std::collections::BTreeMap;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::state::Status as _;
use kernel::{Caller, Error};
use providers::ChatContent;
use serde::Deserialize;
use serde_json::Value;
use store::Prepare;
use time::OffsetDateTime;

use crate::chat::accounts;
use crate::recipients::Recipient;
use crate::send::{MAX_RECIPIENTS, NewMessage, SendResult, SentMessage, new_uid, too_long, write};
use crate::status::MessageStatus;
use crate::{MessagingConfig, MessagingService};

/// The message types of a chat send.
pub const MESSAGE_TYPES: &[&str] =
    &["text", "template", "image", "video", "audio", "document", "sticker", "interactive", "reaction"];
/// Interactive types whose `action` the service checks; the others pass through as given.
pub const INTERACTIVE_TYPES: &[&str] =
    &["button", "list", "cta_url", "flow", "product", "product_list", "catalog_message", "location_request_message"];

/// `template` of a chat send.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct TemplateBody {
    /// A stored template's name (at most 191).
    #[schema(max_length = 191)]
    pub name: Option<String>,
    /// At most 20; default `en`.
    #[schema(max_length = 20)]
    pub language: Option<String>,
    /// Forwarded to the provider as given.
    pub components: Option<Vec<Value>>,
}

/// `reaction` of a chat send.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct ReactionBody {
    /// The provider id of the message reacted to (at most 191); `in_reply_to_gateway_id` may
    /// give it instead.
    #[schema(max_length = 191)]
    pub message_id: Option<String>,
    /// Required, at most 16.
    #[schema(max_length = 16)]
    pub emoji: Option<String>,
}

/// The chat send body (`POST /chat/send`, and `POST /sms/send` with `message_type: chat`).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
pub struct ChatSendRequest {
    /// Numbers separated by commas, semicolons or whitespace (at most 4,000 characters).
    #[schema(max_length = 4000)]
    pub recipient: Option<String>,
    /// More numbers; each entry at most 191 characters.
    pub recipients: Option<Vec<String>>,
    /// A business phone number id or the number itself; omitted means the workspace default.
    #[schema(max_length = 64)]
    pub sender_id: Option<String>,
    /// `text`, `template`, `image`, `video`, `audio`, `document`, `sticker`, `interactive` or
    /// `reaction`; omitted, it follows from what the body carries. Wins over `type`.
    #[schema(max_length = 60)]
    pub message_type: Option<String>,
    #[serde(rename = "type")]
    #[schema(max_length = 60)]
    pub kind: Option<String>,
    /// The text, or a media caption (at most 4,096); wins over `body`.
    #[schema(max_length = 4096)]
    pub message: Option<String>,
    #[schema(max_length = 4096)]
    pub body: Option<String>,
    #[schema(schema_with = crate::send::schedule_time)]
    pub schedule_time: Option<String>,
    /// The provider id (`gateway_message_id`) of the message this one answers; not a `msg_` uid.
    #[schema(max_length = 191)]
    pub in_reply_to_gateway_id: Option<String>,
    /// A link to the media (no upload), at most 2,048.
    #[schema(max_length = 2048)]
    pub media_url: Option<String>,
    #[schema(max_length = 32)]
    pub media_type: Option<String>,
    pub template: Option<TemplateBody>,
    /// `{type, body:{text}, action}` in the provider's shape.
    #[schema(value_type = Option<Object>)]
    pub interactive: Option<Value>,
    pub reaction: Option<ReactionBody>,
}

/// The answer of a chat send: the same shape as an SMS send's.
pub type ChatSendResult = SendResult;

impl From<crate::SendRequest> for ChatSendRequest {
    /// `POST /sms/send` with `message_type: chat`: the same members, read as a chat send's.
    fn from(sms: crate::SendRequest) -> Self {
        Self {
            recipient: sms.recipient,
            recipients: sms.recipients,
            sender_id: sms.sender_id,
            message_type: sms.message_type,
            kind: sms.kind,
            message: sms.message,
            body: sms.body,
            schedule_time: sms.schedule_time,
            in_reply_to_gateway_id: sms.in_reply_to_gateway_id,
            media_url: sms.media_url,
            media_type: sms.media_type,
            template: sms.template,
            interactive: sms.interactive,
            reaction: sms.reaction,
        }
    }
}

/// A chat send body that passed every rule.
struct Checked {
    recipients: Vec<Recipient>,
    sender_id: Option<String>,
    content: ChatContent,
    /// What the message row's `body` says.
    body: String,
    reply_to: Option<String>,
    schedule: Option<OffsetDateTime>,
}

fn nonempty(v: Option<String>) -> Option<String> {
    v.filter(|v| !v.trim().is_empty())
}

fn check(req: ChatSendRequest, calling_code: &str) -> Result<Checked, Error> {
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
    too_long(&mut errors, "in_reply_to_gateway_id", req.in_reply_to_gateway_id.as_deref(), 191);
    too_long(&mut errors, "media_url", req.media_url.as_deref(), 2_048);
    too_long(&mut errors, "media_type", req.media_type.as_deref(), 32);
    if let Some(template) = &req.template {
        too_long(&mut errors, "template.name", template.name.as_deref(), 191);
        too_long(&mut errors, "template.language", template.language.as_deref(), 20);
    }
    if let Some(reaction) = &req.reaction {
        too_long(&mut errors, "reaction.message_id", reaction.message_id.as_deref(), 191);
        too_long(&mut errors, "reaction.emoji", reaction.emoji.as_deref(), 16);
    }
    if !errors.is_empty() {
        return Err(Error::fields(errors));
    }
    let schedule = crate::send::parse_schedule(req.schedule_time.as_deref())?;
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
    let reply_to = nonempty(req.in_reply_to_gateway_id.clone()).map(|r| r.trim().to_owned());
    if reply_to.as_deref().is_some_and(|r| r.starts_with("msg_")) {
        return Err(Error::field(
            "in_reply_to_gateway_id",
            "The in_reply_to_gateway_id takes the provider's message id (a message's gateway_message_id), not a msg_ uid.",
        ));
    }
    // contract: `message` wins over `body`; an empty one counts as absent
    let text = nonempty(req.message.clone()).or(nonempty(req.body.clone()));
    let media_url = nonempty(req.media_url.clone()).map(|u| u.trim().to_owned());
    let media_type = nonempty(req.media_type.clone()).map(|t| t.trim().to_ascii_lowercase());
    let kind = message_type(&req, media_type.as_deref())?;
    let (content, body) = match kind.as_str() {
        "text" => {
            let Some(text) = text else {
                return Err(Error::field("message", "A text message needs a message (or body)."));
            };
            if media_url.is_some() {
                return Err(Error::field("media_url", "A text message carries no media: use a media message_type."));
            }
            (ChatContent::Text { body: text.clone() }, text)
        }
        "template" => {
            if media_url.is_some() || req.interactive.is_some() {
                return Err(Error::field(
                    "template",
                    "A template message cannot carry top-level media or an interactive object: put them in the \
                     template's components.",
                ));
            }
            let template = req.template.clone().unwrap_or_default();
            let Some(name) = nonempty(template.name).map(|n| n.trim().to_owned()) else {
                return Err(Error::field("template.name", "A template message needs template.name."));
            };
            let language = nonempty(template.language).map_or_else(|| "en".to_owned(), |l| l.trim().to_owned());
            let body = text.unwrap_or_else(|| format!("[template {name} ({language})]"));
            (ChatContent::Template { name, language, components: template.components.unwrap_or_default() }, body)
        }
        "interactive" => {
            if media_url.is_some() {
                return Err(Error::field("interactive", "An interactive message cannot carry top-level media."));
            }
            let Some(interactive) = req.interactive.clone() else {
                return Err(Error::field("interactive", "An interactive message needs the interactive object."));
            };
            let body = check_interactive(&interactive)?;
            (ChatContent::Interactive { interactive }, body)
        }
        "reaction" => {
            if text.is_some() || media_url.is_some() || req.template.is_some() || req.interactive.is_some() {
                return Err(Error::field(
                    "reaction",
                    "A reaction goes alone: no message, body, media, template or interactive in the same request.",
                ));
            }
            let reaction = req.reaction.clone().unwrap_or_default();
            let Some(emoji) = nonempty(reaction.emoji) else {
                return Err(Error::field("reaction.emoji", "A reaction needs reaction.emoji."));
            };
            let Some(message_id) = nonempty(reaction.message_id).map(|m| m.trim().to_owned()).or(reply_to.clone())
            else {
                return Err(Error::field(
                    "reaction.message_id",
                    "A reaction needs its target: reaction.message_id or in_reply_to_gateway_id.",
                ));
            };
            if message_id.starts_with("msg_") {
                return Err(Error::field(
                    "reaction.message_id",
                    "The reaction.message_id takes the provider's message id (gateway_message_id), not a msg_ uid.",
                ));
            }
            (ChatContent::Reaction { message_id, emoji: emoji.clone() }, emoji)
        }
        media => {
            let Some(link) = media_url else {
                return Err(Error::field("media_url", format!("A {media} message needs a media_url.")));
            };
            if media_type.as_deref().is_some_and(|t| t != media) {
                return Err(Error::field("media_type", format!("The media_type must match the message_type {media}.")));
            }
            if req.interactive.is_some() || req.template.is_some() {
                return Err(Error::field(
                    "media_url",
                    "Media cannot be combined with a template or interactive object.",
                ));
            }
            let caption = text.filter(|_| !matches!(media, "audio" | "sticker"));
            let body = caption.clone().unwrap_or_default();
            (ChatContent::Media { kind: media.to_owned(), link, caption }, body)
        }
    };
    // A reaction names its target itself; the reply context is for the other types.
    let reply_to = if matches!(content, ChatContent::Reaction { .. }) { None } else { reply_to };
    Ok(Checked { recipients, sender_id: nonempty(req.sender_id), content, body, reply_to, schedule })
}

/// The message type a body asks for (see [`message_type`]).
pub(crate) fn kind_of(req: &ChatSendRequest) -> Result<String, Error> {
    let media_type = nonempty(req.media_type.clone()).map(|t| t.trim().to_ascii_lowercase());
    message_type(req, media_type.as_deref())
}

/// The message type: as given (`message_type` wins over `type`; `chat`, which routes an SMS
/// send here, says nothing more), else from what the body carries.
fn message_type(req: &ChatSendRequest, media_type: Option<&str>) -> Result<String, Error> {
    let (field, given) = match (&req.message_type, &req.kind) {
        (Some(kind), _) => ("message_type", Some(kind)),
        (None, kind) => ("type", kind.as_ref()),
    };
    let given = given.map(|t| t.trim().to_ascii_lowercase()).filter(|t| !t.is_empty() && t != "chat");
    if let Some(kind) = given {
        if !MESSAGE_TYPES.contains(&kind.as_str()) {
            return Err(Error::field(field, format!("The {field} must be one of {}.", MESSAGE_TYPES.join(", "))));
        }
        return Ok(kind);
    }
    Ok(if req.reaction.is_some() {
        "reaction".to_owned()
    } else if req.template.is_some() {
        "template".to_owned()
    } else if req.interactive.is_some() {
        "interactive".to_owned()
    } else if nonempty(req.media_url.clone()).is_some() {
        match media_type {
            Some(t) if providers::chat::MEDIA_TYPES.contains(&t) => t.to_owned(),
            Some(_) => {
                return Err(Error::field(
                    "media_type",
                    "The media_type must be image, video, audio, document or sticker.",
                ));
            }
            None => return Err(Error::field("media_type", "A media message needs a media_type (or message_type).")),
        }
    } else {
        "text".to_owned()
    })
}

/// The contract's rules of an interactive object; answers the text the row's body keeps.
fn check_interactive(interactive: &Value) -> Result<String, Error> {
    let mut errors = kernel::error::FieldErrors::new();
    let Some(kind) = interactive["type"].as_str() else {
        return Err(Error::field("interactive.type", "The interactive.type is required."));
    };
    if !INTERACTIVE_TYPES.contains(&kind) {
        return Err(Error::field(
            "interactive.type",
            format!("The interactive.type must be one of {}.", INTERACTIVE_TYPES.join(", ")),
        ));
    }
    let text = interactive["body"]["text"].as_str().unwrap_or_default();
    let mut limit = |field: &str, value: &str, max: usize| {
        if value.chars().count() > max {
            errors.add(field, format!("The {field} may not be greater than {max} characters."));
        }
    };
    limit("interactive.body.text", text, 1_024);
    let action = &interactive["action"];
    match kind {
        "button" => {
            if text.trim().is_empty() {
                errors.add("interactive.body.text", "A button message needs interactive.body.text.");
            }
            let buttons = action["buttons"].as_array().map(Vec::as_slice).unwrap_or_default();
            if buttons.is_empty() || buttons.len() > 3 {
                errors.add("interactive.action.buttons", "A button message has 1 to 3 buttons.");
            }
            for (i, button) in buttons.iter().enumerate() {
                let id = button["reply"]["id"].as_str().unwrap_or_default();
                let title = button["reply"]["title"].as_str().unwrap_or_default();
                if button["type"].as_str() != Some("reply") {
                    errors.add(format!("interactive.action.buttons[{i}].type"), "Each button's type is reply.");
                }
                if id.trim().is_empty() || title.trim().is_empty() {
                    errors.add(
                        format!("interactive.action.buttons[{i}].reply"),
                        "Each button needs reply.id and reply.title.",
                    );
                }
                let mut limit = |field: String, value: &str, max: usize| {
                    if value.chars().count() > max {
                        errors.add(field.clone(), format!("The {field} may not be greater than {max} characters."));
                    }
                };
                limit(format!("interactive.action.buttons[{i}].reply.id"), id, 200);
                limit(format!("interactive.action.buttons[{i}].reply.title"), title, 20);
            }
        }
        "list" => {
            if text.trim().is_empty() {
                errors.add("interactive.body.text", "A list message needs interactive.body.text.");
            }
            let button = action["button"].as_str().unwrap_or_default();
            if button.trim().is_empty() {
                errors.add("interactive.action.button", "A list message needs action.button (the menu's label).");
            } else if button.chars().count() > 20 {
                errors.add(
                    "interactive.action.button",
                    "The interactive.action.button may not be greater than 20 characters.",
                );
            }
            let sections = action["sections"].as_array().map(Vec::as_slice).unwrap_or_default();
            if sections.is_empty() || sections.len() > 10 {
                errors.add("interactive.action.sections", "A list message has 1 to 10 sections.");
            }
            for (s, section) in sections.iter().enumerate() {
                let rows = section["rows"].as_array().map(Vec::as_slice).unwrap_or_default();
                if rows.is_empty() {
                    errors.add(format!("interactive.action.sections[{s}].rows"), "Each section needs rows.");
                }
                for (r, row) in rows.iter().enumerate() {
                    let at = format!("interactive.action.sections[{s}].rows[{r}]");
                    let title = row["title"].as_str().unwrap_or_default();
                    if row["id"].as_str().unwrap_or_default().trim().is_empty() || title.trim().is_empty() {
                        errors.add(at.clone(), "Each row needs an id and a title.");
                    }
                    if title.chars().count() > 24 {
                        errors.add(
                            format!("{at}.title"),
                            format!("The {at}.title may not be greater than 24 characters."),
                        );
                    }
                    if row["description"].as_str().unwrap_or_default().chars().count() > 72 {
                        errors.add(
                            format!("{at}.description"),
                            format!("The {at}.description may not be greater than 72 characters."),
                        );
                    }
                }
            }
        }
        // the pass-through types go to the provider as given
        _ => {}
    }
    errors.finish()?;
    Ok(text.to_owned())
}

/// How chat messages are charged (docs/api.md, "Chat billing").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatBilling {
    /// Every outbound message costs the chat price.
    PerMessage,
    /// The first outbound message of a 24-hour conversation costs the chat price; the rest of
    /// that conversation's messages are free.
    PerConversation,
}

impl ChatBilling {
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "message" => Some(Self::PerMessage),
            "conversation" => Some(Self::PerConversation),
            _ => None,
        }
    }
}

/// Conversations (by id) that already paid within the last 24 hours.
async fn paid_conversations(
    conn: &mut store::Conn,
    ids: &[i64],
    now: OffsetDateTime,
) -> Result<std::collections::HashSet<i64>, Error> {
    #[derive(QueryableByName)]
    struct Paid {
        #[diesel(sql_type = BigInt)]
        conversation_id: i64,
    }
    let paid: Vec<Paid> = diesel::sql_query(
        "SELECT DISTINCT conversation_id FROM messages
         WHERE conversation_id = ANY($1) AND direction = 'outbound' AND price_minor > 0
           AND status <> 'failed' AND created_at > $2",
    )
    .bind::<Array<BigInt>, _>(ids)
    .bind::<Timestamptz, _>(now - crate::chat::WINDOW)
    .prepared()
    .load(conn)
    .await?;
    Ok(paid.into_iter().map(|p| p.conversation_id).collect())
}

fn price(config: &MessagingConfig, conversation: i64, paid: &std::collections::HashSet<i64>) -> i64 {
    match config.chat_billing {
        ChatBilling::PerMessage => config.chat_price_minor,
        ChatBilling::PerConversation if paid.contains(&conversation) => 0,
        ChatBilling::PerConversation => config.chat_price_minor,
    }
}

impl MessagingService {
    /// `POST /chat/send`. Invalid numbers become `failed` records (not charged); the rest are
    /// priced (docs/api.md, "Chat billing") and debited in one amount, refused with 402 and
    /// nothing written when a prepaid wallet cannot pay. A provider refusal (including a
    /// free-form message outside the 24-hour window) is a `failed` message, not an error.
    pub async fn send_chat(&self, caller: &Caller, req: ChatSendRequest) -> Result<ChatSendResult, Error> {
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let checked = match check(req, &caller.calling_code) {
            Ok(checked) => checked,
            // the account's setup first: no body can be right without a chat account
            Err(_) if !accounts::any(&mut conn, tenant).await? => {
                return Err(Error::validation("No chat account is configured for this account."));
            }
            Err(refused) => return Err(refused),
        };
        let now = self.clock.now();
        let due = checked.schedule.filter(|at| *at > now);
        let sender = accounts::sender(&mut conn, tenant, &caller.calling_code, checked.sender_id.as_deref()).await?;
        let config = self.config.clone();
        let (metadata, template_params) = crate::chat::content::stored(&checked.content, checked.reply_to.as_deref());
        let (messages, inline) = conn
            .transaction(async |conn| {
                let numbers: Vec<String> = checked.recipients.iter().filter_map(|r| r.number.clone()).collect();
                let conversations = crate::chat::conversations::open(conn, tenant, &sender, &numbers, now).await?;
                // only conversation billing asks which conversations paid today
                let paid = match config.chat_billing {
                    ChatBilling::PerMessage => std::collections::HashSet::new(),
                    ChatBilling::PerConversation => {
                        let ids: Vec<i64> = conversations.values().copied().collect();
                        paid_conversations(conn, &ids, now).await?
                    }
                };
                let mut charged = std::collections::HashSet::new();
                let rows: Vec<NewMessage> = checked
                    .recipients
                    .iter()
                    .map(|r| {
                        let conversation = r.number.as_ref().and_then(|n| conversations.get(n)).copied();
                        let (status, error, price) = match conversation {
                            None => {
                                (MessageStatus::Failed.as_str(), Some(format!("Invalid phone number: {}", r.input)), 0)
                            }
                            // one charge per conversation, however many of its messages a send writes
                            Some(c) if charged.contains(&c) && config.chat_billing == ChatBilling::PerConversation => {
                                (MessageStatus::Queued.as_str(), None, 0)
                            }
                            Some(c) => {
                                charged.insert(c);
                                (MessageStatus::Queued.as_str(), None, price(&config, c, &paid))
                            }
                        };
                        NewMessage {
                            uid: new_uid(),
                            tenant_id: tenant.0,
                            direction: "outbound",
                            channel_type: "chat",
                            tenant_channel_id: Some(sender.channel.id),
                            channel_code: Some(sender.channel.code.clone()),
                            sender: Some(sender.phone_number_id.clone()),
                            recipient: r.number.clone().unwrap_or_else(|| r.input.clone()),
                            body: checked.body.clone(),
                            status,
                            media_url: match &checked.content {
                                ChatContent::Media { link, .. } => Some(link.clone()),
                                _ => None,
                            },
                            media_type: match &checked.content {
                                ChatContent::Media { kind, .. } => Some(kind.clone()),
                                _ => None,
                            },
                            error_message: error,
                            gateway_message_id: None,
                            segments: 1,
                            encoding: "ucs2",
                            price_minor: price,
                            campaign_id: None,
                            contact_id: None,
                            scheduled_at: due,
                            created_at: now,
                            updated_at: now,
                            metadata: metadata.clone(),
                            template_params: template_params.clone(),
                            conversation_id: conversation,
                        }
                    })
                    .collect();
                let note = format!("Chat send to {} recipient(s)", rows.len());
                let (messages, inline) = write(conn, tenant, &rows, (now, due), &config, &note).await?;
                crate::chat::conversations::wrote(conn, tenant, &messages, now).await?;
                Ok::<_, Error>((messages, inline))
            })
            .await?;
        drop(conn);
        let messages = match inline {
            Some(ids) => self.send_inline(tenant, sender.channel, ids, messages).await,
            None => messages,
        };
        Ok(SendResult { messages: messages.into_iter().map(SentMessage::from).collect() })
    }
}
