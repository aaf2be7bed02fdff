//! Lead events (contract: Events, Payload shapes): `lead.created`, `lead.updated` and
//! `lead.stage_changed` delivered to a real receiver with `{event, event_id, timestamp, lead,
//! changes, reason, actor, source}`, and a receiver's `stages` filter.

use api_tests::{json, spawn};
use serde_json::Value;
use time::Duration;

use super::support::*;

const EVENTS: [&str; 3] = ["lead.created", "lead.updated", "lead.stage_changed"];
const PERMISSIONS: &str = "leads.view,leads.edit,webhooks.view,webhooks.manage";

/// The one body of `event` among `bodies`.
fn only<'a>(bodies: &'a [Value], event: &str) -> &'a Value {
    let found: Vec<&Value> = bodies.iter().filter(|b| b["event"] == event).collect();
    assert_eq!(found.len(), 1, "one {event} in {bodies:?}");
    found[0]
}

#[actix_web::test]
async fn creating_changing_and_moving_a_lead_deliver_events_of_the_contract_s_shape() {
    // Proves the three events are emitted by the upsert and the stage operation, each with the
    // whole lead, the actor and the source; `changes` on updated (only the changed field) and
    // stage_changed, with the stage's reason.
    let app = spawn().await;
    let acme = app.account(PERMISSIONS).await;
    let receiver = Receiver::start().await;
    subscribe(&app, &acme.key, &receiver.url(), &EVENTS, Value::Null).await;

    let created = create(
        &app,
        &acme.key,
        json!({"phone": "0712345678", "name": "Amina", "company": "Duka", "source_channel": "whatsapp"}),
    )
    .await;
    let id = id_of(&created);
    let updated = upsert(&app, &acme.key, json!({"phone": "0712345678", "company": "Duka Kubwa"}), 200).await;
    // `lead.updated` waits out its burst (about five seconds) and shows the lead as it is then
    app.advance(Duration::seconds(10)).await;
    let moved = set_stage(&app, &acme.key, &id, json!({"stage": "lost", "reason": "no budget"})).await;
    assert_status(&moved, 200);
    app.run_jobs().await;

    let bodies = receiver.bodies().await;
    assert_eq!(bodies.len(), 3, "{bodies:?}");
    let actor = json!({"kind": "api", "id": acme.user.0, "label": "Test user"});
    let source = json!({"kind": "api", "id": null, "channel": "whatsapp"});
    for body in &bodies {
        assert!(body["event_id"].as_str().is_some_and(|e| uuid::Uuid::parse_str(e).is_ok()), "{body}");
        time_of(body, "timestamp");
        assert_eq!(body["lead"]["id"], id.as_str(), "{body}");
        assert_eq!(body["actor"], actor, "{body}");
        assert_eq!(body["source"], source, "{body}");
    }

    let body = only(&bodies, "lead.created");
    assert_eq!(body["lead"], created, "the whole lead");
    assert_eq!(body["reason"], Value::Null);
    assert!(body.get("changes").is_none_or(Value::is_null), "no changes on created: {body}");

    let body = only(&bodies, "lead.updated");
    assert_eq!(body["changes"], json!({"company": {"from": "Duka", "to": "Duka Kubwa"}}));
    assert_eq!(body["reason"], Value::Null);
    assert_eq!(body["lead"], updated["lead"], "the whole lead after the update");

    let body = only(&bodies, "lead.stage_changed");
    assert_eq!(body["changes"], json!({"stage": {"from": "new", "to": "lost"}}));
    assert_eq!(body["reason"], "no budget");
    assert_eq!((&body["lead"]["stage"], &body["lead"]["lost_reason"]), (&json!("lost"), &json!("no budget")));
    assert_eq!(body["lead"]["company"], "Duka Kubwa");
}

#[actix_web::test]
async fn a_receiver_filtering_on_won_gets_only_the_move_to_won() {
    // Proves receiver `filters.stages` on real lead events: the filtered receiver gets the one
    // event whose lead is won, while an unfiltered one gets them all.
    let app = spawn().await;
    let acme = app.account(PERMISSIONS).await;
    let (everything, won) = (Receiver::start().await, Receiver::start().await);
    subscribe(&app, &acme.key, &everything.url(), &EVENTS, Value::Null).await;
    subscribe(&app, &acme.key, &won.url(), &EVENTS, json!({"stages": ["won"]})).await;

    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678", "company": "Duka"})).await);
    upsert(&app, &acme.key, json!({"phone": "0712345678", "company": "Duka Kubwa"}), 200).await;
    // past the update's burst, so its `lead.updated` shows a lead that is not won yet
    app.advance(Duration::seconds(10)).await;
    assert_status(&set_stage(&app, &acme.key, &id, json!({"stage": "contacted"})).await, 200);
    assert_status(&set_stage(&app, &acme.key, &id, json!({"stage": "won"})).await, 200);
    app.run_jobs().await;

    assert_eq!(everything.bodies().await.len(), 4);
    let bodies = won.bodies().await;
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    assert_eq!(bodies[0]["event"], "lead.stage_changed");
    assert_eq!(bodies[0]["changes"], json!({"stage": {"from": "contacted", "to": "won"}}));
    assert_eq!(bodies[0]["lead"]["stage"], "won");
}
