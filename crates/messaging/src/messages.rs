//! The Message resource (contract: Message): its row, its public shape and how it is read.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::state::Status as _;
use kernel::{Caller, Error, Page, PageRequest, TenantId};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::ids::CampaignRef;
use crate::schema::messages;

/// Messages per page by default (contract: list conventions).
pub const PER_PAGE: i64 = 20;

pub use crate::ids::MessageRef;

#[derive(Debug, Clone, Serialize, Queryable, QueryableByName, Selectable, utoipa::ToSchema)]
#[diesel(table_name = messages)]
pub struct Message {
    pub id: i64,
    pub uid: String,
    #[serde(skip)]
    pub tenant_id: i64,
    /// `inbound` or `outbound`.
    pub direction: String,
    /// `sms` or `chat`.
    pub channel_type: String,
    /// The channel the routing policy chose; not caller-selectable.
    pub tenant_channel_id: Option<i64>,
    pub channel_code: Option<String>,
    pub sender: Option<String>,
    /// E.164 with `+` for outbound messages (the input as given when it was not a number).
    pub recipient: String,
    pub body: String,
    /// `queued`, `processing`, `sent`, `checking_delivery`, `delivered`, `read`, `failed`, `received`.
    pub status: String,
    pub media_url: Option<String>,
    pub media_type: Option<String>,
    pub gateway_message_id: Option<String>,
    pub error_message: Option<String>,
    pub metadata: Option<serde_json::Value>,
    pub template_params: Option<serde_json::Value>,
    /// Segment estimate (contract: Limits, segment estimates).
    pub segments: i32,
    /// `gsm7` or `ucs2`.
    pub encoding: String,
    /// What the wallet was charged, in minor units (refunded when the provider refuses it).
    pub price_minor: i64,
    #[serde(skip)]
    pub campaign_id: Option<i64>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub scheduled_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub sent_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub delivered_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub read_at: Option<OffsetDateTime>,
    /// Chat only: the conversation (customer and business number) it belongs to.
    pub conversation_id: Option<i64>,
}

impl Message {
    /// The flat payload of the message events (contract: Payload shapes), plus `uid`,
    /// `gateway_message_id` and `error_message`.
    pub fn event_payload(&self) -> serde_json::Value {
        serde_json::json!({
            "message_id": self.id,
            "uid": self.uid,
            "direction": self.direction,
            "sender": self.sender,
            "recipient": self.recipient,
            "status": self.status,
            "body": self.body,
            "media_url": self.media_url,
            "channel_type": self.channel_type,
            "gateway_message_id": self.gateway_message_id,
            "error_message": self.error_message,
        })
    }
}

pub async fn get(conn: &mut store::Conn, tenant: TenantId, message: &MessageRef) -> Result<Message, Error> {
    let query = messages::table.filter(messages::tenant_id.eq(tenant.0)).select(Message::as_select()).into_boxed();
    let query = match message {
        MessageRef::Id(id) => query.filter(messages::id.eq(id.0)),
        MessageRef::Uid(uid) => query.filter(messages::uid.eq(uid)),
    };
    query.first(conn).await.optional()?.ok_or_else(|| Error::not_found("Message"))
}

/// Filters of the message list (`GET /messages`).
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MessageFilter {
    /// A message state; empty is no filter.
    #[param(schema_with = status_filter)]
    pub status: Option<String>,
    /// `inbound` or `outbound`; empty is no filter.
    #[param(schema_with = direction_filter)]
    pub direction: Option<String>,
    /// `sms` or `chat`; empty is no filter.
    #[param(schema_with = channel_type_filter)]
    pub channel_type: Option<String>,
    /// A phone number in any common form.
    pub recipient: Option<String>,
    /// Campaign uid or numeric id.
    pub campaign: Option<String>,
}

/// A filter's values; empty is no filter (anything else is a 422).
pub(crate) fn one_of(
    values: impl IntoIterator<Item = &'static str>,
    description: &str,
) -> utoipa::openapi::schema::Schema {
    let values: Vec<&str> = values.into_iter().chain([""]).collect();
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(values))
        .description(Some(description))
        .into()
}

fn status_filter() -> utoipa::openapi::schema::Schema {
    one_of(
        crate::status::MessageStatus::ALL.iter().map(|status| status.as_str()),
        "A message state; empty is no filter.",
    )
}

fn direction_filter() -> utoipa::openapi::schema::Schema {
    one_of(["inbound", "outbound"], "`inbound` or `outbound`; empty is no filter.")
}

fn channel_type_filter() -> utoipa::openapi::schema::Schema {
    one_of(["sms", "chat"], "`sms` or `chat`; empty is no filter.")
}

