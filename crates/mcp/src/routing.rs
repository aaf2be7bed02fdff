//! The `routing` tools (contract: the `routing` MCP server, `mcp:routing`): the voice numbers
//! calls go out from, in the routing policy's order, and a call put through to agent numbers,
//! over the `messaging::voice` methods `POST /calls` uses. Connecting spends, so it needs
//! `mcp:spend`.

use kernel::{Error, Permission};
use messaging::voice::CallRecord;
use messaging::voice::menus::VoiceNumber;
use serde_json::Value;

use crate::calls::{call_input, place_call_with};
use crate::scopes::Elevation;
use crate::tool::{Call, Effect, Tool, answer, list_of, object, schema_of};

const SERVER: &str = "routing";

/// The routing tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_voice_numbers",
            title: "List the voice numbers",
            description: "The account's approved numbers on active voice channels, in the order calls are routed: default marks the number a call without sender_id goes out from; pass value as sender_id to call from another.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::MESSAGES_VIEW),
            effect: Effect::Read,
            input: || object(&[]),
            output: || list_of("items", schema_of::<VoiceNumber>()),
            call: |call| Box::pin(list_voice_numbers(call)),
        },
        Tool {
            name: "connect_call",
            title: "Connect a number to agents",
            description: "Calls recipient and puts them through to agent numbers (connect: {numbers (1 to 5, tried in order until one answers), greeting spoken first, record}), then asks for a 1 to 5 score when feedback is given, as POST /calls with connect does; optional sender_id (one of list_voice_numbers), schedule_time. One minute is held from the wallet at once and the call billed per started minute; recording_url and feedback_score appear on get_call (calls) once known.",
            server: SERVER,
            elevation: Some(Elevation::Spend),
            permission: Some(Permission::SEND),
            effect: Effect::Create,
            input: || call_input("connect"),
            output: schema_of::<CallRecord>,
            call: |call| Box::pin(place_call_with(call, "connect")),
        },
    ]
}

async fn list_voice_numbers(call: Call) -> Result<Value, Error> {
    let items = call.domains.messaging.voice_numbers(&call.caller).await?;
    answer(serde_json::json!({ "items": items }))
}
