//! Webhooks management (contract: Webhook receiver, Webhooks management, Events, Limits,
//! Versioning): registration and its checks (events, the address guard, filters, custom
//! headers), updates, deletion, secret rotation, test sends, the event listing, permissions and
//! tenant isolation, through HTTP with real receivers on 127.0.0.1.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Resp, TestApp};
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::RunQueryDsl;
use kernel::TenantId;
use serde_json::{Value, json};
use wiremock::Request;

use super::support::*;
use crate::framework::assert_error;
use crate::sms::sms_account;

/// The fields every answer about a receiver carries.
const FIELDS: [&str; 10] = [
    "id",
    "url",
    "events",
    "filters",
    "headers",
    "status",
    "paused_at",
    "consecutive_failures",
    "created_at",
    "updated_at",
];

/// A public https target: registration only parses it, nothing connects to it.
const PUBLIC: &str = "https://hooks.example.com/in";

/// Address tricks refused with or without loopback allowed: private, shared, link-local,
/// unique-local, multicast and unspecified targets, credentials in the URL, other schemes.
const ALWAYS_REFUSED: [&str; 11] = [
    "https://10.0.0.1/",
    "https://192.168.1.1/",
    "https://172.16.0.1/",
    "https://169.254.169.254/latest/meta-data",
    "https://100.64.0.1/",
    "https://[fe80::1]/",
    "https://[fc00::1]/",
    "https://224.0.0.1/",
    "https://0.0.0.0/",
    "https://user:pass@hooks.example.com/",
    "ftp://hooks.example.com/",
];

/// This machine, however it is spelled.
const LOOPBACK: [&str; 8] = [
    "https://127.0.0.1/",
    "https://127.1/",
    "https://0x7f000001/",
    "https://2130706433/",
    "https://0177.0.0.1/",
    "https://[::1]/",
    "https://[::ffff:127.0.0.1]/",
    "https://localhost/",
];

/// Asserts a 422 in the standard envelope whose `errors` names `field`.
#[track_caller]
fn assert_field_error(res: &Resp, field: &str) {
    assert_error(res, 422);
    assert!(
        res.body["errors"][field].as_array().is_some_and(|m| !m.is_empty()),
        "errors should name {field:?}: {}",
        res.body
    );
}

#[track_caller]
fn assert_status(res: &Resp, status: u16) {
    assert_eq!(res.status, status, "expected {status}, got {}: {}", res.status, res.body);
}

fn path(id: i64) -> String {
    format!("{WEBHOOKS}/{id}")
}

/// The request's value of a header, if it carries it.
fn header_of<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    request.headers.get(name).and_then(|v| v.to_str().ok())
}

/// `POST /webhooks` with a whole body, 201 expected: the answer's data.
async fn create<S, B>(app: &TestApp<S>, key: &str, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(WEBHOOKS, key, body).await;
    assert_status(&res, 201);
    res.data().clone()
}

/// Emits a `message.sent` for the tenant, runs the deliveries and answers the last request the
/// receiver got (which must be a new one).
async fn deliver<S, B>(app: &TestApp<S>, tenant: TenantId, receiver: &Receiver) -> Request
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let before = receiver.requests().await.len();
    emit(app, tenant, "message.sent", json!({"message_id": 7, "status": "sent"})).await;
    app.run_jobs().await;
    let mut requests = receiver.requests().await;
    assert_eq!(requests.len(), before + 1, "one more delivery arrived");
    requests.pop().expect("a request")
}

#[derive(QueryableByName)]
struct HeadersText {
    #[diesel(sql_type = Text)]
    headers: String,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

async fn count<S>(app: &TestApp<S>, sql: &str) -> i64 {
    let mut conn = store::connect(&app.pool).await.expect("connection");
    let row: Count = diesel::sql_query(sql).get_result(&mut conn).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    row.n
}

// ---------------------------------------------------------------------------------------------
// Registration

/// 201 with every field and a `whsec_` secret that no read ever shows again.
#[actix_web::test]
async fn registration_shows_the_secret_once_and_reads_never_do() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;

    let res = app.post(WEBHOOKS, &account.key, json!({"url": PUBLIC, "events": ["message.sent"]})).await;
    assert_status(&res, 201);
    assert_eq!(res.body["status"], "success");
    let created = res.data();
    for field in FIELDS {
        assert!(created.get(field).is_some(), "{field} in {created}");
    }
    let secret = created["secret"].as_str().expect("secret");
    assert!(secret.starts_with("whsec_") && secret.len() > "whsec_".len() + 16, "{secret}");
    assert_eq!(created["url"], PUBLIC);
    assert_eq!(created["events"], json!(["message.sent"]));
    assert_eq!(created["filters"], Value::Null);
    assert_eq!(created["headers"], json!({}));
    assert_eq!(created["status"], "active");
    assert_eq!(created["paused_at"], Value::Null);
    assert_eq!(created["consecutive_failures"], 0);
    let id = created["id"].as_i64().expect("id");

