//! The `groups` tools: chat groups of a business number (up to eight people, the business
//! included), over `messaging::MessagingService` and the methods of the `/chat/groups` routes,
//! with their permissions (`communications.groups.view` / `.manage`, and `communications.send`
//! to write in a group). Invitations and group messages send messages: they need `mcp:send`;
//! removing participants needs `mcp:delete`; the other changes `mcp:write`.

use kernel::page::PageQuery;
use kernel::{Error, Page, PageRequest, Permission};
use messaging::chat::groups::members::{InviteRequest, JoinRequestsBody, RemoveParticipants};
use messaging::chat::groups::{
    Group, GroupCreate, GroupFilter, GroupMessage, GroupMessageSend, GroupPinRequest, Invited, JoinRequestView,
    JoinRequestsAnswer, Removed,
};
use serde_json::Value;

use crate::scopes::Elevation;
use crate::tool::{
    Call, Effect, Tool, answer, list_of, numeric_id, params_of, query_input, schema_of, with_def, with_members,
};

const SERVER: &str = "groups";

/// The groups tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_chat_groups",
            title: "List chat groups",
            description: "The account's chat groups, newest first (20 a page, at most 100), each with its subject, status (creating, active, suspended, deleted, failed), business number (sender_id), invite link and participants_count (the business included), as GET /chat/groups does: deleted groups only with status all or deleted; filter by sender_id.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::GROUPS_VIEW),
            effect: Effect::Read,
            input: list_input,
            output: || with_def::<Group>(schema_of::<Page<Group>>()),
            call: |call| Box::pin(list_groups(call)),
        },
        Tool {
            name: "get_chat_group",
            title: "Get a chat group",
            description: "One chat group by its id, with its status, invite link, participants_count, the first invitations' outcomes and when a participant last wrote (free-form messages need one within 24 hours).",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::GROUPS_VIEW),
            effect: Effect::Read,
            input: || query_input(&[group()], Vec::new()),
            output: schema_of::<Group>,
            call: |call| Box::pin(get_group(call)),
        },
        Tool {
            name: "create_chat_group",
            title: "Create a chat group",
            description: "Creates a chat group on a business number (sender_id; the workspace default when left out): subject (required, at most 128), description (at most 2,048), join_approval_mode (auto_approve or approval_required), invite_template (a stored template's name) and up to 7 invitees. The group is creating until the provider confirms it (then active, with its invite link, and the invitees are sent the link), or failed with the provider's reason.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::GROUPS_MANAGE),
            effect: Effect::Create,
            input: schema_of::<GroupCreate>,
            output: schema_of::<Group>,
            call: |call| Box::pin(create_group(call)),
        },
        Tool {
            name: "invite_to_chat_group",
            title: "Invite people to a chat group",
            description: "Sends an active group's invite link to 1 to 7 numbers, one message each: as text (reaching only customers whose 24-hour window is open) or with a stored template (template, else the group's invite_template). Answers who was sent it (successes) and who was not, with the provider's reason (failures). A full group (eight with the business) is refused.",
            server: SERVER,
            elevation: Some(Elevation::Send),
            permission: Some(Permission::GROUPS_MANAGE),
            effect: Effect::Create,
            input: || with_members(schema_of::<InviteRequest>(), &[group()]),
            output: schema_of::<Invited>,
            call: |call| Box::pin(invite_to_group(call)),
        },
        Tool {
            name: "list_join_requests",
            title: "List a group's join requests",
            description: "The pending requests to join a group whose join_approval_mode is approval_required, oldest first: each request's id (what approve_join_requests and reject_join_requests take) and phone.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::GROUPS_VIEW),
            effect: Effect::Read,
            input: || query_input(&[group()], Vec::new()),
            output: || list_of("items", schema_of::<JoinRequestView>()),
            call: |call| Box::pin(list_join_requests(call)),
        },
        Tool {
            name: "approve_join_requests",
            title: "Approve join requests",
            description: "Approves pending join requests of a group by their ids: each approved person joins at once, within the group's eight (the business included); ids that are not pending requests of the group, and those past the eighth person, come back in failures.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::GROUPS_MANAGE),
            effect: Effect::Update,
            input: || with_members(schema_of::<JoinRequestsBody>(), &[group()]),
            output: schema_of::<JoinRequestsAnswer>,
            call: |call| Box::pin(answer_join_requests(call, true)),
        },
        Tool {
            name: "reject_join_requests",
            title: "Reject join requests",
            description: "Rejects pending join requests of a group by their ids; ids that are not pending requests of the group come back in failures.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::GROUPS_MANAGE),
            effect: Effect::Update,
            input: || with_members(schema_of::<JoinRequestsBody>(), &[group()]),
            output: schema_of::<JoinRequestsAnswer>,
            call: |call| Box::pin(answer_join_requests(call, false)),
        },
        Tool {
            name: "remove_group_participants",
            title: "Remove participants from a chat group",
            description: "Removes 1 to 8 participants (their chat ids or numbers) from an active group; answers who was removed, who the provider would not remove, and the group as it now is.",
            server: SERVER,
            elevation: Some(Elevation::Delete),
            permission: Some(Permission::GROUPS_MANAGE),
            effect: Effect::Delete,
            input: || with_members(schema_of::<RemoveParticipants>(), &[group()]),
            output: schema_of::<Removed>,
            call: |call| Box::pin(remove_group_participants(call)),
        },
        Tool {
            name: "send_group_message",
            title: "Write in a chat group",
            description: "Sends one message to an active group: message (text, at most 4,096), media_url with media_type, or an approved stored template (name, language, components). A free-form message needs a participant's message in the group within the last 24 hours; otherwise it is refused with reason window_closed and only an approved template can be sent. Answers the message with its uid (what pin_group_message takes) and status (failed with the provider's reason when refused).",
            server: SERVER,
            elevation: Some(Elevation::Send),
            permission: Some(Permission::SEND),
            effect: Effect::Create,
            input: || with_members(schema_of::<GroupMessageSend>(), &[group()]),
            output: schema_of::<GroupMessage>,
            call: |call| Box::pin(send_group_message(call)),
        },
        Tool {
            name: "pin_group_message",
            title: "Pin a group message",
            description: "Pins (pin true, for expiration_days 1 to 30, default 7) or unpins (pin false) one of the group's messages by its uid; answers the message with pinned_until.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::GROUPS_MANAGE),
            effect: Effect::Update,
            input: || with_members(schema_of::<GroupPinRequest>(), &[group()]),
            output: schema_of::<GroupMessage>,
            call: |call| Box::pin(pin_group_message(call)),
        },
    ]
}

