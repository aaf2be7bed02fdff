//! Agent tasks under `/api/engine` (issue 21): runs that reason with a language model (here a
//! local fake of the chat-completions API that asks for tool calls) and the workspace's own
//! MCP tools, executed by jobs, observable step by step, cancellable, limited and billed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Resp, TestApp, json, spawn, spawn_with_agents};
use gateway::config::{AgentExecutor, AgentsSetup};
use serde_json::Value;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers};

use crate::leads::support::{create as create_lead, lead_path};

const TASKS: &str = "/api/engine/tasks";
const RUNS: &str = "/api/engine/runs";
/// Reads and moves leads.
const EDITOR: &str = "leads.view,leads.edit";

/// A fake chat-completions API: `answer` reads each request's body and writes the assistant
/// message; the `delay_at`-th request (0-based) answers after `delay`.
#[derive(Clone)]
struct FakeModel {
    answer: fn(&Value) -> Value,
    delay_at: Option<(usize, Duration)>,
    requests: Arc<AtomicUsize>,
}

impl Respond for FakeModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let n = self.requests.fetch_add(1, Ordering::SeqCst);
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let message = (self.answer)(&body);
        let template = ResponseTemplate::new(200).set_body_json(json!({
            "id": format!("chatcmpl-{n}"),
            "object": "chat.completion",
            "model": "fake-1",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
        }));
        match self.delay_at {
            Some((at, delay)) if at == n => template.set_delay(delay),
            _ => template,
        }
    }
}

fn tool_call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}]})
}

fn text(content: &str) -> Value {
    json!({"role": "assistant", "content": content})
}

/// The tool answers in a request, in order, read as JSON.
fn tool_answers(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap_or_default()).unwrap_or_default())
        .collect()
}

/// Finds Amina's lead, moves it to `qualified`, then says what it did.
fn qualify(body: &Value) -> Value {
    let answers = tool_answers(body);
    match answers.len() {
        0 => tool_call("call_find", "find_leads", json!({"q": "Amina"})),
        1 => {
            let id = answers[0]["items"][0]["id"].as_str().unwrap_or("no-lead").to_owned();
            tool_call("call_stage", "set_lead_stage", json!({"lead": id, "stage": "qualified"}))
        }
        _ => text(&format!("Done: {}", answers[1].get("error").map_or("qualified", |_| "refused"))),
    }
}

async fn fake_model(
    answer: fn(&Value) -> Value,
    delay_at: Option<(usize, Duration)>,
) -> (MockServer, Arc<AtomicUsize>) {
    let server = MockServer::start().await;
    let requests = Arc::new(AtomicUsize::new(0));
    Mock::given(matchers::method("POST"))
        .and(matchers::path("/v1/chat/completions"))
        .and(matchers::header("authorization", "Bearer test-model-key"))
        .respond_with(FakeModel { answer, delay_at, requests: requests.clone() })
        .mount(&server)
        .await;
    (server, requests)
}

/// Agent runs asking the fake at `server`, priced by the default rate card.
fn openai(server: &MockServer) -> AgentsSetup {
    AgentsSetup {
        executor: AgentExecutor::OpenAi(providers::OpenAiConfig {
            base_url: format!("{}/v1", server.uri()),
            api_key: "test-model-key".into(),
            model: "fake-1".into(),
            timeout: Duration::from_secs(10),
        }),
        config: agents::AgentsConfig { sync_wait: Duration::from_secs(10), ..agents::AgentsConfig::default() },
    }
}

/// A tenant with `permissions`, `balance_minor` in its wallet and Amina's lead: its key and
/// the lead's id.
async fn setup<S, B>(app: &TestApp<S>, permissions: &str, balance_minor: i64) -> (api_tests::Account, String)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let account = app.account(&format!("{permissions},leads.edit")).await;
    let lead = create_lead(app, &account.key, json!({"phone": "+255712345678", "name": "Amina"})).await;
    if balance_minor > 0 {
        let mut conn = app.conn().await;
        accounts::wallet::credit(&mut conn, account.tenant, balance_minor, Some("test")).await.expect("top-up");
    }
    // the key's issuer keeps only `permissions` (the lead above was made with leads.edit)
    app.set_permissions(account.user, permissions).await;
    let id = lead["id"].as_str().expect("lead id").to_owned();
    (account, id)
}

