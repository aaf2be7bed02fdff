//! Call campaigns (contract: Call campaigns and their events): a contact group called with a
//! voice message or a menu, `calls_per_minute` at a time, within calling hours, busy and
//! unanswered numbers tried again after a while. Every callee is a target row written when the
//! campaign is made; a dispatch job each minute turns due targets into calls (the same calls as
//! `POST /voice/messages` and `POST /calls`), and each call's end settles its target. A prepaid
//! wallet that cannot hold a batch pauses the campaign until it can.

use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::error::FieldErrors;
use kernel::{Caller, Error, ErrorKind, Page, PageRequest, Permission, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::{Duration, OffsetDateTime, Time, UtcOffset};
use utoipa::ToSchema;
use uuid::Uuid;

use super::CallRecord;
use super::plan::{Feedback, Menu, Plan};
use super::requests::{NewCalls, check_ivr, route, write_calls};
use crate::MessagingService;
pub use crate::ids::{CallCampaignId, CallCampaignRef, CallCampaignUid};
use crate::schema::{call_campaign_targets, call_campaigns};

/// Statuses a campaign ends in.
pub const ENDED: [&str; 3] = ["completed", "cancelled", "failed"];
/// Why the wallet paused a campaign.
pub const NO_BALANCE: &str = "insufficient_balance";

/// `POST /call-campaigns`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CallCampaignBody {
    /// At most 160 characters; the group's name when absent.
    #[serde(default)]
    #[schema(max_length = 160)]
    pub name: Option<String>,
    /// The contact group to call: its numeric id or UUID.
    #[schema(min_length = 1, max_length = 64)]
    pub contact_group_id: String,
    /// Exactly one of `message` (text to speech), `audio_url` and `ivr` (a menu, as in
    /// `POST /calls`).
    #[serde(default)]
    #[schema(max_length = 1000)]
    pub message: Option<String>,
    #[serde(default)]
    #[schema(max_length = 2048)]
    pub audio_url: Option<String>,
    #[serde(default)]
    pub ivr: Option<Menu>,
    /// With `ivr`: the post-call survey.
    #[serde(default)]
    pub feedback: Option<Feedback>,
    #[serde(default)]
    #[schema(pattern = "^(en|sw)$")]
    pub language: Option<String>,
    #[serde(default)]
    #[schema(max_length = 64)]
    pub sender_id: Option<String>,
    /// Calls started per minute, 1 to 600 (default 60).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 600)]
    pub calls_per_minute: Option<u32>,
    #[serde(default)]
    pub calling_hours: Option<CallingHours>,
    /// Tries per number when it is busy or not answered, 1 to 3 (default 2).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 3)]
    pub max_attempts: Option<u8>,
    /// Minutes before a busy or unanswered number is tried again, 5 to 1,440 (default 30).
    #[serde(default)]
    #[schema(minimum = 5, maximum = 1440)]
    pub retry_after_minutes: Option<u32>,
    #[serde(default)]
    #[schema(max_length = 100)]
    pub schedule_time: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
}

/// When calls may start: `start` to `end` (`HH:MM`, the same day) at `utc_offset`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CallingHours {
    /// Default `08:00`.
    #[serde(default = "default_start")]
    #[schema(pattern = "^([01][0-9]|2[0-3]):[0-5][0-9]$")]
    pub start: String,
    /// Default `20:00`; after `start` (`24:00` is midnight).
    #[serde(default = "default_end")]
    #[schema(pattern = "^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$")]
    pub end: String,
    /// The callees' UTC offset, default `+03:00` (East Africa Time).
    #[serde(default = "default_offset")]
    #[schema(pattern = r"^[+-]([01][0-9]|2[0-3]):[0-5][0-9]$")]
    pub utc_offset: String,
}

fn default_start() -> String {
    "08:00".to_owned()
}
fn default_end() -> String {
    "20:00".to_owned()
}
fn default_offset() -> String {
    "+03:00".to_owned()
}

impl Default for CallingHours {
    fn default() -> Self {
        Self { start: default_start(), end: default_end(), utc_offset: default_offset() }
    }
}

