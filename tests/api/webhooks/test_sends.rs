//! Test sends and the event catalogue (contract: Webhooks management, Events): a test send posts
//! a signed sample marked `test: true` and reports the receiver's answer without logging,
//! retrying or counting it; `GET /webhooks/events` lists every group and event of the contract
//! with a sample, and the `message.sent` sample has the fields of a real delivery.

use serde_json::{Value, json};

use super::support::*;
use crate::sms::sms_account;

// ---------------------------------------------------------------------------------------------
// Test sends

/// A test send without an event posts a signed `webhook.test` sample marked `test: true` and
/// answers what the receiver did.
#[actix_web::test]
async fn a_test_send_posts_a_signed_webhook_test_sample() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let receiver = Receiver::answering(200).await;
    let (id, secret) = register(&app, &account.key, &receiver.url(), &["message.sent"]).await;

    let res = app.post(&format!("{}/test", path(id)), &account.key, json!({})).await;
    assert_status(&res, 200);
    let answer = res.data();
    assert_eq!(answer["delivered"], true);
    assert_eq!(answer["status"], 200);
    assert!(answer["duration_ms"].as_i64().is_some_and(|ms| ms >= 0), "{answer}");
    assert_eq!(answer["response_excerpt"], "thanks");
    assert_eq!(answer["error"], Value::Null);

    let requests = receiver.requests().await;
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_signed(request, &secret, app.clock.now());
    let body: Value = serde_json::from_slice(&request.body).expect("JSON body");
    assert_eq!(body["test"], true);
    assert_eq!(body["event"], "webhook.test");
    assert_eq!(header(request, "x-event"), "webhook.test");
    let event_id = body["event_id"].as_str().expect("event_id");
    assert!(uuid::Uuid::parse_str(event_id).is_ok(), "{event_id}");
    assert_eq!(header(request, "x-event-id"), event_id);
    let timestamp = body["timestamp"].as_str().expect("timestamp");
    assert!(time::OffsetDateTime::parse(timestamp, &time::format_description::well_known::Rfc3339).is_ok());
}

/// A test send of a named event posts that event's sample as listed, marked `test: true`; an
/// event outside the catalogue is refused on `event` and nothing is sent.
#[actix_web::test]
async fn a_test_send_of_a_lead_event_carries_the_lead_sample() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let receiver = Receiver::answering(200).await;
    let (id, secret) = register(&app, &account.key, &receiver.url(), &["message.sent"]).await;

    let res = app.post(&format!("{}/test", path(id)), &account.key, json!({"event": "lead.created"})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["delivered"], true);
    let requests = receiver.requests().await;
    let request = &requests[0];
    assert_signed(request, &secret, app.clock.now());
    assert_eq!(header(request, "x-event"), "lead.created");
    let mut body: Value = serde_json::from_slice(&request.body).expect("JSON body");
    assert_eq!(body["test"], true);
    assert_eq!(body["event"], "lead.created");
    assert!(body["lead"].is_object(), "{body}");

    let listing = app.get(&format!("{WEBHOOKS}/events"), &account.key).await;
    let mut sample = listing.data()["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["events"].as_array().expect("events").clone())
        .find(|e| e["name"] == "lead.created")
        .expect("lead.created listed")["sample"]
        .clone();
    for field in ["event_id", "timestamp", "test"] {
        body.as_object_mut().expect("object").remove(field);
        sample.as_object_mut().expect("object").remove(field);
    }
    assert_eq!(body, sample);

    let res = app.post(&format!("{}/test", path(id)), &account.key, json!({"event": "lead.exploded"})).await;
    assert_field_error(&res, "event");
    assert_eq!(receiver.requests().await.len(), 1);
}