fn task(tools: &[&str]) -> Value {
    json!({"instructions": "Qualify Amina's lead.", "input": "Amina called back and wants a quote.", "tools": tools})
}

async fn run_of<S, B>(app: &TestApp<S>, key: &str, run: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("{RUNS}/{run}"), key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.body
}

/// Each step's type, name and status.
pub(crate) fn steps(run: &Value) -> Vec<(String, String, String)> {
    run["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("steps in {run}"))
        .iter()
        .map(|s| {
            let text = |k: &str| s[k].as_str().unwrap_or_default().to_owned();
            (text("type"), text("name"), text("status"))
        })
        .collect()
}

pub(crate) fn step(kind: &str, name: &str, status: &str) -> (String, String, String) {
    (kind.to_owned(), name.to_owned(), status.to_owned())
}

fn uuid_of(res: &Resp) -> String {
    res.body["run_uuid"].as_str().unwrap_or_else(|| panic!("run_uuid in {}", res.body)).to_owned()
}

#[actix_web::test]
async fn a_run_looks_up_a_lead_moves_its_stage_and_records_every_step() {
    let (model, requests) = fake_model(qualify, None).await;
    let app = spawn_with_agents(openai(&model)).await;
    let (acme, lead) = setup(&app, EDITOR, 10_000).await;

    let res = app
        .post(
            TASKS,
            &acme.key,
            json!({
        "instructions": "Qualify Amina's lead.", "input": {"customer": "Amina"},
        "tools": ["find_leads", "set_lead_stage"], "metadata": {"ticket": "T-1"}}),
        )
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    assert_eq!((res.body["object"].as_str(), res.body["status"].as_str()), (Some("agent_run"), Some("queued")));
    assert_eq!(res.body["model"], "fake-1");
    assert_eq!(res.body["limits"], json!({"max_steps": 20, "max_seconds": 300, "max_spend_minor": null}));
    let run = uuid_of(&res);
    assert!(app.run_jobs().await > 0);

    let done = run_of(&app, &acme.key, &run).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["output"], "Done: qualified");
    assert_eq!(
        steps(&done),
        [
            step("model_turn", "fake-1", "completed"),
            step("tool_call", "find_leads", "completed"),
            step("model_turn", "fake-1", "completed"),
            step("tool_call", "set_lead_stage", "completed"),
            step("model_turn", "fake-1", "completed"),
        ]
    );
    let call = &done["steps"][3];
    assert_eq!((&call["call_id"], &call["arguments"]["stage"]), (&json!("call_stage"), &json!("qualified")));
    assert_eq!(call["output"]["id"], lead.as_str(), "{call}");
    assert!(call["duration_ms"].is_i64() && done["steps"][0]["finished_at"].is_string());
    // three turns of 1,000 in and 100 out at 20,000 and 80,000 a million: 28 each, 1 a call
    assert_eq!(
        done["usage"],
        json!({"input_tokens": 3000, "output_tokens": 300, "model_turns": 3, "tool_calls": 2,
        "cost_minor": 86, "cost": "0.86", "currency": "TZS"}),
        "{done}"
    );
    assert_eq!(requests.load(Ordering::SeqCst), 3, "one request per turn");

    // the effect is visible through REST, and the wallet paid for it
    let moved = app.get(&lead_path(&lead), &acme.key).await;
    assert_eq!(moved.data()["stage"], "qualified", "{}", moved.body);
    let balance = app.get("/api/v3/balance", &acme.key).await;
    assert_eq!(balance.data()["balance_minor"], 10_000 - 86, "{}", balance.body);

    // the model was told the instructions, the input and the two tools, and saw each answer
    let sent: Vec<Value> = model
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap_or_default())
        .collect();
    assert_eq!(sent[0]["messages"][0], json!({"role": "system", "content": "Qualify Amina's lead."}));
    assert_eq!(sent[0]["messages"][1], json!({"role": "user", "content": "{\"customer\":\"Amina\"}"}));
    let tools: Vec<&str> =
        sent[0]["tools"].as_array().expect("tools").iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert_eq!(tools, ["find_leads", "set_lead_stage"]);
    assert_eq!(sent[2]["messages"].as_array().expect("messages").len(), 6, "system, user, and two turns with answers");

    // the run is listed, newest first, and its end is a business event
    let list = app.get(&format!("{RUNS}?metadata_key=ticket&metadata_value=T-1"), &acme.key).await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(
        (list.body["object"].as_str(), list.body["data"][0]["run_uuid"].as_str()),
        (Some("list"), Some(run.as_str()))
    );
    assert!(list.body["data"][0].get("steps").is_none(), "lists leave the steps out");
    let events = api_tests::sql_rows(
        &app.pool,
        &format!("SELECT name, payload FROM events WHERE tenant_id = {} AND name LIKE 'run.%'", acme.tenant.0),
    )
    .await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        (events[0]["name"].as_str(), events[0]["payload"]["run_uuid"].as_str()),
        (Some("run.completed"), Some(run.as_str()))
    );
    assert_eq!(events[0]["payload"]["metadata"], json!({"ticket": "T-1"}));
}

