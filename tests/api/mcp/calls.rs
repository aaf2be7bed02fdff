//! The `calls` tools through the SDK's client (issue 22): a voice OTP, a voice message and a
//! call placed over MCP run the same `messaging::voice` methods as REST (`mcp:calls` with
//! `mcp:spend` to place, the person's `communications.send`), and calls are read back as REST
//! answers them.

use api_tests::json;

use super::support::*;
use crate::sms::support::{e164, tz};

const PATH: &str = "/mcp/v1/calls";
const TOOLS: [&str; 9] = [
    "change_call_campaign",
    "create_call_campaign",
    "get_call",
    "get_call_campaign",
    "list_call_campaigns",
    "list_calls",
    "place_call",
    "send_voice_message",
    "send_voice_otp",
];

#[actix_web::test]
async fn calls_placed_over_mcp_are_played_out_and_read_back_as_rest_answers_them() {
    let app = api_tests::spawn().await;
    let acme = app.account("communications.send,communications.messages.view").await;
    let mut conn = app.conn().await;
    accounts::wallet::credit(&mut conn, acme.tenant, 100_000, None).await.expect("credit");
    app.voice_route(acme.tenant, "voice", None, "+255222110000").await;
    let server = app.listen();

    // without mcp:spend, only the reads are offered
    let reader = connect(&server, PATH, &app.mcp_connection(acme.tenant, acme.user, "mcp:use mcp:calls").await).await;
    assert_eq!(
        tool_names(&reader).await,
        sorted(&["get_call", "get_call_campaign", "list_call_campaigns", "list_calls"])
    );

    let token = app.mcp_connection(acme.tenant, acme.user, "mcp:use mcp:calls mcp:spend").await;
    let client = connect(&server, PATH, &token).await;
    assert_eq!(tool_names(&client).await, sorted(&TOOLS));
    let otp = ok(&client, "send_voice_otp", json!({"recipient": tz("8001"), "code": "2468"})).await;
    assert_eq!((otp["code"].as_str(), otp["status"].as_str()), (Some("2468"), Some("queued")), "{otp}");
    let message = ok(&client, "send_voice_message", json!({"recipients": [tz("8002")], "message": "Hello"})).await;
    assert_eq!(message["calls"].as_array().map(Vec::len), Some(1), "{message}");
    let ivr = json!({"prompt": "Press 1 to talk to us.", "options": {"1": {"transfer": {"numbers": [tz("9000")], "record": true}}}});
    let placed = ok(&client, "place_call", json!({"recipient": tz("0004"), "ivr": ivr})).await;
    assert_field(&refused(&client, "place_call", json!({"recipient": tz("8003")})).await, "connect");

    app.run_jobs().await;
    app.advance(time::Duration::seconds(2)).await;
    let done = ok(&client, "get_call", json!({"call": placed["uid"]})).await;
    assert_eq!((done["status"].as_str(), done["digits"].as_str()), (Some("completed"), Some("1")), "{done}");
    assert!(done["recording_url"].is_string(), "the transfer was recorded: {done}");
    assert_eq!(
        done,
        rest_data(&app, &acme.key, &format!("/api/v3/calls/{}", placed["uid"].as_str().unwrap_or_default())).await
    );
    assert_eq!(app.voice_sandbox().count_to(&e164("8001")), 1);
    let otps = ok(&client, "list_calls", json!({"kind": "otp"})).await;
    assert_eq!(otps["items"][0]["uid"], otp["uid"], "{otps}");
    assert_eq!(otps["items"][0]["status"], "completed", "{otps}");
    assert!(otps["items"][0].get("code").is_none(), "the code is not read back: {otps}");
    assert_code(&refused(&client, "get_call", json!({"call": "call_unknown"})).await, "not_found");

    // a campaign over the same tools: made, paused, read, listed
    let admin = app.user(acme.tenant, "all").await;
    let admin = app.key(acme.tenant, admin).await;
    let res = app.post("/api/v3/contact-groups", &admin, json!({"name": "VIP"})).await;
    let group = res.data()["id"].to_string();
    let rows = json!({"contacts": [{"PHONE": tz("8101"), "name": "Asha"}]});
    app.post(&format!("/api/v3/contact-groups/{group}/contacts/batch"), &admin, rows).await;
    let made = ok(&client, "create_call_campaign", json!({"contact_group_id": group, "message": "Karibu"})).await;
    assert_eq!((made["total_targets"].as_i64(), made["status"].as_str()), (Some(1), Some("scheduled")), "{made}");
    let paused = ok(&client, "change_call_campaign", json!({"call_campaign": made["uid"], "action": "pause"})).await;
    assert_eq!(paused["status"], "paused");
    assert_code(
        &refused(&client, "change_call_campaign", json!({"call_campaign": made["uid"], "action": "pause"})).await,
        "conflict",
    );
    assert_field(
        &refused(&client, "change_call_campaign", json!({"call_campaign": made["uid"], "action": "stop"})).await,
        "action",
    );
    assert_eq!(ok(&client, "get_call_campaign", json!({"call_campaign": made["id"]})).await["status"], "paused");
    assert_eq!(ok(&client, "list_call_campaigns", json!({})).await["items"][0]["uid"], made["uid"]);
}

