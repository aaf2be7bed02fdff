//! `POST /sms/send` body rules (contract: SMS send body, Limits, Errors): recipients merging and
//! normalization, invalid and opted-out numbers, field limits, `message`/`body` and
//! `message_type`/`type` precedence, sender identities and routing, `schedule_time`, segments.

use api_tests::{json, spawn, sql_exec};
use serde_json::Value;

use super::support::{
    add_channel, add_sender, assert_field_error, assert_status, balance, e164, event_names, message_rows, read,
    sandbox_channel, send, str_of, time_of, tz,
};
use super::{SEND, sms_account};

const START_BALANCE: i64 = 100_000;

fn recipients_of(messages: &[Value]) -> Vec<String> {
    messages.iter().map(|m| str_of(m, "recipient").to_owned()).collect()
}

fn statuses_of(messages: &[Value]) -> Vec<String> {
    messages.iter().map(|m| str_of(m, "status").to_owned()).collect()
}

#[actix_web::test]
async fn the_answer_has_one_entry_per_message_with_the_contract_fields() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0011"), "message": "Hello"})).await;
    assert_eq!(messages.len(), 1);
    let m = &messages[0];
    assert!(m["id"].as_i64().is_some_and(|id| id > 0), "{m}");
    assert!(str_of(m, "uid").starts_with("msg_"), "{m}");
    assert_eq!(m["recipient"], e164("0011"));
    assert_eq!(m["status"], "sent");
    assert!(m["gateway_message_id"].is_string(), "{m}");
    assert!(m["error_message"].is_null(), "{m}");
    assert_eq!(
        (m["segments"].clone(), m["encoding"].clone(), m["price_minor"].clone()),
        (json!(1), json!("gsm7"), json!(100))
    );
}

#[actix_web::test]
async fn recipient_and_recipients_are_split_on_every_separator_merged_and_deduplicated() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let body = json!({
        "recipient": format!("{}, {};{}\t{}\n{}", tz("0011"), tz("0012"), tz("0013"), tz("0011"), tz("0012")),
        "recipients": [format!("{} {}", tz("0014"), tz("0011")), tz("0015"), tz("0013")],
        "message": "Hi",
    });
    let messages = send(&app, acme.key(), body).await;
    assert_eq!(recipients_of(&messages), ["0011", "0012", "0013", "0014", "0015"].map(e164));
    assert_eq!(statuses_of(&messages), vec!["sent"; 5]);
    assert_eq!(app.sandbox().count(), 5);
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 500);
}

#[actix_web::test]
async fn two_forms_of_one_number_make_one_message() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let body = json!({
        "recipient": tz("0011"),
        "recipients": [e164("0011"), "255712340011", "712340011", "+255-712-340.011", "(0712)340011"],
        "message": "Once",
    });
    let messages = send(&app, acme.key(), body).await;
    assert_eq!(recipients_of(&messages), [e164("0011")]);
    assert_eq!(app.sandbox().count(), 1);
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 100);
}

#[actix_web::test]
async fn a_foreign_number_with_a_plus_keeps_its_country() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": "+254712345678", "message": "Jambo"})).await;
    assert_eq!(recipients_of(&messages), ["+254712345678"]);
    assert_eq!(messages[0]["status"], "sent");
}

#[actix_web::test]
async fn an_invalid_number_is_a_failed_record_naming_the_input_and_costs_nothing() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages =
        send(&app, acme.key(), json!({"recipient": format!("{},12345", tz("0011")), "recipients": ["abc"]})).await;
    assert_eq!(recipients_of(&messages), [e164("0011"), "12345".into(), "abc".into()]);
    assert_eq!(statuses_of(&messages), ["sent", "failed", "failed"]);
    for (m, input) in messages[1..].iter().zip(["12345", "abc"]) {
        assert!(str_of(m, "error_message").contains(input), "{m}");
        assert_eq!(m["price_minor"], 0, "{m}");
        assert!(m["gateway_message_id"].is_null(), "{m}");
        // The record exists and can be read.
        assert_eq!(read(&app, acme.key(), str_of(m, "uid")).await["status"], "failed");
        assert_eq!(event_names(&app.pool, acme.tenant(), m).await, ["message.failed"]);
    }
    assert_eq!(app.sandbox().count(), 1, "only the valid number reached the provider");
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 100);
}

