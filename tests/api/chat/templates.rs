//! Chat templates: the create rules, the review state table row by row (accepted, rejected,
//! unreachable, draft, webhook / poll / refresh, quality actions, edits held during a review),
//! delete, sync, deployments, permissions and tenant isolation.

use api_tests::{json, spawn};
use serde_json::Value;

use super::{APP_SECRET, WABA, add_account, chat_account, deliver};
use crate::sms::support::{assert_field_error, assert_status, events, str_of};

const TEMPLATES: &str = "/api/v3/chat/templates";

fn order_update(name: &str) -> Value {
    json!({
        "name": name,
        "language": "sw",
        "category": "UTILITY",
        "body": "Habari {{1}}, oda {{2}} iko tayari.",
        "footer": "Duka la Mama",
        "buttons": [{"type": "url", "text": "Fuatilia", "url": "https://duka.example.com/o/{{1}}", "example": "DK-1"}],
        "variable_samples": {"1": "Amina", "2": "DK-1042"},
    })
}

fn template_events(all: Vec<(String, Value)>) -> Vec<Value> {
    all.into_iter().filter(|(n, _)| n == "template.status_changed").map(|(_, p)| p).collect()
}

fn status_update(template_id: &str, event: &str) -> Value {
    json!({"object": "whatsapp_business_account", "entry": [{"id": WABA, "changes": [{"field": "message_template_status_update",
        "value": {"event": event, "message_template_id": template_id, "message_template_name": "order_update",
            "message_template_language": "sw", "reason": if event == "REJECTED" { "INCORRECT_CATEGORY" } else { "NONE" }}}]}]})
}

#[actix_web::test]
async fn a_created_template_goes_to_review_then_the_poll_reads_its_approval() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let res = app.post(TEMPLATES, chat.key(), order_update("order_update")).await;
    assert_status(&res, 201);
    let t = res.data().clone();
    assert_eq!(t["name"], "order_update");
    assert_eq!(t["category"], "utility");
    assert_eq!(t["status"], "active");
    assert_eq!(t["chat_status"], "in_review");
    assert_eq!((t["approved"].as_bool(), t["sendable"].as_bool()), (Some(false), Some(false)));
    assert!(t["chat_template_id"].is_string());
    assert_eq!(t["chat_business_account_id"], WABA);
    assert_eq!(t["variables"], json!(["1", "2"]));
    assert_eq!(t["submission"], json!({"submitted": true, "queued": false, "message": "Submitted for review."}));
    assert_eq!(t["components"][0]["type"], "BODY");
    assert_eq!(t["components"][0]["example"]["body_text"], json!([["Amina", "DK-1042"]]));
    assert_eq!(t["components"][2]["buttons"][0]["example"], json!(["DK-1"]));
    // the sandbox has it under the same name
    let at_provider = app.messaging.gateways().chat_sandbox();
    let listed = providers::ChatGateway::templates(&**at_provider, WABA).await.expect("list");
    assert_eq!(listed.len(), 1);

    // the 15-minute poll reads the approval and says so
    app.advance(time::Duration::minutes(15)).await;
    let read = app.get(&format!("{TEMPLATES}/{}", t["id"]), chat.key()).await;
    assert_eq!(read.data()["chat_status"], "approved", "{}", read.body);
    assert_eq!((read.data()["approved"].as_bool(), read.data()["sendable"].as_bool()), (Some(true), Some(true)));
    let changes = template_events(events(&app.pool, chat.tenant()).await);
    let last = changes.last().cloned().unwrap_or_default();
    assert_eq!(last["previous_status"], "in_review");
    assert_eq!(last["chat_status"], "approved");
    assert_eq!(last["template_id"], t["id"]);
    assert_eq!(last["chat_business_account_id"], WABA);
    assert_eq!(last["category"], "utility");
}

