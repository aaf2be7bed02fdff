//! Samples of the events messaging emits, built by the same code as the real payloads, for the
//! webhooks catalogue (`GET /webhooks/events`).

use serde_json::Value;
use time::macros::datetime;
use uuid::Uuid;

use crate::Message;
use crate::campaigns::{Campaign, CampaignStatus, GroupSummary};

fn message(status: &str) -> Message {
    let at = datetime!(2026-11-26 09:30 UTC);
    let inbound = status == "received";
    Message {
        id: 48_213,
        uid: "msg_01JDX4W7Q9M2K8ZC3V5T6N1B0A".to_owned(),
        tenant_id: 1,
        direction: if inbound { "inbound" } else { "outbound" }.to_owned(),
        channel_type: "sms".to_owned(),
        tenant_channel_id: Some(3),
        channel_code: Some("africastalking".to_owned()),
        sender: Some(if inbound { "+255712345678" } else { "DUKA" }.to_owned()),
        recipient: if inbound { "15050" } else { "+255712345678" }.to_owned(),
        body: if inbound { "Is my order ready?" } else { "Your order DK-1042 is ready for pickup." }.to_owned(),
        status: status.to_owned(),
        media_url: None,
        media_type: None,
        gateway_message_id: Some("ATXid_4f1c2a9e8b7d6c5a".to_owned()),
        error_message: (status == "failed").then(|| "Rejected by the provider: invalid phone number".to_owned()),
        metadata: None,
        template_params: None,
        segments: 1,
        encoding: "gsm7".to_owned(),
        price_minor: if inbound { 0 } else { 2_000 },
        campaign_id: None,
        scheduled_at: None,
        created_at: at,
        updated_at: at,
        sent_at: (!inbound).then_some(at),
        delivered_at: (status == "delivered").then_some(at),
        conversation_id: None,
        read_at: None,
    }
}

fn campaign(status: CampaignStatus, reason: Option<&str>) -> Value {
    let completed = status == CampaignStatus::Completed;
    let at = datetime!(2026-11-26 09:30 UTC);
    let campaign = Campaign {
        id: 812,
        uid: "cmp_01JDX4Y2H7R4P0QW8E6S3D9F5G".to_owned(),
        name: "November restock".to_owned(),
        status,
        status_reason: reason.map(str::to_owned),
        channel_type: "sms".to_owned(),
        tenant_channel_id: Some(3),
        channel_code: Some("africastalking".to_owned()),
        message: "Hi {{name}}, new stock has arrived at Duka.".to_owned(),
        sender: Some("DUKA".to_owned()),
        scheduled_at: None,
        total_recipients: if completed { 1_250 } else { 0 },
        sent_count: if completed { 1_238 } else { 0 },
        failed_count: if completed { 12 } else { 0 },
        contact_group: Some(GroupSummary {
            id: 44,
            uid: Uuid::from_u128(0x6f1d_2c3b_4a59_4e87_9b6a_5c4d_3e2f_1a0b),
            name: "Dar es Salaam customers".to_owned(),
        }),
        created_at: at,
        updated_at: at,
        completed_at: completed.then_some(at),
    };
    crate::campaigns::event_payload(campaign, reason.map(str::to_owned))
}

fn call(kind: &str, status: &str) -> crate::voice::CallRecord {
    let at = datetime!(2026-11-26 09:30 UTC);
    let answered = status != "busy" && status != "no_answer";
    let seconds = if answered { 48 } else { 0 };
    crate::voice::CallRecord {
        id: 9_214,
        uid: "call_6b0f3c1e9d2a4f7b8c5e1a0d3f6b9c2e".to_owned(),
        tenant_id: 1,
        kind: kind.to_owned(),
        direction: "outbound".to_owned(),
        channel_id: 5,
        caller: Some("+255222110000".to_owned()),
        recipient: "+255712345678".to_owned(),
        status: status.to_owned(),
        error: (status == "failed").then(|| crate::voice::callbacks::HUNG_UP_EARLY.to_owned()),
        plan: Value::Null,
        language: "en".to_owned(),
        position: None,
        attempts: 0,
        digits: (kind == "call").then(|| "2".to_owned()),
        provider_call_id: Some("ATVId_4c1d9e2b7a6f".to_owned()),
        provider_cost: None,
        duration_seconds: seconds,
        billed_minutes: if answered { 1 } else { 0 },
        rate_minor: 5_000,
        price_minor: if answered { 5_000 } else { 0 },
        recording_url: (kind == "call").then(|| "https://recordings.example/ATVId_4c1d9e2b7a6f.mp3".to_owned()),
        feedback_score: (kind == "call").then_some(5),
        metadata: None,
        scheduled_at: None,
        created_at: at,
        updated_at: at,
        answered_at: answered.then_some(at),
        ended_at: (status != "in_progress").then_some(at),
        call_campaign_id: None,
    }
}

/// A call event's payload, as the emitter writes it.
fn call_event(name: &str, call: crate::voice::CallRecord) -> Value {
    call.event_payload(name, call.error.as_deref())
}

/// `(event, payload)` for every event messaging emits.
pub fn samples() -> Vec<(&'static str, Value)> {
    vec![
        ("message.sent", message("sent").event_payload()),
        ("message.delivered", message("delivered").event_payload()),
        ("message.failed", message("failed").event_payload()),
        ("message.received", message("received").event_payload()),
        ("campaign.completed", campaign(CampaignStatus::Completed, None)),
        ("campaign.failed", campaign(CampaignStatus::Cancelled, Some(crate::send::NO_ROUTE))),
        ("voice.otp.answered", call_event("voice.otp.answered", call("otp", "in_progress"))),
        ("voice.otp.completed", call_event("voice.otp.completed", call("otp", "completed"))),
        ("voice.otp.failed", call_event("voice.otp.failed", call("otp", "failed"))),
        ("voice.message.answered", call_event("voice.message.answered", call("message", "in_progress"))),
        ("voice.message.completed", call_event("voice.message.completed", call("message", "completed"))),
        ("voice.message.failed", call_event("voice.message.failed", call("message", "failed"))),
        ("call.completed", call_event("call.completed", call("call", "completed"))),
        ("call.recording_ready", call_event("call.recording_ready", call("call", "in_progress"))),
        ("call.feedback_ready", call_event("call.feedback_ready", call("call", "in_progress"))),
    ]
}
