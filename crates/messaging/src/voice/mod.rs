//! Voice and calls (contract: Voice `POST /voice/otp`, `POST /voice/messages`; Calls
//! `POST /calls`; the Voice and Calls events): outbound calls through a voice channel, shaped
//! after Africa's Talking Voice and Twilio (docs/api.md, "Voice and calls").
//!
//! A call is written `queued` with its plan (what it says and does) and one minute of its price
//! held from the wallet, and a [`place::PlaceCalls`] job asks the provider for it. The provider
//! then asks the channel's callback what to do at each turn of the live call ([`plan::next`]
//! answers) and tells how it ended, which settles the price per started minute and emits the
//! events. The sandbox provider announces how each call plays out and [`player::PlayCall`]
//! walks it through the same code.

pub mod callbacks;
pub mod campaigns;
pub mod menus;
pub mod place;
pub mod plan;
pub mod player;
pub mod requests;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{Caller, Error, Page, PageRequest, Permission, TenantId};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::schema::calls;

pub use crate::ids::{CallId, CallRef, CallUid};

/// Statuses a call ends in.
pub const ENDED: [&str; 4] = ["completed", "busy", "no_answer", "failed"];
pub const STATUSES: [&str; 7] = ["queued", "initiated", "in_progress", "completed", "busy", "no_answer", "failed"];
pub const KINDS: [&str; 3] = ["otp", "message", "call"];

/// A call, as answered and as its events carry it.
#[derive(Debug, Clone, Serialize, Queryable, Selectable, utoipa::ToSchema)]
#[diesel(table_name = calls)]
#[schema(as = Call)]
pub struct CallRecord {
    pub id: i64,
    pub uid: String,
    #[serde(skip)]
    pub tenant_id: i64,
    /// `otp` (`POST /voice/otp`), `message` (`POST /voice/messages`) or `call` (`POST /calls`).
    pub kind: String,
    /// `outbound`.
    pub direction: String,
    /// The voice channel it went through.
    #[serde(rename = "tenant_channel_id")]
    pub channel_id: i64,
    /// Our number the callee saw (none: the provider account's default).
    #[serde(rename = "sender")]
    pub caller: Option<String>,
    /// E.164.
    pub recipient: String,
    /// `queued`, `initiated` (the provider took it), `in_progress` (answered), then
    /// `completed`, `busy`, `no_answer` or `failed`.
    pub status: String,
    /// Why it failed, in words.
    #[serde(rename = "error_message")]
    pub error: Option<String>,
    #[serde(skip)]
    pub plan: serde_json::Value,
    /// `en` or `sw`.
    pub language: String,
    #[serde(skip)]
    pub position: Option<String>,
    #[serde(skip)]
    pub attempts: i16,
    /// The keys pressed, one entry per prompt, comma-separated.
    pub digits: Option<String>,
    /// The provider's id of the call (Africa's Talking's `sessionId`).
    #[serde(rename = "gateway_call_id")]
    pub provider_call_id: Option<String>,
    #[serde(skip)]
    pub provider_cost: Option<String>,
    /// Seconds on the line once answered.
    pub duration_seconds: i32,
    /// Started minutes billed.
    pub billed_minutes: i32,
    /// The price of one started minute to this number, in minor units.
    pub rate_minor: i64,
    /// What the wallet paid: one minute held while the call is live, settled when it ends.
    pub price_minor: i64,
    /// The recording (a connected call with `record`, or a voicemail) once available.
    pub recording_url: Option<String>,
    /// The post-call survey's score, 1 to 5.
    pub feedback_score: Option<i16>,
    pub metadata: Option<serde_json::Value>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub scheduled_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub answered_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub ended_at: Option<OffsetDateTime>,
    /// The call campaign that placed it.
    pub call_campaign_id: Option<i64>,
}

impl CallRecord {
    pub fn plan(&self) -> Result<plan::Plan, Error> {
        serde_json::from_value(self.plan.clone()).map_err(|e| Error::internal(format!("call {}: plan: {e}", self.id)))
    }

