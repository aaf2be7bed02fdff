//! Named operations (contract: Automations, agent tasks, operations; issue 20): definitions
//! applied by the operator, listed and described with their input schema, run through
//! `POST /operations/{name}/runs` as a compensating transaction (a failing step undoes the
//! finished ones in reverse), every run recorded and readable, `Idempotency-Key` answered by
//! the first run, an interrupted run undone by recovery, and scheduled runs.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Account, Resp, TestApp, json, spawn};
use automations::schedules::Target;
use serde_json::Value;
use time::Duration;

const OPERATIONS: &str = "/api/v3/operations";
/// Runs operations whose steps write leads and records.
const RUNNER: &str = "operations.run,leads.view,leads.edit,data.view,data.records.edit";

/// The operation the tests run: a lead made from the input, a visit recorded in a data table,
/// then the lead's stage set (`lost` without a reason makes this third step fail).
fn welcome(table: &str) -> Value {
    json!({
        "name": "welcome_customer",
        "description": "A new customer: a lead, a visit recorded, then its stage.",
        "inputs": [
            {"name": "phone", "type": "phone", "description": "The customer's number."},
            {"name": "name", "type": "string", "max_length": 120},
            {"name": "stage", "type": "string", "default": "qualified"},
            {"name": "reason", "type": "string", "required": false}
        ],
        "steps": [
            {"id": "lead", "action": "create_lead", "with": {"phone": "{{inputs.phone}}", "name": "{{inputs.name}}"}},
            {"id": "visit", "action": "write_record",
             "with": {"table": table, "data": {"name": "Visit by {{inputs.name}}", "phone": "{{steps.lead.phone}}"}}},
            {"id": "stage", "action": "set_lead_stage",
             "with": {"lead": "{{steps.lead.id}}", "stage": "{{inputs.stage}}", "reason": "{{inputs.reason}}"}}
        ]
    })
}

/// An account with `permissions`, a `visits` table and the operation applied: the table's id.
async fn setup<S, B>(app: &TestApp<S>, permissions: &str) -> (Account, String)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let account = app.account(permissions).await;
    let tables = json!({
        "group": {"slug": "visits", "name": "Visits"},
        "tables": [{"slug": "visits", "name": "Visits", "columns": [
            {"key": "name", "type": "text", "required": true}, {"key": "phone", "type": "phone"}]}]
    });
    let applied = app.data.apply(account.tenant, tables).await.expect("the table");
    let table = applied.tables[0].id.to_string();
    let made = app.automations.apply_operation(account.tenant, welcome(&table)).await.expect("applied");
    assert_eq!((made.version, made.outcome), (1, "created"));
    (account, table)
}

fn runs_path(name: &str) -> String {
    format!("{OPERATIONS}/{name}/runs")
}

async fn run<S, B>(app: &TestApp<S>, key: &str, input: Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.post(&runs_path("welcome_customer"), key, json!({"input": input})).await
}