#[actix_web::test]
async fn a_send_whose_every_recipient_is_invalid_is_422_and_writes_nothing() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let res = app.post(SEND, acme.key(), json!({"recipient": "abc 12", "recipients": ["+", "99"]})).await;
    assert_field_error(&res, "recipient");
    assert_eq!(message_rows(&app.pool, acme.tenant()).await, 0);
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE);
    assert_eq!(app.sandbox().count(), 0);
}

#[actix_web::test]
async fn a_send_without_any_recipient_is_422() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    for body in [
        json!({"message": "Hi"}),
        json!({"recipient": "", "message": "Hi"}),
        json!({"recipient": " ,; \t", "message": "Hi"}),
        json!({"recipients": [], "message": "Hi"}),
        json!({"recipients": ["", " , "], "recipient": ";"}),
    ] {
        let res = app.post(SEND, acme.key(), body.clone()).await;
        crate::framework::assert_error(&res, 422);
        assert!(res.body["errors"].as_object().is_some_and(|e| !e.is_empty()), "{body}: {}", res.body);
    }
    assert_eq!(message_rows(&app.pool, acme.tenant()).await, 0);
}

#[actix_web::test]
async fn a_recipients_member_of_the_wrong_type_is_422() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let res = app.post(SEND, acme.key(), json!({"recipients": tz("0011"), "message": "Hi"})).await;
    crate::framework::assert_error(&res, 422);
    assert_eq!(message_rows(&app.pool, acme.tenant()).await, 0);
}

#[actix_web::test]
async fn a_blacklisted_number_is_a_failed_opted_out_record_and_costs_nothing() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let res = app.post("/api/v3/sms/blacklist", acme.key(), json!({"numbers": [e164("0021")]})).await;
    assert_status(&res, 201);
    // Any form of the number is the listed number.
    let messages = send(&app, acme.key(), json!({"recipient": format!("255712340021 {}", tz("0022"))})).await;
    assert_eq!(recipients_of(&messages), [e164("0021"), e164("0022")]);
    assert_eq!(statuses_of(&messages), ["failed", "sent"]);
    assert!(str_of(&messages[0], "error_message").contains("opted out"), "{}", messages[0]);
    assert_eq!(messages[0]["price_minor"], 0);
    assert!(app.sandbox().sent_to(&e164("0021")).is_empty());
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 100);
}

// --- limits ------------------------------------------------------------------------------------

/// Padding a value with whitespace keeps it meaningful where the service trims or splits.
fn padded(value: &str, len: usize) -> String {
    format!("{value}{}", " ".repeat(len - value.chars().count()))
}

fn left_padded(value: &str, len: usize) -> String {
    format!("{}{value}", " ".repeat(len - value.chars().count()))
}

