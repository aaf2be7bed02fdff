//! Provider callbacks under `/hooks/sms/{token}/...` (issue 3, Receipts, inbound and opt-out;
//! docs/api.md "Provider callbacks", "Opt-out"): delivery receipts, late, unknown and unreadable
//! callbacks and their log, inbound messages, STOP and START, and Africa's Talking's form bodies
//! against a local fake of its API.

use api_tests::{json, spawn};
use messaging::channels::{Channel, NewChannel};
use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use super::sms_account;
use super::support::{
    add_channel, add_sender, assert_status, balance, callbacks, delivery_hook, e164, event_names, hook, inbound,
    inbound_hook, read, sandbox_hook, send, status_of, str_of, time_of, tz,
};

const FORM: &str = "application/x-www-form-urlencoded";

fn gid(message: &Value) -> String {
    str_of(message, "gateway_message_id").to_owned()
}

#[actix_web::test]
async fn a_delivery_receipt_marks_a_sent_message_delivered() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    // 0002: the sandbox never receipts it by itself.
    let messages = send(&app, acme.key(), json!({"recipient": tz("0002")})).await;
    let m = &messages[0];
    app.advance(time::Duration::seconds(5)).await;
    let res = sandbox_hook(&app, &delivery_hook(&acme.channel), json!({"id": gid(m), "status": "delivered"})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["outcome"], "applied", "{}", res.body);
    let stored = read(&app, acme.key(), str_of(m, "uid")).await;
    assert_eq!(stored["status"], "delivered");
    assert_eq!(time_of(&stored, "delivered_at"), app.clock.now());
    assert_eq!(event_names(&app.pool, acme.tenant(), m).await, ["message.sent", "message.delivered"]);
    let log = callbacks(&app.pool, &acme.channel).await;
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].kind.as_str(), log[0].outcome.as_str()), ("delivery", "applied"));
    assert_eq!(log[0].provider_message_id.as_deref(), Some(gid(m).as_str()));
    assert_eq!(log[0].message_id, m["id"].as_i64());
}

#[actix_web::test]
async fn a_failed_receipt_fails_the_message_with_its_reason() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0002")})).await;
    let m = &messages[0];
    let body = json!({"id": gid(m), "status": "failed", "reason": "Handset switched off"});
    let res = sandbox_hook(&app, &delivery_hook(&acme.channel), body).await;
    assert_eq!(res.data()["outcome"], "applied", "{}", res.body);
    let stored = read(&app, acme.key(), str_of(m, "uid")).await;
    assert_eq!(stored["status"], "failed");
    assert!(str_of(&stored, "error_message").contains("Handset switched off"), "{stored}");
    assert!(stored["delivered_at"].is_null());
    assert_eq!(event_names(&app.pool, acme.tenant(), m).await, ["message.sent", "message.failed"]);
}

#[actix_web::test]
async fn a_receipt_still_applies_to_a_message_in_checking_delivery() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0002")})).await;
    let m = &messages[0];
    app.advance(time::Duration::seconds(3601)).await;
    assert_eq!(status_of(&app, acme.key(), m).await, "checking_delivery");
    let res = sandbox_hook(&app, &delivery_hook(&acme.channel), json!({"id": gid(m), "status": "DELIVERED"})).await;
    assert_eq!(res.data()["outcome"], "applied", "{}", res.body);
    let stored = read(&app, acme.key(), str_of(m, "uid")).await;
    assert_eq!(stored["status"], "delivered");
    assert!(stored["delivered_at"].is_string());
}

