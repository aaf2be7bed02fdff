//! Registering a receiver (contract: Webhook receiver, Webhooks management, Limits): the secret
//! shown once, required and known events, https and the address guard against every spelling of
//! an internal address, lead filters, and custom headers (at most five, never the service's own
//! names, values never answered nor stored in clear, carried on deliveries and test sends).

use diesel::QueryableByName;
use diesel::sql_types::Text;
use diesel_async::RunQueryDsl;
use serde_json::{Value, json};

use super::support::*;

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

#[derive(QueryableByName)]
struct HeadersText {
    #[diesel(sql_type = Text)]
    headers: String,
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
    assert_field_error(&res, "events[1]");
    assert!(res.body["errors"].get("events[0]").is_none(), "{}", res.body);
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

    // A list sent as null or left out is no filter on that key, as the description allows.
    let nulls = json!({"stages": null, "labels": ["VIP"]});
    let res = create(&app, key, json!({"url": PUBLIC, "events": ["lead.created"], "filters": nulls})).await;
    assert_eq!(res["filters"], json!({"stages": [], "labels": ["VIP"], "channels": []}));
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
    assert_eq!(app.get(WEBHOOKS, key).await.data()["pagination"]["total"], 2, "only the first two were registered");
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
// The rules the OpenAPI description states (webhooks::doc)

/// Each rule the description states of a receiver's body and the log's filters is one the
/// service applies: an empty or blank filter name, a header name that is no HTTP token, a
/// header value with a line break, credentials in the URL, an unknown test event, an unknown
/// state or event in the delivery log's query — each a 422 naming its field.
#[actix_web::test]
async fn what_the_description_states_of_names_and_values_is_refused() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let key = &account.key;
    let lead = json!(["lead.created"]);
    for (body, field) in [
        (json!({"url": PUBLIC, "events": lead, "filters": {"labels": [""]}}), "filters.labels"),
        (json!({"url": PUBLIC, "events": lead, "filters": {"channels": ["  "]}}), "filters.channels"),
        (json!({"url": PUBLIC, "events": lead, "headers": {"Bad Name": "1"}}), "headers.Bad Name"),
        (json!({"url": PUBLIC, "events": lead, "headers": {"X-A": "1\r\nX-B: 2"}}), "headers.X-A"),
        (json!({"url": "https://user:pass@hooks.example.com/in", "events": lead}), "url"),
        (json!({"url": "ftp://hooks.example.com/in", "events": lead}), "url"),
    ] {
        assert_field_error(&app.post(WEBHOOKS, key, body).await, field);
    }
    assert_eq!(app.get(WEBHOOKS, key).await.data()["pagination"]["total"], 0, "nothing was registered");

    let id = create(&app, key, json!({"url": PUBLIC, "events": lead})).await["id"].as_i64().expect("id");
    let res = app.patch(&path(id), key, json!({"events": []})).await;
    assert_field_error(&res, "events");
    let res = app.patch(&path(id), key, json!({"url": ""})).await;
    assert_field_error(&res, "url");
    let res = app.post(&format!("{}/test", path(id)), key, json!({"event": "lead.exploded"})).await;
    assert_field_error(&res, "event");
    for (query, field) in [("?state=lost", "state"), ("?event=lead.exploded", "event")] {
        let res = app.get(&format!("{}/deliveries{query}", path(id)), key).await;
        assert_field_error(&res, field);
    }
}
