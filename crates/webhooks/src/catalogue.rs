//! The event catalogue (contract: Events; Event catalogue, Payload shapes): every event a
//! receiver can subscribe to, in the contract's groups and order, with each group's retry policy
//! and a sample payload. `GET /webhooks/events` and test sends are built from it. The built-in
//! samples stand in for domains that do not exist yet; a domain that does replaces them through
//! [`Catalogue::with_samples`] with payloads made by its real event code, so what the listing
//! shows cannot drift from what is delivered (the same fields; their order carries no meaning,
//! and the outbox's jsonb keeps its own). Choices where the contract says "not shown" are
//! listed in `docs/api.md` ("Event catalogue and payloads").

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value, json};
use time::macros::datetime;
use time::{OffsetDateTime, UtcOffset};
use uuid::Uuid;

/// How deliveries of an event are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Retry {
    /// 2xx is success; 5xx, 408, 425, 429 or a timeout is tried again after 1 minute,
    /// 5 minutes, 30 minutes, 2 hours and 6 hours, then the delivery is failed.
    Schedule,
    /// A single attempt, never retried (the contract's message callbacks).
    Once,
}

/// One event of the catalogue.
#[derive(Debug, PartialEq, Eq)]
pub struct EventType {
    pub name: &'static str,
    pub description: &'static str,
}

/// A group of the catalogue; every event of a group is retried the same way.
#[derive(Debug, PartialEq, Eq)]
pub struct Group {
    pub key: &'static str,
    pub name: &'static str,
    pub retry: Retry,
    pub events: &'static [EventType],
}

const fn event(name: &'static str, description: &'static str) -> EventType {
    EventType { name, description }
}

