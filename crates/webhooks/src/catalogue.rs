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
use serde_json::{Map, Value};
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

/// A group's receiver filter: whether an event's payload passes a receiver's stored `filters`.
/// Written by the domain that owns the events (`leads::filters::matches`), so the webhooks crate
/// applies a rule it does not know.
pub type EventFilter = fn(filters: &Value, payload: &Value) -> bool;

/// The catalogue with its samples and filters; domains that exist replace the built-in sample
/// with one built by their real payload code, and give their group's filter.
#[derive(Debug, Clone)]
pub struct Catalogue {
    /// Payloads without envelope fields, one per event of [`GROUPS`].
    payloads: BTreeMap<&'static str, Value>,
    /// By group key; a group without one ignores receivers' filters.
    filters: BTreeMap<&'static str, EventFilter>,
}

impl Catalogue {
    /// Built-in samples for every event.
    pub fn standard() -> Self {
        let payloads: BTreeMap<_, _> = samples::builtin().into_iter().collect();
        debug_assert!(GROUPS.iter().flat_map(|g| g.events).all(|e| payloads.contains_key(e.name)));
        Self { payloads, filters: BTreeMap::new() }
    }

    /// The filter of a group's events (`"leads"`). A group outside the catalogue is a
    /// programming error: it panics in debug builds and is ignored otherwise.
    pub fn with_filter(mut self, group: &'static str, filter: EventFilter) -> Self {
        let known = GROUPS.iter().any(|g| g.key == group);
        debug_assert!(known, "{group} is not a group of the event catalogue");
        if known {
            self.filters.insert(group, filter);
        }
        self
    }

    /// Whether an event goes to a receiver with these filters: its group's filter decides, and
    /// events of a group without one always go.
    pub fn admits(&self, event: &str, filters: &Value, payload: &Value) -> bool {
        match find(event).and_then(|(group, _)| self.filters.get(group.key)) {
            Some(filter) => filter(filters, payload),
            None => true,
        }
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

mod samples;

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use serde_json::json;

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
        assert!(samples::builtin().iter().all(|(name, _)| find(name).is_some()));
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
