//! Secrets at rest (issue 15, Defence in depth): webhook signing secrets, custom header values
//! and channel credentials are stored sealed; values sealed under a key still work once it is
//! an old key, and after `gateway admin secrets rotate` without it; a value under a key the
//! service no longer has fails that one use, clearly; and no secret reaches the logs of a real
//! `gateway serve` at debug level.

use std::time::{Duration, Instant};

use api_tests::{json, spawn};
use gateway::cli::admin::{AdminCommand, SecretsCommand};
use kernel::{Caller, TenantId};
use messaging::channels::{Channel, NewChannel, NewSender};
use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::admin_cli::{admin_json, config};
use crate::process::{Gateway, gateway_bin};

const KEY_A: &str = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
const KEY_B: &str = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";
const KEY_C: &str = "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3";
const HEADER_VALUE: &str = "Bearer receiver-token-5f2e9d";
const API_KEY: &str = "atsk_provider_key_81c4aa";
const USERNAME: &str = "acme-at-user";

/// The gateway as configured with `current` sealing and `old` keys opening, on the test's
/// database; loopback receivers allowed.
async fn services(url: &str, pool: &store::Pool, current: &str, old: &[&str]) -> gateway::Services {
    let mut config = config(url);
    config.secrets = store::secrets::SecretsConfig {
        current: Some(current.to_owned()),
        old: old.iter().map(|k| (*k).to_owned()).collect(),
    };
    config.webhooks = api_tests::webhooks_config();
    gateway::Services::new(pool.clone(), kernel::Clock::system(), &config).await.expect("services")
}

/// A fake Africa's Talking that accepts every message.
async fn fake_provider() -> MockServer {
    let provider = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/version1/messaging"))
        .respond_with(ResponseTemplate::new(201).set_body_json(json!({"SMSMessageData": {
            "Message": "Sent to 1/1",
            "Recipients": [{"statusCode": 101, "number": "+255712345678", "status": "Success",
                            "cost": "TZS 20.0000", "messageId": "ATXid_1"}]
        }})))
        .mount(&provider)
        .await;
    provider
}

fn at_channel(provider: &MockServer) -> NewChannel {
    NewChannel {
        kind: "sms".into(),
        provider: "africastalking".into(),
        code: Some("at".into()),
        base_url: Some(provider.uri()),
        username: Some(USERNAME.into()),
        api_key: Some(API_KEY.into()),
        throughput_per_second: None,
    }
}

/// A receiver that answers 200 and the URL to register.
async fn receiver() -> (MockServer, String) {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200)).mount(&server).await;
    let url = format!("{}/hooks/in", server.uri());
    (server, url)
}

/// The last request `server` received, checked: signed with `secret`, carrying the header.
async fn assert_signed(server: &MockServer, secret: &str) {
    let requests: Vec<Request> = server.received_requests().await.unwrap_or_default();
    let last = requests.last().expect("the receiver got a request");
    let signature = last.headers.get("X-Signature").and_then(|v| v.to_str().ok()).expect("X-Signature");
    webhooks::signing::verify_v1(secret, signature, &last.body).expect("signed with the secret shown at creation");
    assert_eq!(last.headers.get("X-Token").and_then(|v| v.to_str().ok()), Some(HEADER_VALUE));
}

/// Sends one SMS through the channel's provider client: the fake sees the API key.
async fn send_through(services: &gateway::Services, channel: &Channel, provider: &MockServer) {
    let client = services.messaging.gateways().sms(channel).expect("the credentials open");
    let sms = providers::OutboundSms { reference: "ref", to: "+255712345678", from: None, body: "Habari" };
    client.send(sms).await.expect("sent");
    let requests: Vec<Request> = provider.received_requests().await.unwrap_or_default();
    let last = requests.last().expect("the provider got the message");
    assert_eq!(last.headers.get("apiKey").and_then(|v| v.to_str().ok()), Some(API_KEY));
}

async fn channel(pool: &store::Pool, tenant: TenantId, id: i64) -> Channel {
    messaging::channels::get(&mut store::connect_system(pool).await.expect("connection"), tenant, id)
        .await
        .expect("channel")
}

#[derive(diesel::QueryableByName)]
struct Rows {
    #[diesel(sql_type = diesel::sql_types::Jsonb)]
    rows: Value,
}

/// The rows of a query as JSON objects: the table as stored, read by SQL.
async fn sql_rows(pool: &store::Pool, sql: &str) -> Vec<Value> {
    use diesel_async::RunQueryDsl;
    let mut conn = store::connect_system(pool).await.expect("connection");
    let query = format!("SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]'::jsonb) AS rows FROM ({sql}) t");
    let found: Rows = diesel::sql_query(query).get_result(&mut conn).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    found.rows.as_array().cloned().unwrap_or_default()
}

