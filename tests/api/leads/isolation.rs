//! Tenant isolation and the module switch on the list, PATCH, notes, assignment, deletion, the
//! timeline, labels and custom fields (contract: Leads, Authentication; conventions: the other
//! tenant's id answers 404): another workspace never reaches nor lists ours, and with the
//! module off every one of these routes answers 403.

use api_tests::{json, spawn};
use serde_json::Value;

use super::support::*;
use crate::framework::assert_error;

#[actix_web::test]
async fn another_tenant_gets_404_on_every_route_of_our_lead_and_label() {
    // Proves 404 for a key of another workspace holding every permission, on each route that
    // names our lead or our label, and that none of those requests changed anything.
    let app = spawn().await;
    let acme = app.account("all").await;
    let other = app.account("all").await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678", "name": "Amina", "labels": ["VIP"]})).await);
    let vip = label_id_of(&new_label(&app, &acme.key, json!({"name": "Hot"})).await);
    let before = record(read(&app, &acme.key, &id).await);
    let timeline = activities(&app, &acme.key, &id, None).await;

    assert_error(&patch(&app, &other.key, &id, json!({"company": "Duka"})).await, 404);
    assert_error(&patch(&app, &other.key, &id, json!({"archived": true})).await, 404);
    assert_error(&app.post(&sub_path(&id, "notes"), &other.key, json!({"body": "hello"})).await, 404);
    for user in [Value::Null, json!(other.user.0)] {
        assert_error(&app.post(&sub_path(&id, "assign"), &other.key, json!({"user_id": user})).await, 404);
    }
    assert_error(&app.get(&sub_path(&id, "activities"), &other.key).await, 404);
    assert_error(&app.post(&sub_path(&id, "labels"), &other.key, json!({"labels": ["VIP"]})).await, 404);
    assert_error(&remove_labels(&app, &other.key, &id, json!(["VIP"])).await, 404);
    assert_error(&app.delete(&lead_path(&id), &other.key).await, 404);
    assert_error(&app.patch(&label_path(vip), &other.key, json!({"name": "Mine"})).await, 404);
    assert_error(&app.delete(&label_path(vip), &other.key).await, 404);

    assert_eq!(record(read(&app, &acme.key, &id).await), before, "our lead unchanged");
    assert_eq!(activities(&app, &acme.key, &id, None).await, timeline, "no activity added");
    let res = app.get(LABELS, &acme.key).await;
    let labels: Vec<&Value> = res.data().as_array().expect("labels").iter().map(|l| &l["name"]).collect();
    assert_eq!(labels, [&json!("Hot"), &json!("VIP")], "our labels unchanged");
    assert_eq!(lead_count(&app, other.tenant).await, 0, "no lead made for the other tenant");
}

#[actix_web::test]
async fn another_tenant_s_lists_never_show_our_leads_labels_or_fields() {
    // Proves `GET /leads` (every status, our label's id and name as filters), `GET
    // /lead-labels` and `GET /lead-fields` answer only the caller's own workspace, and that a
    // label name taken in ours is free in theirs.
    let app = spawn().await;
    let acme = app.account("all").await;
    let other = app.account("all").await;
    define_field(&app, acme.tenant, "budget", "number", &[]).await;
    let ours =
        create(&app, &acme.key, json!({"phone": "0712345678", "labels": ["VIP"], "source_channel": "sms"})).await;
    let vip = ours["labels"][0]["id"].as_i64().expect("label id").to_string();
    create(&app, &acme.key, json!({"phone": "0754321987", "stage": "won"})).await;
    define_field(&app, other.tenant, "tier", "text", &[]).await;
    let theirs = id_of(&create(&app, &other.key, json!({"phone": "0712345678", "source_channel": "sms"})).await);

    for query in [
        vec![],
        vec![("status", "all")],
        vec![("status", "closed")],
        vec![("label", vip.as_str()), ("status", "all")],
        vec![("channel", "sms")],
        vec![("q", "712345")],
    ] {
        let page = list(&app, &other.key, &query).await;
        let expected = if query.iter().any(|(k, _)| *k == "label") || query == [("status", "closed")] {
            Vec::<String>::new()
        } else {
            vec![theirs.clone()]
        };
        assert_eq!(ids(&page), expected, "{query:?}");
    }
    let res = app.get(LABELS, &other.key).await;
    assert_status(&res, 200);
    assert_eq!(res.data(), &json!([]));
    let res = app.get(FIELDS, &other.key).await;
    assert_status(&res, 200);
    assert_eq!(res.data(), &json!([{"key": "tier", "label": "The tier", "type": "text", "options": []}]));

    assert_eq!(new_label(&app, &other.key, json!({"name": "vip"})).await["name"], "vip", "free in theirs");
    let res = app.get(FIELDS, &acme.key).await;
    assert_eq!(res.data(), &json!([{"key": "budget", "label": "The budget", "type": "number", "options": []}]));
    assert_eq!(list(&app, &acme.key, &[("status", "all")]).await["pagination"]["total"], 2);
}

#[actix_web::test]
async fn with_the_module_off_the_list_changes_timeline_labels_and_fields_answer_403() {
    // Proves the module switch on every route added beside the upsert, read and stage, for a
    // key holding every permission; nothing changed, and switching back on restores access.
    let app = spawn().await;
    let acme = app.account("all").await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678", "labels": ["VIP"]})).await);
    let vip = label_id_of(&new_label(&app, &acme.key, json!({"name": "Hot"})).await);
    set_module(&app, acme.tenant, false).await;

    let key = acme.key.as_str();
    assert_error(&app.get(LEADS, key).await, 403);
    assert_error(&app.get(&list_path(&[("status", "all")]), key).await, 403);
    assert_error(&patch(&app, key, &id, json!({"company": "Duka"})).await, 403);
    assert_error(&app.post(&sub_path(&id, "notes"), key, json!({"body": "hello"})).await, 403);
    assert_error(&app.post(&sub_path(&id, "assign"), key, json!({"user_id": acme.user.0})).await, 403);
    assert_error(&app.get(&sub_path(&id, "activities"), key).await, 403);
    assert_error(&app.post(&sub_path(&id, "labels"), key, json!({"labels": ["Hot"]})).await, 403);
    assert_error(&remove_labels(&app, key, &id, json!(["VIP"])).await, 403);
    assert_error(&app.delete(&lead_path(&id), key).await, 403);
    assert_error(&app.get(LABELS, key).await, 403);
    assert_error(&app.post(LABELS, key, json!({"name": "Warm"})).await, 403);
    assert_error(&app.patch(&label_path(vip), key, json!({"name": "Cold"})).await, 403);
    assert_error(&app.delete(&label_path(vip), key).await, 403);
    assert_error(&app.get(FIELDS, key).await, 403);

    set_module(&app, acme.tenant, true).await;
    let lead = read(&app, key, &id).await;
    assert_eq!((&lead["company"], &lead["assigned_to"]), (&Value::Null, &Value::Null));
    let labels: Vec<&Value> = lead["labels"].as_array().expect("labels").iter().map(|l| &l["name"]).collect();
    assert_eq!(labels, [&json!("VIP")]);
    assert_eq!(kinds(&activities(&app, key, &id, None).await), ["label_added", "created"]);
    let res = app.get(LABELS, key).await;
    let names: Vec<&Value> = res.data().as_array().expect("labels").iter().map(|l| &l["name"]).collect();
    assert_eq!(names, [&json!("Hot"), &json!("VIP")]);
    assert_eq!(ids(&list(&app, key, &[]).await), vec![id]);
}
