//! The `agents` tools (contract: the `agents` MCP server; `/api/engine`): start a run, read
//! it, list runs, cancel one, over `agents::AgentService` and the methods the engine routes
//! call (apps/gateway/src/engine.rs). A run started here is bounded by this connection's
//! granted scopes as well as its person's permissions. And the other way round: the
//! [`Catalog`] is the [`agents::Toolbox`] runs call their tools through, in process.

use ::agents::{Run, RunList, RunQuery, Runner, TaskBody};
use kernel::{Error, parse_id};
use providers::ToolSpec;
use serde_json::{Map, Value};
use store::idempotency::Answer;

use crate::scopes::Elevation;
use crate::tool::{
    Call, Effect, Tool, answer, idempotency_key, key_refusal, object, params_of, query_input, schema_of, uuid,
    with_members,
};
use crate::{Catalog, Grant, McpCaller};

const SERVER: &str = "agents";

/// The agents tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "start_run",
            title: "Start an agent run",
            description: "Gives a language model a task with some of the workspace's own tools, as POST /api/engine/tasks does: instructions (what to do), input (text or an object), tools (MCP server names such as contacts, or tool names such as set_lead_stage; not this server's), optional model, limits {max_steps (default 20, at most 100), max_seconds (default 300, at most 3600), max_spend_minor}, require_approval (tools whose calls wait for a person), metadata (string values) and mode: async (default) answers the queued run at once; sync waits a bounded time and answers the run as it stands, so check its status either way. Each tool call acts as this connection: its person's current permissions and this connection's scopes. Runs cost money (tokens and tool calls, from the wallet): a prepaid wallet too low to start is refused with quota_exceeded. A repeated idempotency_key with the same task answers the first run.",
            server: SERVER,
            elevation: Some(Elevation::Spend),
            permission: None,
            effect: Effect::Create,
            input: || with_members(schema_of::<TaskBody>(), &[("idempotency_key", idempotency_key(), false)]),
            output: schema_of::<Run>,
            call: |call| Box::pin(start_run(call)),
        },
        Tool {
            name: "get_run",
            title: "Get an agent run",
            description: "One agent run by its run_uuid, as GET /api/engine/runs/{run_uuid} does: its status (queued, running, requires_action, completed, failed, cancelled, expired), output, error {code, message}, required_action (the tool call waiting for approval), usage (tokens, model turns, tool calls, cost) and every step (each model turn and tool call with its arguments, result or error, timing and tokens). Poll it until the status is no longer queued or running. Another workspace's run is not found.",
            server: SERVER,
            elevation: None,
            permission: None,
            effect: Effect::Read,
            input: || object(&[("run_uuid", uuid("The run's run_uuid."), true)]),
            output: schema_of::<Run>,
            call: |call| Box::pin(get_run(call)),
        },
        Tool {
            name: "list_runs",
            title: "List agent runs",
            description: "The workspace's agent runs, newest first (20 a page, at most 100), without their steps, as GET /api/engine/runs does: status filters by one status; metadata_key with metadata_value by a metadata member; before (the next_before of the previous page) pages back. Answers {object, data, has_more, next_before}.",
            server: SERVER,
            elevation: None,
            permission: None,
            effect: Effect::Read,
            input: list_input,
            output: schema_of::<RunList>,
            call: |call| Box::pin(list_runs(call)),
        },
        Tool {
            name: "cancel_run",
            title: "Cancel an agent run",
            description: "Cancels a run that has not ended, as POST /api/engine/runs/{run_uuid}/cancel does: it ends cancelled at once; a step under way finishes and is recorded, and nothing after it starts. A run that already ended is a conflict (its status is named).",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: None,
            effect: Effect::Update,
            input: || object(&[("run_uuid", uuid("The run's run_uuid."), true)]),
            output: schema_of::<Run>,
            call: |call| Box::pin(cancel_run(call)),
        },
    ]
}

fn list_input() -> Value {
    query_input(&[], params_of::<RunQuery>())
}

async fn start_run(mut call: Call) -> Result<Value, Error> {
    let key = call.take_idempotency_key()?;
    let body: TaskBody = call.body()?;
    let scopes = Some(call.scopes.clone());
    match call.domains.agents.submit(&call.caller, body, key, scopes).await.map_err(key_refusal)? {
        Answer::Done(run) => answer(run),
        Answer::Replay(first) => Ok(first),
    }
}

async fn get_run(mut call: Call) -> Result<Value, Error> {
    let id = parse_id(&call.take_path("run_uuid")?, "Run")?;
    answer(call.domains.agents.run(&call.caller, id).await?)
}

async fn list_runs(call: Call) -> Result<Value, Error> {
    let query: RunQuery = call.query(&list_input())?;
    answer(call.domains.agents.runs(&call.caller, &query).await?)
}

async fn cancel_run(mut call: Call) -> Result<Value, Error> {
    let id = parse_id(&call.take_path("run_uuid")?, "Run")?;
    answer(call.domains.agents.cancel(&call.caller, id).await?)
}

#[async_trait::async_trait]
impl ::agents::Toolbox for Catalog {
    /// A server's tools or a tool by name; never this server's own (a run does not start
    /// runs).
    fn select(&self, names: &[String]) -> Result<Vec<ToolSpec>, usize> {
        let mut specs: Vec<ToolSpec> = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let name = name.trim();
            let chosen: Vec<&Tool> = match crate::servers::find(name) {
                Some(server) if server.name != SERVER => self.on(Some(server.name)).collect(),
                Some(_) => return Err(i),
                None => self.find(None, name).filter(|tool| tool.server != SERVER).into_iter().collect(),
            };
            if chosen.is_empty() && crate::servers::find(name).is_none() {
                return Err(i);
            }
            for tool in chosen {
                if !specs.iter().any(|spec| spec.name == tool.name) {
                    let parameters = (tool.input)();
                    specs.push(ToolSpec { name: tool.name.into(), description: tool.description.into(), parameters });
                }
            }
        }
        Ok(specs)
    }

    async fn call(&self, runner: &Runner, tool: &str, arguments: Value) -> Result<Value, Error> {
        let args: Map<String, Value> = match arguments {
            Value::Object(args) => args,
            Value::Null => Map::new(),
            other => {
                let message = format!("The arguments must be a JSON object, not {other}.");
                return Err(Error::validation(message.clone()).with_field("arguments", message));
            }
        };
        // a REST key's run is bounded by its issuer's permissions only; an MCP client's by its
        // grant too
        let grant = Grant::stored(&runner.scopes.clone().unwrap_or_else(crate::scopes::all));
        let who = McpCaller { caller: runner.caller.clone(), grant };
        Catalog::call(self, None, &who, tool, args).await
    }
}
