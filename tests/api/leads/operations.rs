//! Notes, assignment and deletion of one lead (contract: Leads, Events; docs/api.md "Notes,
//! assignment, deletion, timeline"): the note's shape, `assignee_unknown`, the permission of
//! each route, and the `lead.assigned` and `lead.deleted` events on a real receiver.

use api_tests::{json, spawn};
use serde_json::Value;
use time::Duration;

use super::support::*;
use crate::framework::assert_error;

#[actix_web::test]
async fn a_note_is_answered_with_201_and_shows_on_the_timeline() {
    // Proves `POST /leads/{lead}/notes`: 201 with `{id, body, created_at}` (the clock's time), and
    // a `note_added` activity, newest first.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    app.clock.advance(Duration::minutes(3));

    let res = app.post(&sub_path(&id, "notes"), &acme.key, json!({"body": "Asked for a quote"})).await;
    assert_status(&res, 201);
    assert_eq!(res.body["status"], "success");
    let note = res.data();
    let mut keys: Vec<&str> = note.as_object().expect("note").keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["body", "created_at", "id"], "{note}");
    assert!(note["id"].as_str().is_some_and(|n| uuid::Uuid::parse_str(n).is_ok()), "{note}");
    assert_eq!(note["body"], "Asked for a quote");
    assert_eq!(time_of(note, "created_at"), app.clock.now());

    let timeline = activities(&app, &acme.key, &id, None).await;
    assert_eq!(kinds(&timeline), ["note_added", "created"]);
    let added = &timeline["items"][0];
    assert!(added["details"].to_string().contains("Asked for a quote"), "{added}");
    assert_eq!(time_of(added, "created_at"), app.clock.now());
}

#[actix_web::test]
async fn an_empty_note_is_invalid_and_notes_need_leads_edit() {
    // Proves 422 `invalid` naming `body` for a missing, null, empty or blank body, 403 for a
    // viewer, and that no refused note reaches the timeline.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    for body in [json!({"body": ""}), json!({"body": "   "}), json!({"body": null}), json!({})] {
        let res = app.post(&sub_path(&id, "notes"), &acme.key, body.clone()).await;
        assert_refused(&res, 422, "invalid");
        assert!(res.body["errors"]["body"].is_array(), "{body}: {}", res.body);
    }
    let viewer = app.user(acme.tenant, "leads.view").await;
    let viewer = app.key(acme.tenant, viewer).await;
    assert_error(&app.post(&sub_path(&id, "notes"), &viewer, json!({"body": "hello"})).await, 403);
    assert_eq!(kinds(&activities(&app, &acme.key, &id, None).await), ["created"]);
}

#[actix_web::test]
async fn assigning_names_a_workspace_user_and_null_returns_the_lead_to_the_pool() {
    // Proves `POST /leads/{lead}/assign`: `assigned_to {id, name}`, null for the pool, the list's
    // `assigned_to` agreeing, and one `lead.assigned` per move with `changes.assigned_to {from,
    // to}` on a real receiver.
    let app = spawn().await;
    let acme = app.account(&format!("{MANAGER},{WEBHOOKS}")).await;
    let receiver = Receiver::start().await;
    subscribe(&app, &acme.key, &receiver.url(), &["lead.assigned"], Value::Null).await;
    let agent = app.user(acme.tenant, EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678", "name": "Amina"})).await);
    app.clock.advance(Duration::minutes(1));

    let res = app.post(&sub_path(&id, "assign"), &acme.key, json!({"user_id": agent.0})).await;
    assert_status(&res, 200);
    let assignee = json!({"id": agent.0, "name": "Test user"});
    assert_eq!(res.data()["assigned_to"], assignee);
    assert_eq!(time_of(res.data(), "updated_at"), app.clock.now());
    assert_eq!(read(&app, &acme.key, &id).await["assigned_to"], assignee);
    let agent_id = agent.0.to_string();
    assert_eq!(ids(&list(&app, &acme.key, &[("assigned_to", &agent_id)]).await), vec![id.clone()]);
    app.run_jobs().await;

    let res = app.post(&sub_path(&id, "assign"), &acme.key, json!({"user_id": null})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["assigned_to"], Value::Null);
    assert_eq!(ids(&list(&app, &acme.key, &[("assigned_to", "none")]).await), vec![id.clone()]);
    app.run_jobs().await;

    let bodies = receiver.bodies().await;
    let assigned = events_named(&bodies, "lead.assigned");
    assert_eq!(assigned.len(), 2, "{bodies:?}");
    let to_agent = assigned.iter().find(|b| b["changes"]["assigned_to"]["to"] == assignee).expect("the move to agent");
    assert_eq!(to_agent["changes"], json!({"assigned_to": {"from": null, "to": assignee}}));
    assert_eq!(to_agent["lead"]["id"], id.as_str());
    assert_eq!(to_agent["lead"]["assigned_to"], assignee, "the lead after the move");
    assert_eq!(to_agent["actor"], json!({"kind": "api", "id": acme.user.0, "label": "Test user"}));
    let to_pool = assigned.iter().find(|b| b["changes"]["assigned_to"]["to"].is_null()).expect("the move to the pool");
    assert_eq!(to_pool["changes"], json!({"assigned_to": {"from": assignee, "to": null}}));
    assert_eq!(to_pool["lead"]["assigned_to"], Value::Null);
}

#[actix_web::test]
async fn an_unknown_or_another_tenant_s_user_is_assignee_unknown() {
    // Proves `assignee_unknown` (422) for an id no user has and for a user of another
    // workspace; the lead stays in the pool.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let other = app.account(MANAGER).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    for user in [json!(999_999_999), json!(other.user.0)] {
        let res = app.post(&sub_path(&id, "assign"), &acme.key, json!({"user_id": user})).await;
        assert_refused(&res, 422, "assignee_unknown");
    }
    assert_eq!(read(&app, &acme.key, &id).await["assigned_to"], Value::Null);
}

