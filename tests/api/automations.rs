//! Automations (contract: Automations; Automation subscription callbacks; issue 20): the
//! business-event log paged with `before`, subscriptions whose callbacks are signed the Standard
//! Webhooks way and retried on a bounded schedule, schedules firing once per due time however
//! many workers run, and the reads' permissions and envelopes.

use api_tests::{Resp, TestApp, json, spawn};
use automations::schedules::Target;
use base64::Engine as _;
use kernel::TenantId;
use serde_json::Value;
use time::Duration;
use wiremock::ResponseTemplate;

use crate::webhooks::support::{Receiver, emit, header};

const EVENTS: &str = "/api/v3/automations/events";
const SUBSCRIPTIONS: &str = "/api/v3/automations/subscriptions";
const SCHEDULES: &str = "/api/v3/automations/schedules";
const VIEWER: &str = "automations.view";

/// A refusal in the automations' envelope: `{error:{code, message, retryable}, message, code}`.
#[track_caller]
fn assert_refusal(res: &Resp, status: u16, code: &str) {
    assert_eq!(res.status, status, "{}", res.body);
    assert_eq!(
        (res.body["code"].as_str(), res.body["error"]["code"].as_str()),
        (Some(code), Some(code)),
        "{}",
        res.body
    );
    assert!(res.body.get("status").is_none(), "no status member: {}", res.body);
}

