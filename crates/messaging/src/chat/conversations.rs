//! Conversations: one per customer and business number, with the 24-hour customer window that
//! each inbound message opens (contract: Chat messages; the inbox shape is ours, docs/api.md).

use std::collections::HashMap;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Nullable, Text, Timestamptz};
use diesel_async::RunQueryDsl;
use kernel::{Caller, Error, Page, PageRequest, TenantId};
use serde::{Deserialize, Serialize};
use store::Prepare;
use time::OffsetDateTime;

use crate::chat::accounts::ChatSender;
use crate::messages::Message;
use crate::schema::{conversations, messages};

/// Conversations per page by default (as messages).
pub const PER_PAGE: i64 = 20;

#[derive(Debug, Clone, Queryable, Selectable, QueryableByName)]
#[diesel(table_name = conversations)]
pub struct Row {
    pub id: i64,
    pub tenant_id: i64,
    pub account_id: i64,
    pub phone_number_id: String,
    pub customer: String,
    pub chat_id: Option<String>,
    pub customer_name: Option<String>,
    pub last_inbound_at: Option<OffsetDateTime>,
    pub window_expires_at: Option<OffsetDateTime>,
    pub last_message_id: Option<i64>,
    pub last_message_at: OffsetDateTime,
    pub unread_count: i32,
    pub created_at: OffsetDateTime,
}

/// The customer of a conversation.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Customer {
    /// E.164.
    pub phone: String,
    /// The provider's chat id (`wa_id`), once the customer has written.
    pub chat_id: Option<String>,
    /// The customer's profile name, as the provider last gave it.
    pub name: Option<String>,
}

/// The 24-hour customer window.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Window {
    /// Free-form messages are allowed now; outside it only an approved template is.
    pub open: bool,
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
}

/// The newest message of a conversation, as an inbox row shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LastMessage {
    pub uid: String,
    pub direction: String,
    pub body: String,
    pub status: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A conversation (`GET /chat/conversations`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Conversation {
    pub id: i64,
    /// The business number's provider id (what `sender_id` takes).
    pub phone_number_id: String,
    pub customer: Customer,
    pub window: Window,
    /// Inbound messages since the business last wrote.
    pub unread_count: i32,
    pub last_message: Option<LastMessage>,
    #[serde(with = "time::serde::rfc3339")]
    pub last_message_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_inbound_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl Conversation {
    fn new(row: Row, last: Option<&Message>, now: OffsetDateTime) -> Self {
        Self {
            id: row.id,
            phone_number_id: row.phone_number_id,
            customer: Customer { phone: row.customer, chat_id: row.chat_id, name: row.customer_name },
            window: Window {
                open: row.window_expires_at.is_some_and(|at| at > now),
                expires_at: row.window_expires_at,
            },
            unread_count: row.unread_count,
            last_message: last.map(|m| LastMessage {
                uid: m.uid.clone(),
                direction: m.direction.clone(),
                body: m.body.clone(),
                status: m.status.clone(),
                created_at: m.created_at,
            }),
            last_message_at: row.last_message_at,
            last_inbound_at: row.last_inbound_at,
            created_at: row.created_at,
        }
    }
}

/// A conversation with a page of its messages, newest first (`GET /chat/conversations/{id}`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ConversationWithMessages {
    #[serde(flatten)]
    pub conversation: Conversation,
    pub messages: Page<Message>,
}

/// Filters of `GET /chat/conversations`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ConversationFilter {
    /// Conversations of one business number (its provider id).
    pub phone_number_id: Option<String>,
    /// `open`: the customer window is open now; `closed`: it is not. Empty is no filter.
    #[param(schema_with = window_filter)]
    pub window: Option<String>,
    /// The customer's number in any common form.
    pub customer: Option<String>,
}

fn window_filter() -> utoipa::openapi::schema::Schema {
    crate::messages::one_of(["open", "closed"], "`open` or `closed`; empty is no filter.")
}