#[actix_web::test]
async fn a_late_receipt_changes_nothing_and_is_logged_late() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0011")})).await;
    let m = &messages[0];
    app.advance(time::Duration::seconds(2)).await;
    let delivered = read(&app, acme.key(), str_of(m, "uid")).await;
    assert_eq!(delivered["status"], "delivered");
    for body in
        [json!({"id": gid(m), "status": "failed", "reason": "too late"}), json!({"id": gid(m), "status": "delivered"})]
    {
        let res = sandbox_hook(&app, &delivery_hook(&acme.channel), body).await;
        assert_status(&res, 200);
        assert_eq!(res.data()["outcome"], "late", "{}", res.body);
    }
    let stored = read(&app, acme.key(), str_of(m, "uid")).await;
    assert_eq!(stored["status"], "delivered");
    assert_eq!(stored["delivered_at"], delivered["delivered_at"]);
    assert!(stored["error_message"].is_null());
    assert_eq!(event_names(&app.pool, acme.tenant(), m).await, ["message.sent", "message.delivered"]);
    let log = callbacks(&app.pool, &acme.channel).await;
    assert_eq!(log.iter().map(|c| c.outcome.as_str()).collect::<Vec<_>>(), ["late", "late"]);
    assert!(log.iter().all(|c| c.message_id == m["id"].as_i64()));
}

#[actix_web::test]
async fn a_receipt_for_a_message_that_failed_delivery_changes_nothing() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0003")})).await;
    let m = &messages[0];
    app.advance(time::Duration::seconds(2)).await;
    assert_eq!(status_of(&app, acme.key(), m).await, "failed");
    let res = sandbox_hook(&app, &delivery_hook(&acme.channel), json!({"id": gid(m), "status": "delivered"})).await;
    assert_eq!(res.data()["outcome"], "late", "{}", res.body);
    assert_eq!(status_of(&app, acme.key(), m).await, "failed", "failed is final");
}

#[actix_web::test]
async fn an_unknown_receipt_is_answered_200_and_logged_unknown() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0002")})).await;
    let body = json!({"id": "sbx_nobody", "status": "delivered"});
    let res = sandbox_hook(&app, &delivery_hook(&acme.channel), body.clone()).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["outcome"], "unknown", "{}", res.body);
    assert_eq!(status_of(&app, acme.key(), &messages[0]).await, "sent");
    let log = callbacks(&app.pool, &acme.channel).await;
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].outcome.as_str(), log[0].message_id), ("unknown", None));
    assert_eq!(log[0].provider_message_id.as_deref(), Some("sbx_nobody"));
    assert_eq!(serde_json::from_str::<Value>(&log[0].body).ok(), Some(body), "the body is kept for audit");
}

#[actix_web::test]
async fn a_receipt_through_another_channels_token_does_not_touch_the_message() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let globex = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0002")})).await;
    let m = &messages[0];
    // Another tenant's channel, then another channel of the same tenant.
    let second = super::support::sandbox_channel(&app.pool, acme.tenant(), "second", None).await;
    for channel in [&globex.channel, &second] {
        let res = sandbox_hook(&app, &delivery_hook(channel), json!({"id": gid(m), "status": "failed"})).await;
        assert_status(&res, 200);
        assert_eq!(res.data()["outcome"], "unknown", "{}", res.body);
    }
    assert_eq!(status_of(&app, acme.key(), m).await, "sent");
    assert!(callbacks(&app.pool, &acme.channel).await.is_empty());
}

#[actix_web::test]
async fn an_unknown_token_is_404_on_both_hooks() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    for kind in ["delivery", "inbound"] {
        let path = format!("/hooks/sms/not-a-token/{kind}");
        let res = sandbox_hook(
            &app,
            &path,
            json!({"id": "x", "status": "delivered", "from": "+255712340021", "to": "1", "text": "STOP"}),
        )
        .await;
        crate::framework::assert_error(&res, 404);
    }
    // An API key is no callback token.
    let res = sandbox_hook(
        &app,
        &format!("/hooks/sms/{}/inbound", acme.key()),
        json!({"from": "+255712340021", "to": "1", "text": "STOP"}),
    )
    .await;
    crate::framework::assert_error(&res, 404);
    let list = app.get("/api/v3/sms/blacklist", acme.key()).await;
    assert_eq!(list.data()["pagination"]["total"], 0);
}

