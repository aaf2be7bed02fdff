//! Status fields (contract: Data record status fields; Data tables; docs/api.md "Data tables",
//! Records and "Tables, schema, states"): initial states on create, strict and non-strict moves,
//! move permissions, clearing a non-required status, and `GET .../states` with `allowed` per
//! caller.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Resp, TestApp, json, spawn};
use serde_json::Value;
use uuid::Uuid;

use super::support::*;

/// An editor of the CRM without `data.customers.close`.
const NO_CLOSE: &str = "data.view,data.records.edit,data.customers.pii";

/// A ticket table: `state` (not required, strict: false, a declared move with a permission)
/// and `phase` (required, two initial states).
fn tickets() -> Value {
    json!({
        "group": {"slug": "help", "name": "Help desk"},
        "tables": [{"slug": "tickets", "name": "Tickets", "columns": [
            {"key": "subject", "type": "text"},
            {"key": "state", "type": "status", "config": {
                "states": [{"key": "open"}, {"key": "pending"}, {"key": "done"}],
                "initial": ["open"], "strict": false,
                "moves": [{"from": "pending", "to": "done", "permission": "data.tickets.close"}]}},
            {"key": "phase", "type": "status", "required": true, "config": {
                "states": [{"key": "draft"}, {"key": "triage"}, {"key": "live"}],
                "initial": ["draft", "triage"],
                "moves": [{"from": "draft", "to": "live"}, {"from": "triage", "to": "live"}]}}
        ]}]
    })
}

/// The record's current value of `column`.
async fn value_of<S, B>(app: &TestApp<S>, key: &str, table: Uuid, record: &str, column: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&record_path(table, record), key).await;
    assert_status(&res, 200);
    res.body["record"]["data"][column].clone()
}

/// A key of the tenant with `permissions`.
async fn key_with<S, B>(app: &TestApp<S>, crm: &Crm, permissions: &str) -> String
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let user = app.user(crm.account.tenant, permissions).await;
    app.key(crm.account.tenant, user).await
}

/// The tickets table applied beside the CRM.
async fn tickets_of<S, B>(app: &TestApp<S>, crm: &Crm) -> Uuid
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let applied = apply(app, &crm.account, tickets()).await;
    applied.tables.iter().find(|t| t.slug == "tickets").expect("tickets").id
}

/// A 409 `conflict` naming `field`.
#[track_caller]
fn assert_conflict(res: &Resp, field: &str) {
    assert_data_error(res, 409, "conflict");
    assert_eq!(res.body["error"]["field"], field, "{}", res.body);
}

/// A refused start outside the initial states: 422 `validation_error` naming the column
/// (docs/api.md: a start is not a move).
#[track_caller]
fn assert_refused_start(res: &Resp) {
    assert_data_error(res, 422, "validation_error");
    assert!(res.body["errors"].as_object().is_some_and(|e| e.len() == 1), "one column named: {}", res.body);
}

#[actix_web::test]
async fn a_required_status_left_out_takes_its_single_initial_state() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let made = create(&app, &crm.account.key, crm.customers, json!({"name": "Asha"})).await;
    assert_eq!(made["data"]["stage"], "new", "{made}");
    let made = create(&app, &crm.account.key, crm.customers, json!({"name": "Baraka", "stage": "new"})).await;
    assert_eq!(made["data"]["stage"], "new");
}

#[actix_web::test]
async fn a_required_status_with_several_initial_states_must_be_given() {
    // `phase` has two initial states: left out is 422 naming it; either initial state is a
    // start; the third is not.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let tickets = tickets_of(&app, &crm).await;
    let key = &crm.account.key;
    let res = post_data(&app, key, tickets, json!({"subject": "Printer"})).await;
    assert_data_error(&res, 422, "validation_error");
    assert!(res.body["errors"]["phase"].as_array().is_some_and(|m| !m.is_empty()), "errors.phase: {}", res.body);
    for start in ["draft", "triage"] {
        let made = create(&app, key, tickets, json!({"subject": "Printer", "phase": start})).await;
        assert_eq!(made["data"]["phase"], start);
        assert_eq!(made["data"]["state"], Value::Null, "a non-required status left out stays empty: {made}");
    }
    assert_refused_start(&post_data(&app, key, tickets, json!({"phase": "live"})).await);
}

#[actix_web::test]
async fn starting_outside_the_initial_states_is_refused() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    for stage in ["active", "closed"] {
        assert_refused_start(&post_data(&app, key, crm.customers, json!({"name": "Asha", "stage": stage})).await);
    }
    // Not a declared state at all.
    let res = post_data(&app, key, crm.customers, json!({"name": "Asha", "stage": "archived"})).await;
    assert_data_error(&res, 422, "validation_error");
    let res = app.get(&list_path(crm.customers, &[("with_count", "1")]), key).await;
    assert_eq!(res.body["count"], json!(0), "nothing created: {}", res.body);
}