    let read = app.get(&path(id), &account.key).await;
    assert_status(&read, 200);
    assert_eq!(read.data().get("secret"), None, "{}", read.body);
    let mut without_secret = created.clone();
    without_secret.as_object_mut().expect("object").remove("secret");
    assert_eq!(read.data(), &without_secret);

    let list = app.get(WEBHOOKS, &account.key).await;
    assert_status(&list, 200);
    assert_eq!(list.data()["pagination"]["total"], 1);
    assert_eq!(list.data()["items"], json!([without_secret]));
    assert!(!list.body.to_string().contains(secret), "the secret is nowhere in the list");
}

/// `events` is required, holds at least one catalogue name (an unknown one is named by its
/// index), and a name given twice is kept once.
#[actix_web::test]
async fn events_are_required_known_and_kept_once() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let key = &account.key;

    assert_field_error(&app.post(WEBHOOKS, key, json!({"url": PUBLIC})).await, "events");
    assert_field_error(&app.post(WEBHOOKS, key, json!({"url": PUBLIC, "events": []})).await, "events");
    let res = app.post(WEBHOOKS, key, json!({"url": PUBLIC, "events": ["message.sent", "lead.exploded"]})).await;
    assert_field_error(&res, "events.1");
    assert!(res.body["errors"].get("events.0").is_none(), "{}", res.body);
    assert_eq!(app.get(WEBHOOKS, key).await.data()["pagination"]["total"], 0, "nothing was registered");

    let events = ["message.sent", "lead.created", "message.sent", "lead.created"];
    let created = create(&app, key, json!({"url": PUBLIC, "events": events})).await;
    assert_eq!(created["events"], json!(["message.sent", "lead.created"]));
}

/// `url` is required and https; plain http to a public host is refused, and plain http to
/// this machine only while loopback is allowed (the tests' and local development's setting).
#[actix_web::test]
async fn a_url_is_required_and_https_except_to_loopback_in_development() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let key = &account.key;
    let events = json!(["message.sent"]);

    assert_field_error(&app.post(WEBHOOKS, key, json!({"events": events})).await, "url");
    assert_field_error(&app.post(WEBHOOKS, key, json!({"url": "", "events": events})).await, "url");
    assert_field_error(&app.post(WEBHOOKS, key, json!({"url": "hooks.example.com/in", "events": events})).await, "url");
    for http in ["http://hooks.example.com", "http://hooks.example.com/in"] {
        assert_field_error(&app.post(WEBHOOKS, key, json!({"url": http, "events": events})).await, "url");
    }
    assert_eq!(create(&app, key, json!({"url": PUBLIC, "events": events})).await["url"], PUBLIC);
    let receiver = Receiver::answering(200).await;
    assert_eq!(create(&app, key, json!({"url": receiver.url(), "events": events})).await["url"], receiver.url());

    let strict = api_tests::spawn_with_webhooks(webhooks::WebhooksConfig {
        policy: webhooks::guard::Policy { allow_loopback: false },
        ..api_tests::webhooks_config()
    })
    .await;
    let account = strict.account(MANAGER).await;
    let res = strict.post(WEBHOOKS, &account.key, json!({"url": receiver.url(), "events": events})).await;
    assert_field_error(&res, "url");
}

/// Every spelling of this machine, private networks, cloud metadata, multicast, credentials
/// and other schemes are refused on `url` when loopback is not allowed; nothing is stored.
#[actix_web::test]
async fn every_internal_address_trick_is_refused_at_registration() {
    let app = api_tests::spawn_with_webhooks(webhooks::WebhooksConfig {
        policy: webhooks::guard::Policy { allow_loopback: false },
        ..api_tests::webhooks_config()
    })
    .await;
    let account = app.account(MANAGER).await;
    for url in LOOPBACK.iter().chain(&ALWAYS_REFUSED) {
        let res = app.post(WEBHOOKS, &account.key, json!({"url": url, "events": ["message.sent"]})).await;
        assert_eq!(res.status, 422, "{url} should be refused: {}", res.body);
        assert_field_error(&res, "url");
    }
    assert_eq!(app.get(WEBHOOKS, &account.key).await.data()["pagination"]["total"], 0);
    // the same app takes a public target
    create(&app, &account.key, json!({"url": PUBLIC, "events": ["message.sent"]})).await;
}