#[actix_web::test]
async fn an_unreadable_callback_is_422_and_logged_invalid() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0002")})).await;
    let delivery = delivery_hook(&acme.channel);
    let cases = [
        (delivery.as_str(), FORM, format!("id={}&status=delivered", gid(&messages[0]))),
        (delivery.as_str(), "application/json", "{not json".to_owned()),
        (delivery.as_str(), "application/json", json!({"id": gid(&messages[0]), "status": "teleported"}).to_string()),
        (delivery.as_str(), "application/json", json!({"status": "delivered"}).to_string()),
    ];
    for (path, content_type, body) in &cases {
        let res = hook(&app, path, content_type, body).await;
        crate::framework::assert_error(&res, 422);
    }
    let inbound = inbound_hook(&acme.channel);
    let res =
        hook(&app, &inbound, "application/json", &json!({"from": "+255712340021", "to": "15000"}).to_string()).await;
    crate::framework::assert_error(&res, 422);
    assert_eq!(status_of(&app, acme.key(), &messages[0]).await, "sent");
    let log = callbacks(&app.pool, &acme.channel).await;
    assert_eq!(log.len(), 5);
    assert!(log.iter().all(|c| c.outcome == "invalid" && c.message_id.is_none()), "{log:?}");
    assert_eq!(log.iter().filter(|c| c.kind == "inbound").count(), 1);
    assert_eq!(log[1].body, "{not json");
    // Nothing was stored as a message either.
    let list = app.get("/api/v3/messages?direction=inbound", acme.key()).await;
    assert_eq!(list.data()["pagination"]["total"], 0, "{}", list.body);
}

#[actix_web::test]
async fn an_inbound_message_is_stored_as_received_with_its_event() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let data = inbound(&app, &acme.channel, "0712340021", "Habari, is the shop open?").await;
    let uid = str_of(&data, "uid").to_owned();
    let m = read(&app, acme.key(), &uid).await;
    assert_eq!(m["direction"], "inbound");
    assert_eq!(m["status"], "received");
    assert_eq!(m["channel_type"], "sms");
    assert_eq!(m["sender"], e164("0021"), "the sender's number in E.164");
    assert_eq!(m["recipient"], "15000");
    assert_eq!(m["body"], "Habari, is the shop open?");
    assert_eq!(m["tenant_channel_id"], acme.channel.id);
    assert_eq!(m["price_minor"], 0);
    assert_eq!(read(&app, acme.key(), &data["id"].to_string()).await["uid"], uid.as_str());
    let events = super::support::events_of(&app.pool, acme.tenant(), &m).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].0, "message.received");
    assert_eq!(
        (events[0].1["direction"].clone(), events[0].1["sender"].clone()),
        (json!("inbound"), json!(e164("0021")))
    );
    let log = callbacks(&app.pool, &acme.channel).await;
    assert_eq!(
        (log[0].kind.as_str(), log[0].outcome.as_str(), log[0].message_id),
        ("inbound", "applied", m["id"].as_i64())
    );
    // Not an opt-out.
    let list = app.get("/api/v3/sms/blacklist", acme.key()).await;
    assert_eq!(list.data()["pagination"]["total"], 0);
    // Inbound messages cost nothing.
    assert_eq!(balance(&app, acme.key()).await, 100_000);
    // Inbound messages are listed.
    let list = app.get("/api/v3/messages?direction=inbound", acme.key()).await;
    assert_eq!(list.data()["items"][0]["uid"], uid.as_str(), "{}", list.body);
}

#[actix_web::test]
async fn stop_blacklists_the_sender_with_the_message_as_proof_and_later_sends_fail() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    assert_eq!(send(&app, acme.key(), json!({"recipient": tz("0021")})).await[0]["status"], "sent");
    let data = inbound(&app, &acme.channel, "+255712340021", "STOP").await;
    let list = app.get("/api/v3/sms/blacklist", acme.key()).await;
    assert_status(&list, 200);
    let items = list.data()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 1, "{}", list.body);
    assert_eq!(items[0]["number"], e164("0021"));
    assert_eq!(items[0]["source_message_uid"], data["uid"]);
    assert!(items[0]["reason"].as_str().is_some_and(|r| r.to_uppercase().contains("STOP")), "{}", items[0]);

    // Any form of the number is now refused, without charge or provider call.
    let before = balance(&app, acme.key()).await;
    let calls = app.sandbox().calls();
    let messages = send(&app, acme.key(), json!({"recipient": "255712340021", "message": "Offer!"})).await;
    assert_eq!(messages[0]["status"], "failed");
    assert!(str_of(&messages[0], "error_message").contains("opted out"), "{}", messages[0]);
    assert_eq!(messages[0]["price_minor"], 0);
    assert_eq!(balance(&app, acme.key()).await, before);
    assert_eq!(app.sandbox().calls(), calls);
    // Others still get messages.
    assert_eq!(send(&app, acme.key(), json!({"recipient": tz("0022")})).await[0]["status"], "sent");
}

