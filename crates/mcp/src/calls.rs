//! The `calls` tools (contract: the `calls` MCP server, `mcp:calls`): a voice OTP, a voice
//! message, a call that connects to an agent or runs a menu, reading calls with their
//! recordings and feedback, and call campaigns, over the `messaging::voice` methods the REST routes call. Placing a
//! call spends from the wallet, so it needs `mcp:spend` (one elevation per tool: `mcp:send`
//! alone does not place calls); the person needs `communications.send` as on REST.

use kernel::page::PageQuery;
use kernel::{Error, Page, PageRequest, Permission, parse_id};
use messaging::voice::campaigns::{Action, CallCampaign, CallCampaignBody, CallCampaignRef};
use messaging::voice::requests::{CallBody, OtpBody, VoiceCalls, VoiceMessageBody};
use messaging::voice::{CallFilter, CallRecord, CallRef};
use serde_json::Value;

use crate::scopes::Elevation;
use crate::tool::{
    Call, Effect, Tool, answer, object, params_of, query_input, schema_of, uid_or_id, with_def, with_members,
};

const SERVER: &str = "calls";

/// The calls tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "send_voice_otp",
            title: "Call a number and read a code",
            description: "Calls one number and reads a one-time code digit by digit, as POST /voice/otp does: recipient, code (4 to 8 digits) or length (4 to 8, default 6: a code is made and answered once, here), language (en or sw), repeat (1 to 3, default 2), optional sender_id (one of the account's voice numbers). One minute is held from the wallet at once; the call is billed per started minute when it ends. Answers the queued call with its code; read it with get_call for how it went.",
            server: SERVER,
            elevation: Some(Elevation::Spend),
            permission: Some(Permission::SEND),
            effect: Effect::Create,
            input: schema_of::<OtpBody>,
            // the call and its code (the REST answer flattens them; an MCP output is one object)
            output: || {
                let code = serde_json::json!({"type": "string", "description": "The code read out."});
                with_members(schema_of::<CallRecord>(), &[("code", code, true)])
            },
            call: |call| Box::pin(send_voice_otp(call)),
        },
        Tool {
            name: "send_voice_message",
            title: "Call numbers and speak a message",
            description: "Calls each number (recipient or recipients, at most 1,000) and speaks message (text, en or sw) or plays audio_url, as POST /voice/messages does; schedule_time waits until then. One minute per call is held from the wallet at once (refused when the prepaid balance cannot hold them all); each call is billed per started minute when it ends.",
            server: SERVER,
            elevation: Some(Elevation::Spend),
            permission: Some(Permission::SEND),
            effect: Effect::Create,
            input: schema_of::<VoiceMessageBody>,
            output: schema_of::<VoiceCalls>,
            call: |call| Box::pin(send_voice_message(call)),
        },
        Tool {
            name: "place_call",
            title: "Place a call",
            description: "Calls a number and either connects it to agents (connect: {numbers (1 to 5, tried in order), greeting, record}) or runs a menu (ivr: {prompt, options keyed 0-9, * or # each doing one of say, play, voicemail, transfer or a nested menu, timeout_seconds, attempts}), then asks for a 1 to 5 score when feedback is given, as POST /calls does. Billed per started minute; the call's recording_url and feedback_score appear on get_call once known.",
            server: SERVER,
            elevation: Some(Elevation::Spend),
            permission: Some(Permission::SEND),
            effect: Effect::Create,
            input: schema_of::<CallBody>,
            output: schema_of::<CallRecord>,
            call: |call| Box::pin(place_call(call)),
        },
        Tool {
            name: "get_call",
            title: "Get a call",
            description: "One call by its uid (call_…) or numeric id, as GET /calls/{id} does: status (queued, initiated, in_progress, completed, busy, no_answer, failed), error_message, digits pressed, duration_seconds, billed_minutes, price_minor, recording_url and feedback_score.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::MESSAGES_VIEW),
            effect: Effect::Read,
            input: || object(&[("call", uid_or_id("The call's uid (call_…) or numeric id."), true)]),
            output: schema_of::<CallRecord>,
            call: |call| Box::pin(get_call(call)),
        },
        Tool {
            name: "list_calls",
            title: "List calls",
            description: "The account's calls (voice OTPs, voice messages and calls), newest first (20 a page), filtered by status, kind (otp, message, call) and recipient, as GET /calls does.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::MESSAGES_VIEW),
            effect: Effect::Read,
            input: list_input,
            output: || with_def::<CallRecord>(schema_of::<Page<CallRecord>>()),
            call: |call| Box::pin(list_calls(call)),
        },
        Tool {
            name: "create_call_campaign",
            title: "Create a call campaign",
            description: "Calls every number of a contact group (contact_group_id: id or UUID) with a voice message (message or audio_url) or a menu (ivr, with feedback), as POST /call-campaigns does: calls_per_minute (1 to 600, default 60), calling_hours {start, end, utc_offset} (default 08:00 to 20:00 at +03:00), max_attempts (1 to 3, default 2) for busy or unanswered numbers, tried again after retry_after_minutes (default 30). Each number is called once per attempt and each call billed per started minute; a prepaid wallet too low pauses the campaign until it can pay.",
            server: SERVER,
            elevation: Some(Elevation::Spend),
            permission: Some(Permission::SEND),
            effect: Effect::Create,
            input: schema_of::<CallCampaignBody>,
            output: schema_of::<CallCampaign>,
            call: |call| Box::pin(create_call_campaign(call)),
        },
        Tool {
            name: "get_call_campaign",
            title: "Get a call campaign",
            description: "One call campaign by its uid (ccmp_…) or numeric id, as GET /call-campaigns/{id} does: status (scheduled, running, paused, completed, cancelled, failed), status_reason, total_targets, completed_targets and failed_targets.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::MESSAGES_VIEW),
            effect: Effect::Read,
            input: || object(&[("call_campaign", uid_or_id("The campaign's uid (ccmp_…) or numeric id."), true)]),
            output: schema_of::<CallCampaign>,
            call: |call| Box::pin(get_call_campaign(call)),
        },
        Tool {
            name: "list_call_campaigns",
            title: "List call campaigns",
            description: "The account's call campaigns, newest first (20 a page), as GET /call-campaigns does.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::MESSAGES_VIEW),
            effect: Effect::Read,
            input: || query_input(&[], params_of::<PageQuery>()),
            output: || with_def::<CallCampaign>(schema_of::<Page<CallCampaign>>()),
            call: |call| Box::pin(list_call_campaigns(call)),
        },
        Tool {
            name: "change_call_campaign",
            title: "Pause, resume or cancel a call campaign",
            description: "action pause (a scheduled or running campaign), resume (a paused one) or cancel (any not ended: numbers not yet called are dropped, live calls finish), as POST /call-campaigns/{id}/{action} does; any other move is a conflict naming the status.",
            server: SERVER,
            elevation: Some(Elevation::Spend),
            permission: Some(Permission::SEND),
            effect: Effect::Update,
            input: || {
                let action = serde_json::json!({"type": "string", "enum": Action::NAMES});
                object(&[
                    ("call_campaign", uid_or_id("The campaign's uid (ccmp_…) or numeric id."), true),
                    ("action", action, true),
                ])
            },
            output: schema_of::<CallCampaign>,
            call: |call| Box::pin(change_call_campaign(call)),
        },
    ]
}