/// A call campaign.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CallCampaign {
    pub id: i64,
    pub uid: String,
    pub name: String,
    /// `scheduled`, `running`, `paused`, `completed`, `cancelled` or `failed`.
    pub status: String,
    /// Why it is paused or failed (`insufficient_balance` when the wallet paused it).
    pub status_reason: Option<String>,
    pub contact_group_id: i64,
    /// `message` (a text or an audio file) or `call` (a menu).
    pub kind: String,
    pub language: String,
    pub sender_id: Option<String>,
    pub calls_per_minute: i32,
    pub calling_hours: CallingHours,
    pub max_attempts: i16,
    pub retry_after_minutes: i32,
    /// Numbers to call (the group's, each once, opted-out ones left out).
    pub total_targets: i32,
    /// Numbers whose last call completed, and those given up on.
    pub completed_targets: i32,
    pub failed_targets: i32,
    pub metadata: Option<Value>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub scheduled_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub started_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub ended_at: Option<OffsetDateTime>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = call_campaigns)]
struct Row {
    id: i64,
    uid: String,
    tenant_id: i64,
    name: String,
    status: String,
    status_reason: Option<String>,
    contact_group_id: i64,
    plan: Value,
    language: String,
    sender_id: Option<String>,
    calls_per_minute: i32,
    hours_start: i16,
    hours_end: i16,
    utc_offset_minutes: i16,
    max_attempts: i16,
    retry_minutes: i32,
    total_targets: i32,
    completed_targets: i32,
    failed_targets: i32,
    token: Uuid,
    metadata: Option<Value>,
    scheduled_at: Option<OffsetDateTime>,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
    started_at: Option<OffsetDateTime>,
    ended_at: Option<OffsetDateTime>,
}

fn hhmm(minutes: i16) -> String {
    format!("{:02}:{:02}", minutes / 60, minutes % 60)
}

impl Row {
    fn view(self) -> CallCampaign {
        let offset = self.utc_offset_minutes;
        let sign = if offset < 0 { '-' } else { '+' };
        let calling_hours = CallingHours {
            start: hhmm(self.hours_start),
            end: hhmm(self.hours_end),
            utc_offset: format!("{sign}{}", hhmm(offset.abs())),
        };
        let kind = if self.plan["kind"] == "call" { "call" } else { "message" };
        CallCampaign {
            id: self.id,
            uid: self.uid,
            name: self.name,
            status: self.status,
            status_reason: self.status_reason,
            contact_group_id: self.contact_group_id,
            kind: kind.to_owned(),
            language: self.language,
            sender_id: self.sender_id,
            calls_per_minute: self.calls_per_minute,
            calling_hours,
            max_attempts: self.max_attempts,
            retry_after_minutes: self.retry_minutes,
            total_targets: self.total_targets,
            completed_targets: self.completed_targets,
            failed_targets: self.failed_targets,
            metadata: self.metadata,
            scheduled_at: self.scheduled_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
            started_at: self.started_at,
            ended_at: self.ended_at,
        }
    }

    fn offset(&self) -> UtcOffset {
        UtcOffset::from_whole_seconds(i32::from(self.utc_offset_minutes) * 60).unwrap_or(UtcOffset::UTC)
    }

    /// `None` when calls may start at `now`; else when they may next.
    fn outside_hours(&self, now: OffsetDateTime) -> Option<OffsetDateTime> {
        let local = now.to_offset(self.offset());
        let minute = i16::from(local.hour()) * 60 + i16::from(local.minute());
        if (self.hours_start..self.hours_end).contains(&minute) {
            return None;
        }
        let start = Time::from_hms(u8::try_from(self.hours_start / 60).unwrap_or(0), (self.hours_start % 60) as u8, 0)
            .unwrap_or(Time::MIDNIGHT);
        let day =
            if minute < self.hours_start { local.date() } else { local.date().next_day().unwrap_or(local.date()) };
        Some(day.with_time(start).assume_offset(self.offset()))
    }
}

