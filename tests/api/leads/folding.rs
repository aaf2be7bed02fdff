//! Burst folding of `lead.updated` (contract: Events — "a burst of updates within about five
//! seconds is folded into one `lead.updated`"; docs/api.md "Events"), driven by the `Clock`:
//! one event five seconds after the first update, each field's first `from` and last `to`, a
//! field changed back left out, the lead as it is when sent, and a new burst after the window.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{TestApp, json, spawn};
use serde_json::Value;
use time::Duration;

use super::support::*;

/// A workspace whose receiver listens to `lead.updated` only, and a lead with company `A`.
async fn watched<S, B>(app: &TestApp<S>) -> (String, Receiver, String)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let acme = app.account(&format!("{EDITOR},{WEBHOOKS}")).await;
    let receiver = Receiver::start().await;
    subscribe(app, &acme.key, &receiver.url(), &["lead.updated"], Value::Null).await;
    let id = id_of(&create(app, &acme.key, json!({"phone": "0712345678", "company": "A"})).await);
    app.advance(Duration::minutes(1)).await;
    (acme.key, receiver, id)
}

/// The `lead.updated` bodies the receiver got so far.
async fn updates(receiver: &Receiver) -> Vec<Value> {
    let bodies = receiver.bodies().await;
    events_named(&bodies, "lead.updated").into_iter().cloned().collect()
}

#[actix_web::test]
async fn three_patches_within_five_seconds_are_one_lead_updated() {
    // Proves the fold: nothing is sent while the burst is open; five seconds after the first
    // update exactly one `lead.updated` whose `changes` hold company A→C (its first `from`, its
    // last `to`) and the name, and whose `lead` is the lead as it is when sent (a stage moved
    // after the last update shows).
    let app = spawn().await;
    let (key, receiver, id) = watched(&app).await;

    patched(&app, &key, &id, json!({"company": "B"})).await;
    app.advance(Duration::seconds(1)).await;
    patched(&app, &key, &id, json!({"company": "C"})).await;
    app.advance(Duration::seconds(1)).await;
    patched(&app, &key, &id, json!({"name": "Amina"})).await;
    app.advance(Duration::seconds(1)).await;
    assert_status(&set_stage(&app, &key, &id, json!({"stage": "contacted"})).await, 200);
    app.advance(Duration::seconds(1)).await;
    assert_eq!(updates(&receiver).await, Vec::<Value>::new(), "nothing before the window ends");

    app.advance(Duration::seconds(5)).await;
    let sent = updates(&receiver).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["changes"], json!({"company": {"from": "A", "to": "C"}, "name": {"from": null, "to": "Amina"}}));
    let now = record(read(&app, &key, &id).await);
    assert_eq!(sent[0]["lead"], now, "the lead as it is when sent");
    assert_eq!((&now["stage"], &now["company"]), (&json!("contacted"), &json!("C")));
    assert_eq!(sent[0]["reason"], Value::Null);

    app.advance(Duration::minutes(1)).await;
    assert_eq!(updates(&receiver).await.len(), 1, "sent once");
}

#[actix_web::test]
async fn a_field_changed_back_within_the_burst_is_left_out() {
    // Proves a field changed and changed back is not in `changes`; a burst that changed nothing
    // in the end sends no event; the timeline keeps every update all the same.
    let app = spawn().await;
    let (key, receiver, id) = watched(&app).await;

    patched(&app, &key, &id, json!({"company": "B"})).await;
    app.advance(Duration::seconds(1)).await;
    patched(&app, &key, &id, json!({"title": "Owner"})).await;
    app.advance(Duration::seconds(1)).await;
    patched(&app, &key, &id, json!({"company": "A"})).await;
    app.advance(Duration::seconds(5)).await;
    let sent = updates(&receiver).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["changes"], json!({"title": {"from": null, "to": "Owner"}}));

    patched(&app, &key, &id, json!({"company": "Z"})).await;
    app.advance(Duration::seconds(2)).await;
    patched(&app, &key, &id, json!({"company": "A"})).await;
    app.advance(Duration::seconds(5)).await;
    assert_eq!(updates(&receiver).await.len(), 1, "a burst that changed nothing sends nothing");

    let timeline = activities(&app, &key, &id, None).await;
    assert_eq!(kinds(&timeline).iter().filter(|k| *k == "updated").count(), 5, "every update on the timeline");
}

#[actix_web::test]
async fn an_update_after_the_window_starts_a_new_burst() {
    // Proves a second `lead.updated` for an update after the first burst was sent, its `from`
    // being where the first ended, sent five seconds after that update and not before.
    let app = spawn().await;
    let (key, receiver, id) = watched(&app).await;

    patched(&app, &key, &id, json!({"company": "B"})).await;
    app.advance(Duration::seconds(5)).await;
    let sent = updates(&receiver).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["changes"], json!({"company": {"from": "A", "to": "B"}}));

    patched(&app, &key, &id, json!({"company": "C"})).await;
    app.advance(Duration::seconds(4)).await;
    assert_eq!(updates(&receiver).await.len(), 1, "the second burst is still open");
    app.advance(Duration::seconds(1)).await;
    let sent = updates(&receiver).await;
    assert_eq!(sent.len(), 2, "{sent:?}");
    let second = sent.iter().find(|b| b["changes"]["company"]["to"] == "C").expect("the second burst");
    assert_eq!(second["changes"], json!({"company": {"from": "B", "to": "C"}}));
    assert_eq!(second["lead"]["company"], "C");
    assert_ne!(sent[0]["event_id"], sent[1]["event_id"], "two events");
}
