//! The `operations` tools (contract: "Operations: one write operation that runs a named
//! operation defined by the workspace"): the workspace's named operations, one with the JSON
//! Schema of its input, a run, and a run read back, over `automations::AutomationService` and
//! the methods `GET /operations`, `GET /operations/{name}`, `POST /operations/{name}/runs` and
//! `GET /operations/runs/{run}` call (apps/gateway/src/v3/operations.rs). Those check
//! `operations.run` from a known, active issuer; each step of a run then needs what its own
//! REST route needs, the run acting as the connection's caller.

use automations::operations::{Operation, Run, RunBody};
use kernel::{Error, Permission, parse_id};
use serde_json::{Value, json};
use store::idempotency::Answer;

use crate::scopes::Elevation;
use crate::tool::{
    Call, Effect, Tool, answer, idempotency_key, key_refusal, list_of, object, schema_of, uuid, with_members,
};

const SERVER: &str = "operations";

/// The operations tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_operations",
            title: "List named operations",
            description: "The workspace's named operations by name (at most 100), as GET /operations does: each with its description, version, input_schema (the JSON Schema of the input run_operation takes), its definition (inputs, and steps: create_lead, set_lead_stage, write_record, create_order, send_message) and when it was created and last changed. Operations are defined by the workspace's operator, not through MCP. Answers {operations}.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::OPERATIONS_RUN),
            effect: Effect::Read,
            input: || object(&[]),
            output: || list_of("operations", schema_of::<Operation>()),
            call: |call| Box::pin(list_operations(call)),
        },
        Tool {
            name: "describe_operation",
            title: "Describe a named operation",
            description: "One named operation by its name, as GET /operations/{name} does: its description, version, definition and input_schema, the JSON Schema of the input run_operation takes (its properties, which are required, their types, bounds and defaults; no other member is accepted). A name the workspace does not define is not found.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::OPERATIONS_RUN),
            effect: Effect::Read,
            input: || object(&[("name", name(), true)]),
            output: schema_of::<Operation>,
            call: |call| Box::pin(describe_operation(call)),
        },
        Tool {
            name: "run_operation",
            title: "Run a named operation",
            description: "Runs the named operation name with input (an object fitting its input_schema from describe_operation), as POST /operations/{name}/runs does: the input is checked first (a validation_error naming input.<name> for each problem, and no run is made), then the steps run in order as this connection, each needing its own route's permission. When every step succeeds, answers the run: its id, status succeeded, input, and each step with its result. When a step fails, the steps already done are undone in reverse and the call is refused with that step's error (its code, field errors under steps.<step>.<field>, reason step_failed) carrying the run (status compensated, or failed when an undo failed too) under run. A repeated idempotency_key with the same input answers the first run (its outcome, success or failure) for 24 hours. Read a run again with get_operation_run.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::OPERATIONS_RUN),
            effect: Effect::Create,
            input: || {
                with_members(
                    schema_of::<RunBody>(),
                    &[("name", name(), true), ("idempotency_key", idempotency_key(), false)],
                )
            },
            output: schema_of::<Run>,
            call: |call| Box::pin(run_operation(call)),
        },
        Tool {
            name: "get_operation_run",
            title: "Get an operation's run",
            description: "One run of a named operation by its id (a UUID, from run_operation's answer or its refusal's run), as GET /operations/runs/{run} does: the operation and version it followed, its status (running, succeeded, compensated, failed), its input, each step with its status, timing, result or error and compensation, the error that stopped it, who ran it (created_by) and its duration. Another workspace's run is not found.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::OPERATIONS_RUN),
            effect: Effect::Read,
            input: || object(&[("id", uuid("The run's id."), true)]),
            output: schema_of::<Run>,
            call: |call| Box::pin(get_operation_run(call)),
        },
    ]
}

/// The operation's name: the REST path's `{name}`.
fn name() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 64,
           "description": "The operation's name, as list_operations shows it (lowercase letters, digits and underscores)."})
}

async fn list_operations(call: Call) -> Result<Value, Error> {
    // REST's `data` is the list; structured content is an object, so it is wrapped
    answer(json!({"operations": call.domains.automations.operations(&call.caller).await?}))
}

async fn describe_operation(mut call: Call) -> Result<Value, Error> {
    let name = call.take_text("name")?;
    answer(call.domains.automations.operation(&call.caller, &name).await?)
}

async fn run_operation(mut call: Call) -> Result<Value, Error> {
    let name = call.take_text("name")?;
    let key = call.take_idempotency_key()?;
    let body: RunBody = call.body()?;
    // a failed step is the refusal itself, carrying the run as its `run` detail
    match call.domains.automations.run_operation(&call.caller, &name, body, key).await.map_err(key_refusal)? {
        Answer::Done(run) => answer(run),
        Answer::Replay(first) => Ok(first),
    }
}

async fn get_operation_run(mut call: Call) -> Result<Value, Error> {
    // a malformed id names nothing, as the route reads its path
    let id = parse_id(&call.take_path("id")?, "Run")?;
    answer(call.domains.automations.operation_run(&call.caller, id).await?)
}
