//! Chat business accounts (issue 17; contract: `GET /chat/accounts`): the listing, defaults of
//! accounts and numbers, conflicts, tenant isolation, a disabled channel, the operator's
//! `gateway admin chat-account ...` through the real binary, and a refresh from a local fake of
//! the Cloud API.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Resp, TestApp, json, spawn};
use kernel::{ErrorKind, TenantId};
use messaging::chat::{NewChatAccount, NewPhoneNumber};
use serde_json::Value;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::cloud::{ACCESS_TOKEN, VERSION, cloud_account};
use super::{APP_SECRET, BUSINESS, PHONE_ID, VERIFY_TOKEN, WABA, add_account, chat_account};
use crate::framework::assert_error;
use crate::sms::support::{assert_status, str_of, time_of};

const ACCOUNTS: &str = "/api/v3/chat/accounts";

/// `GET /chat/accounts`, 200 expected; `data`.
async fn list<S, B>(app: &TestApp<S>, key: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(ACCOUNTS, key).await;
    assert_status(&res, 200);
    assert_eq!(res.body["status"], "success", "{}", res.body);
    res.data().clone()
}

fn items(data: &Value) -> &[Value] {
    data["items"].as_array().unwrap_or_else(|| panic!("data.items is an array: {data}"))
}

/// The listed account with `waba_id`.
fn account<'a>(data: &'a Value, waba_id: &str) -> &'a Value {
    items(data).iter().find(|a| a["waba_id"] == waba_id).unwrap_or_else(|| panic!("{waba_id} is listed: {data}"))
}

/// The ids of an account's numbers, in the listed order.
fn number_ids(account: &Value) -> Vec<&str> {
    account["phone_numbers"]
        .as_array()
        .unwrap_or_else(|| panic!("phone_numbers is an array: {account}"))
        .iter()
        .map(|n| str_of(n, "id"))
        .collect()
}

/// The listed number with `id` of an account.
fn number<'a>(account: &'a Value, id: &str) -> &'a Value {
    account["phone_numbers"]
        .as_array()
        .and_then(|numbers| numbers.iter().find(|n| n["id"] == id))
        .unwrap_or_else(|| panic!("number {id} is listed: {account}"))
}

#[actix_web::test]
async fn the_listing_is_empty_without_an_account_and_shows_the_account_with_its_number() {
    let app = spawn().await;
    let bare = app.account("all").await;
    let data = list(&app, &bare.key).await;
    assert_eq!(data, json!({"default_phone_number_id": null, "items": []}));

    let duka = chat_account(&app, "all").await;
    let res = app.get(ACCOUNTS, duka.key()).await;
    assert_status(&res, 200);
    let data = res.data();
    assert_eq!(data["default_phone_number_id"], PHONE_ID, "{data}");
    assert_eq!(items(data).len(), 1, "{data}");
    let listed = &items(data)[0];
    assert_eq!(listed["waba_id"], WABA);
    assert_eq!(listed["name"], "Duka la Mama");
    assert_eq!(listed["is_active"], true);
    assert_eq!(listed["is_default"], true);
    assert_eq!(listed["templates_count"], 0);
    assert_eq!(listed["catalogues_count"], 0);
    assert_eq!(listed["last_synced_at"], Value::Null);
    assert_eq!(listed["quality_rating"], Value::Null);
    assert_eq!(listed["messaging_tier"], Value::Null);
    let numbers = listed["phone_numbers"].as_array().expect("phone_numbers");
    assert_eq!(numbers.len(), 1, "{listed}");
    let n = &numbers[0];
    assert_eq!(n["id"], PHONE_ID);
    assert_eq!(n["phone_number"], BUSINESS);
    assert_eq!(n["display"], "Duka");
    assert_eq!(n["is_default"], true);
    assert_eq!(n["quality_rating"], Value::Null);
    assert_eq!(n["messaging_tier"], Value::Null);
    // the credentials stay sealed on the channel
    let raw = res.body.to_string();
    assert!(!raw.contains(APP_SECRET) && !raw.contains(VERIFY_TOKEN) && !raw.contains(&duka.token), "{raw}");
}

