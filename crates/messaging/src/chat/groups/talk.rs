//! Writing to a group and pinning its messages. A free-form message needs a participant's
//! message within the last 24 hours (the group's own window); an approved template does not.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::error::FieldErrors;
use kernel::{Caller, Error, Permission, TenantId};
use providers::SendOutcome;
use providers::chat::ChatContent;
use providers::chat_groups::{GroupPin, OutboundGroupMessage};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{group_error, row, stored_template};
use crate::MessagingService;
use crate::chat::send::TemplateBody;
use crate::schema::chat_group_messages as gm;

/// A message's text (contract: Limits, SMS message 4,096).
pub const MAX_TEXT: usize = 4_096;
/// How long a pin lasts when no `expiration_days` is given (the provider's default).
pub const DEFAULT_PIN_DAYS: u8 = 7;

/// `POST /chat/groups/{id}/messages`: text, media by link, or a stored template.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct GroupMessageSend {
    /// The text (or a media caption), at most 4,096; wins over `body`.
    #[schema(max_length = 4096)]
    pub message: Option<String>,
    #[schema(max_length = 4096)]
    pub body: Option<String>,
    /// A media message: its link (with `media_type`).
    #[schema(max_length = 2048)]
    pub media_url: Option<String>,
    /// `image`, `video`, `audio`, `document` or `sticker`.
    #[schema(max_length = 32)]
    pub media_type: Option<String>,
    /// A stored, approved template (`name`, `language` default `en`, `components`).
    pub template: Option<TemplateBody>,
    /// The template's name, flat (as `template.name`).
    #[schema(max_length = 191)]
    pub name: Option<String>,
    #[schema(max_length = 20)]
    pub language: Option<String>,
    pub components: Option<Vec<Value>>,
}

/// A message written in a group.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GroupMessage {
    /// The local uid (what `pin` takes).
    pub uid: String,
    pub group_id: i64,
    /// `outbound` (the business) or `inbound` (a participant).
    pub direction: String,
    /// The participant who wrote an inbound message (E.164).
    pub participant: Option<String>,
    /// `text`, `template`, a media type, or what the participant sent.
    #[serde(rename = "type")]
    pub kind: String,
    pub body: Option<String>,
    pub media_url: Option<String>,
    /// `sent`, `failed` or `received`.
    pub status: String,
    /// Why the provider refused it.
    pub error: Option<String>,
    /// The provider's message id.
    pub message_id: Option<String>,
    /// Pinned until then; null when not pinned.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub pinned_until: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = gm, check_for_backend(diesel::pg::Pg))]
struct MessageRow {
    uid: String,
    group_id: i64,
    direction: String,
    participant: Option<String>,
    kind: String,
    body: Option<String>,
    media_url: Option<String>,
    status: String,
    error: Option<String>,
    provider_message_id: Option<String>,
    pinned_until: Option<OffsetDateTime>,
    created_at: OffsetDateTime,
}

impl From<MessageRow> for GroupMessage {
    fn from(row: MessageRow) -> Self {
        GroupMessage {
            uid: row.uid,
            group_id: row.group_id,
            direction: row.direction,
            participant: row.participant.map(|p| format!("+{p}")),
            kind: row.kind,
            body: row.body,
            media_url: row.media_url,
            status: row.status,
            error: row.error,
            message_id: row.provider_message_id,
            pinned_until: row.pinned_until,
            created_at: row.created_at,
        }
    }
}

/// `POST /chat/groups/{id}/pin`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct GroupPinRequest {
    /// The message's local uid (a message of this group).
    #[schema(max_length = 64)]
    pub message_uid: Option<String>,
    /// Required: true pins, false unpins.
    pub pin: Option<bool>,
    /// 1 to 30 days (default 7), pins only.
    #[schema(minimum = 1, maximum = 30)]
    pub expiration_days: Option<i64>,
}

/// What a group message says, checked: `(content, body, media_url)`.
async fn content_of(
    conn: &mut store::Conn,
    tenant: TenantId,
    account: i64,
    body: GroupMessageSend,
) -> Result<(ChatContent, Option<String>, Option<String>), Error> {
    let mut errors = FieldErrors::new();
    let text = super::text(&mut errors, "message", body.message.as_deref().or(body.body.as_deref()), MAX_TEXT);
    let media = super::text(&mut errors, "media_url", body.media_url.as_deref(), 2_048);
    let template = body.template.unwrap_or_default();
    let name = super::text(&mut errors, "name", template.name.as_deref().or(body.name.as_deref()), 191);
    let language = super::text(&mut errors, "language", template.language.as_deref().or(body.language.as_deref()), 20);
    errors.finish()?;
    if let Some(name) = name {
        let language = language.unwrap_or_else(|| "en".to_owned());
        let (name, language, sendable) =
            stored_template(conn, tenant, account, &name, Some(&language)).await.map_err(|_| {
                Error::field("name", "The template is not a stored template of the group's business account.")
            })?;
        if !sendable {
            return Err(Error::field("name", "The template is not approved: only an approved template can be sent."));
        }
        let components = template.components.or(body.components).unwrap_or_default();
        return Ok((ChatContent::Template { name, language, components }, None, None));
    }
    if let Some(link) = media {
        let kind = body.media_type.as_deref().map(|t| t.trim().to_ascii_lowercase()).unwrap_or_default();
        if !providers::chat::MEDIA_TYPES.contains(&kind.as_str()) {
            return Err(Error::field("media_type", "The media_type must be image, video, audio, document or sticker."));
        }
        if !(link.starts_with("https://") || link.starts_with("http://")) {
            return Err(Error::field("media_url", "The media_url must be an http or https link."));
        }
        let caption = text.filter(|_| kind != "audio" && kind != "sticker");
        let content = ChatContent::Media { kind, link: link.clone(), caption: caption.clone() };
        return Ok((content, caption, Some(link)));
    }
    match text {
        Some(text) => Ok((ChatContent::Text { body: text.clone() }, Some(text), None)),
        None => Err(Error::field("message", "Send a message, a media_url with its media_type, or a template name.")),
    }
}