#[actix_web::test]
async fn every_field_is_accepted_at_its_limit_and_refused_one_past_it() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let long_sender = "S".repeat(64);
    add_sender(&app.pool, acme.tenant(), "main", "sender_id", &long_sender, "approved").await;
    let base = || json!({"recipient": tz("0011"), "message": "Hi"});
    let with = |field: &str, value: Value| {
        let mut body = base();
        body[field] = value;
        body
    };
    let url = |len: usize| format!("https://cdn.example.com/{}", "a".repeat(len - 24));
    assert_eq!(url(2048).len(), 2048);
    let cases: Vec<(&str, Value, Value)> = vec![
        ("recipient", json!(padded(&tz("0011"), 4000)), json!(padded(&tz("0011"), 4001))),
        ("sender_id", json!(long_sender.clone()), json!("S".repeat(65))),
        ("message", json!("a".repeat(4096)), json!("a".repeat(4097))),
        ("body", json!("b".repeat(4096)), json!("b".repeat(4097))),
        ("message_type", json!(left_padded("plain", 60)), json!(left_padded("plain", 61))),
        ("type", json!(left_padded("sms", 60)), json!(left_padded("sms", 61))),
        ("schedule_time", json!(padded("2020-01-01T00:00:00Z", 100)), json!(padded("2020-01-01T00:00:00Z", 101))),
        ("media_url", json!(url(2048)), json!(url(2049))),
        ("media_type", json!("i".repeat(32)), json!("i".repeat(33))),
    ];
    let mut accepted = 0;
    for (field, at_limit, past_limit) in cases {
        let res = app.post(SEND, acme.key(), with(field, at_limit)).await;
        assert_eq!(res.status, 201, "{field} at its limit: {}", res.body);
        accepted += 1;
        let res = app.post(SEND, acme.key(), with(field, past_limit)).await;
        assert_field_error(&res, field);
    }
    // recipients: each entry at most 191, named by its index.
    let res = app.post(SEND, acme.key(), json!({"recipients": [tz("0011"), padded(&tz("0012"), 191)]})).await;
    assert_eq!(res.status, 201, "{}", res.body);
    accepted += 2;
    let res = app.post(SEND, acme.key(), json!({"recipients": [tz("0011"), padded(&tz("0012"), 192)]})).await;
    assert_field_error(&res, "recipients[1]");
    // Several fields past their limits are all named at once.
    let res = app
        .post(
            SEND,
            acme.key(),
            json!({"recipient": tz("0011"), "message": "m".repeat(4097), "media_type": "t".repeat(33)}),
        )
        .await;
    assert_field_error(&res, "message");
    assert_field_error(&res, "media_type");
    assert_eq!(message_rows(&app.pool, acme.tenant()).await, accepted, "no refused send wrote a message");
}

#[actix_web::test]
async fn a_message_of_4096_characters_is_stored_whole_and_priced_by_its_segments() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let text = "a".repeat(4096);
    let messages = send(&app, acme.key(), json!({"recipient": tz("0011"), "message": text})).await;
    // 4096 / 153 rounded up
    assert_eq!((messages[0]["segments"].clone(), messages[0]["price_minor"].clone()), (json!(27), json!(2700)));
    assert_eq!(read(&app, acme.key(), str_of(&messages[0], "uid")).await["body"], text);
    assert_eq!(app.sandbox().sent()[0].body, text);
}

#[actix_web::test]
async fn media_url_and_media_type_are_kept_on_the_message() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let body = json!({"recipient": tz("0011"), "message": "Look", "media_url": "https://cdn.example.com/a.png", "media_type": "image"});
    let messages = send(&app, acme.key(), body).await;
    let read = read(&app, acme.key(), str_of(&messages[0], "uid")).await;
    assert_eq!(
        (read["media_url"].clone(), read["media_type"].clone()),
        (json!("https://cdn.example.com/a.png"), json!("image"))
    );
}

// --- message / body, message_type / type ------------------------------------------------------

#[actix_web::test]
async fn message_wins_over_body_and_an_empty_message_gets_the_generic_body() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    for (body, expected) in [
        (json!({"message": "From message", "body": "From body"}), "From message"),
        (json!({"body": "From body"}), "From body"),
        (json!({"message": "", "body": "From body"}), "From body"),
        (json!({"message": "   ", "body": "From body"}), "From body"),
        (json!({"message": ""}), "(no message)"),
        (json!({}), "(no message)"),
    ] {
        let mut request = body.clone();
        request["recipient"] = json!(tz("0011"));
        let messages = send(&app, acme.key(), request).await;
        let read = read(&app, acme.key(), str_of(&messages[0], "uid")).await;
        assert_eq!(read["body"], expected, "{body}");
        assert_eq!(app.sandbox().sent().last().map(|s| s.body.clone()).as_deref(), Some(expected), "{body}");
    }
}

#[actix_web::test]
async fn plain_text_and_sms_in_any_case_send_an_sms_through_either_alias() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    for (field, value) in [
        ("message_type", "plain"),
        ("message_type", "TEXT"),
        ("message_type", "Sms"),
        ("type", "PLAIN"),
        ("type", "text"),
        ("type", "sms"),
    ] {
        let res = app.post(SEND, acme.key(), json!({"recipient": tz("0011"), "message": "Hi", field: value})).await;
        assert_eq!(res.status, 201, "{field}={value}: {}", res.body);
        assert_eq!(res.data()["messages"][0]["status"], "sent", "{field}={value}");
    }
}