/// Each step's id and status.
fn step_statuses(run: &Value) -> Vec<(String, String)> {
    run["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("steps: {run}"))
        .iter()
        .map(|s| (s["id"].as_str().unwrap_or_default().to_owned(), s["status"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
}

async fn runs_of<S, B>(app: &TestApp<S>, account: &Account) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let rows = api_tests::sql_rows(
        &app.pool,
        &format!("SELECT count(*) AS n FROM operation_runs WHERE tenant_id = {}", account.tenant.0),
    )
    .await;
    rows[0]["n"].as_i64().unwrap_or_default()
}

#[actix_web::test]
async fn an_operation_is_listed_described_and_run_step_by_step() {
    let app = spawn().await;
    let (acme, table) = setup(&app, RUNNER).await;

    let list = app.get(OPERATIONS, &acme.key).await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(list.body["status"], "success");
    assert_eq!(list.data()[0]["name"], "welcome_customer");
    let described = app.get(&format!("{OPERATIONS}/welcome_customer"), &acme.key).await;
    assert_eq!(described.status, 200, "{}", described.body);
    let schema = &described.data()["input_schema"];
    assert_eq!(schema["required"], json!(["phone", "name"]), "{schema}");
    assert_eq!(schema["properties"]["stage"]["default"], "qualified");
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(described.data()["version"], 1);
    assert_eq!(app.get(&format!("{OPERATIONS}/nothing"), &acme.key).await.status, 404);

    let res = run(&app, &acme.key, json!({"phone": "0712 345 678", "name": "Amina"})).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let ran = res.data().clone();
    assert_eq!((ran["status"].as_str(), ran["operation"].as_str()), (Some("succeeded"), Some("welcome_customer")));
    assert_eq!(step_statuses(&ran), pairs(&[("lead", "succeeded"), ("visit", "succeeded"), ("stage", "succeeded")]));
    assert_eq!(ran["input"], json!({"phone": "+255712345678", "name": "Amina", "stage": "qualified", "reason": null}));
    assert_eq!(ran["created_by"]["kind"], "api_key");
    assert!(ran["duration_ms"].as_i64().is_some() && ran["finished_at"].is_string(), "{ran}");
    assert!(ran["error"].is_null(), "{ran}");

    // what the steps did, through their own routes
    let lead_id = ran["steps"][0]["result"]["id"].as_str().expect("a lead id").to_owned();
    assert_eq!(ran["steps"][0]["result"]["created"], true);
    assert_eq!(ran["steps"][0]["compensation"], json!({"action": "delete_lead", "lead": lead_id}));
    let lead = app.get(&format!("/api/v3/leads/{lead_id}"), &acme.key).await;
    assert_eq!(lead.status, 200, "{}", lead.body);
    assert_eq!(
        (lead.data()["stage"].as_str(), lead.data()["phone"].as_str()),
        (Some("qualified"), Some("+255712345678"))
    );
    let record = ran["steps"][1]["result"]["id"].as_str().expect("a record id").to_owned();
    let stored = app.get(&format!("/api/v3/data/tables/{table}/records/{record}"), &acme.key).await;
    assert_eq!(stored.status, 200, "{}", stored.body);
    assert_eq!(stored.body["record"]["data"]["name"], "Visit by Amina", "{}", stored.body);
    assert_eq!(stored.body["record"]["data"]["phone"], "+255712345678", "{}", stored.body);

    // read back as it was answered
    let read = app.get(&format!("{OPERATIONS}/runs/{}", ran["id"].as_str().unwrap_or_default()), &acme.key).await;
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(read.data(), &ran);
    for missing in ["00000000-0000-0000-0000-000000000000", "x"] {
        assert_eq!(app.get(&format!("{OPERATIONS}/runs/{missing}"), &acme.key).await.status, 404);
    }

    // applied again: unchanged, then a new version, which later runs follow
    let again = app.automations.apply_operation(acme.tenant, welcome(&table)).await.expect("applied");
    assert_eq!((again.version, again.outcome), (1, "unchanged"));
    let mut changed = welcome(&table);
    changed["description"] = json!("Changed.");
    let changed = app.automations.apply_operation(acme.tenant, changed).await.expect("applied");
    assert_eq!((changed.version, changed.outcome), (2, "updated"));
    let next = run(&app, &acme.key, json!({"phone": "0712 345 679", "name": "Juma"})).await;
    assert_eq!((next.status, next.data()["version"].clone()), (201, json!(2)), "{}", next.body);
}

#[actix_web::test]
async fn an_operation_whose_third_step_fails_leaves_nothing_behind() {
    let app = spawn().await;
    let (acme, table) = setup(&app, RUNNER).await;
    let leads_before = app.get("/api/v3/leads", &acme.key).await.body["meta"]["total"].clone();

    // `lost` needs a reason: the stage step is refused after the lead and the visit were made
    let res = run(&app, &acme.key, json!({"phone": "0712 345 678", "name": "Amina", "stage": "lost"})).await;
    assert_eq!(res.status, 422, "{}", res.body);
    assert_eq!(res.body["status"], "error");
    assert_eq!(res.body["reason"], "step_failed", "{}", res.body);
    assert!(res.body["message"].as_str().is_some_and(|m| m.starts_with("Step stage of welcome_customer failed")));
    let ran = res.body["run"].clone();
    assert_eq!(ran["status"], "compensated", "{ran}");
    assert_eq!(step_statuses(&ran), pairs(&[("lead", "compensated"), ("visit", "compensated"), ("stage", "failed")]));
    assert_eq!(ran["error"]["step"], "stage");
    assert_eq!(ran["error"]["code"], "validation_error");
    assert!(ran["steps"][2]["error"]["message"].is_string(), "{ran}");
    assert!(
        res.body["errors"].as_object().is_some_and(|e| e.keys().all(|k| k.starts_with("steps.stage."))),
        "{}",
        res.body
    );

    // nothing left behind: the lead and the record are gone, the run is kept
    let lead = ran["steps"][0]["result"]["id"].as_str().expect("a lead id").to_owned();
    assert_eq!(app.get(&format!("/api/v3/leads/{lead}"), &acme.key).await.status, 404);
    assert_eq!(app.get("/api/v3/leads", &acme.key).await.body["meta"]["total"], leads_before);
    let record = ran["steps"][1]["result"]["id"].as_str().expect("a record id").to_owned();
    assert_eq!(app.get(&format!("/api/v3/data/tables/{table}/records/{record}"), &acme.key).await.status, 404);
    let records = app.get(&format!("/api/v3/data/tables/{table}/records"), &acme.key).await;
    assert_eq!(records.body["records"], json!([]), "{}", records.body);
    let read = app.get(&format!("{OPERATIONS}/runs/{}", ran["id"].as_str().unwrap_or_default()), &acme.key).await;
    assert_eq!(read.data(), &ran);

    // the same number runs whole with its reason
    let res =
        run(&app, &acme.key, json!({"phone": "0712 345 678", "name": "Amina", "stage": "lost", "reason": "price"}))
            .await;
    assert_eq!(res.status, 201, "{}", res.body);
    assert_eq!(res.data()["steps"][2]["result"]["lost_reason"], "price");
}

#[actix_web::test]
async fn a_bad_input_is_refused_by_name_and_makes_no_run() {
    let app = spawn().await;
    let (acme, _) = setup(&app, RUNNER).await;
    let res = run(&app, &acme.key, json!({"name": "x".repeat(121), "age": 3, "stage": 5})).await;
    assert_eq!(res.status, 422, "{}", res.body);
    let fields: Vec<&String> = res.body["errors"].as_object().map(|e| e.keys().collect()).unwrap_or_default();
    assert_eq!(fields, ["input.age", "input.name", "input.phone", "input.stage"], "{}", res.body);
    for bad in [json!({"input": "nope"}), json!({"inputs": {}}), json!([])] {
        let res = app.post(&runs_path("welcome_customer"), &acme.key, bad.clone()).await;
        assert_eq!(res.status, 422, "{bad}: {}", res.body);
    }
    assert_eq!(runs_of(&app, &acme).await, 0, "no run is made for a bad input");
    assert_eq!(app.post(&runs_path("nothing"), &acme.key, json!({"input": {}})).await.status, 404);
}

#[actix_web::test]
async fn an_idempotency_key_answers_the_first_run() {
    let app = spawn().await;
    let (acme, _) = setup(&app, RUNNER).await;
    let keyed = |input: Value, key: &str| {
        let request = actix_web::test::TestRequest::post()
            .uri(&runs_path("welcome_customer"))
            .insert_header(("Authorization", format!("Bearer {}", acme.key)))
            .insert_header(("Idempotency-Key", key.to_owned()))
            .set_json(json!({"input": input}));
        app.send(request)
    };
    let input = json!({"phone": "0712 345 678", "name": "Amina"});
    let first = keyed(input.clone(), "welcome-1").await;
    assert_eq!(first.status, 201, "{}", first.body);
    assert!(first.header("x-idempotent-replay").is_none());
    let again = keyed(json!({"name": "Amina", "phone": "0712 345 678"}), "welcome-1").await;
    assert_eq!(again.status, 201, "{}", again.body);
    assert_eq!(again.header("x-idempotent-replay"), Some("1"));
    assert_eq!(again.data(), first.data(), "the first run, not a second");
    assert_eq!(runs_of(&app, &acme).await, 1);
    let other = keyed(json!({"phone": "0712 345 679", "name": "Amina"}), "welcome-1").await;
    assert_eq!(other.status, 422, "{}", other.body);
    assert!(other.body["errors"]["Idempotency-Key"].is_array(), "{}", other.body);

    // a failed run answers its failure again, and runs nothing more
    let lost = json!({"phone": "0712 345 670", "name": "Juma", "stage": "lost"});
    let failed = keyed(lost.clone(), "welcome-2").await;
    assert_eq!((failed.status, failed.body["reason"].clone()), (422, json!("step_failed")), "{}", failed.body);
    let replayed = keyed(lost, "welcome-2").await;
    assert_eq!(replayed.status, 422);
    assert_eq!(replayed.body["run"], failed.body["run"]);
    assert_eq!(runs_of(&app, &acme).await, 2);

    // after 24 hours the key is free again
    app.advance(Duration::hours(25)).await;
    let later = keyed(input, "welcome-1").await;
    assert_eq!(later.status, 201, "{}", later.body);
    assert_ne!(later.data()["id"], first.data()["id"]);
}

#[actix_web::test]
async fn runs_need_operations_run_and_each_steps_own_permission() {
    let app = spawn().await;
    let (acme, _) = setup(&app, RUNNER).await;
    let input = json!({"phone": "0712 345 678", "name": "Amina"});

    // without operations.run: nothing of it, even with every step's permission
    let user = app.user(acme.tenant, "leads.view,leads.edit,data.view,data.records.edit").await;
    let without = app.key(acme.tenant, user).await;
    for res in [
        app.get(OPERATIONS, &without).await,
        app.get(&format!("{OPERATIONS}/welcome_customer"), &without).await,
        run(&app, &without, input.clone()).await,
    ] {
        assert_eq!(res.status, 403, "{}", res.body);
    }
    let legacy = app.legacy_key(acme.tenant).await;
    assert_eq!(run(&app, &legacy, input.clone()).await.status, 403);

    // operations.run without data.records.edit: the visit step is refused, the lead undone
    let user = app.user(acme.tenant, "operations.run,leads.view,leads.edit,data.view").await;
    let partial = app.key(acme.tenant, user).await;
    let res = run(&app, &partial, input.clone()).await;
    assert_eq!((res.status, res.body["reason"].clone()), (403, json!("step_failed")), "{}", res.body);
    assert_eq!(step_statuses(&res.body["run"]), pairs(&[("lead", "compensated"), ("visit", "failed")]));
    let lead = res.body["run"]["steps"][0]["result"]["id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(app.get(&format!("/api/v3/leads/{lead}"), &acme.key).await.status, 404);

    // another tenant: the operation and the run are not found
    let ran = run(&app, &acme.key, input.clone()).await;
    let run_id = ran.data()["id"].as_str().unwrap_or_default().to_owned();
    let (other, _) = setup(&app, RUNNER).await;
    assert_eq!(app.get(&format!("{OPERATIONS}/runs/{run_id}"), &other.key).await.status, 404);
    let theirs = app.account(RUNNER).await;
    assert_eq!(run(&app, &theirs.key, input).await.status, 404);
    assert_eq!(app.get(&format!("{OPERATIONS}/welcome_customer"), &theirs.key).await.status, 404);
    assert_eq!(app.get(OPERATIONS, &theirs.key).await.data(), &json!([]));
}

#[actix_web::test]
async fn a_run_interrupted_by_a_crash_is_undone_a_minute_later() {
    let app = spawn().await;
    let (acme, _) = setup(&app, RUNNER).await;
    // a lead a run made before its process stopped mid-way through its second step
    let lead = app.post("/api/v3/leads", &acme.key, json!({"phone": "0712 345 678", "name": "Amina"})).await;
    assert!(lead.status == 200 || lead.status == 201, "{}", lead.body);
    let lead_id = lead.data()["lead"]["id"].as_str().expect("a lead").to_owned();
    let run = uuid::Uuid::now_v7();
    let now = app.clock.now();
    let at = now.format(&time::format_description::well_known::Rfc3339).expect("a time");
    let steps = json!([
        {"id": "lead", "action": "create_lead", "status": "succeeded", "started_at": at, "finished_at": at,
         "duration_ms": 1, "result": {"id": lead_id}, "error": null,
         "compensation": {"action": "delete_lead", "lead": lead_id}, "compensated_at": null, "compensation_error": null},
        {"id": "visit", "action": "write_record", "status": "running", "started_at": at, "finished_at": null,
         "duration_ms": null, "result": null, "error": null, "compensation": null, "compensated_at": null,
         "compensation_error": null}
    ]);
    {
        let mut conn = store::connect_system(&app.pool).await.expect("a connection");
        use diesel::sql_types::{BigInt, Jsonb, Timestamptz, Uuid as SqlUuid};
        use diesel_async::RunQueryDsl;
        diesel::sql_query(
            "INSERT INTO operation_runs (id, tenant_id, operation, version, status, input, steps, created_by, started_at)
             VALUES ($1, $2, 'welcome_customer', 1, 'running', '{}', $3, '{\"kind\": \"api_key\"}', $4)",
        )
        .bind::<SqlUuid, _>(run)
        .bind::<BigInt, _>(acme.tenant.0)
        .bind::<Jsonb, _>(steps)
        .bind::<Timestamptz, _>(now)
        .execute(&mut conn)
        .await
        .expect("a run");
        let options = store::jobs::Enqueue {
            tenant_id: Some(acme.tenant),
            run_at: Some(now + automations::operations::run::RECOVER_AFTER),
            ..Default::default()
        };
        let recover = automations::operations::run::RecoverRun { run };
        store::jobs::enqueue(&mut conn, &recover, options).await.expect("queued");
    }
    app.advance(Duration::seconds(59)).await;
    let path = format!("{OPERATIONS}/runs/{run}");
    assert_eq!(app.get(&path, &acme.key).await.data()["status"], "running", "not before its minute");
    app.advance(Duration::seconds(1)).await;
    let read = app.get(&path, &acme.key).await;
    assert_eq!(read.data()["status"], "compensated", "{}", read.body);
    assert_eq!(step_statuses(read.data()), pairs(&[("lead", "compensated"), ("visit", "unknown")]));
    assert_eq!(read.data()["error"]["step"], "visit");
    assert_eq!(app.get(&format!("/api/v3/leads/{lead_id}"), &acme.key).await.status, 404);
}

#[actix_web::test]
async fn a_schedule_runs_an_operation_once_per_due_time() {
    let app = spawn().await;
    let (acme, _) = setup(&app, RUNNER).await;
    let target = |input: Value| Target::Operation { name: "welcome_customer".into(), input };
    // the operation and its input are checked when the schedule is made
    let error = app
        .automations
        .schedule(acme.tenant, "0 9 * * *", Target::Operation { name: "nothing".into(), input: json!({}) }, "operator")
        .await
        .expect_err("no such operation");
    assert!(error.errors.contains_key("operation"), "{error:?}");
    let error = app
        .automations
        .schedule(acme.tenant, "0 9 * * *", target(json!({"name": "x"})), "operator")
        .await
        .expect_err("bad");
    assert!(error.errors.contains_key("input.phone"), "{error:?}");

    let schedule = app
        .automations
        .schedule(acme.tenant, "*/15 * * * *", target(json!({"phone": "0712 345 678", "name": "Amina"})), "operator")
        .await
        .expect("scheduled");
    assert_eq!(schedule.operation.as_deref(), Some("welcome_customer"));
    app.advance(schedule.next_run_at - app.clock.now()).await;
    app.run_jobs().await;
    let rows = api_tests::sql_rows(
        &app.pool,
        &format!("SELECT status, created_by FROM operation_runs WHERE tenant_id = {}", acme.tenant.0),
    )
    .await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], "succeeded", "{rows:?}");
    assert_eq!(rows[0]["created_by"]["kind"], "schedule");

    // the same due time again (a repeated job) answers the first run
    {
        let mut conn = app.conn().await;
        let again = automations::operations::run::RunScheduled {
            schedule: schedule.id,
            operation: "welcome_customer".into(),
            input: json!({"phone": "0712 345 678", "name": "Amina"}),
            due: schedule.next_run_at,
        };
        let options = store::jobs::Enqueue { tenant_id: Some(acme.tenant), ..Default::default() };
        store::jobs::enqueue(&mut conn, &again, options).await.expect("queued");
    }
    app.run_jobs().await;
    assert_eq!(runs_of(&app, &acme).await, 1, "once per due time");
}

#[actix_web::test]
async fn orders_and_messages_are_steps_and_a_later_failure_cancels_the_order() {
    use crate::commerce::support::{shop, stocked};
    let app = spawn().await;
    let sms = crate::sms::sms_account(
        &app,
        "operations.run,communications.catalogue.view,communications.catalogue.manage,communications.send,\
         communications.messages.view,data.view,data.records.edit",
    )
    .await;
    let acme = &sms.account;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "K-1", 450_000, json!(10)).await;
    let order_step = json!({"id": "order", "action": "create_order", "with": {
        "catalogue": shop, "customer_handle": "{{inputs.phone}}", "customer_name": "Amina",
        "lines": [{"sku": "K-1", "quantity": "{{inputs.qty}}"}]}});
    let inputs = json!([{"name": "phone", "type": "phone"}, {"name": "qty", "type": "integer", "minimum": 1}]);
    let confirm = json!({"name": "order_by_sms", "inputs": inputs, "steps": [order_step, {
        "id": "sms", "action": "send_message", "with": {"recipient": "{{inputs.phone}}", "sender_id": "ACME",
            "message": "Order #{{steps.order.id}} received: {{inputs.qty}} x Kahawa."}}]});
    app.automations.apply_operation(acme.tenant, confirm).await.expect("applied");
    // the same order, then a record into a table that does not exist
    let failing = json!({"name": "order_then_fail", "inputs": inputs, "steps": [order_step, {
        "id": "visit", "action": "write_record",
        "with": {"table": "00000000-0000-0000-0000-000000000000", "data": {"name": "x"}}}]});
    app.automations.apply_operation(acme.tenant, failing).await.expect("applied");

    let input = json!({"input": {"phone": "0712 345 678", "qty": 2}});
    let res = app.post(&runs_path("order_by_sms"), &acme.key, input.clone()).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let order_id = res.data()["steps"][0]["result"]["id"].as_i64().expect("an order");
    assert_eq!(res.data()["steps"][0]["result"]["total_minor"], 900_000);
    assert_eq!(res.data()["steps"][0]["compensation"], json!({"action": "cancel_order", "order": order_id}));
    let sent = &res.data()["steps"][1]["result"]["messages"][0];
    assert_eq!(sent["recipient"].as_str().or(sent["to"].as_str()), Some("+255712345678"), "{sent}");
    assert!(res.data()["steps"][1]["compensation"].is_null(), "a message sent is not unsent");
    let messages = app.get("/api/v3/messages", &acme.key).await;
    assert!(
        messages.body.to_string().contains(&format!("Order #{order_id} received: 2 x Kahawa.")),
        "{}",
        messages.body
    );
    let order = app.get(&format!("/api/v3/catalogues/orders/{order_id}"), &acme.key).await;
    assert_eq!(order.data()["status"], "pending", "{}", order.body);

    let res = app.post(&runs_path("order_then_fail"), &acme.key, input).await;
    assert_eq!((res.status, res.body["reason"].clone()), (404, json!("step_failed")), "{}", res.body);
    assert_eq!(step_statuses(&res.body["run"]), pairs(&[("order", "compensated"), ("visit", "failed")]));
    let cancelled = res.body["run"]["steps"][0]["result"]["id"].as_i64().expect("an order");
    let order = app.get(&format!("/api/v3/catalogues/orders/{cancelled}"), &acme.key).await;
    assert_eq!(order.data()["status"], "cancelled", "{}", order.body);
}
