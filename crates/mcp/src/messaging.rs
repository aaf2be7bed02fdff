//! The `messaging` tools: send SMS, read and list messages, create and read campaigns, the
//! blacklist, over `messaging::MessagingService`, each calling the method its REST route calls.
//! Sending, the message read and the campaigns are the contract's legacy messaging routes
//! ("tenant credential only, no per-action map"): no permission, as on REST; the message list
//! and the blacklist are routes this service adds, with their permissions. Numbers written
//! without a calling code are read in the account's, as on REST (the caller carries it).

use kernel::page::PageQuery;
use kernel::{Error, Page, PageRequest, Permission, parse_id};
use messaging::blacklist::{BlacklistAdd, BlacklistAdded, BlacklistEntry};
use messaging::campaigns::{Campaign, CampaignRef, CampaignRequest, CampaignsCreated};
use messaging::{Message, MessageFilter, MessageRef, SendBody, SendRequest, SendResult};
use serde_json::{Value, json};

use crate::scopes::Elevation;
use crate::tool::{Call, Effect, Tool, answer, object, params_of, query_input, schema_of, with_def};

const SERVER: &str = "messaging";

/// The messaging tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "send_sms",
            title: "Send an SMS",
            description: "Sends one SMS or many, one message per distinct recipient, as POST /sms/send does: numbers in recipient or recipients (national numbers are read in the account's calling code), message (wins over body), an optional approved sender_id and schedule_time. Each message is priced per segment and paid from the prepaid balance at once (refused when the balance cannot pay for the whole send); invalid and blacklisted numbers become failed records, not charged.",
            server: SERVER,
            elevation: Some(Elevation::Send),
            permission: None,
            effect: Effect::Create,
            // the send body's own members (the REST body is this type with "at least one number"
            // on top, which the service checks and names under `recipient`)
            input: schema_of::<SendRequest>,
            output: schema_of::<SendResult>,
            call: |call| Box::pin(send_sms(call)),
        },
        Tool {
            name: "get_message",
            title: "Get a message",
            description: "One message, outbound or inbound, by its uid (msg_…) or numeric id, with its status, price, segments and times.",
            server: SERVER,
            elevation: None,
            permission: None,
            effect: Effect::Read,
            input: || object(&[("message", uid_or_id("The message's uid (msg_…) or numeric id."), true)]),
            output: schema_of::<Message>,
            call: |call| Box::pin(get_message(call)),
        },
        Tool {
            name: "list_messages",
            title: "List messages",
            description: "Messages of the account, newest first (20 a page): filter by status, direction (inbound, outbound), channel_type, recipient (any common form) and campaign (uid or id), as GET /messages does.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::MESSAGES_VIEW),
            effect: Effect::Read,
            input: list_messages_input,
            output: || with_def::<Message>(schema_of::<Page<Message>>()),
            call: |call| Box::pin(list_messages(call)),
        },
        Tool {
            name: "create_campaign",
            title: "Create an SMS campaign",
            description: "Creates one campaign per contact group named in contact_list_id (ids or UUIDs, separated by commas, semicolons or spaces), as POST /sms/campaign does: the message is personalized per contact and sent in batches, paid batch by batch from the prepaid balance; a future schedule_time waits until then. Groups that do not resolve are skipped; none resolved is not found.",
            server: SERVER,
            elevation: Some(Elevation::Send),
            permission: None,
            effect: Effect::Create,
            input: schema_of::<CampaignRequest>,
            output: schema_of::<CampaignsCreated>,
            call: |call| Box::pin(create_campaign(call)),
        },
        Tool {
            name: "get_campaign",
            title: "Get a campaign",
            description: "One campaign by its uid (cmp_…) or numeric id: its status (draft, scheduled, running, paused, completed, cancelled) and why, recipients, sent and failed counts.",
            server: SERVER,
            elevation: None,
            permission: None,
            effect: Effect::Read,
            input: || object(&[("campaign", uid_or_id("The campaign's uid (cmp_…) or numeric id."), true)]),
            output: schema_of::<Campaign>,
            call: |call| Box::pin(get_campaign(call)),
        },
        Tool {
            name: "list_blacklist",
            title: "List the blacklist",
            description: "Numbers that opted out of SMS, newest first (20 a page); every send skips them.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CONTACTS_VIEW),
            effect: Effect::Read,
            input: || query_input(&[], params_of::<PageQuery>()),
            output: || with_def::<BlacklistEntry>(schema_of::<Page<BlacklistEntry>>()),
            call: |call| Box::pin(list_blacklist(call)),
        },
        Tool {
            name: "add_to_blacklist",
            title: "Add numbers to the blacklist",
            description: "Puts 1 to 1,000 numbers (any common form) on the blacklist with an optional reason; every one must be a valid number, or nothing is added.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::CONTACTS_EDIT),
            effect: Effect::Update,
            input: schema_of::<BlacklistAdd>,
            output: schema_of::<BlacklistAdded>,
            call: |call| Box::pin(add_to_blacklist(call)),
        },
        Tool {
            name: "remove_from_blacklist",
            title: "Take a number off the blacklist",
            description: "Takes a number (any common form) off the blacklist, so sends reach it again; a number that is not listed is not found.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::CONTACTS_EDIT),
            effect: Effect::Delete,
            input: || {
                object(&[("number", json!({"type": "string", "description": "The number in any common form."}), true)])
            },
            output: || object(&[("deleted", json!({"type": "boolean", "const": true}), true)]),
            call: |call| Box::pin(remove_from_blacklist(call)),
        },
    ]
}