/// `HH:MM` as minutes after midnight (`24:00` allowed when `end`).
fn minutes(raw: &str, end: bool) -> Option<i16> {
    let (h, m) = raw.split_once(':')?;
    if h.len() != 2 || m.len() != 2 || !h.bytes().chain(m.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m): (i16, i16) = (h.parse().ok()?, m.parse().ok()?);
    let total = h * 60 + m;
    let valid = (0..60).contains(&m) && (0..=if end { 1440 } else { 1439 }).contains(&total);
    valid.then_some(total)
}

fn offset_minutes(raw: &str) -> Option<i16> {
    let sign = match raw.chars().next()? {
        '+' => 1,
        '-' => -1,
        _ => return None,
    };
    let total = minutes(raw.get(1..)?, false)?;
    (total <= 14 * 60).then_some(sign * total)
}

/// A checked body.
struct Checked {
    name: Option<String>,
    group: String,
    plan: Plan,
    language: String,
    sender_id: Option<String>,
    calls_per_minute: i32,
    hours: (i16, i16, i16),
    max_attempts: i16,
    retry_minutes: i32,
    schedule: Option<OffsetDateTime>,
    metadata: Option<Map<String, Value>>,
}

impl CallCampaignBody {
    fn check(self, calling_code: &str) -> Result<Checked, Error> {
        let mut errors = FieldErrors::new();
        if self.name.as_deref().is_some_and(|n| n.chars().count() > 160 || n.contains('\0')) {
            errors.add("name", "The name may not be longer than 160 characters.");
        }
        let message = self.message.filter(|m| !m.trim().is_empty());
        let audio = self.audio_url.map(|u| u.trim().to_owned()).filter(|u| !u.is_empty());
        let given = [message.is_some(), audio.is_some(), self.ivr.is_some()].iter().filter(|g| **g).count();
        if given != 1 {
            errors.add("message", "Give exactly one of message, audio_url and ivr.");
        }
        let ivr = self.ivr.map(|menu| check_ivr(&mut errors, menu, calling_code));
        if let Some(feedback) = &self.feedback {
            super::requests::text(&mut errors, "feedback.prompt", feedback.prompt.as_deref(), false);
        }
        super::requests::text(&mut errors, "message", message.as_deref(), true);
        if let Some(url) = &audio {
            super::requests::audio_url(&mut errors, "audio_url", url);
        }
        let plan = match ivr {
            Some(menu) => Plan::Call { connect: None, ivr: Some(menu), feedback: self.feedback },
            None => Plan::Message { text: message, audio_url: audio },
        };
        let language = super::requests::language(&mut errors, self.language.as_deref());
        let calls_per_minute = self.calls_per_minute.unwrap_or(60);
        if !(1..=600).contains(&calls_per_minute) {
            errors.add("calls_per_minute", "The calls_per_minute must be between 1 and 600.");
        }
        let hours = self.calling_hours.unwrap_or_default();
        let start = minutes(&hours.start, false);
        let end = minutes(&hours.end, true);
        let offset = offset_minutes(&hours.utc_offset);
        if start.is_none() {
            errors.add("calling_hours.start", "The start is a time of day, HH:MM.");
        }
        if end.is_none() || end.zip(start).is_some_and(|(end, start)| end <= start) {
            errors.add("calling_hours.end", "The end is a time of day (HH:MM) after the start.");
        }
        if offset.is_none() {
            errors.add("calling_hours.utc_offset", "The utc_offset is like +03:00.");
        }
        let max_attempts = self.max_attempts.unwrap_or(2);
        if !(1..=3).contains(&max_attempts) {
            errors.add("max_attempts", "The max_attempts must be between 1 and 3.");
        }
        let retry = self.retry_after_minutes.unwrap_or(30);
        if !(5..=1440).contains(&retry) {
            errors.add("retry_after_minutes", "The retry_after_minutes must be between 5 and 1440.");
        }
        let schedule = super::requests::schedule(&mut errors, self.schedule_time.as_deref());
        super::requests::metadata(&mut errors, &self.metadata);
        errors.finish()?;
        Ok(Checked {
            name: self.name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty()),
            group: self.contact_group_id,
            plan,
            language,
            sender_id: self.sender_id.filter(|s| !s.trim().is_empty()),
            calls_per_minute: calls_per_minute as i32,
            hours: (start.unwrap_or(0), end.unwrap_or(1440), offset.unwrap_or(0)),
            max_attempts: i16::from(max_attempts),
            retry_minutes: retry as i32,
            schedule,
            metadata: self.metadata,
        })
    }
}

