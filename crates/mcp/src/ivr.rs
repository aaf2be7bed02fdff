//! The `ivr` tools (contract: the `ivr` MCP server, `mcp:calls`): a voice menu checked and
//! walked key by key before anyone is called, and a call that runs one, over the
//! `messaging::voice` methods `POST /calls` uses. Running a menu spends, so it needs `mcp:spend`.

use kernel::{Error, Permission};
use messaging::voice::CallRecord;
use messaging::voice::menus::{MenuCheckBody, MenuWalk};
use serde_json::Value;

use crate::calls::{call_input, place_call_with};
use crate::scopes::Elevation;
use crate::tool::{Call, Effect, Tool, answer, schema_of};

const SERVER: &str = "ivr";

/// The ivr tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "check_ivr_menu",
            title: "Check a voice menu",
            description: "Checks a menu (ivr: {prompt, options keyed 0-9, * or # each doing one of say, play, voicemail {prompt, max_seconds}, transfer {numbers, greeting, record} or a nested menu (three deep), timeout_seconds 3 to 60, attempts 1 to 3}) by the rules POST /calls applies, and walks it: every key path (2.1: 2, then 1) with what it does, the depth, and the numbers a caller may be put through to. Nobody is called; a broken menu is refused naming the member.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::MESSAGES_VIEW),
            effect: Effect::Read,
            input: schema_of::<MenuCheckBody>,
            output: schema_of::<MenuWalk>,
            call: |call| Box::pin(check_ivr_menu(call)),
        },
        Tool {
            name: "run_ivr_menu",
            title: "Call a number with a voice menu",
            description: "Calls recipient and runs the menu ivr (as check_ivr_menu takes it), then asks for a 1 to 5 score when feedback is given, as POST /calls with ivr does; language en or sw, optional sender_id (one of list_voice_numbers), schedule_time. One minute is held from the wallet at once and the call billed per started minute; keys pressed, a voicemail's recording_url and the feedback_score appear on get_call (calls) once known.",
            server: SERVER,
            elevation: Some(Elevation::Spend),
            permission: Some(Permission::SEND),
            effect: Effect::Create,
            input: || call_input("ivr"),
            output: schema_of::<CallRecord>,
            call: |call| Box::pin(place_call_with(call, "ivr")),
        },
    ]
}

async fn check_ivr_menu(mut call: Call) -> Result<Value, Error> {
    let body: MenuCheckBody = call.body()?;
    answer(call.domains.messaging.check_menu(&call.caller, body)?)
}
