//! The `messaging` tools: send SMS, read and list messages, create and read campaigns, the
//! blacklist, send chat messages (text, template, interactive, reaction), read a chat message
//! and the chat business accounts, over `messaging::MessagingService`, each calling the method
//! its REST route calls. Sending, the message reads, the chat accounts and the campaigns are
//! the contract's legacy messaging routes ("tenant credential only, no per-action map"): no
//! permission, as on REST; the message list and the blacklist are routes this service adds,
//! with their permissions. Numbers written without a calling code are read in the account's,
//! as on REST (the caller carries it).

use kernel::page::PageQuery;
use kernel::{Error, Page, PageRequest, Permission, parse_id};
use messaging::blacklist::{BlacklistAdd, BlacklistAdded, BlacklistEntry};
use messaging::campaigns::{Campaign, CampaignRef, CampaignRequest, CampaignsCreated};
use messaging::chat::send::{ReactionBody, TemplateBody};
use messaging::chat::{ChatAccounts, ChatSendRequest};
use messaging::{Message, MessageFilter, MessageRef, SendBody, SendRequest, SendResult};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, SchemaType, Type};

use crate::scopes::Elevation;
use crate::tool::{Call, Effect, Tool, answer, object, params_of, query_input, schema_of, uid_or_id, with_def};

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
        Tool {
            name: "send_chat_text",
            title: "Send a chat text",
            description: "Sends a chat (WhatsApp) text to one customer or many, one message per distinct recipient, as POST /chat/send with message_type text does: numbers in recipient or recipients (national numbers are read in the account's calling code), the message, an optional sender_id (a business phone number id or number from list_chat_accounts; the workspace default otherwise), in_reply_to_gateway_id (the provider id of the message answered) and schedule_time. Paid from the prepaid balance at once. A free-form text reaches a customer only inside the 24-hour window their last message opened; outside it the provider refuses and the record is failed (send_chat_template instead).",
            server: SERVER,
            elevation: Some(Elevation::Send),
            permission: None,
            effect: Effect::Create,
            input: schema_of::<ChatText>,
            output: schema_of::<SendResult>,
            call: |call| Box::pin(send_chat_text(call)),
        },
        Tool {
            name: "send_chat_template",
            title: "Send a chat template",
            description: "Sends an approved chat (WhatsApp) template to one customer or many, as POST /chat/send with message_type template does: template.name, template.language (default en) and template.components (the parameters, forwarded to the provider as given), an optional sender_id. A template reaches a customer outside the 24-hour window too. Paid from the prepaid balance at once.",
            server: SERVER,
            elevation: Some(Elevation::Send),
            permission: None,
            effect: Effect::Create,
            input: schema_of::<ChatTemplate>,
            output: schema_of::<SendResult>,
            call: |call| Box::pin(send_chat_template(call)),
        },
        Tool {
            name: "send_chat_interactive",
            title: "Send an interactive chat message",
            description: "Sends an interactive chat (WhatsApp) message (reply buttons, a list, a link button, a flow, products...) to one customer or many, as POST /chat/send with message_type interactive does: the interactive object in the provider's shape ({type, body: {text}, action}); button and list messages are checked (1 to 3 buttons with titles of at most 20 characters; 1 to 10 list sections), the other types go as given. Free-form: only inside the 24-hour window. Paid from the prepaid balance at once.",
            server: SERVER,
            elevation: Some(Elevation::Send),
            permission: None,
            effect: Effect::Create,
            input: schema_of::<ChatInteractive>,
            output: schema_of::<SendResult>,
            call: |call| Box::pin(send_chat_interactive(call)),
        },
        Tool {
            name: "send_chat_reaction",
            title: "React to a chat message",
            description: "Reacts with an emoji to a message of a chat (WhatsApp) conversation, as POST /chat/send with message_type reaction does: the customer's number, reaction.message_id (the provider id, gateway_message_id, of the message reacted to; not a msg_ uid) and reaction.emoji; sender_id when the message went through another business number than the default. Paid like any chat message.",
            server: SERVER,
            elevation: Some(Elevation::Send),
            permission: None,
            effect: Effect::Create,
            input: schema_of::<ChatReaction>,
            output: schema_of::<SendResult>,
            call: |call| Box::pin(send_chat_reaction(call)),
        },
        Tool {
            name: "get_chat_message",
            title: "Get a chat message",
            description: "One message by its uid (msg_…) or numeric id, as GET /chat/{uid} answers it: its status, conversation_id, gateway_message_id (what in_reply_to_gateway_id and reaction.message_id take), metadata (message type, interactive, reaction, reply_to) and template_params.",
            server: SERVER,
            elevation: None,
            permission: None,
            effect: Effect::Read,
            input: || object(&[("message", uid_or_id("The message's uid (msg_…) or numeric id."), true)]),
            output: schema_of::<Message>,
            call: |call| Box::pin(get_chat_message(call)),
        },
        Tool {
            name: "list_chat_accounts",
            title: "List chat accounts",
            description: "The account's chat (WhatsApp) business accounts and their phone numbers (each number's id is what sender_id takes), with default_phone_number_id: the number a send without sender_id goes from.",
            server: SERVER,
            elevation: None,
            permission: None,
            effect: Effect::Read,
            input: || object(&[]),
            output: schema_of::<ChatAccounts>,
            call: |call| Box::pin(list_chat_accounts(call)),
        },
    ]
}

