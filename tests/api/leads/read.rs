//! `GET /leads/{lead}` (contract: Lead, Leads): the full record plus the person's identities and
//! `possible_duplicate`; an id that is not a lead's answers 404.

use api_tests::{json, spawn};
use serde_json::Value;

use super::support::*;
use crate::framework::assert_error;

#[actix_web::test]
async fn the_single_read_adds_identities_and_a_possible_duplicate() {
    // Proves the read: the upsert's record, the identities (phone as E.164 digits, email in
    // lower case), and another lead of the same name in any case as `possible_duplicate`.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let lead = create(
        &app,
        &acme.key,
        json!({"phone": "+255 712 345 678", "email": "Amina@Duka.co.tz", "name": "Amina Juma", "company": "Duka"}),
    )
    .await;
    let id = id_of(&lead);
    let twin = id_of(&create(&app, &acme.key, json!({"phone": "0754321987", "name": "AMINA JUMA"})).await);
    let alone = id_of(&create(&app, &acme.key, json!({"phone": "0713111222", "name": "Baraka"})).await);
    let nameless = id_of(&create(&app, &acme.key, json!({"phone": "0715222333"})).await);

    let read_back = read(&app, &acme.key, &id).await;
    let mut identities = read_back["identities"].as_array().expect("identities").clone();
    identities.sort_by_key(|i| i["kind"].as_str().map(str::to_owned));
    assert_eq!(
        identities,
        vec![json!({"kind": "email", "value": "amina@duka.co.tz"}), json!({"kind": "phone", "value": "255712345678"})]
    );
    assert_eq!(read_back["possible_duplicate"]["id"], twin.as_str());
    assert_eq!(read_back["possible_duplicate"]["name"], "AMINA JUMA");
    // everything else is the record the upsert answered
    let mut record = read_back.as_object().expect("lead").clone();
    record.remove("identities");
    record.remove("possible_duplicate");
    assert_eq!(Value::Object(record), lead);

    assert_eq!(read(&app, &acme.key, &twin).await["possible_duplicate"]["id"], id.as_str());
    for lonely in [alone, nameless] {
        let other = read(&app, &acme.key, &lonely).await;
        assert_eq!(other["possible_duplicate"], Value::Null, "{other}");
        assert!(other.as_object().is_some_and(|o| o.contains_key("possible_duplicate")), "present as null");
    }
}

#[actix_web::test]
async fn an_id_that_is_no_lead_is_not_found() {
    // Proves 404 for a non-UUID and an unknown UUID.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    for id in ["42", "not-a-uuid", &uuid::Uuid::new_v4().to_string()] {
        assert_error(&app.get(&lead_path(id), &acme.key).await, 404);
        assert_error(&set_stage(&app, &acme.key, id, json!({"stage": "won"})).await, 404);
    }
}