impl MessagingService {
    /// `POST /chat/groups/{id}/messages`: one message to the group; 201 with it, `failed` when
    /// the provider refused it.
    pub async fn send_group_message(
        &self,
        caller: &Caller,
        id: i64,
        body: GroupMessageSend,
    ) -> Result<GroupMessage, Error> {
        caller.require_issuer()?;
        caller.require(Permission::GROUPS_MANAGE)?;
        caller.require(Permission::SEND)?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let group = row(&mut conn, tenant, id).await?;
        let group_id = group.live()?.to_owned();
        if group.status == "suspended" {
            return Err(Error::conflict("The group is suspended by the provider: nothing can be sent to it."));
        }
        let (content, text, media_url) = content_of(&mut conn, tenant, group.account_id, body).await?;
        let now = self.clock.now();
        let open = group.last_participant_message_at.is_some_and(|at| now - at < crate::chat::WINDOW);
        if content.needs_window() && !open {
            return Err(Error::field(
                "message",
                "No participant wrote in the group in the last 24 hours: only an approved template can be sent now.",
            )
            .with_reason("window_closed"));
        }
        let gateway = self.group_gateway(&mut conn, &group).await?;
        drop(conn);
        let uid = crate::send::new_uid();
        let message = OutboundGroupMessage {
            reference: &uid,
            phone_number_id: &group.phone_number_id,
            group_id: &group_id,
            content: &content,
        };
        let (status, error, provider_id) = match gateway.send_group(message).await {
            Ok(SendOutcome::Accepted { provider_message_id, .. }) => ("sent", None, Some(provider_message_id)),
            Ok(SendOutcome::Refused { reason }) => ("failed", Some(reason), None),
            Err(e) => ("failed", Some(format!("The provider could not be reached: {e}")), None),
        };
        let mut conn = self.conn(tenant).await?;
        let stored: MessageRow = diesel::insert_into(gm::table)
            .values((
                gm::tenant_id.eq(tenant.0),
                gm::group_id.eq(group.id),
                gm::uid.eq(&uid),
                gm::direction.eq("outbound"),
                gm::kind.eq(content.kind()),
                gm::body.eq(&text),
                gm::media_url.eq(&media_url),
                gm::content.eq(serde_json::to_value(&content).map_err(Error::internal)?),
                gm::status.eq(status),
                gm::error.eq(&error),
                gm::provider_message_id.eq(&provider_id),
                gm::created_at.eq(self.clock.now()),
            ))
            .returning(MessageRow::as_returning())
            .get_result(&mut conn)
            .await?;
        Ok(stored.into())
    }

    /// `POST /chat/groups/{id}/pin`: pins (or unpins) one of the group's messages.
    pub async fn pin_group_message(
        &self,
        caller: &Caller,
        id: i64,
        body: GroupPinRequest,
    ) -> Result<GroupMessage, Error> {
        caller.require_issuer()?;
        caller.require(Permission::GROUPS_MANAGE)?;
        let mut errors = FieldErrors::new();
        let uid = super::text(&mut errors, "message_uid", body.message_uid.as_deref(), 64);
        if uid.is_none() {
            errors.add("message_uid", "The message_uid is required.");
        }
        if body.pin.is_none() {
            errors.add("pin", "The pin is required: true pins, false unpins.");
        }
        if body.expiration_days.is_some_and(|d| !(1..=30).contains(&d)) {
            errors.add("expiration_days", "The expiration_days must be between 1 and 30.");
        }
        errors.finish()?;
        let (uid, pin) = (uid.expect("checked"), body.pin.expect("checked"));
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let group = row(&mut conn, tenant, id).await?;
        let group_id = group.live()?.to_owned();
        let message: MessageRow = gm::table
            .filter(gm::tenant_id.eq(tenant.0))
            .filter(gm::group_id.eq(group.id))
            .filter(gm::uid.eq(&uid))
            .select(MessageRow::as_select())
            .first(&mut conn)
            .await
            .optional()?
            .ok_or_else(|| Error::field("message_uid", "The message_uid is not a message of this group."))?;
        let Some(provider_id) = message.provider_message_id.clone() else {
            return Err(Error::field("message_uid", "The message was not sent: there is nothing to pin."));
        };
        let days = body.expiration_days.map(|d| d as u8);
        let gateway = self.group_gateway(&mut conn, &group).await?;
        drop(conn);
        let request = GroupPin {
            phone_number_id: &group.phone_number_id,
            group_id: &group_id,
            message_id: &provider_id,
            pin,
            expiration_days: days.filter(|_| pin),
        };
        gateway.pin_group_message(request).await.map_err(group_error)?;
        let until = pin.then(|| self.clock.now() + time::Duration::days(days.unwrap_or(DEFAULT_PIN_DAYS).into()));
        let mut conn = self.conn(tenant).await?;
        let pinned: MessageRow = diesel::update(gm::table.filter(gm::tenant_id.eq(tenant.0)).filter(gm::uid.eq(&uid)))
            .set(gm::pinned_until.eq(until))
            .returning(MessageRow::as_returning())
            .get_result(&mut conn)
            .await?;
        Ok(pinned.into())
    }
}