#[actix_web::test]
async fn a_tool_the_issuer_may_not_use_is_a_failed_step_the_model_reads() {
    let (model, _) = fake_model(qualify, None).await;
    let app = spawn_with_agents(openai(&model)).await;
    let (viewer, lead) = setup(&app, "leads.view", 10_000).await;

    let res = app.post(TASKS, &viewer.key, task(&["contacts"])).await;
    assert_eq!(res.status, 202, "{}", res.body);
    assert!(
        res.body["tools"].as_array().expect("tools").contains(&json!("set_lead_stage")),
        "a server selects its tools"
    );
    app.run_jobs().await;
    let done = run_of(&app, &viewer.key, &uuid_of(&res)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["output"], "Done: refused");
    let refused = &done["steps"][3];
    assert_eq!((refused["name"].as_str(), refused["status"].as_str()), (Some("set_lead_stage"), Some("failed")));
    assert_eq!(refused["error"]["code"], "permission_denied", "{refused}");
    // the model read the refusal as the call's answer
    let last: Value =
        serde_json::from_slice(&model.received_requests().await.expect("requests")[2].body).expect("JSON");
    assert!(last["messages"][5]["content"].as_str().unwrap_or_default().contains("permission_denied"), "{last}");
    assert_eq!(app.get(&lead_path(&lead), &viewer.key).await.data()["stage"], "new", "nothing moved");
}

/// Always asks for another lookup: only a limit ends the run.
fn forever(body: &Value) -> Value {
    tool_call(&format!("call_{}", tool_answers(body).len()), "find_leads", json!({"q": "Amina"}))
}