/// The `ivr` server checks and walks a menu without calling anyone, then runs it; the `routing`
/// server lists the voice numbers in routing order and connects a number to agents. Each call
/// tool takes only its own member, and both place the same calls as `POST /calls`.
#[actix_web::test]
async fn menus_are_walked_before_they_run_and_calls_are_routed_from_the_listed_numbers() {
    let app = api_tests::spawn().await;
    let acme = app.account("communications.send,communications.messages.view").await;
    let mut conn = app.conn().await;
    accounts::wallet::credit(&mut conn, acme.tenant, 100_000, None).await.expect("credit");
    app.voice_route(acme.tenant, "voice", None, "+255222110000").await;
    app.voice_route(acme.tenant, "voice-2", None, "+255222110001").await;
    let server = app.listen();

    let token = app.mcp_connection(acme.tenant, acme.user, "mcp:use mcp:calls mcp:spend").await;
    let ivr = connect(&server, "/mcp/v1/ivr", &token).await;
    assert_eq!(tool_names(&ivr).await, sorted(&["check_ivr_menu", "run_ivr_menu"]));
    let menu = json!({"prompt": "Karibu.", "options": {
        "1": {"say": "We open at eight."},
        "2": {"menu": {"prompt": "Orders or returns?", "options": {"1": {"transfer": {"numbers": [tz("9000")]}}}}},
        "9": {"voicemail": {"max_seconds": 30}},
    }});
    let walked = ok(&ivr, "check_ivr_menu", json!({"ivr": menu})).await;
    let paths: Vec<(&str, &str)> = walked["paths"]
        .as_array()
        .expect("paths")
        .iter()
        .map(|p| (p["keys"].as_str().unwrap_or_default(), p["action"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(paths, [("1", "say"), ("2", "menu"), ("2.1", "transfer"), ("9", "voicemail")], "{walked}");
    assert_eq!((walked["depth"].as_i64(), walked["transfer_numbers"].clone()), (Some(2), json!([e164("9000")])));
    let broken = json!({"ivr": {"prompt": "Karibu.", "options": {"x": {"say": "?"}}}});
    assert_field(&refused(&ivr, "check_ivr_menu", broken).await, "ivr.options.x");
    assert_eq!(app.voice_sandbox().count(), 0, "checking calls nobody");
    let ran = ok(&ivr, "run_ivr_menu", json!({"recipient": tz("0004"), "ivr": menu})).await;
    assert_eq!((ran["kind"].as_str(), ran["status"].as_str()), (Some("call"), Some("queued")), "{ran}");
    let connect_body = json!({"recipient": tz("8004"), "connect": {"numbers": [tz("9000")]}});
    assert_field(&refused(&ivr, "run_ivr_menu", connect_body.clone()).await, "connect");

    let routing_token = app.mcp_connection(acme.tenant, acme.user, "mcp:use mcp:routing mcp:spend").await;
    let routing = connect(&server, "/mcp/v1/routing", &routing_token).await;
    assert_eq!(tool_names(&routing).await, sorted(&["connect_call", "list_voice_numbers"]));
    let numbers = ok(&routing, "list_voice_numbers", json!({})).await;
    let listed: Vec<(&str, bool)> = numbers["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|n| (n["value"].as_str().unwrap_or_default(), n["default"].as_bool().unwrap_or_default()))
        .collect();
    assert_eq!(listed, [("+255222110000", true), ("+255222110001", false)], "{numbers}");
    let from_second =
        json!({"recipient": tz("8004"), "connect": {"numbers": [tz("9000")]}, "sender_id": "+255222110001"});
    let connected = ok(&routing, "connect_call", from_second).await;
    assert_eq!(connected["sender"], "+255222110001", "{connected}");
    assert_field(&refused(&routing, "connect_call", json!({"recipient": tz("8005"), "ivr": menu})).await, "ivr");
    // the calls are those REST reads
    assert_eq!(
        connected,
        rest_data(&app, &acme.key, &format!("/api/v3/calls/{}", connected["uid"].as_str().unwrap_or_default())).await
    );
    app.run_jobs().await;
    assert_eq!((app.voice_sandbox().count_to(&e164("0004")), app.voice_sandbox().count_to(&e164("8004"))), (1, 1));

    // another account sees none of these numbers
    let other = app.account("communications.send,communications.messages.view").await;
    let other_token = app.mcp_connection(other.tenant, other.user, "mcp:use mcp:routing").await;
    let other = connect(&server, "/mcp/v1/routing", &other_token).await;
    assert_eq!(ok(&other, "list_voice_numbers", json!({})).await["items"], json!([]));
}