#[actix_web::test]
async fn chat_is_422_no_chat_account_and_other_types_are_422() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    for body in [json!({"message_type": "chat"}), json!({"message_type": "CHAT"}), json!({"type": "chat"})] {
        let mut request = body.clone();
        request["recipient"] = json!(tz("0011"));
        let res = app.post(SEND, acme.key(), request).await;
        crate::framework::assert_error(&res, 422);
        assert!(res.body.to_string().contains("No chat account"), "{body}: {}", res.body);
    }
    for body in [json!({"message_type": "mms"}), json!({"type": "whatsapp"}), json!({"message_type": "sms text"})] {
        let mut request = body.clone();
        request["recipient"] = json!(tz("0011"));
        let res = app.post(SEND, acme.key(), request).await;
        crate::framework::assert_error(&res, 422);
    }
    assert_eq!(message_rows(&app.pool, acme.tenant()).await, 0);
    assert_eq!(app.sandbox().count(), 0);
}

#[actix_web::test]
async fn message_type_wins_over_type() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let res =
        app.post(SEND, acme.key(), json!({"recipient": tz("0011"), "message_type": "plain", "type": "chat"})).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let res =
        app.post(SEND, acme.key(), json!({"recipient": tz("0011"), "message_type": "chat", "type": "plain"})).await;
    crate::framework::assert_error(&res, 422);
    let res =
        app.post(SEND, acme.key(), json!({"recipient": tz("0011"), "message_type": "bogus", "type": "sms"})).await;
    crate::framework::assert_error(&res, 422);
    assert_eq!(message_rows(&app.pool, acme.tenant()).await, 1);
}

// --- senders and routing ------------------------------------------------------------------------

#[actix_web::test]
async fn a_sender_id_routes_to_its_channel_and_is_what_the_provider_gets_as_from() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let second = sandbox_channel(&app.pool, acme.tenant(), "second", None).await;
    add_sender(&app.pool, acme.tenant(), "second", "sender_id", "OTHER", "approved").await;
    add_sender(&app.pool, acme.tenant(), "second", "phone_number", "+255222110000", "approved").await;
    add_sender(&app.pool, acme.tenant(), "second", "short_code", "15000", "approved").await;
    for (sender, to) in [("OTHER", "0011"), ("+255222110000", "0012"), ("15000", "0013"), ("ACME", "0014")] {
        let messages = send(&app, acme.key(), json!({"recipient": tz(to), "message": "Hi", "sender_id": sender})).await;
        let read = read(&app, acme.key(), str_of(&messages[0], "uid")).await;
        assert_eq!(read["sender"], sender);
        let channel = if sender == "ACME" { &acme.channel } else { &second };
        assert_eq!(
            (read["tenant_channel_id"].clone(), read["channel_code"].clone()),
            (json!(channel.id), json!(channel.code))
        );
        assert_eq!(app.sandbox().sent_to(&e164(to))[0].from.as_deref(), Some(sender));
    }
}

#[actix_web::test]
async fn an_unknown_sender_id_is_422_and_writes_nothing() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let other = sms_account(&app, "all").await;
    add_sender(&app.pool, other.tenant(), "main", "sender_id", "THEIRS", "approved").await;
    // Unknown anywhere, and another account's sender id.
    for sender in ["NOPE", "THEIRS"] {
        let res = app.post(SEND, acme.key(), json!({"recipient": tz("0011"), "sender_id": sender})).await;
        assert_field_error(&res, "sender_id");
    }
    assert_eq!(message_rows(&app.pool, acme.tenant()).await, 0);
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE);
    assert_eq!(app.sandbox().count(), 0);
}