pub async fn list(
    conn: &mut store::Conn,
    caller: &Caller,
    filter: &MessageFilter,
    page: PageRequest,
) -> Result<Page<Message>, Error> {
    let tenant = caller.tenant_id;
    // PostgreSQL text cannot hold NUL: such a value matches nothing
    let nonempty =
        |v: &Option<String>| v.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(|v| v.replace('\0', "\u{fffd}"));
    let status = nonempty(&filter.status);
    if let Some(status) = &status
        && crate::status::MessageStatus::parse(status).is_none()
    {
        return Err(Error::field("status", "Unknown message status."));
    }
    let direction = nonempty(&filter.direction);
    if direction.as_deref().is_some_and(|d| d != "inbound" && d != "outbound") {
        return Err(Error::field("direction", "The direction must be inbound or outbound."));
    }
    let channel_type = nonempty(&filter.channel_type);
    if channel_type.as_deref().is_some_and(|c| c != "sms" && c != "chat") {
        return Err(Error::field("channel_type", "The channel_type must be sms or chat."));
    }
    let recipient =
        nonempty(&filter.recipient).map(|r| crate::recipients::normalize(&r, &caller.calling_code).unwrap_or(r));
    let campaign = match nonempty(&filter.campaign) {
        None => None,
        Some(raw) => {
            // An unknown, malformed or foreign campaign matches nothing, like any other filter value.
            let found = match <CampaignRef as kernel::ids::PathId>::from_path(&raw) {
                Some(campaign) => crate::campaigns::id_of(conn, tenant, &campaign).await?,
                None => None,
            };
            Some(found.map_or(0, |id| id.0))
        }
    };
    let filtered = || {
        let mut query = messages::table.filter(messages::tenant_id.eq(tenant.0)).into_boxed();
        if let Some(status) = &status {
            query = query.filter(messages::status.eq(status.clone()));
        }
        if let Some(direction) = &direction {
            query = query.filter(messages::direction.eq(direction.clone()));
        }
        if let Some(channel_type) = &channel_type {
            query = query.filter(messages::channel_type.eq(channel_type.clone()));
        }
        if let Some(recipient) = &recipient {
            query = query.filter(messages::recipient.eq(recipient.clone()));
        }
        if let Some(campaign) = campaign {
            query = query.filter(messages::campaign_id.eq(campaign));
        }
        query
    };
    let total: i64 = filtered().count().get_result(conn).await?;
    let items = filtered()
        .order(messages::id.desc())
        .limit(page.per_page)
        .offset(page.offset())
        .select(Message::as_select())
        .load(conn)
        .await?;
    Ok(Page::new(items, page, total))
}

impl crate::MessagingService {
    /// `GET /sms/{uid}`: by uid or numeric id (contract: tenant credential only).
    pub async fn message(&self, caller: &kernel::Caller, message: &MessageRef) -> Result<Message, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        get(&mut conn, caller.tenant_id, message).await
    }

    /// `GET /chat/{uid}`: a chat message by uid or numeric id (an SMS one is not found here).
    pub async fn chat_message(&self, caller: &kernel::Caller, message: &MessageRef) -> Result<Message, Error> {
        let found = self.message(caller, message).await?;
        if found.channel_type != "chat" {
            return Err(Error::not_found("Message"));
        }
        Ok(found)
    }

    /// `GET /messages`, newest first (a route beyond the contract: it needs an issuer holding
    /// `communications.messages.view`).
    pub async fn messages(
        &self,
        caller: &kernel::Caller,
        filter: &MessageFilter,
        page: PageRequest,
    ) -> Result<Page<Message>, Error> {
        caller.require_issuer()?;
        caller.require(kernel::Permission::MESSAGES_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        list(&mut conn, caller, filter, page).await
    }

    /// `GET /sms/senders`: the usable sender identities.
    pub async fn senders(&self, caller: &kernel::Caller) -> Result<Vec<crate::channels::Sender>, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        crate::channels::usable_senders(&mut conn, caller.tenant_id).await
    }
}

/// A message's columns, each prefixed with `alias` (`"m."` or `""`): what a statement returning
/// whole messages names, rather than `*`, so that it can be kept prepared
/// (`store::Prepare`) and a migration adding a column does not change its result.
pub(crate) fn columns(alias: &str) -> String {
    const COLUMNS: [&str; 30] = [
        "id",
        "uid",
        "tenant_id",
        "direction",
        "channel_type",
        "tenant_channel_id",
        "channel_code",
        "sender",
        "recipient",
        "body",
        "status",
        "media_url",
        "media_type",
        "gateway_message_id",
        "error_message",
        "metadata",
        "template_params",
        "segments",
        "encoding",
        "price_minor",
        "provider_cost",
        "campaign_id",
        "contact_id",
        "scheduled_at",
        "created_at",
        "updated_at",
        "sent_at",
        "delivered_at",
        "read_at",
        "conversation_id",
    ];
    COLUMNS.iter().map(|c| format!("{alias}{c}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use diesel::prelude::*;

    use crate::schema::messages;

    #[test]
    fn the_columns_are_the_schemas() {
        let sql = diesel::debug_query::<diesel::pg::Pg, _>(&messages::table.select(messages::all_columns)).to_string();
        let listed = &sql["SELECT ".len()..sql.find(" FROM").expect("a FROM")];
        let names: Vec<&str> =
            listed.split(", ").map(|c| c.trim_start_matches("\"messages\".").trim_matches('"')).collect();
        assert_eq!(super::columns(""), names.join(", "));
        assert!(super::columns("m.").starts_with("m.id, m.uid, "));
    }
}