/// Allowing loopback lets this machine through in any spelling, and nothing else: private,
/// link-local, multicast and unspecified targets stay refused.
#[actix_web::test]
async fn allowing_loopback_still_refuses_private_and_link_local_targets() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    for url in ALWAYS_REFUSED {
        let res = app.post(WEBHOOKS, &account.key, json!({"url": url, "events": ["message.sent"]})).await;
        assert_eq!(res.status, 422, "{url} should be refused: {}", res.body);
        assert_field_error(&res, "url");
    }
    assert_eq!(app.get(WEBHOOKS, &account.key).await.data()["pagination"]["total"], 0);
    for url in LOOPBACK {
        let res = app.post(WEBHOOKS, &account.key, json!({"url": url, "events": ["message.sent"]})).await;
        assert_eq!(res.status, 201, "{url} is loopback, allowed by the setting: {}", res.body);
    }
}

// ---------------------------------------------------------------------------------------------
// Filters

/// Lead filters are taken only beside a lead event, with the three known keys holding lists
/// (stages from the contract's list), and are answered as given.
#[actix_web::test]
async fn lead_filters_need_a_lead_event_known_keys_and_lists() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let key = &account.key;
    let filters = json!({"stages": ["won"], "labels": ["VIP"], "channels": ["whatsapp"]});

    let created = create(&app, key, json!({"url": PUBLIC, "events": ["lead.created"], "filters": filters})).await;
    assert_eq!(created["filters"], filters);
    let id = created["id"].as_i64().expect("id");
    assert_eq!(app.get(&path(id), key).await.data()["filters"], filters);

    let res = app.post(WEBHOOKS, key, json!({"url": PUBLIC, "events": ["message.sent"], "filters": filters})).await;
    assert_field_error(&res, "filters");
    for (bad, field) in [
        (json!({"colour": ["red"]}), "filters.colour"),
        (json!({"stages": ["closed_won"]}), "filters.stages"),
        (json!({"stages": "won"}), "filters.stages"),
        (json!({"labels": {"VIP": true}}), "filters.labels"),
        (json!(["won"]), "filters"),
    ] {
        let res = app.post(WEBHOOKS, key, json!({"url": PUBLIC, "events": ["lead.created"], "filters": bad})).await;
        assert_field_error(&res, field);
    }
    assert_eq!(app.get(WEBHOOKS, key).await.data()["pagination"]["total"], 1, "only the first was registered");
}

// ---------------------------------------------------------------------------------------------
// Custom headers

/// Up to five custom headers; a sixth is refused on `headers`.
#[actix_web::test]
async fn up_to_five_custom_headers_are_accepted() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let five = json!({"X-A": "1", "X-B": "2", "X-C": "3", "X-D": "4", "Authorization": "Bearer 5"});
    let created = create(&app, &account.key, json!({"url": PUBLIC, "events": ["message.sent"], "headers": five})).await;
    assert_eq!(created["headers"], json!({"X-A": null, "X-B": null, "X-C": null, "X-D": null, "Authorization": null}));

    let six = json!({"X-A": "1", "X-B": "2", "X-C": "3", "X-D": "4", "X-E": "5", "X-F": "6"});
    let res =
        app.post(WEBHOOKS, &account.key, json!({"url": PUBLIC, "events": ["message.sent"], "headers": six})).await;
    assert_field_error(&res, "headers");
}

/// The headers the service sets itself cannot be custom headers, in any case.
#[actix_web::test]
async fn the_service_s_own_header_names_are_refused_in_any_case() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let names = [
        "X-Signature",
        "X-Signature-V2",
        "x-signature-anything",
        "X-Event",
        "X-Event-Id",
        "X-Delivery-Id",
        "X-Timestamp",
        "Content-Type",
        "Content-Length",
        "Host",
        "User-Agent",
    ];
    for name in names {
        for spelling in [name.to_owned(), name.to_ascii_lowercase(), name.to_ascii_uppercase()] {
            let body = json!({"url": PUBLIC, "events": ["message.sent"], "headers": {spelling.clone(): "x"}});
            let res = app.post(WEBHOOKS, &account.key, body).await;
            assert_eq!(res.status, 422, "{spelling} should be refused: {}", res.body);
            assert_field_error(&res, &format!("headers.{spelling}"));
        }
    }
    // nor can a value smuggle one in on a new line
    let injected = json!({"X-A": "a\r\nX-Signature: forged"});
    let res =
        app.post(WEBHOOKS, &account.key, json!({"url": PUBLIC, "events": ["message.sent"], "headers": injected})).await;
    assert_field_error(&res, "headers.X-A");
    assert_eq!(app.get(WEBHOOKS, &account.key).await.data()["pagination"]["total"], 0);
}