/// What an owner may do to a campaign (`POST /call-campaigns/{id}/{action}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Pause,
    Resume,
    Cancel,
}

impl Action {
    pub const NAMES: [&'static str; 3] = ["pause", "resume", "cancel"];

    /// `pause`, `resume` or `cancel`; anything else is no action.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "pause" => Some(Self::Pause),
            "resume" => Some(Self::Resume),
            "cancel" => Some(Self::Cancel),
            _ => None,
        }
    }

    fn done(self) -> &'static str {
        match self {
            Self::Pause => "paused",
            Self::Resume => "resumed",
            Self::Cancel => "cancelled",
        }
    }
}

/// Dispatches a campaign's due targets, then queues itself a minute later while any remain.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DispatchCallCampaign {
    pub tenant_id: TenantId,
    pub campaign_id: i64,
    /// Only the chain holding the campaign's current token runs (resuming issues a new one).
    pub token: Uuid,
}

impl Job for DispatchCallCampaign {
    const NAME: &'static str = "voice.dispatch_call_campaign";
    type State = MessagingService;

    async fn run(self, service: Arc<MessagingService>, ctx: JobContext) -> Result<(), JobError> {
        let tenant = crate::service::job_tenant(self.tenant_id, &ctx)?;
        service.dispatch_call_campaign(tenant, self.campaign_id, self.token).await.map_err(JobError::from)
    }
}

async fn locked(conn: &mut store::Conn, tenant: TenantId, campaign: &CallCampaignRef) -> Result<Row, Error> {
    let of_tenant = call_campaigns::table.filter(call_campaigns::tenant_id.eq(tenant.0));
    let id = match campaign {
        CallCampaignRef::Id(id) => Some(id.0),
        CallCampaignRef::Uid(uid) => {
            of_tenant.filter(call_campaigns::uid.eq(uid)).select(call_campaigns::id).first(conn).await.optional()?
        }
    };
    of_tenant
        .filter(call_campaigns::id.eq(id.unwrap_or(0)))
        .select(Row::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("Call campaign"))
}

/// Moves a campaign to `status` and emits its event (`call_campaign.<event>`).
async fn set_status(
    conn: &mut store::Conn,
    row: &Row,
    (status, reason): (&str, Option<&str>),
    event: &str,
    now: OffsetDateTime,
) -> Result<Row, Error> {
    let ended = ENDED.contains(&status).then_some(now);
    let started = row.started_at.or((status == "running").then_some(now));
    let row: Row = diesel::update(call_campaigns::table.find(row.id))
        .set((
            call_campaigns::status.eq(status),
            call_campaigns::status_reason.eq(reason),
            call_campaigns::started_at.eq(started),
            call_campaigns::ended_at.eq(ended.or(row.ended_at)),
            call_campaigns::updated_at.eq(now),
        ))
        .returning(Row::as_returning())
        .get_result(conn)
        .await?;
    emit(conn, &row, event, None, now).await?;
    Ok(row)
}

async fn emit(
    conn: &mut store::Conn,
    row: &Row,
    event: &str,
    target: Option<&CallRecord>,
    now: OffsetDateTime,
) -> Result<(), Error> {
    let name = format!("call_campaign.{event}");
    let mut payload = serde_json::json!({"event": name, "call_campaign": row.clone().view()});
    if let Some(call) = target {
        payload["recipient"] = call.recipient.as_str().into();
        payload["outcome"] = call.status.as_str().into();
        payload["call"] = serde_json::to_value(call).map_err(Error::internal)?;
    }
    store::outbox::emit(conn, TenantId(row.tenant_id), &name, payload, now).await.map(drop)
}

