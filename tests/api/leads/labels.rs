//! Lead labels and custom fields (contract: Leads — `/lead-labels`, `POST`/`DELETE
//! /leads/{lead}/labels`, `/lead-fields`; docs/api.md): the list with lead counts by name, the
//! management that needs `leads.settings` and checks colours and names, labels put on and taken
//! off a lead by name with their events, and the custom fields list.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{TestApp, json, spawn};
use serde_json::Value;

use super::support::*;
use crate::framework::assert_error;

/// `GET /lead-labels`, 200 expected: the labels.
async fn labels_of<S, B>(app: &TestApp<S>, key: &str) -> Vec<Value>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(LABELS, key).await;
    assert_status(&res, 200);
    res.data().as_array().unwrap_or_else(|| panic!("a list: {}", res.body)).clone()
}

fn names(labels: &[Value]) -> Vec<&str> {
    labels.iter().map(|l| l["name"].as_str().unwrap_or_else(|| panic!("name in {l}"))).collect()
}

#[actix_web::test]
async fn labels_are_listed_by_name_with_how_many_leads_carry_them() {
    // Proves `GET /lead-labels`: every label with its fields and `lead_count` (closed and
    // archived leads included), ordered by name in any case, for a key that only views.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let warm =
        new_label(&app, &acme.key, json!({"name": "Warm", "color": "#F59E0B", "description": "Replied once"})).await;
    assert_eq!(warm["lead_count"], 0);
    let a = id_of(&create(&app, &acme.key, json!({"phone": "0712345678", "labels": ["cold", "Hot"]})).await);
    create(&app, &acme.key, json!({"phone": "0754321987", "labels": ["hot"], "stage": "won"})).await;
    let archived = id_of(&create(&app, &acme.key, json!({"phone": "0713111222", "labels": ["HOT", "warm"]})).await);
    patched(&app, &acme.key, &archived, json!({"archived": true})).await;
    patched(&app, &acme.key, &a, json!({"company": "Duka"})).await;

    let viewer = app.user(acme.tenant, "leads.view").await;
    let viewer = app.key(acme.tenant, viewer).await;
    let labels = labels_of(&app, &viewer).await;
    assert_eq!(names(&labels), ["cold", "Hot", "Warm"]);
    let counts: Vec<&Value> = labels.iter().map(|l| &l["lead_count"]).collect();
    assert_eq!(counts, [&json!(1), &json!(3), &json!(1)]);
    let warm_listed = &labels[2];
    assert_eq!(warm_listed["id"], warm["id"]);
    assert_eq!(
        (&warm_listed["color"], &warm_listed["description"], &warm_listed["ai_assignable"]),
        (&json!("#F59E0B"), &json!("Replied once"), &json!(false))
    );
    assert_eq!(labels[0]["color"], "#6B7280", "a label made by an upsert has the default colour");
}

#[actix_web::test]
async fn managing_labels_needs_leads_settings() {
    // Proves 403 on POST, PATCH and DELETE of `/lead-labels` for an issuer who edits leads but
    // holds no `leads.settings`, and that nothing changed.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let vip = label_id_of(&new_label(&app, &acme.key, json!({"name": "VIP"})).await);
    let editor = app.user(acme.tenant, EDITOR).await;
    let editor = app.key(acme.tenant, editor).await;

    assert_error(&app.post(LABELS, &editor, json!({"name": "Hot"})).await, 403);
    assert_error(&app.patch(&label_path(vip), &editor, json!({"name": "Gold"})).await, 403);
    assert_error(&app.delete(&label_path(vip), &editor).await, 403);
    assert_eq!(names(&labels_of(&app, &editor).await), ["VIP"]);
}