#[actix_web::test]
async fn a_rejection_after_review_is_read_by_refresh_with_its_reason() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let t = app.post(TEMPLATES, chat.key(), order_update("reject_this")).await.data().clone();
    assert_eq!(t["chat_status"], "in_review");
    let path = format!("{TEMPLATES}/{}/refresh", t["id"]);
    let early = app.post(&path, chat.key(), json!({})).await;
    assert_eq!(early.data()["chat_status"], "in_review");
    assert_eq!(early.data()["refresh"]["found_on_chat"], true);
    app.clock.advance(time::Duration::seconds(2));
    let res = app.post(&path, chat.key(), json!({})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["chat_status"], "rejected");
    assert!(str_of(res.data(), "rejection_reason").contains("reject_"));
    let rejected = template_events(events(&app.pool, chat.tenant()).await).pop().unwrap_or_default();
    assert_eq!(
        (rejected["previous_status"].as_str(), rejected["chat_status"].as_str()),
        (Some("in_review"), Some("rejected"))
    );
    assert!(rejected["rejection_reason"].is_string());
}

#[actix_web::test]
async fn an_unreachable_provider_leaves_it_pending_and_queued_for_retries() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let res = app.post(TEMPLATES, chat.key(), order_update("unreachable_promo")).await;
    assert_status(&res, 201);
    let t = res.data().clone();
    assert_eq!(t["chat_status"], "pending");
    assert_eq!(t["submission"]["queued"], true);
    assert_eq!(t["submission"]["submitted"], false);
    assert!(str_of(&t["submission"], "message").contains("retried"));
    let jobs = api_tests::sql_rows(
        &app.pool,
        "SELECT attempts FROM jobs WHERE name = 'messaging.submit_template' AND state IN ('queued', 'running')",
    )
    .await;
    assert_eq!(jobs.len(), 1, "one retry job waits");
    // the retry runs, fails again, and stays queued for the next attempt
    app.advance(time::Duration::minutes(1)).await;
    let jobs =
        api_tests::sql_rows(&app.pool, "SELECT attempts FROM jobs WHERE name = 'messaging.submit_template'").await;
    assert_eq!(jobs[0]["attempts"], 1, "{jobs:?}");
    let read = app.get(&format!("{TEMPLATES}/{}", t["id"]), chat.key()).await;
    assert_eq!(read.data()["submission"]["queued"], true);
}

#[actix_web::test]
async fn a_draft_is_saved_unsent_until_submitted() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let mut body = order_update("order_update");
    body["submit"] = json!(false);
    let t = app.post(TEMPLATES, chat.key(), body).await.data().clone();
    assert_eq!(t["chat_status"], Value::Null);
    assert_eq!(
        (t["submission"]["submitted"].as_bool(), t["submission"]["queued"].as_bool()),
        (Some(false), Some(false))
    );
    assert!(t["chat_template_id"].is_null());
    let listed =
        providers::ChatGateway::templates(&**app.messaging.gateways().chat_sandbox(), WABA).await.expect("list");
    assert!(listed.is_empty(), "nothing went to the provider");
    let submitted = app.post(&format!("{TEMPLATES}/{}/submit", t["id"]), chat.key(), json!({})).await;
    assert_status(&submitted, 200);
    assert_eq!(submitted.data()["chat_status"], "in_review");
    // nothing left to submit: 409
    let again = app.post(&format!("{TEMPLATES}/{}/submit", t["id"]), chat.key(), json!({})).await;
    crate::framework::assert_error(&again, 409);
}