#[actix_web::test]
async fn a_sender_id_naming_two_usable_identities_is_422_ambiguous() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    sandbox_channel(&app.pool, acme.tenant(), "second", None).await;
    add_sender(&app.pool, acme.tenant(), "second", "sender_id", "ACME", "approved").await;
    let res = app.post(SEND, acme.key(), json!({"recipient": tz("0011"), "sender_id": "ACME"})).await;
    assert_field_error(&res, "sender_id");
    assert_eq!(message_rows(&app.pool, acme.tenant()).await, 0);
    // Without a sender_id the routing policy still chooses one route.
    let messages = send(&app, acme.key(), json!({"recipient": tz("0011")})).await;
    assert_eq!(messages[0]["status"], "sent");
}

#[actix_web::test]
async fn pending_rejected_and_inactive_senders_cannot_send() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    for (value, status) in [("PEND", "pending"), ("REJ", "rejected"), ("OLD", "inactive")] {
        add_sender(&app.pool, acme.tenant(), "main", "sender_id", value, status).await;
        let res = app.post(SEND, acme.key(), json!({"recipient": tz("0011"), "sender_id": value})).await;
        assert_field_error(&res, "sender_id");
    }
    assert_eq!(message_rows(&app.pool, acme.tenant()).await, 0);
}

#[actix_web::test]
async fn a_sender_on_a_disabled_channel_cannot_send() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let second = sandbox_channel(&app.pool, acme.tenant(), "second", None).await;
    add_sender(&app.pool, acme.tenant(), "second", "sender_id", "OTHER", "approved").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0011"), "sender_id": "OTHER"})).await;
    assert_eq!(messages[0]["status"], "sent");
    sql_exec(&app.pool, &format!("UPDATE channels SET status = 'disabled' WHERE id = {}", second.id)).await;
    let res = app.post(SEND, acme.key(), json!({"recipient": tz("0012"), "sender_id": "OTHER"})).await;
    assert_field_error(&res, "sender_id");
    assert_eq!(message_rows(&app.pool, acme.tenant()).await, 1);
}

#[actix_web::test]
async fn without_a_sender_id_the_first_active_channel_by_priority_is_used() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let second = sandbox_channel(&app.pool, acme.tenant(), "second", None).await;
    add_sender(&app.pool, acme.tenant(), "second", "sender_id", "OTHER", "approved").await;
    // Same priority: the older channel.
    let messages = send(&app, acme.key(), json!({"recipient": tz("0011")})).await;
    let m = read(&app, acme.key(), str_of(&messages[0], "uid")).await;
    assert_eq!((m["channel_code"].clone(), m["sender"].clone()), (json!("main"), json!("ACME")));
    // A lower priority number routes first.
    sql_exec(&app.pool, &format!("UPDATE channels SET priority = 10 WHERE id = {}", second.id)).await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0012")})).await;
    let m = read(&app, acme.key(), str_of(&messages[0], "uid")).await;
    assert_eq!((m["channel_code"].clone(), m["sender"].clone()), (json!("second"), json!("OTHER")));
    assert_eq!(app.sandbox().sent_to(&e164("0012"))[0].from.as_deref(), Some("OTHER"));
    // A disabled channel is skipped.
    sql_exec(&app.pool, &format!("UPDATE channels SET status = 'disabled' WHERE id = {}", second.id)).await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0013")})).await;
    let m = read(&app, acme.key(), str_of(&messages[0], "uid")).await;
    assert_eq!((m["channel_code"].clone(), m["status"].clone()), (json!("main"), json!("sent")));
}

/// docs/api.md, routing policy: "sent from that channel's first usable identity (sender ids
/// before numbers before short codes)".
#[actix_web::test]
async fn without_a_sender_id_a_sender_id_is_preferred_over_numbers_and_short_codes() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    sandbox_channel(&app.pool, acme.tenant(), "second", None).await;
    sql_exec(
        &app.pool,
        &format!("UPDATE channels SET priority = 10 WHERE code = 'second' AND tenant_id = {}", acme.tenant().0),
    )
    .await;
    // Added in the order that would win if identities were taken by age or by type name.
    add_sender(&app.pool, acme.tenant(), "second", "short_code", "15000", "approved").await;
    add_sender(&app.pool, acme.tenant(), "second", "phone_number", "+255222110000", "approved").await;
    add_sender(&app.pool, acme.tenant(), "second", "sender_id", "OTHER", "approved").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0011")})).await;
    let m = read(&app, acme.key(), str_of(&messages[0], "uid")).await;
    assert_eq!(m["sender"], "OTHER", "{m}");
}

