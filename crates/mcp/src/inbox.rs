//! The `inbox` tools: the chat conversations (one per customer and business number, with the
//! 24-hour window each customer message opens) and replies in them, over
//! `messaging::MessagingService`. The reads call the methods of `GET /chat/conversations` and
//! `GET /chat/conversations/{id}`, with their permission (`communications.messages.view`); the
//! reply calls `MessagingService::reply`, a chat send to the conversation's customer from its
//! business number, refused outside the window.

use kernel::page::PageQuery;
use kernel::{Error, Page, PageRequest, Permission};
use messaging::chat::{ChatSendRequest, Conversation, ConversationFilter};
use messaging::{Message, SendResult};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::scopes::Elevation;
use crate::tool::{Call, Effect, Tool, answer, numeric_id, params_of, query_input, schema_of, with_def, with_members};

const SERVER: &str = "inbox";

/// The inbox tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_conversations",
            title: "List conversations",
            description: "The chat conversations of the account, most recent first (20 a page), each with its customer (phone, chat id, profile name), its 24-hour window (open, expires_at), unread_count and last message, as GET /chat/conversations does: filter by phone_number_id (a business number), window (open or closed) and customer (any common form).",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::MESSAGES_VIEW),
            effect: Effect::Read,
            input: list_input,
            output: || with_def::<Conversation>(schema_of::<Page<Conversation>>()),
            call: |call| Box::pin(list_conversations(call)),
        },
        Tool {
            name: "get_conversation",
            title: "Get a conversation",
            description: "One chat conversation by its id, with a page of its messages, newest first (20 a page), inbound and outbound, as GET /chat/conversations/{id} does.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::MESSAGES_VIEW),
            effect: Effect::Read,
            input: get_input,
            output: conversation_output,
            call: |call| Box::pin(get_conversation(call)),
        },
        Tool {
            name: "reply_in_conversation",
            title: "Reply in a conversation",
            description: "Answers the customer of a chat conversation with a text, from the conversation's business number, like a chat send (paid from the prepaid balance at once); in_reply_to_gateway_id quotes the message answered (its gateway_message_id). Only while the customer's 24-hour window is open: outside it the reply is refused as a conflict with reason window_closed, and only an approved template (send_chat_template on the messaging server) can reach them.",
            server: SERVER,
            elevation: Some(Elevation::Send),
            // the reply finds the conversation by id and answers its customer's number: it is
            // the inbox's, as the conversation reads are (the service checks no permission itself)
            permission: Some(Permission::MESSAGES_VIEW),
            effect: Effect::Create,
            input: || with_members(schema_of::<Reply>(), &[conversation()]),
            output: schema_of::<SendResult>,
            call: |call| Box::pin(reply_in_conversation(call)),
        },
    ]
}

/// The conversation's id: the REST path's `{id}`.
fn conversation() -> (&'static str, Value, bool) {
    ("conversation", numeric_id("The conversation's id."), true)
}

/// `GET /chat/conversations`' query: its page and its filters.
fn list_input() -> Value {
    query_input(&[], [params_of::<PageQuery>(), params_of::<ConversationFilter>()].concat())
}

/// The conversation's id and the page of its messages.
fn get_input() -> Value {
    query_input(&[conversation()], params_of::<PageQuery>())
}

/// `ConversationWithMessages`: the conversation's members with `messages` beside them. Its
/// derived schema is an `allOf` (the conversation is flattened in), which clients that want an
/// object at the top refuse; the same members written as one object.
fn conversation_output() -> Value {
    let mut schema = schema_of::<Conversation>();
    let mut page = with_def::<Message>(schema_of::<Page<Message>>());
    let defs = page.as_object_mut().and_then(|p| p.remove("$defs"));
    if let (Some(Value::Object(defs)), Some(own)) = (defs, schema["$defs"].as_object_mut()) {
        own.extend(defs);
    }
    page["description"] = json!("A page of the conversation's messages, newest first.");
    schema["properties"]["messages"] = page;
    if let Some(required) = schema["required"].as_array_mut() {
        required.push(json!("messages"));
    }
    schema["description"] = json!("A conversation with a page of its messages, newest first.");
    schema
}

// `reply_in_conversation`'s arguments beside the conversation.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
struct Reply {
    /// The text (1 to 4,096 characters).
    #[schema(min_length = 1, max_length = 4096)]
    message: String,
    /// The provider id (`gateway_message_id`) of the message this one answers; not a `msg_` uid.
    #[schema(max_length = 191)]
    in_reply_to_gateway_id: Option<String>,
}

/// The conversation's id as the REST path reads it: anything but a whole number names nothing.
fn conversation_id(call: &mut Call) -> Result<i64, Error> {
    call.take_path("conversation")?.parse::<i64>().map_err(|_| Error::not_found("Conversation"))
}

async fn list_conversations(call: Call) -> Result<Value, Error> {
    let members = list_input();
    let page: PageQuery = call.query(&members)?;
    let filter: ConversationFilter = call.query(&members)?;
    let page = PageRequest::parse(&page, messaging::chat::conversations::PER_PAGE)?;
    answer(call.domains.messaging.conversations(&call.caller, &filter, page).await?)
}

async fn get_conversation(mut call: Call) -> Result<Value, Error> {
    let page: PageQuery = call.query(&get_input())?;
    let id = conversation_id(&mut call)?;
    let page = PageRequest::parse(&page, messaging::messages::PER_PAGE)?;
    answer(call.domains.messaging.conversation(&call.caller, id, page).await?)
}

async fn reply_in_conversation(mut call: Call) -> Result<Value, Error> {
    let id = conversation_id(&mut call)?;
    let reply: Reply = call.body()?;
    let request = ChatSendRequest {
        message_type: Some("text".into()),
        message: Some(reply.message),
        in_reply_to_gateway_id: reply.in_reply_to_gateway_id,
        ..Default::default()
    };
    answer(call.domains.messaging.reply(&call.caller, id, request).await?)
}