async fn enqueue_tick(
    conn: &mut store::Conn,
    row: &Row,
    token: Uuid,
    run_at: Option<OffsetDateTime>,
) -> Result<(), Error> {
    let job = DispatchCallCampaign { tenant_id: TenantId(row.tenant_id), campaign_id: row.id, token };
    let options = Enqueue { tenant_id: Some(TenantId(row.tenant_id)), run_at, ..Default::default() };
    store::jobs::enqueue(conn, &job, options).await.map(drop)
}

/// Whether any target is still to call or live.
async fn open_targets(conn: &mut store::Conn, row: &Row) -> Result<bool, Error> {
    Ok(diesel::select(diesel::dsl::exists(
        call_campaign_targets::table
            .filter(call_campaign_targets::tenant_id.eq(row.tenant_id))
            .filter(call_campaign_targets::campaign_id.eq(row.id))
            .filter(call_campaign_targets::status.eq_any(["pending", "calling"])),
    ))
    .get_result(conn)
    .await?)
}

impl MessagingService {
    /// `POST /call-campaigns`: the campaign and one target per distinct number of the group.
    pub async fn create_call_campaign(&self, caller: &Caller, body: CallCampaignBody) -> Result<CallCampaign, Error> {
        caller.require_issuer()?;
        caller.require(Permission::SEND)?;
        let checked = body.check(&caller.calling_code)?;
        let tenant = caller.tenant_id;
        let now = self.clock.now();
        let due = checked.schedule.filter(|at| *at > now);
        let mut conn = self.conn(tenant).await?;
        conn.transaction(async move |conn| {
            let (ids, uids) = match ::contacts::GroupRef::parse(checked.group.trim()) {
                Ok(::contacts::GroupRef::Id(id)) => (vec![id], vec![]),
                Ok(::contacts::GroupRef::Uid(uid)) => (vec![], vec![uid]),
                Err(_) => (vec![], vec![]),
            };
            let group = ::contacts::group::active_among(conn, tenant, &ids, &uids)
                .await?
                .pop()
                .ok_or_else(|| Error::not_found("Contact group"))?;
            // the voice channel and number must exist now, not only at the first batch
            route(conn, tenant, checked.sender_id.as_deref()).await?;
            let row: Row = diesel::insert_into(call_campaigns::table)
                .values((
                    call_campaigns::uid.eq(CallCampaignUid::generate()),
                    call_campaigns::tenant_id.eq(tenant.0),
                    call_campaigns::name.eq(checked.name.unwrap_or(group.name)),
                    call_campaigns::status.eq("scheduled"),
                    call_campaigns::contact_group_id.eq(group.id),
                    call_campaigns::plan.eq(serde_json::to_value(&checked.plan).map_err(Error::internal)?),
                    call_campaigns::language.eq(&checked.language),
                    call_campaigns::sender_id.eq(&checked.sender_id),
                    call_campaigns::calls_per_minute.eq(checked.calls_per_minute),
                    call_campaigns::hours_start.eq(checked.hours.0),
                    call_campaigns::hours_end.eq(checked.hours.1),
                    call_campaigns::utc_offset_minutes.eq(checked.hours.2),
                    call_campaigns::max_attempts.eq(checked.max_attempts),
                    call_campaigns::retry_minutes.eq(checked.retry_minutes),
                    call_campaigns::token.eq(Uuid::new_v4()),
                    call_campaigns::metadata.eq(checked.metadata.map(Value::Object)),
                    call_campaigns::scheduled_at.eq(due),
                    call_campaigns::created_at.eq(now),
                    call_campaigns::updated_at.eq(now),
                ))
                .returning(Row::as_returning())
                .get_result(conn)
                .await?;
            let total = write_targets(conn, &row, now).await?;
            let row: Row = diesel::update(call_campaigns::table.find(row.id))
                .set(call_campaigns::total_targets.eq(total))
                .returning(Row::as_returning())
                .get_result(conn)
                .await?;
            enqueue_tick(conn, &row, row.token, due).await?;
            Ok(row.view())
        })
        .await
    }

