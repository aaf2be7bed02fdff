//! The `operations` tools through the SDK's client: `list_operations`, `describe_operation`,
//! `run_operation` and `get_operation_run` run `automations::AutomationService` as
//! `GET /operations`, `GET /operations/{name}`, `POST /operations/{name}/runs` and
//! `GET /operations/runs/{run}` do, with `operations.run` from the issuer (and each step's own
//! permission), `mcp:operations` from the grant (`mcp:write` too to run), and the tenant's
//! operations and runs only.

use actix_web::test::TestRequest;
use api_tests::{TestApp, json, sql_rows};
use serde_json::Value;

use super::support::*;

/// Runs operations whose steps make leads and move their stage.
const RUNNER: &str = "operations.run,leads.view,leads.edit";
const SCOPES: &str = "mcp:use mcp:operations mcp:write";
const READS: [&str; 3] = ["list_operations", "describe_operation", "get_operation_run"];
const PATH: &str = "/mcp/v1/operations";

/// Makes a lead, then moves it to `stage` (default `qualified`; `lost` without a reason makes
/// the second step fail).
fn qualify_lead() -> Value {
    json!({
        "name": "qualify_lead",
        "description": "Makes a lead and moves it along the pipeline.",
        "inputs": [
            {"name": "phone", "type": "phone", "description": "The customer's number."},
            {"name": "name", "type": "string", "default": "Amina Juma", "max_length": 40},
            {"name": "stage", "type": "string", "default": "qualified"}
        ],
        "steps": [
            {"id": "lead", "action": "create_lead", "with": {"phone": "{{inputs.phone}}", "name": "{{inputs.name}}"}},
            {"id": "stage", "action": "set_lead_stage", "with": {"lead": "{{steps.lead.id}}", "stage": "{{inputs.stage}}"}}
        ]
    })
}

/// A second operation, so the list has an order to keep.
fn add_contact_lead() -> Value {
    json!({
        "name": "add_contact_lead",
        "inputs": [{"name": "email", "type": "email"}],
        "steps": [{"id": "lead", "action": "create_lead", "with": {"email": "{{inputs.email}}"}}]
    })
}

async fn define<S>(app: &TestApp<S>, tenant: kernel::TenantId) {
    for definition in [qualify_lead(), add_contact_lead()] {
        let applied = app.automations.apply_operation(tenant, definition).await.expect("an operation");
        assert_eq!(applied.outcome, "created");
    }
}

/// How many runs `tenant` has.
async fn runs<S>(app: &TestApp<S>, tenant: kernel::TenantId) -> usize {
    let sql = format!("SELECT id FROM operation_runs WHERE tenant_id = {}", tenant.0);
    sql_rows(&app.pool, &sql).await.len()
}

