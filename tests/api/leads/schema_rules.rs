//! The rules the OpenAPI description states of the leads' bodies (`leads::doc`), each one a
//! rule the service applies: a value the description refuses is a 422 with `reason: invalid`
//! naming the field, and nothing is written.

use api_tests::{json, spawn};
use serde_json::Value;

use super::support::*;

fn refused(res: &api_tests::Resp, field: &str, body: &Value) {
    assert_refused(res, 422, "invalid");
    assert!(res.body["errors"][field].is_array(), "errors.{field} for {body}: {}", res.body);
}

#[actix_web::test]
async fn the_upsert_refuses_what_its_description_refuses() {
    // Proves the limits the upsert's description states: the currency's three letters, the
    // score's 0 to 100, a value of at least 0, an RFC 3339 next_action_at, the stages, label
    // names of up to 60 characters, the texts' and the note's lengths.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let long = |n: usize| "a".repeat(n);
    for (member, value) in [
        ("currency", json!("US")),
        ("currency", json!("US1")),
        ("score", json!(101)),
        ("score", json!(-1)),
        ("estimated_value", json!(-0.5)),
        ("estimated_value", json!(1e15)),
        ("next_action_at", json!("tomorrow")),
        ("stage", json!("dreaming")),
        ("labels", json!([long(61)])),
        ("name", json!(long(192))),
        ("interest", json!(long(2_001))),
        ("reason", json!(long(2_001))),
        ("note", json!(long(10_001))),
    ] {
        let mut body = json!({"phone": "0712345678"});
        body[member] = value;
        let res = app.post(LEADS, &acme.key, body.clone()).await;
        refused(&res, member, &body);
    }
    assert_eq!(lead_count(&app, acme.tenant).await, 0);
}

#[actix_web::test]
async fn a_lead_patch_refuses_what_its_description_refuses() {
    // Proves the patch's stated limits: a stage that is none (or null), an empty currency, a
    // score out of range, a negative value, a next_action_at that is no RFC 3339 time, an
    // unreadable phone or email, a name too long.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678", "name": "Amina"})).await);
    for (member, value) in [
        ("stage", json!("dreaming")),
        ("stage", Value::Null),
        ("currency", json!("")),
        ("score", json!(101)),
        ("estimated_value", json!(-1)),
        ("next_action_at", json!("")),
        ("phone", json!("12")),
        ("email", json!("amina")),
        ("name", json!("a".repeat(192))),
    ] {
        let body = json!({ member: value });
        let res = patch(&app, &acme.key, &id, body.clone()).await;
        refused(&res, member, &body);
    }
    assert_eq!(read(&app, &acme.key, &id).await["name"], "Amina", "nothing was written");
}

#[actix_web::test]
async fn stage_note_and_label_bodies_refuse_what_their_descriptions_refuse() {
    // Proves the stage operation's required stage, a note's 1 to 10,000 characters, a labels
    // body's 1 to 100 names of 1 to 60 characters, and a label's name, colour and description.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    for body in [json!({}), json!({"stage": null}), json!({"stage": ""})] {
        refused(&set_stage(&app, &acme.key, &id, body.clone()).await, "stage", &body);
    }
    for body in [json!({}), json!({"body": ""}), json!({"body": "   "}), json!({"body": "a".repeat(10_001)})] {
        refused(&app.post(&sub_path(&id, "notes"), &acme.key, body.clone()).await, "body", &body);
    }
    let many: Vec<String> = (0..101).map(|i| format!("L{i}")).collect();
    for labels in [json!([]), json!([""]), json!([" "]), json!(["a".repeat(61)]), json!(many)] {
        let body = json!({ "labels": labels });
        refused(&app.post(&sub_path(&id, "labels"), &acme.key, body.clone()).await, "labels", &body);
        refused(&remove_labels(&app, &acme.key, &id, labels.clone()).await, "labels", &body);
    }
    for (body, field) in [
        (json!({"name": ""}), "name"),
        (json!({"name": "a".repeat(61)}), "name"),
        (json!({"name": "VIP", "color": "red"}), "color"),
        (json!({"name": "VIP", "color": "#12345"}), "color"),
        (json!({"name": "VIP", "description": "a".repeat(501)}), "description"),
    ] {
        refused(&app.post(LABELS, &acme.key, body.clone()).await, field, &body);
    }
    let label = label_id_of(&new_label(&app, &acme.key, json!({"name": "VIP"})).await);
    for (body, field) in [
        (json!({"name": " "}), "name"),
        (json!({"color": "#GGGGGG"}), "color"),
        (json!({"description": "a".repeat(501)}), "description"),
    ] {
        refused(&app.patch(&label_path(label), &acme.key, body.clone()).await, field, &body);
    }
}

#[actix_web::test]
async fn limits_count_the_text_as_sent_spaces_included() {
    // Proves that every length limit of the leads' bodies counts the text as the description's
    // maxLength does, before the service trims it: a text within its limit only once trimmed
    // is refused, on the upsert, the patch, notes, labels and label definitions.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let padded = |n: usize| format!(" {}\r", "a".repeat(n - 1));
    for (member, value) in [
        ("name", json!(padded(191))),
        ("interest", json!(padded(2_000))),
        ("reason", json!(padded(2_000))),
        ("note", json!(padded(10_000))),
        ("labels", json!([padded(60)])),
    ] {
        let mut body = json!({"phone": "0712345678"});
        body[member] = value;
        refused(&app.post(LEADS, &acme.key, body.clone()).await, member, &body);
    }
    assert_eq!(lead_count(&app, acme.tenant).await, 0);
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678", "name": "Amina"})).await);
    let body = json!({"name": padded(191)});
    refused(&patch(&app, &acme.key, &id, body.clone()).await, "name", &body);
    let body = json!({"body": padded(10_000)});
    refused(&app.post(&sub_path(&id, "notes"), &acme.key, body.clone()).await, "body", &body);
    let body = json!({"labels": [padded(60)]});
    refused(&app.post(&sub_path(&id, "labels"), &acme.key, body.clone()).await, "labels", &body);
    let body = json!({"name": padded(60)});
    refused(&app.post(LABELS, &acme.key, body.clone()).await, "name", &body);
    let body = json!({"name": "VIP", "description": padded(500)});
    refused(&app.post(LABELS, &acme.key, body.clone()).await, "description", &body);
    let label = label_id_of(&new_label(&app, &acme.key, json!({"name": "VIP"})).await);
    for (body, field) in [(json!({"name": padded(60)}), "name"), (json!({"description": padded(500)}), "description")] {
        refused(&app.patch(&label_path(label), &acme.key, body.clone()).await, field, &body);
    }
    assert_eq!(read(&app, &acme.key, &id).await["name"], "Amina", "nothing was written");
}
