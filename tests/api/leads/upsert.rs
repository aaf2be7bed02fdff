//! `POST /leads` (contract: Lead, Leads upsert rules): the whole record on creation, matching a
//! person by any phone form or an email in any case, empty values that never blank a field,
//! unknown keys in `ignored`, and labels matched by name or refused without `leads.settings`.

use api_tests::{json, spawn};
use serde_json::Value;
use time::Duration;
use time::format_description::well_known::Rfc3339;

use super::support::*;

/// The contract's Lead fields, sorted (the upsert answer adds nothing to them).
const LEAD_FIELDS: [&str; 34] = [
    "archived",
    "archived_at",
    "assigned_to",
    "closed",
    "closed_at",
    "company",
    "created_at",
    "created_by",
    "currency",
    "custom_fields",
    "email",
    "estimated_value",
    "id",
    "interest",
    "labels",
    "last_activity_at",
    "location",
    "lost_reason",
    "name",
    "next_action",
    "next_action_at",
    "overdue",
    "phone",
    "score",
    "score_reason",
    "source_channel",
    "source_detail",
    "sources",
    "stage",
    "stage_label",
    "summary",
    "title",
    "updated_at",
    "url",
];

#[actix_web::test]
async fn a_new_person_gets_a_lead_with_every_field_of_the_contract() {
    // Proves the Lead record: every contract field, normalized phone and email, the number in
    // main units, the workspace currency, created_by naming the key's issuer, and `overdue`
    // computed from the clock.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let now = app.clock.now();
    let next = (now + Duration::days(1)).format(&Rfc3339).expect("format");
    let res = app
        .post(
            LEADS,
            &acme.key,
            json!({
                "name": "Amina Juma", "title": "Owner", "company": "Duka", "phone": "+255 712 345 678",
                "email": " Amina@Duka.CO.TZ ", "location": "Arusha", "interest": "Solar kits",
                "estimated_value": 1500.5, "score": 80, "score_reason": "asked for a quote",
                "summary": "Wants 3 kits", "source_channel": "whatsapp", "source_detail": "ad 12",
                "next_action": "Call back", "next_action_at": next,
            }),
        )
        .await;
    assert_status(&res, 201);
    let data = res.data();
    assert_eq!(data["created"], true);
    assert_eq!(data["was_closed"], false);
    assert_eq!(data["ignored"], json!([]));
    assert_eq!(data["refused"], json!([]));
    assert_eq!(data["possible_duplicate_of"], Value::Null);
    let lead = &data["lead"];
    let mut keys: Vec<&str> = lead.as_object().expect("lead object").keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, LEAD_FIELDS, "{lead}");

    let id = id_of(lead);
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "a UUID id: {id}");
    for (field, value) in [
        ("name", json!("Amina Juma")),
        ("title", json!("Owner")),
        ("company", json!("Duka")),
        ("phone", json!("+255712345678")),
        ("email", json!("amina@duka.co.tz")),
        ("location", json!("Arusha")),
        ("stage", json!("new")),
        ("stage_label", json!("New")),
        ("closed", json!(false)),
        ("archived", json!(false)),
        ("closed_at", Value::Null),
        ("archived_at", Value::Null),
        ("lost_reason", Value::Null),
        ("labels", json!([])),
        ("interest", json!("Solar kits")),
        ("currency", json!("TZS")),
        ("score", json!(80)),
        ("score_reason", json!("asked for a quote")),
        ("summary", json!("Wants 3 kits")),
        ("source_channel", json!("whatsapp")),
        ("source_detail", json!("ad 12")),
        ("assigned_to", Value::Null),
        ("next_action", json!("Call back")),
        ("overdue", json!(false)),
        ("created_by", json!({"kind": "api", "id": acme.user.0})),
        ("custom_fields", json!({})),
    ] {
        assert_eq!(lead[field], value, "{field} in {lead}");
    }
    // a number in main units, not minor units and not a string
    assert!(lead["estimated_value"].is_number(), "{lead}");
    assert_eq!(lead["estimated_value"].as_f64(), Some(1500.5));
    assert_eq!(time_of(lead, "next_action_at"), now + Duration::days(1));
    for field in ["created_at", "updated_at", "last_activity_at"] {
        assert_eq!(time_of(lead, field), now, "{field}");
    }
    assert!(lead["sources"].is_array(), "{lead}");
    let url = lead["url"].as_str().expect("url");
    assert!(url.starts_with("http") && url.ends_with(&format!("/leads/{id}")), "{url}");

    // overdue once next_action_at has passed on an open lead
    app.clock.advance(Duration::days(2));
    assert_eq!(read(&app, &acme.key, &id).await["overdue"], true);
}

#[actix_web::test]
async fn a_sent_currency_is_kept_in_upper_case() {
    // Proves `currency` defaults only when not sent.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let lead = create(&app, &acme.key, json!({"phone": "0712345678", "estimated_value": 20, "currency": "usd"})).await;
    assert_eq!(lead["currency"], "USD");
    assert_eq!(lead["estimated_value"].as_f64(), Some(20.0));
}

#[actix_web::test]
async fn every_common_form_of_a_phone_finds_the_same_person() {
    // Proves lenient phone matching: `+255 712 345 678`, `0712345678` and `255712345678` are
    // one person and one lead.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let lead = create(&app, &acme.key, json!({"phone": "+255 712 345 678", "name": "Amina"})).await;
    let id = id_of(&lead);
    for form in ["0712345678", "255712345678"] {
        let data = upsert(&app, &acme.key, json!({"phone": form}), 200).await;
        assert_eq!(data["created"], false, "{form}: {data}");
        assert_eq!(data["lead"]["id"], id.as_str(), "{form}");
        assert_eq!(data["lead"]["phone"], "+255712345678", "{form}");
        assert_eq!(data["lead"]["name"], "Amina", "{form}");
    }
    assert_eq!(lead_count(&app, acme.tenant).await, 1);
}

