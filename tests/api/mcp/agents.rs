//! The `agents` tools through the SDK's client (issue 21): `start_run`, `get_run`, `list_runs`
//! and `cancel_run` run `agents::AgentService` as `/api/engine` does, with `mcp:agents` from the
//! grant (`mcp:spend` to start, `mcp:write` to cancel). A run started over MCP records the
//! grant's scopes, and each tool call it makes is bounded by them as well as by its person's
//! current permissions. The model is the scripted sandbox: the input's `script` says which tool
//! each turn calls.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{TestApp, json, sql_rows};
use serde_json::Value;

use super::support::*;
use crate::agents::{step, steps};
use crate::leads::support::create as create_lead;

const PATH: &str = "/mcp/v1/agents";
const TOOLS: [&str; 4] = ["start_run", "get_run", "list_runs", "cancel_run"];
const READS: [&str; 2] = ["get_run", "list_runs"];
/// Every agents tool.
const SCOPES: &str = "mcp:use mcp:agents mcp:spend mcp:write";
/// The agents tools and the leads tools a run calls.
const RUNNER: &str = "mcp:use mcp:agents mcp:spend mcp:write mcp:contacts";
/// Reads and moves leads.
const EDITOR: &str = "leads.view,leads.edit";
const RUNS: &str = "/api/engine/runs";

/// A tenant whose user may read and move leads, 10,000 minor units in its prepaid wallet (a new
/// one is empty, and a run would be refused) and Amina's lead, made through REST: the account
/// and the lead's id.
async fn setup<S, B>(app: &TestApp<S>) -> (api_tests::Account, String)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let account = app.account(EDITOR).await;
    let lead = create_lead(app, &account.key, json!({"phone": "+255712345678", "name": "Amina"})).await;
    let mut conn = app.conn().await;
    accounts::wallet::credit(&mut conn, account.tenant, 10_000, Some("test")).await.expect("top-up");
    (account, lead["id"].as_str().expect("lead id").to_owned())
}

/// A task the sandbox model plays: each `(tool, arguments)` in turn, then `output`.
fn scripted(calls: &[(&str, Value)], output: &str) -> Value {
    let script: Vec<Value> =
        calls.iter().map(|(tool, arguments)| json!({"tool": tool, "arguments": arguments})).collect();
    let tools: Vec<&str> = calls.iter().map(|(tool, _)| *tool).collect();
    json!({"instructions": "Follow the script.", "input": {"script": script, "output": output}, "tools": tools})
}

fn uuid_of(run: &Value) -> String {
    run["run_uuid"].as_str().unwrap_or_else(|| panic!("run_uuid in {run}")).to_owned()
}

/// The lead's stage, read through REST.
async fn stage_of<S, B>(app: &TestApp<S>, key: &str, lead: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    rest_data(app, key, &format!("/api/v3/leads/{lead}")).await["stage"].clone()
}