/// The group's id: the REST path's `{id}`.
fn group() -> (&'static str, Value, bool) {
    ("group", numeric_id("The chat group's id."), true)
}

/// `GET /chat/groups`' query: its page and its filters.
fn list_input() -> Value {
    query_input(&[], [params_of::<PageQuery>(), params_of::<GroupFilter>()].concat())
}

/// The group's id as the REST path reads it: anything but a whole number names nothing.
fn group_id(call: &mut Call) -> Result<i64, Error> {
    call.take_path("group")?.parse::<i64>().map_err(|_| Error::not_found("Chat group"))
}

async fn list_groups(call: Call) -> Result<Value, Error> {
    let members = list_input();
    let page: PageQuery = call.query(&members)?;
    let filter: GroupFilter = call.query(&members)?;
    let page = PageRequest::parse(&page, messaging::chat::groups::PER_PAGE)?;
    answer(call.domains.messaging.groups(&call.caller, &filter, page).await?)
}

async fn get_group(mut call: Call) -> Result<Value, Error> {
    let id = group_id(&mut call)?;
    answer(call.domains.messaging.group(&call.caller, id).await?)
}

async fn create_group(mut call: Call) -> Result<Value, Error> {
    let body: GroupCreate = call.body()?;
    answer(call.domains.messaging.create_group(&call.caller, body).await?)
}

async fn invite_to_group(mut call: Call) -> Result<Value, Error> {
    let id = group_id(&mut call)?;
    let body: InviteRequest = call.body()?;
    answer(call.domains.messaging.invite_to_group(&call.caller, id, body).await?)
}

async fn list_join_requests(mut call: Call) -> Result<Value, Error> {
    let id = group_id(&mut call)?;
    let items = call.domains.messaging.group_join_requests(&call.caller, id).await?;
    answer(serde_json::json!({ "items": items }))
}

async fn answer_join_requests(mut call: Call, approve: bool) -> Result<Value, Error> {
    let id = group_id(&mut call)?;
    let body: JoinRequestsBody = call.body()?;
    answer(call.domains.messaging.answer_group_join_requests(&call.caller, id, body, approve).await?)
}

async fn remove_group_participants(mut call: Call) -> Result<Value, Error> {
    let id = group_id(&mut call)?;
    let body: RemoveParticipants = call.body()?;
    answer(call.domains.messaging.remove_group_participants(&call.caller, id, body).await?)
}

async fn send_group_message(mut call: Call) -> Result<Value, Error> {
    let id = group_id(&mut call)?;
    let body: GroupMessageSend = call.body()?;
    answer(call.domains.messaging.send_group_message(&call.caller, id, body).await?)
}

async fn pin_group_message(mut call: Call) -> Result<Value, Error> {
    let id = group_id(&mut call)?;
    let body: GroupPinRequest = call.body()?;
    answer(call.domains.messaging.pin_group_message(&call.caller, id, body).await?)
}