#[actix_web::test]
async fn a_channel_without_usable_senders_sends_with_the_provider_default() {
    let app = spawn().await;
    let account = app.account("all").await;
    sandbox_channel(&app.pool, account.tenant, "bare", None).await;
    add_sender(&app.pool, account.tenant, "bare", "sender_id", "PEND", "pending").await;
    let mut conn = app.conn().await;
    accounts::wallet::credit(&mut conn, account.tenant, 10_000, None).await.expect("credit");
    drop(conn);
    let messages = send(&app, &account.key, json!({"recipient": tz("0011")})).await;
    assert_eq!(messages[0]["status"], "sent");
    assert_eq!(app.sandbox().sent()[0].from, None);
}

#[actix_web::test]
async fn the_bodys_tenant_channel_id_is_ignored() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let second = sandbox_channel(&app.pool, acme.tenant(), "second", None).await;
    add_sender(&app.pool, acme.tenant(), "second", "sender_id", "OTHER", "approved").await;
    let other = sms_account(&app, "all").await;
    for chosen in [second.id, other.channel.id, 999_999] {
        let messages = send(&app, acme.key(), json!({"recipient": tz("0011"), "tenant_channel_id": chosen})).await;
        let m = read(&app, acme.key(), str_of(&messages[0], "uid")).await;
        assert_eq!(m["tenant_channel_id"], acme.channel.id, "asked for {chosen}");
        assert_eq!(m["status"], "sent");
    }
}

#[actix_web::test]
async fn without_an_active_sms_channel_messages_fail_with_no_route_and_cost_nothing() {
    let app = spawn().await;
    let account = app.account("all").await;
    // A zero balance: an unroutable send costs nothing, so it is no 402 either.
    let messages = send(&app, &account.key, json!({"recipient": format!("{} {}", tz("0011"), tz("0012"))})).await;
    assert_eq!(statuses_of(&messages), ["failed", "failed"]);
    for m in &messages {
        assert!(str_of(m, "error_message").contains("No usable SMS route"), "{m}");
        assert_eq!(m["price_minor"], 0);
        assert_eq!(event_names(&app.pool, account.tenant, m).await, ["message.failed"]);
    }
    // A disabled channel and a chat channel are no SMS route either.
    let channel = sandbox_channel(&app.pool, account.tenant, "off", None).await;
    sql_exec(&app.pool, &format!("UPDATE channels SET status = 'disabled' WHERE id = {}", channel.id)).await;
    let chat = messaging::channels::NewChannel {
        kind: "chat".into(),
        provider: "sandbox".into(),
        code: Some("chat".into()),
        ..Default::default()
    };
    add_channel(&app.pool, account.tenant, chat).await;
    let messages = send(&app, &account.key, json!({"recipient": tz("0013")})).await;
    assert_eq!(messages[0]["status"], "failed");
    assert!(str_of(&messages[0], "error_message").contains("No usable SMS route"));
    assert_eq!(app.sandbox().count(), 0);
    assert_eq!(balance(&app, &account.key).await, 0);
}

// --- schedule_time ------------------------------------------------------------------------------

#[actix_web::test]
async fn a_future_schedule_time_queues_the_message_until_it_is_due() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let at = app.clock.now() + time::Duration::hours(1);
    // Written in East Africa Time: the instant is what counts.
    let eat = at.to_offset(time::macros::offset!(+3));
    let raw = eat.format(&time::format_description::well_known::Rfc3339).expect("format");
    assert!(raw.ends_with("+03:00"), "{raw}");
    let messages =
        send(&app, acme.key(), json!({"recipient": tz("0011"), "message": "Later", "schedule_time": raw})).await;
    let m = &messages[0];
    assert_eq!(m["status"], "queued", "{m}");
    let uid = str_of(m, "uid").to_owned();
    let stored = read(&app, acme.key(), &uid).await;
    assert_eq!(time_of(&stored, "scheduled_at"), at);
    assert!(stored["sent_at"].is_null());
    // Billed when accepted.
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - 100);

    app.run_jobs().await;
    app.advance(time::Duration::minutes(59)).await;
    assert_eq!(read(&app, acme.key(), &uid).await["status"], "queued");
    assert_eq!(app.sandbox().count(), 0, "nothing sent before the time");

    app.advance(time::Duration::seconds(61)).await;
    let stored = read(&app, acme.key(), &uid).await;
    assert_eq!(stored["status"], "sent", "{stored}");
    assert!(time_of(&stored, "sent_at") >= at);
    assert_eq!(app.sandbox().count(), 1);
}