#[actix_web::test]
async fn declared_moves_are_made_and_undeclared_ones_are_a_conflict_under_strict() {
    // new -> active is declared (200); active -> new and new -> closed are not (409 naming
    // `stage`, the state unchanged); an unknown state is 422.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let first = record_id(&create(&app, key, crm.customers, json!({"name": "Asha"})).await);
    let second = record_id(&create(&app, key, crm.customers, json!({"name": "Baraka"})).await);

    let res = patch_data(&app, key, crm.customers, &first, json!({"stage": "active"})).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["stage"], "active");

    assert_conflict(&patch_data(&app, key, crm.customers, &first, json!({"stage": "new"})).await, "stage");
    assert_eq!(value_of(&app, key, crm.customers, &first, "stage").await, "active");
    let res = patch_data(&app, key, crm.customers, &second, json!({"stage": "closed", "notes": "skip"})).await;
    assert_conflict(&res, "stage");
    assert_eq!(value_of(&app, key, crm.customers, &second, "stage").await, "new");
    assert_eq!(value_of(&app, key, crm.customers, &second, "notes").await, Value::Null, "nothing of the PATCH applied");

    let res = patch_data(&app, key, crm.customers, &first, json!({"stage": "archived"})).await;
    assert_data_error(&res, 422, "validation_error");
}

#[actix_web::test]
async fn a_move_with_a_permission_needs_it() {
    // active -> closed needs `data.customers.close`: 403 `permission_denied` without it (the
    // state unchanged), 200 with it.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let no_close = key_with(&app, &crm, NO_CLOSE).await;
    let id = record_id(&create(&app, &no_close, crm.customers, json!({"name": "Asha"})).await);
    assert_status(&patch_data(&app, &no_close, crm.customers, &id, json!({"stage": "active"})).await, 200);

    let res = patch_data(&app, &no_close, crm.customers, &id, json!({"stage": "closed"})).await;
    assert_data_error(&res, 403, "permission_denied");
    assert!(res.body.to_string().contains("data.customers.close"), "names the permission: {}", res.body);
    assert_eq!(value_of(&app, &no_close, crm.customers, &id, "stage").await, "active");

    let res = patch_data(&app, &crm.account.key, crm.customers, &id, json!({"stage": "closed"})).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["stage"], "closed");

    // A grant counts from the next request.
    let other = record_id(&create(&app, &no_close, crm.customers, json!({"name": "Baraka", "stage": "new"})).await);
    assert_status(&patch_data(&app, &no_close, crm.customers, &other, json!({"stage": "active"})).await, 200);
    let user = app.user(crm.account.tenant, NO_CLOSE).await;
    let key = app.key(crm.account.tenant, user).await;
    assert_data_error(
        &patch_data(&app, &key, crm.customers, &other, json!({"stage": "closed"})).await,
        403,
        "permission_denied",
    );
    app.set_permissions(user, EDITOR).await;
    assert_status(&patch_data(&app, &key, crm.customers, &other, json!({"stage": "closed"})).await, 200);
}

#[actix_web::test]
async fn setting_the_current_state_again_is_not_a_move() {
    // `closed` has no moves out and `active -> active` is not declared: writing the current
    // state with other changes succeeds, also for a caller without the close permission.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let key = &crm.account.key;
    let no_close = key_with(&app, &crm, NO_CLOSE).await;
    let id = record_id(&create(&app, key, crm.customers, json!({"name": "Asha"})).await);

    let res = patch_data(&app, key, crm.customers, &id, json!({"stage": "new", "notes": "still new"})).await;
    assert_status(&res, 200);
    assert_status(&patch_data(&app, key, crm.customers, &id, json!({"stage": "active"})).await, 200);
    let res = patch_data(&app, &no_close, crm.customers, &id, json!({"stage": "active", "notes": "again"})).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["notes"], "again");
    assert_status(&patch_data(&app, key, crm.customers, &id, json!({"stage": "closed"})).await, 200);
    let res = patch_data(&app, &no_close, crm.customers, &id, json!({"stage": "closed", "notes": "closed"})).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["stage"], "closed");
}

#[actix_web::test]
async fn a_non_strict_status_allows_any_move_but_keeps_declared_permissions() {
    // `state` is strict: false: open -> done, done -> open, open -> pending need nothing;
    // the declared pending -> done still needs `data.tickets.close`. Undeclared states stay
    // refused.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let tickets = tickets_of(&app, &crm).await;
    let plain = key_with(&app, &crm, "data.view,data.records.edit").await;
    let closer = key_with(&app, &crm, "data.view,data.records.edit,data.tickets.close").await;
    let id = record_id(&create(&app, &plain, tickets, json!({"phase": "draft", "state": "open"})).await);

    for to in ["done", "open", "pending"] {
        let res = patch_data(&app, &plain, tickets, &id, json!({"state": to})).await;
        assert_status(&res, 200);
        assert_eq!(res.body["record"]["data"]["state"], to);
    }
    let res = patch_data(&app, &plain, tickets, &id, json!({"state": "done"})).await;
    assert_data_error(&res, 403, "permission_denied");
    assert_eq!(value_of(&app, &plain, tickets, &id, "state").await, "pending");
    assert_status(&patch_data(&app, &closer, tickets, &id, json!({"state": "done"})).await, 200);
    assert_data_error(&patch_data(&app, &plain, tickets, &id, json!({"state": "lost"})).await, 422, "validation_error");

    // `phase` is strict (the default): draft -> triage is not declared.
    assert_conflict(&patch_data(&app, &plain, tickets, &id, json!({"phase": "triage"})).await, "phase");
    assert_status(&patch_data(&app, &plain, tickets, &id, json!({"phase": "live"})).await, 200);
}