/// Finds or opens the conversation of each number with `sender`'s business number: answers
/// their ids by number. Nothing about the window changes: only the customer opens it.
pub(crate) async fn open(
    conn: &mut store::Conn,
    tenant: TenantId,
    sender: &ChatSender,
    numbers: &[String],
    now: OffsetDateTime,
) -> Result<HashMap<String, i64>, Error> {
    #[derive(QueryableByName)]
    struct Opened {
        #[diesel(sql_type = BigInt)]
        id: i64,
        #[diesel(sql_type = Text)]
        customer: String,
    }
    if numbers.is_empty() {
        return Ok(HashMap::new());
    }
    // `DO UPDATE` (of nothing that matters) so that existing rows are returned too
    let opened: Vec<Opened> = diesel::sql_query(
        "INSERT INTO conversations (tenant_id, account_id, phone_number_id, customer, last_message_at, created_at, updated_at)
         SELECT $1, $2, $3, n, $5, $5, $5 FROM unnest($4::text[]) AS n
         ON CONFLICT (tenant_id, phone_number_id, customer) DO UPDATE SET account_id = excluded.account_id
         RETURNING id, customer",
    )
    .bind::<BigInt, _>(tenant)
    .bind::<BigInt, _>(sender.account_id)
    .bind::<Text, _>(&sender.phone_number_id)
    .bind::<Array<Text>, _>(numbers)
    .bind::<Timestamptz, _>(now)
    .prepared()
    .load(conn)
    .await?;
    Ok(opened.into_iter().map(|o| (o.customer, o.id)).collect())
}

/// The business wrote `written` (outbound messages): each conversation's newest message is
/// the last of them, and its inbound messages count as answered.
pub(crate) async fn wrote(
    conn: &mut store::Conn,
    tenant: TenantId,
    written: &[Message],
    now: OffsetDateTime,
) -> Result<(), Error> {
    let mut last: HashMap<i64, i64> = HashMap::new();
    for m in written {
        if let Some(c) = m.conversation_id {
            let entry = last.entry(c).or_insert(m.id);
            *entry = (*entry).max(m.id);
        }
    }
    if last.is_empty() {
        return Ok(());
    }
    let (ids, messages): (Vec<i64>, Vec<i64>) = last.into_iter().unzip();
    diesel::sql_query(
        "UPDATE conversations c SET last_message_id = x.m, last_message_at = $4, unread_count = 0, updated_at = $4
         FROM unnest($1::bigint[], $2::bigint[]) AS x (c, m)
         WHERE c.id = x.c AND c.tenant_id = $3",
    )
    .bind::<Array<BigInt>, _>(&ids)
    .bind::<Array<BigInt>, _>(&messages)
    .bind::<BigInt, _>(tenant)
    .bind::<Timestamptz, _>(now)
    .prepared()
    .execute(conn)
    .await?;
    Ok(())
}

/// The customer wrote (an inbound message just stored): the window opens for 24 hours from
/// now, the message is the newest and one more is unread.
pub(crate) async fn customer_wrote(
    conn: &mut store::Conn,
    conversation: i64,
    message: &Message,
    now: OffsetDateTime,
) -> Result<(), Error> {
    diesel::sql_query(
        "UPDATE conversations SET last_inbound_at = $2, window_expires_at = $3, last_message_id = $4,
             last_message_at = $2, unread_count = unread_count + 1, updated_at = $2
         WHERE id = $1 AND tenant_id = $5",
    )
    .bind::<BigInt, _>(conversation)
    .bind::<Timestamptz, _>(now)
    .bind::<Timestamptz, _>(now + crate::chat::WINDOW)
    .bind::<BigInt, _>(message.id)
    .bind::<BigInt, _>(message.tenant_id)
    .prepared()
    .execute(conn)
    .await?;
    Ok(())
}

/// A customer as a provider delivery names them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Writer<'a> {
    pub account: i64,
    /// The business number's provider id.
    pub phone_number_id: &'a str,
    /// E.164.
    pub customer: &'a str,
    pub chat_id: &'a str,
    pub name: Option<&'a str>,
}

/// Finds or opens the conversation of a customer who wrote (or was written to from the
/// business's own app), learning their chat id and profile name.
pub(crate) async fn of_customer(
    conn: &mut store::Conn,
    tenant: TenantId,
    writer: Writer<'_>,
    now: OffsetDateTime,
) -> Result<i64, Error> {
    #[derive(QueryableByName)]
    struct Opened {
        #[diesel(sql_type = BigInt)]
        id: i64,
    }
    let opened: Opened = diesel::sql_query(
        "INSERT INTO conversations (tenant_id, account_id, phone_number_id, customer, chat_id, customer_name,
             last_message_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $7)
         ON CONFLICT (tenant_id, phone_number_id, customer) DO UPDATE
             SET chat_id = excluded.chat_id, customer_name = coalesce(excluded.customer_name, conversations.customer_name)
         RETURNING id",
    )
    .bind::<BigInt, _>(tenant)
    .bind::<BigInt, _>(writer.account)
    .bind::<Text, _>(writer.phone_number_id)
    .bind::<Text, _>(writer.customer)
    .bind::<Text, _>(writer.chat_id)
    .bind::<Nullable<Text>, _>(writer.name)
    .bind::<Timestamptz, _>(now)
    .prepared()
    .get_result(conn)
    .await?;
    Ok(opened.id)
}

