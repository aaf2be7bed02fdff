//! Voice and calls (issue 22): voice OTPs, voice messages and calls through HTTP against
//! PostgreSQL, played out by the sandbox (by the callee's last four digits) or driven by
//! Africa's Talking-shaped callbacks from a fake provider on 127.0.0.1; billing per started
//! minute, events, scheduling, a call in doubt never placed twice, tenant isolation.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Account, TestApp};
use serde_json::{Value, json};
use time::Duration;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::sms::support::{assert_field_error, assert_status, balance, e164, events, hook, tz};

mod crash;

/// 5,000.00 TZS, in minor units.
const START: i64 = 500_000;
/// The default price of a started minute (`SVC_VOICE_PRICE_MINOR`).
const MINUTE: i64 = 5_000;

/// An account with every permission, 5,000.00 TZS, and a sandbox voice channel.
async fn voice_account<S, B>(app: &TestApp<S>) -> Account
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let account = app.account("all").await;
    let mut conn = app.conn().await;
    accounts::wallet::credit(&mut conn, account.tenant, START, None).await.expect("credit");
    app.voice_route(account.tenant, "voice", None, "+255222110000").await;
    account
}

async fn call_of<S, B>(app: &TestApp<S>, key: &str, uid: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("/api/v3/calls/{uid}"), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// The names of the events of one call, in the order written.
async fn call_events(pool: &store::Pool, account: &Account, call: &Value) -> Vec<(String, Value)> {
    let id = call["id"].as_i64().expect("id");
    events(pool, account.tenant).await.into_iter().filter(|(_, p)| p["call_id"].as_i64() == Some(id)).collect()
}

async fn names(pool: &store::Pool, account: &Account, call: &Value) -> Vec<String> {
    call_events(pool, account, call).await.into_iter().map(|(name, _)| name).collect()
}

#[actix_web::test]
async fn a_voice_otp_reads_its_code_and_bills_the_started_minute() {
    let app = api_tests::spawn().await;
    let acme = voice_account(&app).await;
    let res = app.post("/api/v3/voice/otp", &acme.key, json!({"recipient": tz("5678"), "length": 4})).await;
    assert_status(&res, 201);
    let call = res.data().clone();
    let code = call["code"].as_str().expect("code").to_owned();
    assert!(code.len() == 4 && code.bytes().all(|b| b.is_ascii_digit()), "{code}");
    assert_eq!((call["status"].as_str(), call["kind"].as_str()), (Some("queued"), Some("otp")));
    assert_eq!(
        (call["recipient"].as_str(), call["sender"].as_str()),
        (Some(e164("5678").as_str()), Some("+255222110000"))
    );
    // one minute is held while the call is live
    assert_eq!((call["price_minor"].as_i64(), balance(&app, &acme.key).await), (Some(MINUTE), START - MINUTE));

    app.run_jobs().await;
    let placed = call_of(&app, &acme.key, call["uid"].as_str().expect("uid")).await;
    assert_eq!(placed["status"], "initiated");
    assert!(placed["gateway_call_id"].as_str().is_some_and(|id| id.starts_with("SBVId_")), "{placed}");
    assert_eq!(app.voice_sandbox().count_to(&e164("5678")), 1);

    app.advance(Duration::seconds(2)).await;
    let done = call_of(&app, &acme.key, call["uid"].as_str().expect("uid")).await;
    assert_eq!((done["status"].as_str(), done["duration_seconds"].as_i64()), (Some("completed"), Some(42)));
    assert_eq!((done["billed_minutes"].as_i64(), done["price_minor"].as_i64()), (Some(1), Some(MINUTE)));
    assert!(done.get("code").is_none() && done.get("plan").is_none(), "the code is not read back: {done}");
    assert_eq!(names(&app.pool, &acme, &call).await, ["voice.otp.answered", "voice.otp.completed"]);
    assert_eq!(balance(&app, &acme.key).await, START - MINUTE);
    // the stored plan forgot the code once the call ended
    let plan = api_tests::sql_rows(&app.pool, &format!("SELECT plan FROM calls WHERE id = {}", call["id"])).await;
    assert_eq!(plan[0]["plan"]["code"], "****", "{plan:?}");
}

#[actix_web::test]
async fn the_sandbox_plays_each_ending_and_unanswered_calls_give_their_minute_back() {
    let app = api_tests::spawn().await;
    let acme = voice_account(&app).await;
    let numbers = [tz("0001"), tz("0002"), tz("0003"), tz("4444")].join(",");
    let body = json!({"recipient": numbers, "message": "Your order DK-1042 is ready for pickup at the Kariakoo shop.", "language": "en"});
    let res = app.post("/api/v3/voice/messages", &acme.key, body).await;
    assert_status(&res, 201);
    let calls = res.data()["calls"].as_array().expect("calls").clone();
    assert_eq!(calls.len(), 4);
    assert_eq!(balance(&app, &acme.key).await, START - 4 * MINUTE, "a minute held per call");
    app.run_jobs().await;
    app.advance(Duration::seconds(2)).await;

    let mut ended = vec![];
    for call in &calls {
        let read = call_of(&app, &acme.key, call["uid"].as_str().expect("uid")).await;
        let last = call_events(&app.pool, &acme, call).await.pop().expect("an end event");
        ended.push((read["status"].clone(), read["billed_minutes"].clone(), last.0, last.1["reason"].clone()));
    }
    let hung_up = json!(messaging::voice::callbacks::HUNG_UP_EARLY);
    assert_eq!(
        ended,
        [
            (json!("busy"), json!(0), "voice.message.failed".to_owned(), json!("busy")),
            (json!("no_answer"), json!(0), "voice.message.failed".to_owned(), json!("no_answer")),
            (json!("failed"), json!(1), "voice.message.failed".to_owned(), hung_up),
            (json!("completed"), json!(1), "voice.message.completed".to_owned(), Value::Null),
        ]
    );
    // the two answered calls are paid for; the two that never connected are not
    assert_eq!(balance(&app, &acme.key).await, START - 2 * MINUTE);
}

#[actix_web::test]
async fn an_ivr_call_takes_a_voicemail_and_its_feedback_from_the_keys_pressed() {
    let app = api_tests::spawn().await;
    let acme = voice_account(&app).await;
    let ivr = json!({
        "prompt": "Karibu Duka. Press 1 to leave a message, 2 for our hours.",
        "options": {
            "1": {"voicemail": {"prompt": "Leave your message after the beep.", "max_seconds": 60}},
            "2": {"say": "We are open from 8 to 5."}
        }
    });
    // the sandbox's ...0004 presses 1 at every prompt
    let body = json!({"recipient": tz("0004"), "ivr": ivr, "feedback": {}, "metadata": {"ticket": "T-77"}});
    let res = app.post("/api/v3/calls", &acme.key, body).await;
    assert_status(&res, 201);
    let call = res.data().clone();
    app.run_jobs().await;
    app.advance(Duration::seconds(2)).await;
    let done = call_of(&app, &acme.key, call["uid"].as_str().expect("uid")).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["digits"], "1,1", "the menu's key, then the survey's");
    assert_eq!(done["feedback_score"], 1);
    assert_eq!(done["metadata"], json!({"ticket": "T-77"}));
    assert!(done["recording_url"].as_str().is_some_and(|u| u.ends_with(".mp3")), "{done}");
    assert_eq!(names(&app.pool, &acme, &call).await, ["call.recording_ready", "call.feedback_ready", "call.completed"]);
    let (_, payload) = call_events(&app.pool, &acme, &call).await.remove(1);
    assert_eq!((payload["event"].as_str(), payload["feedback_score"].as_i64()), (Some("call.feedback_ready"), Some(1)));
}