/// Header values never leave the service: create, read, list and update answer names mapped
/// to null, and the database holds them sealed, never in clear.
#[actix_web::test]
async fn header_values_are_never_answered_nor_stored_in_clear() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let key = &account.key;
    let values = ["Bearer plain-token-Zq7!", "tenant=acme; region=dar"];
    let headers = json!({"Authorization": values[0], "X-Tenant": values[1]});
    let names_only = json!({"Authorization": null, "X-Tenant": null});

    let res = app.post(WEBHOOKS, key, json!({"url": PUBLIC, "events": ["message.sent"], "headers": headers})).await;
    assert_status(&res, 201);
    assert_eq!(res.data()["headers"], names_only);
    let id = res.data()["id"].as_i64().expect("id");
    let read = app.get(&path(id), key).await;
    let list = app.get(WEBHOOKS, key).await;
    let patched = app.patch(&path(id), key, json!({"events": ["message.sent", "message.failed"]})).await;
    assert_status(&patched, 200);
    assert_eq!(read.data()["headers"], names_only);
    assert_eq!(list.data()["items"][0]["headers"], names_only);
    assert_eq!(patched.data()["headers"], names_only);
    for answer in [&res, &read, &list, &patched] {
        for value in values {
            assert!(!answer.body.to_string().contains(value), "{value} shown in {}", answer.body);
        }
    }

    let mut conn = app.conn().await;
    let rows: Vec<HeadersText> =
        diesel::sql_query("SELECT headers::text AS headers FROM webhooks").load(&mut conn).await.expect("headers");
    assert_eq!(rows.len(), 1);
    let stored = &rows[0].headers;
    assert!(stored.contains("Authorization") && stored.contains("X-Tenant"), "names are kept: {stored}");
    for value in values {
        assert!(!stored.contains(value), "{value} is stored in clear: {stored}");
    }
}

/// Custom headers arrive with their values on a real delivery and on a test send, beside the
/// signature.
#[actix_web::test]
async fn custom_headers_arrive_on_deliveries_and_test_sends() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let receiver = Receiver::answering(200).await;
    let headers = json!({"Authorization": "Bearer receiver-token", "X-Tenant": "acme"});
    let created =
        create(&app, &account.key, json!({"url": receiver.url(), "events": ["message.sent"], "headers": headers}))
            .await;
    let id = created["id"].as_i64().expect("id");
    let secret = created["secret"].as_str().expect("secret");

    let delivered = deliver(&app, account.tenant, &receiver).await;
    assert_signed(&delivered, secret, app.clock.now());
    assert_eq!(header(&delivered, "authorization"), "Bearer receiver-token");
    assert_eq!(header(&delivered, "x-tenant"), "acme");

    let res = app.post(&format!("{}/test", path(id)), &account.key, json!({})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["delivered"], true, "{}", res.body);
    let requests = receiver.requests().await;
    assert_eq!(requests.len(), 2);
    assert_signed(&requests[1], secret, app.clock.now());
    assert_eq!(header(&requests[1], "authorization"), "Bearer receiver-token");
    assert_eq!(header(&requests[1], "x-tenant"), "acme");
}

// ---------------------------------------------------------------------------------------------
// Updates

/// A new URL goes through the same checks as at registration, and a refused one changes
/// nothing.
#[actix_web::test]
async fn a_changed_url_is_checked_again() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let (id, _) = register(&app, &account.key, PUBLIC, &["message.sent"]).await;
    for url in ["http://hooks.example.com/in", "https://10.0.0.1/in", "https://user:pass@hooks.example.com/"] {
        assert_field_error(&app.patch(&path(id), &account.key, json!({"url": url})).await, "url");
    }
    assert_eq!(app.get(&path(id), &account.key).await.data()["url"], PUBLIC);
    let res = app.patch(&path(id), &account.key, json!({"url": "https://other.example.com/hooks"})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["url"], "https://other.example.com/hooks");
}

/// `events` is replaced as a whole, filters are kept until `filters: null` removes them, and
/// stored filters cannot be left without a lead event.
#[actix_web::test]
async fn update_replaces_events_and_null_removes_filters() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let key = &account.key;
    let filters = json!({"stages": ["won"], "labels": ["VIP"], "channels": ["whatsapp"]});
    let created = create(&app, key, json!({"url": PUBLIC, "events": ["lead.created"], "filters": filters})).await;
    let id = created["id"].as_i64().expect("id");

    let res = app.patch(&path(id), key, json!({"events": ["lead.stage_changed", "message.sent"]})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["events"], json!(["lead.stage_changed", "message.sent"]));
    assert_eq!(res.data()["filters"], filters, "kept when not sent");

    let res = app.patch(&path(id), key, json!({"events": ["message.sent"]})).await;
    assert_field_error(&res, "filters");
    let res = app.patch(&path(id), key, json!({"events": ["lead.exploded"]})).await;
    assert_field_error(&res, "events.0");

    let res = app.patch(&path(id), key, json!({"filters": null})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["filters"], Value::Null);
    assert_eq!(res.data()["events"], json!(["lead.stage_changed", "message.sent"]));
    assert_eq!(app.get(&path(id), key).await.data()["filters"], Value::Null);
    // without filters, a receiver may drop its lead events
    let res = app.patch(&path(id), key, json!({"events": ["message.sent"]})).await;
    assert_status(&res, 200);
}