/// The newest messages of the rows, by id.
async fn last_messages(conn: &mut store::Conn, tenant: TenantId, rows: &[Row]) -> Result<Vec<Message>, Error> {
    let ids: Vec<i64> = rows.iter().filter_map(|r| r.last_message_id).collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(messages::table
        .filter(messages::tenant_id.eq(tenant.0))
        .filter(messages::id.eq_any(ids))
        .select(Message::as_select())
        .load(conn)
        .await?)
}

impl crate::MessagingService {
    /// `GET /chat/conversations`: most recent first (an issuer with
    /// `communications.messages.view`, like the message list).
    pub async fn conversations(
        &self,
        caller: &Caller,
        filter: &ConversationFilter,
        page: PageRequest,
    ) -> Result<Page<Conversation>, Error> {
        caller.require_issuer()?;
        caller.require(kernel::Permission::MESSAGES_VIEW)?;
        let tenant = caller.tenant_id;
        let now = self.clock.now();
        let nonempty = |v: &Option<String>| v.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned);
        let window = nonempty(&filter.window);
        if window.as_deref().is_some_and(|w| w != "open" && w != "closed") {
            return Err(Error::field("window", "The window must be open or closed."));
        }
        let number = nonempty(&filter.phone_number_id).map(|n| n.replace('\0', ""));
        let customer = nonempty(&filter.customer)
            .map(|c| crate::recipients::normalize(&c, &caller.calling_code).unwrap_or(c.replace('\0', "")));
        let filtered = || {
            let mut query = conversations::table.filter(conversations::tenant_id.eq(tenant.0)).into_boxed();
            if let Some(number) = &number {
                query = query.filter(conversations::phone_number_id.eq(number.clone()));
            }
            if let Some(customer) = &customer {
                query = query.filter(conversations::customer.eq(customer.clone()));
            }
            match window.as_deref() {
                Some("open") => query = query.filter(conversations::window_expires_at.gt(now)),
                Some(_) => {
                    query = query
                        .filter(conversations::window_expires_at.is_null().or(conversations::window_expires_at.le(now)))
                }
                None => {}
            }
            query
        };
        let mut conn = self.conn(tenant).await?;
        let total: i64 = filtered().count().get_result(&mut conn).await?;
        let rows: Vec<Row> = filtered()
            .order((conversations::last_message_at.desc(), conversations::id.desc()))
            .limit(page.per_page)
            .offset(page.offset())
            .select(Row::as_select())
            .load(&mut conn)
            .await?;
        let last = last_messages(&mut conn, tenant, &rows).await?;
        let items = rows
            .into_iter()
            .map(|row| {
                let newest = last.iter().find(|m| Some(m.id) == row.last_message_id);
                Conversation::new(row, newest, now)
            })
            .collect();
        Ok(Page::new(items, page, total))
    }

    /// `GET /chat/conversations/{id}`: the conversation and a page of its messages, newest first.
    pub async fn conversation(
        &self,
        caller: &Caller,
        id: i64,
        page: PageRequest,
    ) -> Result<ConversationWithMessages, Error> {
        caller.require_issuer()?;
        caller.require(kernel::Permission::MESSAGES_VIEW)?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let row: Row = conversations::table
            .filter(conversations::tenant_id.eq(tenant.0))
            .filter(conversations::id.eq(id))
            .select(Row::as_select())
            .first(&mut conn)
            .await
            .optional()?
            .ok_or_else(|| Error::not_found("Conversation"))?;
        let of_conversation = || {
            messages::table
                .filter(messages::tenant_id.eq(tenant.0))
                .filter(messages::conversation_id.eq(id))
                .into_boxed()
        };
        let total: i64 = of_conversation().count().get_result(&mut conn).await?;
        let items: Vec<Message> = of_conversation()
            .order(messages::id.desc())
            .limit(page.per_page)
            .offset(page.offset())
            .select(Message::as_select())
            .load(&mut conn)
            .await?;
        let newest = last_messages(&mut conn, tenant, std::slice::from_ref(&row)).await?;
        let conversation = Conversation::new(row, <[_]>::first(&newest), self.clock.now());
        Ok(ConversationWithMessages { conversation, messages: Page::new(items, page, total) })
    }
}