#[actix_web::test]
async fn a_label_needs_a_colour_written_rrggbb_and_a_name_no_other_label_has() {
    // Proves creation: 201 with the default colour when none is sent; 422 `invalid` naming
    // `color` for anything but `#RRGGBB` and `name` for a missing name; 409 naming `name` for a
    // name taken in any case.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let res = app.post(LABELS, &acme.key, json!({"name": "VIP", "ai_assignable": true})).await;
    assert_status(&res, 201);
    let vip = res.data();
    assert_eq!((&vip["name"], &vip["color"], &vip["ai_assignable"]), (&json!("VIP"), &json!("#6B7280"), &json!(true)));
    assert!(vip["id"].is_i64(), "{vip}");
    assert_eq!(vip["lead_count"], 0);

    for color in ["blue", "#12345", "123456", "#1234567", "#GGGGGG", ""] {
        let res = app.post(LABELS, &acme.key, json!({"name": "Hot", "color": color})).await;
        assert_refused(&res, 422, "invalid");
        assert!(res.body["errors"]["color"].is_array(), "{color}: {}", res.body);
    }
    for body in [json!({"name": ""}), json!({"color": "#123456"})] {
        let res = app.post(LABELS, &acme.key, body.clone()).await;
        assert_refused(&res, 422, "invalid");
        assert!(res.body["errors"]["name"].is_array(), "{body}: {}", res.body);
    }
    // A taken name is a unique-value conflict: 409 naming `name`.
    for body in [json!({"name": "vip"}), json!({"name": " Vip "})] {
        let res = app.post(LABELS, &acme.key, body.clone()).await;
        assert_error(&res, 409);
        assert!(res.body["errors"]["name"].is_array(), "{body}: {}", res.body);
    }
    assert_eq!(names(&labels_of(&app, &acme.key).await), ["VIP"]);
}

#[actix_web::test]
async fn a_label_is_changed_and_deleted_and_goes_from_every_lead() {
    // Proves PATCH (what is sent changes; a name taken in any case is 409, a bad colour 422) and
    // DELETE (200, gone from the list and from the leads that carried it).
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let vip = label_id_of(&new_label(&app, &acme.key, json!({"name": "VIP", "description": "Big buyers"})).await);
    new_label(&app, &acme.key, json!({"name": "Hot"})).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678", "labels": ["VIP", "Hot"]})).await);

    let res = app.patch(&label_path(vip), &acme.key, json!({"name": "Gold", "color": "#1D4ED8"})).await;
    assert_status(&res, 200);
    let gold = res.data();
    assert_eq!((&gold["name"], &gold["color"]), (&json!("Gold"), &json!("#1D4ED8")));
    assert_eq!((&gold["description"], &gold["lead_count"]), (&json!("Big buyers"), &json!(1)), "the rest stays");
    let lead = read(&app, &acme.key, &id).await;
    assert_eq!(names(lead["labels"].as_array().expect("labels")), ["Gold", "Hot"]);

    let res = app.patch(&label_path(vip), &acme.key, json!({"name": "HOT"})).await;
    assert_error(&res, 409);
    assert!(res.body["errors"]["name"].is_array(), "{}", res.body);
    assert_refused(&app.patch(&label_path(vip), &acme.key, json!({"color": "gold"})).await, 422, "invalid");
    assert_error(&app.patch(&label_path(999_999), &acme.key, json!({"name": "Nope"})).await, 404);

    let res = app.delete(&label_path(vip), &acme.key).await;
    assert_status(&res, 200);
    assert_eq!(names(&labels_of(&app, &acme.key).await), ["Hot"]);
    let lead = read(&app, &acme.key, &id).await;
    assert_eq!(names(lead["labels"].as_array().expect("labels")), ["Hot"], "gone from the lead");
    assert_eq!(ids(&list(&app, &acme.key, &[("label", &vip.to_string())]).await), Vec::<String>::new());
    assert_error(&app.delete(&label_path(vip), &acme.key).await, 404);
}