/// Headers left out of an update are kept; a name sent as null keeps its stored value (the
/// delivery still carries it) while names not sent go; `{}` removes them all; null for a name
/// never stored is refused.
#[actix_web::test]
async fn a_header_sent_as_null_keeps_its_value_and_an_empty_set_removes_all() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let key = &account.key;
    let receiver = Receiver::answering(200).await;
    let headers = json!({"X-A": "alpha-value", "X-B": "beta-value"});
    let created =
        create(&app, key, json!({"url": receiver.url(), "events": ["message.sent"], "headers": headers})).await;
    let id = created["id"].as_i64().expect("id");

    let res = app.patch(&path(id), key, json!({"events": ["message.sent", "message.failed"]})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["headers"], json!({"X-A": null, "X-B": null}));
    let request = deliver(&app, account.tenant, &receiver).await;
    assert_eq!((header(&request, "x-a"), header(&request, "x-b")), ("alpha-value", "beta-value"));

    let res = app.patch(&path(id), key, json!({"headers": {"X-A": null, "X-Never": null}})).await;
    assert_field_error(&res, "headers.X-Never");
    let request = deliver(&app, account.tenant, &receiver).await;
    assert_eq!(header_of(&request, "x-b"), Some("beta-value"), "a refused update changes nothing");

    let res = app.patch(&path(id), key, json!({"headers": {"X-A": null}})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["headers"], json!({"X-A": null}));
    let request = deliver(&app, account.tenant, &receiver).await;
    assert_eq!(header_of(&request, "x-a"), Some("alpha-value"), "the stored value was kept");
    assert_eq!(header_of(&request, "x-b"), None, "X-B was not sent, so it went");

    let res = app.patch(&path(id), key, json!({"headers": {"X-A": "alpha-new", "X-C": "gamma"}})).await;
    assert_status(&res, 200);
    let request = deliver(&app, account.tenant, &receiver).await;
    assert_eq!((header_of(&request, "x-a"), header_of(&request, "x-c")), (Some("alpha-new"), Some("gamma")));

    let res = app.patch(&path(id), key, json!({"headers": {}})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["headers"], json!({}));
    let request = deliver(&app, account.tenant, &receiver).await;
    for name in ["x-a", "x-b", "x-c"] {
        assert_eq!(header_of(&request, name), None, "{name} was removed");
    }
    assert_signed(&request, created["secret"].as_str().expect("secret"), app.clock.now());
}

/// An http endpoint registered before 26 September 2026 keeps its URL through other edits and
/// a resend of the same URL, but cannot move to another http URL; once re-pointed to https it
/// cannot go back to http.
#[actix_web::test]
async fn a_legacy_http_endpoint_keeps_its_url_until_it_is_edited() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let key = &account.key;
    let legacy = "http://hooks.example.com/in";
    let id = {
        let mut conn = app.conn().await;
        let row: Id = diesel::sql_query(
            "INSERT INTO webhooks (tenant_id, url, events, secret, created_at, updated_at, url_changed_at)
             VALUES ($1, 'http://hooks.example.com/in', ARRAY['message.sent'], 'whsec_x', '2026-09-01', '2026-09-01',
                     '2026-09-01')
             RETURNING id",
        )
        .bind::<BigInt, _>(account.tenant.0)
        .get_result(&mut conn)
        .await
        .expect("legacy receiver");
        row.id
    };

    let res = app.patch(&path(id), key, json!({"events": ["message.sent", "message.delivered"]})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["url"], legacy);
    assert_eq!(res.data()["events"], json!(["message.sent", "message.delivered"]));
    let res = app.patch(&path(id), key, json!({"url": legacy})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["url"], legacy, "the same URL is not an edit");

    assert_field_error(&app.patch(&path(id), key, json!({"url": "http://hooks.example.com/other"})).await, "url");
    assert_eq!(app.get(&path(id), key).await.data()["url"], legacy);

    assert_status(&app.patch(&path(id), key, json!({"url": PUBLIC})).await, 200);
    assert_field_error(&app.patch(&path(id), key, json!({"url": legacy})).await, "url");
}

// ---------------------------------------------------------------------------------------------
// Deletion and rotation

