//! The upsert: one lead per person whatever the phone's form, the limits checked all at once,
//! nothing without an identity, and `Idempotency-Key` replays that ignore member order.

use kernel::ErrorKind;
use serde_json::json;
use store::idempotency::{Answer, Key};

use crate::common::*;

#[tokio::test]
async fn every_form_of_a_phone_and_any_case_of_an_email_is_one_person() {
    let env = env().await;
    let acme = env.account(EDITOR).await;
    let lead = env.create(&acme, json!({"phone": "+255 712 345 678", "name": "Amina"})).await;
    for body in [json!({"phone": "0712345678"}), json!({"phone": "255712345678", "email": "Amina@Duka.co.tz"})] {
        let again = env.upsert(&acme, body.clone()).await.expect("upsert");
        assert!(!again.created, "{body}");
        assert_eq!(again.lead.id, lead.id, "{body}");
    }
    let by_email = env.upsert(&acme, json!({"email": "AMINA@duka.CO.TZ"})).await.expect("upsert");
    assert_eq!(by_email.lead.id, lead.id, "the email joined the lead");
    assert_eq!(by_email.lead.name.as_deref(), Some("Amina"), "never blanked");
}

#[tokio::test]
async fn empty_values_and_unknown_members_are_ignored_not_applied() {
    let env = env().await;
    let acme = env.account(EDITOR).await;
    env.create(&acme, json!({"phone": "0712345678", "company": "Duka"})).await;
    let again = env
        .upsert(&acme, json!({"phone": "0712345678", "company": "  ", "title": null, "shoe_size": 42}))
        .await
        .expect("upsert");
    assert_eq!(again.ignored, ["company", "shoe_size", "title"]);
    assert_eq!(again.lead.company.as_deref(), Some("Duka"));
}

#[tokio::test]
async fn every_limit_broken_is_named_at_once_and_nothing_is_written() {
    let env = env().await;
    let acme = env.account(EDITOR).await;
    let body = json!({
        "phone": "0712345678", "name": "n".repeat(192), "score": 101, "email": "amina@",
        "currency": "shillings", "estimated_value": -1, "stage": "dreaming", "labels": ["l".repeat(61)],
    });
    let error = assert_refused(env.upsert(&acme, body).await, ErrorKind::Validation, "invalid");
    assert_eq!(fields(&error), ["currency", "email", "estimated_value", "labels", "name", "score", "stage"]);
    let error =
        assert_refused(env.upsert(&acme, json!({"name": "Amina"})).await, ErrorKind::Validation, "nothing_to_identify");
    assert!(error.errors.is_empty(), "{error:?}");
    let created = env.upsert(&acme, json!({"phone": "0712345678"})).await.expect("upsert");
    assert!(created.created, "the refusals wrote no lead");
}

#[tokio::test]
async fn a_key_replays_the_first_answer_to_the_same_body_in_any_member_order() {
    let env = env().await;
    let acme = env.account(EDITOR).await;
    let key = || Key::parse("order-42").expect("key");
    let first = env
        .leads
        .upsert(&acme, upsert_body(json!({"phone": "0712345678", "name": "Amina", "title": null})), key())
        .await
        .expect("first");
    let Answer::Done(first) = first else { panic!("the first request does the work") };
    let reordered = upsert_body(json!({"title": null, "name": "Amina", "phone": "0712345678"}));
    let replay = env.leads.upsert(&acme, reordered, key()).await.expect("replay");
    let Answer::Replay(replayed) = replay else { panic!("the same body again is a replay") };
    assert_eq!(replayed["lead"]["id"], json!(first.lead.id));

    // a member sent as null is part of the body: without it, this is another request
    let other = env.leads.upsert(&acme, upsert_body(json!({"phone": "0712345678", "name": "Amina"})), key()).await;
    assert_eq!(other.expect_err("another body").kind, ErrorKind::Validation);
}