#[actix_web::test]
async fn a_run_started_over_mcp_calls_the_leads_tools_and_is_read_and_listed() {
    let app = api_tests::spawn().await;
    let (acme, lead) = setup(&app).await;
    let server = app.listen();

    // the four tools, the reads marked as such
    let client = connect(&server, PATH, &app.mcp_connection(acme.tenant, acme.user, SCOPES).await).await;
    assert_eq!(tool_names(&client).await, sorted(&TOOLS));
    for tool in client.list_all_tools().await.expect("tools/list") {
        let hints = tool.annotations.as_ref().expect("annotations");
        let read = READS.contains(&tool.name.as_ref());
        assert_eq!((hints.read_only_hint, hints.destructive_hint), (Some(read), Some(false)), "{}", tool.name);
        if tool.name == "start_run" {
            let properties = tool.input_schema["properties"].as_object().expect("properties");
            for member in ["instructions", "input", "tools", "limits", "mode", "idempotency_key"] {
                assert!(properties.contains_key(member), "{member}: {:?}", tool.input_schema);
            }
        }
    }

    // a run that reads the lead, then moves it
    let client = connect(&server, PATH, &app.mcp_connection(acme.tenant, acme.user, RUNNER).await).await;
    let mut task = scripted(
        &[
            ("get_lead", json!({"lead": lead})),
            ("set_lead_stage", json!({"lead": "{{results.0.id}}", "stage": "contacted"})),
        ],
        "Contacted.",
    );
    task["metadata"] = json!({"ticket": "T-7"});
    let queued = ok(&client, "start_run", task).await;
    assert_eq!(
        (queued["object"].as_str(), queued["status"].as_str(), queued["model"].as_str()),
        (Some("agent_run"), Some("queued"), Some("sandbox-1")),
        "{queued}"
    );
    assert_eq!(queued["tools"], json!(["get_lead", "set_lead_stage"]));
    assert_eq!(queued["created_by"]["kind"], "mcp_connection", "{queued}");
    assert_eq!(queued["created_by"]["user_id"], acme.user.0, "{queued}");
    let run = uuid_of(&queued);
    // the run keeps the grant's scopes: what bounds its tool calls
    let recorded = sql_rows(&app.pool, &format!("SELECT scopes FROM agent_runs WHERE id = '{run}'")).await;
    assert_eq!(
        recorded[0]["scopes"],
        json!(["mcp:agents", "mcp:contacts", "mcp:spend", "mcp:use", "mcp:write"]),
        "{recorded:?}"
    );
    assert_eq!(stage_of(&app, &acme.key, &lead).await, "new", "nothing before the jobs run");

    assert!(app.run_jobs().await > 0);
    let done = ok(&client, "get_run", json!({"run_uuid": run})).await;
    assert_eq!((done["status"].as_str(), done["output"].as_str()), (Some("completed"), Some("Contacted.")), "{done}");
    assert_eq!(
        steps(&done),
        [
            step("model_turn", "sandbox-1", "completed"),
            step("tool_call", "get_lead", "completed"),
            step("model_turn", "sandbox-1", "completed"),
            step("tool_call", "set_lead_stage", "completed"),
            step("model_turn", "sandbox-1", "completed"),
        ]
    );
    assert_eq!(done["steps"][1]["output"]["id"], lead.as_str(), "{done}");
    assert_eq!(done["steps"][3]["arguments"], json!({"lead": lead, "stage": "contacted"}), "{done}");
    assert_eq!(done["steps"][3]["output"]["stage"], "contacted", "{done}");
    assert_eq!((done["usage"]["model_turns"].as_i64(), done["usage"]["tool_calls"].as_i64()), (Some(3), Some(2)));
    assert_eq!(done["created_by"]["kind"], "mcp_connection", "{done}");
    assert_eq!(stage_of(&app, &acme.key, &lead).await, "contacted", "the run moved the lead");
    // what REST answers for the run
    assert_eq!(done, rest_body(&app, &acme.key, &format!("{RUNS}/{run}")).await);
    assert_code(&refused(&client, "get_run", json!({"run_uuid": "not-a-run"})).await, "not_found");
    assert_field(&refused(&client, "get_run", json!({})).await, "run_uuid");

    // listed, newest first and without its steps, by status and by metadata
    let list = ok(&client, "list_runs", json!({})).await;
    assert_eq!((list["object"].as_str(), list["has_more"].as_bool()), (Some("list"), Some(false)), "{list}");
    let listed = list["data"].as_array().expect("data");
    assert_eq!(listed.len(), 1, "{list}");
    assert_eq!((listed[0]["run_uuid"].as_str(), listed[0]["status"].as_str()), (Some(run.as_str()), Some("completed")));
    assert!(listed[0].get("steps").is_none(), "lists leave the steps out: {list}");
    let found = ok(&client, "list_runs", json!({"metadata_key": "ticket", "metadata_value": "T-7"})).await;
    assert_eq!(found["data"][0]["run_uuid"], run.as_str(), "{found}");
    let none = ok(&client, "list_runs", json!({"status": "failed"})).await;
    assert_eq!(none["data"], json!([]), "{none}");
    assert_field(&refused(&client, "list_runs", json!({"status": "paused"})).await, "status");
    assert_eq!(list, rest_body(&app, &acme.key, RUNS).await);
}