#[actix_web::test]
async fn a_run_past_a_limit_ends_failed_with_the_limit_as_its_reason() {
    let (model, _) = fake_model(forever, Some((0, Duration::from_millis(1_500)))).await;
    let app = spawn_with_agents(openai(&model)).await;
    let (acme, _) = setup(&app, EDITOR, 10_000).await;
    let submit = async |limits: Value| {
        let mut body = task(&["find_leads"]);
        body["limits"] = limits;
        let res = app.post(TASKS, &acme.key, body).await;
        assert_eq!(res.status, 202, "{}", res.body);
        app.run_jobs().await;
        run_of(&app, &acme.key, &uuid_of(&res)).await
    };

    // the first turn takes 1.5 s against a limit of 1 s
    let slow = submit(json!({"max_seconds": 1})).await;
    assert_eq!(
        (slow["status"].as_str(), slow["error"]["code"].as_str()),
        (Some("failed"), Some("time_limit")),
        "{slow}"
    );
    assert_eq!(steps(&slow), [step("model_turn", "fake-1", "failed")]);

    let steps_limited = submit(json!({"max_steps": 3})).await;
    assert_eq!(steps_limited["error"]["code"], "step_limit", "{steps_limited}");
    assert_eq!(steps_limited["steps"].as_array().map(Vec::len), Some(3));

    // a turn costs 28: past 50 after the second
    let spent = submit(json!({"max_spend_minor": 50})).await;
    assert_eq!(spent["error"]["code"], "spend_limit", "{spent}");
    assert_eq!(spent["usage"]["cost_minor"], 57, "two turns and a call, then no more");

    let refused =
        app.post(TASKS, &acme.key, json!({"instructions": "x", "limits": {"max_steps": 101, "max_seconds": 0}})).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(refused.body["error"]["code"], "validation_error");
    for member in ["limits.max_steps", "limits.max_seconds"] {
        assert!(refused.body["errors"].get(member).is_some(), "{member}: {}", refused.body);
    }
}

#[actix_web::test]
async fn a_run_cancelled_mid_turn_records_the_turn_and_starts_nothing_after_it() {
    let (model, _) = fake_model(qualify, Some((1, Duration::from_millis(1_500)))).await;
    let app = spawn_with_agents(openai(&model)).await;
    let (acme, lead) = setup(&app, EDITOR, 10_000).await;
    let res = app.post(TASKS, &acme.key, task(&["find_leads", "set_lead_stage"])).await;
    let run = uuid_of(&res);

    // the second turn (the one asking to move the lead) is slow; cancel while it runs
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(700)).await;
        app.post(&format!("{RUNS}/{run}/cancel"), &acme.key, json!({})).await
    };
    let (_, cancelled) = tokio::join!(app.run_jobs(), cancel);
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    assert_eq!(cancelled.body["status"], "cancelled");

    let done = run_of(&app, &acme.key, &run).await;
    assert_eq!(done["status"], "cancelled", "{done}");
    assert_eq!(
        steps(&done),
        [
            step("model_turn", "fake-1", "completed"),
            step("tool_call", "find_leads", "completed"),
            step("model_turn", "fake-1", "completed"),
        ],
        "the turn under way was recorded; the call it asked for never started"
    );
    assert_eq!(done["usage"]["model_turns"], 2, "and charged");
    assert_eq!(app.get(&lead_path(&lead), &acme.key).await.data()["stage"], "new");
    let again = app.post(&format!("{RUNS}/{run}/cancel"), &acme.key, json!({})).await;
    assert_eq!(again.status, 409, "{}", again.body);
    assert_eq!(again.body["error"]["code"], "conflict");
}