#[actix_web::test]
async fn a_large_scheduled_send_waits_as_a_whole() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let at = app.clock.now() + time::Duration::minutes(10);
    let raw = at.format(&time::format_description::well_known::Rfc3339).expect("format");
    let recipients: Vec<String> = (11..19).map(|n| tz(&format!("00{n}"))).collect();
    let messages = send(&app, acme.key(), json!({"recipients": recipients, "schedule_time": raw})).await;
    assert_eq!(statuses_of(&messages), vec!["queued"; 8]);
    app.advance(time::Duration::minutes(9)).await;
    assert_eq!(app.sandbox().count(), 0);
    app.advance(time::Duration::minutes(2)).await;
    assert_eq!(app.sandbox().count(), 8);
    for m in &messages {
        assert_eq!(super::support::status_of(&app, acme.key(), m).await, "sent");
    }
}

#[actix_web::test]
async fn a_past_schedule_time_sends_now() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let past = (app.clock.now() - time::Duration::days(1))
        .format(&time::format_description::well_known::Rfc3339)
        .expect("format");
    for raw in ["2020-01-01T00:00:00Z".to_owned(), past] {
        let messages = send(&app, acme.key(), json!({"recipient": tz("0011"), "schedule_time": raw})).await;
        assert_eq!(messages[0]["status"], "sent", "{raw}");
    }
    assert_eq!(app.sandbox().count(), 2);
}

#[actix_web::test]
async fn a_schedule_time_without_an_offset_or_malformed_is_422_and_writes_nothing() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    for raw in
        ["2030-12-01T09:00:00", "2030-12-01 09:00", "tomorrow", "2030-13-01T09:00:00Z", "01/12/2030 09:00 +03:00"]
    {
        let res = app.post(SEND, acme.key(), json!({"recipient": tz("0011"), "schedule_time": raw})).await;
        assert_field_error(&res, "schedule_time");
    }
    assert_eq!(message_rows(&app.pool, acme.tenant()).await, 0);
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE);
}

// --- segments -----------------------------------------------------------------------------------

#[actix_web::test]
async fn segments_encoding_and_price_follow_the_gsm7_and_ucs2_boundaries() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let cases = [
        ("a".repeat(160), 1, "gsm7"),
        ("a".repeat(161), 2, "gsm7"),
        ("a".repeat(306), 2, "gsm7"),
        ("a".repeat(307), 3, "gsm7"),
        // extension characters count two septets
        ("€".repeat(80), 1, "gsm7"),
        ("€".repeat(81), 2, "gsm7"),
        // one character outside GSM-7 makes the whole message UCS-2
        (format!("{}ж", "a".repeat(69)), 1, "ucs2"),
        (format!("{}ж", "a".repeat(70)), 2, "ucs2"),
        ("ж".repeat(134), 2, "ucs2"),
        ("ж".repeat(135), 3, "ucs2"),
    ];
    let mut spent = 0;
    for (text, segments, encoding) in cases {
        let messages = send(&app, acme.key(), json!({"recipient": tz("0011"), "message": text})).await;
        let m = &messages[0];
        assert_eq!((m["segments"].clone(), m["encoding"].clone()), (json!(segments), json!(encoding)), "{text}");
        assert_eq!(m["price_minor"], 100 * segments, "{text}");
        spent += 100 * segments;
    }
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE - spent);
}

