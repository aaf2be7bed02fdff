//! The business-event log: the outbox as the workspace reads it (`GET /automations/events`),
//! newest first, paged with `before`; and event discovery, which names the events a
//! subscription can follow and declares the payment events not live (contract: payment events
//! cannot replace polling `GET /payments`).

use diesel::sql_types::{BigInt, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use kernel::{Caller, Error};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::AutomationService;

/// A page's default size, and its cap.
pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 100;

/// Payment events: named so that nobody mistakes them for something to wait on. They are not
/// emitted; payments are read by polling `GET /payments` (`order.paid` is an order event).
pub const NOT_LIVE: [&str; 4] = ["payment.pending", "payment.paid", "payment.failed", "payment.refunded"];

/// `GET /automations/events` query.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventQuery {
    /// The `next_before` of the previous page (an event id).
    pub before: Option<String>,
    /// Events per page (default 50, cap 100).
    #[param(value_type = Option<i64>)]
    pub limit: Option<String>,
    /// Only events of this name.
    pub name: Option<String>,
}

/// One business event.
#[derive(Debug, Clone, Serialize, ToSchema, diesel::QueryableByName)]
pub struct BusinessEvent {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Timestamptz)]
    #[serde(with = "time::serde::rfc3339")]
    pub occurred_at: OffsetDateTime,
    /// The event's payload, as webhooks deliver it.
    #[diesel(sql_type = Jsonb)]
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

/// `{events, has_more, next_before}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EventLog {
    /// Newest first.
    pub events: Vec<BusinessEvent>,
    pub has_more: bool,
    /// Send it back as `before` for the next (older) page.
    pub next_before: Option<Uuid>,
}

/// An event name a subscription may follow.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct EventType {
    pub name: String,
    /// Emitted by the service. Payment events are not: poll `GET /payments`.
    pub live: bool,
}

impl AutomationService {
    pub async fn events(&self, caller: &Caller, query: &EventQuery) -> Result<EventLog, Error> {
        Self::may_read(caller)?;
        let limit = match query.limit.as_deref().map(str::trim) {
            None => DEFAULT_LIMIT,
            Some(raw) => match raw.parse::<i64>() {
                Ok(n) if n > 0 => n.min(MAX_LIMIT),
                Ok(_) => DEFAULT_LIMIT,
                Err(_) => return Err(Error::field("limit", "The limit must be an integer.")),
            },
        };
        let before = match query.before.as_deref().map(str::trim).filter(|b| !b.is_empty()) {
            None => None,
            Some(raw) => Some(
                Uuid::parse_str(raw).map_err(|_| Error::field("before", "The before must be a next_before value."))?,
            ),
        };
        let name = query.name.as_deref().map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned);
        let mut conn = self.conn(caller.tenant_id).await?;
        // the page after `before`: older than that event, by (occurred_at, id); an id that names
        // none of the account's events starts at the newest
        let mut events: Vec<BusinessEvent> = diesel::sql_query(
            "SELECT e.id, e.name, e.occurred_at, e.payload AS data FROM events e
             LEFT JOIN events b ON b.tenant_id = $1 AND b.id = $2
             WHERE e.tenant_id = $1 AND ($3::text IS NULL OR e.name = $3)
               AND (b.id IS NULL OR (e.occurred_at, e.id) < (b.occurred_at, b.id))
             ORDER BY e.occurred_at DESC, e.id DESC LIMIT $4",
        )
        .bind::<BigInt, _>(caller.tenant_id.0)
        .bind::<Nullable<SqlUuid>, _>(before)
        .bind::<Nullable<Text>, _>(name)
        .bind::<BigInt, _>(limit + 1)
        .load(&mut conn)
        .await?;
        let has_more = events.len() as i64 > limit;
        events.truncate(limit as usize);
        let next_before = if has_more { events.last().map(|e| e.id) } else { None };
        Ok(EventLog { events, has_more, next_before })
    }

    /// Every event a subscription may name: the live ones, then the payment events, not live.
    pub fn event_types(&self) -> Vec<EventType> {
        let live = self.live.iter().map(|name| EventType { name: name.clone(), live: true });
        live.chain(NOT_LIVE.iter().map(|name| EventType { name: (*name).to_owned(), live: false })).collect()
    }
}