#[actix_web::test]
async fn a_submit_is_idempotent_refused_when_the_wallet_cannot_pay_and_checked_whole() {
    let app = spawn().await;
    let (acme, _) = setup(&app, EDITOR, 10_000).await;
    let send = async |key: &str, body: Value| {
        let req = actix_web::test::TestRequest::post()
            .uri(TASKS)
            .insert_header(("Authorization", format!("Bearer {}", acme.key)))
            .insert_header(("Idempotency-Key", key.to_owned()))
            .set_json(body);
        app.send(req).await
    };
    let first = send("task-1", task(&["find_leads"])).await;
    assert_eq!(first.status, 202, "{}", first.body);
    let again = send("task-1", task(&["find_leads"])).await;
    assert_eq!((again.status, again.header("x-idempotent-replay")), (202, Some("1")));
    assert_eq!(again.body["run_uuid"], first.body["run_uuid"]);
    let other = send("task-1", task(&["get_lead"])).await;
    assert_eq!(other.status, 422, "{}", other.body);
    let runs = app.get(RUNS, &acme.key).await;
    assert_eq!(runs.body["data"].as_array().map(Vec::len), Some(1), "one run for the key");

    // the sandbox model, with no script, says so and completes
    app.run_jobs().await;
    let done = run_of(&app, &acme.key, &uuid_of(&first)).await;
    assert_eq!((done["status"].as_str(), done["model"].as_str()), (Some("completed"), Some("sandbox-1")), "{done}");
    assert!(done["output"].as_str().unwrap_or_default().contains("script"), "{done}");

    // a prepaid wallet below the floor: 402, and no run
    let (broke, _) = setup(&app, EDITOR, 0).await;
    let refused = app.post(TASKS, &broke.key, task(&[])).await;
    assert_eq!(refused.status, 402, "{}", refused.body);
    assert_eq!(
        (refused.body["code"].as_str(), refused.body["error"]["reason"].as_str()),
        (Some("quota_exceeded"), Some("insufficient_balance"))
    );
    assert_eq!(app.get(RUNS, &broke.key).await.body["data"], json!([]));

    let bad = app
        .post(
            TASKS,
            &acme.key,
            json!({"instructions": "", "tools": ["nothing_like_it", "agents"],
        "input": 3, "metadata": {"n": 1}, "mode": "later"}),
        )
        .await;
    assert_eq!(bad.status, 422, "{}", bad.body);
    let bad = app
        .post(
            TASKS,
            &acme.key,
            json!({"instructions": "", "tools": ["nothing_like_it", "agents"],
        "input": 3, "metadata": {"n": 1}}),
        )
        .await;
    for member in ["instructions", "tools.0", "tools.1", "input", "metadata.n"] {
        assert!(bad.body["errors"].get(member).is_some(), "{member}: {}", bad.body);
    }
}

#[actix_web::test]
async fn runs_are_their_tenants_own() {
    let app = spawn().await;
    let (acme, _) = setup(&app, EDITOR, 10_000).await;
    let (globex, _) = setup(&app, EDITOR, 10_000).await;
    let res = app.post(TASKS, &acme.key, task(&[])).await;
    let run = uuid_of(&res);
    for path in [format!("{RUNS}/{run}"), format!("{RUNS}/{run}/events")] {
        let res = app.get(&path, &globex.key).await;
        assert_eq!(res.status, 404, "{path}: {}", res.body);
        assert_eq!(res.body["error"]["code"], "not_found");
    }
    for path in [format!("{RUNS}/{run}/cancel"), format!("{RUNS}/{run}/approval")] {
        let res = app.post(&path, &globex.key, json!({"approve": true})).await;
        assert_eq!(res.status, 404, "{path}: {}", res.body);
    }
    assert_eq!(app.get(RUNS, &globex.key).await.body["data"], json!([]));
    assert_eq!(app.get(&format!("{RUNS}/not-a-uuid"), &acme.key).await.status, 404);
    assert_eq!(app.get(&format!("{RUNS}/{run}"), &acme.key).await.status, 200);
    let unknown = app.get(&format!("{RUNS}?status=paused"), &acme.key).await;
    assert_eq!(unknown.status, 422, "{}", unknown.body);
    // an empty `before` is no run_uuid either, and a step number is a number
    assert_eq!(app.get(&format!("{RUNS}?before="), &acme.key).await.status, 422);
    let req = actix_web::test::TestRequest::get()
        .uri(&format!("{RUNS}/{run}/events"))
        .insert_header(("Authorization", format!("Bearer {}", acme.key)))
        .insert_header(("Last-Event-ID", "2147483648"));
    let res = app.send(req).await;
    assert_eq!((res.status, &res.body["error"]["code"]), (422, &json!("validation_error")), "{}", res.body);
}

/// Moves the lead it is given, with no lookup.
fn move_lead(body: &Value) -> Value {
    match tool_answers(body).len() {
        0 => {
            let input: Value =
                serde_json::from_str(body["messages"][1]["content"].as_str().unwrap_or_default()).unwrap_or_default();
            tool_call("call_move", "set_lead_stage", json!({"lead": input["lead"], "stage": "contacted"}))
        }
        _ => text("Moved."),
    }
}