async fn create_call_campaign(mut call: Call) -> Result<Value, Error> {
    let body: CallCampaignBody = call.body()?;
    answer(call.domains.messaging.create_call_campaign(&call.caller, body).await?)
}

async fn get_call_campaign(mut call: Call) -> Result<Value, Error> {
    let id: CallCampaignRef = parse_id(&call.take_path("call_campaign")?, "Call campaign")?;
    answer(call.domains.messaging.call_campaign(&call.caller, &id).await?)
}

async fn list_call_campaigns(call: Call) -> Result<Value, Error> {
    let page: PageQuery = call.query(&query_input(&[], params_of::<PageQuery>()))?;
    let page = PageRequest::parse(&page, messaging::messages::PER_PAGE)?;
    answer(call.domains.messaging.call_campaigns(&call.caller, page).await?)
}

async fn change_call_campaign(mut call: Call) -> Result<Value, Error> {
    let id: CallCampaignRef = parse_id(&call.take_path("call_campaign")?, "Call campaign")?;
    let action = Action::parse(&call.take_path("action")?)
        .ok_or_else(|| Error::field("action", "The action is pause, resume or cancel."))?;
    answer(call.domains.messaging.call_campaign_action(&call.caller, &id, action).await?)
}

fn list_input() -> Value {
    let mut params = params_of::<PageQuery>();
    params.extend(params_of::<CallFilter>());
    query_input(&[], params)
}

async fn send_voice_otp(mut call: Call) -> Result<Value, Error> {
    let body: OtpBody = call.body()?;
    answer(call.domains.messaging.voice_otp(&call.caller, body).await?)
}

async fn send_voice_message(mut call: Call) -> Result<Value, Error> {
    let body: VoiceMessageBody = call.body()?;
    answer(call.domains.messaging.voice_messages(&call.caller, body).await?)
}

async fn place_call(mut call: Call) -> Result<Value, Error> {
    let body: CallBody = call.body()?;
    answer(call.domains.messaging.place_call(&call.caller, body).await?)
}

/// `POST /calls`'s body with `keep` (`connect` or `ivr`) required and the other left out: the
/// input of the `routing` and `ivr` servers' call tools.
pub(crate) fn call_input(keep: &str) -> Value {
    let mut schema = schema_of::<CallBody>();
    let other = if keep == "ivr" { "connect" } else { "ivr" };
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        properties.remove(other);
    }
    let required = schema.as_object_mut().map(|o| o.entry("required").or_insert_with(|| serde_json::json!([])));
    if let Some(Value::Array(required)) = required {
        required.push(Value::from(keep));
    }
    schema
}

/// Places a call of [`call_input`]`(keep)`: the other member is refused by name.
pub(crate) async fn place_call_with(mut call: Call, keep: &str) -> Result<Value, Error> {
    let body: CallBody = call.body()?;
    let other = if keep == "ivr" { body.connect.is_some() } else { body.ivr.is_some() };
    if other {
        let member = if keep == "ivr" { "connect" } else { "ivr" };
        return Err(Error::field(member, format!("This tool takes {keep}; place_call (calls) takes either.")));
    }
    answer(call.domains.messaging.place_call(&call.caller, body).await?)
}

async fn get_call(mut call: Call) -> Result<Value, Error> {
    let id: CallRef = parse_id(&call.take_path("call")?, "Call")?;
    answer(call.domains.messaging.call(&call.caller, &id).await?)
}

async fn list_calls(call: Call) -> Result<Value, Error> {
    let members = list_input();
    let page: PageQuery = call.query(&members)?;
    let filter: CallFilter = call.query(&members)?;
    let page = PageRequest::parse(&page, messaging::messages::PER_PAGE)?;
    answer(call.domains.messaging.calls(&call.caller, &filter, page).await?)
}
