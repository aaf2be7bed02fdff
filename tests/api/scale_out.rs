//! Several gateways on one database (issue 15): two `gateway serve` and two `gateway worker`
//! processes share the test's database, as behind a load balancer. The 120-a-minute limit of a
//! key holds across both gateways (the PostgreSQL limiter), every event reaches its receiver
//! once whichever process fanned it out and delivered it, and a campaign created through one
//! gateway, paused by its wallet, is resumed through the other and completes with one message
//! per contact, none handed to the provider twice although four processes claim jobs.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use api_tests::{FakeAfricasTalking, json, spawn, sql_rows};
use serde_json::Value;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::process::{Gateway, gateway_bin};

const CONTACTS: usize = 300;
const PRICE: i64 = 100;
const LEADS: usize = 40;

/// Polls `sql` (one row) until `done` holds, or panics after `within`.
async fn wait_row(pool: &store::Pool, sql: &str, within: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let row = sql_rows(pool, sql).await.into_iter().next().unwrap_or(Value::Null);
        if done(&row) {
            return row;
        }
        assert!(Instant::now() < deadline, "timed out waiting on {sql}: {row}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_and_two_workers_share_one_database() {
    let app = spawn().await;
    let acme = app.account("all").await;
    let rate_key = app.key(acme.tenant, acme.user).await;
    let provider = MockServer::start().await;
    let fake = FakeAfricasTalking::new(Duration::from_millis(10));
    Mock::given(method("POST")).respond_with(fake.clone()).mount(&provider).await;
    app.africastalking_route(acme.tenant, "at", &provider.uri(), "ACME", None).await;
    {
        let mut conn = app.conn().await;
        messaging::channels::set_rate(&mut conn, acme.tenant, None, PRICE).await.expect("rate");
        // two batches of 50 paid, the third cannot be
        accounts::wallet::credit(&mut conn, acme.tenant, 120 * PRICE, None).await.expect("credit");
    }
    let settings = [
        ("SVC_RATE_LIMITER", "postgres"),
        ("SVC_CAMPAIGN_BATCH_SIZE", "50"),
        ("SVC_WEBHOOKS_ALLOW_LOOPBACK", "1"),
        ("SVC_CAMPAIGN_RECHECK_SECONDS", "3600"),
    ];
    let bin = gateway_bin();
    let url = app.db.url();
    let gateways = [Gateway::start(&bin, url, 71, &settings).await, Gateway::start(&bin, url, 72, &settings).await];
    let _workers = [Gateway::worker(&bin, url, 73, &settings).await, Gateway::worker(&bin, url, 74, &settings).await];
    let client = reqwest::Client::new();
    let on = |i: usize, path: &str| format!("{}{path}", gateways[i % 2].url);

    // The limit of a key holds across both gateways.
    let mut answered: BTreeMap<u16, usize> = BTreeMap::new();
    for i in 0..130 {
        let res = client.get(on(i, "/api/v3/me")).bearer_auth(&rate_key).send().await.expect("me");
        *answered.entry(res.status().as_u16()).or_default() += 1;
    }
    assert_eq!(answered, BTreeMap::from([(200, 120), (429, 10)]), "120 a minute across the gateways");

    // Every event reaches the receiver once, whichever processes fanned it out and delivered it.
    let receiver = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200)).mount(&receiver).await;
    let res = client
        .post(on(1, "/api/v3/webhooks"))
        .bearer_auth(&acme.key)
        .json(&json!({"url": format!("{}/in", receiver.uri()), "events": ["lead.created"]}))
        .send()
        .await
        .expect("register");
    assert_eq!(res.status().as_u16(), 201);
    for i in 0..LEADS {
        let res = client
            .post(on(i, "/api/v3/leads"))
            .bearer_auth(&acme.key)
            .json(&json!({"name": format!("Lead {i}"), "phone": format!("+2557550{i:05}")}))
            .send()
            .await
            .expect("lead");
        assert_eq!(res.status().as_u16(), 201);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while receiver.received_requests().await.unwrap_or_default().len() < LEADS {
        assert!(Instant::now() < deadline, "not every lead.created was delivered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let requests = receiver.received_requests().await.unwrap_or_default();
    let events: BTreeSet<&str> =
        requests.iter().filter_map(|r| r.headers.get("x-event-id").and_then(|v| v.to_str().ok())).collect();
    assert_eq!((events.len(), requests.len()), (LEADS, LEADS), "each event once");

    // A campaign created through one gateway, paused by its wallet, resumed through the other.
    let res = client
        .post(on(0, "/api/v3/contact-groups"))
        .bearer_auth(&acme.key)
        .json(&json!({"name": "Everyone"}))
        .send()
        .await
        .expect("group");
    let group = res.json::<Value>().await.expect("JSON")["data"]["id"].clone();
    let rows: Vec<Value> = (0..CONTACTS)
        .map(|i| json!({"PHONE": format!("0712{:06}", 7000 + i), "name": format!("Person {i}")}))
        .collect();
    let res = client
        .post(on(0, &format!("/api/v3/contact-groups/{group}/contacts/batch")))
        .bearer_auth(&acme.key)
        .json(&json!({"contacts": rows}))
        .send()
        .await
        .expect("contacts");
    assert_eq!(res.status().as_u16(), 200);
    let res = client
        .post(on(0, "/api/v3/sms/campaign"))
        .bearer_auth(&acme.key)
        .json(&json!({"contact_list_id": group.to_string(), "message": "Hello {{name}}"}))
        .send()
        .await
        .expect("campaign");
    assert_eq!(res.status().as_u16(), 201);
    let campaign = res.json::<Value>().await.expect("JSON")["data"]["campaigns"][0].clone();
    let (id, uid) = (campaign["id"].as_i64().expect("id"), campaign["uid"].as_str().expect("uid").to_owned());
    let status = format!("SELECT status, sent_count FROM campaigns WHERE id = {id}");
    let paused = wait_row(&app.pool, &status, Duration::from_secs(30), |r| r["status"] == "paused").await;
    assert!(paused["sent_count"].as_i64().is_some_and(|n| n <= 120), "{paused}");
    {
        let mut conn = app.conn().await;
        accounts::wallet::credit(&mut conn, acme.tenant, CONTACTS as i64 * PRICE, None).await.expect("top up");
    }
    let res = client
        .post(on(1, &format!("/api/v3/campaign/{uid}/resume")))
        .bearer_auth(&acme.key)
        .json(&json!({}))
        .send()
        .await
        .expect("resume");
    assert_eq!(res.status().as_u16(), 200, "{}", res.text().await.unwrap_or_default());
    wait_row(&app.pool, &status, Duration::from_secs(60), |r| r["status"] == "completed").await;

    let per_contact = sql_rows(
        &app.pool,
        &format!("SELECT contact_id, count(*) AS n FROM messages WHERE campaign_id = {id} GROUP BY contact_id"),
    )
    .await;
    assert_eq!(per_contact.len(), CONTACTS, "a message per contact");
    assert!(per_contact.iter().all(|r| r["n"] == 1), "one message per contact");
    let numbers = fake.numbers();
    let distinct: BTreeSet<&String> = numbers.iter().collect();
    assert_eq!((distinct.len(), numbers.len()), (CONTACTS, CONTACTS), "no number handed to the provider twice");
}

/// One `auth_cache` gauge of a gateway's `/metrics`.
async fn auth_cache(client: &reqwest::Client, gateway: &Gateway, kind: &str) -> i64 {
    let text =
        client.get(format!("{}/metrics", gateway.url)).send().await.expect("metrics").text().await.expect("text");
    let line = format!("auth_cache{{kind=\"{kind}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&line))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {line} in {text}"))
}

/// Waits until `gateway` holds no key: a change to their tenant drops them when PostgreSQL
/// passes its notification on, by itself and before any request. That is the moment the
/// contract's "next request" starts from (docs/operations.md, "Authentication cache"); on a
/// busy machine the listening backend may take some milliseconds to pass it on.
async fn dropped(client: &reqwest::Client, gateway: &Gateway) {
    let wait = Instant::now() + Duration::from_secs(5);
    while auth_cache(client, gateway, "keys").await != 0 {
        assert!(Instant::now() < wait, "the change never reached {}", gateway.url);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Each gateway keeps the keys it has seen (docs/operations.md, "Authentication cache"), and
/// a change made anywhere (the admin command, an operator's SQL) reaches every gateway before
/// the next request: a revoked key, a user's lost permission and a suspended account are
/// refused at once through the other gateway too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_changed_anywhere_is_refused_on_the_next_request_through_any_gateway() {
    let app = spawn().await;
    let acme = app.account("all").await;
    let second = app.key(acme.tenant, acme.user).await;
    let bin = gateway_bin();
    let url = app.db.url();
    let gateways = [Gateway::start(&bin, url, 75, &[]).await, Gateway::start(&bin, url, 76, &[]).await];
    let client = reqwest::Client::new();
    let status = async |i: usize, path: &str, key: &str| {
        let res = client.get(format!("{}{path}", gateways[i].url)).bearer_auth(key).send().await.expect("request");
        res.status().as_u16()
    };
    // both gateways know both keys, and the second request of a key is served from the cache
    let wait = Instant::now() + Duration::from_secs(10);
    while auth_cache(&client, &gateways[0], "listening").await == 0
        || auth_cache(&client, &gateways[1], "listening").await == 0
    {
        assert!(Instant::now() < wait, "the gateways never listened");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (i, gateway) in gateways.iter().enumerate() {
        for key in [&acme.key, &second] {
            assert_eq!(status(i, "/api/v3/me", key).await, 200);
            assert_eq!(status(i, "/api/v3/contacts", key).await, 200);
        }
        assert_eq!(auth_cache(&client, gateway, "keys").await, 2);
        assert!(auth_cache(&client, gateway, "hits").await >= 2, "served from the cache");
    }

    // revoked through the admin command: refused through both at once
    let key_id = sql_rows(&app.pool, &format!("SELECT id FROM api_keys WHERE key_hash = sha256('{second}'::bytea)"))
        .await[0]["id"]
        .as_i64()
        .expect("id");
    let cli = crate::admin_cli::admin(
        url,
        gateway::cli::admin::AdminCommand::Key(gateway::cli::admin::KeyCommand::Revoke { key: key_id }),
    );
    cli.await.expect("revoke");
    dropped(&client, &gateways[1]).await;
    assert_eq!(status(1, "/api/v3/me", &second).await, 401);
    dropped(&client, &gateways[0]).await;
    assert_eq!(status(0, "/api/v3/me", &second).await, 401);
    assert_eq!(status(0, "/api/v3/me", &acme.key).await, 200, "the tenant's other key is looked up again");

    // the issuer loses contacts.view by SQL: 403 on the next request through the other gateway
    assert_eq!(status(1, "/api/v3/contacts", &acme.key).await, 200);
    api_tests::sql_exec(
        &app.pool,
        &format!("UPDATE users SET all_permissions = false, permissions = '{{}}' WHERE id = {}", acme.user.0),
    )
    .await;
    dropped(&client, &gateways[1]).await;
    assert_eq!(status(1, "/api/v3/contacts", &acme.key).await, 403);

    // a suspended account: 403 everywhere, and back when it is active again
    api_tests::sql_exec(&app.pool, &format!("UPDATE tenants SET status = 'suspended' WHERE id = {}", acme.tenant.0))
        .await;
    for gateway in &gateways {
        dropped(&client, gateway).await;
    }
    assert_eq!(status(0, "/api/v3/me", &acme.key).await, 403);
    assert_eq!(status(1, "/api/v3/me", &acme.key).await, 403);
    api_tests::sql_exec(&app.pool, &format!("UPDATE tenants SET status = 'active' WHERE id = {}", acme.tenant.0)).await;
    // the refusal was cached too: the next request waits for the change to arrive, as above
    dropped(&client, &gateways[1]).await;
    assert_eq!(status(1, "/api/v3/me", &acme.key).await, 200);
}
