//! The `automations` tools (contract: Automations; issue 20): the business-event log, event
//! discovery, subscriptions and schedules, over `automations::AutomationService`. The reads call
//! the methods `GET /automations/{events,subscriptions,schedules}` call
//! (apps/gateway/src/v3/automations.rs), which check `automations.view` from a known, active
//! issuer. Keys never make or remove subscriptions and schedules; these tools do, under
//! `mcp:automate`, through the methods the operator's command line calls (which take no caller):
//! so each write checks the same issuer and `automations.view` itself first (there is no other
//! automations permission), and records `created_by: "mcp"`.

use automations::events::{EventLog, EventQuery, EventType};
use automations::schedules::{Schedule, Schedules, Target};
use automations::subscriptions::{Subscribed, Subscriptions};
use kernel::{Caller, Error, Permission, parse_id};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::scopes::Elevation;
use crate::tool::{Call, Effect, Tool, answer, list_of, numeric_id, object, params_of, query_input, schema_of, uuid};

const SERVER: &str = "automations";

/// What a subscription or schedule made through MCP records as its maker.
const CREATED_BY: &str = "mcp";

/// The automations tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_business_events",
            title: "List business events",
            description: "The workspace's business-event log (the events webhooks and subscriptions are made from: lead.created, order.paid, scheduled.<word>...), newest first, 50 a page (limit up to 100), as GET /automations/events does: name keeps one event name; before takes the previous page's next_before for the next (older) page. Each event has its id, name, occurred_at and data (the payload callbacks deliver). Answers {events, has_more, next_before}.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::AUTOMATIONS_VIEW),
            effect: Effect::Read,
            input: events_input,
            output: schema_of::<EventLog>,
            call: |call| Box::pin(list_business_events(call)),
        },
        Tool {
            name: "list_event_types",
            title: "List event types",
            description: "Every event name a subscription may follow: the webhooks' catalogue, live (emitted by the service), then payment.pending, payment.paid, payment.failed and payment.refunded, marked live: false: they are never emitted (poll GET /payments; order.paid is the live event of settled money), and a subscription to one is refused. Schedules emit their own scheduled.<word> events, which subscriptions may follow too. Answers {event_types: [{name, live}]}.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::AUTOMATIONS_VIEW),
            effect: Effect::Read,
            input: || object(&[]),
            output: || list_of("event_types", schema_of::<EventType>()),
            call: |call| Box::pin(list_event_types(call)),
        },
        Tool {
            name: "list_subscriptions",
            title: "List subscriptions",
            description: "The workspace's subscriptions, newest first (at most 100), as GET /automations/subscriptions does: each with its id, the events it follows, its callback url, who made it (created_by: operator or mcp), its callbacks delivered, pending and failed, and created_at. Never the secret. Answers {subscriptions}.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::AUTOMATIONS_VIEW),
            effect: Effect::Read,
            input: || object(&[]),
            output: schema_of::<Subscriptions>,
            call: |call| Box::pin(list_subscriptions(call)),
        },
        Tool {
            name: "list_schedules",
            title: "List schedules",
            description: "The workspace's schedules, newest first (at most 100), as GET /automations/schedules does: each with its id, cron expression (UTC), the event it emits (or the operation it runs), next_run_at, last_run_at, runs, who made it (created_by: operator or mcp) and created_at. Answers {schedules}.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::AUTOMATIONS_VIEW),
            effect: Effect::Read,
            input: || object(&[]),
            output: schema_of::<Schedules>,
            call: |call| Box::pin(list_schedules(call)),
        },
        Tool {
            name: "create_subscription",
            title: "Subscribe a callback to events",
            description: "Makes a subscription that posts each matching business event to url, signed the Standard Webhooks way (webhook-id, webhook-timestamp, webhook-signature: v1, and the base64 HMAC-SHA256 of {webhook-id}.{webhook-timestamp}.{body} keyed with the base64 after whsec_) and retried for about a day and a half. events: 1 to 100 names (trimmed, lowercased, kept once each) from list_event_types, live ones only, or a schedule's scheduled.<word>. url: https (no private, internal or metadata address; redirects not followed). Answers {id, secret, events, url}: the secret (whsec_...) is shown this once and never again. A workspace keeps at most 100 subscriptions.",
            server: SERVER,
            elevation: Some(Elevation::Automate),
            permission: Some(Permission::AUTOMATIONS_VIEW),
            effect: Effect::Create,
            input: schema_of::<SubscriptionCreate>,
            output: schema_of::<Subscribed>,
            call: |call| Box::pin(create_subscription(call)),
        },
        Tool {
            name: "delete_subscription",
            title: "Delete a subscription",
            description: "Removes a subscription by its id (list_subscriptions) with its callbacks still waiting; nothing more is posted to its url. Another workspace's, or one already removed, is not found. Answers {id, deleted: true}.",
            server: SERVER,
            elevation: Some(Elevation::Automate),
            permission: Some(Permission::AUTOMATIONS_VIEW),
            effect: Effect::Delete,
            input: || object(&[("id", numeric_id("The subscription's id."), true)]),
            output: || deleted(numeric_id("The subscription's id.")),
            call: |call| Box::pin(delete_subscription(call)),
        },
        Tool {
            name: "create_schedule",
            title: "Schedule an event",
            description: "Makes a schedule that emits the business event event (scheduled.<word>: lowercase letters, digits, underscores) with {schedule_id, due_at} on the cron expression cron: five fields (minute hour day-of-month month day-of-week; names like MON-FRI allowed) or six with seconds first, read in UTC. Each due time fires once; times missed are not made up. Subscriptions may follow the event. Or, instead of event, operation: a named operation of the workspace (list_operations) with its input, which must read against the operation now (refused naming operation or input.<name>); each due time runs it once, as the workspace's operator. Answers the schedule with its next_run_at. A workspace keeps at most 100 schedules.",
            server: SERVER,
            elevation: Some(Elevation::Automate),
            permission: Some(Permission::AUTOMATIONS_VIEW),
            effect: Effect::Create,
            input: schema_of::<ScheduleCreate>,
            output: schema_of::<Schedule>,
            call: |call| Box::pin(create_schedule(call)),
        },
        Tool {
            name: "delete_schedule",
            title: "Delete a schedule",
            description: "Removes a schedule by its id (a UUID, list_schedules); a firing already queued finds nothing. Another workspace's, or one already removed, is not found. Answers {id, deleted: true}.",
            server: SERVER,
            elevation: Some(Elevation::Automate),
            permission: Some(Permission::AUTOMATIONS_VIEW),
            effect: Effect::Delete,
            input: || object(&[("id", uuid("The schedule's id."), true)]),
            output: || deleted(uuid("The schedule's id.")),
            call: |call| Box::pin(delete_schedule(call)),
        },
    ]
}