/// A message or campaign as its REST path names it: its public uid, or its numeric id.
fn uid_or_id(description: &str) -> Value {
    json!({"type": ["string", "integer"], "description": description})
}

/// `GET /messages`' query: its page and its filters.
fn list_messages_input() -> Value {
    let mut params = params_of::<PageQuery>();
    params.extend(params_of::<MessageFilter>());
    query_input(&[], params)
}

async fn send_sms(mut call: Call) -> Result<Value, Error> {
    let body: SendBody = call.body()?;
    answer(call.domains.messaging.send(&call.caller, body.0).await?)
}

async fn get_message(mut call: Call) -> Result<Value, Error> {
    let message: MessageRef = parse_id(&call.take_path("message")?, "Message")?;
    answer(call.domains.messaging.message(&call.caller, &message).await?)
}

async fn list_messages(call: Call) -> Result<Value, Error> {
    let members = list_messages_input();
    let page: PageQuery = call.query(&members)?;
    let filter: MessageFilter = call.query(&members)?;
    let page = PageRequest::parse(&page, messaging::messages::PER_PAGE)?;
    answer(call.domains.messaging.messages(&call.caller, &filter, page).await?)
}

async fn create_campaign(mut call: Call) -> Result<Value, Error> {
    let body: CampaignRequest = call.body()?;
    answer(call.domains.messaging.create_campaigns(&call.caller, body).await?)
}

async fn get_campaign(mut call: Call) -> Result<Value, Error> {
    let campaign: CampaignRef = parse_id(&call.take_path("campaign")?, "Campaign")?;
    answer(call.domains.messaging.campaign(&call.caller, &campaign).await?)
}

async fn list_blacklist(call: Call) -> Result<Value, Error> {
    let page: PageQuery = call.query(&query_input(&[], params_of::<PageQuery>()))?;
    let page = PageRequest::parse(&page, messaging::blacklist::PER_PAGE)?;
    answer(call.domains.messaging.blacklist(&call.caller, page).await?)
}

async fn add_to_blacklist(mut call: Call) -> Result<Value, Error> {
    let body: BlacklistAdd = call.body()?;
    answer(call.domains.messaging.blacklist_add(&call.caller, body).await?)
}

async fn remove_from_blacklist(mut call: Call) -> Result<Value, Error> {
    let number = call.take_path("number")?;
    call.domains.messaging.blacklist_remove(&call.caller, &number).await?;
    Ok(json!({"deleted": true}))
}
