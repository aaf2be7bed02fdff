//! The messaging admin commands (issue 3, Channels, senders and routing): `channel add`,
//! `sender add`, `rate set`, and what `demo` gives the demo account, seen through HTTP.

use api_tests::{json, spawn};
use gateway::cli::admin::{AdminCommand, ChannelCommand, Credentials, RateCommand, SenderCommand};
use kernel::ErrorKind;

use super::SEND;
use crate::admin_cli::{admin, admin_json, config};

fn channel_add(tenant: i64, provider: &str, code: Option<&str>) -> AdminCommand {
    AdminCommand::Channel(ChannelCommand::Add {
        tenant,
        kind: "sms".into(),
        provider: provider.into(),
        code: code.map(str::to_owned),
        credentials: Credentials::default(),
        throughput: None,
    })
}

fn sender_add(tenant: i64, channel: &str, kind: &str, value: &str, status: Option<&str>) -> AdminCommand {
    AdminCommand::Sender(SenderCommand::Add {
        tenant,
        channel: channel.into(),
        kind: kind.into(),
        value: value.into(),
        label: None,
        status: status.map(str::to_owned),
    })
}

#[actix_web::test]
async fn a_channel_prints_its_id_or_its_callback_urls_which_accept_the_providers_callbacks() {
    let app = spawn().await;
    let url = app.db.url();
    let account = app.account("all").await;
    let tenant = account.tenant.0;
    let plain = admin(url, channel_add(tenant, "sandbox", Some("main"))).await.expect("channel add");
    assert!(plain.trim().parse::<i64>().is_ok(), "an id: {plain:?}");

    let value = admin_json(url, channel_add(tenant, "sandbox", None)).await;
    let code = value["code"].as_str().expect("a generated code");
    assert!(code.starts_with("sandbox-sms-"), "{code}");
    let public = config(url).public_url;
    let delivery = value["callback_urls"]["delivery"].as_str().expect("delivery URL");
    let inbound = value["callback_urls"]["inbound"].as_str().expect("inbound URL");
    assert!(delivery.starts_with(&format!("{public}/hooks/sms/")) && delivery.ends_with("/delivery"), "{delivery}");
    assert!(inbound.starts_with(&format!("{public}/hooks/sms/")) && inbound.ends_with("/inbound"), "{inbound}");
    // The printed URL is the route the provider calls: an incoming message through it is stored.
    let path = &inbound[public.len()..];
    let req = actix_web::test::TestRequest::post()
        .uri(path)
        .insert_header(("Content-Type", "application/json"))
        .set_payload(r#"{"from": "+255712345678", "to": "15000", "text": "Habari"}"#);
    let res = app.send(req).await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    let uid = res.data()["uid"].as_str().expect("uid").to_owned();
    let message = app.get(&format!("/api/v3/sms/{uid}"), &account.key).await;
    assert_eq!(
        (message.data()["direction"].as_str(), message.data()["status"].as_str()),
        (Some("inbound"), Some("received"))
    );

    // Codes are unique within the account; Africa's Talking needs its credentials.
    let err = admin(url, channel_add(tenant, "sandbox", Some("main"))).await.expect_err("a repeated code");
    assert_eq!(err.kind, ErrorKind::Conflict);
    let err = admin(url, channel_add(tenant, "africastalking", None)).await.expect_err("no credentials");
    assert_eq!(err.kind, ErrorKind::Validation);
    let err = admin(url, channel_add(tenant, "carrier-pigeon", None)).await.expect_err("an unknown provider");
    assert_eq!(err.kind, ErrorKind::Validation);
}

#[actix_web::test]
async fn a_sender_is_usable_only_when_approved_and_rates_price_the_segments() {
    let app = spawn().await;
    let url = app.db.url();
    let account = app.account("all").await;
    let tenant = account.tenant.0;
    admin(url, channel_add(tenant, "sandbox", Some("main"))).await.expect("channel");
    let id = admin(url, sender_add(tenant, "main", "sender_id", "ACME", None)).await.expect("sender add");
    assert!(id.trim().parse::<i64>().is_ok(), "{id:?}");
    admin(url, sender_add(tenant, "main", "short_code", "15000", Some("pending"))).await.expect("pending sender");
    let senders = app.get("/api/v3/sms/senders", &account.key).await;
    assert_eq!(
        senders.data()["items"],
        json!([{"type": "sender_id", "value": "ACME", "label": null, "status": "approved"}])
    );
    let err = admin(url, sender_add(tenant, "nope", "sender_id", "X", None)).await.expect_err("unknown channel");
    assert_eq!(err.kind, ErrorKind::NotFound);
    let err = admin(url, sender_add(tenant, "main", "pager", "X", None)).await.expect_err("unknown type");
    assert_eq!(err.kind, ErrorKind::Validation);

    let rate = |prefix: Option<&str>, price_minor| {
        AdminCommand::Rate(RateCommand::Set { tenant, prefix: prefix.map(str::to_owned), price_minor, voice: false })
    };
    admin(url, rate(None, 7)).await.expect("default rate");
    admin(url, rate(Some("25571"), 11)).await.expect("prefix rate");
    // a voice rate per started minute is kept apart from the SMS rates
    let voice = RateCommand::Set { tenant, prefix: Some("+255 71".into()), price_minor: 9_000, voice: true };
    admin(url, AdminCommand::Rate(voice)).await.expect("voice rate");
    let rows = api_tests::sql_rows(
        &app.pool,
        &format!("SELECT prefix, price_minor FROM voice_rates WHERE tenant_id = {tenant}"),
    )
    .await;
    assert_eq!(rows, [json!({"prefix": "25571", "price_minor": 9_000})]);
    admin(
        url,
        AdminCommand::Wallet(gateway::cli::admin::WalletCommand::Credit { tenant, amount_minor: 1_000, note: None }),
    )
    .await
    .expect("credit");
    let sent =
        app.post(SEND, &account.key, json!({"recipients": ["0712345678", "0682345678"], "sender_id": "ACME"})).await;
    assert_eq!(sent.status, 201, "{:?}", sent.body);
    let prices: Vec<i64> = sent.data()["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["price_minor"].as_i64().expect("price"))
        .collect();
    assert_eq!(prices, [11, 7], "the longest prefix wins, else the default");
}

#[actix_web::test]
async fn the_demo_account_can_send_at_once() {
    let app = spawn().await;
    let url = app.db.url();
    let demo = admin_json(url, AdminCommand::Demo { key: None }).await;
    let key = demo["key"].as_str().expect("key");
    let senders = app.get("/api/v3/sms/senders", key).await;
    assert_eq!(senders.data()["items"][0]["value"], "DEMO", "{:?}", senders.body);
    let sent = app.post(SEND, key, json!({"recipient": "0712345678", "message": "Karibu", "sender_id": "DEMO"})).await;
    assert_eq!(sent.status, 201, "{:?}", sent.body);
    assert_eq!(sent.data()["messages"][0]["status"], "sent");
    // Running demo again makes no second channel and no second credit.
    let balance = app.get("/api/v3/balance", key).await.data()["balance_minor"].clone();
    admin_json(url, AdminCommand::Demo { key: Some(key.to_owned()) }).await;
    assert_eq!(app.get("/api/v3/balance", key).await.data()["balance_minor"], balance);
    assert_eq!(app.get("/api/v3/sms/senders", key).await.data()["items"].as_array().map(Vec::len), Some(1));
}

#[actix_web::test]
async fn a_disabled_channel_routes_nothing_and_its_queued_messages_wait_for_it() {
    let app = spawn().await;
    let url = app.db.url();
    let account = app.account("all").await;
    let tenant = account.tenant.0;
    admin(url, channel_add(tenant, "sandbox", Some("main"))).await.expect("channel");
    admin(
        url,
        AdminCommand::Wallet(gateway::cli::admin::WalletCommand::Credit { tenant, amount_minor: 100_000, note: None }),
    )
    .await
    .expect("credit");
    let set = |status: &str| {
        AdminCommand::Channel(ChannelCommand::SetStatus { tenant, channel: "main".into(), status: status.into() })
    };
    // Scheduled a minute ahead, then the channel is switched off before it is due.
    let at = (app.clock.now() + time::Duration::minutes(1))
        .format(&time::format_description::well_known::Rfc3339)
        .expect("time");
    let queued = app.post(SEND, &account.key, json!({"recipient": "0712345678", "schedule_time": at})).await;
    assert_eq!(queued.data()["messages"][0]["status"], "queued", "{:?}", queued.body);
    assert_eq!(admin(url, set("disabled")).await.expect("disable").trim(), "disabled");
    let refused = app.post(SEND, &account.key, json!({"recipient": "0712345679"})).await;
    assert_eq!(refused.data()["messages"][0]["status"], "failed", "no route: {:?}", refused.body);
    app.advance(time::Duration::minutes(2)).await;
    assert_eq!(app.sandbox().count(), 0, "nothing goes out on a disabled channel");
    let uid = queued.data()["messages"][0]["uid"].as_str().expect("uid").to_owned();
    assert_eq!(app.get(&format!("/api/v3/sms/{uid}"), &account.key).await.data()["status"], "queued");
    // Back on, the waiting message goes at its next look.
    admin(url, set("active")).await.expect("enable");
    app.advance(time::Duration::minutes(1)).await;
    assert_eq!(app.sandbox().count(), 1);
    assert_ne!(app.get(&format!("/api/v3/sms/{uid}"), &account.key).await.data()["status"], "queued");
    let err = admin(url, set("paused")).await.expect_err("an unknown status");
    assert_eq!(err.kind, ErrorKind::Validation);
}