/// Africa's Talking's answer to a call request.
fn queued(session: &str) -> ResponseTemplate {
    ResponseTemplate::new(201).set_body_json(json!({
        "entries": [{"phoneNumber": "+255712340042", "status": "Queued", "sessionId": session}],
        "errorMessage": "None"
    }))
}

#[actix_web::test]
async fn a_connected_call_follows_the_providers_callbacks_and_bills_each_started_minute_at_the_rate() {
    let app = api_tests::spawn().await;
    let acme = app.account("all").await;
    let mut conn = app.conn().await;
    accounts::wallet::credit(&mut conn, acme.tenant, START, None).await.expect("credit");
    messaging::voice::requests::set_rate(&mut conn, acme.tenant, Some("2557"), 7_000).await.expect("rate");
    let provider = MockServer::start().await;
    Mock::given(method("POST")).and(path("/call")).respond_with(queued("ATVId_42")).expect(1).mount(&provider).await;
    let channel = app.voice_route(acme.tenant, "at-voice", Some(&provider.uri()), "+255222110000").await;

    let connect = json!({"numbers": ["0754000111"], "greeting": "Connecting you to an agent.", "record": true});
    let body = json!({"recipient": tz("0042"), "connect": connect, "feedback": {"prompt": "Rate us from 1 to 5."}});
    let res = app.post("/api/v3/calls", &acme.key, body).await;
    assert_status(&res, 201);
    let call = res.data().clone();
    assert_eq!(call["rate_minor"], 7_000);
    app.run_jobs().await;
    let request = &provider.received_requests().await.expect("requests")[0];
    let form: std::collections::HashMap<String, String> = serde_urlencoded::from_bytes(&request.body).expect("form");
    assert_eq!(form["to"], e164("0042"));
    assert_eq!(form["from"], "+255222110000");
    assert_eq!(form["clientRequestId"], call["uid"].as_str().expect("uid"));
    assert_eq!(request.headers.get("apiKey").and_then(|v| v.to_str().ok()), Some("atsk_at-voice"));

    let hook_path = format!("/hooks/voice/{}", channel.callback_token);
    let form = "application/x-www-form-urlencoded";
    let answered = hook(&app, &hook_path, form, "isActive=1&sessionId=ATVId_42&direction=Outbound").await;
    assert_eq!(answered.status, 200);
    let xml = answered.body.as_str().unwrap_or_default();
    assert!(xml.contains("Connecting you to an agent.") && xml.contains(r#"phoneNumbers="+255754000111""#), "{xml}");
    assert!(xml.contains(r#"record="true""#) && xml.contains("<GetDigits"), "{xml}");
    let rated = hook(&app, &hook_path, form, "isActive=1&sessionId=ATVId_42&dtmfDigits=5").await;
    assert!(
        rated.body.as_str().unwrap_or_default().contains("Thank you."),
        "{}",
        rated.body.as_str().unwrap_or_default()
    );
    let end = "isActive=0&sessionId=ATVId_42&status=Success&hangupCause=NORMAL_CLEARING&durationInSeconds=125\
               &currencyCode=TZS&amount=210.0&recordingUrl=https%3A%2F%2Frecordings.example%2F42.mp3";
    assert_eq!(hook(&app, &hook_path, form, end).await.status, 200);

    let done = call_of(&app, &acme.key, call["uid"].as_str().expect("uid")).await;
    assert_eq!((done["status"].as_str(), done["duration_seconds"].as_i64()), (Some("completed"), Some(125)));
    assert_eq!((done["billed_minutes"].as_i64(), done["price_minor"].as_i64()), (Some(3), Some(21_000)));
    assert_eq!((done["feedback_score"].as_i64(), done["digits"].as_str()), (Some(5), Some("5")));
    assert_eq!(done["recording_url"], "https://recordings.example/42.mp3");
    // the end's two events are written together (read back in name order)
    assert_eq!(names(&app.pool, &acme, &call).await, ["call.feedback_ready", "call.completed", "call.recording_ready"]);
    assert_eq!(balance(&app, &acme.key).await, START - 21_000, "the held minute and two more");
    // a late repeat of the end changes nothing, and an unknown call is answered with no actions
    assert_eq!(hook(&app, &hook_path, form, end).await.status, 200);
    assert_eq!(balance(&app, &acme.key).await, START - 21_000);
    let unknown = hook(&app, &hook_path, form, "isActive=1&sessionId=ATVId_nobody").await;
    assert_eq!(unknown.status, 200);
    assert!(
        !unknown.body.as_str().unwrap_or_default().contains("<Say"),
        "{}",
        unknown.body.as_str().unwrap_or_default()
    );
    assert_eq!(hook(&app, "/hooks/voice/not-a-token", form, end).await.status, 404);
    crate::framework::assert_error(&hook(&app, &hook_path, form, "sessionId=ATVId_42").await, 422);
}

#[actix_web::test]
async fn a_refused_call_fails_with_the_providers_reason_and_costs_nothing() {
    let app = api_tests::spawn().await;
    let acme = app.account("all").await;
    let mut conn = app.conn().await;
    accounts::wallet::credit(&mut conn, acme.tenant, START, None).await.expect("credit");
    let provider = MockServer::start().await;
    let refused =
        json!({"entries": [{"phoneNumber": "+255712340042", "status": "InvalidPhoneNumber"}], "errorMessage": "None"});
    Mock::given(method("POST"))
        .and(path("/call"))
        .respond_with(ResponseTemplate::new(201).set_body_json(refused))
        .mount(&provider)
        .await;
    app.voice_route(acme.tenant, "at-voice", Some(&provider.uri()), "+255222110000").await;
    let res = app.post("/api/v3/voice/otp", &acme.key, json!({"recipient": tz("0042"), "code": "123456"})).await;
    assert_status(&res, 201);
    assert_eq!(res.data()["code"], "123456");
    app.run_jobs().await;
    let done = call_of(&app, &acme.key, res.data()["uid"].as_str().expect("uid")).await;
    assert_eq!(done["status"], "failed");
    assert!(done["error_message"].as_str().is_some_and(|e| e.starts_with("Refused by the provider")), "{done}");
    assert_eq!(balance(&app, &acme.key).await, START);
    let (name, payload) = call_events(&app.pool, &acme, &done).await.pop().expect("event");
    assert_eq!(name, "voice.otp.failed");
    assert_eq!(payload["reason"], done["error_message"]);
}

#[actix_web::test]
async fn a_call_claimed_by_a_placing_that_died_is_failed_not_placed_again() {
    let app = api_tests::spawn().await;
    let acme = voice_account(&app).await;
    let res = app.post("/api/v3/voice/messages", &acme.key, json!({"recipient": tz("7001"), "message": "Hello"})).await;
    let call = res.data()["calls"][0].clone();
    // as a placing that claimed the call and died before the provider answered leaves it
    api_tests::sql_exec(&app.pool, &format!("UPDATE calls SET status = 'initiated' WHERE id = {}", call["id"])).await;
    app.run_jobs().await;
    let done = call_of(&app, &acme.key, call["uid"].as_str().expect("uid")).await;
    assert_eq!(done["status"], "failed");
    assert_eq!(done["error_message"], messaging::voice::place::OUTCOME_UNKNOWN);
    assert_eq!(app.voice_sandbox().count_to(&e164("7001")), 0, "never asked for twice");
    assert_eq!(balance(&app, &acme.key).await, START);
}

#[actix_web::test]
async fn a_scheduled_voice_message_waits_for_its_time() {
    let app = api_tests::spawn().await;
    let acme = voice_account(&app).await;
    let at =
        (app.clock.now() + Duration::hours(1)).format(&time::format_description::well_known::Rfc3339).expect("time");
    let body = json!({"recipients": [tz("7002")], "audio_url": "https://cdn.example/promo.mp3", "schedule_time": at});
    let res = app.post("/api/v3/voice/messages", &acme.key, body).await;
    assert_status(&res, 201);
    let call = res.data()["calls"][0].clone();
    assert!(call["scheduled_at"].is_string(), "{call}");
    app.run_jobs().await;
    assert_eq!(app.voice_sandbox().count_to(&e164("7002")), 0);
    app.advance(Duration::minutes(61)).await;
    app.advance(Duration::seconds(2)).await;
    assert_eq!(app.voice_sandbox().count_to(&e164("7002")), 1);
    assert_eq!(call_of(&app, &acme.key, call["uid"].as_str().expect("uid")).await["status"], "completed");
}

#[actix_web::test]
async fn bad_bodies_are_422_naming_the_member_and_write_nothing() {
    let app = api_tests::spawn().await;
    let acme = voice_account(&app).await;
    let deep = json!({"prompt": "a", "options": {"1": {"menu": {"prompt": "b", "options": {"1": {"menu":
        {"prompt": "c", "options": {"1": {"menu": {"prompt": "d", "options": {"1": {"say": "e"}}}}}}}}}}}});
    let cases = [
        ("/api/v3/voice/otp", json!({"recipient": tz("1234"), "code": "12a4"}), "code"),
        ("/api/v3/voice/otp", json!({"recipient": tz("1234"), "length": 9}), "length"),
        ("/api/v3/voice/otp", json!({"recipient": tz("1234"), "repeat": 4}), "repeat"),
        ("/api/v3/voice/otp", json!({"recipient": "12", "code": "1234"}), "recipient"),
        ("/api/v3/voice/otp", json!({"recipient": tz("1234"), "language": "fr"}), "language"),
        ("/api/v3/voice/messages", json!({"recipient": tz("1234")}), "message"),
        (
            "/api/v3/voice/messages",
            json!({"recipient": tz("1234"), "message": "a", "audio_url": "https://x/a.mp3"}),
            "audio_url",
        ),
        ("/api/v3/voice/messages", json!({"recipient": tz("1234"), "audio_url": "ftp://x/a.mp3"}), "audio_url"),
        (
            "/api/v3/voice/messages",
            json!({"recipient": tz("1234"), "message": "a", "schedule_time": "soon"}),
            "schedule_time",
        ),
        ("/api/v3/calls", json!({"recipient": tz("1234")}), "connect"),
        ("/api/v3/calls", json!({"recipient": tz("1234"), "connect": {"numbers": []}}), "connect.numbers"),
        (
            "/api/v3/calls",
            json!({"recipient": tz("1234"), "ivr": {"prompt": "a", "options": {"x": {"say": "b"}}}}),
            "ivr.options.x",
        ),
        (
            "/api/v3/calls",
            json!({"recipient": tz("1234"), "ivr": {"prompt": "a", "options": {"1": {"say": "b", "play": "https://x/a.mp3"}}}}),
            "ivr.options.1",
        ),
        (
            "/api/v3/calls",
            json!({"recipient": tz("1234"), "ivr": deep}),
            "ivr.options.1.menu.options.1.menu.options.1.menu",
        ),
    ];
    for (route, body, field) in cases {
        let res = app.post(route, &acme.key, body.clone()).await;
        assert_field_error(&res, field);
    }
    // unknown members are refused too, and no voice channel is a plain 422
    crate::framework::assert_error(
        &app.post("/api/v3/calls", &acme.key, json!({"recipient": tz("1"), "dial": 1})).await,
        422,
    );
    let bare = app.account("all").await;
    let res = app.post("/api/v3/voice/otp", &bare.key, json!({"recipient": tz("1234")})).await;
    crate::framework::assert_error(&res, 422);
    assert!(res.body["message"].as_str().is_some_and(|m| m.contains("voice channel")), "{}", res.body);
    let res = app.post("/api/v3/voice/otp", &acme.key, json!({"recipient": tz("1234"), "sender_id": "+255999"})).await;
    assert_field_error(&res, "sender_id");
    let list = app.get("/api/v3/calls", &acme.key).await;
    assert_eq!(list.data()["pagination"]["total"], 0, "nothing written: {}", list.body);
    assert_eq!(balance(&app, &acme.key).await, START);
}

#[actix_web::test]
async fn a_prepaid_wallet_that_cannot_hold_every_first_minute_is_402_and_nothing_is_called() {
    let app = api_tests::spawn().await;
    let acme = app.account("all").await;
    let mut conn = app.conn().await;
    accounts::wallet::credit(&mut conn, acme.tenant, MINUTE, None).await.expect("credit");
    app.voice_route(acme.tenant, "voice", None, "+255222110000").await;
    let body = json!({"recipients": [tz("7003"), tz("7004")], "message": "Hello"});
    let res = app.post("/api/v3/voice/messages", &acme.key, body).await;
    crate::framework::assert_error(&res, 402);
    app.run_jobs().await;
    assert_eq!(app.voice_sandbox().count(), 0);
    assert_eq!(app.get("/api/v3/calls", &acme.key).await.data()["pagination"]["total"], 0);
    assert_eq!(balance(&app, &acme.key).await, MINUTE);
}

#[actix_web::test]
async fn calls_are_listed_filtered_and_another_tenants_are_not_found() {
    let app = api_tests::spawn().await;
    let acme = voice_account(&app).await;
    let globex = voice_account(&app).await;
    let otp = app.post("/api/v3/voice/otp", &acme.key, json!({"recipient": tz("7005")})).await.data().clone();
    app.post("/api/v3/voice/messages", &acme.key, json!({"recipient": tz("7006"), "message": "Hi"})).await;
    let list = app.get("/api/v3/calls?kind=otp", &acme.key).await;
    assert_status(&list, 200);
    let items = list.data()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["uid"], otp["uid"]);
    let by_number = app.get(&format!("/api/v3/calls?recipient={}", tz("7006")), &acme.key).await;
    assert_eq!(by_number.data()["items"][0]["kind"], "message");
    assert_field_error(&app.get("/api/v3/calls?status=ringing", &acme.key).await, "status");
    // another tenant's call, by id or uid, is not found; its list is its own
    for id in [otp["id"].to_string(), otp["uid"].as_str().expect("uid").to_owned()] {
        crate::framework::assert_error(&app.get(&format!("/api/v3/calls/{id}"), &globex.key).await, 404);
    }
    assert_eq!(app.get("/api/v3/calls", &globex.key).await.data()["pagination"]["total"], 0);
    crate::framework::assert_error(&app.get("/api/v3/calls/msg_abc", &acme.key).await, 404);
}

#[actix_web::test]
async fn placing_needs_communications_send_and_reading_needs_messages_view() {
    let app = api_tests::spawn().await;
    let acme = voice_account(&app).await;
    let reader = app.user(acme.tenant, "communications.messages.view").await;
    let reader = app.key(acme.tenant, reader).await;
    let res = app.post("/api/v3/voice/otp", &reader, json!({"recipient": tz("7007")})).await;
    crate::framework::assert_error(&res, 403);
    assert_status(&app.get("/api/v3/calls", &reader).await, 200);
    let sender = app.user(acme.tenant, "communications.send").await;
    let sender = app.key(acme.tenant, sender).await;
    assert_status(&app.post("/api/v3/voice/otp", &sender, json!({"recipient": tz("7007")})).await, 201);
    crate::framework::assert_error(&app.get("/api/v3/calls", &sender).await, 403);
    let legacy = app.legacy_key(acme.tenant).await;
    let res = app
        .post("/api/v3/calls", &legacy, json!({"recipient": tz("7007"), "connect": {"numbers": [tz("7008")]}}))
        .await;
    assert!(res.status == 401 || res.status == 403, "{}: {}", res.status, res.body);
}

/// A contact group of the account holding these national numbers.
async fn group_of<S, B>(app: &TestApp<S>, key: &str, numbers: &[String]) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post("/api/v3/contact-groups", key, json!({"name": "Customers"})).await;
    assert_status(&res, 201);
    let group = res.data().clone();
    let rows: Vec<Value> =
        numbers.iter().enumerate().map(|(i, n)| json!({"PHONE": n, "name": format!("Person {i}")})).collect();
    let res = app
        .post(&format!("/api/v3/contact-groups/{}/contacts/batch", group["id"]), key, json!({"contacts": rows}))
        .await;
    assert_status(&res, 200);
    group
}

async fn campaign_of<S, B>(app: &TestApp<S>, key: &str, campaign: &Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("/api/v3/call-campaigns/{}", campaign["uid"].as_str().expect("uid")), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// The names of the account's call campaign events, in the order written.
async fn campaign_events(pool: &store::Pool, account: &Account) -> Vec<String> {
    events(pool, account.tenant)
        .await
        .into_iter()
        .map(|(name, _)| name)
        .filter(|n| n.starts_with("call_campaign."))
        .collect()
}

/// Moves the clock a minute at a time until the campaign ends (or `minutes` pass).
async fn run_until_ended<S, B>(app: &TestApp<S>, key: &str, campaign: &Value, minutes: usize) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.run_jobs().await;
    for _ in 0..minutes {
        let now = campaign_of(app, key, campaign).await;
        if ["completed", "cancelled", "failed"].contains(&now["status"].as_str().unwrap_or_default()) {
            return now;
        }
        app.advance(Duration::minutes(1)).await;
    }
    campaign_of(app, key, campaign).await
}

pub(crate) const ALL_DAY: &str = r#"{"start": "00:00", "end": "24:00", "utc_offset": "+00:00"}"#;

#[actix_web::test]
async fn a_call_campaign_calls_each_number_once_at_its_rate_and_tries_the_unanswered_again() {
    let app = api_tests::spawn().await;
    let acme = voice_account(&app).await;
    // 4444 answers (listed twice: one target), 0002 never answers, 0001 is busy
    let group = group_of(&app, &acme.key, &[tz("4444"), tz("0002"), tz("0001"), tz("4444")]).await;
    let body = json!({
        "contact_group_id": group["id"].to_string(), "message": "Our Kariakoo shop opens on Saturday.",
        "calls_per_minute": 2, "max_attempts": 2, "retry_after_minutes": 5,
        "calling_hours": serde_json::from_str::<Value>(ALL_DAY).expect("hours"),
    });
    let res = app.post("/api/v3/call-campaigns", &acme.key, body).await;
    assert_status(&res, 201);
    let campaign = res.data().clone();
    assert_eq!((campaign["status"].as_str(), campaign["total_targets"].as_i64()), (Some("scheduled"), Some(3)));
    assert_eq!((campaign["name"].as_str(), campaign["kind"].as_str()), (Some("Customers"), Some("message")));

    // the first minute starts two calls, the rate
    app.run_jobs().await;
    assert_eq!(app.voice_sandbox().count(), 2);
    assert_eq!(campaign_of(&app, &acme.key, &campaign).await["status"], "running");
    let done = run_until_ended(&app, &acme.key, &campaign, 30).await;
    assert_eq!(
        (done["status"].as_str(), done["completed_targets"].as_i64(), done["failed_targets"].as_i64()),
        (Some("completed"), Some(1), Some(2)),
        "{done}"
    );
    // the answered number once; the busy and the silent one twice each (max_attempts)
    let sandbox = app.voice_sandbox();
    assert_eq!(
        [sandbox.count_to(&e164("4444")), sandbox.count_to(&e164("0002")), sandbox.count_to(&e164("0001"))],
        [1, 2, 2]
    );
    let names = campaign_events(&app.pool, &acme).await;
    assert_eq!(names.first().map(String::as_str), Some("call_campaign.started"));
    let count = |name: &str| names.iter().filter(|n| *n == name).count();
    assert_eq!((count("call_campaign.target_completed"), count("call_campaign.completed")), (3, 1), "{names:?}");
    // five calls: the one answered minute paid, the unanswered calls' held minutes given back
    let calls = app.get("/api/v3/calls?per_page=50", &acme.key).await;
    assert_eq!(calls.data()["pagination"]["total"], 5);
    assert!(calls.data()["items"].as_array().expect("items").iter().all(|c| c["call_campaign_id"] == campaign["id"]));
    assert_eq!(balance(&app, &acme.key).await, START - MINUTE);
}

#[actix_web::test]
async fn a_call_campaign_waits_for_its_calling_hours_and_for_the_wallet() {
    let app = api_tests::spawn().await;
    let acme = app.account("all").await;
    app.voice_route(acme.tenant, "voice", None, "+255222110000").await;
    let group = group_of(&app, &acme.key, &[tz("4445")]).await;
    // the default hours (08:00 to 20:00) at an offset where it is now six in the morning
    let shift = (6 - i32::from(app.clock.now().hour())).rem_euclid(24);
    let shift = if shift > 14 { shift - 24 } else { shift };
    let sign = if shift < 0 { '-' } else { '+' };
    let hours = json!({"utc_offset": format!("{sign}{:02}:00", shift.abs())});
    let body = json!({"contact_group_id": group["uid"], "message": "Hello", "calling_hours": hours});
    let res = app.post("/api/v3/call-campaigns", &acme.key, body).await;
    assert_status(&res, 201);
    let campaign = res.data().clone();
    app.run_jobs().await;
    assert_eq!(app.voice_sandbox().count(), 0, "outside the calling hours");
    app.advance(Duration::hours(2)).await;
    // inside them now, but the empty prepaid wallet cannot hold a minute: paused
    let paused = campaign_of(&app, &acme.key, &campaign).await;
    assert_eq!(
        (paused["status"].as_str(), paused["status_reason"].as_str()),
        (Some("paused"), Some("insufficient_balance"))
    );
    assert_eq!(app.voice_sandbox().count(), 0);
    let mut conn = app.conn().await;
    accounts::wallet::credit(&mut conn, acme.tenant, START, None).await.expect("credit");
    app.advance(Duration::minutes(2)).await;
    assert_eq!(app.voice_sandbox().count_to(&e164("4445")), 1, "resumed by itself once the wallet could pay");
    let done = run_until_ended(&app, &acme.key, &campaign, 5).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(
        campaign_events(&app.pool, &acme).await,
        [
            "call_campaign.started",
            "call_campaign.paused",
            "call_campaign.resumed",
            // the last target and the campaign end together (read back in name order)
            "call_campaign.completed",
            "call_campaign.target_completed",
        ]
    );
}

#[actix_web::test]
async fn a_call_campaign_is_paused_resumed_and_cancelled_by_its_owner_only() {
    let app = api_tests::spawn().await;
    let acme = voice_account(&app).await;
    let globex = voice_account(&app).await;
    let numbers: Vec<String> = (0..5).map(|i| tz(&format!("60{i:02}"))).collect();
    let group = group_of(&app, &acme.key, &numbers).await;
    let hours = serde_json::from_str::<Value>(ALL_DAY).expect("hours");
    let body = json!({"contact_group_id": group["id"].to_string(), "audio_url": "https://cdn.example/a.mp3", "calls_per_minute": 1, "calling_hours": hours});
    let campaign = app.post("/api/v3/call-campaigns", &acme.key, body).await.data().clone();
    let path =
        |action: &str| format!("/api/v3/call-campaigns/{}/{action}", campaign["uid"].as_str().unwrap_or_default());
    app.run_jobs().await;
    assert_eq!(app.voice_sandbox().count(), 1);
    assert_status(&app.post(&path("pause"), &acme.key, json!({})).await, 200);
    app.advance(Duration::minutes(3)).await;
    assert_eq!(app.voice_sandbox().count(), 1, "a paused campaign calls nobody more");
    crate::framework::assert_error(&app.post(&path("pause"), &acme.key, json!({})).await, 409);
    // another tenant's campaign is not found, whatever the action
    for action in ["resume", "cancel"] {
        crate::framework::assert_error(&app.post(&path(action), &globex.key, json!({})).await, 404);
    }
    crate::framework::assert_error(
        &app.get(&format!("/api/v3/call-campaigns/{}", campaign["id"]), &globex.key).await,
        404,
    );
    assert_eq!(app.get("/api/v3/call-campaigns", &globex.key).await.data()["pagination"]["total"], 0);
    assert_status(&app.post(&path("resume"), &acme.key, json!({})).await, 200);
    app.run_jobs().await;
    assert_eq!(app.voice_sandbox().count(), 2);
    let cancelled = app.post(&path("cancel"), &acme.key, json!({})).await;
    assert_status(&cancelled, 200);
    assert_eq!(cancelled.data()["status"], "cancelled");
    app.advance(Duration::minutes(5)).await;
    assert_eq!(app.voice_sandbox().count(), 2, "nobody is called after the cancel");
    crate::framework::assert_error(&app.post(&path("resume"), &acme.key, json!({})).await, 409);
    crate::framework::assert_error(&app.post(&path("restart"), &acme.key, json!({})).await, 404);
    let names: Vec<String> =
        campaign_events(&app.pool, &acme).await.into_iter().filter(|n| n != "call_campaign.target_completed").collect();
    assert_eq!(
        names,
        ["call_campaign.started", "call_campaign.paused", "call_campaign.resumed", "call_campaign.failed"]
    );
    // bad bodies name their member
    let bad = [
        (json!({"contact_group_id": group["id"].to_string()}), "message"),
        (
            json!({"contact_group_id": group["id"].to_string(), "message": "a", "calls_per_minute": 0}),
            "calls_per_minute",
        ),
        (
            json!({"contact_group_id": group["id"].to_string(), "message": "a", "calling_hours": {"start": "20:00", "end": "08:00"}}),
            "calling_hours.end",
        ),
        (json!({"contact_group_id": group["id"].to_string(), "message": "a", "max_attempts": 4}), "max_attempts"),
    ];
    for (body, field) in bad {
        assert_field_error(&app.post("/api/v3/call-campaigns", &acme.key, body).await, field);
    }
    let unknown =
        app.post("/api/v3/call-campaigns", &acme.key, json!({"contact_group_id": "999999", "message": "a"})).await;
    crate::framework::assert_error(&unknown, 404);
}