/// DELETE answers 200, then the receiver is gone, with its deliveries and their attempts, and
/// a delivery that was waiting is never sent.
#[actix_web::test]
async fn deleting_a_receiver_removes_it_and_its_deliveries() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let receiver = Receiver::answering(200).await;
    let (id, _) = register(&app, &account.key, &receiver.url(), &["message.sent"]).await;
    deliver(&app, account.tenant, &receiver).await;
    let log = app.get(&format!("{}/deliveries", path(id)), &account.key).await;
    let delivery = log.data()["items"][0]["id"].as_str().expect("delivery id").to_owned();
    // one more, waiting when the receiver goes
    emit(&app, account.tenant, "message.sent", json!({"message_id": 8})).await;
    assert_eq!(count(&app, &format!("SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = {id}")).await, 2);

    let res = app.delete(&path(id), &account.key).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["id"], id);
    assert_error(&app.get(&path(id), &account.key).await, 404);
    assert_error(&app.get(&format!("{}/deliveries", path(id)), &account.key).await, 404);
    assert_error(&app.get(&format!("{}/deliveries/{delivery}", path(id)), &account.key).await, 404);
    assert_error(&app.delete(&path(id), &account.key).await, 404);
    assert_eq!(app.get(WEBHOOKS, &account.key).await.data()["pagination"]["total"], 0);
    assert_eq!(count(&app, &format!("SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = {id}")).await, 0);
    let attempts = format!("SELECT count(*) AS n FROM webhook_attempts WHERE delivery_id = '{delivery}'::uuid");
    assert_eq!(count(&app, &attempts).await, 0);

    app.run_jobs().await;
    assert_eq!(receiver.requests().await.len(), 1, "the waiting delivery was dropped");
}

/// rotate-secret answers a new secret; the next delivery is signed with it, and the old secret
/// no longer verifies it.
#[actix_web::test]
async fn a_rotated_secret_signs_the_next_delivery_and_the_old_one_stops_verifying() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let receiver = Receiver::answering(200).await;
    let (id, old) = register(&app, &account.key, &receiver.url(), &["message.sent"]).await;

    let res = app.post(&format!("{}/rotate-secret", path(id)), &account.key, json!({})).await;
    assert_status(&res, 200);
    let new = res.data()["secret"].as_str().expect("secret").to_owned();
    assert!(new.starts_with("whsec_"), "{new}");
    assert_ne!(new, old);
    assert_eq!(res.data()["id"], id);
    assert_eq!(app.get(&path(id), &account.key).await.data().get("secret"), None);

    let request = deliver(&app, account.tenant, &receiver).await;
    assert_signed(&request, &new, app.clock.now());
    assert_ne!(header(&request, "x-signature"), hmac_hex(old.as_bytes(), &request.body), "old secret, X-Signature");
    let mut signed = format!("{}.{}.", header(&request, "x-timestamp"), header(&request, "x-delivery-id")).into_bytes();
    signed.extend_from_slice(&request.body);
    assert_ne!(
        header(&request, "x-signature-v2"),
        format!("sha256={}", hmac_hex(old.as_bytes(), &signed)),
        "old secret, X-Signature-V2"
    );
}

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

// ---------------------------------------------------------------------------------------------
// Permissions and tenants

/// A key whose issuer may only view reads receivers, deliveries, events and notifications, and
/// is refused every change; a refused change changes nothing.
#[actix_web::test]
async fn a_view_only_key_reads_but_every_change_is_refused() {
    let app = api_tests::spawn().await;
    let manager = app.account(MANAGER).await;
    let viewer = {
        let user = app.user(manager.tenant, "webhooks.view").await;
        app.key(manager.tenant, user).await
    };
    let receiver = Receiver::answering(500).await;
    let (id, _) = register(&app, &manager.key, &receiver.url(), &["message.sent"]).await;
    deliver(&app, manager.tenant, &receiver).await;
    let log = app.get(&format!("{}/deliveries", path(id)), &viewer).await;
    assert_status(&log, 200);
    let delivery = log.data()["items"][0]["id"].as_str().expect("delivery id").to_owned();
    let before = app.get(&path(id), &viewer).await;
    assert_status(&before, 200);

    for read in [
        WEBHOOKS.to_owned(),
        path(id),
        format!("{WEBHOOKS}/events"),
        format!("{WEBHOOKS}/notifications"),
        format!("{}/deliveries/{delivery}", path(id)),
    ] {
        assert_status(&app.get(&read, &viewer).await, 200);
    }
    for (method, change, body) in [
        ("POST", WEBHOOKS.to_owned(), Some(json!({"url": PUBLIC, "events": ["message.sent"]}))),
        ("PATCH", path(id), Some(json!({"events": ["message.failed"]}))),
        ("DELETE", path(id), None),
        ("POST", format!("{}/test", path(id)), Some(json!({}))),
        ("POST", format!("{}/rotate-secret", path(id)), Some(json!({}))),
        ("POST", format!("{}/deliveries/{delivery}/replay", path(id)), Some(json!({}))),
        ("POST", format!("{}/recover", path(id)), Some(json!({"since": "2020-01-01T00:00:00Z"}))),
    ] {
        let res = app.request(method, &change, Some(&viewer), body).await;
        assert_eq!(res.status, 403, "{method} {change}: {}", res.body);
        assert_error(&res, 403);
    }
    assert_eq!(app.get(&path(id), &viewer).await.body, before.body, "nothing changed");
    assert_eq!(receiver.requests().await.len(), 1, "no test send, no replay");
    assert_eq!(app.get(WEBHOOKS, &viewer).await.data()["pagination"]["total"], 1);
}