    /// `GET /call-campaigns/{id}`.
    pub async fn call_campaign(&self, caller: &Caller, campaign: &CallCampaignRef) -> Result<CallCampaign, Error> {
        caller.require_issuer()?;
        caller.require(Permission::MESSAGES_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let tenant = caller.tenant_id;
        let campaign = campaign.clone();
        conn.transaction(async move |conn| locked(conn, tenant, &campaign).await.map(Row::view)).await
    }

    /// `GET /call-campaigns`, newest first.
    pub async fn call_campaigns(&self, caller: &Caller, page: PageRequest) -> Result<Page<CallCampaign>, Error> {
        caller.require_issuer()?;
        caller.require(Permission::MESSAGES_VIEW)?;
        let tenant = caller.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let total: i64 =
            call_campaigns::table.filter(call_campaigns::tenant_id.eq(tenant.0)).count().get_result(&mut conn).await?;
        let rows: Vec<Row> = call_campaigns::table
            .filter(call_campaigns::tenant_id.eq(tenant.0))
            .order(call_campaigns::id.desc())
            .limit(page.per_page)
            .offset(page.offset())
            .select(Row::as_select())
            .load(&mut conn)
            .await?;
        Ok(Page::new(rows.into_iter().map(Row::view).collect(), page, total))
    }

    /// `POST /call-campaigns/{id}/pause|resume|cancel`: 409 from a status that cannot move so.
    pub async fn call_campaign_action(
        &self,
        caller: &Caller,
        campaign: &CallCampaignRef,
        action: Action,
    ) -> Result<CallCampaign, Error> {
        caller.require_issuer()?;
        caller.require(Permission::SEND)?;
        let tenant = caller.tenant_id;
        let now = self.clock.now();
        let campaign = campaign.clone();
        let mut conn = self.conn(tenant).await?;
        conn.transaction(async move |conn| {
            let row = locked(conn, tenant, &campaign).await?;
            let refused = || Error::conflict(format!("A {} call campaign cannot be {}.", row.status, action.done()));
            let row = match (action, row.status.as_str()) {
                (Action::Pause, "scheduled" | "running") => {
                    set_status(conn, &row, ("paused", None), "paused", now).await?
                }
                (Action::Resume, "paused") => {
                    let token = Uuid::new_v4();
                    diesel::update(call_campaigns::table.find(row.id))
                        .set(call_campaigns::token.eq(token))
                        .execute(conn)
                        .await?;
                    enqueue_tick(conn, &row, token, None).await?;
                    set_status(conn, &row, ("running", None), "resumed", now).await?
                }
                (Action::Cancel, "scheduled" | "running" | "paused") => {
                    diesel::update(
                        call_campaign_targets::table
                            .filter(call_campaign_targets::campaign_id.eq(row.id))
                            .filter(call_campaign_targets::status.eq("pending")),
                    )
                    .set(call_campaign_targets::status.eq("cancelled"))
                    .execute(conn)
                    .await?;
                    set_status(conn, &row, ("cancelled", Some("cancelled")), "failed", now).await?
                }
                _ => return Err(refused()),
            };
            Ok(row.view())
        })
        .await
    }

    /// One minute of a campaign: its due targets become calls (at most `calls_per_minute`).
    async fn dispatch_call_campaign(&self, tenant: TenantId, campaign: i64, token: Uuid) -> Result<(), Error> {
        let now = self.clock.now();
        let config = self.config.clone();
        let mut conn = self.conn(tenant).await?;
        conn.transaction(async move |conn| {
            let mut row = locked(conn, tenant, &CallCampaignRef::Id(CallCampaignId(campaign))).await?;
            let wallet_paused = row.status == "paused" && row.status_reason.as_deref() == Some(NO_BALANCE);
            if row.token != token || !(row.status == "scheduled" || row.status == "running" || wallet_paused) {
                return Ok(());
            }
            if row.status == "scheduled" {
                row = set_status(conn, &row, ("running", None), "started", now).await?;
            }
            if let Some(next) = row.outside_hours(now) {
                return enqueue_tick(conn, &row, token, Some(next)).await;
            }
            let due: Vec<String> = call_campaign_targets::table
                .filter(call_campaign_targets::campaign_id.eq(row.id))
                .filter(call_campaign_targets::status.eq("pending"))
                .filter(call_campaign_targets::next_at.le(now))
                .order((call_campaign_targets::next_at, call_campaign_targets::recipient))
                .limit(i64::from(row.calls_per_minute))
                .select(call_campaign_targets::recipient)
                .load(conn)
                .await?;
            if due.is_empty() {
                if !open_targets(conn, &row).await? {
                    set_status(conn, &row, ("completed", None), "completed", now).await?;
                    return Ok(());
                }
                return enqueue_tick(conn, &row, token, Some(now + Duration::MINUTE)).await;
            }
            let route = match route(conn, tenant, row.sender_id.as_deref()).await {
                Ok(route) => route,
                Err(e) if e.kind == ErrorKind::Validation => {
                    set_status(conn, &row, ("failed", Some(&e.message)), "failed", now).await?;
                    return Ok(());
                }
                Err(e) => return Err(e),
            };
            let plan: Plan = serde_json::from_value(row.plan.clone()).map_err(Error::internal)?;
            let kind = if matches!(plan, Plan::Call { .. }) { "call" } else { "message" };
            let new = NewCalls {
                plan: &plan,
                kind,
                language: &row.language,
                metadata: None,
                due: None,
                campaign: Some(row.id),
            };
            // a savepoint: a batch the wallet cannot hold writes nothing
            let written = conn
                .transaction(async |conn| match write_calls(conn, tenant, &route, &new, &due, (now, &config)).await? {
                    Ok(calls) => Ok(calls),
                    Err(_) => Err(Error::payment_required(NO_BALANCE)),
                })
                .await;
            let calls = match written {
                Ok(calls) => calls,
                Err(e) if e.kind == ErrorKind::PaymentRequired => {
                    if row.status != "paused" {
                        set_status(conn, &row, ("paused", Some(NO_BALANCE)), "paused", now).await?;
                    }
                    return enqueue_tick(conn, &row, token, Some(now + config.paused_recheck)).await;
                }
                Err(e) => return Err(e),
            };
            if wallet_paused {
                row = set_status(conn, &row, ("running", None), "resumed", now).await?;
            }
            let recipients: Vec<&str> = calls.iter().map(|c| c.recipient.as_str()).collect();
            let ids: Vec<i64> = calls.iter().map(|c| c.id).collect();
            diesel::sql_query(
                "UPDATE call_campaign_targets t SET status = 'calling', attempts = t.attempts + 1, call_id = c.id
                 FROM unnest($2::text[], $3::bigint[]) AS c (recipient, id)
                 WHERE t.tenant_id = $4 AND t.campaign_id = $1 AND t.recipient = c.recipient",
            )
            .bind::<diesel::sql_types::BigInt, _>(row.id)
            .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(recipients)
            .bind::<diesel::sql_types::Array<diesel::sql_types::BigInt>, _>(ids)
            .bind::<diesel::sql_types::BigInt, _>(tenant.0)
            .execute(conn)
            .await?;
            enqueue_tick(conn, &row, token, Some(now + Duration::MINUTE)).await
        })
        .await
    }
}

/// The group's numbers as targets, each once, opted-out numbers left out: how many.
async fn write_targets(conn: &mut store::Conn, row: &Row, now: OffsetDateTime) -> Result<i32, Error> {
    const PAGE: i64 = 1_000;
    let tenant = TenantId(row.tenant_id);
    let opted_out: std::collections::HashSet<String> = crate::blacklist::all(conn, tenant).await?.into_iter().collect();
    let last = ::contacts::recipients::last_id(conn, tenant, row.contact_group_id).await?;
    let (mut after, mut total) = (0, 0);
    loop {
        let page = ::contacts::recipients::page(conn, tenant, row.contact_group_id, after, last, PAGE).await?;
        let Some(tail) = page.last() else { break };
        after = tail.id;
        let rows: Vec<_> = page
            .iter()
            .filter(|c| !opted_out.contains(&c.e164()))
            .map(|c| {
                (
                    call_campaign_targets::tenant_id.eq(row.tenant_id),
                    call_campaign_targets::campaign_id.eq(row.id),
                    call_campaign_targets::contact_id.eq(c.id),
                    call_campaign_targets::recipient.eq(c.e164()),
                    call_campaign_targets::next_at.eq(now),
                )
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        total += diesel::insert_into(call_campaign_targets::table)
            .values(&rows)
            .on_conflict_do_nothing()
            .execute(conn)
            .await?;
    }
    Ok(i32::try_from(total).unwrap_or(i32::MAX))
}

/// A campaign's call ended: its target is done, or due again when the number was busy or did
/// not answer and tries are left; the campaign completes with its last target.
pub(crate) async fn call_ended(conn: &mut store::Conn, call: &CallRecord, now: OffsetDateTime) -> Result<(), Error> {
    let Some(campaign) = call.call_campaign_id else { return Ok(()) };
    let row = locked(conn, TenantId(call.tenant_id), &CallCampaignRef::Id(CallCampaignId(campaign))).await?;
    // by the target's key (tenant, campaign, number): a lookup, not a scan of every target
    let target = call_campaign_targets::table
        .filter(call_campaign_targets::tenant_id.eq(call.tenant_id))
        .filter(call_campaign_targets::campaign_id.eq(campaign))
        .filter(call_campaign_targets::recipient.eq(&call.recipient))
        .filter(call_campaign_targets::call_id.eq(call.id));
    let attempts: Option<i16> = target
        .filter(call_campaign_targets::status.eq("calling"))
        .select(call_campaign_targets::attempts)
        .first(conn)
        .await
        .optional()?;
    let Some(attempts) = attempts else { return Ok(()) };
    let unanswered = call.status == "busy" || call.status == "no_answer";
    if unanswered && attempts < row.max_attempts && !ENDED.contains(&row.status.as_str()) {
        let next = now + Duration::minutes(i64::from(row.retry_minutes));
        diesel::update(target)
            .set((call_campaign_targets::status.eq("pending"), call_campaign_targets::next_at.eq(next)))
            .execute(conn)
            .await?;
        return Ok(());
    }
    let completed = call.status == "completed";
    diesel::update(target)
        .set(call_campaign_targets::status.eq(if completed { "completed" } else { "failed" }))
        .execute(conn)
        .await?;
    let row: Row = diesel::update(call_campaigns::table.find(campaign))
        .set((
            call_campaigns::completed_targets.eq(call_campaigns::completed_targets + i32::from(completed)),
            call_campaigns::failed_targets.eq(call_campaigns::failed_targets + i32::from(!completed)),
            call_campaigns::updated_at.eq(now),
        ))
        .returning(Row::as_returning())
        .get_result(conn)
        .await?;
    emit(conn, &row, "target_completed", Some(call), now).await?;
    // each target is settled once, so the counters say when none is left (no scan per call)
    if row.status == "running" && row.completed_targets + row.failed_targets >= row.total_targets {
        set_status(conn, &row, ("completed", None), "completed", now).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calling_hours_read_hh_mm_and_offsets() {
        assert_eq!(
            (minutes("08:30", false), minutes("24:00", true), minutes("24:00", false)),
            (Some(510), Some(1440), None)
        );
        for bad in ["8:30", "08:60", "0830", "08:3", " 08:30", "+8:00", ""] {
            assert_eq!(minutes(bad, true), None, "{bad:?}");
        }
        assert_eq!(
            (offset_minutes("+03:00"), offset_minutes("-05:30"), offset_minutes("+15:00")),
            (Some(180), Some(-330), None)
        );
        assert_eq!(offset_minutes("03:00"), None);
    }
}