#[actix_web::test]
async fn an_email_in_another_case_finds_the_person_and_a_new_phone_joins_that_lead() {
    // Proves email matching without case, and that a new phone sent with a known email is
    // added to the email's lead (and finds it afterwards).
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"email": "amina@duka.co.tz"})).await);

    let data = upsert(&app, &acme.key, json!({"email": "AMINA@Duka.Co.Tz"}), 200).await;
    assert_eq!((&data["created"], &data["lead"]["id"]), (&json!(false), &json!(id)));

    let data = upsert(&app, &acme.key, json!({"email": "Amina@duka.co.tz", "phone": "0754 321 987"}), 200).await;
    assert_eq!(data["lead"]["id"], id.as_str());
    assert_eq!(data["lead"]["phone"], "+255754321987");
    assert_eq!(data["possible_duplicate_of"], Value::Null);

    let data = upsert(&app, &acme.key, json!({"phone": "+255754321987"}), 200).await;
    assert_eq!(data["lead"]["id"], id.as_str(), "the phone now names the email's lead");
    assert_eq!(lead_count(&app, acme.tenant).await, 1);
}

#[actix_web::test]
async fn a_phone_of_one_lead_and_an_email_of_another_match_the_phone_s_lead() {
    // Proves the phone wins the match, and the other lead is named in `possible_duplicate_of`.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let a = id_of(&create(&app, &acme.key, json!({"phone": "0712345678", "name": "Amina"})).await);
    let b = id_of(&create(&app, &acme.key, json!({"email": "juma@duka.co.tz", "name": "Juma"})).await);

    let data = upsert(&app, &acme.key, json!({"phone": "+255712345678", "email": "JUMA@duka.co.tz"}), 200).await;
    assert_eq!(data["created"], false);
    assert_eq!(data["lead"]["id"], a.as_str());
    assert_eq!(data["possible_duplicate_of"], b.as_str());
    // the email stays B's identity
    let data = upsert(&app, &acme.key, json!({"email": "juma@duka.co.tz"}), 200).await;
    assert_eq!(data["lead"]["id"], b.as_str());
    assert_eq!(lead_count(&app, acme.tenant).await, 2);
}

#[actix_web::test]
async fn empty_values_never_blank_a_field_and_unknown_keys_are_ignored() {
    // Proves `""` and null are not applied and listed in `ignored` with unknown keys and
    // undefined custom fields, the untouched lead keeps its `updated_at`, and a changed value
    // changes it and moves `updated_at` to the clock.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let created = app.clock.now();
    let id =
        id_of(&create(&app, &acme.key, json!({"phone": "0712345678", "name": "Amina Juma", "company": "Duka"})).await);
    app.clock.advance(Duration::minutes(5));

    let data = upsert(
        &app,
        &acme.key,
        json!({
            "phone": "0712345678", "name": "", "company": null, "title": "   ", "favourite_colour": "blue",
            "custom_fields": {"shoe_size": 42},
        }),
        200,
    )
    .await;
    let lead = &data["lead"];
    assert_eq!(lead["id"], id.as_str());
    assert_eq!((&lead["name"], &lead["company"], &lead["title"]), (&json!("Amina Juma"), &json!("Duka"), &Value::Null));
    assert_eq!(data["ignored"], json!(["company", "custom_fields.shoe_size", "favourite_colour", "name", "title"]));
    assert_eq!(lead["custom_fields"], json!({}), "an undefined custom field is not applied");
    assert_eq!(time_of(lead, "updated_at"), created, "nothing changed");

    let data = upsert(&app, &acme.key, json!({"phone": "0712345678", "company": "Duka Kubwa"}), 200).await;
    let lead = &data["lead"];
    assert_eq!((&lead["name"], &lead["company"]), (&json!("Amina Juma"), &json!("Duka Kubwa")));
    assert_eq!(data["ignored"], json!([]));
    assert_eq!(time_of(lead, "updated_at"), app.clock.now());
    assert_eq!(time_of(lead, "created_at"), created);
    assert_eq!(read(&app, &acme.key, &id).await["company"], "Duka Kubwa");
}

#[actix_web::test]
async fn labels_are_matched_by_name_and_a_new_one_needs_lead_settings() {
    // Proves label rules: a new name without `leads.settings` is refused (and not on the lead);
    // with it the label is created and linked as `{id, name, color}`; an existing label is
    // matched in another case by anyone who may edit.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let settings_user = app.user(acme.tenant, "leads.view,leads.edit,leads.settings").await;
    let settings = app.key(acme.tenant, settings_user).await;

    let data = upsert(&app, &acme.key, json!({"phone": "0712345678", "labels": ["VIP"]}), 201).await;
    assert_eq!(data["refused"], json!(["VIP"]));
    assert_eq!(data["lead"]["labels"], json!([]));

    let data = upsert(&app, &settings, json!({"phone": "0712345678", "labels": ["VIP"]}), 200).await;
    assert_eq!(data["refused"], json!([]));
    let labels = data["lead"]["labels"].as_array().expect("labels").clone();
    assert_eq!(labels.len(), 1, "{labels:?}");
    assert_eq!(labels[0]["name"], "VIP");
    assert!(labels[0]["id"].is_i64() && labels[0]["color"].is_string(), "{labels:?}");

    let data = upsert(&app, &acme.key, json!({"phone": "0754321987", "labels": ["vip"]}), 201).await;
    assert_eq!(data["refused"], json!([]));
    assert_eq!(data["lead"]["labels"], json!(labels), "the existing label, matched without case");
}