/// A key whose issuer has neither webhook permission cannot even read.
#[actix_web::test]
async fn a_key_without_webhook_permissions_cannot_read() {
    let app = api_tests::spawn().await;
    let manager = app.account(MANAGER).await;
    let outsider = {
        let user = app.user(manager.tenant, "contacts.view").await;
        app.key(manager.tenant, user).await
    };
    let (id, _) = register(&app, &manager.key, PUBLIC, &["message.sent"]).await;
    for read in [
        WEBHOOKS.to_owned(),
        path(id),
        format!("{WEBHOOKS}/events"),
        format!("{WEBHOOKS}/notifications"),
        format!("{}/deliveries", path(id)),
    ] {
        let res = app.get(&read, &outsider).await;
        assert_eq!(res.status, 403, "GET {read}: {}", res.body);
        assert_error(&res, 403);
    }
    let res = app.post(WEBHOOKS, &outsider, json!({"url": PUBLIC, "events": ["message.sent"]})).await;
    assert_error(&res, 403);
}

/// A key from before the permission model (no issuer) is refused on every webhook route.
#[actix_web::test]
async fn a_legacy_key_is_refused_on_every_webhook_route() {
    let app = api_tests::spawn().await;
    let manager = app.account(MANAGER).await;
    let legacy = app.legacy_key(manager.tenant).await;
    let (id, _) = register(&app, &manager.key, PUBLIC, &["message.sent"]).await;
    let delivery = uuid::Uuid::new_v4();
    for (method, route, body) in [
        ("GET", WEBHOOKS.to_owned(), None),
        ("POST", WEBHOOKS.to_owned(), Some(json!({"url": PUBLIC, "events": ["message.sent"]}))),
        ("GET", format!("{WEBHOOKS}/events"), None),
        ("GET", format!("{WEBHOOKS}/notifications"), None),
        ("GET", path(id), None),
        ("PATCH", path(id), Some(json!({"events": ["message.failed"]}))),
        ("DELETE", path(id), None),
        ("POST", format!("{}/test", path(id)), Some(json!({}))),
        ("POST", format!("{}/rotate-secret", path(id)), Some(json!({}))),
        ("GET", format!("{}/deliveries", path(id)), None),
        ("GET", format!("{}/deliveries/{delivery}", path(id)), None),
        ("POST", format!("{}/deliveries/{delivery}/replay", path(id)), Some(json!({}))),
        ("POST", format!("{}/recover", path(id)), Some(json!({"since": "2020-01-01T00:00:00Z"}))),
    ] {
        let res = app.request(method, &route, Some(&legacy), body).await;
        assert_eq!(res.status, 403, "{method} {route}: {}", res.body);
        assert_error(&res, 403);
    }
    assert_status(&app.get(&path(id), &manager.key).await, 200);
    assert_eq!(app.get(WEBHOOKS, &manager.key).await.data()["pagination"]["total"], 1);
}