#[actix_web::test]
async fn a_new_default_account_or_number_takes_over_and_duplicates_are_conflicts() {
    let app = spawn().await;
    let duka = chat_account(&app, "all").await;
    let tenant = duka.tenant();
    let mut conn = app.conn().await;

    // a second account, not the default: the first stays so
    let tawi = "200000000000002";
    let new = NewChatAccount { waba_id: tawi.into(), name: "Tawi".into(), ..Default::default() };
    messaging::chat::accounts::add(&mut conn, &app.keyring, tenant, new).await.expect("second account");
    let data = list(&app, duka.key()).await;
    assert_eq!(account(&data, WABA)["is_default"], true, "{data}");
    assert_eq!(account(&data, tawi)["is_default"], false, "{data}");
    assert_eq!(data["default_phone_number_id"], PHONE_ID);

    // a third, added as the default: it takes over, and the default number is its
    let kuu = "300000000000003";
    let new = NewChatAccount { waba_id: kuu.into(), name: "Duka Kuu".into(), is_default: true, ..Default::default() };
    messaging::chat::accounts::add(&mut conn, &app.keyring, tenant, new).await.expect("default account");
    let first = NewPhoneNumber {
        waba_id: kuu.into(),
        phone_number_id: "306540352242001".into(),
        phone_number: "+255222000301".into(),
        display: Some("Kuu".into()),
        is_default: false,
    };
    let added = messaging::chat::accounts::add_phone(&mut conn, tenant, "255", first).await.expect("number");
    assert!(added.is_default, "an account's first number is its default: {added:?}");
    let data = list(&app, duka.key()).await;
    assert_eq!(items(&data)[0]["waba_id"], kuu, "the default account comes first: {data}");
    assert_eq!(account(&data, kuu)["is_default"], true);
    assert_eq!(account(&data, WABA)["is_default"], false, "the first account is no longer the default: {data}");
    assert_eq!(account(&data, tawi)["is_default"], false);
    assert_eq!(items(&data).iter().filter(|a| a["is_default"] == true).count(), 1);
    assert_eq!(data["default_phone_number_id"], "306540352242001", "the default number follows the account");

    // a second number without is_default leaves the default where it is
    let second = NewPhoneNumber {
        waba_id: kuu.into(),
        phone_number_id: "306540352242002".into(),
        phone_number: "0222000302".into(),
        display: None,
        is_default: false,
    };
    messaging::chat::accounts::add_phone(&mut conn, tenant, "255", second).await.expect("number");
    let data = list(&app, duka.key()).await;
    assert_eq!(data["default_phone_number_id"], "306540352242001");
    assert_eq!(number(account(&data, kuu), "306540352242002")["phone_number"], "+255222000302", "stored E.164");
    assert_eq!(number(account(&data, kuu), "306540352242002")["is_default"], false);

    // a third number added as the default becomes the account's (and the workspace's) default
    let third = NewPhoneNumber {
        waba_id: kuu.into(),
        phone_number_id: "306540352242003".into(),
        phone_number: "+255222000303".into(),
        display: Some("Kuu 3".into()),
        is_default: true,
    };
    let added = messaging::chat::accounts::add_phone(&mut conn, tenant, "255", third).await.expect("number");
    assert!(added.is_default);
    let data = list(&app, duka.key()).await;
    let listed = account(&data, kuu);
    assert_eq!(number(listed, "306540352242003")["is_default"], true, "{listed}");
    assert_eq!(number(listed, "306540352242001")["is_default"], false, "{listed}");
    assert_eq!(number(listed, "306540352242002")["is_default"], false, "{listed}");
    assert_eq!(number_ids(listed)[0], "306540352242003", "the default number comes first: {listed}");
    assert_eq!(data["default_phone_number_id"], "306540352242003");
    assert_eq!(number(account(&data, WABA), PHONE_ID)["is_default"], true, "another account's default is its own");

    // the same business account again is a conflict
    let again = NewChatAccount { waba_id: WABA.into(), name: "Again".into(), ..Default::default() };
    let err = messaging::chat::accounts::add(&mut conn, &app.keyring, tenant, again).await.expect_err("a duplicate");
    assert_eq!(err.kind, ErrorKind::Conflict, "{err:?}");
    // so is a phone number id the tenant already has, even on another of its accounts
    let duplicate = NewPhoneNumber {
        waba_id: kuu.into(),
        phone_number_id: PHONE_ID.into(),
        phone_number: "+255222000399".into(),
        display: None,
        is_default: false,
    };
    let err =
        messaging::chat::accounts::add_phone(&mut conn, tenant, "255", duplicate).await.expect_err("a duplicate id");
    assert_eq!(err.kind, ErrorKind::Conflict, "{err:?}");

    // the refusals changed nothing
    let data = list(&app, duka.key()).await;
    assert_eq!(items(&data).len(), 3, "{data}");
    assert_eq!(account(&data, WABA)["name"], "Duka la Mama");
    assert_eq!(number_ids(account(&data, WABA)), [PHONE_ID]);
    assert_eq!(number_ids(account(&data, kuu)).len(), 3);
    assert_eq!(data["default_phone_number_id"], "306540352242003");
}

