//! Reading messages, senders and the blacklist (contract: SMS, Identifiers and list conventions,
//! Authentication; docs/api.md "Reading", "Opt-out"): `GET /sms/{uid}`, `GET /messages` with its
//! filters, pagination and permission, `GET /sms/senders`, the blacklist routes, which routes a
//! legacy key may use, and tenant isolation.

use api_tests::{json, spawn, sql_exec};
use serde_json::Value;

use super::support::{
    add_channel, add_sender, assert_field_error, assert_status, e164, inbound, read, sandbox_channel, send, str_of, tz,
};
use super::{SEND, sms_account};

const MESSAGES: &str = "/api/v3/messages";
const BLACKLIST: &str = "/api/v3/sms/blacklist";

fn items(res: &api_tests::Resp) -> Vec<Value> {
    res.data()["items"].as_array().unwrap_or_else(|| panic!("data.items in {}", res.body)).clone()
}

fn uids(res: &api_tests::Resp) -> Vec<String> {
    items(res).iter().map(|m| str_of(m, "uid").to_owned()).collect()
}

fn total(res: &api_tests::Resp) -> i64 {
    res.data()["pagination"]["total"].as_i64().unwrap_or_else(|| panic!("pagination.total in {}", res.body))
}

#[actix_web::test]
async fn a_message_reads_by_uid_and_by_numeric_id_with_every_field() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0011"), "message": "Hello"})).await;
    let uid = str_of(&messages[0], "uid");
    let id = messages[0]["id"].as_i64().expect("id");
    let by_uid = read(&app, acme.key(), uid).await;
    let by_id = read(&app, acme.key(), &id.to_string()).await;
    assert_eq!(by_uid, by_id);
    let m = by_uid;
    assert_eq!(m["id"], id);
    assert_eq!(m["uid"], uid);
    assert_eq!(m["direction"], "outbound");
    assert_eq!(m["channel_type"], "sms");
    assert_eq!(m["tenant_channel_id"], acme.channel.id);
    assert_eq!(m["channel_code"], "main");
    assert_eq!(m["sender"], "ACME");
    assert_eq!(m["recipient"], e164("0011"));
    assert_eq!(m["body"], "Hello");
    assert_eq!(m["status"], "sent");
    assert_eq!(m["gateway_message_id"], messages[0]["gateway_message_id"]);
    for null in ["media_url", "media_type", "error_message", "delivered_at", "read_at", "scheduled_at"] {
        assert!(m[null].is_null(), "{null} in {m}");
    }
    for present in ["metadata", "template_params"] {
        assert!(m.get(present).is_some(), "{present} in {m}");
    }
    for at in ["created_at", "updated_at", "sent_at"] {
        super::support::time_of(&m, at);
    }
    assert_eq!(
        (m["segments"].clone(), m["encoding"].clone(), m["price_minor"].clone()),
        (json!(1), json!("gsm7"), json!(100))
    );
    assert!(m.get("tenant_id").is_none() && m.get("campaign_id").is_none(), "internal columns stay inside: {m}");
}

#[actix_web::test]
async fn an_unknown_message_is_404() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    for path in ["/api/v3/sms/msg_nope", "/api/v3/sms/999999", "/api/v3/sms/0", "/api/v3/sms/-1"] {
        crate::framework::assert_error(&app.get(path, acme.key()).await, 404);
    }
}

#[actix_web::test]
async fn another_tenants_message_is_404_and_never_listed() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let globex = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0011")})).await;
    let theirs = inbound(&app, &acme.channel, "0712340021", "Hi").await;
    for m in [&messages[0], &theirs] {
        for reference in [str_of(m, "uid").to_owned(), m["id"].to_string()] {
            let res = app.get(&format!("/api/v3/sms/{reference}"), globex.key()).await;
            crate::framework::assert_error(&res, 404);
        }
    }
    let list = app.get(MESSAGES, globex.key()).await;
    assert_eq!(total(&list), 0, "{}", list.body);
    for filter in ["status=sent", "direction=inbound", &format!("recipient={}", tz("0011"))] {
        let list = app.get(&format!("{MESSAGES}?{filter}"), globex.key()).await;
        assert_eq!(total(&list), 0, "{filter}: {}", list.body);
    }
    // Their own messages are theirs alone.
    send(&app, globex.key(), json!({"recipient": tz("0011")})).await;
    assert_eq!(total(&app.get(MESSAGES, globex.key()).await), 1);
    assert_eq!(total(&app.get(MESSAGES, acme.key()).await), 2);
}