#[actix_web::test]
async fn a_non_required_status_may_be_cleared_and_must_re_enter_an_initial_state() {
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let tickets = tickets_of(&app, &crm).await;
    let key = &crm.account.key;
    let id = record_id(&create(&app, key, tickets, json!({"phase": "draft"})).await);
    assert_eq!(value_of(&app, key, tickets, &id, "state").await, Value::Null);

    // From empty, only an initial state.
    assert_refused_start(&patch_data(&app, key, tickets, &id, json!({"state": "pending"})).await);
    assert_eq!(value_of(&app, key, tickets, &id, "state").await, Value::Null);
    assert_status(&patch_data(&app, key, tickets, &id, json!({"state": "open"})).await, 200);
    assert_status(&patch_data(&app, key, tickets, &id, json!({"state": "pending"})).await, 200);

    let res = patch_data(&app, key, tickets, &id, json!({"state": null})).await;
    assert_status(&res, 200);
    assert_eq!(res.body["record"]["data"]["state"], Value::Null);
    assert_refused_start(&patch_data(&app, key, tickets, &id, json!({"state": "done"})).await);
    assert_status(&patch_data(&app, key, tickets, &id, json!({"state": "open"})).await, 200);
}

#[actix_web::test]
async fn states_lists_each_status_field_with_moves_allowed_for_this_caller() {
    // Proves the field's members and `allowed` per caller: an editor may make both moves; one
    // without `data.customers.close` only the first; a reader (no `data.records.edit`) none.
    let app = spawn().await;
    let crm = crm_with(&app, EDITOR).await;
    let no_close = key_with(&app, &crm, NO_CLOSE).await;
    let viewer = key_with(&app, &crm, VIEWER).await;

    let res = app.get(&states_path(crm.customers), &crm.account.key).await;
    assert_status(&res, 200);
    let fields = res.body["fields"].as_array().unwrap_or_else(|| panic!("fields in {}", res.body));
    assert_eq!(fields.len(), 1, "one status column: {}", res.body);
    let stage = &fields[0];
    assert_eq!(stage["key"], "stage");
    assert_eq!(stage["label"], "Stage");
    assert_eq!(stage["required"], true);
    assert_eq!(stage["strict"], true);
    assert_eq!(
        stage["states"],
        json!([{"key": "new", "label": "New"}, {"key": "active", "label": "Active"}, {"key": "closed", "label": "Closed"}])
    );
    assert_eq!(stage["initial"], json!(["new"]));
    let moves_for = |body: &Value| -> Vec<(Value, Value, Value, Value)> {
        body["fields"][0]["moves"]
            .as_array()
            .unwrap_or_else(|| panic!("moves in {body}"))
            .iter()
            .map(|m| (m["from"].clone(), m["to"].clone(), m["permission"].clone(), m["allowed"].clone()))
            .collect()
    };
    let move_of =
        |from: &str, to: &str, permission: Value, allowed: bool| (json!(from), json!(to), permission, json!(allowed));
    assert_eq!(
        moves_for(&res.body),
        [move_of("new", "active", Value::Null, true), move_of("active", "closed", json!("data.customers.close"), true)]
    );

    let res = app.get(&states_path(crm.customers), &no_close).await;
    assert_status(&res, 200);
    assert_eq!(
        moves_for(&res.body),
        [
            move_of("new", "active", Value::Null, true),
            move_of("active", "closed", json!("data.customers.close"), false)
        ]
    );
    let res = app.get(&states_path(crm.customers), &viewer).await;
    assert_status(&res, 200);
    assert_eq!(
        moves_for(&res.body),
        [
            move_of("new", "active", Value::Null, false),
            move_of("active", "closed", json!("data.customers.close"), false)
        ]
    );

    // A table without status columns lists none; the tickets table lists both, in order.
    let res = app.get(&states_path(crm.agents), &crm.account.key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["fields"], json!([]));
    let tickets = tickets_of(&app, &crm).await;
    let res = app.get(&states_path(tickets), &crm.account.key).await;
    assert_status(&res, 200);
    let keys: Vec<&Value> = res.body["fields"].as_array().expect("fields").iter().map(|f| &f["key"]).collect();
    assert_eq!(keys, [&json!("state"), &json!("phase")]);
    assert_eq!(res.body["fields"][0]["strict"], false);
    assert_eq!(res.body["fields"][0]["required"], false);
    assert_eq!(res.body["fields"][1]["strict"], true, "strict by default");
    assert_eq!(res.body["fields"][1]["initial"], json!(["draft", "triage"]));
    assert_eq!(res.body["fields"][0]["moves"][0]["allowed"], false, "the editor lacks data.tickets.close");
}
