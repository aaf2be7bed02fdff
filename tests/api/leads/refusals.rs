//! Leads refusals (contract: Errors, Leads refusals): the standard error plus a top-level
//! `reason` — `nothing_to_identify`, `invalid`, `reason_required` (422) and `won_locked` (409).

use api_tests::{json, spawn};

use super::support::*;

#[actix_web::test]
async fn nothing_to_match_or_create_by_is_nothing_to_identify() {
    // Proves an upsert without a phone or email (or with empty ones) is refused, creating nothing.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    for body in [json!({"name": "Amina"}), json!({"name": "Amina", "phone": "", "email": null}), json!({})] {
        let res = app.post(LEADS, &acme.key, body.clone()).await;
        assert_refused(&res, 422, "nothing_to_identify");
    }
    assert_eq!(lead_count(&app, acme.tenant).await, 0);
}

#[actix_web::test]
async fn an_invalid_phone_or_email_is_invalid_with_the_field_named() {
    // Proves `reason: invalid` with `errors.<field>`, for the phone, the email and a stage the
    // contract does not list.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    for (body, field) in [
        (json!({"phone": "12"}), "phone"),
        (json!({"phone": "not a number"}), "phone"),
        (json!({"phone": "0712345678", "email": "amina@"}), "email"),
        (json!({"email": "amina"}), "email"),
        (json!({"phone": "0712345678", "stage": "dreaming"}), "stage"),
    ] {
        let res = app.post(LEADS, &acme.key, body.clone()).await;
        assert_refused(&res, 422, "invalid");
        assert!(res.body["errors"][field].is_array(), "errors.{field} for {body}: {}", res.body);
    }
    assert_eq!(lead_count(&app, acme.tenant).await, 0);
}

#[actix_web::test]
async fn lost_and_unqualified_without_a_reason_are_reason_required() {
    // Proves `reason_required` on an upsert that creates, one that updates, and the stage
    // operation; nothing is written.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    for stage in ["lost", "unqualified"] {
        let res = app.post(LEADS, &acme.key, json!({"phone": "0712345678", "stage": stage})).await;
        assert_refused(&res, 422, "reason_required");
        let res = app.post(LEADS, &acme.key, json!({"phone": "0712345678", "stage": stage, "reason": " "})).await;
        assert_refused(&res, 422, "reason_required");
    }
    assert_eq!(lead_count(&app, acme.tenant).await, 0);

    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    let res = app.post(LEADS, &acme.key, json!({"phone": "0712345678", "stage": "lost"})).await;
    assert_refused(&res, 422, "reason_required");
    for stage in ["lost", "unqualified"] {
        let res = set_stage(&app, &acme.key, &id, json!({"stage": stage})).await;
        assert_refused(&res, 422, "reason_required");
    }
    assert_eq!(read(&app, &acme.key, &id).await["stage"], "new");
}

#[actix_web::test]
async fn a_won_lead_moves_only_through_the_stage_operation() {
    // Proves `won_locked` (409) for an upsert moving a won lead, which keeps it won, and that
    // the stage operation moves it.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678", "stage": "won"})).await);

    let res = app.post(LEADS, &acme.key, json!({"phone": "0712345678", "stage": "new", "company": "Duka"})).await;
    assert_refused(&res, 409, "won_locked");
    let lead = read(&app, &acme.key, &id).await;
    assert_eq!((&lead["stage"], &lead["company"]), (&json!("won"), &json!(null)), "nothing applied");

    // sending the stage it already has is no move
    let data = upsert(&app, &acme.key, json!({"phone": "0712345678", "stage": "won"}), 200).await;
    assert_eq!(data["lead"]["stage"], "won");

    let res = set_stage(&app, &acme.key, &id, json!({"stage": "new"})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["stage"], "new");
    assert_eq!(res.data()["closed"], false);
}

#[actix_web::test]
async fn the_stage_operation_refuses_an_unknown_or_missing_stage() {
    // Proves `invalid` with `errors.stage` on the stage operation.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    for body in [json!({"stage": "dreaming"}), json!({}), json!({"stage": ""})] {
        let res = set_stage(&app, &acme.key, &id, body.clone()).await;
        assert_refused(&res, 422, "invalid");
        assert!(res.body["errors"]["stage"].is_array(), "{body}: {}", res.body);
    }
}

#[actix_web::test]
async fn a_member_of_the_wrong_json_type_is_invalid_too() {
    // Proves the body reader's refusals on the leads routes carry `reason: invalid` with
    // `errors.<field>`, like the service's own (contract: Leads refusals).
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    for (path, body, field) in [
        (LEADS.to_owned(), json!({"phone": 712345678}), "phone"),
        (LEADS.to_owned(), json!({"phone": "0712345678", "labels": ["VIP", 5]}), "labels[1]"),
        (stage_path(&id), json!({"stage": 5}), "stage"),
        (sub_path(&id, "notes"), json!({"body": ["x"]}), "body"),
        (LABELS.to_owned(), json!({"name": 5}), "name"),
    ] {
        let res = app.post(&path, &acme.key, body.clone()).await;
        assert_refused(&res, 422, "invalid");
        assert!(res.body["errors"][field].is_array(), "errors.{field} for {body}: {}", res.body);
    }
    let res = patch(&app, &acme.key, &id, json!({"archived": "yes"})).await;
    assert_refused(&res, 422, "invalid");
    assert_eq!(read(&app, &acme.key, &id).await["archived"], false);
}