#[actix_web::test]
async fn the_message_list_is_newest_first_with_standard_pagination() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let first: Vec<String> = (100..125).map(|n| tz(&format!("{n:04}"))).collect();
    let older = send(&app, acme.key(), json!({"recipients": first})).await;
    let newest = send(&app, acme.key(), json!({"recipient": tz("0200")})).await;
    let mut expected: Vec<String> = older.iter().chain(&newest).map(|m| str_of(m, "uid").to_owned()).rev().collect();

    let page = app.get(MESSAGES, acme.key()).await;
    assert_status(&page, 200);
    assert_eq!(
        page.data()["pagination"],
        json!({"current_page": 1, "per_page": 20, "last_page": 2, "total": 26, "has_more_pages": true})
    );
    assert_eq!(uids(&page), expected[..20]);
    let page = app.get(&format!("{MESSAGES}?page=2"), acme.key()).await;
    assert_eq!(uids(&page), expected[20..]);
    assert_eq!(page.data()["pagination"]["has_more_pages"], false);
    let page = app.get(&format!("{MESSAGES}?limit=5&page=3"), acme.key()).await;
    assert_eq!(uids(&page), expected[10..15]);
    assert_eq!(page.data()["pagination"]["last_page"], 6);
    // `limit` wins over `per_page`; the cap is 100; a non-positive size is the default.
    let page = app.get(&format!("{MESSAGES}?per_page=3&limit=4"), acme.key()).await;
    assert_eq!(page.data()["pagination"]["per_page"], 4);
    let page = app.get(&format!("{MESSAGES}?per_page=7"), acme.key()).await;
    assert_eq!(page.data()["pagination"]["per_page"], 7);
    let page = app.get(&format!("{MESSAGES}?limit=1000"), acme.key()).await;
    assert_eq!(page.data()["pagination"]["per_page"], 100);
    assert_eq!(uids(&page).len(), 26);
    let page = app.get(&format!("{MESSAGES}?limit=0"), acme.key()).await;
    assert_eq!(page.data()["pagination"]["per_page"], 20);
    let page = app.get(&format!("{MESSAGES}?page=9"), acme.key()).await;
    assert!(items(&page).is_empty());
    crate::framework::assert_error(&app.get(&format!("{MESSAGES}?page=two"), acme.key()).await, 422);
    // Dispatch changes no order.
    app.run_jobs().await;
    expected.truncate(20);
    assert_eq!(uids(&app.get(MESSAGES, acme.key()).await), expected);
}