#[actix_web::test]
async fn starting_needs_mcp_spend_and_a_run_is_bounded_by_the_grant_and_the_persons_permissions() {
    let app = api_tests::spawn().await;
    let (acme, lead) = setup(&app).await;
    let server = app.listen();
    let move_it = scripted(&[("set_lead_stage", json!({"lead": lead, "stage": "contacted"}))], "Tried.");
    let count = async || {
        sql_rows(&app.pool, &format!("SELECT id FROM agent_runs WHERE tenant_id = {}", acme.tenant.0)).await.len()
    };

    // without mcp:spend: no start_run listed, and a start refused for the missing scope
    let token = app.mcp_connection(acme.tenant, acme.user, "mcp:use mcp:agents mcp:write mcp:contacts").await;
    let unpaid = connect(&server, PATH, &token).await;
    assert_eq!(tool_names(&unpaid).await, sorted(&["get_run", "list_runs", "cancel_run"]));
    let error = refused(&unpaid, "start_run", move_it.clone()).await;
    assert_eq!(
        (error["code"].clone(), error["reason"].clone(), error["missing_scopes"].clone()),
        (json!("permission_denied"), json!("insufficient_scope"), json!(["mcp:spend"])),
        "{error}"
    );
    // reading only: the reads
    let token = app.mcp_connection(acme.tenant, acme.user, "mcp:use mcp:agents").await;
    let reader = connect(&server, PATH, &token).await;
    assert_eq!(tool_names(&reader).await, sorted(&READS));
    let error = refused(&reader, "start_run", move_it.clone()).await;
    assert_eq!(error["missing_scopes"], json!(["mcp:spend"]), "{error}");
    assert_eq!(count().await, 0, "refused starts make no run");

    // granted the agents tools but not the contacts server: the run starts, and its call to a
    // contacts tool is refused for the scopes the grant lacks, though the person may move leads
    let token = app.mcp_connection(acme.tenant, acme.user, "mcp:use mcp:agents mcp:spend").await;
    let agent_only = connect(&server, PATH, &token).await;
    let queued = ok(&agent_only, "start_run", move_it.clone()).await;
    assert_eq!(queued["tools"], json!(["set_lead_stage"]), "{queued}");
    app.run_jobs().await;
    let done = ok(&agent_only, "get_run", json!({"run_uuid": uuid_of(&queued)})).await;
    assert_eq!((done["status"].as_str(), done["output"].as_str()), (Some("completed"), Some("Tried.")), "{done}");
    assert_eq!(
        steps(&done),
        [
            step("model_turn", "sandbox-1", "completed"),
            step("tool_call", "set_lead_stage", "failed"),
            step("model_turn", "sandbox-1", "completed"),
        ]
    );
    let failed = &done["steps"][1]["error"];
    assert_eq!(
        (failed["code"].as_str(), failed["reason"].as_str()),
        (Some("permission_denied"), Some("insufficient_scope")),
        "{done}"
    );
    let message = failed["message"].as_str().unwrap_or_default();
    assert!(message.contains("mcp:contacts") && message.contains("mcp:write"), "names the missing scopes: {failed}");
    assert_eq!(stage_of(&app, &acme.key, &lead).await, "new", "the grant kept the lead as it was");

    // granted everything, but the person lost leads.edit after the start: refused as a permission
    let token = app.mcp_connection(acme.tenant, acme.user, RUNNER).await;
    let runner = connect(&server, PATH, &token).await;
    let queued = ok(&runner, "start_run", move_it).await;
    app.set_permissions(acme.user, "leads.view").await;
    app.run_jobs().await;
    let done = ok(&runner, "get_run", json!({"run_uuid": uuid_of(&queued)})).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(steps(&done)[1], step("tool_call", "set_lead_stage", "failed"), "{done}");
    assert_denied(&done["steps"][1]["error"]);
    assert_eq!(stage_of(&app, &acme.key, &lead).await, "new", "the person's permissions kept it too");
    assert_eq!(count().await, 2);
}