// `send_chat_text`'s arguments: the members of the chat send body a text reads (no doc
// comment: it would be the input schema's description).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct ChatText {
    /// Numbers separated by commas, semicolons or whitespace (at most 4,000 characters).
    #[schema(max_length = 4000)]
    recipient: Option<String>,
    #[schema(schema_with = recipients)]
    recipients: Option<Vec<String>>,
    /// The text (1 to 4,096 characters).
    #[schema(min_length = 1, max_length = 4096)]
    message: String,
    /// A business phone number id or number (list_chat_accounts); omitted: the workspace default.
    #[schema(max_length = 64)]
    sender_id: Option<String>,
    /// The provider id (`gateway_message_id`) of the message this one answers; not a `msg_` uid.
    #[schema(max_length = 191)]
    in_reply_to_gateway_id: Option<String>,
    #[schema(schema_with = schedule_time)]
    schedule_time: Option<String>,
}

// `send_chat_template`'s arguments.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct ChatTemplate {
    /// Numbers separated by commas, semicolons or whitespace (at most 4,000 characters).
    #[schema(max_length = 4000)]
    recipient: Option<String>,
    #[schema(schema_with = recipients)]
    recipients: Option<Vec<String>>,
    template: Template,
    /// A business phone number id or number (list_chat_accounts); omitted: the workspace default.
    #[schema(max_length = 64)]
    sender_id: Option<String>,
}

/// The approved template to send.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct Template {
    /// The template's name (at most 191).
    #[schema(min_length = 1, max_length = 191)]
    name: String,
    /// Its language code (at most 20); default `en`.
    #[schema(max_length = 20)]
    language: Option<String>,
    /// The template's components with their parameters, forwarded to the provider as given.
    components: Option<Vec<Value>>,
}

// `send_chat_interactive`'s arguments.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct ChatInteractive {
    /// Numbers separated by commas, semicolons or whitespace (at most 4,000 characters).
    #[schema(max_length = 4000)]
    recipient: Option<String>,
    #[schema(schema_with = recipients)]
    recipients: Option<Vec<String>>,
    #[schema(schema_with = interactive)]
    interactive: Value,
    /// A business phone number id or number (list_chat_accounts); omitted: the workspace default.
    #[schema(max_length = 64)]
    sender_id: Option<String>,
}

// `send_chat_reaction`'s arguments.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct ChatReaction {
    /// The customer's number: the chat of the message reacted to.
    #[schema(min_length = 1, max_length = 4000)]
    recipient: String,
    reaction: Reaction,
    /// The business number of the chat (list_chat_accounts); omitted: the workspace default.
    #[schema(max_length = 64)]
    sender_id: Option<String>,
}

/// The reaction.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct Reaction {
    /// The provider id (`gateway_message_id`) of the message reacted to; not a `msg_` uid.
    #[schema(min_length = 1, max_length = 191)]
    message_id: String,
    /// The emoji (at most 16 characters).
    #[schema(min_length = 1, max_length = 16)]
    emoji: String,
}

