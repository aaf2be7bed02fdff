//! `PATCH /leads/{lead}` (contract: Leads — "change fields; null clears"; docs/api.md): what is
//! sent is set and null clears, archiving and restoring, custom fields merged and checked
//! against their definition, the stage with its rules, unknown keys refused, `leads.edit`.

use api_tests::{json, spawn};
use serde_json::Value;
use time::Duration;

use super::support::*;
use crate::framework::assert_error;

#[actix_web::test]
async fn a_patch_sets_what_is_sent_and_null_clears() {
    // Proves PATCH sets fields (normalized as the upsert does), clears the ones sent as null or
    // empty, leaves the others alone, and moves `updated_at` to the clock; the read agrees.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let lead = create(
        &app,
        &acme.key,
        json!({"phone": "0712345678", "name": "Amina", "company": "Duka", "title": "Owner", "score": 40}),
    )
    .await;
    let id = id_of(&lead);
    app.clock.advance(Duration::minutes(5));

    let changed = patched(
        &app,
        &acme.key,
        &id,
        json!({
            "name": null, "title": "", "company": " Duka Kubwa ", "score": 75, "email": "Amina@Duka.co.tz",
            "estimated_value": 250.5, "location": "Arusha",
        }),
    )
    .await;
    for (field, value) in [
        ("name", Value::Null),
        ("title", Value::Null),
        ("company", json!("Duka Kubwa")),
        ("score", json!(75)),
        ("email", json!("amina@duka.co.tz")),
        ("estimated_value", json!(250.5)),
        ("location", json!("Arusha")),
        ("phone", json!("+255712345678")),
        ("stage", json!("new")),
    ] {
        assert_eq!(changed[field], value, "{field} in {changed}");
    }
    assert_eq!(time_of(&changed, "updated_at"), app.clock.now());
    assert_eq!(time_of(&changed, "created_at"), time_of(&lead, "created_at"));
    assert_eq!(record(read(&app, &acme.key, &id).await), changed, "the read shows the change");

    let cleared = patched(&app, &acme.key, &id, json!({"score": null, "estimated_value": null})).await;
    assert_eq!((&cleared["score"], &cleared["estimated_value"]), (&Value::Null, &Value::Null));
    assert_eq!(cleared["company"], "Duka Kubwa", "a field not sent stays");

    // `currency` is the exception: null puts back the workspace's
    assert_eq!(patched(&app, &acme.key, &id, json!({"currency": "usd"})).await["currency"], "USD");
    assert_eq!(patched(&app, &acme.key, &id, json!({"currency": null})).await["currency"], "TZS");
}

#[actix_web::test]
async fn archived_true_archives_and_hides_the_lead_and_false_restores_it() {
    // Proves `archived`: `archived_at` at the clock's time, gone from the default list and in
    // `status=archived`; restored with `archived: false` (`archived_at` null, listed again).
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    let other = id_of(&create(&app, &acme.key, json!({"phone": "0754321987"})).await);
    app.clock.advance(Duration::hours(1));

    let lead = patched(&app, &acme.key, &id, json!({"archived": true})).await;
    assert_eq!(lead["archived"], true);
    assert_eq!(time_of(&lead, "archived_at"), app.clock.now());
    assert_eq!(ids(&list(&app, &acme.key, &[]).await), vec![other.clone()]);
    assert_eq!(ids(&list(&app, &acme.key, &[("status", "archived")]).await), vec![id.clone()]);
    assert_eq!(read(&app, &acme.key, &id).await["archived"], true);

    app.clock.advance(Duration::hours(1));
    let lead = patched(&app, &acme.key, &id, json!({"archived": false})).await;
    assert_eq!((&lead["archived"], &lead["archived_at"]), (&json!(false), &Value::Null));
    assert_eq!(sorted(ids(&list(&app, &acme.key, &[]).await)), sorted(vec![id, other]));
    assert_eq!(ids(&list(&app, &acme.key, &[("status", "archived")]).await), Vec::<String>::new());
}