/// Every stored form of the tenant's secrets, as text.
async fn stored(pool: &store::Pool) -> String {
    let webhooks = sql_rows(pool, "SELECT secret, headers::text AS headers FROM webhooks").await;
    let channels = sql_rows(pool, "SELECT credentials::text AS credentials FROM channels").await;
    format!("{webhooks:?} {channels:?}")
}

#[actix_web::test]
async fn secrets_are_stored_sealed_and_survive_a_rotation_of_the_key() {
    let app = spawn().await;
    let url = app.db.url().to_owned();
    let account = app.account("all").await;
    let caller = Caller::operator(account.tenant, "255");
    let (receiver, receiver_url) = receiver().await;
    let provider = fake_provider().await;

    // Under key A: a receiver with a custom header, and an Africa's Talking channel.
    let a = services(&url, &app.pool, KEY_A, &[]).await;
    let made = a
        .webhooks
        .create(
            &caller,
            webhooks::NewWebhook {
                url: Some(receiver_url),
                events: Some(vec!["message.sent".into()]),
                filters: None,
                headers: Some(json!({"X-Token": HEADER_VALUE})),
            },
        )
        .await
        .expect("receiver");
    let (id, secret) = (webhooks::WebhookId(made.webhook.id), made.secret.clone());
    let mut conn = app.conn().await;
    let channel_id = messaging::channels::add(&mut conn, &a.keyring, account.tenant, at_channel(&provider))
        .await
        .expect("channel")
        .id;
    drop(conn);

    // The stored bytes hold none of it in clear, nor its hex.
    let at_rest = stored(&app.pool).await;
    for clear in [secret.as_str(), HEADER_VALUE, API_KEY, USERNAME] {
        assert!(!at_rest.contains(clear), "{clear} is stored in clear: {at_rest}");
        assert!(!at_rest.contains(&hex::encode(clear)), "{clear} is stored as hex: {at_rest}");
    }
    assert!(at_rest.contains(&format!("v1:{}:", a.keyring.current_id())), "sealed under A: {at_rest}");

    // B current, A old: everything sealed under A still works; nothing is current yet.
    let b_with_a = services(&url, &app.pool, KEY_B, &[KEY_A]).await;
    let test = b_with_a.webhooks.test(&caller, id, webhooks::log::TestSend { event: None }).await.expect("test send");
    assert!(test.delivered, "{:?}", test.error);
    assert_signed(&receiver, &secret).await;
    send_through(&b_with_a, &channel(&app.pool, account.tenant, channel_id).await, &provider).await;

    // The rotation re-seals both under B; run again, it has nothing left to do.
    assert_eq!(b_with_a.reseal().await.expect("rotate"), (1, 1));
    assert_eq!(b_with_a.reseal().await.expect("rotate again"), (0, 0));
    let at_rest = stored(&app.pool).await;
    assert!(!at_rest.contains(&format!("v1:{}:", a.keyring.current_id())), "nothing left under A: {at_rest}");

    // A removed: everything still works, with the same secret.
    let b = services(&url, &app.pool, KEY_B, &[]).await;
    let test = b.webhooks.test(&caller, id, webhooks::log::TestSend { event: None }).await.expect("test send");
    assert!(test.delivered, "{:?}", test.error);
    assert_signed(&receiver, &secret).await;
    send_through(&b, &channel(&app.pool, account.tenant, channel_id).await, &provider).await;

    // A key the service does not have (C alone): that one use fails and says why; nothing
    // else does.
    let c = services(&url, &app.pool, KEY_C, &[]).await;
    let sent_before = receiver.received_requests().await.unwrap_or_default().len();
    let test = c.webhooks.test(&caller, id, webhooks::log::TestSend { event: None }).await.expect("an answer");
    assert!(!test.delivered);
    let error = test.error.unwrap_or_default();
    assert!(error.contains("cannot be opened") && error.contains("SVC_SECRETS_OLD_KEYS"), "{error}");
    assert_eq!(receiver.received_requests().await.unwrap_or_default().len(), sent_before, "nothing sent unsigned");
    let refused = c.messaging.gateways().sms(&channel(&app.pool, account.tenant, channel_id).await).err();
    let message = refused.map(|e| e.message.clone()).expect("the credentials do not open under C");
    assert!(message.contains("credentials cannot be opened"), "{message}");
    assert!(c.webhooks.get(&caller, id).await.is_ok(), "reading the receiver needs no key");
    let rotate = c.reseal().await.expect_err("a rotation cannot re-seal what it cannot open");
    assert!(rotate.message.contains(&format!("webhook {}", id.0)), "{}", rotate.message);

    // Over HTTP (the app's own key is the database's, which sealed none of these): the test
    // send answers 200 with the reason, the receiver reads as ever.
    let res = app.post(&format!("/api/v3/webhooks/{}/test", id.0), &account.key, json!({})).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    assert_eq!(res.data()["delivered"], false);
    assert_eq!(app.get(&format!("/api/v3/webhooks/{}", id.0), &account.key).await.status, 200);

    // Recovering without the key (docs/operations.md): the channel's credentials given again,
    // the receiver's secret rotated and its header sent again; the rotation then completes.
    let mut conn = app.conn().await;
    messaging::channels::set_credentials(&mut conn, &c.keyring, account.tenant, "at", at_channel(&provider))
        .await
        .expect("credentials replaced");
    drop(conn);
    send_through(&c, &channel(&app.pool, account.tenant, channel_id).await, &provider).await;
    let fresh = c.webhooks.rotate_secret(&caller, id).await.expect("a new secret").secret;
    let patch = webhooks::WebhookPatch {
        headers: kernel::Patch::Set(json!({"X-Token": HEADER_VALUE})),
        ..webhooks::WebhookPatch::default()
    };
    c.webhooks.update(&caller, id, patch).await.expect("headers sent again");
    assert_eq!(c.reseal().await.expect("nothing left to re-seal"), (0, 0));
    let test = c.webhooks.test(&caller, id, webhooks::log::TestSend { event: None }).await.expect("test send");
    assert!(test.delivered, "{:?}", test.error);
    assert_signed(&receiver, &fresh).await;
}