#[actix_web::test]
async fn the_providers_webhook_moves_reviews_and_quality_actions() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let t = app.post(TEMPLATES, chat.key(), order_update("order_update")).await.data().clone();
    let provider_id = str_of(&t, "chat_template_id").to_owned();
    let path = format!("{TEMPLATES}/{}", t["id"]);
    for (event, state) in
        [("APPROVED", "approved"), ("PAUSED", "paused"), ("DISABLED", "disabled"), ("REJECTED", "rejected")]
    {
        let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &status_update(&provider_id, event)).await;
        assert_eq!(res.data()["templates_updated"], 1, "{}", res.body);
        let read = app.get(&path, chat.key()).await;
        assert_eq!(read.data()["chat_status"], state, "{event}");
    }
    let read = app.get(&path, chat.key()).await;
    assert_eq!(read.data()["rejection_reason"], "INCORRECT_CATEGORY");
    let changes = template_events(events(&app.pool, chat.tenant()).await);
    let moves: Vec<(String, String)> = changes
        .iter()
        .map(|c| {
            (
                c["previous_status"].as_str().unwrap_or("null").to_owned(),
                c["chat_status"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        moves[moves.len() - 4..],
        [
            ("in_review".to_owned(), "approved".to_owned()),
            ("approved".to_owned(), "paused".to_owned()),
            ("paused".to_owned(), "disabled".to_owned()),
            ("disabled".to_owned(), "rejected".to_owned()),
        ]
    );
    // a replay says nothing new
    let before = template_events(events(&app.pool, chat.tenant()).await).len();
    deliver(&app, &chat.hook(), Some(APP_SECRET), &status_update(&provider_id, "REJECTED")).await;
    assert_eq!(template_events(events(&app.pool, chat.tenant()).await).len(), before);
}

#[actix_web::test]
async fn an_edit_during_review_is_held_then_submitted_and_an_edit_after_goes_to_review() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let t = app.post(TEMPLATES, chat.key(), order_update("order_update")).await.data().clone();
    let path = format!("{TEMPLATES}/{}", t["id"]);
    let held = app.patch(&path, chat.key(), json!({"footer": "Duka Kuu"})).await;
    assert_status(&held, 200);
    assert_eq!(held.data()["chat_status"], "in_review");
    assert_eq!(held.data()["pending_edit"], true);
    assert_eq!(held.data()["components"][1], json!({"type": "FOOTER", "text": "Duka Kuu"}));
    // the flat patch kept the rest: body, its samples, the button
    assert_eq!(held.data()["components"][0]["example"]["body_text"], json!([["Amina", "DK-1042"]]));
    let provider_id = str_of(&t, "chat_template_id").to_owned();
    let sandbox = app.messaging.gateways().chat_sandbox();
    let stored = providers::ChatGateway::template(&**sandbox, &provider_id).await.expect("read").expect("there");
    assert_eq!(stored.components[1]["text"], "Duka la Mama", "held: the provider still has the old footer");
    let sent = app.post(&format!("{path}/submit"), chat.key(), json!({})).await;
    assert_eq!(sent.data()["pending_edit"], false);
    let stored = providers::ChatGateway::template(&**sandbox, &provider_id).await.expect("read").expect("there");
    assert_eq!(stored.components[1]["text"], "Duka Kuu");

    // approved, then a category change goes straight back to review
    deliver(&app, &chat.hook(), Some(APP_SECRET), &status_update(&provider_id, "APPROVED")).await;
    let edited = app.patch(&path, chat.key(), json!({"category": "marketing"})).await;
    assert_eq!(edited.data()["chat_status"], "in_review", "{}", edited.body);
    assert_eq!(edited.data()["category"], "marketing");
    // a display name alone changes nothing at the provider
    let renamed = app.patch(&path, chat.key(), json!({"display_name": "Order update"})).await;
    assert_eq!(renamed.data()["display_name"], "Order update");
    // name, language and account cannot change
    assert_field_error(&app.patch(&path, chat.key(), json!({"name": "other"})).await, "name");
    assert_field_error(&app.patch(&path, chat.key(), json!({"language": "en"})).await, "language");
    assert_field_error(&app.patch(&path, chat.key(), json!({"waba_id": "999"})).await, "waba_id");
    // the same values are no change
    assert_status(&app.patch(&path, chat.key(), json!({"name": "order_update", "language": "sw"})).await, 200);
}

#[actix_web::test]
async fn the_create_rules_are_422() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let with = |changes: Value| {
        let mut body = order_update("order_update");
        for (k, v) in changes.as_object().cloned().unwrap_or_default() {
            if v.is_null() {
                body.as_object_mut().map(|b| b.remove(&k));
            } else {
                body[k] = v;
            }
        }
        body
    };
    let cases = [
        (with(json!({"name": "Order Update"})), "name"),
        (with(json!({"name": "order-update"})), "name"),
        (with(json!({"name": null})), "name"),
        (with(json!({"name": "a".repeat(192)})), "name"),
        (with(json!({"language": "x".repeat(21)})), "language"),
        (with(json!({"category": "promo"})), "category"),
        (with(json!({"category": null})), "category"),
        (with(json!({"body": null})), "body"),
        (with(json!({"body": "x".repeat(1025)})), "body"),
        (with(json!({"variable_samples": {"1": "Amina"}})), "variable_samples.2"),
        (
            with(json!({"buttons": [{"type": "url", "text": "Go", "url": "https://x.example/{{1}}"}]})),
            "buttons[0].example",
        ),
        (with(json!({"buttons": [{"type": "fax", "text": "Go"}]})), "buttons[0].type"),
        (with(json!({"buttons": [{"type": "quick reply", "text": "x".repeat(26)}]})), "buttons[0].text"),
        (with(json!({"header_text": "{{1}} and {{2}}", "variable_samples": {"1": "a", "2": "b"}})), "header_text"),
        (
            with(json!({"components": [{"type": "HEADER", "format": "IMAGE"}, {"type": "BODY", "text": "Hi"}]})),
            "components[0].example.header_handle",
        ),
        (with(json!({"components": [{"type": "FOOTER", "text": "x"}]})), "components"),
        (with(json!({"waba_id": "999"})), "waba_id"),
    ];
    for (body, field) in cases {
        assert_field_error(&app.post(TEMPLATES, chat.key(), body).await, field);
    }
    // components win over the flat fields
    let t = app.post(TEMPLATES, chat.key(), with(json!({"components": [{"type": "BODY", "text": "Asante!"}]}))).await;
    assert_status(&t, 201);
    assert_eq!(t.data()["components"], json!([{"type": "BODY", "text": "Asante!"}]));
    assert_eq!(t.data()["language"], "sw");
    // the language defaults to en; the same name in another language is another template
    let en = app.post(TEMPLATES, chat.key(), with(json!({"language": null}))).await;
    assert_eq!(en.data()["language"], "en", "{}", en.body);
    // the same name and language again is a conflict
    crate::framework::assert_error(&app.post(TEMPLATES, chat.key(), with(json!({"language": null}))).await, 409);
}