#[actix_web::test]
async fn start_takes_the_number_off_the_blacklist() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    inbound(&app, &acme.channel, "0712340021", "stop").await;
    assert_eq!(send(&app, acme.key(), json!({"recipient": tz("0021")})).await[0]["status"], "failed");
    inbound(&app, &acme.channel, "0712340021", "Start").await;
    let list = app.get("/api/v3/sms/blacklist", acme.key()).await;
    assert_eq!(list.data()["pagination"]["total"], 0, "{}", list.body);
    assert_eq!(send(&app, acme.key(), json!({"recipient": tz("0021")})).await[0]["status"], "sent");
    // START from a number that was never listed is just a message.
    inbound(&app, &acme.channel, "0712340022", "START").await;
    let list = app.get("/api/v3/messages?direction=inbound", acme.key()).await;
    assert_eq!(list.data()["pagination"]["total"], 3);
}

#[actix_web::test]
async fn only_the_keyword_alone_opts_out_whatever_its_case_and_punctuation() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let cases = [
        ("0031", "Stop!", true),
        ("0032", "  stop. ", true),
        ("0033", "unsubscribe", true),
        ("0034", "stop by the shop", false),
        ("0035", "STOPPING", false),
        ("0036", "please STOP", false),
    ];
    for (last4, text, _) in cases {
        inbound(&app, &acme.channel, &tz(last4), text).await;
    }
    let list = app.get("/api/v3/sms/blacklist", acme.key()).await;
    let mut listed: Vec<String> =
        list.data()["items"].as_array().expect("items").iter().map(|e| str_of(e, "number").to_owned()).collect();
    listed.sort();
    let expected: Vec<String> = cases.iter().filter(|c| c.2).map(|c| e164(c.0)).collect();
    assert_eq!(listed, expected);
}

#[actix_web::test]
async fn a_stop_to_one_tenant_does_not_opt_out_of_another() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let globex = sms_account(&app, "all").await;
    inbound(&app, &acme.channel, "0712340021", "STOP").await;
    assert_eq!(send(&app, globex.key(), json!({"recipient": tz("0021")})).await[0]["status"], "sent");
    assert_eq!(send(&app, acme.key(), json!({"recipient": tz("0021")})).await[0]["status"], "failed");
    let list = app.get("/api/v3/sms/blacklist", globex.key()).await;
    assert_eq!(list.data()["pagination"]["total"], 0);
    // The inbound message belongs to the channel's tenant only.
    let list = app.get("/api/v3/messages?direction=inbound", globex.key()).await;
    assert_eq!(list.data()["pagination"]["total"], 0);
}

// --- Africa's Talking ---------------------------------------------------------------------------

const AT_KEY: &str = "atsk_test_0123456789";

/// The fake Africa's Talking answers by the recipient's last four digits: `0041` HTTP 500,
/// `0042` refused (403 InvalidPhoneNumber), anything else accepted with id `ATXid_<last4>`.
fn at_answer(request: &Request) -> ResponseTemplate {
    let body = String::from_utf8_lossy(&request.body).into_owned();
    let to = body.split('&').find_map(|pair| pair.strip_prefix("to=")).unwrap_or_default();
    let digits: String = to.chars().filter(char::is_ascii_digit).collect();
    let last4 = &digits[digits.len().saturating_sub(4)..];
    let recipient = match last4 {
        "0041" => return ResponseTemplate::new(500).set_body_string("upstream trouble"),
        "0042" => {
            json!({"statusCode": 403, "number": to, "status": "InvalidPhoneNumber", "cost": "0", "messageId": "None"})
        }
        _ => {
            json!({"statusCode": 101, "number": to, "status": "Success", "cost": "TZS 20.0000", "messageId": format!("ATXid_{last4}")})
        }
    };
    ResponseTemplate::new(201)
        .set_body_json(json!({"SMSMessageData": {"Message": "Sent to 1/1", "Recipients": [recipient]}}))
}