#[actix_web::test]
async fn a_queued_run_is_cancelled_once_a_key_answers_its_first_run_and_other_tenants_runs_are_not_found() {
    let app = api_tests::spawn().await;
    let (acme, lead) = setup(&app).await;
    let server = app.listen();
    let client = connect(&server, PATH, &app.mcp_connection(acme.tenant, acme.user, RUNNER).await).await;
    let move_it = scripted(&[("set_lead_stage", json!({"lead": lead, "stage": "contacted"}))], "Moved.");

    // cancelled while queued: it ends at once, a second cancel is a conflict, nothing ever runs
    let queued = ok(&client, "start_run", move_it.clone()).await;
    let run = uuid_of(&queued);
    let cancelled = ok(&client, "cancel_run", json!({"run_uuid": run})).await;
    assert_eq!(
        (cancelled["status"].as_str(), cancelled["error"]["code"].as_str()),
        (Some("cancelled"), Some("cancelled")),
        "{cancelled}"
    );
    assert!(cancelled["finished_at"].is_string(), "{cancelled}");
    let again = refused(&client, "cancel_run", json!({"run_uuid": run})).await;
    assert_code(&again, "conflict");
    assert!(again["message"].as_str().is_some_and(|m| m.contains("cancelled")), "names its status: {again}");
    app.run_jobs().await;
    let read = ok(&client, "get_run", json!({"run_uuid": run})).await;
    assert_eq!((read["status"].as_str(), read["steps"].clone()), (Some("cancelled"), json!([])), "{read}");
    assert_eq!(stage_of(&app, &acme.key, &lead).await, "new");
    assert_field(&refused(&client, "cancel_run", json!({})).await, "run_uuid");

    // a repeated idempotency_key answers the first run; the same key with another task is refused
    let mut keyed = move_it.clone();
    keyed["idempotency_key"] = json!("move-1");
    let first = ok(&client, "start_run", keyed.clone()).await;
    assert_ne!(uuid_of(&first), run);
    assert_eq!(ok(&client, "start_run", keyed).await, first);
    let mut other = scripted(&[("get_lead", json!({"lead": lead}))], "Read.");
    other["idempotency_key"] = json!("move-1");
    assert_field(&refused(&client, "start_run", other).await, "idempotency_key");
    let list = ok(&client, "list_runs", json!({})).await;
    let uuids: Vec<&str> =
        list["data"].as_array().expect("data").iter().filter_map(|r| r["run_uuid"].as_str()).collect();
    assert_eq!(uuids, [uuid_of(&first).as_str(), run.as_str()], "one run for the key, newest first");

    // another tenant's connection: not found, and its own list is empty
    let (globex, _) = setup(&app).await;
    let stranger = connect(&server, PATH, &app.mcp_connection(globex.tenant, globex.user, RUNNER).await).await;
    let theirs = uuid_of(&first);
    assert_code(&refused(&stranger, "get_run", json!({"run_uuid": theirs})).await, "not_found");
    assert_code(&refused(&stranger, "cancel_run", json!({"run_uuid": theirs})).await, "not_found");
    assert_eq!(ok(&stranger, "list_runs", json!({})).await["data"], json!([]));
    // the owner's run was not cancelled
    assert_eq!(ok(&client, "get_run", json!({"run_uuid": theirs})).await["status"], "queued");
}