/// The statuses of a run's steps, in order.
fn step_statuses(run: &Value) -> Vec<String> {
    run["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("steps: {run}"))
        .iter()
        .map(|s| s["status"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[actix_web::test]
async fn operations_are_listed_described_run_and_read_back_as_rest_answers_them() {
    let app = api_tests::spawn().await;
    let acme = app.account(RUNNER).await;
    define(&app, acme.tenant).await;
    let token = app.mcp_connection(acme.tenant, acme.user, SCOPES).await;
    let server = app.listen();
    let client = connect(&server, PATH, &token).await;
    let mut tools = READS.to_vec();
    tools.push("run_operation");
    assert_eq!(tool_names(&client).await, sorted(&tools));
    for tool in client.list_all_tools().await.expect("tools/list") {
        let hints = tool.annotations.as_ref().expect("annotations");
        let read = READS.contains(&tool.name.as_ref());
        assert_eq!(
            (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint),
            (Some(read), Some(false), Some(read)),
            "{}",
            tool.name
        );
        if tool.name == "run_operation" {
            let properties = tool.input_schema["properties"].as_object().expect("properties");
            for member in ["name", "input", "idempotency_key"] {
                assert!(properties.contains_key(member), "{member}: {:?}", tool.input_schema);
            }
            assert_eq!(tool.input_schema["required"], json!(["name"]));
        }
    }

    // the list and one operation: REST's `data` (the list wrapped), by name
    let list = ok(&client, "list_operations", json!({})).await;
    assert_eq!(list, json!({"operations": rest_data(&app, &acme.key, "/api/v3/operations").await}));
    let names: Vec<&str> =
        list["operations"].as_array().expect("a list").iter().filter_map(|o| o["name"].as_str()).collect();
    assert_eq!(names, ["add_contact_lead", "qualify_lead"]);
    let described = ok(&client, "describe_operation", json!({"name": "qualify_lead"})).await;
    assert_eq!(described, rest_data(&app, &acme.key, "/api/v3/operations/qualify_lead").await);
    assert_eq!(
        (described["version"].clone(), described["description"].clone()),
        (json!(1), qualify_lead()["description"].clone())
    );
    assert_eq!(
        described["input_schema"],
        json!({
            "type": "object",
            "properties": {
                "phone": {"type": "string", "format": "phone", "description": "The customer's number."},
                "name": {"type": "string", "maxLength": 40, "default": "Amina Juma"},
                "stage": {"type": "string", "maxLength": 10_000, "default": "qualified"}
            },
            "required": ["phone"],
            "additionalProperties": false
        })
    );
    assert_eq!(described["definition"]["steps"][1]["action"], "set_lead_stage", "{described}");
    assert_code(&refused(&client, "describe_operation", json!({"name": "launch_rocket"})).await, "not_found");
    assert_field(&refused(&client, "describe_operation", json!({})).await, "name");

    // a run of two lead steps, the second naming the first's lead
    let run = ok(&client, "run_operation", json!({"name": "qualify_lead", "input": {"phone": "+255712000001"}})).await;
    assert_eq!((run["status"].as_str(), run["operation"].as_str()), (Some("succeeded"), Some("qualify_lead")), "{run}");
    assert_eq!(step_statuses(&run), ["succeeded", "succeeded"]);
    assert_eq!(run["input"], json!({"phone": "+255712000001", "name": "Amina Juma", "stage": "qualified"}));
    assert_eq!(run["created_by"]["kind"], "mcp_connection", "{run}");
    let lead = run["steps"][0]["result"]["id"].as_str().unwrap_or_else(|| panic!("a lead: {run}")).to_owned();
    assert_eq!(run["steps"][1]["result"]["id"], lead.as_str(), "{run}");
    let read = rest_data(&app, &acme.key, &format!("/api/v3/leads/{lead}")).await;
    assert_eq!((read["stage"].as_str(), read["name"].as_str()), (Some("qualified"), Some("Amina Juma")), "{read}");
    let id = run["id"].as_str().expect("a run id").to_owned();
    let again = ok(&client, "get_operation_run", json!({"id": id})).await;
    assert_eq!(again, run);
    assert_eq!(again, rest_data(&app, &acme.key, &format!("/api/v3/operations/runs/{id}")).await);
    assert_code(&refused(&client, "get_operation_run", json!({"id": "not-a-run"})).await, "not_found");
    assert_code(
        &refused(&client, "get_operation_run", json!({"id": "00000000-0000-0000-0000-000000000000"})).await,
        "not_found",
    );
    assert_field(&refused(&client, "get_operation_run", json!({})).await, "id");

    // a bad input names input.<name> and makes no run
    let made = runs(&app, acme.tenant).await;
    for (input, field) in [
        (json!({"phone": "call me"}), "input.phone"),
        (json!({}), "input.phone"),
        (json!({"phone": "+255712000002", "budget": 5}), "input.budget"),
        (json!({"phone": "+255712000002", "name": "x".repeat(41)}), "input.name"),
        (json!("+255712000002"), "input"),
    ] {
        let error = refused(&client, "run_operation", json!({"name": "qualify_lead", "input": input})).await;
        assert_field(&error, field);
    }
    assert_code(&refused(&client, "run_operation", json!({"name": "launch_rocket", "input": {}})).await, "not_found");
    assert_field(&refused(&client, "run_operation", json!({"input": {"phone": "+255712000002"}})).await, "name");
    assert_eq!(runs(&app, acme.tenant).await, made, "refused inputs make no run");

    // a repeated idempotency_key answers the first run; REST's header shares the key
    let args = json!({"name": "qualify_lead", "input": {"phone": "+255712000003"}, "idempotency_key": "qualify-3"});
    let first = ok(&client, "run_operation", args.clone()).await;
    assert_eq!(ok(&client, "run_operation", args).await, first);
    let req = TestRequest::post()
        .uri("/api/v3/operations/qualify_lead/runs")
        .insert_header(("Authorization", format!("Bearer {}", acme.key)))
        .insert_header(("Idempotency-Key", "qualify-3"))
        .set_json(json!({"input": {"phone": "+255712000003"}}));
    let res = app.send(req).await;
    assert_eq!((res.status, res.data()["id"].clone()), (201, first["id"].clone()), "{}", res.body);
    let other = json!({"name": "qualify_lead", "input": {"phone": "+255712000004"}, "idempotency_key": "qualify-3"});
    assert_field(&refused(&client, "run_operation", other).await, "idempotency_key");
    assert_eq!(runs(&app, acme.tenant).await, made + 1);

    // `/mcp` offers them too
    let all = connect(&server, "/mcp", &token).await;
    assert_eq!(ok(&all, "list_operations", json!({})).await, list);
}

#[actix_web::test]
async fn a_failing_step_is_refused_with_its_error_and_the_run_and_the_lead_it_made_is_gone() {
    let app = api_tests::spawn().await;
    let acme = app.account(RUNNER).await;
    define(&app, acme.tenant).await;
    let token = app.mcp_connection(acme.tenant, acme.user, SCOPES).await;
    let server = app.listen();
    let client = connect(&server, PATH, &token).await;

    // `lost` needs a reason: the second step fails, the first one's lead is deleted
    let args = json!({"name": "qualify_lead", "input": {"phone": "+255712000009", "stage": "lost"}});
    let error = refused(&client, "run_operation", args).await;
    assert_eq!(
        (error["code"].as_str(), error["reason"].as_str()),
        (Some("validation_error"), Some("step_failed")),
        "{error}"
    );
    assert_field(&error, "steps.stage.reason");
    assert!(error["message"].as_str().is_some_and(|m| m.contains("Step stage of qualify_lead failed")), "{error}");
    let run = &error["run"];
    assert_eq!(run["status"], "compensated", "{error}");
    assert_eq!(step_statuses(run), ["compensated", "failed"]);
    assert_eq!(
        (run["error"]["step"].as_str(), run["error"]["code"].as_str()),
        (Some("stage"), Some("validation_error"))
    );
    assert_eq!(run["steps"][0]["compensation"]["action"], "delete_lead", "{run}");
    let lead = run["steps"][0]["result"]["id"].as_str().unwrap_or_else(|| panic!("a lead: {run}"));
    let res = app.get(&format!("/api/v3/leads/{lead}"), &acme.key).await;
    assert_eq!(res.status, 404, "the lead step one made is undone: {}", res.body);

    // the run is kept and reads back as the refusal carried it
    let id = run["id"].as_str().expect("a run id");
    assert_eq!(&ok(&client, "get_operation_run", json!({"id": id})).await, run);
    assert_eq!(&rest_data(&app, &acme.key, &format!("/api/v3/operations/runs/{id}")).await, run);
}

#[actix_web::test]
async fn running_needs_mcp_write_and_every_tool_operations_run() {
    let app = api_tests::spawn().await;
    let acme = app.account(RUNNER).await;
    define(&app, acme.tenant).await;
    let server = app.listen();
    let owner = connect(&server, PATH, &app.mcp_connection(acme.tenant, acme.user, SCOPES).await).await;
    let run = ok(&owner, "run_operation", json!({"name": "qualify_lead", "input": {"phone": "+255712000001"}})).await;
    let every_call = [
        ("list_operations", json!({})),
        ("describe_operation", json!({"name": "qualify_lead"})),
        ("get_operation_run", json!({"id": run["id"]})),
        ("run_operation", json!({"name": "qualify_lead", "input": {"phone": "+255712000002"}})),
    ];

    // without mcp:write: the reads only, and a run refused for the missing scope
    let reader =
        connect(&server, PATH, &app.mcp_connection(acme.tenant, acme.user, "mcp:use mcp:operations").await).await;
    assert_eq!(tool_names(&reader).await, sorted(&READS));
    for (tool, args) in every_call.clone() {
        if READS.contains(&tool) {
            ok(&reader, tool, args).await;
            continue;
        }
        let error = refused(&reader, tool, args).await;
        assert_eq!(
            (error["code"].clone(), error["reason"].clone(), error["missing_scopes"].clone()),
            (json!("permission_denied"), json!("insufficient_scope"), json!(["mcp:write"])),
            "{tool}: {error}"
        );
    }
    assert_eq!(runs(&app, acme.tenant).await, 1);

    // an issuer without operations.run (the leads permissions alone): no tool, each refused
    let clerk = app.user(acme.tenant, "leads.view,leads.edit").await;
    let clerk = connect(&server, PATH, &app.mcp_connection(acme.tenant, clerk, SCOPES).await).await;
    assert!(tool_names(&clerk).await.is_empty());
    for (tool, args) in every_call {
        assert_denied(&refused(&clerk, tool, args).await);
    }
    assert_eq!(runs(&app, acme.tenant).await, 1);
}

#[actix_web::test]
async fn another_tenants_operations_and_runs_are_not_found() {
    let app = api_tests::spawn().await;
    let acme = app.account(RUNNER).await;
    define(&app, acme.tenant).await;
    let server = app.listen();
    let owner = connect(&server, PATH, &app.mcp_connection(acme.tenant, acme.user, SCOPES).await).await;
    let run = ok(&owner, "run_operation", json!({"name": "qualify_lead", "input": {"phone": "+255712000001"}})).await;

    let other = app.account(RUNNER).await;
    let stranger = connect(&server, PATH, &app.mcp_connection(other.tenant, other.user, SCOPES).await).await;
    assert_eq!(ok(&stranger, "list_operations", json!({})).await, json!({"operations": []}));
    assert_code(&refused(&stranger, "describe_operation", json!({"name": "qualify_lead"})).await, "not_found");
    let args = json!({"name": "qualify_lead", "input": {"phone": "+255712000002"}});
    assert_code(&refused(&stranger, "run_operation", args).await, "not_found");
    assert_code(&refused(&stranger, "get_operation_run", json!({"id": run["id"]})).await, "not_found");
    assert_eq!(runs(&app, other.tenant).await, 0);
    // the owner's are untouched
    assert_eq!(ok(&owner, "get_operation_run", json!({"id": run["id"]})).await, run);
}