#[actix_web::test]
async fn the_rotate_command_reseals_and_forgets_the_stored_key_only_when_asked_and_configured() {
    let app = spawn().await;
    let url = app.db.url().to_owned();
    let account = app.account("all").await;
    let provider = fake_provider().await;
    // A channel sealed with the key the database keeps (nothing configured), as `xtask run` makes.
    let stored_key = gateway::keyring(&app.pool, &Default::default()).await.expect("kept key");
    let mut conn = app.conn().await;
    let id = messaging::channels::add(&mut conn, &stored_key, account.tenant, at_channel(&provider))
        .await
        .expect("channel")
        .id;
    drop(conn);

    let rotate = |forget| AdminCommand::Secrets(SecretsCommand::Rotate { forget_stored_key: forget });
    let mut config = config(&url);
    config.secrets = store::secrets::SecretsConfig::default();
    let refused = gateway::cli::admin::run(gateway::cli::admin::Admin { json: false, command: rotate(true) }, &config)
        .await
        .expect_err("nothing configured: the kept key is the current one");
    assert!(refused.message.contains("SVC_SECRETS_KEY"), "{}", refused.message);

    // With A configured the command moves the channel onto A; `--forget-stored-key` then
    // drops the kept key, and the channel still works under A alone.
    config.secrets = store::secrets::SecretsConfig { current: Some(KEY_A.to_owned()), old: vec![] };
    let out = gateway::cli::admin::run(gateway::cli::admin::Admin { json: true, command: rotate(true) }, &config)
        .await
        .expect("rotate");
    let out: Value = serde_json::from_str(&out).expect("JSON");
    let a_only = services(&url, &app.pool, KEY_A, &[]).await;
    assert_eq!(out["key_id"], a_only.keyring.current_id());
    assert_eq!((out["channels"].as_u64(), out["stored_keys_forgotten"].as_u64()), (Some(1), Some(1)), "{out}");
    let keys = sql_rows(&app.pool, "SELECT name FROM service_keys WHERE name LIKE 'secrets.%'").await;
    assert!(keys.is_empty(), "{keys:?}");
    send_through(&a_only, &channel(&app.pool, account.tenant, id).await, &provider).await;
}