impl crate::MessagingService {
    /// Answers a customer in their conversation (the inbox's reply; an issuer with
    /// `communications.messages.view`, as reading the conversation needs): a free-form message
    /// only while the 24-hour window is open (409 `window_closed` otherwise: an approved
    /// template must reopen it). Sent from the conversation's business number like any chat send.
    pub async fn reply(
        &self,
        caller: &Caller,
        id: i64,
        mut request: crate::chat::ChatSendRequest,
    ) -> Result<crate::chat::ChatSendResult, Error> {
        caller.require_issuer()?;
        caller.require(kernel::Permission::MESSAGES_VIEW)?;
        let tenant = caller.tenant_id;
        let row: Row = {
            let mut conn = self.conn(tenant).await?;
            conversations::table
                .filter(conversations::tenant_id.eq(tenant.0))
                .filter(conversations::id.eq(id))
                .select(Row::as_select())
                .first(&mut conn)
                .await
                .optional()?
                .ok_or_else(|| Error::not_found("Conversation"))?
        };
        let closed = row.window_expires_at.is_none_or(|at| at <= self.clock.now());
        if closed && crate::chat::send::kind_of(&request)? != "template" {
            return Err(Error::conflict(
                "The customer's 24-hour window is closed: only an approved template can reach them now.",
            )
            .with_reason("window_closed"));
        }
        request.recipient = Some(row.customer);
        request.recipients = None;
        request.sender_id = Some(row.phone_number_id);
        self.send_chat(caller, request).await
    }
}

/// A customer the business may write to freely now: their conversation, within its 24-hour
/// window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenWindow {
    pub conversation_id: i64,
    /// E.164.
    pub customer: String,
    /// The business number of the conversation (what a send's `sender_id` names).
    pub phone_number_id: String,
}

impl crate::MessagingService {
    /// The customer's open window: a conversation named by id (404 when the tenant has no such
    /// conversation), or the number `to` (its newest conversation with any business number).
    /// 409 `window_closed` when the customer has not written in the last 24 hours, or never.
    pub async fn open_window(
        &self,
        caller: &Caller,
        conversation_id: Option<i64>,
        to: Option<&str>,
    ) -> Result<OpenWindow, Error> {
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let mut query = conversations::table.filter(conversations::tenant_id.eq(tenant.0)).into_boxed();
        query = match (conversation_id, to) {
            (Some(id), _) => query.filter(conversations::id.eq(id)),
            (None, Some(to)) => {
                let number = crate::recipients::normalize(to, &caller.calling_code)
                    .ok_or_else(|| Error::field("to", "The to is not a valid phone number."))?;
                query.filter(conversations::customer.eq(number))
            }
            (None, None) => return Err(Error::field("to", "Name the customer: conversation_id or to.")),
        };
        let row: Option<Row> = query
            .order(conversations::last_inbound_at.desc().nulls_last())
            .select(Row::as_select())
            .first(&mut conn)
            .await
            .optional()?;
        let closed = || {
            Error::conflict("The customer's 24-hour window is closed: only an approved template can reach them now.")
                .with_reason("window_closed")
        };
        let row = match row {
            Some(row) => row,
            None if conversation_id.is_some() => return Err(Error::not_found("Conversation")),
            None => return Err(closed()),
        };
        if row.window_expires_at.is_none_or(|at| at <= self.clock.now()) {
            return Err(closed());
        }
        Ok(OpenWindow { conversation_id: row.id, customer: row.customer, phone_number_id: row.phone_number_id })
    }
}

/// The customer of a conversation of `tenant` (`None` when there is no such conversation): what
/// a lead upserted with its `conversation_id` is identified by.
pub async fn customer(conn: &mut store::Conn, tenant: TenantId, id: i64) -> Result<Option<Customer>, Error> {
    let found: Option<(String, Option<String>, Option<String>)> = conversations::table
        .filter(conversations::tenant_id.eq(tenant.0))
        .filter(conversations::id.eq(id))
        .select((conversations::customer, conversations::chat_id, conversations::customer_name))
        .first(conn)
        .await
        .optional()?;
    Ok(found.map(|(phone, chat_id, name)| Customer { phone, chat_id, name }))
}