#[actix_web::test]
async fn assigning_needs_leads_assign_not_leads_edit() {
    // Proves the assign route's permission: 403 for an issuer who views and edits, 200 for one
    // holding `leads.assign`.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    let editor = app.user(acme.tenant, EDITOR).await;
    let editor_key = app.key(acme.tenant, editor).await;
    let assigner = app.user(acme.tenant, "leads.view,leads.assign").await;
    let assigner_key = app.key(acme.tenant, assigner).await;

    let res = app.post(&sub_path(&id, "assign"), &editor_key, json!({"user_id": editor.0})).await;
    assert_error(&res, 403);
    assert_eq!(read(&app, &acme.key, &id).await["assigned_to"], Value::Null);
    let res = app.post(&sub_path(&id, "assign"), &assigner_key, json!({"user_id": editor.0})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["assigned_to"]["id"], editor.0);
}

#[actix_web::test]
async fn deleting_needs_leads_delete_answers_the_lead_and_sends_lead_deleted() {
    // Proves `DELETE /leads/{lead}`: 403 without `leads.delete`; 200 answering the lead as it
    // was; then 404 on every route of it, gone from the list; `lead.deleted` carries the lead.
    let app = spawn().await;
    let acme = app.account(&format!("{MANAGER},{WEBHOOKS}")).await;
    let receiver = Receiver::start().await;
    subscribe(&app, &acme.key, &receiver.url(), &["lead.deleted"], Value::Null).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678", "name": "Amina", "labels": ["VIP"]})).await);
    let kept = id_of(&create(&app, &acme.key, json!({"phone": "0754321987"})).await);
    let no_delete = app.user(acme.tenant, "leads.view,leads.edit,leads.assign,leads.settings,leads.data.all").await;
    let no_delete = app.key(acme.tenant, no_delete).await;

    assert_error(&app.delete(&lead_path(&id), &no_delete).await, 403);
    let before = record(read(&app, &acme.key, &id).await);
    app.clock.advance(Duration::minutes(1));

    let res = app.delete(&lead_path(&id), &acme.key).await;
    assert_status(&res, 200);
    assert_eq!(res.data(), &before, "the lead as it was");
    assert_error(&app.get(&lead_path(&id), &acme.key).await, 404);
    assert_error(&app.delete(&lead_path(&id), &acme.key).await, 404);
    assert_error(&app.get(&sub_path(&id, "activities"), &acme.key).await, 404);
    assert_error(&patch(&app, &acme.key, &id, json!({"company": "Duka"})).await, 404);
    assert_eq!(ids(&list(&app, &acme.key, &[("status", "all")]).await), vec![kept]);
    assert_eq!(lead_count(&app, acme.tenant).await, 1);

    app.run_jobs().await;
    let bodies = receiver.bodies().await;
    let deleted = events_named(&bodies, "lead.deleted");
    assert_eq!(deleted.len(), 1, "{bodies:?}");
    assert_eq!(deleted[0]["lead"], before, "the whole lead as it was");
    assert_eq!(deleted[0]["actor"]["id"], acme.user.0);
}