#[actix_web::test]
async fn the_message_list_filters_by_status_direction_channel_type_and_recipient() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipients": [tz("0011"), tz("0001"), tz("0002"), "12345"]})).await;
    let [ok, refused, quiet, invalid] = [0, 1, 2, 3].map(|i| str_of(&messages[i], "uid").to_owned());
    app.advance(time::Duration::seconds(2)).await;
    let received = inbound(&app, &acme.channel, "0712340011", "Thanks").await;
    let received = str_of(&received, "uid").to_owned();
    let filtered = |query: String| {
        let app = &app;
        let key = acme.key().to_owned();
        async move {
            let res = app.get(&format!("{MESSAGES}?{query}"), &key).await;
            assert_status(&res, 200);
            let mut got = uids(&res);
            got.sort();
            got
        }
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(filtered("status=delivered".into()).await, std::slice::from_ref(&ok));
    assert_eq!(filtered("status=failed".into()).await, sorted(vec![refused.clone(), invalid.clone()]));
    assert_eq!(filtered("status=sent".into()).await, std::slice::from_ref(&quiet));
    assert_eq!(filtered("status=received".into()).await, std::slice::from_ref(&received));
    assert!(filtered("status=queued".into()).await.is_empty());
    assert_eq!(filtered("direction=inbound".into()).await, std::slice::from_ref(&received));
    assert_eq!(filtered("direction=outbound".into()).await.len(), 4);
    assert_eq!(filtered("channel_type=sms".into()).await.len(), 5);
    assert!(filtered("channel_type=chat".into()).await.is_empty());
    // The recipient in any common form; an invalid one as it was typed.
    for form in [tz("0011"), "%2B255712340011".to_owned(), "255712340011".to_owned(), "712340011".to_owned()] {
        assert_eq!(filtered(format!("recipient={form}")).await, std::slice::from_ref(&ok), "{form}");
    }
    assert_eq!(filtered("recipient=12345".into()).await, std::slice::from_ref(&invalid));
    assert!(filtered(format!("recipient={}", tz("0099"))).await.is_empty());
    // Filters combine.
    assert_eq!(filtered(format!("status=failed&recipient={}", tz("0001"))).await, std::slice::from_ref(&refused));
    assert!(filtered("status=received&direction=outbound".into()).await.is_empty());
    // An unknown or foreign campaign matches nothing.
    assert!(filtered("campaign=cmp_nope".into()).await.is_empty());
    assert!(filtered("campaign=12345".into()).await.is_empty());
    // Empty filters are no filters.
    assert_eq!(filtered("status=&direction=".into()).await.len(), 5);
}

#[actix_web::test]
async fn unknown_filter_values_are_422() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    for (query, field) in [
        ("status=cancelled", "status"),
        ("status=Sent", "status"),
        ("direction=sideways", "direction"),
        ("channel_type=email", "channel_type"),
    ] {
        let res = app.get(&format!("{MESSAGES}?{query}"), acme.key()).await;
        assert_field_error(&res, field);
    }
}

#[actix_web::test]
async fn the_message_list_needs_communications_messages_view_and_an_issuer() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    send(&app, acme.key(), json!({"recipient": tz("0011")})).await;
    let user = app.user(acme.tenant(), "contacts.view").await;
    let key = app.key(acme.tenant(), user).await;
    crate::framework::assert_error(&app.get(MESSAGES, &key).await, 403);
    app.set_permissions(user, "communications.messages.view").await;
    let res = app.get(MESSAGES, &key).await;
    assert_status(&res, 200);
    assert_eq!(total(&res), 1);
    app.set_permissions(user, "contacts.view").await;
    crate::framework::assert_error(&app.get(MESSAGES, &key).await, 403);
    let legacy = app.legacy_key(acme.tenant()).await;
    crate::framework::assert_error(&app.get(MESSAGES, &legacy).await, 403);
    crate::framework::assert_error(&app.request("GET", MESSAGES, None, None).await, 401);
}

#[actix_web::test]
async fn legacy_keys_may_send_read_a_message_and_list_senders_only() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let legacy = app.legacy_key(acme.tenant()).await;
    let res = app.post(SEND, &legacy, json!({"recipient": tz("0011"), "message": "Old key"})).await;
    assert_status(&res, 201);
    let uid = str_of(&res.data()["messages"][0], "uid").to_owned();
    assert_eq!(res.data()["messages"][0]["status"], "sent");
    assert_eq!(read(&app, &legacy, &uid).await["body"], "Old key");
    assert_status(&app.get("/api/v3/sms/senders", &legacy).await, 200);
    // Routes beyond the contract need an issuer.
    crate::framework::assert_error(&app.get(MESSAGES, &legacy).await, 403);
    crate::framework::assert_error(&app.get(BLACKLIST, &legacy).await, 403);
    crate::framework::assert_error(&app.post(BLACKLIST, &legacy, json!({"numbers": [tz("0021")]})).await, 403);
    app.post(BLACKLIST, acme.key(), json!({"numbers": [tz("0021")]})).await;
    crate::framework::assert_error(&app.delete(&format!("{BLACKLIST}/{}", tz("0021")), &legacy).await, 403);
    assert_eq!(total(&app.get(BLACKLIST, acme.key()).await), 1, "the legacy key changed nothing");
}