#[actix_web::test]
async fn custom_fields_merge_and_a_value_of_the_wrong_type_is_invalid() {
    // Proves `custom_fields` merges with what the lead has, a key sent as null is removed, and
    // a value that does not fit the field's type is 422 `invalid`, changing nothing.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    define_field(&app, acme.tenant, "budget", "number", &[]).await;
    define_field(&app, acme.tenant, "tier", "select", &["gold", "silver"]).await;
    let lead = create(&app, &acme.key, json!({"phone": "0712345678", "custom_fields": {"budget": 100}})).await;
    let id = id_of(&lead);
    assert_eq!(lead["custom_fields"], json!({"budget": 100}));

    let lead = patched(&app, &acme.key, &id, json!({"custom_fields": {"tier": "gold"}})).await;
    assert_eq!(lead["custom_fields"], json!({"budget": 100, "tier": "gold"}), "merged");
    let lead = patched(&app, &acme.key, &id, json!({"custom_fields": {"budget": 250.5}})).await;
    assert_eq!(lead["custom_fields"], json!({"budget": 250.5, "tier": "gold"}));
    let lead = patched(&app, &acme.key, &id, json!({"custom_fields": {"tier": null}})).await;
    assert_eq!(lead["custom_fields"], json!({"budget": 250.5}), "null removes the key");

    for wrong in [json!({"budget": "lots"}), json!({"budget": true}), json!({"tier": "bronze"})] {
        let res = patch(&app, &acme.key, &id, json!({"custom_fields": wrong, "company": "Duka"})).await;
        assert_refused(&res, 422, "invalid");
        let errors = res.body["errors"].as_object().map(|e| e.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
        assert!(errors.iter().any(|k| k.starts_with("custom_fields")), "{wrong}: {}", res.body);
    }
    let lead = read(&app, &acme.key, &id).await;
    assert_eq!(lead["custom_fields"], json!({"budget": 250.5}), "nothing applied");
    assert_eq!(lead["company"], Value::Null, "nothing applied");
}

#[actix_web::test]
async fn a_custom_field_the_workspace_has_not_defined_is_not_stored_by_patch() {
    // Proves PATCH keeps to the workspace's definitions as the upsert does: a key no field
    // defines is not applied (refused or ignored), so no value escapes its type check.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    define_field(&app, acme.tenant, "budget", "number", &[]).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);

    let res = patch(&app, &acme.key, &id, json!({"custom_fields": {"shoe_size": 42}})).await;
    assert!(res.status == 200 || res.status == 422, "{}: {}", res.status, res.body);
    assert_eq!(read(&app, &acme.key, &id).await["custom_fields"], json!({}), "{}", res.body);
}

#[actix_web::test]
async fn a_stage_sent_with_patch_follows_the_stage_rules() {
    // Proves `stage` with `reason` (closing, `lost_reason`), `reason_required` without one, and
    // `won_locked` (409) for a won lead, which keeps its stage and every other field.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    app.clock.advance(Duration::minutes(2));

    let res = patch(&app, &acme.key, &id, json!({"stage": "lost"})).await;
    assert_refused(&res, 422, "reason_required");
    let lead = patched(&app, &acme.key, &id, json!({"stage": "lost", "reason": "no budget", "company": "Duka"})).await;
    assert_eq!(
        (&lead["stage"], &lead["closed"], &lead["lost_reason"], &lead["company"]),
        (&json!("lost"), &json!(true), &json!("no budget"), &json!("Duka"))
    );
    assert_eq!(time_of(&lead, "closed_at"), app.clock.now());
    let lead = patched(&app, &acme.key, &id, json!({"stage": "contacted"})).await;
    assert_eq!(
        (&lead["closed"], &lead["closed_at"], &lead["lost_reason"]),
        (&json!(false), &Value::Null, &Value::Null)
    );

    let won = id_of(&create(&app, &acme.key, json!({"phone": "0754321987", "stage": "won"})).await);
    let res = patch(&app, &acme.key, &won, json!({"stage": "new", "company": "Duka"})).await;
    assert_refused(&res, 409, "won_locked");
    let lead = read(&app, &acme.key, &won).await;
    assert_eq!((&lead["stage"], &lead["company"]), (&json!("won"), &Value::Null), "nothing applied");
    let res = patch(&app, &acme.key, &won, json!({"stage": "lost", "reason": "changed their mind"})).await;
    assert_refused(&res, 409, "won_locked");
    assert_eq!(read(&app, &acme.key, &won).await["stage"], "won");
}

#[actix_web::test]
async fn a_key_patch_does_not_know_is_invalid_and_nothing_is_applied() {
    // Proves any key outside the record's changeable fields (assignment has its own route) is
    // 422 `invalid` naming it, as are values of the wrong shape; the valid keys sent with them
    // are not applied.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678", "company": "Duka"})).await);
    for (body, field) in [
        (json!({"favourite_colour": "blue", "company": "Kilimo"}), "favourite_colour"),
        (json!({"assigned_to": 1, "company": "Kilimo"}), "assigned_to"),
        (json!({"id": "x", "company": "Kilimo"}), "id"),
        (json!({"archived": "yes", "company": "Kilimo"}), "archived"),
        (json!({"score": 101, "company": "Kilimo"}), "score"),
        (json!({"stage": "dreaming", "company": "Kilimo"}), "stage"),
    ] {
        let res = patch(&app, &acme.key, &id, body.clone()).await;
        assert_refused(&res, 422, "invalid");
        assert!(res.body["errors"][field].is_array(), "errors.{field} for {body}: {}", res.body);
    }
    assert_eq!(read(&app, &acme.key, &id).await["company"], "Duka");
}

#[actix_web::test]
async fn patch_needs_leads_edit_and_answers_404_for_no_lead() {
    // Proves 403 for a key whose issuer only views (nothing changed), and 404 for ids that name
    // no lead.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    let viewer = app.user(acme.tenant, "leads.view").await;
    let viewer = app.key(acme.tenant, viewer).await;

    assert_error(&patch(&app, &viewer, &id, json!({"company": "Duka"})).await, 403);
    assert_error(&patch(&app, &viewer, &id, json!({"archived": true})).await, 403);
    let lead = read(&app, &acme.key, &id).await;
    assert_eq!((&lead["company"], &lead["archived"]), (&Value::Null, &json!(false)));
    for missing in ["42", &uuid::Uuid::new_v4().to_string()] {
        assert_error(&patch(&app, &acme.key, missing, json!({"company": "Duka"})).await, 404);
    }
}