#[actix_web::test]
async fn another_tenants_accounts_are_not_listed() {
    let app = spawn().await;
    let duka = chat_account(&app, "all").await;
    let other = app.account("all").await;
    assert_eq!(list(&app, &other.key).await, json!({"default_phone_number_id": null, "items": []}));

    let other_waba = "400000000000004";
    add_account(&app, other.tenant, other_waba, "406540352242004", "+255222000404").await;
    let mine = list(&app, duka.key()).await;
    assert_eq!(items(&mine).len(), 1, "{mine}");
    assert_eq!(items(&mine)[0]["waba_id"], WABA);
    assert_eq!(mine["default_phone_number_id"], PHONE_ID);
    let theirs = list(&app, &other.key).await;
    assert_eq!(items(&theirs).len(), 1, "{theirs}");
    assert_eq!(items(&theirs)[0]["waba_id"], other_waba);
    assert_eq!(number_ids(&items(&theirs)[0]), ["406540352242004"]);
    assert_eq!(theirs["default_phone_number_id"], "406540352242004");
}

#[actix_web::test]
async fn a_disabled_channel_shows_the_account_inactive() {
    let app = spawn().await;
    let duka = chat_account(&app, "all").await;
    let code = format!("chat-{WABA}");
    let mut conn = app.conn().await;
    messaging::channels::set_status(&mut conn, duka.tenant(), &code, "disabled").await.expect("disable");
    let data = list(&app, duka.key()).await;
    assert_eq!(account(&data, WABA)["is_active"], false, "{data}");
    assert_eq!(account(&data, WABA)["phone_numbers"].as_array().map(Vec::len), Some(1), "still listed: {data}");

    messaging::channels::set_status(&mut conn, duka.tenant(), &code, "active").await.expect("enable");
    let data = list(&app, duka.key()).await;
    assert_eq!(account(&data, WABA)["is_active"], true, "{data}");
}

/// `gateway admin <args>`, run as an operator would: the real binary on the test's database.
async fn gateway_admin(url: &str, args: &[&str]) -> std::process::Output {
    tokio::process::Command::new(crate::process::gateway_bin())
        .arg("admin")
        .args(args)
        .env("DATABASE_URL", url)
        .env("SVC_RUN_MIGRATIONS", "false")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("the gateway binary")
}