/// An Africa's Talking channel `at` with sender id `ATCO` for the account, against a fake.
async fn at_channel(app_pool: &store::Pool, tenant: kernel::TenantId) -> (MockServer, Channel) {
    let server = MockServer::start().await;
    Mock::given(method("POST")).and(path("/version1/messaging")).respond_with(at_answer).mount(&server).await;
    let new = NewChannel {
        kind: "sms".into(),
        provider: "africastalking".into(),
        code: Some("at".into()),
        base_url: Some(server.uri()),
        username: Some("acme".into()),
        api_key: Some(AT_KEY.into()),
        throughput_per_second: None,
    };
    let channel = add_channel(app_pool, tenant, new).await;
    add_sender(app_pool, tenant, "at", "sender_id", "ATCO", "approved").await;
    (server, channel)
}

#[actix_web::test]
async fn an_africas_talking_send_posts_the_form_and_its_form_receipts_apply() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let (server, at) = at_channel(&app.pool, acme.tenant()).await;
    let body = json!({"recipients": [tz("0031"), tz("0032")], "message": "Hello & welcome", "sender_id": "ATCO"});
    let messages = send(&app, acme.key(), body).await;
    assert_eq!(messages.iter().map(|m| m["status"].clone()).collect::<Vec<_>>(), [json!("sent"), json!("sent")]);
    assert_eq!((gid(&messages[0]), gid(&messages[1])), ("ATXid_0031".to_owned(), "ATXid_0032".to_owned()));
    assert_eq!(app.sandbox().count(), 0, "not through the sandbox");
    let requests = server.received_requests().await.expect("recorded requests");
    assert_eq!(requests.len(), 2, "one provider call per message");
    for request in &requests {
        assert_eq!(request.headers.get("apiKey").and_then(|v| v.to_str().ok()), Some(AT_KEY));
        let form = String::from_utf8_lossy(&request.body).into_owned();
        for part in ["username=acme", "from=ATCO", "message=Hello"] {
            assert!(form.contains(part), "{part} in {form}");
        }
    }
    let stored = read(&app, acme.key(), str_of(&messages[0], "uid")).await;
    assert_eq!((stored["channel_code"].clone(), stored["sender"].clone()), (json!("at"), json!("ATCO")));

    // Delivery reports are forms: Success delivers; a Buffered report says nothing new.
    let path = delivery_hook(&at);
    let res = hook(
        &app,
        &path,
        FORM,
        "id=ATXid_0031&status=Success&phoneNumber=%2B255712340031&networkCode=64002&retryCount=0",
    )
    .await;
    assert_eq!(res.data()["outcome"], "applied", "{}", res.body);
    assert_eq!(status_of(&app, acme.key(), &messages[0]).await, "delivered");
    let res = hook(&app, &path, FORM, "id=ATXid_0032&status=Buffered&phoneNumber=%2B255712340032").await;
    assert_status(&res, 200);
    assert_eq!(status_of(&app, acme.key(), &messages[1]).await, "sent");
    let res = hook(
        &app,
        &path,
        FORM,
        "id=ATXid_0032&status=Failed&failureReason=UserInBlacklist&phoneNumber=%2B255712340032",
    )
    .await;
    assert_eq!(res.data()["outcome"], "applied", "{}", res.body);
    let failed = read(&app, acme.key(), str_of(&messages[1], "uid")).await;
    assert_eq!(failed["status"], "failed");
    assert!(str_of(&failed, "error_message").contains("UserInBlacklist"), "{failed}");
    // Unknown id, then a report without an id.
    let res = hook(&app, &path, FORM, "id=ATXid_9999&status=Success").await;
    assert_eq!(res.data()["outcome"], "unknown", "{}", res.body);
    let res = hook(&app, &path, FORM, "status=Success").await;
    crate::framework::assert_error(&res, 422);
    let outcomes: Vec<String> = callbacks(&app.pool, &at).await.into_iter().map(|c| c.outcome).collect();
    assert_eq!(outcomes.first().map(String::as_str), Some("applied"));
    assert_eq!(outcomes.last().map(String::as_str), Some("invalid"));
    assert_eq!(outcomes.len(), 5);
    // The sandbox's JSON shape means nothing to this channel's parser, and vice versa.
    let res = sandbox_hook(&app, &delivery_hook(&acme.channel), json!({"id": "ATXid_0031", "status": "failed"})).await;
    assert_eq!(res.data()["outcome"], "unknown", "{}", res.body);
    assert_eq!(status_of(&app, acme.key(), &messages[0]).await, "delivered");
}