fn names(log: &Value) -> Vec<String> {
    log["events"]
        .as_array()
        .unwrap_or_else(|| panic!("events: {log}"))
        .iter()
        .map(|e| e["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Verifies a callback as the docs' snippet does: HMAC-SHA256 keyed with the base64 after
/// `whsec_`, over `{webhook-id}.{webhook-timestamp}.{body}`, base64, after `v1,`.
fn verify(secret: &str, request: &wiremock::Request) -> bool {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").expect("whsec_"))
        .expect("base64 key");
    let signed = [
        header(request, "webhook-id").as_bytes(),
        b".",
        header(request, "webhook-timestamp").as_bytes(),
        b".",
        &request.body,
    ]
    .concat();
    let tag = ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key), &signed);
    let expected = format!("v1,{}", base64::engine::general_purpose::STANDARD.encode(tag.as_ref()));
    header(request, "webhook-signature").split(' ').any(|s| s == expected)
}

#[actix_web::test]
async fn the_event_log_is_newest_first_paged_with_before_and_filtered_by_name() {
    let app = spawn().await;
    let acme = app.account(VIEWER).await;
    let mut ids = Vec::new();
    for (i, name) in ["lead.created", "order.received", "lead.created", "order.paid", "lead.updated"].iter().enumerate()
    {
        ids.push(emit(&app, acme.tenant, name, json!({"n": i})).await);
        app.clock.advance(Duration::seconds(1));
    }
    let other = app.account(VIEWER).await;
    emit(&app, other.tenant, "lead.created", json!({"n": 99})).await;

    let res = app.get(EVENTS, &acme.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert!(res.body.get("status").is_none());
    assert_eq!(names(&res.body), ["lead.updated", "order.paid", "lead.created", "order.received", "lead.created"]);
    assert_eq!((res.body["has_more"].as_bool(), &res.body["next_before"]), (Some(false), &Value::Null));
    assert_eq!(res.body["events"][0]["data"], json!({"n": 4}));
    assert_eq!(res.body["events"][0]["id"], json!(ids[4]));

    let page = app.get(&format!("{EVENTS}?limit=2"), &acme.key).await.body;
    assert_eq!(
        (names(&page), page["has_more"].as_bool()),
        (vec!["lead.updated".into(), "order.paid".into()], Some(true))
    );
    assert_eq!(page["next_before"], json!(ids[3]));
    let next = app.get(&format!("{EVENTS}?limit=2&before={}", ids[3]), &acme.key).await.body;
    assert_eq!(names(&next), ["lead.created", "order.received"]);
    let last = app.get(&format!("{EVENTS}?limit=2&before={}", ids[1]), &acme.key).await.body;
    assert_eq!((names(&last), last["has_more"].as_bool()), (vec!["lead.created".into()], Some(false)));
    let leads = app.get(&format!("{EVENTS}?name=lead.created"), &acme.key).await.body;
    assert_eq!(names(&leads), ["lead.created", "lead.created"]);

    assert_eq!(names(&app.get(EVENTS, &other.key).await.body), ["lead.created"], "each account its own");
    assert_refusal(&app.get(&format!("{EVENTS}?before=x"), &acme.key).await, 422, "validation_error");
    assert_refusal(&app.get(&format!("{EVENTS}?limit=many"), &acme.key).await, 422, "validation_error");
    assert_eq!(
        app.get(&format!("{EVENTS}?limit=500"), &acme.key).await.body["events"].as_array().map(Vec::len),
        Some(5)
    );
}

#[actix_web::test]
async fn reads_need_automations_view_from_a_known_active_issuer() {
    let app = spawn().await;
    let acme = app.account(VIEWER).await;
    let paths = [EVENTS, SUBSCRIPTIONS, SCHEDULES];
    for path in paths {
        let res = app.get(path, &acme.key).await;
        assert_eq!(res.status, 200, "{path}: {}", res.body);
    }
    assert_eq!(app.get(SUBSCRIPTIONS, &acme.key).await.body, json!({"subscriptions": []}));
    assert_eq!(app.get(SCHEDULES, &acme.key).await.body, json!({"schedules": []}));
    let user = app.user(acme.tenant, "payments.view").await;
    let without = app.key(acme.tenant, user).await;
    for path in paths {
        assert_refusal(&app.get(path, &without).await, 403, "permission_denied");
    }
    let legacy = app.legacy_key(acme.tenant).await;
    for path in paths {
        assert_eq!(app.get(path, &legacy).await.status, 403, "{path}");
    }
    {
        let mut conn = app.conn().await;
        accounts::users::deactivate(&mut conn, acme.user).await.expect("deactivate");
    }
    for path in paths {
        assert_refusal(&app.get(path, &acme.key).await, 403, "permission_denied");
    }
    // reads only: no key makes a subscription or a schedule
    let viewer = app.account(VIEWER).await;
    for path in [SUBSCRIPTIONS, SCHEDULES] {
        let res = app.post(path, &viewer.key, json!({"events": ["lead.created"], "url": "https://example.com"})).await;
        assert_eq!(res.status, 405, "{path}: {}", res.body);
    }
}

async fn subscribe<S>(
    app: &TestApp<S>,
    tenant: TenantId,
    events: &[&str],
    url: &str,
) -> automations::subscriptions::Subscribed {
    let events: Vec<String> = events.iter().map(|e| (*e).to_owned()).collect();
    app.automations.subscribe(tenant, &events, url, "operator").await.expect("subscribed")
}

#[actix_web::test]
async fn a_subscription_posts_each_matching_event_signed_once() {
    let app = spawn().await;
    let acme = app.account(VIEWER).await;
    let receiver = Receiver::answering(204).await;
    let made = subscribe(&app, acme.tenant, &["Lead.Created ", "order.paid", "lead.created"], &receiver.url()).await;
    assert_eq!(made.events, ["lead.created", "order.paid"], "trimmed, lowercased, once each");
    assert!(made.secret.starts_with("whsec_") && made.secret.len() == 6 + 32, "{}", made.secret);

    let lead = emit(&app, acme.tenant, "lead.created", json!({"lead": {"id": "l-1"}})).await;
    emit(&app, acme.tenant, "lead.updated", json!({"lead": {"id": "l-1"}})).await;
    let other = app.account(VIEWER).await;
    emit(&app, other.tenant, "lead.created", json!({"lead": {"id": "theirs"}})).await;
    app.run_jobs().await;

    let requests = receiver.requests().await;
    assert_eq!(requests.len(), 1, "only the subscribed event of this account");
    let request = &requests[0];
    assert!(verify(&made.secret, request), "the signature verifies as documented");
    assert!(!verify("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", request), "and not with another secret");
    assert_eq!(header(request, "webhook-id"), lead.to_string());
    assert_eq!(header(request, "webhook-timestamp"), app.clock.now().unix_timestamp().to_string());
    assert_eq!(header(request, "content-type"), "application/json");
    let body: Value = serde_json::from_slice(&request.body).expect("JSON");
    assert_eq!(body["id"], json!(lead));
    assert_eq!(body["type"], "lead.created");
    assert_eq!(body["data"], json!({"lead": {"id": "l-1"}}));
    assert!(body["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{body}");

    app.run_jobs().await;
    assert_eq!(receiver.requests().await.len(), 1, "delivered once");
    let listed = app.get(SUBSCRIPTIONS, &acme.key).await.body;
    let subscription = &listed["subscriptions"][0];
    assert_eq!(subscription["id"], made.id);
    assert_eq!((subscription["delivered"].as_i64(), subscription["pending"].as_i64()), (Some(1), Some(0)));
    assert_eq!(subscription["events"], json!(["lead.created", "order.paid"]));
    assert!(subscription.get("secret").is_none(), "never shown again: {subscription}");
    assert_eq!(app.get(SUBSCRIPTIONS, &other.key).await.body, json!({"subscriptions": []}));

    // unsubscribed: nothing more is posted
    app.automations.unsubscribe(acme.tenant, made.id).await.expect("removed");
    let again = app.automations.unsubscribe(acme.tenant, made.id).await.expect_err("gone");
    assert!(again.is(kernel::ErrorKind::NotFound));
    emit(&app, acme.tenant, "lead.created", json!({})).await;
    app.run_jobs().await;
    assert_eq!(receiver.requests().await.len(), 1);
}

#[actix_web::test]
async fn a_failing_callback_is_retried_on_the_schedule_then_given_up() {
    let app = spawn().await;
    let acme = app.account(VIEWER).await;
    let receiver = Receiver::answering(503).await;
    subscribe(&app, acme.tenant, &["order.paid"], &receiver.url()).await;
    emit(&app, acme.tenant, "order.paid", json!({"order_id": 1})).await;
    app.run_jobs().await;
    assert_eq!(receiver.requests().await.len(), 1, "the first attempt at once");

    let waits = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000];
    for (i, wait) in waits.iter().enumerate() {
        app.advance(Duration::seconds(wait - 1)).await;
        assert_eq!(receiver.requests().await.len(), i + 1, "not before its time (retry {})", i + 1);
        app.advance(Duration::seconds(1)).await;
        assert_eq!(receiver.requests().await.len(), i + 2, "retry {} after {wait} s", i + 1);
    }
    let ids: Vec<String> = receiver.requests().await.iter().map(|r| header(r, "webhook-id").to_owned()).collect();
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "the same id on every retry");
    app.advance(Duration::days(2)).await;
    assert_eq!(receiver.requests().await.len(), 8, "eight attempts in all");
    let subscription = app.get(SUBSCRIPTIONS, &acme.key).await.body["subscriptions"][0].clone();
    assert_eq!((subscription["failed"].as_i64(), subscription["pending"].as_i64()), (Some(1), Some(0)));

    // a callback that recovers mid-way is delivered and not tried again
    receiver.answer(ResponseTemplate::new(200)).await;
    emit(&app, acme.tenant, "order.paid", json!({"order_id": 2})).await;
    app.run_jobs().await;
    app.advance(Duration::days(2)).await;
    assert_eq!(receiver.requests().await.len(), 1);
}

#[actix_web::test]
async fn a_subscription_names_live_events_and_a_target_the_guard_allows() {
    let app = spawn().await;
    let acme = app.account(VIEWER).await;
    let refused = |events: &[&str], url: &str| {
        let events: Vec<String> = events.iter().map(|e| (*e).to_owned()).collect();
        let url = url.to_owned();
        let automations = app.automations.clone();
        async move { automations.subscribe(acme.tenant, &events, &url, "operator").await.expect_err("refused") }
    };
    let url = "https://hooks.example.com/in";
    for (events, why) in
        [(vec!["payment.paid"], "not live"), (vec!["order.shipped"], "not an event"), (vec![" "], "at least one")]
    {
        let error = refused(&events, url).await;
        assert!(error.errors.get("events").is_some_and(|m| m[0].contains(why)), "{events:?}: {error:?}");
    }
    let many: Vec<String> = (0..101).map(|i| format!("scheduled.e{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert!(refused(&many, url).await.errors.get("events").is_some_and(|m| m[0].contains("at most 100")));
    for bad in ["http://hooks.example.com/in", "https://10.0.0.7/in", "https://169.254.169.254/latest", "not a url"] {
        let error = refused(&["lead.created"], bad).await;
        assert!(error.errors.contains_key("url"), "{bad}: {error:?}");
    }
    // event discovery: the catalogue is live; payment events are declared, not live
    let types = app.automations.event_types();
    assert!(types.iter().any(|t| t.name == "order.paid" && t.live));
    assert!(types.iter().any(|t| t.name == "payment.paid" && !t.live));
    let made = subscribe(&app, acme.tenant, &["scheduled.daily_report"], url).await;
    assert_eq!(made.events, ["scheduled.daily_report"], "a schedule's event may be followed");
}

#[actix_web::test]
async fn a_schedule_emits_its_event_once_per_due_time_with_two_workers() {
    let app = spawn().await;
    let acme = app.account(VIEWER).await;
    // the next quarter hour from now
    let schedule = app
        .automations
        .schedule(acme.tenant, "*/15 * * * *", Target::Event("scheduled.stock_report".into()), "operator")
        .await
        .expect("scheduled");
    let due = schedule.next_run_at;
    assert!(due > app.clock.now() && due <= app.clock.now() + Duration::minutes(15), "{due}");
    assert_eq!(due.minute() % 15, 0);
    let listed = app.get(SCHEDULES, &acme.key).await.body;
    assert_eq!(listed["schedules"][0]["id"], json!(schedule.id));
    assert_eq!(
        (listed["schedules"][0]["event"].as_str(), listed["schedules"][0]["runs"].as_i64()),
        (Some("scheduled.stock_report"), Some(0))
    );

    // the same due time queued a second time (as a retried enqueue would), and two workers
    {
        let mut conn = app.conn().await;
        let again = automations::schedules::FireSchedule { schedule: schedule.id, due };
        let options = store::jobs::Enqueue { tenant_id: Some(acme.tenant), run_at: Some(due), ..Default::default() };
        store::jobs::enqueue(&mut conn, &again, options).await.expect("queued");
    }
    app.clock.advance(due - app.clock.now());
    let workers: Vec<_> = (0..2)
        .map(|_| {
            store::jobs::Worker::new(
                app.pool.clone(),
                app.clock.clone(),
                app.services.job_registry(),
                store::jobs::WorkerConfig::default(),
            )
        })
        .collect();
    let runs: Vec<_> = workers.iter().map(|w| w.work_once()).collect();
    let ran: usize = api_tests::join_all(runs).await.into_iter().map(|r| r.expect("worked")).sum();
    assert!(ran >= 2, "both firings ran: {ran}");
    let events = app.get(&format!("{EVENTS}?name=scheduled.stock_report"), &acme.key).await.body;
    assert_eq!(names(&events).len(), 1, "once per due time: {events}");
    let event = &events["events"][0];
    assert_eq!(event["data"]["schedule_id"], json!(schedule.id));
    let listed = app.get(SCHEDULES, &acme.key).await.body["schedules"][0].clone();
    assert_eq!(listed["runs"], 1);
    assert_eq!(
        listed["next_run_at"].as_str().map(str::to_owned),
        (due + Duration::minutes(15)).format(&time::format_description::well_known::Rfc3339).ok()
    );

    // the next due time fires on its own, once
    app.advance(Duration::minutes(15)).await;
    assert_eq!(names(&app.get(&format!("{EVENTS}?name=scheduled.stock_report"), &acme.key).await.body).len(), 2);
    app.advance(Duration::minutes(1)).await;
    assert_eq!(names(&app.get(&format!("{EVENTS}?name=scheduled.stock_report"), &acme.key).await.body).len(), 2);

    // removed: nothing more
    app.automations.unschedule(acme.tenant, schedule.id).await.expect("removed");
    app.advance(Duration::minutes(30)).await;
    assert_eq!(names(&app.get(&format!("{EVENTS}?name=scheduled.stock_report"), &acme.key).await.body).len(), 2);
    let other = app.account(VIEWER).await;
    assert_eq!(app.get(SCHEDULES, &other.key).await.body, json!({"schedules": []}));
}

#[actix_web::test]
async fn a_schedule_needs_a_cron_expression_and_a_scheduled_event() {
    let app = spawn().await;
    let acme = app.account(VIEWER).await;
    let schedule = |cron: &str, target: Target| {
        let (cron, automations) = (cron.to_owned(), app.automations.clone());
        async move { automations.schedule(acme.tenant, &cron, target, "operator").await }
    };
    let event = || Target::Event("scheduled.tick".into());
    for bad in ["", "every day", "61 * * * *"] {
        let error = schedule(bad, event()).await.expect_err("bad cron");
        assert!(error.errors.contains_key("cron"), "{bad:?}: {error:?}");
    }
    for name in ["lead.created", "scheduled.", "scheduled.Big Report"] {
        let error = schedule("0 9 * * *", Target::Event(name.into())).await.expect_err("bad event");
        assert!(error.errors.contains_key("event"), "{name:?}: {error:?}");
    }
    let error = schedule("0 9 * * *", Target::Operation { name: "restock".into(), input: json!({}) })
        .await
        .expect_err("no operations yet");
    assert!(error.errors.contains_key("operation"), "{error:?}");
    assert!(schedule("0 9 * * MON-FRI", event()).await.is_ok());
}
