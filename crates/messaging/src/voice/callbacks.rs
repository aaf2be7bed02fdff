//! What a voice provider tells about a call (`POST /hooks/voice/{token}`, or the sandbox's
//! player): each turn of a live call is answered from its plan, and its end settles the price
//! and emits the events. Each turn is one transaction with the call row locked, so turns of one
//! call never interleave.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Error, TenantId};
use providers::{CallEnd, VoiceAction, VoiceCallback};
use time::OffsetDateTime;

use super::CallRecord;
use super::plan::{self, Heard};
use crate::MessagingService;
use crate::schema::calls;

/// Why an OTP or a message failed when the callee hung up before it was all said.
pub const HUNG_UP_EARLY: &str = "The callee hung up before the message ended.";

impl MessagingService {
    /// `POST /hooks/voice/{token}`: the provider's callback on the voice channel the token names;
    /// answers the content type and body to send back (the next actions of a live call).
    pub async fn voice_callback(
        &self,
        token: &str,
        content_type: &str,
        body: &[u8],
    ) -> Result<(&'static str, String), Error> {
        let channel = {
            let mut conn = self.global_conn().await?;
            crate::channels::by_callback_token(&mut conn, token).await?
        };
        if channel.kind != "voice" {
            return Err(Error::not_found("Channel"));
        }
        let provider = self.gateways.voice_reader(&channel)?;
        let callback = provider.parse_callback(content_type, body).map_err(|e| Error::validation(e.0))?;
        let actions = self.heard(TenantId(channel.tenant_id), channel.id, callback).await?;
        Ok(provider.render(&actions))
    }

    /// Applies one callback to its call: the next actions of a live call (none once it ended,
    /// or for a call this channel does not know, which is logged).
    pub(crate) async fn heard(
        &self,
        tenant: TenantId,
        channel: i64,
        callback: VoiceCallback,
    ) -> Result<Vec<VoiceAction>, Error> {
        let now = self.clock.now();
        let mut conn = self.conn(tenant).await?;
        conn.transaction(async move |conn| {
            let (provider_call_id, reference) = match &callback {
                VoiceCallback::Active { provider_call_id, reference, .. }
                | VoiceCallback::Ended { provider_call_id, reference, .. } => (provider_call_id, reference),
            };
            let Some(call) = locked(conn, tenant, channel, provider_call_id, reference.as_deref()).await? else {
                tracing::warn!(channel, provider_call_id, "a voice callback for an unknown call");
                return Ok(vec![]);
            };
            if super::ENDED.contains(&call.status.as_str()) {
                return Ok(vec![VoiceAction::Hangup]);
            }
            match callback {
                VoiceCallback::Active { provider_call_id, digits, recording_url, .. } => {
                    turn(conn, call, &provider_call_id, digits, recording_url, now).await
                }
                VoiceCallback::Ended { end, duration_seconds, cost, recording_url, provider_call_id, .. } => {
                    let ended = Ended { end, duration_seconds, cost, recording_url, provider_call_id };
                    finish(conn, call, ended, now).await?;
                    Ok(vec![])
                }
            }
        })
        .await
    }
}