/// Another tenant's receiver and its deliveries answer 404 on every route, even to a manager,
/// and stay as they were; the other tenant's list does not show them.
#[actix_web::test]
async fn another_tenant_s_receiver_and_deliveries_answer_404() {
    let app = api_tests::spawn().await;
    let a = app.account(MANAGER).await;
    let b = app.account(MANAGER).await;
    let receiver = Receiver::answering(200).await;
    let (id, secret) = register(&app, &a.key, &receiver.url(), &["message.sent"]).await;
    deliver(&app, a.tenant, &receiver).await;
    let log = app.get(&format!("{}/deliveries", path(id)), &a.key).await;
    let delivery = log.data()["items"][0]["id"].as_str().expect("delivery id").to_owned();
    let before = app.get(&path(id), &a.key).await;

    for (method, route, body) in [
        ("GET", path(id), None),
        ("PATCH", path(id), Some(json!({"events": ["message.failed"], "url": PUBLIC}))),
        ("DELETE", path(id), None),
        ("POST", format!("{}/test", path(id)), Some(json!({}))),
        ("POST", format!("{}/rotate-secret", path(id)), Some(json!({}))),
        ("GET", format!("{}/deliveries", path(id)), None),
        ("GET", format!("{}/deliveries/{delivery}", path(id)), None),
        ("POST", format!("{}/deliveries/{delivery}/replay", path(id)), Some(json!({}))),
        ("POST", format!("{}/recover", path(id)), Some(json!({"since": "2020-01-01T00:00:00Z"}))),
    ] {
        let res = app.request(method, &route, Some(&b.key), body).await;
        assert_eq!(res.status, 404, "{method} {route}: {}", res.body);
        assert_error(&res, 404);
    }
    let list = app.get(WEBHOOKS, &b.key).await;
    assert_status(&list, 200);
    assert_eq!(list.data()["items"], json!([]));

    // A's delivery is not reachable through a receiver of B's either
    let (own, _) = register(&app, &b.key, PUBLIC, &["message.sent"]).await;
    let res = app.get(&format!("{}/deliveries/{delivery}", path(own)), &b.key).await;
    assert_error(&res, 404);
    let res = app.post(&format!("{}/deliveries/{delivery}/replay", path(own)), &b.key, json!({})).await;
    assert_error(&res, 404);
    let list = app.get(WEBHOOKS, &b.key).await;
    assert_eq!(list.data()["pagination"]["total"], 1);
    assert_eq!(list.data()["items"][0]["id"], own);

    // A's receiver is untouched: same fields, same secret, one delivery, nothing more sent
    assert_eq!(app.get(&path(id), &a.key).await.body, before.body);
    app.run_jobs().await;
    assert_eq!(receiver.requests().await.len(), 1, "no test send, no replay");
    assert_eq!(app.get(&format!("{}/deliveries", path(id)), &a.key).await.data()["pagination"]["total"], 1);
    let request = deliver(&app, a.tenant, &receiver).await;
    assert_signed(&request, &secret, app.clock.now());
}

/// An event of one tenant reaches only that tenant's receivers.
#[actix_web::test]
async fn another_tenant_s_events_never_reach_a_receiver() {
    let app = api_tests::spawn().await;
    let a = app.account(MANAGER).await;
    let b = app.account(MANAGER).await;
    let a_receiver = Receiver::answering(200).await;
    let b_receiver = Receiver::answering(200).await;
    let (a_id, _) = register(&app, &a.key, &a_receiver.url(), &["message.sent"]).await;
    register(&app, &b.key, &b_receiver.url(), &["message.sent"]).await;

    deliver(&app, b.tenant, &b_receiver).await;
    assert_eq!(a_receiver.requests().await.len(), 0);
    let log = app.get(&format!("{}/deliveries", path(a_id)), &a.key).await;
    assert_eq!(log.data()["pagination"]["total"], 0);
}

/// A receiver id that is not a number, or a delivery id that is not a UUID, names nothing.
#[actix_web::test]
async fn ids_that_are_not_numbers_are_not_found() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let (id, _) = register(&app, &account.key, PUBLIC, &["message.sent"]).await;
    for (method, route, body) in [
        ("GET", format!("{WEBHOOKS}/abc"), None),
        ("GET", format!("{WEBHOOKS}/{id}x"), None),
        ("GET", format!("{WEBHOOKS}/99999999999999999999"), None),
        ("PATCH", format!("{WEBHOOKS}/abc"), Some(json!({"events": ["message.failed"]}))),
        ("DELETE", format!("{WEBHOOKS}/1.0"), None),
        ("POST", format!("{WEBHOOKS}/abc/test"), Some(json!({}))),
        ("POST", format!("{WEBHOOKS}/abc/rotate-secret"), Some(json!({}))),
        ("GET", format!("{WEBHOOKS}/abc/deliveries"), None),
        ("GET", format!("{WEBHOOKS}/{id}/deliveries/not-a-uuid"), None),
        ("POST", format!("{WEBHOOKS}/{id}/deliveries/not-a-uuid/replay"), Some(json!({}))),
        ("POST", format!("{WEBHOOKS}/abc/recover"), Some(json!({"since": "2020-01-01T00:00:00Z"}))),
    ] {
        let res = app.request(method, &route, Some(&account.key), body).await;
        assert_eq!(res.status, 404, "{method} {route}: {}", res.body);
        assert_error(&res, 404);
    }
    assert_status(&app.get(&path(id), &account.key).await, 200);
}

/// The notifications a pause leaves exist as a list, empty for a fresh account.
#[actix_web::test]
async fn a_fresh_account_has_no_notifications() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let res = app.get(&format!("{WEBHOOKS}/notifications"), &account.key).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["items"], json!([]));
    assert_eq!(res.data()["pagination"]["total"], 0);
}