#[actix_web::test]
async fn a_call_that_needs_approval_waits_for_a_person_and_sync_mode_answers_the_run() {
    let (model, _) = fake_model(move_lead, None).await;
    let app = spawn_with_agents(openai(&model)).await;
    let (acme, lead) = setup(&app, EDITOR, 10_000).await;

    let body = json!({"instructions": "Move it.", "input": {"lead": lead}, "tools": ["set_lead_stage"],
        "require_approval": ["set_lead_stage"], "mode": "sync"});
    let work = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        app.run_jobs().await
    };
    let (res, _) = tokio::join!(app.post(TASKS, &acme.key, body), work);
    assert_eq!(res.status, 200, "sync answers 200: {}", res.body);
    assert_eq!(res.body["status"], "requires_action", "{}", res.body);
    let action = &res.body["required_action"];
    assert_eq!((action["type"].as_str(), action["tool"].as_str()), (Some("approve_tool_call"), Some("set_lead_stage")));
    assert_eq!(action["arguments"]["stage"], "contacted");
    assert_eq!(app.get(&lead_path(&lead), &acme.key).await.data()["stage"], "new", "not before the approval");
    let run = uuid_of(&res);

    // a person takes ten minutes, twice the run's time limit: waiting does not count
    app.clock.advance(time::Duration::minutes(10));
    let approved = app.post(&format!("{RUNS}/{run}/approval"), &acme.key, json!({"approve": true})).await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    app.run_jobs().await;
    let done = run_of(&app, &acme.key, &run).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(steps(&done)[1], step("tool_call", "set_lead_stage", "completed"));
    assert_eq!(app.get(&lead_path(&lead), &acme.key).await.data()["stage"], "contacted");
    let late = app.post(&format!("{RUNS}/{run}/approval"), &acme.key, json!({"approve": true})).await;
    assert_eq!(late.status, 409, "{}", late.body);

    // unanswered, the next one expires after a day
    let res = app
        .post(
            TASKS,
            &acme.key,
            json!({"instructions": "Move it.", "input": {"lead": lead},
        "tools": ["set_lead_stage"], "require_approval": ["set_lead_stage"]}),
        )
        .await;
    app.run_jobs().await;
    let run = uuid_of(&res);
    assert_eq!(run_of(&app, &acme.key, &run).await["status"], "requires_action");
    app.advance(time::Duration::hours(25)).await;
    let expired = run_of(&app, &acme.key, &run).await;
    assert_eq!((expired["status"].as_str(), expired["error"]["code"].as_str()), (Some("expired"), Some("expired")));
}

#[actix_web::test]
async fn the_events_stream_tells_each_step_and_the_end() {
    let app = spawn().await;
    let (acme, lead) = setup(&app, EDITOR, 10_000).await;
    // the sandbox model follows the script in the input
    let input = json!({"script": [
        {"tool": "get_lead", "arguments": {"lead": lead}},
        {"tool": "set_lead_stage", "arguments": {"lead": "{{results.0.id}}", "stage": "contacted"}}
    ], "output": "Contacted."});
    let res = app
        .post(
            TASKS,
            &acme.key,
            json!({"instructions": "Follow the script.", "input": input,
        "tools": ["get_lead", "set_lead_stage"]}),
        )
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    let run = uuid_of(&res);
    app.run_jobs().await;
    assert_eq!(app.get(&lead_path(&lead), &acme.key).await.data()["stage"], "contacted");

    let server = app.listen();
    let client = reqwest::Client::new();
    let url = format!("{}{RUNS}/{run}/events", server.url);
    let res = client.get(&url).bearer_auth(&acme.key).send().await.expect("events");
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let stream =
        tokio::time::timeout(Duration::from_secs(10), res.text()).await.expect("the stream ends").expect("text");
    let events: Vec<(&str, Value)> = stream
        .split("\n\n")
        .filter_map(|frame| {
            let event = frame.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = frame.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((event, serde_json::from_str(data).ok()?))
        })
        .collect();
    let names: Vec<&str> = events.iter().map(|(e, _)| *e).collect();
    assert_eq!(names, ["step", "step", "step", "step", "step", "run"], "{stream}");
    assert_eq!(events[3].1["name"], "set_lead_stage");
    assert_eq!(
        (events[5].1["status"].as_str(), events[5].1["output"].as_str()),
        (Some("completed"), Some("Contacted."))
    );

    // resumed after step 3
    let res = client.get(&url).bearer_auth(&acme.key).header("Last-Event-ID", "3").send().await.expect("events");
    let stream = res.text().await.expect("text");
    assert_eq!(stream.matches("event: step").count(), 2, "{stream}");
}