#[actix_web::test]
async fn with_several_accounts_the_waba_id_is_required() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    add_account(&app, chat.tenant(), "200000000000002", "200000000000020", "+255222000222").await;
    let res = app.post(TEMPLATES, chat.key(), order_update("order_update")).await;
    assert_field_error(&res, "waba_id");
    assert!(str_of(&res.body, "message").contains("200000000000002"), "{}", res.body);
    let mut body = order_update("order_update");
    body["waba_id"] = json!("200000000000002");
    let t = app.post(TEMPLATES, chat.key(), body).await;
    assert_status(&t, 201);
    assert_eq!(t.data()["chat_business_account_id"], "200000000000002");

    // deployed to the other account: a row and a review of its own
    let res = app
        .post(&format!("{TEMPLATES}/{}/deployments", t.data()["id"]), chat.key(), json!({"waba_ids": [WABA, "404"]}))
        .await;
    assert_status(&res, 201);
    let copy = &res.data()["deployments"][0];
    assert_eq!(copy["chat_business_account_id"], WABA);
    assert_eq!(copy["chat_status"], "in_review");
    assert_ne!(copy["id"], t.data()["id"]);
    assert_eq!(res.data()["errors"][0]["waba_id"], "404");
    let original = app.get(&format!("{TEMPLATES}/{}", t.data()["id"]), chat.key()).await;
    assert_eq!(original.data()["deployments"][0]["waba_id"], WABA);
    assert_eq!(original.data()["deployments"][0]["id"], copy["id"]);
}