/// The full log of a real gateway at debug level, in JSON, while it holds every kind of secret:
/// none of them appears.
#[actix_web::test]
async fn no_secret_reaches_the_logs() {
    let bin = gateway_bin();
    let app = spawn().await;
    let url = app.db.url().to_owned();
    let account = app.account("all").await;
    let provider = fake_provider().await;
    let (receiver, receiver_url) = receiver().await;
    // the channel through the admin command, as an operator adds one
    let channel = admin_json(
        &url,
        AdminCommand::Channel(gateway::cli::admin::ChannelCommand::Add {
            tenant: account.tenant.0,
            kind: "sms".into(),
            provider: "africastalking".into(),
            code: Some("at".into()),
            credentials: gateway::cli::admin::Credentials {
                base_url: Some(provider.uri()),
                username: Some(USERNAME.into()),
                api_key: Some(API_KEY.into()),
            },
            throughput: None,
        }),
    )
    .await;
    assert!(channel["id"].is_i64(), "{channel}");
    let mut conn = app.conn().await;
    let sender =
        NewSender { channel: "at".into(), kind: "sender_id".into(), value: "ACME".into(), label: None, status: None };
    messaging::channels::add_sender(&mut conn, account.tenant, sender).await.expect("sender");
    messaging::channels::set_rate(&mut conn, account.tenant, None, 100).await.expect("rate");
    accounts::wallet::credit(&mut conn, account.tenant, 100_000, None).await.expect("credit");
    drop(conn);

    let settings = [
        ("RUST_LOG", "debug"),
        ("SVC_LOG_FORMAT", "json"),
        ("SVC_WEBHOOKS_ALLOW_LOOPBACK", "1"),
        ("SVC_SANDBOX_DELIVERY_DELAY_MS", "0"),
        // a configured key; the key the database kept (which sealed the channel) is then an old one
        ("SVC_SECRETS_KEY", KEY_A),
    ];
    let gateway = Gateway::start(&bin, &url, 40, &settings).await;
    let client = providers::http_client().expect("client");
    let call = |method: reqwest::Method, route: &str, body: Option<Value>| {
        let request = client.request(method, format!("{}{route}", gateway.url)).bearer_auth(&account.key);
        match body {
            Some(body) => request.json(&body),
            None => request,
        }
    };
    // a receiver with a custom header; its secret is in the answer
    let res = call(
        reqwest::Method::POST,
        "/api/v3/webhooks",
        Some(json!({"url": receiver_url, "events": ["message.sent"], "headers": {"X-Token": HEADER_VALUE}})),
    )
    .send()
    .await
    .expect("create the receiver");
    assert_eq!(res.status().as_u16(), 201);
    let made: Value = res.json().await.expect("JSON");
    let (webhook, secret) = (made["data"]["id"].clone(), made["data"]["secret"].as_str().expect("secret").to_owned());
    let rotated: Value = call(reqwest::Method::POST, &format!("/api/v3/webhooks/{webhook}/rotate-secret"), None)
        .send()
        .await
        .expect("rotate")
        .json()
        .await
        .expect("JSON");
    let rotated = rotated["data"]["secret"].as_str().expect("new secret").to_owned();
    let res = call(reqwest::Method::POST, &format!("/api/v3/webhooks/{webhook}/test"), Some(json!({})))
        .send()
        .await
        .expect("test send");
    assert_eq!(res.status().as_u16(), 200);
    // an SMS through the channel (the provider gets the API key), which also makes events the
    // receiver gets, signed
    let res = call(
        reqwest::Method::POST,
        "/api/v3/sms/send",
        Some(json!({"recipient": "+255712345678", "message": "Habari"})),
    )
    .send()
    .await
    .expect("send");
    assert!(res.status().is_success(), "{}", res.text().await.unwrap_or_default());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let at_provider = provider.received_requests().await.unwrap_or_default();
        let at_receiver = receiver.received_requests().await.unwrap_or_default();
        if !at_provider.is_empty() && at_receiver.len() >= 2 {
            assert_signed(&receiver, &rotated).await;
            break;
        }
        assert!(Instant::now() < deadline, "the provider and the receiver were reached");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = gateway.log();
    gateway.kill().await;

    assert!(log.lines().count() > 10 && log.contains("\"level\":\"DEBUG\""), "a debug log in JSON:\n{log}");
    // the paths that hold the secrets ran and logged
    assert!(log.contains("sending an SMS through Africa's Talking"), "{log}");
    let kept = sql_rows(&app.pool, "SELECT encode(key, 'hex') AS key FROM service_keys").await;
    let kept: Vec<String> = kept.iter().map(|r| r["key"].as_str().expect("a key").to_owned()).collect();
    let keys = kept.iter().map(|k| ("key the database keeps", k.as_str()));
    for (what, key) in [("configured key", KEY_A)].into_iter().chain(keys) {
        let bytes = hex::decode(key).expect("hex").iter().map(u8::to_string).collect::<Vec<_>>().join(", ");
        for form in [key.to_owned(), bytes] {
            assert!(!log.contains(&form), "the {what} is in the log as {form}");
        }
    }
    for (what, clear) in [
        ("API key", account.key.as_str()),
        ("first signing secret", secret.as_str()),
        ("rotated signing secret", rotated.as_str()),
        ("custom header value", HEADER_VALUE),
        ("provider API key", API_KEY),
    ] {
        // as text, as hex, and as the byte list a Debug of a statement's parameters prints
        let bytes = clear.bytes().map(|b| b.to_string()).collect::<Vec<_>>().join(", ");
        for form in [clear.to_owned(), hex::encode(clear), bytes] {
            assert!(!log.contains(&form), "the {what} is in the log as {form}");
        }
    }
}