#[track_caller]
fn succeeded(out: &std::process::Output) -> String {
    assert!(out.status.success(), "the command failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A text answer as read: `Resp` reads a body that parses as JSON (`123`) as JSON.
fn text_of(res: &Resp) -> String {
    match &res.body {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[actix_web::test]
async fn the_admin_cli_adds_an_account_whose_webhook_verifies_and_a_number_that_is_listed() {
    let app = spawn().await;
    let url = app.db.url();
    let acme = app.account("all").await;
    let tenant = acme.tenant.0.to_string();

    let out = gateway_admin(
        url,
        &["chat-account", "add", "--tenant", &tenant, "--waba-id", WABA, "--name", "Duka la Mama", "--json"],
    )
    .await;
    let printed: Value = serde_json::from_str(&succeeded(&out)).expect("--json prints JSON");
    assert!(printed["id"].is_i64(), "{printed}");
    assert_eq!(printed["waba_id"], WABA);
    let webhook_url = str_of(&printed, "webhook_url");
    let at = webhook_url.find("/hooks/chat/").unwrap_or_else(|| panic!("a /hooks/chat/ URL: {webhook_url}"));
    let hook = &webhook_url[at..];
    let token = &hook["/hooks/chat/".len()..];
    assert!(!token.is_empty() && !token.contains('/'), "{webhook_url}");
    let verify_token = str_of(&printed, "verify_token");
    assert!(!verify_token.is_empty(), "{printed}");

    // the provider's verification of the printed URL with the printed token is answered
    let verify = |given: &str| format!("{hook}?hub.mode=subscribe&hub.verify_token={given}&hub.challenge=123");
    let res = app.request("GET", &verify(verify_token), None, None).await;
    assert_status(&res, 200);
    assert_eq!(text_of(&res), "123", "{res:?}");
    assert!(res.header("content-type").is_some_and(|t| t.starts_with("text/plain")), "{res:?}");
    let res = app.request("GET", &verify("not-the-token"), None, None).await;
    assert_error(&res, 403);

    // the account is listed, numberless, until a number is added
    let data = list(&app, &acme.key).await;
    assert_eq!(account(&data, WABA)["name"], "Duka la Mama");
    assert_eq!(data["default_phone_number_id"], Value::Null, "{data}");

    let out = gateway_admin(
        url,
        &[
            "chat-account",
            "phone",
            "add",
            "--tenant",
            &tenant,
            "--waba-id",
            WABA,
            "--phone-number-id",
            PHONE_ID,
            "--phone-number",
            BUSINESS,
            "--display",
            "Duka",
        ],
    )
    .await;
    assert_eq!(succeeded(&out).trim(), PHONE_ID);
    let data = list(&app, &acme.key).await;
    let listed = account(&data, WABA);
    assert_eq!(number_ids(listed), [PHONE_ID]);
    let n = number(listed, PHONE_ID);
    assert_eq!((&n["phone_number"], &n["display"], &n["is_default"]), (&json!(BUSINESS), &json!("Duka"), &json!(true)));
    assert_eq!(data["default_phone_number_id"], PHONE_ID);

    // with --json and --default: the number object, now the default
    let out = gateway_admin(
        url,
        &[
            "chat-account",
            "phone",
            "add",
            "--tenant",
            &tenant,
            "--waba-id",
            WABA,
            "--phone-number-id",
            "106540352242999",
            "--phone-number",
            "0222000999",
            "--default",
            "--json",
        ],
    )
    .await;
    let printed: Value = serde_json::from_str(&succeeded(&out)).expect("--json prints JSON");
    assert_eq!(printed["id"], "106540352242999", "{printed}");
    assert_eq!(printed["phone_number"], "+255222000999", "{printed}");
    assert_eq!(printed["is_default"], true, "{printed}");
    let data = list(&app, &acme.key).await;
    assert_eq!(data["default_phone_number_id"], "106540352242999", "{data}");

    // a Cloud account needs its access token: refused, with a message that says so
    let out = gateway_admin(
        url,
        &[
            "chat-account",
            "add",
            "--tenant",
            &tenant,
            "--waba-id",
            "500000000000005",
            "--name",
            "Wingu",
            "--provider",
            "cloud",
        ],
    )
    .await;
    assert!(!out.status.success(), "refused: {}", String::from_utf8_lossy(&out.stdout));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("access_token") || stderr.contains("access token"), "{stderr}");
    assert_eq!(items(&list(&app, &acme.key).await).len(), 1, "a refused command adds nothing");
}

#[actix_web::test]
async fn a_refresh_reads_the_name_numbers_and_templates_from_the_cloud_api() {
    let app = spawn().await;
    let graph = MockServer::start().await;
    let bearer = format!("Bearer {ACCESS_TOKEN}");
    Mock::given(method("GET"))
        .and(path(format!("/{VERSION}/{WABA}")))
        .and(header("authorization", bearer.as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"id": WABA, "name": "Duka Kuu"})))
        .expect(1)
        .mount(&graph)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/{VERSION}/{WABA}/phone_numbers")))
        .and(header("authorization", bearer.as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": [{
            "id": PHONE_ID,
            "display_phone_number": "+255 22 200 0111",
            "verified_name": "Duka Kuu",
            "quality_rating": "GREEN",
            "messaging_limit_tier": "TIER_1K",
        }]})))
        .expect(1)
        .mount(&graph)
        .await;
    let templates = json!({"data": [
        {"id": "1001", "name": "order_ready", "language": "sw", "status": "APPROVED", "category": "UTILITY",
         "components": [{"type": "BODY", "text": "Habari {{1}}, oda yako iko tayari."}]},
        {"id": "1002", "name": "welcome", "language": "en", "status": "PENDING", "category": "MARKETING",
         "components": [{"type": "BODY", "text": "Welcome!"}]},
    ], "paging": {"cursors": {"before": "MAZDZD", "after": "MjQZD"}}});
    Mock::given(method("GET"))
        .and(path(format!("/{VERSION}/{WABA}/message_templates")))
        .and(header("authorization", bearer.as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(templates))
        .expect(1)
        .mount(&graph)
        .await;

    let duka = cloud_account(&app, "all", &graph.uri()).await;
    let before = list(&app, duka.key()).await;
    assert_eq!(account(&before, WABA)["last_synced_at"], Value::Null);

    app.messaging.refresh_chat_account(duka.tenant(), WABA).await.expect("refresh");
    let data = list(&app, duka.key()).await;
    let listed = account(&data, WABA);
    assert_eq!(listed["name"], "Duka Kuu", "{listed}");
    assert_eq!(listed["templates_count"], 2, "{listed}");
    assert_eq!(listed["catalogues_count"], 0, "{listed}");
    assert_eq!(listed["quality_rating"], "GREEN", "{listed}");
    assert_eq!(listed["messaging_tier"], "TIER_1K", "{listed}");
    assert_eq!(time_of(listed, "last_synced_at"), app.clock.now());
    let n = number(listed, PHONE_ID);
    assert_eq!(n["quality_rating"], "GREEN", "{n}");
    assert_eq!(n["messaging_tier"], "TIER_1K", "{n}");
    assert_eq!(n["phone_number"], BUSINESS, "the number itself stays as the operator gave it");
    assert_eq!(n["display"], "Duka");

    let requests = graph.received_requests().await.expect("recorded requests");
    assert_eq!(requests.len(), 3, "{requests:?}");
    for request in &requests {
        let sent = request.headers.get("authorization").and_then(|v| v.to_str().ok());
        assert_eq!(sent, Some(bearer.as_str()), "{} {}", request.method, request.url);
    }
    graph.verify().await;
}

#[actix_web::test]
async fn a_refresh_of_an_unknown_account_is_not_found() {
    let app = spawn().await;
    let duka = chat_account(&app, "all").await;
    let other: TenantId = app.tenant("Globex").await;
    let err = app.messaging.refresh_chat_account(other, WABA).await.expect_err("another tenant's account");
    assert_eq!(err.kind, ErrorKind::NotFound, "{err:?}");
    let err = app.messaging.refresh_chat_account(duka.tenant(), "999").await.expect_err("no such account");
    assert_eq!(err.kind, ErrorKind::NotFound, "{err:?}");
}
