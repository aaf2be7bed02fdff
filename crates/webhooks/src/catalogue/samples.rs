//! The built-in samples. One shop, one customer and one agent throughout, so a reader can
//! follow an order from basket to payment: Amina Juma (+255712345678) buys coffee from the shop
//! "Duka Letu" (catalogue 7) in a chat (conversation 5531); prices in TZS minor units
//! (hundredths). Domains that exist replace theirs through `Catalogue::with_samples`.

use serde_json::{Value, json};

const CUSTOMER_PHONE: &str = "+255712345678";
const CUSTOMER_NAME: &str = "Amina Juma";
const BUSINESS_CHAT_NUMBER: &str = "+255754000111";
const SMS_SENDER: &str = "DUKALETU";
const CONVERSATION_ID: i64 = 5531;
const CATALOGUE_ID: i64 = 7;
const ORDER_ID: i64 = 1042;

/// `base` with `changes`' fields set (new ones appended, existing ones replaced in place).
fn merged(base: Value, changes: Value) -> Value {
    match (base, changes) {
        (Value::Object(mut base), Value::Object(changes)) => {
            base.extend(changes);
            Value::Object(base)
        }
        (base, _) => base,
    }
}

pub(super) fn builtin() -> Vec<(&'static str, Value)> {
    [
        orders(),
        catalogue(),
        messages(),
        campaigns(),
        chat_groups(),
        templates(),
        forms(),
        flows(),
        leads(),
        voice(),
        calls(),
        call_campaigns(),
        webhooks(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn agent() -> Value {
    json!({ "id": 31, "name": "Neema Mushi" })
}

fn product() -> Value {
    json!({ "id": 2201, "sku": "DUKA-00012", "name": "Kahawa ya Kilimanjaro 500g" })
}

/// The Order (contract: Order), `reserved` being the units held for the line.
fn order(status: &str, reserved: [i64; 2]) -> Value {
    json!({
        "id": ORDER_ID,
        "catalogue_id": CATALOGUE_ID,
        "platform": "chat",
        "status": status,
        "needs_attention": false,
        "stock_policy": "svc",
        "customer_handle": "255712345678",
        "customer_name": CUSTOMER_NAME,
        "lines": [
            {
                "sku": "DUKA-00012",
                "name": "Kahawa ya Kilimanjaro 500g",
                "quantity": 2,
                "unit_price_minor": 1_800_000,
                "line_total_minor": 3_600_000,
                "currency": "TZS",
                "reserved": reserved[0],
                "stock_short": false,
                "unresolved": false
            },
            {
                "sku": "DUKA-00031",
                "name": "Chai ya Tangawizi 250g",
                "quantity": 1,
                "unit_price_minor": 650_000,
                "line_total_minor": 650_000,
                "currency": "TZS",
                "reserved": reserved[1],
                "stock_short": false,
                "unresolved": false
            }
        ],
        "total_minor": 4_250_000,
        "currency": "TZS",
        "conversation_id": CONVERSATION_ID,
        "priced_at": "2026-11-26T09:28:41Z"
    })
}

/// The order events' payload: the Order, then the deprecated flat fields kept for one release
/// (the older shape, with major-unit amounts and the provider's item shape).
fn order_event(status: &str, reserved: [i64; 2], previous_status: Option<&str>) -> Value {
    let mut payload = json!({ "order": order(status, reserved) });
    if let Some(previous) = previous_status {
        payload = merged(payload, json!({ "previous_status": previous }));
    }
    merged(
        payload,
        json!({
            "order_id": ORDER_ID,
            "customer_chat_id": "255712345678",
            "product_items": [
                { "product_retailer_id": "DUKA-00012", "quantity": 2, "item_price": 18000, "currency": "TZS" },
                { "product_retailer_id": "DUKA-00031", "quantity": 1, "item_price": 6500, "currency": "TZS" }
            ],
            "total_amount": 42500,
            "total_currency": "TZS"
        }),
    )
}

/// The Basket (contract: Basket), with its identifiers and currency.
fn cart(status: &str, order_id: Option<i64>) -> Value {
    json!({
        "id": 884,
        "code": "K7QX2",
        "status": status,
        "items": [
            {
                "sku": "DUKA-00012",
                "name": "Kahawa ya Kilimanjaro 500g",
                "variant": "Ground",
                "options": [{ "name": "Gift wrap", "price_minor": 0 }],
                "note": "Please wrap one as a gift",
                "quantity": 2,
                "unit_price_minor": 1_800_000,
                "line_total_minor": 3_600_000
            },
            {
                "sku": "DUKA-00031",
                "name": "Chai ya Tangawizi 250g",
                "variant": null,
                "options": [],
                "note": null,
                "quantity": 1,
                "unit_price_minor": 650_000,
                "line_total_minor": 650_000
            }
        ],
        "subtotal_minor": 4_250_000,
        "currency": "TZS",
        "note": "Deliver after 5 pm",
        "conversation_id": CONVERSATION_ID,
        "order_id": order_id,
        "created_at": "2026-11-26T08:51:12Z",
        "updated_at": "2026-11-26T09:28:41Z"
    })
}

fn orders() -> Vec<(&'static str, Value)> {
    vec![
        ("order.received", order_event("pending", [2, 1], None)),
        ("cart.submitted", json!({ "cart": cart("ordered", Some(ORDER_ID)), "order_id": ORDER_ID })),
        ("cart.abandoned", json!({ "cart": cart("abandoned", None) })),
        ("order.status_changed", order_event("confirmed", [2, 1], Some("pending"))),
        // the hold is released on cancellation
        ("order.cancelled", order_event("cancelled", [0, 0], Some("pending"))),
        (
            "order.paid",
            json!({
                "order_id": ORDER_ID,
                "payment_id": "6f1c2d3e-8a4b-4c5d-9e6f-7a8b9c0d1e2f",
                "method": "mobile_money",
                "amount_minor": 4_250_000,
                "currency": "TZS",
                "payer_msisdn": "255712345678",
                "paid_at": "2026-11-26T09:29:55Z",
                "conversation_id": CONVERSATION_ID
            }),
        ),
    ]
}

fn catalogue() -> Vec<(&'static str, Value)> {
    vec![
        (
            "sync.completed",
            json!({
                "catalogue_id": CATALOGUE_ID,
                "sync": {
                    "id": 311,
                    "status": "completed",
                    "received": 120,
                    "created": 8,
                    "updated": 109,
                    "rejected": 3,
                    "retired": 0,
                    "platforms": {
                        "chat": { "synced": 115, "blocked": 2 },
                        "storefront": { "synced": 117, "blocked": 0 }
                    },
                    "problems_truncated": false,
                    "replayed": false
                }
            }),
        ),
        (
            "stock.low",
            json!({ "catalogue_id": CATALOGUE_ID, "product": product(), "available": 4, "low_stock_threshold": 5 }),
        ),
        (
            "product.blocked",
            json!({
                "catalogue_id": CATALOGUE_ID,
                "product": product(),
                "platform": "chat",
                "problem": "The image at image_url could not be downloaded (HTTP 404)."
            }),
        ),
        (
            "product.drifted",
            json!({
                "catalogue_id": CATALOGUE_ID,
                "product": product(),
                "platform": "chat",
                "fields": [
                    { "field": "price", "ours": 1_800_000, "theirs": 1_750_000 },
                    { "field": "name", "ours": "Kahawa ya Kilimanjaro 500g", "theirs": "Kahawa Kilimanjaro 500 g" }
                ]
            }),
        ),
    ]
}

/// The flat message payload, with the fields of the messaging domain's real one.
fn outgoing_sms() -> Value {
    json!({
        "message_id": 90412,
        "uid": "msg_4f9c2a7d1e8b4c06a3f5d2e1b7c9a0f4",
        "direction": "outbound",
        "sender": SMS_SENDER,
        "recipient": CUSTOMER_PHONE,
        "status": "sent",
        "body": "Asante Amina! Order #1042 is confirmed and will be delivered today.",
        "media_url": null,
        "channel_type": "sms",
        "gateway_message_id": "ATXid_6c1f0e2b9d4a4e7f",
        "error_message": null
    })
}

fn incoming_chat() -> Value {
    json!({
        "message_id": 90421,
        "uid": "msg_9a1b2c3d4e5f40718293a4b5c6d7e8f9",
        "direction": "inbound",
        "sender": CUSTOMER_PHONE,
        "recipient": BUSINESS_CHAT_NUMBER,
        "status": "received",
        "body": "Habari, mna kahawa ya kilo moja?",
        "media_url": null,
        "channel_type": "chat",
        "gateway_message_id": "gw.c9f0f895fb98ab9159f51fd0297e236d",
        "error_message": null
    })
}

fn outgoing_chat() -> Value {
    json!({
        "message_id": 90422,
        "uid": "msg_0d1e2f3a4b5c46d7e8f9a0b1c2d3e4f5",
        "direction": "outbound",
        "sender": BUSINESS_CHAT_NUMBER,
        "recipient": CUSTOMER_PHONE,
        "status": "read",
        "body": "Ndiyo, tunayo. Bei ni TZS 36,000.",
        "media_url": null,
        "channel_type": "chat",
        "gateway_message_id": "gw.8f14e45fceea167a5a36dedd4bea2543",
        "error_message": null
    })
}

fn messages() -> Vec<(&'static str, Value)> {
    vec![
        ("message.received", incoming_chat()),
        ("message.sent", outgoing_sms()),
        ("message.delivered", merged(outgoing_sms(), json!({ "status": "delivered" }))),
        ("message.read", outgoing_chat()),
        (
            "message.failed",
            merged(
                outgoing_sms(),
                json!({
                    "message_id": 90413,
                    "uid": "msg_7e6d5c4b3a2940f18e7d6c5b4a392817",
                    "recipient": "+255765432109",
                    "status": "failed",
                    "gateway_message_id": null,
                    "error_message": "The provider refused the message: InvalidPhoneNumber."
                }),
            ),
        ),
        // typed in the business's own chat app: recorded as an ordinary sent message
        (
            "message.echoed",
            merged(
                outgoing_chat(),
                json!({
                    "message_id": 90423,
                    "uid": "msg_5b4a3928170f4e6d8c7b6a5948372615",
                    "status": "sent",
                    "body": "Tutakuletea leo jioni.",
                    "gateway_message_id": "gw.45c48cce2e2d7fbdea1afc51c7c6ad26"
                }),
            ),
        ),
        ("message.updated", merged(incoming_chat(), json!({ "body": "Habari, mna kahawa ya kilo moja na nusu?" }))),
    ]
}

/// The Campaign as the messaging domain serializes it (the contract's fields plus
/// `status_reason` and `completed_at`).
fn campaign() -> Value {
    json!({
        "id": 318,
        "uid": "cmp_2b7e151628ae4d2a9f3c0e1d5a6b7c8d",
        "name": "Wateja wa Dar",
        "status": "completed",
        "status_reason": null,
        "channel_type": "sms",
        "tenant_channel_id": 3,
        "channel_code": "at-main",
        "message": "Habari {{name}}! 20% off all coffee today only. Reply STOP to opt out.",
        "sender": SMS_SENDER,
        "scheduled_at": "2026-11-26T06:00:00Z",
        "total_recipients": 1250,
        "sent_count": 1238,
        "failed_count": 12,
        "contact_group": { "id": 21, "uid": "3f2a9c4e-6b1d-4e8f-a7c2-5d9e0b1f3a64", "name": "Wateja wa Dar" },
        "created_at": "2026-11-25T18:12:09Z",
        "updated_at": "2026-11-26T06:04:51Z",
        "completed_at": "2026-11-26T06:04:51Z"
    })
}

fn campaigns() -> Vec<(&'static str, Value)> {
    let no_route = "No usable SMS route: the account has no active SMS channel.";
    let cancelled = merged(
        campaign(),
        json!({
            "status": "cancelled",
            "status_reason": no_route,
            "tenant_channel_id": null,
            "channel_code": null,
            "sent_count": 0,
            "failed_count": 0,
            "updated_at": "2026-11-26T06:00:02Z",
            "completed_at": null
        }),
    );
    vec![
        ("campaign.completed", json!({ "campaign": campaign(), "reason": null })),
        ("campaign.failed", json!({ "campaign": cancelled, "reason": no_route })),
    ]
}

/// A group summary; fetch the group by `id` for its current state. `participants_count`
/// includes the business, as the contract's limit of eight does.
fn chat_group(changes: Value) -> Value {
    let group = json!({
        "id": 64,
        "subject": "Duka Letu wholesale buyers",
        "description": "Weekly prices and delivery days for wholesale customers.",
        "status": "active",
        "participants_count": 5,
        "invite_link": "https://chat.example.com/invite/Kd81XbQ2mPz7",
        "created_at": "2026-11-20T07:15:00Z"
    });
    json!({ "group": merged(group, changes) })
}

fn participant_event(participants_count: i64, name: Option<&str>) -> Value {
    merged(
        chat_group(json!({ "participants_count": participants_count })),
        json!({ "participant": { "phone": CUSTOMER_PHONE, "name": name } }),
    )
}

fn join_request_event(participants_count: i64) -> Value {
    merged(
        chat_group(json!({ "participants_count": participants_count })),
        json!({ "request": { "id": "jr.3b1f7c2a9e", "phone": CUSTOMER_PHONE } }),
    )
}

fn chat_groups() -> Vec<(&'static str, Value)> {
    vec![
        ("group.created", chat_group(json!({ "participants_count": 1, "created_at": "2026-11-26T09:29:40Z" }))),
        ("group.participant_joined", participant_event(6, Some(CUSTOMER_NAME))),
        ("group.updated", chat_group(json!({ "subject": "Duka Letu wholesale (Dar)" }))),
        ("group.deleted", chat_group(json!({ "status": "deleted" }))),
        ("group.suspended", chat_group(json!({ "status": "suspended" }))),
        ("group.participant_left", participant_event(4, Some(CUSTOMER_NAME))),
        ("group.participant_removed", participant_event(4, Some(CUSTOMER_NAME))),
        // an invitee has no name until they join
        ("group.participant_invited", participant_event(5, None)),
        ("group.join_request_received", join_request_event(5)),
        ("group.join_request_approved", join_request_event(6)),
        ("group.join_request_rejected", join_request_event(5)),
        (
            "group.invite_link_reset",
            chat_group(json!({ "invite_link": "https://chat.example.com/invite/Rt5vN0aLq3Ws" })),
        ),
    ]
}

fn templates() -> Vec<(&'static str, Value)> {
    vec![(
        "template.status_changed",
        json!({
            "template_id": 58,
            "name": "order_confirmation",
            "language": "sw",
            "category": "utility",
            "chat_business_account_id": "104857600123456",
            "chat_template_id": "1234567890123456",
            "previous_status": "in_review",
            "chat_status": "approved",
            "rejection_reason": null
        }),
    )]
}

fn form() -> Value {
    json!({ "id": 12, "name": "Delivery booking" })
}

fn forms() -> Vec<(&'static str, Value)> {
    vec![
        (
            "form.submitted",
            json!({
                "form": form(),
                "version": 3,
                "source": "flow",
                "conversation_id": CONVERSATION_ID,
                "customer": CUSTOMER_PHONE,
                "answers": {
                    "full_name": CUSTOMER_NAME,
                    "branch": "kariakoo",
                    "extras": ["gift_wrap", "same_day"],
                    "people": 4,
                    "delivery_date": "2026-12-03",
                    "agree_terms": true,
                    "receipt": ["risiti-1042.pdf"]
                },
                // what the reply held that the version's rules refused (kept beside the answers)
                "issues": [],
                "record": { "id": "a41f6c9e-2d3b-4f8a-9b7c-1e0d5f6a7b8c", "status": "created", "error": null }
            }),
        ),
        (
            "form.status_changed",
            json!({
                "form": merged(form(), json!({ "status": "published" })),
                "version": 3,
                "previous_status": "PUBLISHED",
                "status": "THROTTLED"
            }),
        ),
    ]
}

fn flow_session(ended_at: Option<&str>, outcome: Option<&str>) -> Value {
    json!({
        "session": {
            "id": "c2d4e6f8-1a3b-4c5d-8e7f-9a0b1c2d3e4f",
            "flow_id": 4,
            "flow_name": "Shop menu",
            "conversation_id": CONVERSATION_ID,
            "contact_phone": CUSTOMER_PHONE,
            "started_at": "2026-11-26T08:50:30Z",
            "ended_at": ended_at,
            "outcome": outcome
        }
    })
}

fn flows() -> Vec<(&'static str, Value)> {
    vec![
        ("flow.session.started", flow_session(None, None)),
        ("flow.session.ended", flow_session(Some("2026-11-26T09:28:45Z"), Some("completed"))),
    ]
}

const LEAD_ID: &str = "5d6e7f80-91a2-4b3c-8d4e-5f6a7b8c9d0e";

fn wholesale_label() -> Value {
    json!({ "id": 14, "name": "Wholesale", "color": "#2E7D32" })
}

/// The whole Lead (contract: Lead), as of the event.
fn lead(changes: Value) -> Value {
    let lead = json!({
        "id": LEAD_ID,
        "name": CUSTOMER_NAME,
        "title": "Owner",
        "company": "Amina Café",
        "phone": CUSTOMER_PHONE,
        "email": "amina@aminacafe.co.tz",
        "location": "Kariakoo, Dar es Salaam",
        "stage": "qualified",
        "stage_label": "Qualified",
        "closed": false,
        "archived": false,
        "closed_at": null,
        "archived_at": null,
        "lost_reason": null,
        "labels": [wholesale_label()],
        "interest": "Monthly supply of ground coffee for a café",
        "estimated_value": 400_000,
        "currency": "TZS",
        "score": 72,
        "score_reason": "Asked for wholesale prices and gave a monthly volume.",
        "summary": "Café owner in Kariakoo looking for 20 kg of coffee a month.",
        "source_channel": "chat",
        "source_detail": "Click-to-chat ad: November coffee",
        "assigned_to": agent(),
        "next_action": "Send the wholesale price list",
        "next_action_at": "2026-11-27T07:00:00Z",
        "overdue": false,
        "created_by": { "kind": "ai", "id": null },
        "last_activity_at": "2026-11-26T09:29:10Z",
        "created_at": "2026-11-26T08:52:03Z",
        "updated_at": "2026-11-26T09:29:10Z",
        "sources": [{ "kind": "conversation", "id": CONVERSATION_ID, "channel": "chat", "at": "2026-11-26T08:52:03Z" }],
        "custom_fields": { "monthly_kg": 20 },
        "url": format!("https://app.example.com/leads/{LEAD_ID}")
    });
    merged(lead, changes)
}

/// A lead event: the lead, `changes` (only where the contract has it), why, who and through what.
fn lead_event(lead: Value, changes: Option<Value>, reason: Option<&str>, extra: Value) -> Value {
    let mut payload = json!({ "lead": lead });
    if let Some(changes) = changes {
        payload = merged(payload, json!({ "changes": changes }));
    }
    let payload = merged(
        payload,
        json!({
            "reason": reason,
            "actor": { "kind": "user", "id": 31, "label": "Neema Mushi" },
            "source": { "kind": "dashboard", "id": null, "channel": null }
        }),
    );
    merged(payload, extra)
}

fn leads() -> Vec<(&'static str, Value)> {
    let created = lead(json!({
        "stage": "new",
        "stage_label": "New",
        "labels": [],
        "estimated_value": 250_000,
        "score": 40,
        "assigned_to": null,
        "next_action": null,
        "next_action_at": null,
        "last_activity_at": "2026-11-26T08:52:03Z",
        "updated_at": "2026-11-26T08:52:03Z"
    }));
    let created = merged(
        json!({ "lead": created }),
        json!({
            "reason": null,
            "actor": { "kind": "ai", "id": null, "label": "Chat assistant" },
            "source": { "kind": "conversation", "id": CONVERSATION_ID, "channel": "chat" }
        }),
    );
    vec![
        ("lead.created", created),
        (
            "lead.updated",
            lead_event(
                lead(json!({})),
                Some(json!({
                    "email": { "from": null, "to": "amina@aminacafe.co.tz" },
                    "estimated_value": { "from": 250_000, "to": 400_000 }
                })),
                None,
                json!({}),
            ),
        ),
        (
            "lead.stage_changed",
            lead_event(
                lead(json!({})),
                Some(json!({ "stage": { "from": "contacted", "to": "qualified" } })),
                Some("Confirmed a monthly budget."),
                json!({}),
            ),
        ),
        ("lead.label_added", lead_event(lead(json!({})), None, None, json!({ "label": wholesale_label() }))),
        (
            "lead.label_removed",
            lead_event(lead(json!({ "labels": [] })), None, None, json!({ "label": wholesale_label() })),
        ),
        (
            "lead.note_added",
            lead_event(
                lead(json!({})),
                None,
                None,
                json!({
                    "note": {
                        "id": "e1f2a3b4-c5d6-4e7f-8a9b-0c1d2e3f4a5b",
                        "body": "Prefers delivery on Mondays before 9 am.",
                        "created_at": "2026-11-26T09:29:10Z"
                    }
                }),
            ),
        ),
        (
            "lead.assigned",
            lead_event(
                lead(json!({})),
                Some(json!({ "assigned_to": { "from": null, "to": agent() } })),
                None,
                json!({}),
            ),
        ),
        (
            "lead.merged",
            lead_event(lead(json!({})), None, None, json!({ "merged_id": "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a" })),
        ),
        ("lead.deleted", lead_event(lead(json!({})), None, None, json!({}))),
    ]
}

/// A voice call (one-time code or recorded message) and why it failed, if it did.
fn voice_call(kind: &str, outcome: &str) -> Value {
    let (status, duration, attempts, answered_at, ended_at, reason) = match outcome {
        "answered" => ("answered", None, 1, Some("2026-11-26T09:29:30Z"), None, None),
        "completed" => ("completed", Some(21), 1, Some("2026-11-26T09:29:30Z"), Some("2026-11-26T09:29:51Z"), None),
        _ => ("failed", None, 3, None, Some("2026-11-26T09:29:58Z"), Some("No answer after 3 attempts.")),
    };
    json!({
        "call": {
            "id": "7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d",
            "kind": kind,
            "to": CUSTOMER_PHONE,
            "from": "+255222110000",
            "status": status,
            "duration_seconds": duration,
            "attempts": attempts,
            "answered_at": answered_at,
            "ended_at": ended_at
        },
        "reason": reason
    })
}

fn voice() -> Vec<(&'static str, Value)> {
    vec![
        ("voice.otp.answered", voice_call("otp", "answered")),
        ("voice.otp.completed", voice_call("otp", "completed")),
        ("voice.otp.failed", voice_call("otp", "failed")),
        ("voice.message.answered", voice_call("message", "answered")),
        ("voice.message.completed", voice_call("message", "completed")),
        ("voice.message.failed", voice_call("message", "failed")),
    ]
}

fn call() -> Value {
    json!({
        "call": {
            "id": "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f",
            "direction": "inbound",
            "from": CUSTOMER_PHONE,
            "to": "+255222110000",
            "status": "completed",
            "duration_seconds": 184,
            "started_at": "2026-11-26T09:25:01Z",
            "ended_at": "2026-11-26T09:28:05Z",
            "agent": agent()
        }
    })
}

fn calls() -> Vec<(&'static str, Value)> {
    vec![
        ("call.completed", call()),
        (
            "call.recording_ready",
            merged(
                call(),
                json!({
                    "recording": {
                        "url": "https://files.example.com/recordings/3c4d5e6f.mp3?signature=9b2f1c7e4a",
                        "duration_seconds": 184,
                        "expires_at": "2026-12-03T09:30:00Z"
                    }
                }),
            ),
        ),
        (
            "call.feedback_ready",
            merged(
                call(),
                json!({
                    "feedback": {
                        "score": 82,
                        "summary": "The customer asked about wholesale prices; the agent answered and promised a price list."
                    }
                }),
            ),
        ),
    ]
}

/// A call campaign's counts as of the event, and why it paused or failed.
fn call_campaign(status: &str, completed: i64, failed: i64, reason: Option<&str>) -> Value {
    json!({
        "call_campaign": {
            "id": "b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d5e",
            "name": "December delivery reminders",
            "status": status,
            "targets_total": 200,
            "targets_completed": completed,
            "targets_failed": failed
        },
        "reason": reason
    })
}

fn call_campaigns() -> Vec<(&'static str, Value)> {
    vec![
        ("call_campaign.started", call_campaign("running", 0, 0, None)),
        ("call_campaign.paused", call_campaign("paused", 87, 6, Some("Paused from the dashboard."))),
        ("call_campaign.resumed", call_campaign("running", 87, 6, None)),
        ("call_campaign.completed", call_campaign("completed", 188, 12, None)),
        (
            "call_campaign.failed",
            call_campaign("failed", 87, 6, Some("The prepaid balance cannot pay for more calls.")),
        ),
        (
            "call_campaign.target_completed",
            merged(
                call_campaign("running", 88, 6, None),
                json!({
                    "target": {
                        "phone": CUSTOMER_PHONE,
                        "outcome": "answered",
                        "call_id": "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"
                    }
                }),
            ),
        ),
    ]
}

fn webhooks() -> Vec<(&'static str, Value)> {
    vec![
        (
            "webhook.paused",
            json!({
                "webhook": {
                    "id": 9,
                    "url": "https://erp.aminacafe.co.tz/hooks/orders",
                    "events": ["order.received", "order.status_changed", "order.paid"],
                    "status": "paused",
                    "paused_at": "2026-11-26T09:29:30Z",
                    "consecutive_failures": 50,
                    "reason": "50 consecutive failed deliveries; the last one was answered with HTTP 503."
                }
            }),
        ),
        ("webhook.test", json!({ "message": "This is a test delivery from your webhook endpoint." })),
    ]
}