/// The process running a run is killed with SIGKILL during a model turn; another picks the run
/// up once the job's lease ends: the turn that was under way is `interrupted` (not repeated as
/// itself; a new turn is asked), the call already made is not made again, and the run ends.
#[tokio::test]
async fn a_run_killed_mid_turn_resumes_in_another_process_without_repeating_a_step() {
    use crate::process::{Gateway, gateway_bin};

    let (model, requests) = fake_model(qualify, Some((1, Duration::from_secs(30)))).await;
    let app = spawn().await;
    let (acme, lead) = setup(&app, EDITOR, 10_000).await;
    let base_url = format!("{}/v1", model.uri());
    let settings = [
        ("SVC_AGENT_EXECUTOR", "openai"),
        ("SVC_AGENT_BASE_URL", base_url.as_str()),
        ("SVC_AGENT_API_KEY", "test-model-key"),
        ("SVC_AGENT_MODEL", "fake-1"),
        ("SVC_JOB_LEASE_SECONDS", "5"),
    ];
    let first = Gateway::start(&gateway_bin(), app.db.url(), 93, &settings).await;
    let client = reqwest::Client::new();
    let res = client
        .post(format!("{}{TASKS}", first.url))
        .bearer_auth(&acme.key)
        .json(&task(&["find_leads", "set_lead_stage"]))
        .send()
        .await
        .expect("submit");
    assert_eq!(res.status().as_u16(), 202);
    let run = res.json::<Value>().await.expect("JSON")["run_uuid"].as_str().expect("run_uuid").to_owned();

    // the second turn hangs at the model: wait for it to be under way, then kill the process
    let under_way =
        format!("SELECT seq FROM agent_steps WHERE tenant_id = {} AND seq = 3 AND status = 'running'", acme.tenant.0);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while api_tests::sql_rows(&app.pool, &under_way).await.is_empty() {
        assert!(std::time::Instant::now() < deadline, "the second turn never started; log:\n{}", first.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    first.kill().await;

    let second = Gateway::start(&gateway_bin(), app.db.url(), 94, &settings).await;
    // watched in the database, not through the API (whose rate limit a tight poll would meet)
    let ended = format!(
        "SELECT status FROM agent_runs WHERE tenant_id = {} AND status NOT IN ('queued', 'running')",
        acme.tenant.0
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while api_tests::sql_rows(&app.pool, &ended).await.is_empty() {
        assert!(std::time::Instant::now() < deadline, "the run never ended; log:\n{}", second.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let res = client.get(format!("{}{RUNS}/{run}", second.url)).bearer_auth(&acme.key).send().await;
    let done: Value = res.expect("read").json().await.expect("JSON");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        steps(&done),
        [
            step("model_turn", "fake-1", "completed"),
            step("tool_call", "find_leads", "completed"),
            step("model_turn", "fake-1", "interrupted"),
            step("model_turn", "fake-1", "completed"),
            step("tool_call", "set_lead_stage", "completed"),
            step("model_turn", "fake-1", "completed"),
        ]
    );
    assert_eq!(done["steps"][2]["error"]["code"], "interrupted");
    assert_eq!(requests.load(Ordering::SeqCst), 4, "the lost turn asked again once, nothing else twice");
    assert_eq!(app.get(&lead_path(&lead), &acme.key).await.data()["stage"], "qualified");
}