#[actix_web::test]
async fn an_africas_talking_refusal_or_5xx_fails_the_message_and_refunds_it() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let (server, _) = at_channel(&app.pool, acme.tenant()).await;
    let body = json!({"recipients": [tz("0041"), tz("0042"), tz("0043")], "sender_id": "ATCO"});
    let messages = send(&app, acme.key(), body).await;
    let got: Vec<_> = messages.iter().map(|m| m["status"].clone()).collect();
    assert_eq!(got, [json!("failed"), json!("failed"), json!("sent")]);
    assert!(str_of(&messages[0], "error_message").contains("500"), "{}", messages[0]);
    assert!(str_of(&messages[1], "error_message").contains("InvalidPhoneNumber"), "{}", messages[1]);
    assert_eq!(balance(&app, acme.key()).await, 100_000 - 100);
    // Never retried: a resend could reach the customer twice.
    app.advance(time::Duration::seconds(301)).await;
    app.advance(time::Duration::seconds(3601)).await;
    assert_eq!(server.received_requests().await.map(|r| r.len()), Some(3));
    assert_eq!(status_of(&app, acme.key(), &messages[0]).await, "failed");
    // Africa's Talking has no status query: an unreceipted message waits in checking_delivery.
    assert_eq!(status_of(&app, acme.key(), &messages[2]).await, "checking_delivery");
}

#[actix_web::test]
async fn an_africas_talking_inbound_form_is_stored_and_stop_opts_out() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let (_server, at) = at_channel(&app.pool, acme.tenant()).await;
    let res = hook(
        &app,
        &inbound_hook(&at),
        FORM,
        "from=%2B255712340051&to=15000&text=STOP&id=at-in-1&date=2026-11-26+10%3A00%3A00&linkId=x",
    )
    .await;
    assert_status(&res, 200);
    let uid = str_of(res.data(), "uid").to_owned();
    let m = read(&app, acme.key(), &uid).await;
    assert_eq!((m["direction"].clone(), m["status"].clone()), (json!("inbound"), json!("received")));
    assert_eq!(
        (m["sender"].clone(), m["recipient"].clone(), m["body"].clone()),
        (json!(e164("0051")), json!("15000"), json!("STOP"))
    );
    assert_eq!(m["gateway_message_id"], "at-in-1");
    assert_eq!(m["channel_code"], "at");
    let list = app.get("/api/v3/sms/blacklist", acme.key()).await;
    assert_eq!(list.data()["items"][0]["source_message_uid"], uid.as_str(), "{}", list.body);
    let res = hook(&app, &inbound_hook(&at), FORM, "to=15000&text=hi").await;
    crate::framework::assert_error(&res, 422);
}

/// Providers replay receipts in bursts: the hooks are not rate limited (the v3 limit is 120 a
/// minute per key, and hooks carry none).
#[actix_web::test]
async fn a_burst_of_callbacks_is_not_rate_limited() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let path = delivery_hook(&acme.channel);
    for n in 0..130 {
        let res = sandbox_hook(&app, &path, json!({"id": format!("sbx_unknown_{n}"), "status": "delivered"})).await;
        assert_eq!(res.status, 200, "callback {n}: {}", res.body);
    }
    assert_eq!(callbacks(&app.pool, &acme.channel).await.len(), 130);
}