/// The call a callback names, locked: by the provider's id on this channel, else by our uid
/// (the provider's `clientRequestId`), which a callback racing the placing answer carries.
async fn locked(
    conn: &mut store::Conn,
    tenant: TenantId,
    channel: i64,
    provider_call_id: &str,
    reference: Option<&str>,
) -> Result<Option<CallRecord>, Error> {
    let by_id = calls::table
        .filter(calls::tenant_id.eq(tenant.0))
        .filter(calls::channel_id.eq(channel))
        .filter(calls::provider_call_id.eq(provider_call_id))
        .select(CallRecord::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()?;
    match (by_id, reference) {
        (Some(call), _) => Ok(Some(call)),
        (None, Some(uid)) => Ok(calls::table
            .filter(calls::tenant_id.eq(tenant.0))
            .filter(calls::channel_id.eq(channel))
            .filter(calls::uid.eq(uid))
            .select(CallRecord::as_select())
            .for_update()
            .first(conn)
            .await
            .optional()?),
        (None, None) => Ok(None),
    }
}

/// One turn of a live call: what was heard moves it along its plan.
async fn turn(
    conn: &mut store::Conn,
    call: CallRecord,
    provider_call_id: &str,
    digits: Option<String>,
    recording_url: Option<String>,
    now: OffsetDateTime,
) -> Result<Vec<VoiceAction>, Error> {
    let live = call.status == "in_progress";
    let heard = match (live, recording_url, digits) {
        (false, _, _) => Heard::Answered,
        (true, Some(url), _) if call.position.as_deref() == Some(plan::VOICEMAIL) => Heard::Recording(url),
        (true, _, digits) => Heard::Digits(digits.filter(|d| !d.is_empty())),
    };
    let pressed = match &heard {
        Heard::Digits(keys) => Some(keys.clone().unwrap_or_default()),
        _ => None,
    };
    let next = plan::next(&call.plan()?, &call.language, call.position.as_deref(), call.attempts, heard);
    let digits = match (pressed, &call.digits) {
        (Some(keys), Some(before)) => Some(format!("{before},{keys}")),
        (Some(keys), None) => Some(keys),
        (None, before) => before.clone(),
    };
    let updated: CallRecord = diesel::update(calls::table.find(call.id))
        .set((
            calls::status.eq("in_progress"),
            calls::answered_at.eq(call.answered_at.unwrap_or(now)),
            calls::provider_call_id.eq(call.provider_call_id.as_deref().unwrap_or(provider_call_id)),
            calls::position.eq(&next.position),
            calls::attempts.eq(next.attempts),
            calls::digits.eq(digits),
            calls::recording_url.eq(next.recording.as_ref().or(call.recording_url.as_ref())),
            calls::feedback_score.eq(next.feedback.or(call.feedback_score)),
            calls::updated_at.eq(now),
        ))
        .returning(CallRecord::as_returning())
        .get_result(conn)
        .await?;
    let mut events = vec![];
    if !live && updated.kind != "call" {
        events.push(format!("{}.answered", updated.event_group()));
    }
    if next.recording.is_some() {
        events.push("call.recording_ready".to_owned());
    }
    if next.feedback.is_some() {
        events.push("call.feedback_ready".to_owned());
    }
    emit(conn, &updated, &events, None, now).await?;
    Ok(next.actions)
}

/// How a call ended, as told.
pub(crate) struct Ended {
    pub end: CallEnd,
    pub duration_seconds: u32,
    pub cost: Option<String>,
    pub recording_url: Option<String>,
    pub provider_call_id: String,
}

/// Ends a call: its status, the price of its started minutes against the minute held, its
/// recording, and the events. A call that never rang gives its held minute back.
pub(crate) async fn finish(
    conn: &mut store::Conn,
    call: CallRecord,
    ended: Ended,
    now: OffsetDateTime,
) -> Result<CallRecord, Error> {
    let tenant = TenantId(call.tenant_id);
    let mut plan = call.plan()?;
    let answered = call.answered_at.is_some() || ended.duration_seconds > 0;
    let duration = if answered { ended.duration_seconds } else { 0 };
    let (status, error) = match ended.end {
        CallEnd::Completed if call.kind != "call" && duration < plan::speaking_seconds(&plan, &call.language) => {
            ("failed", Some(HUNG_UP_EARLY.to_owned()))
        }
        CallEnd::Completed => ("completed", None),
        CallEnd::Busy => ("busy", None),
        CallEnd::NoAnswer => ("no_answer", None),
        CallEnd::Failed { reason } => ("failed", Some(reason)),
    };
    let minutes = i32::try_from(duration.div_ceil(60)).unwrap_or(i32::MAX);
    let price = call.rate_minor * i64::from(minutes);
    let note = format!("voice: call {}", call.uid);
    match price - call.price_minor {
        more if more > 0 => accounts::wallet::take(conn, tenant, more, &note).await?,
        back => accounts::wallet::refund(conn, tenant, -back, &note).await?,
    }
    plan::forget_code(&mut plan);
    let new_recording = ended.recording_url.filter(|_| call.recording_url.is_none());
    let provider_call_id = call.provider_call_id.clone().or(Some(ended.provider_call_id).filter(|id| !id.is_empty()));
    let ended_call: CallRecord = diesel::update(calls::table.find(call.id))
        .set((
            calls::status.eq(status),
            calls::error.eq(error.as_deref().or(call.error.as_deref())),
            calls::plan.eq(serde_json::to_value(&plan).map_err(Error::internal)?),
            calls::provider_call_id.eq(provider_call_id),
            calls::provider_cost.eq(ended.cost),
            calls::duration_seconds.eq(i32::try_from(duration).unwrap_or(i32::MAX)),
            calls::billed_minutes.eq(minutes),
            calls::price_minor.eq(price),
            calls::recording_url.eq(new_recording.as_ref().or(call.recording_url.as_ref())),
            calls::position.eq(plan::DONE),
            calls::ended_at.eq(now),
            calls::updated_at.eq(now),
        ))
        .returning(CallRecord::as_returning())
        .get_result(conn)
        .await?;
    let mut events = vec![];
    if new_recording.is_some() {
        events.push("call.recording_ready".to_owned());
    }
    let group = ended_call.event_group();
    events.push(match (group, status) {
        ("call", _) => "call.completed".to_owned(),
        (group, "completed") => format!("{group}.completed"),
        (group, _) => format!("{group}.failed"),
    });
    let reason = (status != "completed").then(|| error.unwrap_or_else(|| status.to_owned()));
    emit(conn, &ended_call, &events, reason, now).await?;
    super::campaigns::call_ended(conn, &ended_call, now).await?;
    Ok(ended_call)
}

/// A call that never reached the provider, or whose placing is in doubt: ended as `failed`.
pub(crate) async fn fail(
    conn: &mut store::Conn,
    call: CallRecord,
    reason: &str,
    now: OffsetDateTime,
) -> Result<CallRecord, Error> {
    let provider_call_id = call.provider_call_id.clone().unwrap_or_default();
    let ended = Ended {
        end: CallEnd::Failed { reason: reason.to_owned() },
        duration_seconds: 0,
        cost: None,
        recording_url: None,
        provider_call_id,
    };
    finish(conn, call, ended, now).await
}

async fn emit(
    conn: &mut store::Conn,
    call: &CallRecord,
    events: &[String],
    reason: Option<String>,
    now: OffsetDateTime,
) -> Result<(), Error> {
    let tenant = TenantId(call.tenant_id);
    let events =
        events.iter().map(|name| (tenant, name.clone(), call.event_payload(name, reason.as_deref()))).collect();
    store::outbox::emit_many(conn, events, now).await
}
