//! Who may do what to which lead (contract: Leads, Authentication): `leads.view` reads,
//! `leads.edit` upserts and moves stages, the module switch answers 403, legacy keys are
//! refused, visibility hides others' assigned leads (404, and 409 on an upsert), and one
//! tenant never reaches another's leads.

use api_tests::{json, spawn};
use serde_json::Value;

use super::support::*;
use crate::framework::assert_error;

#[actix_web::test]
async fn reads_need_leads_view_and_changes_need_leads_edit() {
    // Proves the permission of each route, checked against the key's issuer.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    let viewer = app.user(acme.tenant, "leads.view").await;
    let viewer = app.key(acme.tenant, viewer).await;
    let writer = app.user(acme.tenant, "leads.edit").await;
    let writer = app.key(acme.tenant, writer).await;
    let stranger = app.user(acme.tenant, "webhooks.view").await;
    let stranger = app.key(acme.tenant, stranger).await;

    assert_eq!(read(&app, &viewer, &id).await["id"], id.as_str());
    assert_error(&app.post(LEADS, &viewer, json!({"phone": "0712345678", "company": "Duka"})).await, 403);
    assert_error(&set_stage(&app, &viewer, &id, json!({"stage": "won"})).await, 403);

    assert_error(&app.get(&lead_path(&id), &writer).await, 403);
    let data = upsert(&app, &writer, json!({"phone": "0712345678", "name": "Amina"}), 200).await;
    assert_eq!(data["lead"]["id"], id.as_str());
    assert_status(&set_stage(&app, &writer, &id, json!({"stage": "contacted"})).await, 200);

    assert_error(&app.get(&lead_path(&id), &stranger).await, 403);
    assert_error(&app.post(LEADS, &stranger, json!({"phone": "0754321987"})).await, 403);
    assert_error(&set_stage(&app, &stranger, &id, json!({"stage": "won"})).await, 403);

    let lead = read(&app, &acme.key, &id).await;
    assert_eq!((&lead["company"], &lead["stage"]), (&Value::Null, &json!("contacted")), "refusals changed nothing");
    assert_eq!(lead_count(&app, acme.tenant).await, 1);
}

#[actix_web::test]
async fn with_the_module_off_every_leads_route_answers_403() {
    // Proves the module switch, for a key holding every permission, and that switching it back
    // on restores access.
    let app = spawn().await;
    let acme = app.account("all").await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    set_module(&app, acme.tenant, false).await;

    assert_error(&app.get(&lead_path(&id), &acme.key).await, 403);
    assert_error(&app.post(LEADS, &acme.key, json!({"phone": "0754321987"})).await, 403);
    assert_error(&app.post(LEADS, &acme.key, json!({"phone": "0712345678", "company": "Duka"})).await, 403);
    assert_error(&set_stage(&app, &acme.key, &id, json!({"stage": "won"})).await, 403);
    assert_eq!(lead_count(&app, acme.tenant).await, 1);

    set_module(&app, acme.tenant, true).await;
    let lead = read(&app, &acme.key, &id).await;
    assert_eq!((&lead["stage"], &lead["company"]), (&json!("new"), &Value::Null));
}

#[actix_web::test]
async fn a_legacy_key_is_refused_on_every_leads_route() {
    // Proves leads are among the routes added since the permission model: 403 for a key
    // without a recorded issuer.
    let app = spawn().await;
    let acme = app.account("all").await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    let legacy = app.legacy_key(acme.tenant).await;
    assert_error(&app.get(&lead_path(&id), &legacy).await, 403);
    assert_error(&app.post(LEADS, &legacy, json!({"phone": "0754321987"})).await, 403);
    assert_error(&set_stage(&app, &legacy, &id, json!({"stage": "won"})).await, 403);
    assert_eq!(lead_count(&app, acme.tenant).await, 1);
}

#[actix_web::test]
async fn a_lead_assigned_to_someone_else_is_hidden_from_an_issuer_without_data_all() {
    // Proves visibility: another's assigned lead is 404 on read and stage and 409 on a matching
    // upsert (nothing changed); assigned-to-me, unassigned and self-added leads are visible;
    // `leads.data.all` sees everything.
    let app = spawn().await;
    let boss = app.account(MANAGER).await;
    let restricted_user = app.user(boss.tenant, EDITOR).await;
    let restricted = app.key(boss.tenant, restricted_user).await;
    let colleague = app.user(boss.tenant, EDITOR).await;

    let theirs = id_of(&create(&app, &boss.key, json!({"phone": "0712345678", "name": "Amina"})).await);
    assign(&app, &theirs, colleague).await;
    assert_error(&app.get(&lead_path(&theirs), &restricted).await, 404);
    assert_error(&set_stage(&app, &restricted, &theirs, json!({"stage": "won"})).await, 404);
    let res = app.post(LEADS, &restricted, json!({"phone": "+255712345678", "company": "Duka"})).await;
    assert_error(&res, 409);
    let lead = read(&app, &boss.key, &theirs).await;
    assert_eq!((&lead["company"], &lead["stage"]), (&Value::Null, &json!("new")), "nothing changed");
    assert_eq!(lead["assigned_to"], json!({"id": colleague.0, "name": "Test user"}));
    assert_eq!(lead_count(&app, boss.tenant).await, 1);

    let unassigned = id_of(&create(&app, &boss.key, json!({"phone": "0754321987"})).await);
    let mine = id_of(&create(&app, &boss.key, json!({"phone": "0713111222"})).await);
    assign(&app, &mine, restricted_user).await;
    let self_added = id_of(&create(&app, &restricted, json!({"phone": "0715222333"})).await);
    assign(&app, &self_added, colleague).await;
    for id in [&unassigned, &mine, &self_added] {
        assert_eq!(read(&app, &restricted, id).await["id"], id.as_str());
    }
    let data = upsert(&app, &restricted, json!({"phone": "0715222333", "company": "Duka"}), 200).await;
    assert_eq!(data["lead"]["id"], self_added.as_str());

    // with `leads.data.all` the colleague's lead is visible too
    app.set_permissions(restricted_user, "leads.view,leads.edit,leads.data.all").await;
    assert_eq!(read(&app, &restricted, &theirs).await["id"], theirs.as_str());
}

#[actix_web::test]
async fn another_tenant_never_reaches_a_lead() {
    // Proves tenant isolation: 404 on read and stage for another tenant's lead, and an upsert
    // with the same phone makes that tenant's own lead, leaving ours alone.
    let app = spawn().await;
    let acme = app.account("all").await;
    let other = app.account("all").await;
    let ours = id_of(&create(&app, &acme.key, json!({"phone": "0712345678", "name": "Amina"})).await);

    assert_error(&app.get(&lead_path(&ours), &other.key).await, 404);
    assert_error(&set_stage(&app, &other.key, &ours, json!({"stage": "won"})).await, 404);
    let theirs = create(&app, &other.key, json!({"phone": "+255 712 345 678", "name": "AMINA"})).await;
    assert_ne!(id_of(&theirs), ours);
    assert_eq!(theirs["created_by"]["id"], other.user.0);

    let lead = read(&app, &acme.key, &ours).await;
    assert_eq!((&lead["stage"], &lead["name"]), (&json!("new"), &json!("Amina")));
    assert_eq!(lead["possible_duplicate"], Value::Null, "no duplicate across tenants");
    assert_eq!((lead_count(&app, acme.tenant).await, lead_count(&app, other.tenant).await), (1, 1));
}