#[actix_web::test]
async fn send_read_and_senders_need_no_particular_permission() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    // contract: "Legacy messaging ... tenant credential only, no per-action map"
    let user = app.user(acme.tenant(), "contacts.view").await;
    let key = app.key(acme.tenant(), user).await;
    let messages = send(&app, &key, json!({"recipient": tz("0011")})).await;
    read(&app, &key, str_of(&messages[0], "uid")).await;
    assert_status(&app.get("/api/v3/sms/senders", &key).await, 200);
}

// --- senders ------------------------------------------------------------------------------------

#[actix_web::test]
async fn senders_lists_only_usable_identities() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let t = acme.tenant();
    add_sender(&app.pool, t, "main", "phone_number", "+255222110000", "approved").await;
    add_sender(&app.pool, t, "main", "short_code", "15000", "approved").await;
    add_sender(&app.pool, t, "main", "sender_id", "PEND", "pending").await;
    add_sender(&app.pool, t, "main", "sender_id", "REJ", "rejected").await;
    add_sender(&app.pool, t, "main", "short_code", "15999", "inactive").await;
    add_sender(&app.pool, t, "main", "phone_number", "+255222110001", "approved").await;
    sql_exec(&app.pool, "UPDATE senders SET sms_capable = false WHERE value = '+255222110001'").await;
    let off = sandbox_channel(&app.pool, t, "off", None).await;
    add_sender(&app.pool, t, "off", "sender_id", "OFFLINE", "approved").await;
    sql_exec(&app.pool, &format!("UPDATE channels SET status = 'disabled' WHERE id = {}", off.id)).await;
    let chat = messaging::channels::NewChannel {
        kind: "chat".into(),
        provider: "sandbox".into(),
        code: Some("chat".into()),
        ..Default::default()
    };
    add_channel(&app.pool, t, chat).await;
    add_sender(&app.pool, t, "chat", "phone_number", "+255222110002", "approved").await;
    let globex = sms_account(&app, "all").await;
    add_sender(&app.pool, globex.tenant(), "main", "sender_id", "GLOBEX", "approved").await;

    let res = app.get("/api/v3/sms/senders", acme.key()).await;
    assert_status(&res, 200);
    let mut listed = items(&res);
    listed.sort_by_key(|s| (str_of(s, "type").to_owned(), str_of(s, "value").to_owned()));
    assert_eq!(
        listed,
        [
            json!({"type": "phone_number", "value": "+255222110000", "label": "phone_number +255222110000", "status": "approved"}),
            json!({"type": "sender_id", "value": "ACME", "label": "Acme", "status": "approved"}),
            json!({"type": "short_code", "value": "15000", "label": "short_code 15000", "status": "approved"}),
        ]
    );
    // Each listed value is usable as sender_id; the others are not.
    for s in &listed {
        let res = app.post(SEND, acme.key(), json!({"recipient": tz("0011"), "sender_id": s["value"]})).await;
        assert_status(&res, 201);
    }
    for value in ["PEND", "REJ", "15999", "+255222110001", "OFFLINE", "+255222110002", "GLOBEX"] {
        let res = app.post(SEND, acme.key(), json!({"recipient": tz("0011"), "sender_id": value})).await;
        assert_field_error(&res, "sender_id");
    }
}

#[actix_web::test]
async fn an_account_without_channels_has_no_senders() {
    let app = spawn().await;
    let account = app.account("all").await;
    let res = app.get("/api/v3/sms/senders", &account.key).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["items"], json!([]));
}

// --- blacklist ----------------------------------------------------------------------------------