/// The catalogue in the contract's order. Only message callbacks are a single attempt (the
/// contract says so); every other event is a business state change a receiver must not miss,
/// so it gets the schedule the contract gives lead events, as Stripe and Shopify retry every
/// event.
pub const GROUPS: &[Group] = &[
    Group {
        key: "orders",
        name: "Orders",
        retry: Retry::Schedule,
        events: &[
            event("order.received", "An order was created, from any platform."),
            event("cart.submitted", "A basket was submitted and became an order."),
            event("cart.abandoned", "A basket opened from a chat was left with items in it."),
            event("order.status_changed", "An order moved to another status."),
            event("order.cancelled", "An order was cancelled; sent beside order.status_changed."),
            event("order.paid", "The money for an order has settled."),
        ],
    },
    Group {
        key: "catalogue",
        name: "Catalogue",
        retry: Retry::Schedule,
        events: &[
            event("sync.completed", "A product sync run (batch, feed pull or spreadsheet import) finished."),
            event("stock.low", "A product's available stock reached the shop's low-stock threshold."),
            event("product.blocked", "A platform refused to show a product."),
            event("product.drifted", "A platform's copy of a product differs from ours."),
        ],
    },
    Group {
        key: "messages",
        name: "Messages",
        retry: Retry::Once,
        events: &[
            event("message.received", "A customer sent a message to the account."),
            event("message.sent", "The provider accepted an outgoing message."),
            event("message.delivered", "An outgoing message reached the recipient's device."),
            event("message.read", "The recipient read an outgoing chat message."),
            event("message.failed", "An outgoing message could not be sent or delivered."),
            event("message.echoed", "A message sent from the business's own chat app was recorded."),
            event("message.updated", "A message's content changed, e.g. the customer edited it."),
        ],
    },
    Group {
        key: "campaigns",
        name: "Campaigns",
        retry: Retry::Schedule,
        events: &[
            event("campaign.completed", "Every message of a campaign was handed to the provider."),
            event("campaign.failed", "A campaign was cancelled because it could not be sent."),
        ],
    },
    Group {
        key: "chat_groups",
        name: "Chat groups",
        retry: Retry::Schedule,
        events: &[
            event("group.created", "A chat group was confirmed by the provider and is active."),
            event("group.participant_joined", "Someone joined a chat group."),
            event("group.updated", "A chat group's subject, description or status changed."),
            event("group.deleted", "A chat group was deleted."),
            event("group.suspended", "The provider suspended a chat group."),
            event("group.participant_left", "A participant left a chat group."),
            event("group.participant_removed", "A participant was removed from a chat group."),
            event("group.participant_invited", "Someone was invited to a chat group."),
            event("group.join_request_received", "Someone asked to join a chat group that needs approval."),
            event("group.join_request_approved", "A request to join a chat group was approved."),
            event("group.join_request_rejected", "A request to join a chat group was rejected."),
            event("group.invite_link_reset", "A chat group's invite link was replaced."),
        ],
    },
    Group {
        key: "templates",
        name: "Templates",
        retry: Retry::Schedule,
        events: &[event("template.status_changed", "A message template's review status changed.")],
    },
    Group {
        key: "forms",
        name: "Forms",
        retry: Retry::Schedule,
        events: &[
            event("form.submitted", "A customer submitted a form."),
            event("form.status_changed", "The provider changed the status of a published form version."),
        ],
    },
    Group {
        key: "flows",
        name: "Flows",
        retry: Retry::Schedule,
        events: &[
            event("flow.session.started", "A flow session started for a customer."),
            event("flow.session.ended", "A flow session ended."),
        ],
    },
    Group {
        key: "leads",
        name: "Leads",
        retry: Retry::Schedule,
        events: &[
            event("lead.created", "A lead was created."),
            event("lead.updated", "A lead's fields changed (a burst within about five seconds is one event)."),
            event("lead.stage_changed", "A lead moved to another stage."),
            event("lead.label_added", "A label was put on a lead."),
            event("lead.label_removed", "A label was taken off a lead."),
            event("lead.note_added", "A note was added to a lead."),
            event("lead.assigned", "A lead was assigned to someone or returned to the pool."),
            event("lead.merged", "Another lead was merged into this one."),
            event("lead.deleted", "A lead was deleted."),
        ],
    },
    Group {
        key: "voice",
        name: "Voice",
        retry: Retry::Schedule,
        events: &[
            event("voice.otp.answered", "A one-time-code call was answered."),
            event("voice.otp.completed", "A one-time-code call was played to the end."),
            event("voice.otp.failed", "A one-time-code call could not be completed."),
            event("voice.message.answered", "A voice message call was answered."),
            event("voice.message.completed", "A voice message was played to the end."),
            event("voice.message.failed", "A voice message call could not be completed."),
        ],
    },
    Group {
        key: "calls",
        name: "Calls",
        retry: Retry::Schedule,
        events: &[
            event("call.completed", "A call ended, whatever its outcome."),
            event("call.recording_ready", "A call's recording can be downloaded."),
            event("call.feedback_ready", "A call's automatic review is ready."),
        ],
    },
    Group {
        key: "call_campaigns",
        name: "Call campaigns",
        retry: Retry::Schedule,
        events: &[
            event("call_campaign.started", "A call campaign started calling."),
            event("call_campaign.paused", "A call campaign was paused."),
            event("call_campaign.resumed", "A paused call campaign started calling again."),
            event("call_campaign.completed", "A call campaign called every target."),
            event("call_campaign.failed", "A call campaign stopped before calling every target."),
            event("call_campaign.target_completed", "A call campaign finished with one target."),
        ],
    },
    Group {
        key: "webhooks",
        name: "Webhooks",
        retry: Retry::Schedule,
        events: &[
            event("webhook.paused", "Another endpoint of the account was paused after fifty consecutive failures."),
            event("webhook.test", "A test delivery asked for from the API or the dashboard."),
        ],
    },
];

/// The group and entry of an event name.
pub fn find(name: &str) -> Option<(&'static Group, &'static EventType)> {
    GROUPS.iter().find_map(|group| group.events.iter().find(|event| event.name == name).map(|event| (group, event)))
}