#[actix_web::test]
async fn labels_go_on_and_off_a_lead_by_name_with_their_events() {
    // Proves `POST /leads/{lead}/labels` (a name in any case; a missing one created only with
    // `leads.settings`, else `refused`) and `DELETE /leads/{lead}/labels`, with one
    // `lead.label_added` or `lead.label_removed` per label carrying the label and the lead.
    let app = spawn().await;
    let acme = app.account(&format!("{MANAGER},{WEBHOOKS}")).await;
    let receiver = Receiver::start().await;
    subscribe(&app, &acme.key, &receiver.url(), &["lead.label_added", "lead.label_removed"], Value::Null).await;
    let vip = new_label(&app, &acme.key, json!({"name": "VIP", "color": "#1D4ED8"})).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    let editor = app.user(acme.tenant, EDITOR).await;
    let editor = app.key(acme.tenant, editor).await;

    let res = app.post(&sub_path(&id, "labels"), &editor, json!({"labels": ["vip", "Brand new"]})).await;
    assert_status(&res, 200);
    let data = res.data();
    assert_eq!(data["refused"], json!(["Brand new"]));
    let vip_on_lead = json!({"id": vip["id"], "name": "VIP", "color": "#1D4ED8"});
    assert_eq!(data["added"], json!([vip_on_lead]));
    assert_eq!(data["lead"]["labels"], json!([vip_on_lead]));
    assert_eq!(names(&labels_of(&app, &acme.key).await), ["VIP"], "no label made without leads.settings");

    let res = app.post(&sub_path(&id, "labels"), &acme.key, json!({"labels": ["Brand new", "VIP"]})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["refused"], json!([]));
    assert_eq!(names(res.data()["added"].as_array().expect("added")), ["Brand new"], "VIP was already on");
    assert_eq!(names(res.data()["lead"]["labels"].as_array().expect("labels")), ["Brand new", "VIP"]);
    // At most 100 names as sent, repeats counted (the list's `maxItems`).
    let res = app.post(&sub_path(&id, "labels"), &acme.key, json!({"labels": vec!["VIP"; 101]})).await;
    assert_refused(&res, 422, "invalid");
    app.run_jobs().await;

    let res = remove_labels(&app, &editor, &id, json!(["VIP", "Hot"])).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["removed"], json!([vip_on_lead]));
    assert_eq!(names(res.data()["lead"]["labels"].as_array().expect("labels")), ["Brand new"]);
    assert_eq!(read(&app, &acme.key, &id).await["labels"], res.data()["lead"]["labels"]);
    app.run_jobs().await;

    let bodies = receiver.bodies().await;
    let added = events_named(&bodies, "lead.label_added");
    let mut added_names: Vec<&str> = added.iter().filter_map(|b| b["label"]["name"].as_str()).collect();
    added_names.sort_unstable();
    assert_eq!(added_names, ["Brand new", "VIP"], "{bodies:?}");
    assert!(added.iter().all(|b| b["lead"]["id"] == id.as_str()), "{bodies:?}");
    let removed = events_named(&bodies, "lead.label_removed");
    assert_eq!(removed.len(), 1, "{bodies:?}");
    assert_eq!(removed[0]["label"], vip_on_lead);
    assert_eq!(names(removed[0]["lead"]["labels"].as_array().expect("labels")), ["Brand new"], "the lead after");
}

#[actix_web::test]
async fn lead_fields_lists_the_workspace_s_custom_fields() {
    // Proves `GET /lead-fields`: each defined field as `{key, label, type, options}`, by key,
    // readable with `leads.view`; none before any is defined.
    let app = spawn().await;
    let acme = app.account("leads.view").await;
    let res = app.get(FIELDS, &acme.key).await;
    assert_status(&res, 200);
    assert_eq!(res.data(), &json!([]));

    define_field(&app, acme.tenant, "tier", "select", &["gold", "silver"]).await;
    define_field(&app, acme.tenant, "budget", "number", &[]).await;
    let res = app.get(FIELDS, &acme.key).await;
    assert_status(&res, 200);
    assert_eq!(
        res.data(),
        &json!([
            {"key": "budget", "label": "The budget", "type": "number", "options": []},
            {"key": "tier", "label": "The tier", "type": "select", "options": ["gold", "silver"]},
        ])
    );
}