/// A test send the receiver answers with 500 is reported as not delivered, and is never
/// retried, logged or counted toward pausing.
#[actix_web::test]
async fn a_failed_test_send_is_reported_and_never_retried_or_logged() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let receiver = Receiver::answering(500).await;
    let (id, _) = register(&app, &account.key, &receiver.url(), &["message.sent"]).await;

    let res = app.post(&format!("{}/test", path(id)), &account.key, json!({})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["delivered"], false);
    assert_eq!(res.data()["status"], 500);

    app.run_jobs().await;
    app.advance(time::Duration::hours(2)).await;
    app.advance(time::Duration::hours(7)).await;
    assert_eq!(receiver.requests().await.len(), 1, "never retried");
    let log = app.get(&format!("{}/deliveries", path(id)), &account.key).await;
    assert_status(&log, 200);
    assert_eq!(log.data()["pagination"]["total"], 0, "{}", log.body);
    assert_eq!(app.get(&path(id), &account.key).await.data()["consecutive_failures"], 0);
}

/// A test send to a URL nothing listens on answers no status and the error.
#[actix_web::test]
async fn a_test_send_to_a_dead_url_reports_the_error() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let (id, _) = register(&app, &account.key, &dead_url(), &["message.sent"]).await;
    let res = app.post(&format!("{}/test", path(id)), &account.key, json!({})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["delivered"], false);
    assert_eq!(res.data()["status"], Value::Null);
    assert!(res.data()["error"].as_str().is_some_and(|e| !e.is_empty()), "{}", res.body);
    assert_eq!(app.get(&path(id), &account.key).await.data()["consecutive_failures"], 0);
}

// ---------------------------------------------------------------------------------------------
// The event listing