/// docs/api.md, `schedule_time`: "A future time answers `queued` with `scheduled_at`".
#[actix_web::test]
async fn a_scheduled_send_answers_with_its_scheduled_at() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let at = app.clock.now() + time::Duration::hours(2);
    let raw = at.format(&time::format_description::well_known::Rfc3339).expect("format");
    let messages = send(&app, acme.key(), json!({"recipient": tz("0011"), "schedule_time": raw})).await;
    assert_eq!(messages[0]["status"], "queued");
    assert!(messages[0]["scheduled_at"].is_string(), "the answer should carry scheduled_at: {}", messages[0]);
    assert_eq!(time_of(&messages[0], "scheduled_at"), at);
}

#[actix_web::test]
async fn limits_count_characters_not_bytes() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    // 4,096 two-byte characters: within the limit.
    let messages = send(&app, acme.key(), json!({"recipient": tz("0011"), "message": "ж".repeat(4096)})).await;
    assert_eq!((messages[0]["encoding"].clone(), messages[0]["segments"].clone()), (json!("ucs2"), json!(62)));
    let res = app.post(SEND, acme.key(), json!({"recipient": tz("0011"), "message": "ж".repeat(4097)})).await;
    assert_field_error(&res, "message");
}

#[actix_web::test]
async fn more_than_ten_thousand_distinct_numbers_is_422() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let numbers: Vec<String> = (0..10_001).map(|n| format!("0713{n:06}")).collect();
    let res = app
        .post(SEND, acme.key(), json!({"recipient": numbers[..5_000].join(","), "recipients": numbers[5_000..]}))
        .await;
    crate::framework::assert_error(&res, 422);
    assert_eq!(message_rows(&app.pool, acme.tenant()).await, 0);
    assert_eq!(balance(&app, acme.key()).await, START_BALANCE);
}

/// A NUL character cannot be stored: it is bad input (422 naming the field), never a 500.
#[actix_web::test]
async fn a_nul_character_is_refused_as_bad_input() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    for (body, field) in [
        (json!({"recipient": "0712345678", "message": "a\u{0}b"}), "message"),
        (json!({"recipients": ["0712345678\u{0}"]}), "recipients[0]"),
        (json!({"recipient": "0712345678", "sender_id": "AC\u{0}ME"}), "sender_id"),
    ] {
        let res = app.post("/api/v3/sms/send", acme.key(), body).await;
        assert_eq!(res.status, 422, "{field}: {:?}", res.body);
        assert!(res.body["errors"][field].is_array(), "{field}: {:?}", res.body);
    }
    let res = app.post("/api/v3/sms/campaign", acme.key(), json!({"contact_list_id": "1", "message": "x\u{0}"})).await;
    assert_eq!(res.status, 422, "{:?}", res.body);
    assert_eq!(app.get("/api/v3/sms/msg_%00", acme.key()).await.status, 404);
    assert_eq!(app.get("/api/v3/campaign/cmp_%00/view", acme.key()).await.status, 404);
}

/// Numbers without a calling code are read in the account's own (`default_country_code`),
/// never in a fixed country: a Kenyan account's `0712345678` is `+254712345678`, on sends and
/// on the blacklist alike; a `+` number keeps its own code.
#[actix_web::test]
async fn national_numbers_take_the_account_s_calling_code() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    accounts::tenants::set_default_country_code(&mut *app.conn().await, acme.tenant(), "254").await.expect("254");
    let res =
        app.post(SEND, acme.key(), json!({"recipients": ["0712345678", "+255712345678"], "message": "Habari"})).await;
    assert_eq!(res.status, 201, "{:?}", res.body);
    let recipients: Vec<&str> =
        res.data()["messages"].as_array().expect("messages").iter().filter_map(|m| m["recipient"].as_str()).collect();
    assert_eq!(recipients, ["+254712345678", "+255712345678"]);
    let res = app.post("/api/v3/sms/blacklist", acme.key(), json!({"numbers": ["0722 000 111"]})).await;
    assert_eq!(res.status, 201, "{:?}", res.body);
    assert_eq!(res.data()["items"][0]["number"], "+254722000111", "{:?}", res.body);
}