/// How an event is retried; a name outside the catalogue gets the schedule, the safe side.
pub fn retry_of(name: &str) -> Retry {
    find(name).map_or(Retry::Schedule, |(group, _)| group.retry)
}

/// The envelope's own fields: a payload never sets them (`event_id` is the receivers' dedupe
/// key, and only a test send may say `test`).
const ENVELOPE_FIELDS: [&str; 4] = ["event", "event_id", "timestamp", "test"];

/// The body as delivered: `event`, `event_id`, `timestamp` (RFC 3339, UTC, whole seconds) first,
/// then the payload's own fields (payload must be a JSON object; anything else goes under
/// `data`), then `test: true` when test.
pub fn envelope(name: &str, event_id: Uuid, timestamp: OffsetDateTime, payload: Value, test: bool) -> Value {
    let mut body = Map::new();
    body.insert("event".into(), name.into());
    body.insert("event_id".into(), event_id.to_string().into());
    body.insert("timestamp".into(), rfc3339_utc_seconds(timestamp).into());
    match payload {
        Value::Object(fields) => {
            body.extend(fields.into_iter().filter(|(key, _)| !ENVELOPE_FIELDS.contains(&key.as_str())));
        }
        other => {
            body.insert("data".into(), other);
        }
    }
    if test {
        body.insert("test".into(), true.into());
    }
    Value::Object(body)
}