/// `recipients` as the chat send body describes it.
fn recipients() -> Schema {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(ObjectBuilder::new().schema_type(Type::String).max_length(Some(191)))
        .description(Some("More numbers; each entry at most 191 characters."))
        .into()
}

/// `schedule_time` as the chat send body describes it.
fn schedule_time() -> Schema {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .max_length(Some(100))
        .pattern(Some(kernel::schema::trimmed(&kernel::schema::date_time())))
        .description(Some("ISO 8601 with an offset or `Z`; a future time queues the sending until then."))
        .into()
}

/// The interactive object: what the service checks, the rest in the provider's shape.
fn interactive() -> Schema {
    let kinds = messaging::chat::send::INTERACTIVE_TYPES.iter().copied();
    let text = ObjectBuilder::new().schema_type(Type::String).max_length(Some(1_024));
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .property("type", ObjectBuilder::new().schema_type(Type::String).enum_values(Some(kinds)))
        .required("type")
        .property(
            "body",
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .property("text", text)
                .description(Some("text: at most 1,024; required for button and list.")),
        )
        .property(
            "action",
            ObjectBuilder::new().schema_type(Type::Object).description(Some(
                "button: {buttons: [{type: reply, reply: {id (at most 200), title (at most 20)}}], 1 to 3}; \
                 list: {button (at most 20), sections: [{title, rows: [{id, title (at most 24), description (at \
                 most 72)}]}], 1 to 10}; the other types as the provider takes them.",
            )),
        )
        .description(Some("The interactive object in the provider's shape: {type, body: {text}, action}."))
        .into()
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

async fn get_chat_message(mut call: Call) -> Result<Value, Error> {
    let message: MessageRef = parse_id(&call.take_path("message")?, "Message")?;
    answer(call.domains.messaging.chat_message(&call.caller, &message).await?)
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

async fn send_chat_text(mut call: Call) -> Result<Value, Error> {
    let text: ChatText = call.body()?;
    let request = ChatSendRequest {
        recipient: text.recipient,
        recipients: text.recipients,
        sender_id: text.sender_id,
        message_type: Some("text".into()),
        message: Some(text.message),
        in_reply_to_gateway_id: text.in_reply_to_gateway_id,
        schedule_time: text.schedule_time,
        ..Default::default()
    };
    answer(call.domains.messaging.send_chat(&call.caller, request).await?)
}

async fn send_chat_template(mut call: Call) -> Result<Value, Error> {
    let template: ChatTemplate = call.body()?;
    let request = ChatSendRequest {
        recipient: template.recipient,
        recipients: template.recipients,
        sender_id: template.sender_id,
        message_type: Some("template".into()),
        template: Some(TemplateBody {
            name: Some(template.template.name),
            language: template.template.language,
            components: template.template.components,
        }),
        ..Default::default()
    };
    answer(call.domains.messaging.send_chat(&call.caller, request).await?)
}

async fn send_chat_interactive(mut call: Call) -> Result<Value, Error> {
    let interactive: ChatInteractive = call.body()?;
    let request = ChatSendRequest {
        recipient: interactive.recipient,
        recipients: interactive.recipients,
        sender_id: interactive.sender_id,
        message_type: Some("interactive".into()),
        interactive: Some(interactive.interactive),
        ..Default::default()
    };
    answer(call.domains.messaging.send_chat(&call.caller, request).await?)
}

async fn send_chat_reaction(mut call: Call) -> Result<Value, Error> {
    let reaction: ChatReaction = call.body()?;
    let request = ChatSendRequest {
        recipient: Some(reaction.recipient),
        sender_id: reaction.sender_id,
        message_type: Some("reaction".into()),
        reaction: Some(ReactionBody {
            message_id: Some(reaction.reaction.message_id),
            emoji: Some(reaction.reaction.emoji),
        }),
        ..Default::default()
    };
    answer(call.domains.messaging.send_chat(&call.caller, request).await?)
}

async fn list_chat_accounts(call: Call) -> Result<Value, Error> {
    answer(call.domains.messaging.chat_accounts(&call.caller).await?)
}