/// `GET /webhooks/events` lists the contract's groups in its order with every event it names
/// (twelve chat group events), each with a sample carrying the envelope.
#[actix_web::test]
async fn the_event_listing_has_every_contract_group_and_event_with_a_sample() {
    let app = api_tests::spawn().await;
    let account = app.account("webhooks.view").await;
    let res = app.get(&format!("{WEBHOOKS}/events"), &account.key).await;
    assert_status(&res, 200);
    let groups = res.data()["groups"].as_array().expect("groups");
    let names = |group: &Value| -> Vec<String> {
        group["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| e["name"].as_str().expect("name").to_owned())
            .collect()
    };
    let contract: [(&str, &[&str]); 13] = [
        (
            "Orders",
            &[
                "order.received",
                "cart.submitted",
                "cart.abandoned",
                "order.status_changed",
                "order.cancelled",
                "order.paid",
            ],
        ),
        ("Catalogue", &["sync.completed", "stock.low", "product.blocked", "product.drifted"]),
        (
            "Messages",
            &[
                "message.received",
                "message.sent",
                "message.delivered",
                "message.read",
                "message.failed",
                "message.echoed",
                "message.updated",
            ],
        ),
        ("Campaigns", &["campaign.completed", "campaign.failed"]),
        ("Chat groups", &["group.created", "group.participant_joined"]),
        ("Templates", &["template.status_changed"]),
        ("Forms", &["form.submitted", "form.status_changed"]),
        ("Flows", &["flow.session.started", "flow.session.ended"]),
        (
            "Leads",
            &[
                "lead.created",
                "lead.updated",
                "lead.stage_changed",
                "lead.label_added",
                "lead.label_removed",
                "lead.note_added",
                "lead.assigned",
                "lead.merged",
                "lead.deleted",
            ],
        ),
        (
            "Voice",
            &[
                "voice.otp.answered",
                "voice.otp.completed",
                "voice.otp.failed",
                "voice.message.answered",
                "voice.message.completed",
                "voice.message.failed",
            ],
        ),
        ("Calls", &["call.completed", "call.recording_ready", "call.feedback_ready"]),
        (
            "Call campaigns",
            &[
                "call_campaign.started",
                "call_campaign.paused",
                "call_campaign.resumed",
                "call_campaign.completed",
                "call_campaign.failed",
                "call_campaign.target_completed",
            ],
        ),
        ("Webhooks", &["webhook.paused", "webhook.test"]),
    ];
    let listed: Vec<&str> = groups.iter().map(|g| g["name"].as_str().expect("group name")).collect();
    assert_eq!(listed, contract.map(|(name, _)| name));
    for (group, (name, events)) in groups.iter().zip(contract) {
        let listed = names(group);
        if name == "Chat groups" {
            // the contract names two and "ten more"
            assert_eq!(listed.len(), 12, "{listed:?}");
            assert_eq!(&listed[..2], events);
            assert!(listed.iter().all(|e| e.starts_with("group.")), "{listed:?}");
        } else {
            assert_eq!(listed, events, "the events of {name}");
        }
    }
    for event in groups.iter().flat_map(|g| g["events"].as_array().expect("events")) {
        let sample = &event["sample"];
        assert!(sample.is_object(), "{event}");
        assert_eq!(sample["event"], event["name"]);
        assert!(sample["event_id"].as_str().is_some_and(|id| uuid::Uuid::parse_str(id).is_ok()), "{event}");
        assert!(sample["timestamp"].is_string(), "{event}");
        assert_eq!(sample.get("test"), None, "{event}");
    }
}

/// The drift guard: the listed `message.sent` sample has exactly the fields of a real
/// `message.sent` delivered after an SMS send.
#[actix_web::test]
async fn the_message_sent_sample_has_the_fields_of_a_real_delivery() {
    let app = api_tests::spawn().await;
    let sms = sms_account(&app, &format!("{MANAGER},communications.send")).await;
    let receiver = Receiver::answering(200).await;
    register(&app, sms.key(), &receiver.url(), &["message.sent"]).await;
    let res = app.post(crate::sms::SEND, sms.key(), json!({"recipient": "0712345678", "message": "Habari"})).await;
    assert_status(&res, 201);
    app.run_jobs().await;
    let bodies = receiver.bodies().await;
    assert_eq!(bodies.len(), 1);

    let listing = app.get(&format!("{WEBHOOKS}/events"), sms.key()).await;
    let sample = listing.data()["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["events"].as_array().expect("events").clone())
        .find(|e| e["name"] == "message.sent")
        .expect("message.sent listed")["sample"]
        .clone();
    // as sets: the delivered body comes from a jsonb column, which orders keys its own way
    let keys =
        |v: &Value| -> std::collections::BTreeSet<String> { v.as_object().expect("object").keys().cloned().collect() };
    assert_eq!(keys(&sample), keys(&bodies[0]));
}

/// The lead samples are built by the leads crate's own payload code: each listed sample has
/// the members of a real delivery of that event, the lead's included, and its actor is shaped
/// as the service's actors are (the hand-written fallback had an `ai` actor no code sends).
#[actix_web::test]
async fn the_lead_samples_have_the_fields_of_real_deliveries() {
    let app = api_tests::spawn().await;
    let account = app.account(&format!("{MANAGER},leads.view,leads.edit,leads.settings")).await;
    let receiver = Receiver::answering(200).await;
    register(&app, &account.key, &receiver.url(), &["lead.created", "lead.label_added"]).await;
    let res = app.post("/api/v3/leads", &account.key, json!({"phone": "0712345678", "labels": ["VIP"]})).await;
    assert_eq!(res.status, 201, "{}", res.body);
    app.run_jobs().await;
    let bodies = receiver.bodies().await;
    let listing = app.get(&format!("{WEBHOOKS}/events"), &account.key).await;
    let keys =
        |v: &Value| -> std::collections::BTreeSet<String> { v.as_object().expect("object").keys().cloned().collect() };
    for name in ["lead.created", "lead.label_added"] {
        let delivered = bodies.iter().find(|b| b["event"] == name).unwrap_or_else(|| panic!("{name} delivered"));
        let sample = listing.data()["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .flat_map(|g| g["events"].as_array().expect("events").clone())
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("{name} listed"))["sample"]
            .clone();
        assert_eq!(keys(&sample), keys(delivered), "{name}");
        assert_eq!(keys(&sample["lead"]), keys(&delivered["lead"]), "{name}");
        assert_eq!(keys(&sample["actor"]), keys(&delivered["actor"]), "{name}");
        assert_eq!(sample["actor"]["kind"], delivered["actor"]["kind"], "{name}");
    }
}