#[actix_web::test]
async fn delete_archives_or_removes_and_the_provider_forgets_it() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let t = app.post(TEMPLATES, chat.key(), order_update("order_update")).await.data().clone();
    let path = format!("{TEMPLATES}/{}", t["id"]);
    let archived = app.delete(&path, chat.key()).await;
    assert_status(&archived, 200);
    assert_eq!(archived.data()["status"], "archived");
    assert_eq!(archived.data()["sendable"], false);
    let sandbox = app.messaging.gateways().chat_sandbox();
    assert!(providers::ChatGateway::templates(&**sandbox, WABA).await.expect("list").is_empty());
    crate::framework::assert_error(&app.post(&format!("{path}/submit"), chat.key(), json!({})).await, 409);
    let gone = app.delete(&format!("{path}?permanent=true"), chat.key()).await;
    assert_eq!(gone.data(), &json!({"id": t["id"], "deleted": true}));
    crate::framework::assert_error(&app.get(&path, chat.key()).await, 404);
}

#[actix_web::test]
async fn sync_imports_the_providers_templates_and_counts_changes() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let sandbox = app.messaging.gateways().chat_sandbox();
    for name in ["welcome", "reject_old"] {
        let submission = providers::chat::TemplateSubmission {
            name: name.into(),
            language: "en".into(),
            category: "MARKETING".into(),
            components: vec![json!({"type": "BODY", "text": "Karibu"})],
        };
        providers::ChatGateway::create_template(&**sandbox, WABA, &submission).await.expect("at the provider");
    }
    let res = app.post(&format!("{TEMPLATES}/sync"), chat.key(), json!({})).await;
    assert_status(&res, 200);
    assert_eq!(res.data(), &json!({"imported": 2, "updated": 0, "statuses_updated": 0, "errors": []}));
    let again = app.post(&format!("{TEMPLATES}/sync"), chat.key(), json!({"waba_id": WABA})).await;
    assert_eq!(again.data()["imported"], 0);
    assert_eq!(again.data()["updated"], 0);
    app.clock.advance(time::Duration::seconds(2));
    let judged = app.post(&format!("{TEMPLATES}/sync"), chat.key(), json!({})).await;
    assert_eq!((judged.data()["updated"].as_i64(), judged.data()["statuses_updated"].as_i64()), (Some(2), Some(2)));
    let listed = app.get(TEMPLATES, chat.key()).await;
    let states: Vec<(&str, &str)> = listed.data()["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| (t["name"].as_str().unwrap_or(""), t["chat_status"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(states, [("reject_old", "rejected"), ("welcome", "approved")]);
    assert_field_error(&app.post(&format!("{TEMPLATES}/sync"), chat.key(), json!({"waba_id": "404"})).await, "waba_id");
}

#[actix_web::test]
async fn updated_since_reads_only_what_changed() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    app.post(TEMPLATES, chat.key(), order_update("first")).await;
    app.clock.advance(time::Duration::minutes(5));
    let since = app.clock.now();
    app.post(TEMPLATES, chat.key(), order_update("second")).await;
    let stamp = since.format(&time::format_description::well_known::Rfc3339).expect("rfc3339").replace('+', "%2B");
    let listed = app.get(&format!("{TEMPLATES}?updated_since={stamp}"), chat.key()).await;
    assert_status(&listed, 200);
    let names: Vec<&str> =
        listed.data()["items"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["second"]);
    assert_field_error(&app.get(&format!("{TEMPLATES}?updated_since=yesterday"), chat.key()).await, "updated_since");
}