#[actix_web::test]
async fn the_blacklist_adds_lists_and_removes_numbers_in_any_form() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let res = app
        .post(
            BLACKLIST,
            acme.key(),
            json!({"numbers": [tz("0051"), "+255712340052", "255712340051"], "reason": "Asked by phone"}),
        )
        .await;
    assert_status(&res, 201);
    let added = items(&res);
    let numbers: Vec<&str> = added.iter().map(|e| str_of(e, "number")).collect();
    assert_eq!(numbers, [e164("0051"), e164("0052")]);
    for e in &added {
        assert_eq!(e["reason"], "Asked by phone");
        assert!(e["source_message_uid"].is_null());
        super::support::time_of(e, "created_at");
    }
    let list = app.get(BLACKLIST, acme.key()).await;
    assert_status(&list, 200);
    assert_eq!(total(&list), 2);
    assert_eq!(list.data()["pagination"]["per_page"], 20);

    let res = app.delete(&format!("{BLACKLIST}/{}", tz("0051")), acme.key()).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["deleted"], true);
    crate::framework::assert_error(&app.delete(&format!("{BLACKLIST}/{}", tz("0051")), acme.key()).await, 404);
    // A `+` travels percent-encoded.
    assert_status(&app.delete(&format!("{BLACKLIST}/%2B255712340052"), acme.key()).await, 200);
    assert_eq!(total(&app.get(BLACKLIST, acme.key()).await), 0);
    // Off the list, the number gets messages again.
    assert_eq!(send(&app, acme.key(), json!({"recipient": tz("0051")})).await[0]["status"], "sent");
}

#[actix_web::test]
async fn the_blacklist_is_newest_first_and_paginated() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    for n in ["0061", "0062", "0063"] {
        assert_status(&app.post(BLACKLIST, acme.key(), json!({"numbers": [tz(n)]})).await, 201);
        app.clock.advance(time::Duration::seconds(1));
    }
    let list = app.get(&format!("{BLACKLIST}?limit=2"), acme.key()).await;
    let numbers: Vec<String> = items(&list).iter().map(|e| str_of(e, "number").to_owned()).collect();
    assert_eq!(numbers, [e164("0063"), e164("0062")]);
    assert_eq!(list.data()["pagination"]["last_page"], 2);
    let list = app.get(&format!("{BLACKLIST}?limit=2&page=2"), acme.key()).await;
    assert_eq!(items(&list)[0]["number"], e164("0061"));
}

#[actix_web::test]
async fn adding_a_listed_number_again_keeps_its_first_reason_and_proof() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let stop = inbound(&app, &acme.channel, "0712340071", "STOP").await;
    let res = app.post(BLACKLIST, acme.key(), json!({"numbers": [tz("0071")], "reason": "manual"})).await;
    assert_status(&res, 201);
    let entry = &items(&res)[0];
    assert_eq!(entry["source_message_uid"], stop["uid"]);
    assert_ne!(entry["reason"], "manual");
    assert_eq!(total(&app.get(BLACKLIST, acme.key()).await), 1);
}

#[actix_web::test]
async fn blacklist_bodies_are_validated_and_all_or_nothing() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    for body in [json!({"numbers": []}), json!({"numbers": [tz("0081"), "not a number"]}), json!({"numbers": ["12"]})] {
        let res = app.post(BLACKLIST, acme.key(), body.clone()).await;
        assert_field_error(&res, "numbers");
    }
    let res = app.post(BLACKLIST, acme.key(), json!({"numbers": [tz("0081")], "reason": "r".repeat(256)})).await;
    assert_field_error(&res, "reason");
    let res = app.post(BLACKLIST, acme.key(), json!({"reason": "none"})).await;
    crate::framework::assert_error(&res, 422);
    let many: Vec<String> = (0..1001).map(|n| format!("0713{n:06}")).collect();
    let res = app.post(BLACKLIST, acme.key(), json!({"numbers": many})).await;
    assert_field_error(&res, "numbers");
    assert_eq!(total(&app.get(BLACKLIST, acme.key()).await), 0, "nothing added by a refused body");
    let res = app.post(BLACKLIST, acme.key(), json!({"numbers": [tz("0081")], "reason": "r".repeat(255)})).await;
    assert_status(&res, 201);
    // Removing something that is no number at all is not found, not an error of ours.
    crate::framework::assert_error(&app.delete(&format!("{BLACKLIST}/abc"), acme.key()).await, 404);
    crate::framework::assert_error(&app.delete(&format!("{BLACKLIST}/{}", tz("0082")), acme.key()).await, 404);
}