    /// The payload of the voice and call events: `event`, the call and its `call_id`, and
    /// `reason` when it did not complete.
    pub fn event_payload(&self, event: &str, reason: Option<&str>) -> serde_json::Value {
        let mut payload = serde_json::to_value(self).unwrap_or_default();
        payload["event"] = event.into();
        payload["call_id"] = self.id.into();
        if let Some(reason) = reason {
            payload["reason"] = reason.into();
        }
        payload
    }

    /// The event group of its kind: `voice.otp`, `voice.message` or `call`.
    pub fn event_group(&self) -> &'static str {
        match self.kind.as_str() {
            "otp" => "voice.otp",
            "message" => "voice.message",
            _ => "call",
        }
    }
}

/// Filters of `GET /calls`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallFilter {
    /// A call status; empty is no filter.
    #[param(schema_with = status_filter)]
    pub status: Option<String>,
    /// `otp`, `message` or `call`; empty is no filter.
    #[param(schema_with = kind_filter)]
    pub kind: Option<String>,
    /// A phone number in any common form.
    pub recipient: Option<String>,
}

fn status_filter() -> utoipa::openapi::schema::Schema {
    crate::messages::one_of(STATUSES, "A call status; empty is no filter.")
}

fn kind_filter() -> utoipa::openapi::schema::Schema {
    crate::messages::one_of(KINDS, "`otp`, `message` or `call`; empty is no filter.")
}

pub(crate) async fn get(conn: &mut store::Conn, tenant: TenantId, call: &CallRef) -> Result<CallRecord, Error> {
    let query = calls::table.filter(calls::tenant_id.eq(tenant.0)).select(CallRecord::as_select()).into_boxed();
    let query = match call {
        CallRef::Id(id) => query.filter(calls::id.eq(id.0)),
        CallRef::Uid(uid) => query.filter(calls::uid.eq(uid)),
    };
    query.first(conn).await.optional()?.ok_or_else(|| Error::not_found("Call"))
}

impl crate::MessagingService {
    /// `GET /calls/{id}`: by numeric id or uid.
    pub async fn call(&self, caller: &Caller, call: &CallRef) -> Result<CallRecord, Error> {
        caller.require_issuer()?;
        caller.require(Permission::MESSAGES_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        get(&mut conn, caller.tenant_id, call).await
    }

    /// `GET /calls`, newest first.
    pub async fn calls(
        &self,
        caller: &Caller,
        filter: &CallFilter,
        page: PageRequest,
    ) -> Result<Page<CallRecord>, Error> {
        caller.require_issuer()?;
        caller.require(Permission::MESSAGES_VIEW)?;
        let nonempty = |v: &Option<String>| {
            v.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(|v| v.replace('\0', "\u{fffd}"))
        };
        let status = nonempty(&filter.status);
        if status.as_deref().is_some_and(|s| !STATUSES.contains(&s)) {
            return Err(Error::field("status", format!("The status must be one of {}.", STATUSES.join(", "))));
        }
        let kind = nonempty(&filter.kind);
        if kind.as_deref().is_some_and(|k| !KINDS.contains(&k)) {
            return Err(Error::field("kind", "The kind must be otp, message or call."));
        }
        let recipient =
            nonempty(&filter.recipient).map(|r| crate::recipients::normalize(&r, &caller.calling_code).unwrap_or(r));
        let tenant = caller.tenant_id;
        let filtered = || {
            let mut query = calls::table.filter(calls::tenant_id.eq(tenant.0)).into_boxed();
            if let Some(status) = &status {
                query = query.filter(calls::status.eq(status.clone()));
            }
            if let Some(kind) = &kind {
                query = query.filter(calls::kind.eq(kind.clone()));
            }
            if let Some(recipient) = &recipient {
                query = query.filter(calls::recipient.eq(recipient.clone()));
            }
            query
        };
        let mut conn = self.conn(tenant).await?;
        let total: i64 = filtered().count().get_result(&mut conn).await?;
        let items = filtered()
            .order(calls::id.desc())
            .limit(page.per_page)
            .offset(page.offset())
            .select(CallRecord::as_select())
            .load(&mut conn)
            .await?;
        Ok(Page::new(items, page, total))
    }
}