#[actix_web::test]
async fn reads_need_view_writes_need_manage_and_tenants_stay_apart() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let t = app.post(TEMPLATES, chat.key(), order_update("order_update")).await.data().clone();
    let path = format!("{TEMPLATES}/{}", t["id"]);
    let viewer = app.account("communications.templates.view").await;
    // the viewer's own tenant has no such template
    crate::framework::assert_error(&app.get(&path, &viewer.key).await, 404);
    let user = app.user(chat.tenant(), "communications.templates.view").await;
    let view_key = app.key(chat.tenant(), user).await;
    assert_status(&app.get(&path, &view_key).await, 200);
    assert_status(&app.get(TEMPLATES, &view_key).await, 200);
    assert_status(&app.post(&format!("{path}/refresh"), &view_key, json!({})).await, 200);
    for res in [
        app.post(TEMPLATES, &view_key, order_update("other")).await,
        app.patch(&path, &view_key, json!({"footer": "x"})).await,
        app.delete(&path, &view_key).await,
        app.post(&format!("{path}/submit"), &view_key, json!({})).await,
        app.post(&format!("{TEMPLATES}/sync"), &view_key, json!({})).await,
    ] {
        crate::framework::assert_error(&res, 403);
    }
    let nobody = app.user(chat.tenant(), "contacts.view").await;
    let nobody_key = app.key(chat.tenant(), nobody).await;
    crate::framework::assert_error(&app.get(TEMPLATES, &nobody_key).await, 403);
    // another tenant's template is not found, for every route
    let other = chat_account(&app, "all").await;
    for res in [
        app.get(&path, other.key()).await,
        app.patch(&path, other.key(), json!({"footer": "x"})).await,
        app.post(&format!("{path}/submit"), other.key(), json!({})).await,
        app.post(&format!("{path}/refresh"), other.key(), json!({})).await,
        app.post(&format!("{path}/deployments"), other.key(), json!({"waba_ids": [WABA]})).await,
        app.delete(&path, other.key()).await,
    ] {
        crate::framework::assert_error(&res, 404);
    }
}

#[actix_web::test]
async fn the_cloud_apis_refusal_rejects_at_once_and_its_outage_queues() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let app = spawn().await;
    let server = MockServer::start().await;
    let listing = format!("/{}/{WABA}/message_templates", super::cloud::VERSION);
    let empty = ResponseTemplate::new(200).set_body_json(json!({"data": []}));
    Mock::given(method("GET")).and(path(listing.clone())).respond_with(empty).mount(&server).await;
    let refusal = ResponseTemplate::new(400).set_body_json(json!({"error": {
        "message": "Invalid parameter", "type": "OAuthException", "code": 100, "error_subcode": 2388043,
        "error_user_msg": "The body has too many variables for its length."}}));
    Mock::given(method("POST")).and(path(listing.clone())).respond_with(refusal).up_to_n_times(1).mount(&server).await;
    Mock::given(method("POST")).and(path(listing)).respond_with(ResponseTemplate::new(503)).mount(&server).await;
    let chat = super::cloud::cloud_account(&app, "all", &server.uri()).await;

    let rejected = app.post(TEMPLATES, chat.key(), order_update("order_update")).await;
    assert_status(&rejected, 201);
    assert_eq!(rejected.data()["chat_status"], "rejected");
    assert!(str_of(rejected.data(), "rejection_reason").contains("too many variables"), "{}", rejected.body);
    assert_eq!(rejected.data()["submission"]["queued"], false);

    // the provider is down: pending, queued, and a resubmit later
    let pending = app.post(TEMPLATES, chat.key(), order_update("shipping_update")).await;
    assert_status(&pending, 201);
    assert_eq!(pending.data()["chat_status"], "pending");
    assert_eq!(pending.data()["submission"]["queued"], true);
    // fixing the rejected one and submitting again meets the outage too
    let again = app.post(&format!("{TEMPLATES}/{}/submit", rejected.data()["id"]), chat.key(), json!({})).await;
    assert_eq!(again.data()["chat_status"], "pending", "{}", again.body);
}