#[actix_web::test]
async fn the_blacklist_needs_contacts_view_to_read_and_contacts_edit_to_change() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    app.post(BLACKLIST, acme.key(), json!({"numbers": [tz("0091")]})).await;
    let viewer_user = app.user(acme.tenant(), "contacts.view").await;
    let viewer = app.key(acme.tenant(), viewer_user).await;
    assert_eq!(total(&app.get(BLACKLIST, &viewer).await), 1);
    crate::framework::assert_error(&app.post(BLACKLIST, &viewer, json!({"numbers": [tz("0092")]})).await, 403);
    crate::framework::assert_error(&app.delete(&format!("{BLACKLIST}/{}", tz("0091")), &viewer).await, 403);

    let editor_user = app.user(acme.tenant(), "contacts.edit").await;
    let editor = app.key(acme.tenant(), editor_user).await;
    crate::framework::assert_error(&app.get(BLACKLIST, &editor).await, 403);
    assert_status(&app.post(BLACKLIST, &editor, json!({"numbers": [tz("0092")]})).await, 201);
    assert_status(&app.delete(&format!("{BLACKLIST}/{}", tz("0091")), &editor).await, 200);

    let nobody_user = app.user(acme.tenant(), "communications.messages.view").await;
    let nobody = app.key(acme.tenant(), nobody_user).await;
    crate::framework::assert_error(&app.get(BLACKLIST, &nobody).await, 403);
    let list = app.get(BLACKLIST, acme.key()).await;
    let numbers: Vec<String> = items(&list).iter().map(|e| str_of(e, "number").to_owned()).collect();
    assert_eq!(numbers, [e164("0092")]);
}

#[actix_web::test]
async fn each_tenant_has_its_own_blacklist() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let globex = sms_account(&app, "all").await;
    assert_status(&app.post(BLACKLIST, acme.key(), json!({"numbers": [tz("0095")]})).await, 201);
    assert_eq!(total(&app.get(BLACKLIST, globex.key()).await), 0);
    crate::framework::assert_error(&app.delete(&format!("{BLACKLIST}/{}", tz("0095")), globex.key()).await, 404);
    assert_eq!(total(&app.get(BLACKLIST, acme.key()).await), 1, "another tenant cannot take it off");
    assert_eq!(send(&app, globex.key(), json!({"recipient": tz("0095")})).await[0]["status"], "sent");
    assert_eq!(send(&app, acme.key(), json!({"recipient": tz("0095")})).await[0]["status"], "failed");
    // Globex listing the same number is its own entry.
    assert_status(&app.post(BLACKLIST, globex.key(), json!({"numbers": [tz("0095")], "reason": "theirs"})).await, 201);
    assert_status(&app.delete(&format!("{BLACKLIST}/{}", tz("0095")), globex.key()).await, 200);
    assert_eq!(total(&app.get(BLACKLIST, acme.key()).await), 1);
}

#[actix_web::test]
async fn every_sms_route_needs_a_key() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let messages = send(&app, acme.key(), json!({"recipient": tz("0011")})).await;
    let message = format!("/api/v3/sms/{}", str_of(&messages[0], "uid"));
    let blacklisted = format!("{BLACKLIST}/{}", tz("0011"));
    for (method, path, body) in [
        ("POST", SEND, Some(json!({"recipient": tz("0012")}))),
        ("GET", message.as_str(), None),
        ("GET", "/api/v3/sms/senders", None),
        ("GET", MESSAGES, None),
        ("GET", BLACKLIST, None),
        ("POST", BLACKLIST, Some(json!({"numbers": [tz("0011")]}))),
        ("DELETE", blacklisted.as_str(), None),
    ] {
        let res = app.request(method, path, None, body.clone()).await;
        crate::framework::assert_error(&res, 401);
        let res = app.request(method, path, Some("not-a-key"), body).await;
        crate::framework::assert_error(&res, 401);
    }
    assert_eq!(app.sandbox().count(), 1);
    assert_eq!(total(&app.get(BLACKLIST, acme.key()).await), 0);
}