/// `2026-11-26T09:30:00Z`: written by hand because it cannot fail (the well-known formatter
/// returns a `Result` for years RFC 3339 cannot hold, which a clock never reaches).
fn rfc3339_utc_seconds(at: OffsetDateTime) -> String {
    let at = at.to_offset(UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

/// The `event_id` of every sample, so listings and snapshots are stable.
pub const SAMPLE_EVENT_ID: Uuid = Uuid::from_u128(0x0b0e_5b6e_4c1a_4f3e_9d2a_7c5e_8f1a_2b3c);
/// The `timestamp` of every sample.
pub const SAMPLE_TIME: OffsetDateTime = datetime!(2026-11-26 09:30:00 UTC);

/// The catalogue with its samples; domains that exist replace the built-in sample with one
/// built by their real payload code.
#[derive(Debug, Clone)]
pub struct Catalogue {
    /// Payloads without envelope fields, one per event of [`GROUPS`].
    payloads: BTreeMap<&'static str, Value>,
}

impl Catalogue {
    /// Built-in samples for every event.
    pub fn standard() -> Self {
        let payloads: BTreeMap<_, _> = builtin().into_iter().collect();
        debug_assert!(GROUPS.iter().flat_map(|g| g.events).all(|e| payloads.contains_key(e.name)));
        Self { payloads }
    }

    /// Replaces the payloads (without envelope fields) of the named events. A name outside the
    /// catalogue is a programming error: it panics in debug builds and is ignored otherwise.
    pub fn with_samples(mut self, samples: impl IntoIterator<Item = (&'static str, Value)>) -> Self {
        for (name, payload) in samples {
            let known = find(name).is_some();
            debug_assert!(known, "{name} is not in the event catalogue");
            debug_assert!(payload.is_object(), "the sample payload of {name} is not a JSON object");
            if known {
                self.payloads.insert(name, payload);
            }
        }
        self
    }

    /// The sample payload of an event, without envelope fields.
    pub fn payload(&self, name: &str) -> Option<Value> {
        self.payloads.get(name).cloned()
    }

    /// The sample as delivered (not marked as a test).
    pub fn sample(&self, name: &str) -> Option<Value> {
        self.payload(name).map(|payload| envelope(name, SAMPLE_EVENT_ID, SAMPLE_TIME, payload, false))
    }

    /// What `GET /webhooks/events` answers: every group and event in catalogue order, each with
    /// its sample as delivered.
    pub fn listing(&self) -> Listing {
        let groups = GROUPS
            .iter()
            .map(|group| GroupListing {
                key: group.key,
                name: group.name,
                retry: group.retry,
                events: group
                    .events
                    .iter()
                    .map(|event| EventListing {
                        name: event.name,
                        description: event.description,
                        // every event has a payload: `standard` holds them all and nothing removes one
                        sample: self.sample(event.name).unwrap_or(Value::Null),
                    })
                    .collect(),
            })
            .collect();
        Listing { groups }
    }
}

/// The event catalogue: every group with its events and a sample delivery of each.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Listing {
    pub groups: Vec<GroupListing>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct GroupListing {
    pub key: &'static str,
    pub name: &'static str,
    pub retry: Retry,
    pub events: Vec<EventListing>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct EventListing {
    pub name: &'static str,
    pub description: &'static str,
    /// The body as delivered: envelope fields first, then the payload.
    #[schema(value_type = Object)]
    pub sample: Value,
}

// ---------------------------------------------------------------------------------------------
// Built-in samples. One shop, one customer and one agent throughout, so a reader can follow an
// order from basket to payment: Amina Juma (+255712345678) buys coffee from the shop "Duka Letu"
// (catalogue 7) in a chat (conversation 5531); prices in TZS minor units (hundredths).

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

fn builtin() -> Vec<(&'static str, Value)> {
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
                "answers": {
                    "full_name": CUSTOMER_NAME,
                    "branch": "kariakoo",
                    "extras": ["gift_wrap", "same_day"],
                    "people": 4,
                    "delivery_date": "2026-12-03",
                    "agree_terms": true,
                    "receipt": ["risiti-1042.pdf"]
                },
                "record": { "id": "a41f6c9e-2d3b-4f8a-9b7c-1e0d5f6a7b8c", "status": "created", "error": null }
            }),
        ),
        (
            "form.status_changed",
            json!({ "form": form(), "version": 3, "previous_status": "PUBLISHED", "status": "THROTTLED" }),
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

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn keys(value: &Value) -> Vec<&str> {
        value.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default()
    }

    #[test]
    fn groups_follow_the_contract() {
        let keys: Vec<_> = GROUPS.iter().map(|g| g.key).collect();
        assert_eq!(
            keys,
            [
                "orders",
                "catalogue",
                "messages",
                "campaigns",
                "chat_groups",
                "templates",
                "forms",
                "flows",
                "leads",
                "voice",
                "calls",
                "call_campaigns",
                "webhooks"
            ]
        );
        let chat_groups = GROUPS.iter().find(|g| g.key == "chat_groups").map(|g| (g.name, g.events.len()));
        // the contract: `group.created`, `group.participant_joined` and ten more
        assert_eq!(chat_groups, Some(("Chat groups", 12)));
    }

    #[test]
    fn every_event_name_is_unique_across_groups() {
        let mut seen = HashSet::new();
        for event in GROUPS.iter().flat_map(|g| g.events) {
            assert!(seen.insert(event.name), "{} is listed twice", event.name);
            assert!(!event.description.is_empty() && event.description.ends_with('.'), "{}", event.name);
        }
        assert_eq!(seen.len(), 62);
    }

    #[test]
    fn find_and_retry_of() {
        let (group, event) = find("lead.merged").expect("a catalogue event");
        assert_eq!((group.key, event.name), ("leads", "lead.merged"));
        assert!(find("lead.exploded").is_none());
        assert_eq!(retry_of("message.delivered"), Retry::Once);
        assert_eq!(retry_of("order.paid"), Retry::Schedule);
        assert_eq!(retry_of("group.invite_link_reset"), Retry::Schedule);
        assert_eq!(retry_of("no.such_event"), Retry::Schedule);
        assert!(GROUPS.iter().all(|g| (g.retry == Retry::Once) == (g.key == "messages")));
    }

    #[test]
    fn the_envelope_comes_first_and_test_last() {
        // 12:30:00.75 in Dar es Salaam: UTC, whole seconds
        let at = datetime!(2026-11-26 12:30:00.75 +03:00);
        let payload =
            json!({ "order_id": 1, "event": "spoofed", "event_id": "spoofed", "amount_minor": 5, "test": false });
        let body = envelope("order.paid", SAMPLE_EVENT_ID, at, payload, true);
        assert_eq!(keys(&body), ["event", "event_id", "timestamp", "order_id", "amount_minor", "test"]);
        assert_eq!(body["event"], "order.paid");
        assert_eq!(body["event_id"], "0b0e5b6e-4c1a-4f3e-9d2a-7c5e8f1a2b3c");
        assert_eq!(body["timestamp"], "2026-11-26T09:30:00Z");
        assert_eq!(body["test"], true);

        let body = envelope("webhook.test", SAMPLE_EVENT_ID, at, json!([1, 2]), false);
        assert_eq!(keys(&body), ["event", "event_id", "timestamp", "data"]);
        assert_eq!(body["data"], json!([1, 2]));
    }

    #[test]
    fn every_event_has_an_object_payload_without_envelope_fields() {
        let catalogue = Catalogue::standard();
        for event in GROUPS.iter().flat_map(|g| g.events) {
            let payload = catalogue.payload(event.name).unwrap_or_else(|| panic!("no sample for {}", event.name));
            let fields = payload.as_object().unwrap_or_else(|| panic!("{} is not an object", event.name));
            for field in ENVELOPE_FIELDS {
                assert!(!fields.contains_key(field), "the payload of {} carries {field}", event.name);
            }
            let sample = catalogue.sample(event.name).expect("a sample");
            assert_eq!(sample["event"], event.name);
            assert_eq!(sample.get("test"), None);
        }
        // nothing outside the catalogue
        assert!(builtin().iter().all(|(name, _)| find(name).is_some()));
        assert!(catalogue.payload("no.such_event").is_none());
    }

    #[test]
    fn samples_keep_the_contracts_promises() {
        let catalogue = Catalogue::standard();
        let payload = |name| catalogue.payload(name).expect("a sample");
        // emission ties: every order.received carries the stock policy
        assert_eq!(payload("order.received")["order"]["stock_policy"], "svc");
        assert_eq!(payload("order.status_changed")["previous_status"], "pending");
        assert_eq!(payload("message.failed")["status"], "failed");
        assert!(payload("message.failed")["error_message"].is_string());
        assert_eq!(payload("message.received")["direction"], "inbound");
        assert!(payload("sync.completed")["sync"].get("problems").is_none());
        for name in ["lead.updated", "lead.stage_changed", "lead.assigned"] {
            assert!(payload(name).get("changes").is_some(), "{name}");
        }
        for name in ["lead.created", "lead.label_added", "lead.note_added", "lead.merged", "lead.deleted"] {
            assert!(payload(name).get("changes").is_none(), "{name}");
        }
    }

    #[test]
    fn with_samples_replaces_the_named_payloads() {
        let real = json!({ "message_id": 7, "status": "sent" });
        let catalogue = Catalogue::standard().with_samples([("message.sent", real.clone())]);
        assert_eq!(catalogue.payload("message.sent"), Some(real));
        assert_eq!(catalogue.payload("message.delivered"), Catalogue::standard().payload("message.delivered"));
        let listed = catalogue.listing().groups.into_iter().flat_map(|g| g.events).find(|e| e.name == "message.sent");
        assert_eq!(listed.map(|e| e.sample["message_id"].clone()), Some(json!(7)));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "not in the event catalogue")]
    fn with_samples_refuses_an_unknown_name() {
        let _ = Catalogue::standard().with_samples([("message.teleported", json!({}))]);
    }

    #[test]
    fn the_listing() {
        insta::assert_json_snapshot!("listing", Catalogue::standard().listing());
    }
}