// `create_subscription`'s arguments (no doc comment: it would be the input schema's
// description).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct SubscriptionCreate {
    /// The event names to follow (1 to 100): list_event_types' live ones, or `scheduled.<word>`.
    #[schema(min_items = 1, max_items = 100)]
    events: Vec<String>,
    /// The callback: https, a public address.
    #[schema(min_length = 1, max_length = 2048)]
    url: String,
}

// `create_schedule`'s arguments.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct ScheduleCreate {
    /// Five fields (minute hour day-of-month month day-of-week), or six with seconds first; UTC.
    #[schema(min_length = 1, max_length = 255)]
    cron: String,
    /// The event it emits: `scheduled.<word>` (lowercase letters, digits, underscores).
    #[schema(max_length = 80)]
    event: Option<String>,
    /// A named operation of the workspace to run instead of an event.
    operation: Option<String>,
    /// The operation's input (its inputs by name).
    #[schema(value_type = Option<Object>)]
    input: Option<Value>,
}

/// A delete's answer: the id and `deleted: true`.
fn deleted(id: Value) -> Value {
    object(&[("id", id, true), ("deleted", json!({"type": "boolean", "const": true}), true)])
}

/// `GET /automations/events`' query.
fn events_input() -> Value {
    query_input(&[], params_of::<EventQuery>())
}

/// What the writes need, as the reads do (`AutomationService`'s writes take no caller): a
/// known, active issuer holding `automations.view`.
fn may_automate(caller: &Caller) -> Result<(), Error> {
    caller.require_issuer()?;
    caller.require(Permission::AUTOMATIONS_VIEW)
}

async fn list_business_events(call: Call) -> Result<Value, Error> {
    let query: EventQuery = call.query(&events_input())?;
    answer(call.domains.automations.events(&call.caller, &query).await?)
}

async fn list_event_types(call: Call) -> Result<Value, Error> {
    // the service's discovery takes no caller: the reads' rule is checked here
    may_automate(&call.caller)?;
    answer(json!({"event_types": call.domains.automations.event_types()}))
}

async fn list_subscriptions(call: Call) -> Result<Value, Error> {
    answer(call.domains.automations.subscriptions(&call.caller).await?)
}

async fn list_schedules(call: Call) -> Result<Value, Error> {
    answer(call.domains.automations.schedules(&call.caller).await?)
}

async fn create_subscription(mut call: Call) -> Result<Value, Error> {
    may_automate(&call.caller)?;
    let body: SubscriptionCreate = call.body()?;
    let tenant = call.caller.tenant_id;
    answer(call.domains.automations.subscribe(tenant, &body.events, &body.url, CREATED_BY).await?)
}

async fn delete_subscription(mut call: Call) -> Result<Value, Error> {
    may_automate(&call.caller)?;
    let id: i64 = parse_id(&call.take_path("id")?, "Subscription")?;
    call.domains.automations.unsubscribe(call.caller.tenant_id, id).await?;
    Ok(json!({"id": id, "deleted": true}))
}

async fn create_schedule(mut call: Call) -> Result<Value, Error> {
    may_automate(&call.caller)?;
    let body: ScheduleCreate = call.body()?;
    let target = match (body.operation, body.event) {
        (Some(_), Some(_)) => {
            return Err(Error::field("operation", "A schedule emits an event or runs an operation, not both."));
        }
        (Some(name), None) => Target::Operation { name, input: body.input.unwrap_or_else(|| json!({})) },
        (None, event) if body.input.is_none() => Target::Event(event.unwrap_or_default()),
        (None, _) => return Err(Error::field("input", "An input goes with an operation.")),
    };
    let tenant = call.caller.tenant_id;
    answer(call.domains.automations.schedule(tenant, &body.cron, target, CREATED_BY).await?)
}

async fn delete_schedule(mut call: Call) -> Result<Value, Error> {
    may_automate(&call.caller)?;
    let id = parse_id(&call.take_path("id")?, "Schedule")?;
    call.domains.automations.unschedule(call.caller.tenant_id, id).await?;
    Ok(json!({"id": id, "deleted": true}))
}
