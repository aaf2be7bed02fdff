//! SMS campaigns (issue 3, Campaigns; contract: Campaign, Campaign status, SMS campaign body):
//! creation rules, group resolution, personalization, skips, batching and counts, pause and
//! resume, cancel, scheduling, routing failures, permissions and tenant isolation, through HTTP
//! with the sandbox provider and the test's manual clock.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Resp, TestApp, json, spawn, spawn_with_messaging, sql_exec, sql_rows};
use diesel_async::RunQueryDsl;
use gateway::cli::admin::{AdminCommand, WalletCommand};
use kernel::TenantId;
use messaging::MessagingConfig;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime, UtcOffset};

use super::sms_account;

pub const CAMPAIGN: &str = "/api/v3/sms/campaign";
const BALANCE: &str = "/api/v3/balance";
const BLACKLIST: &str = "/api/v3/sms/blacklist";
/// What `sms_account` puts in the wallet, and its price per segment.
const CREDIT: i64 = 100_000;
const PRICE: i64 = 100;

// --- support ----------------------------------------------------------------------------------

/// A valid Tanzanian mobile number, national form with the trunk 0. Keep `n` in 100..=9999 so
/// no number ends in the sandbox's magic `0001`/`0002`/`0003`.
fn number(n: u32) -> String {
    format!("0712{n:06}")
}

/// The E.164 form of [`number`].
fn e164(n: u32) -> String {
    format!("+255712{n:06}")
}

/// A number ending in the sandbox's magic four digits (`0001` refused, `0002` no receipt,
/// `0003` failed receipt).
fn magic(last4: &str) -> (String, String) {
    (format!("071299{last4}"), format!("+25571299{last4}"))
}

#[track_caller]
fn assert_status(res: &Resp, status: u16) {
    assert_eq!(res.status, status, "expected {status}, got {}: {}", res.status, res.body);
}

/// A v3 error envelope with `status`.
#[track_caller]
fn assert_error(res: &Resp, status: u16) {
    assert_status(res, status);
    assert_eq!(res.body["status"], "error", "{}", res.body);
    assert!(res.body["message"].as_str().is_some_and(|m| !m.trim().is_empty()), "a message: {}", res.body);
}

/// A 422 whose `errors` names `field`.
#[track_caller]
fn assert_field_error(res: &Resp, field: &str) {
    assert_error(res, 422);
    assert!(
        res.body["errors"][field].as_array().is_some_and(|m| !m.is_empty() && m.iter().all(Value::is_string)),
        "errors should name {field:?}: {}",
        res.body
    );
}

fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_else(|| panic!("{key} is a string in {value}"))
}

fn int_of(value: &Value, key: &str) -> i64 {
    value[key].as_i64().unwrap_or_else(|| panic!("{key} is an integer in {value}"))
}

fn time_of(value: &Value, key: &str) -> OffsetDateTime {
    OffsetDateTime::parse(str_of(value, key), &Rfc3339).unwrap_or_else(|e| panic!("{key} is RFC 3339 in {value}: {e}"))
}

/// `(status, total_recipients, sent_count, failed_count)` of a campaign.
fn counts(campaign: &Value) -> (String, i64, i64, i64) {
    (
        str_of(campaign, "status").to_owned(),
        int_of(campaign, "total_recipients"),
        int_of(campaign, "sent_count"),
        int_of(campaign, "failed_count"),
    )
}

fn state(status: &str, total: i64, sent: i64, failed: i64) -> (String, i64, i64, i64) {
    (status.to_owned(), total, sent, failed)
}

/// Creates a contact group, 201 expected.
async fn group<S, B>(app: &TestApp<S>, key: &str, name: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post("/api/v3/contact-groups", key, json!({"name": name})).await;
    assert_status(&res, 201);
    res.data().clone()
}

/// Adds contacts (contact bodies) to a group through the batch route, every row accepted.
async fn add_contacts<S, B>(app: &TestApp<S>, key: &str, group: &Value, rows: Vec<Value>) -> Vec<Value>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let count = rows.len();
    let path = format!("/api/v3/contact-groups/{}/contacts/batch", group["id"]);
    let res = app.post(&path, key, json!({"contacts": rows})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["created"], json!(count), "{}", res.body);
    res.data()["results"].as_array().expect("results").clone()
}

/// A group holding `Person n` at [`number`]`(n)` for each `n`.
async fn group_of<S, B>(app: &TestApp<S>, key: &str, name: &str, people: impl IntoIterator<Item = u32>) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let group = group(app, key, name).await;
    let rows: Vec<Value> =
        people.into_iter().map(|n| json!({"PHONE": number(n), "name": format!("Person {n}")})).collect();
    if !rows.is_empty() {
        add_contacts(app, key, &group, rows).await;
    }
    group
}

/// `POST /sms/campaign`, 201 expected: `data.campaigns`.
async fn create<S, B>(app: &TestApp<S>, key: &str, body: Value) -> Vec<Value>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(CAMPAIGN, key, body).await;
    assert_status(&res, 201);
    assert_eq!(res.body["status"], "success", "{}", res.body);
    res.data()["campaigns"].as_array().unwrap_or_else(|| panic!("data.campaigns in {}", res.body)).clone()
}

/// A campaign to one group with `message`.
async fn create_one<S, B>(app: &TestApp<S>, key: &str, group: &Value, message: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let campaigns = create(app, key, json!({"contact_list_id": group["id"].to_string(), "message": message})).await;
    assert_eq!(campaigns.len(), 1, "{campaigns:?}");
    campaigns[0].clone()
}

/// `GET /campaign/{uid}/view`, 200 expected.
async fn view<S, B>(app: &TestApp<S>, key: &str, campaign: &Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("/api/v3/campaign/{}/view", str_of(campaign, "uid")), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

fn action(campaign: &Value, what: &str) -> String {
    format!("/api/v3/campaign/{}/{what}", str_of(campaign, "uid"))
}

/// The campaign's messages through `GET /messages?campaign=` (at most 100).
async fn messages_of<S, B>(app: &TestApp<S>, key: &str, campaign: &Value) -> Vec<Value>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("/api/v3/messages?campaign={}&limit=100", str_of(campaign, "uid")), key).await;
    assert_status(&res, 200);
    assert!(res.data()["pagination"]["total"].as_i64().is_some_and(|t| t <= 100), "{}", res.body);
    res.data()["items"].as_array().expect("items").clone()
}

/// `recipient -> message` of a campaign's messages.
fn by_recipient(messages: &[Value]) -> std::collections::BTreeMap<String, Value> {
    messages.iter().map(|m| (str_of(m, "recipient").to_owned(), m.clone())).collect()
}

async fn balance<S, B>(app: &TestApp<S>, key: &str) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(BALANCE, key).await;
    assert_status(&res, 200);
    int_of(res.data(), "balance_minor")
}

/// Puts numbers on the account blacklist.
async fn blacklist<S, B>(app: &TestApp<S>, key: &str, numbers: &[String])
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(BLACKLIST, key, json!({"numbers": numbers, "reason": "asked"})).await;
    assert_status(&res, 201);
}

/// The tenant's `campaign.*` events: `(name, payload)`, oldest first.
async fn campaign_events(pool: &store::Pool, tenant: TenantId) -> Vec<(String, Value)> {
    let sql = format!(
        "SELECT name, payload, occurred_at, created_at FROM events
         WHERE tenant_id = {} AND name LIKE 'campaign.%' ORDER BY occurred_at, created_at",
        tenant.0
    );
    sql_rows(pool, &sql).await.into_iter().map(|r| (str_of(&r, "name").to_owned(), r["payload"].clone())).collect()
}

/// The campaign's debits in the wallet ledger, oldest first (one per dispatch batch).
async fn batch_debits(pool: &store::Pool, campaign: &Value) -> Vec<i64> {
    let sql = format!(
        "SELECT id, amount_minor FROM wallet_ledger WHERE kind = 'debit' AND note LIKE 'Campaign {}:%' ORDER BY id",
        str_of(campaign, "uid")
    );
    sql_rows(pool, &sql).await.iter().map(|r| int_of(r, "amount_minor")).collect()
}

/// `(contact_id, messages)` of a campaign, from the table: one row per contact messaged.
async fn messages_per_contact(pool: &store::Pool, campaign: &Value) -> Vec<(i64, i64)> {
    let sql = format!(
        "SELECT contact_id, count(*) AS n FROM messages WHERE campaign_id = {} GROUP BY contact_id ORDER BY contact_id",
        int_of(campaign, "id")
    );
    sql_rows(pool, &sql).await.iter().map(|r| (int_of(r, "contact_id"), int_of(r, "n"))).collect()
}

/// The ids of a group's contacts.
async fn contact_ids(pool: &store::Pool, group: &Value) -> Vec<i64> {
    let sql = format!("SELECT id FROM contacts WHERE group_id = {} ORDER BY id", int_of(group, "id"));
    sql_rows(pool, &sql).await.iter().map(|r| int_of(r, "id")).collect()
}

/// Sets a prepaid wallet to exactly `minor`.
async fn set_balance(pool: &store::Pool, tenant: TenantId, minor: i64) {
    let mut conn = store::connect_system(pool).await.expect("connection");
    let now = accounts::wallet::get(&mut conn, tenant).await.expect("wallet").balance_minor;
    if now > minor {
        accounts::wallet::debit(&mut conn, tenant, now - minor, "test: drain").await.expect("debit").expect("enough");
    } else if now < minor {
        accounts::wallet::credit(&mut conn, tenant, minor - now, Some("test: fill")).await.expect("credit");
    }
}

/// A top-up the way an operator makes it: `gateway admin wallet credit`.
async fn admin_top_up(url: &str, tenant: TenantId, amount_minor: i64) {
    let command = AdminCommand::Wallet(WalletCommand::Credit { tenant: tenant.0, amount_minor, note: None });
    crate::admin_cli::admin(url, command).await.expect("wallet credit");
}

/// A top-up that does not tell paused campaigns (only their periodic check finds it).
async fn silent_top_up(pool: &store::Pool, tenant: TenantId, amount_minor: i64) {
    let mut conn = store::connect_system(pool).await.expect("connection");
    accounts::wallet::credit(&mut conn, tenant, amount_minor, Some("test: silent top-up")).await.expect("credit");
}

fn small_batches(size: i64) -> MessagingConfig {
    MessagingConfig { campaign_batch: size, ..MessagingConfig::default() }
}

/// The numbers the sandbox was asked to send to, sorted.
fn sandbox_numbers(sent: &[providers::SandboxSms]) -> Vec<String> {
    let mut numbers: Vec<String> = sent.iter().map(|s| s.to.clone()).collect();
    numbers.sort();
    numbers
}

// --- creation, the whole way through -----------------------------------------------------------

#[actix_web::test]
async fn a_campaign_messages_every_contact_once_counts_and_completes() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let customers = group_of(&app, acme.key(), "Customers", [101, 102, 103]).await;

    let res = app
        .post(CAMPAIGN, acme.key(), json!({"contact_list_id": customers["id"].to_string(), "message": "Sale today"}))
        .await;
    assert_status(&res, 201);
    assert_eq!(res.body["status"], "success");
    let campaigns = res.data()["campaigns"].as_array().expect("data.campaigns").clone();
    assert_eq!(campaigns.len(), 1, "one campaign per group: {campaigns:?}");
    let c = &campaigns[0];
    assert!(c["id"].as_i64().is_some_and(|id| id > 0), "{c}");
    assert!(str_of(c, "uid").starts_with("cmp_"), "{c}");
    assert_eq!(c["name"], "Customers", "the group's name by default");
    assert_eq!(c["status"], "draft", "created without a schedule: draft");
    assert_eq!(c["status_reason"], Value::Null);
    assert_eq!(c["channel_type"], "sms");
    assert_eq!(c["tenant_channel_id"], json!(acme.channel.id));
    assert_eq!(c["channel_code"], "main");
    assert_eq!(c["message"], "Sale today");
    assert_eq!(c["sender"], "ACME", "the channel's approved sender id");
    assert_eq!(c["scheduled_at"], Value::Null, "null when started immediately");
    assert_eq!(counts(c), state("draft", 3, 0, 0));
    assert_eq!(c["contact_group"], json!({"id": customers["id"], "uid": customers["uid"], "name": "Customers"}), "{c}");
    time_of(c, "created_at");
    time_of(c, "updated_at");
    assert_eq!(c["completed_at"], Value::Null);
    assert_eq!(app.sandbox().count(), 0, "nothing is sent before the jobs run");

    app.run_jobs().await;
    let done = view(&app, acme.key(), c).await;
    assert_eq!(counts(&done), state("completed", 3, 3, 0), "{done}");
    assert!(time_of(&done, "completed_at") >= time_of(c, "created_at"), "{done}");
    assert_eq!(done["uid"], c["uid"]);
    assert_eq!(done["contact_group"], c["contact_group"]);

    // Every contact exactly once, through the provider, billed once.
    assert_eq!(app.sandbox().calls(), 3, "one provider call per contact");
    assert_eq!(sandbox_numbers(&app.sandbox().sent()), [e164(101), e164(102), e164(103)]);
    assert!(app.sandbox().sent().iter().all(|s| s.body == "Sale today" && s.from.as_deref() == Some("ACME")));
    let messages = messages_of(&app, acme.key(), c).await;
    assert_eq!(messages.len(), 3);
    for m in &messages {
        assert_eq!(m["status"], "sent", "{m}");
        assert_eq!(m["direction"], "outbound");
        assert_eq!(m["channel_type"], "sms");
        assert_eq!(m["sender"], "ACME");
        assert_eq!(m["body"], "Sale today");
        assert_eq!(m["tenant_channel_id"], json!(acme.channel.id));
        assert!(str_of(m, "gateway_message_id").starts_with("sbx_"), "{m}");
    }
    let per_contact = messages_per_contact(&app.pool, c).await;
    let ids = contact_ids(&app.pool, &customers).await;
    assert_eq!(per_contact, ids.iter().map(|id| (*id, 1)).collect::<Vec<_>>(), "one message per contact");
    assert_eq!(balance(&app, acme.key()).await, CREDIT - 3 * PRICE);

    // campaign.completed, once, with the campaign and a reason member.
    let events = campaign_events(&app.pool, acme.tenant()).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let (name, payload) = &events[0];
    assert_eq!(name, "campaign.completed");
    assert_eq!(payload["campaign"]["uid"], c["uid"]);
    assert_eq!(payload["campaign"]["id"], c["id"]);
    assert_eq!(counts(&payload["campaign"]), state("completed", 3, 3, 0), "{payload}");
    assert!(payload.as_object().is_some_and(|p| p.contains_key("reason")), "{payload}");
    let sent_events = sql_rows(
        &app.pool,
        &format!("SELECT payload FROM events WHERE tenant_id = {} AND name = 'message.sent'", acme.tenant().0),
    )
    .await;
    assert_eq!(sent_events.len(), 3, "a message.sent event per message: {sent_events:?}");

    // Delivery goes on after completion; the campaign stays completed.
    app.advance(Duration::seconds(2)).await;
    let later = view(&app, acme.key(), c).await;
    assert_eq!(counts(&later), state("completed", 3, 3, 0));
    assert!(messages_of(&app, acme.key(), c).await.iter().all(|m| m["status"] == "delivered"));
    assert_eq!(campaign_events(&app.pool, acme.tenant()).await.len(), 1, "completed is emitted once");
}

#[actix_web::test]
async fn view_takes_the_uid_or_the_numeric_id() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let g = group_of(&app, acme.key(), "G", [110]).await;
    let c = create_one(&app, acme.key(), &g, "Hi").await;
    let by_uid = app.get(&format!("/api/v3/campaign/{}/view", str_of(&c, "uid")), acme.key()).await;
    assert_status(&by_uid, 200);
    let by_id = app.get(&format!("/api/v3/campaign/{}/view", c["id"]), acme.key()).await;
    assert_status(&by_id, 200);
    assert_eq!(by_uid.data()["uid"], c["uid"]);
    assert_eq!(by_id.data()["uid"], c["uid"]);
    for unknown in ["cmp_nope", "999999999", "0"] {
        assert_error(&app.get(&format!("/api/v3/campaign/{unknown}/view"), acme.key()).await, 404);
    }
}

// --- creation rules ------------------------------------------------------------------------------

#[actix_web::test]
async fn each_field_is_checked_and_a_refused_request_creates_nothing() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let g = group_of(&app, acme.key(), "G", [120]).await;
    let id = g["id"].to_string();
    let ok = |extra: Value| {
        let mut body = json!({"contact_list_id": id, "message": "Hi"});
        for (k, v) in extra.as_object().expect("object") {
            body[k] = v.clone();
        }
        body
    };
    let cases: Vec<(Value, &str)> = vec![
        (ok(json!({"contact_list_id": format!("{id}{}", " ".repeat(2_001 - id.len()))})), "contact_list_id"),
        (ok(json!({"message": "a".repeat(4_097)})), "message"),
        (ok(json!({"sender_id": "S".repeat(65)})), "sender_id"),
        (ok(json!({"name": "n".repeat(161)})), "name"),
        (ok(json!({"schedule_time": format!("2030-01-01T09:00:00+03:00{}", " ".repeat(76))})), "schedule_time"),
        (json!({"message": "Hi"}), "contact_list_id"),
        (ok(json!({"contact_list_id": ""})), "contact_list_id"),
        (json!({"contact_list_id": id}), "message"),
        (ok(json!({"message": ""})), "message"),
        (ok(json!({"message": "   "})), "message"),
        (ok(json!({"schedule_time": "tomorrow"})), "schedule_time"),
        (ok(json!({"schedule_time": "2030-01-01T09:00:00"})), "schedule_time"),
        (ok(json!({"schedule_time": "2030-01-01"})), "schedule_time"),
        (ok(json!({"schedule_time": "2030-13-01T09:00:00Z"})), "schedule_time"),
        (ok(json!({"sender_id": "NOPE"})), "sender_id"),
    ];
    for (body, field) in cases {
        let res = app.post(CAMPAIGN, acme.key(), body.clone()).await;
        assert_eq!(res.status, 422, "{body} -> {}", res.body);
        assert_field_error(&res, field);
    }
    // A sender identity that is not approved is no sender.
    let mut conn = app.conn().await;
    let pending = messaging::channels::NewSender {
        channel: "main".into(),
        kind: "sender_id".into(),
        value: "LATER".into(),
        label: None,
        status: Some("pending".into()),
    };
    messaging::channels::add_sender(&mut conn, acme.tenant(), pending).await.expect("sender");
    drop(conn);
    assert_field_error(&app.post(CAMPAIGN, acme.key(), ok(json!({"sender_id": "LATER"}))).await, "sender_id");
    let none = sql_rows(&app.pool, &format!("SELECT id FROM campaigns WHERE tenant_id = {}", acme.tenant().0)).await;
    assert!(none.is_empty(), "a refused request creates nothing: {none:?}");

    // Exactly at the limits is fine.
    let at_limits = ok(json!({
        "contact_list_id": format!("{id}{}", " ".repeat(2_000 - id.len())),
        "message": "m".repeat(4_096),
        "sender_id": "ACME",
        "name": "n".repeat(160),
        "schedule_time": format!("2030-01-01T09:00:00+03:00{}", " ".repeat(75)),
    }));
    let created = create(&app, acme.key(), at_limits).await;
    assert_eq!(created.len(), 1);
    assert_eq!(created[0]["name"], "n".repeat(160));
    assert_eq!(created[0]["message"], "m".repeat(4_096));
    assert_eq!(created[0]["status"], "scheduled");
}

#[actix_web::test]
async fn a_mistyped_body_is_422() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let g = group_of(&app, acme.key(), "G", [125]).await;
    let res = app.post(CAMPAIGN, acme.key(), json!({"contact_list_id": g["id"].to_string(), "message": 5})).await;
    assert_error(&res, 422);
    let res = app.post(CAMPAIGN, acme.key(), json!([])).await;
    assert_error(&res, 422);
}

// --- group resolution ------------------------------------------------------------------------------

#[actix_web::test]
async fn groups_resolve_by_id_or_uid_with_any_separator_once_each_in_the_order_named() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let a = group_of(&app, acme.key(), "Alpha", [130]).await;
    let b = group_of(&app, acme.key(), "Bravo", [131, 132]).await;
    let c = group_of(&app, acme.key(), "Charlie", [133]).await;
    let (a_id, b_id, c_id) = (a["id"].to_string(), b["id"].to_string(), c["id"].to_string());
    let (a_uid, b_uid) = (str_of(&a, "uid"), str_of(&b, "uid"));
    let c_uid_upper = str_of(&c, "uid").to_uppercase();
    let list = format!("{b_uid},{a_id}; {c_uid_upper}\n{a_uid}\t{b_id};;,{a_id}  {c_id}");
    let campaigns = create(&app, acme.key(), json!({"contact_list_id": list, "message": "Hello"})).await;
    let names: Vec<&str> = campaigns.iter().map(|c| str_of(c, "name")).collect();
    assert_eq!(names, ["Bravo", "Alpha", "Charlie"], "one per group, duplicates collapsed, in the order named");
    let groups: Vec<&Value> = campaigns.iter().map(|c| &c["contact_group"]["id"]).collect();
    assert_eq!(groups, [&b["id"], &a["id"], &c["id"]]);
    let totals: Vec<i64> = campaigns.iter().map(|c| int_of(c, "total_recipients")).collect();
    assert_eq!(totals, [2, 1, 1]);
    let uids: std::collections::BTreeSet<&str> = campaigns.iter().map(|c| str_of(c, "uid")).collect();
    assert_eq!(uids.len(), 3, "distinct campaigns");

    app.run_jobs().await;
    for campaign in &campaigns {
        assert_eq!(view(&app, acme.key(), campaign).await["status"], "completed");
    }
    assert_eq!(app.sandbox().count(), 4, "each contact of each group once");

    // A given name names every campaign of the request.
    let named = create(
        &app,
        acme.key(),
        json!({"contact_list_id": format!("{a_id} {b_id}"), "message": "Hi", "name": "Promo"}),
    )
    .await;
    assert_eq!(named.iter().map(|c| str_of(c, "name")).collect::<Vec<_>>(), ["Promo", "Promo"]);
    // A blank name is no name.
    let blank = create(&app, acme.key(), json!({"contact_list_id": a_id, "message": "Hi", "name": "  "})).await;
    assert_eq!(blank[0]["name"], "Alpha");
}

#[actix_web::test]
async fn an_id_written_with_leading_zeros_keeps_its_place_in_the_order_named() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let a = group_of(&app, acme.key(), "Alpha", [135]).await;
    let b = group_of(&app, acme.key(), "Bravo", [136]).await;
    // "007" is the numeric id 7; it resolves, and it was named second.
    let list = format!("{},00{}", b["id"], a["id"]);
    let campaigns = create(&app, acme.key(), json!({"contact_list_id": list, "message": "Hi"})).await;
    let names: Vec<&str> = campaigns.iter().map(|c| str_of(c, "name")).collect();
    assert_eq!(names, ["Bravo", "Alpha"], "one per group, in the order named (docs/api.md, Campaigns)");
}

#[actix_web::test]
async fn unresolved_inactive_and_foreign_groups_are_skipped_and_none_resolved_is_404() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let other = sms_account(&app, "all").await;
    let a = group_of(&app, acme.key(), "Alpha", [140]).await;
    let dormant = group_of(&app, acme.key(), "Dormant", [141]).await;
    let res = app
        .patch(&format!("/api/v3/contact-groups/{}", dormant["id"]), acme.key(), json!({"status": "inactive"}))
        .await;
    assert_status(&res, 200);
    let foreign = group_of(&app, other.key(), "Theirs", [142]).await;
    let random = uuid::Uuid::new_v4();

    let nothing = [
        " ,; ".to_owned(),
        "999999999".to_owned(),
        "nonsense".to_owned(),
        random.to_string(),
        dormant["id"].to_string(),
        str_of(&dormant, "uid").to_owned(),
        foreign["id"].to_string(),
        str_of(&foreign, "uid").to_owned(),
        format!("999999999, nonsense; {random} {} {}", dormant["id"], foreign["id"]),
    ];
    for list in &nothing {
        let res = app.post(CAMPAIGN, acme.key(), json!({"contact_list_id": list, "message": "Hi"})).await;
        assert_error(&res, 404);
    }
    let none = sql_rows(&app.pool, "SELECT id FROM campaigns").await;
    assert!(none.is_empty(), "nothing created: {none:?}");

    let list = format!(
        "999999999,nonsense,{random},{},{},{},{}",
        dormant["id"],
        foreign["id"],
        str_of(&foreign, "uid"),
        a["id"]
    );
    let campaigns = create(&app, acme.key(), json!({"contact_list_id": list, "message": "Hi"})).await;
    assert_eq!(campaigns.len(), 1, "only the active group of the account: {campaigns:?}");
    assert_eq!(campaigns[0]["contact_group"]["id"], a["id"]);
    app.run_jobs().await;
    assert_eq!(sandbox_numbers(&app.sandbox().sent()), [e164(140)], "nobody of the skipped groups");
}

// --- personalization and pricing ----------------------------------------------------------------

#[actix_web::test]
async fn every_variable_is_filled_from_the_contact_and_unknown_ones_are_empty() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let g = group(&app, acme.key(), "People").await;
    add_contacts(
        &app,
        acme.key(),
        &g,
        vec![
            json!({"PHONE": number(150), "name": "Asha", "city": "Arusha", "age": 42}),
            json!({"PHONE": "712345678", "country_code": "254", "name": "Juma", "city": "Nairobi"}),
            json!({"PHONE": number(151), "name": "Neema"}),
        ],
    )
    .await;
    let template = "Hi {{name}} ({{phone}}/{{phone_number}}/+{{country_code}}) in {{cf:city}}{{cf:missing}}{{unknown}} {{ cf:age }}!";
    let c = create_one(&app, acme.key(), &g, template).await;
    assert_eq!(c["message"], template, "the campaign keeps the text before personalization");
    app.run_jobs().await;
    assert_eq!(counts(&view(&app, acme.key(), &c).await), state("completed", 3, 3, 0));

    let expected = [
        (e164(150), "Hi Asha (255712000150/712000150/+255) in Arusha 42!".to_owned()),
        ("+254712345678".to_owned(), "Hi Juma (254712345678/712345678/+254) in Nairobi !".to_owned()),
        (e164(151), "Hi Neema (255712000151/712000151/+255) in  !".to_owned()),
    ];
    let messages = by_recipient(&messages_of(&app, acme.key(), &c).await);
    let sent = app.sandbox().sent();
    assert_eq!(messages.len(), 3);
    for (to, body) in &expected {
        assert_eq!(messages[to]["body"], json!(body), "stored body for {to}");
        let at_provider: Vec<&str> = sent.iter().filter(|s| &s.to == to).map(|s| s.body.as_str()).collect();
        assert_eq!(at_provider, [body.as_str()], "what the provider got for {to}");
    }
}

#[actix_web::test]
async fn each_message_is_priced_on_its_own_personalized_text() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let g = group(&app, acme.key(), "People").await;
    add_contacts(
        &app,
        acme.key(),
        &g,
        vec![
            json!({"PHONE": number(160), "name": "Ali"}),
            json!({"PHONE": number(161), "name": "A".repeat(170)}),
            json!({"PHONE": number(162), "name": "Zoë 😀"}),
            json!({"PHONE": "712345678", "country_code": "254", "name": "Juma"}),
        ],
    )
    .await;
    // A destination with its own rate.
    {
        let mut conn = app.conn().await;
        messaging::channels::set_rate(&mut conn, acme.tenant(), Some("254"), 3 * PRICE).await.expect("rate");
    }
    let c = create_one(&app, acme.key(), &g, "Hi {{name}}").await;
    app.run_jobs().await;
    let messages = by_recipient(&messages_of(&app, acme.key(), &c).await);
    let short = &messages[&e164(160)];
    let long = &messages[&e164(161)];
    let unicode = &messages[&e164(162)];
    assert_eq!(
        (int_of(short, "segments"), short["encoding"].clone(), int_of(short, "price_minor")),
        (1, json!("gsm7"), PRICE)
    );
    assert_eq!(
        (int_of(long, "segments"), long["encoding"].clone(), int_of(long, "price_minor")),
        (2, json!("gsm7"), 2 * PRICE)
    );
    assert_eq!(unicode["encoding"], "ucs2", "{unicode}");
    assert_eq!(int_of(unicode, "price_minor"), PRICE * int_of(unicode, "segments"));
    assert_eq!(int_of(&messages["+254712345678"], "price_minor"), 3 * PRICE, "the Kenyan rate");
    assert_eq!(balance(&app, acme.key()).await, CREDIT - 7 * PRICE);
    assert_eq!(batch_debits(&app.pool, &c).await, [7 * PRICE], "one debit for the batch, of every price");
}

// --- skips and total_recipients -------------------------------------------------------------------

#[actix_web::test]
async fn blacklisted_and_numberless_contacts_are_skipped_but_unsubscribed_ones_are_messaged() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let g = group(&app, acme.key(), "Mixed").await;
    let results = add_contacts(
        &app,
        acme.key(),
        &g,
        vec![
            json!({"PHONE": number(170), "name": "Plain"}),
            json!({"PHONE": number(171), "name": "Unsubscribed", "is_subscribed": false}),
            json!({"PHONE": number(172), "name": "Opted out"}),
            json!({"PHONE": number(173), "name": "No number"}),
        ],
    )
    .await;
    blacklist(&app, acme.key(), &[number(172)]).await;
    // No route makes a contact without a number; the store can hold one (imports of old data).
    let numberless = str_of(&results[3], "uid");
    sql_exec(
        &app.pool,
        &format!("UPDATE contacts SET phone_number = '', full_phone_number = '' WHERE uid = '{numberless}'"),
    )
    .await;

    let c = create_one(&app, acme.key(), &g, "Hi {{name}}").await;
    assert_eq!(c["total_recipients"], 2, "after the skips, unsubscribed included: {c}");
    let read_group = app.get(&format!("/api/v3/contact-groups/{}", g["id"]), acme.key()).await;
    assert_eq!(read_group.data()["subscribed_count"], 3, "which differs from the group's subscribed_count");
    app.run_jobs().await;
    assert_eq!(counts(&view(&app, acme.key(), &c).await), state("completed", 2, 2, 0));
    assert_eq!(sandbox_numbers(&app.sandbox().sent()), [e164(170), e164(171)]);
    let bodies: Vec<String> = app.sandbox().sent().iter().map(|s| s.body.clone()).collect();
    assert!(bodies.contains(&"Hi Unsubscribed".to_owned()), "{bodies:?}");
    let messages = messages_of(&app, acme.key(), &c).await;
    assert_eq!(messages.len(), 2, "no record for skipped contacts: {messages:?}");
    assert_eq!(balance(&app, acme.key()).await, CREDIT - 2 * PRICE);
}

#[actix_web::test]
async fn a_group_with_nobody_to_message_completes_with_zero_recipients() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let empty = group(&app, acme.key(), "Empty").await;
    let opted = group_of(&app, acme.key(), "All opted out", [175, 176]).await;
    blacklist(&app, acme.key(), &[number(175), e164(176)]).await;
    let campaigns = create(
        &app,
        acme.key(),
        json!({"contact_list_id": format!("{},{}", empty["id"], opted["id"]), "message": "Hi"}),
    )
    .await;
    assert_eq!(campaigns.len(), 2);
    app.run_jobs().await;
    for c in &campaigns {
        assert_eq!(counts(&view(&app, acme.key(), c).await), state("completed", 0, 0, 0));
    }
    assert_eq!(app.sandbox().calls(), 0);
    assert_eq!(balance(&app, acme.key()).await, CREDIT);
}

// --- batching and counts --------------------------------------------------------------------------

#[actix_web::test]
async fn dispatch_writes_one_batch_per_job_and_one_message_per_contact() {
    let app = spawn_with_messaging(small_batches(2)).await;
    let acme = sms_account(&app, "all").await;
    let five = group_of(&app, acme.key(), "Five", 180..185).await;
    let four = group_of(&app, acme.key(), "Four", 190..194).await;
    let campaigns = create(
        &app,
        acme.key(),
        json!({"contact_list_id": format!("{} {}", five["id"], four["id"]), "message": "Hi {{name}}"}),
    )
    .await;
    app.run_jobs().await;
    let (c5, c4) = (&campaigns[0], &campaigns[1]);
    assert_eq!(counts(&view(&app, acme.key(), c5).await), state("completed", 5, 5, 0));
    assert_eq!(counts(&view(&app, acme.key(), c4).await), state("completed", 4, 4, 0), "a multiple of the batch");
    // One debit per batch: three batches of at most two contacts, then two.
    assert_eq!(batch_debits(&app.pool, c5).await, [2 * PRICE, 2 * PRICE, PRICE]);
    assert_eq!(batch_debits(&app.pool, c4).await, [2 * PRICE, 2 * PRICE]);
    for (c, g) in [(c5, &five), (c4, &four)] {
        let ids = contact_ids(&app.pool, g).await;
        assert_eq!(messages_per_contact(&app.pool, c).await, ids.iter().map(|id| (*id, 1)).collect::<Vec<_>>());
    }
    assert_eq!(app.sandbox().calls(), 9);
    assert_eq!(app.sandbox().count(), 9);
    assert_eq!(balance(&app, acme.key()).await, CREDIT - 9 * PRICE);
    let events = campaign_events(&app.pool, acme.tenant()).await;
    let completed: Vec<&Value> =
        events.iter().filter(|(n, _)| n == "campaign.completed").map(|(_, p)| &p["campaign"]["uid"]).collect();
    assert_eq!(completed.len(), 2, "{events:?}");
}

#[actix_web::test]
async fn counts_follow_what_the_provider_and_the_receipts_say() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let g = group(&app, acme.key(), "Magic").await;
    let (refused, refused_e164) = magic("0001");
    let (silent, silent_e164) = magic("0002");
    let (bounced, bounced_e164) = magic("0003");
    add_contacts(
        &app,
        acme.key(),
        &g,
        vec![
            json!({"PHONE": number(200), "name": "Fine"}),
            json!({"PHONE": refused, "name": "Refused"}),
            json!({"PHONE": silent, "name": "Silent"}),
            json!({"PHONE": bounced, "name": "Bounced"}),
        ],
    )
    .await;
    let c = create_one(&app, acme.key(), &g, "Hi").await;
    app.run_jobs().await;
    let after_send = view(&app, acme.key(), &c).await;
    assert_eq!(counts(&after_send), state("completed", 4, 3, 1), "a refusal counts as failed: {after_send}");
    let messages = by_recipient(&messages_of(&app, acme.key(), &c).await);
    assert_eq!(messages[&refused_e164]["status"], "failed");
    assert!(messages[&refused_e164]["error_message"].as_str().is_some_and(|e| !e.is_empty()));
    assert_eq!(balance(&app, acme.key()).await, CREDIT - 3 * PRICE, "the refused message is refunded");

    app.advance(Duration::seconds(2)).await;
    let after_receipts = view(&app, acme.key(), &c).await;
    assert_eq!(counts(&after_receipts), state("completed", 4, 2, 2), "a failed receipt moves sent to failed");
    let messages = by_recipient(&messages_of(&app, acme.key(), &c).await);
    assert_eq!(messages[&e164(200)]["status"], "delivered");
    assert_eq!(messages[&silent_e164]["status"], "sent");
    assert_eq!(messages[&bounced_e164]["status"], "failed");
}

// --- pause and resume -------------------------------------------------------------------------------

#[actix_web::test]
async fn a_wallet_that_cannot_pay_the_next_batch_pauses_and_a_top_up_resumes() {
    let app = spawn_with_messaging(small_batches(2)).await;
    let acme = sms_account(&app, "all").await;
    let g = group_of(&app, acme.key(), "Five", 210..215).await;
    set_balance(&app.pool, acme.tenant(), 3 * PRICE).await;
    let c = create_one(&app, acme.key(), &g, "Hi").await;
    app.run_jobs().await;
    let paused = view(&app, acme.key(), &c).await;
    assert_eq!(counts(&paused), state("paused", 5, 2, 0), "the first batch went, the second cannot be paid: {paused}");
    assert!(paused["status_reason"].as_str().is_some_and(|r| !r.trim().is_empty()), "{paused}");
    assert_eq!(paused["completed_at"], Value::Null);
    assert_eq!(app.sandbox().count(), 2);
    assert_eq!(balance(&app, acme.key()).await, PRICE, "nothing taken for the unpaid batch");

    // A contact added while paused is not part of the campaign (it started before).
    add_contacts(&app, acme.key(), &g, vec![json!({"PHONE": number(219), "name": "Late"})]).await;
    // Waiting without money changes nothing.
    app.advance(Duration::seconds(61)).await;
    assert_eq!(counts(&view(&app, acme.key(), &c).await), state("paused", 5, 2, 0));

    admin_top_up(app.db.url(), acme.tenant(), 10 * PRICE).await;
    app.run_jobs().await;
    let done = view(&app, acme.key(), &c).await;
    assert_eq!(counts(&done), state("completed", 5, 5, 0), "the top-up resumed it at once: {done}");
    assert_eq!(done["status_reason"], Value::Null);
    assert_eq!(sandbox_numbers(&app.sandbox().sent()), (210..215).map(e164).collect::<Vec<_>>());
    assert_eq!(app.sandbox().calls(), 5, "nobody twice");
    assert_eq!(batch_debits(&app.pool, &c).await, [2 * PRICE, 2 * PRICE, PRICE]);
    assert_eq!(balance(&app, acme.key()).await, PRICE + 10 * PRICE - 3 * PRICE);
    // Later checks find nothing more to do.
    app.advance(Duration::seconds(120)).await;
    assert_eq!(app.sandbox().calls(), 5);
    let events = campaign_events(&app.pool, acme.tenant()).await;
    assert_eq!(events.iter().filter(|(n, _)| n == "campaign.completed").count(), 1, "{events:?}");
}

#[actix_web::test]
async fn a_wallet_holding_exactly_the_cost_completes_the_campaign() {
    let app = spawn_with_messaging(small_batches(2)).await;
    let acme = sms_account(&app, "all").await;
    let g = group_of(&app, acme.key(), "Four", 400..404).await;
    set_balance(&app.pool, acme.tenant(), 4 * PRICE).await;
    let c = create_one(&app, acme.key(), &g, "Hi").await;
    app.run_jobs().await;
    assert_eq!(counts(&view(&app, acme.key(), &c).await), state("completed", 4, 4, 0));
    assert_eq!(balance(&app, acme.key()).await, 0);
}

#[actix_web::test]
async fn contacts_gone_or_opted_out_before_their_batch_are_not_messaged_and_the_total_is_exact() {
    let app = spawn_with_messaging(small_batches(2)).await;
    let acme = sms_account(&app, "all").await;
    let g = group(&app, acme.key(), "Six").await;
    let rows: Vec<Value> = (410..416).map(|n| json!({"PHONE": number(n), "name": format!("Person {n}")})).collect();
    let results = add_contacts(&app, acme.key(), &g, rows).await;
    set_balance(&app.pool, acme.tenant(), 2 * PRICE).await;
    let c = create_one(&app, acme.key(), &g, "Hi").await;
    app.run_jobs().await;
    assert_eq!(counts(&view(&app, acme.key(), &c).await), state("paused", 6, 2, 0));

    // While it waits: one contact deleted, one number opted out.
    let gone = str_of(&results[3], "uid");
    let res = app.delete(&format!("/api/v3/contact-groups/{}/contacts/{gone}", g["id"]), acme.key()).await;
    assert_status(&res, 200);
    blacklist(&app, acme.key(), &[number(414)]).await;
    admin_top_up(app.db.url(), acme.tenant(), 10 * PRICE).await;
    app.run_jobs().await;
    let done = view(&app, acme.key(), &c).await;
    assert_eq!(counts(&done), state("completed", 4, 4, 0), "exact at completion: {done}");
    assert_eq!(sandbox_numbers(&app.sandbox().sent()), [e164(410), e164(411), e164(412), e164(415)]);
    assert_eq!(int_of(&done, "sent_count") + int_of(&done, "failed_count"), int_of(&done, "total_recipients"));
}

#[actix_web::test]
async fn a_paused_campaign_finds_a_silent_top_up_at_its_periodic_check() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let g = group_of(&app, acme.key(), "Three", 220..223).await;
    set_balance(&app.pool, acme.tenant(), PRICE).await;
    let c = create_one(&app, acme.key(), &g, "Hi").await;
    app.run_jobs().await;
    assert_eq!(counts(&view(&app, acme.key(), &c).await), state("paused", 3, 0, 0));
    assert_eq!(app.sandbox().count(), 0, "a batch is paid whole or not sent");

    silent_top_up(&app.pool, acme.tenant(), 10 * PRICE).await;
    app.run_jobs().await;
    app.advance(Duration::seconds(30)).await;
    assert_eq!(counts(&view(&app, acme.key(), &c).await), state("paused", 3, 0, 0), "not checked yet");
    app.advance(Duration::seconds(31)).await;
    assert_eq!(counts(&view(&app, acme.key(), &c).await), state("completed", 3, 3, 0), "the 60 s check resumed it");
    assert_eq!(app.sandbox().calls(), 3);
}

#[actix_web::test]
async fn resume_restarts_a_paused_campaign_at_once_and_only_a_paused_one() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let g = group_of(&app, acme.key(), "Three", 230..233).await;
    set_balance(&app.pool, acme.tenant(), PRICE).await;
    let c = create_one(&app, acme.key(), &g, "Hi").await;
    assert_error(&app.post(&action(&c, "resume"), acme.key(), json!({})).await, 409);
    app.run_jobs().await;
    assert_eq!(view(&app, acme.key(), &c).await["status"], "paused");

    // Resumed without money: it runs, then pauses again.
    let res = app.post(&action(&c, "resume"), acme.key(), json!({})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["uid"], c["uid"]);
    assert_eq!(res.data()["status"], "running");
    assert_eq!(res.data()["status_reason"], Value::Null);
    app.run_jobs().await;
    let again = view(&app, acme.key(), &c).await;
    assert_eq!(again["status"], "paused", "{again}");
    assert!(again["status_reason"].is_string());

    silent_top_up(&app.pool, acme.tenant(), 10 * PRICE).await;
    let by_id = app.post(&format!("/api/v3/campaign/{}/resume", c["id"]), acme.key(), json!({})).await;
    assert_status(&by_id, 200);
    assert_eq!(by_id.data()["status"], "running");
    app.run_jobs().await;
    assert_eq!(counts(&view(&app, acme.key(), &c).await), state("completed", 3, 3, 0));
    assert_eq!(app.sandbox().calls(), 3);
    assert_error(&app.post(&action(&c, "resume"), acme.key(), json!({})).await, 409);
    // The old periodic checks find nothing to do.
    app.advance(Duration::seconds(180)).await;
    assert_eq!(app.sandbox().calls(), 3);
    assert_eq!(batch_debits(&app.pool, &c).await, [3 * PRICE]);
}

// --- cancel -------------------------------------------------------------------------------------------

#[actix_web::test]
async fn cancel_fails_and_refunds_what_was_not_handed_over_and_it_is_never_sent() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    // One message a second, so the rest wait in the queue.
    sql_exec(&app.pool, &format!("UPDATE channels SET throughput_per_second = 1 WHERE id = {}", acme.channel.id)).await;
    let g = group_of(&app, acme.key(), "Four", 240..244).await;
    let c = create_one(&app, acme.key(), &g, "Hi").await;
    app.run_jobs().await;
    let running = view(&app, acme.key(), &c).await;
    assert_eq!(counts(&running), state("running", 4, 1, 0), "{running}");
    assert_eq!(app.sandbox().count(), 1);
    assert_eq!(balance(&app, acme.key()).await, CREDIT - 4 * PRICE);

    let res = app.post(&action(&c, "cancel"), acme.key(), json!({})).await;
    assert_status(&res, 200);
    let cancelled = res.data().clone();
    assert_eq!(counts(&cancelled), state("cancelled", 4, 1, 3), "{cancelled}");
    assert!(cancelled["status_reason"].as_str().is_some_and(|r| !r.is_empty()), "{cancelled}");
    assert_eq!(balance(&app, acme.key()).await, CREDIT - PRICE, "the three unsent are refunded");
    let messages = messages_of(&app, acme.key(), &c).await;
    let failed: Vec<&Value> = messages.iter().filter(|m| m["status"] == "failed").collect();
    assert_eq!(failed.len(), 3, "{messages:?}");
    assert!(failed.iter().all(|m| m["error_message"].as_str().is_some_and(|e| e.contains("cancelled"))), "{failed:?}");
    let failed_events = sql_rows(
        &app.pool,
        &format!("SELECT payload FROM events WHERE tenant_id = {} AND name = 'message.failed'", acme.tenant().0),
    )
    .await;
    assert_eq!(failed_events.len(), 3, "a message.failed event per cancelled message: {failed_events:?}");

    // Time passes: the queued sends find nothing to send.
    app.advance(Duration::seconds(5)).await;
    app.advance(Duration::seconds(120)).await;
    assert_eq!(app.sandbox().calls(), 1, "cancelled messages never reach the provider");
    assert_eq!(counts(&view(&app, acme.key(), &c).await), state("cancelled", 4, 1, 3));
    assert_eq!(balance(&app, acme.key()).await, CREDIT - PRICE);
    let events = campaign_events(&app.pool, acme.tenant()).await;
    assert!(events.iter().all(|(n, _)| n != "campaign.completed"), "{events:?}");

    assert_error(&app.post(&action(&c, "cancel"), acme.key(), json!({})).await, 409);
    assert_error(&app.post(&action(&c, "resume"), acme.key(), json!({})).await, 409);
}

#[actix_web::test]
async fn cancel_stops_a_scheduled_or_paused_campaign_and_refuses_a_completed_one() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let g = group_of(&app, acme.key(), "Two", 250..252).await;
    let at = (app.clock.now() + Duration::hours(1)).format(&Rfc3339).expect("format");
    let scheduled = create(
        &app,
        acme.key(),
        json!({"contact_list_id": g["id"].to_string(), "message": "Later", "schedule_time": at}),
    )
    .await
    .remove(0);
    let res = app.post(&action(&scheduled, "cancel"), acme.key(), json!({})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["status"], "cancelled");
    app.advance(Duration::hours(2)).await;
    assert_eq!(view(&app, acme.key(), &scheduled).await["status"], "cancelled");
    assert_eq!(app.sandbox().calls(), 0, "a cancelled schedule never runs");

    set_balance(&app.pool, acme.tenant(), 0).await;
    let paused = create_one(&app, acme.key(), &g, "Hi").await;
    app.run_jobs().await;
    assert_eq!(view(&app, acme.key(), &paused).await["status"], "paused");
    assert_status(&app.post(&action(&paused, "cancel"), acme.key(), json!({})).await, 200);
    admin_top_up(app.db.url(), acme.tenant(), 10 * PRICE).await;
    app.advance(Duration::seconds(61)).await;
    assert_eq!(view(&app, acme.key(), &paused).await["status"], "cancelled", "a top-up does not revive it");
    assert_eq!(app.sandbox().calls(), 0);

    let done = create_one(&app, acme.key(), &g, "Hi").await;
    app.run_jobs().await;
    assert_eq!(view(&app, acme.key(), &done).await["status"], "completed");
    assert_error(&app.post(&action(&done, "cancel"), acme.key(), json!({})).await, 409);
}

// --- scheduling ---------------------------------------------------------------------------------------

#[actix_web::test]
async fn a_scheduled_campaign_runs_only_when_due_with_the_contacts_of_that_moment() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let g = group_of(&app, acme.key(), "Three", 260..263).await;
    let due = app.clock.now() + Duration::hours(1);
    let east_africa = UtcOffset::from_hms(3, 0, 0).expect("offset");
    let at = due.to_offset(east_africa).format(&Rfc3339).expect("format");
    let c =
        create(&app, acme.key(), json!({"contact_list_id": g["id"].to_string(), "message": "Hi", "schedule_time": at}))
            .await
            .remove(0);
    assert_eq!(c["status"], "scheduled");
    assert_eq!(time_of(&c, "scheduled_at"), due, "{c}");
    assert_eq!(c["total_recipients"], 3, "estimated at creation");

    app.run_jobs().await;
    app.advance(Duration::minutes(59)).await;
    assert_eq!(view(&app, acme.key(), &c).await["status"], "scheduled");
    assert_eq!(app.sandbox().calls(), 0, "nothing before the due time");

    // Opt-outs before the due time apply.
    blacklist(&app, acme.key(), &[number(261)]).await;
    app.advance(Duration::minutes(2)).await;
    let done = view(&app, acme.key(), &c).await;
    assert_eq!(counts(&done), state("completed", 2, 2, 0), "{done}");
    assert_eq!(time_of(&done, "scheduled_at"), due);
    assert_eq!(sandbox_numbers(&app.sandbox().sent()), [e164(260), e164(262)]);
}

#[actix_web::test]
async fn a_schedule_time_in_the_past_starts_now() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let g = group_of(&app, acme.key(), "One", [270]).await;
    let past = (app.clock.now() - Duration::hours(1)).format(&Rfc3339).expect("format");
    let c = create(
        &app,
        acme.key(),
        json!({"contact_list_id": g["id"].to_string(), "message": "Hi", "schedule_time": past}),
    )
    .await
    .remove(0);
    assert_eq!(c["status"], "draft");
    assert_eq!(c["scheduled_at"], Value::Null);
    app.run_jobs().await;
    assert_eq!(view(&app, acme.key(), &c).await["status"], "completed");
    assert_eq!(app.sandbox().calls(), 1);
}

// --- no route -----------------------------------------------------------------------------------------

#[actix_web::test]
async fn without_a_route_the_campaign_is_created_cancelled_and_campaign_failed_is_emitted() {
    let app = spawn().await;
    let bare = app.account("all").await;
    {
        let mut conn = app.conn().await;
        accounts::wallet::credit(&mut conn, bare.tenant, CREDIT, None).await.expect("credit");
    }
    let g = group_of(&app, &bare.key, "G", [280, 281]).await;
    let c = create_one(&app, &bare.key, &g, "Hi").await;
    assert_eq!(c["status"], "cancelled");
    assert!(c["status_reason"].as_str().is_some_and(|r| r.to_lowercase().contains("route")), "{c}");
    assert_eq!(c["tenant_channel_id"], Value::Null);
    app.run_jobs().await;
    assert_eq!(view(&app, &bare.key, &c).await["status"], "cancelled");
    assert_eq!(app.sandbox().calls(), 0);
    assert!(
        sql_rows(&app.pool, &format!("SELECT id FROM messages WHERE tenant_id = {}", bare.tenant.0)).await.is_empty()
    );
    let events = campaign_events(&app.pool, bare.tenant).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].0, "campaign.failed");
    assert_eq!(events[0].1["campaign"]["uid"], c["uid"]);
    assert_eq!(events[0].1["campaign"]["status"], "cancelled");
    assert!(events[0].1["reason"].as_str().is_some_and(|r| !r.is_empty()), "{:?}", events[0]);
    assert_eq!(balance(&app, &bare.key).await, CREDIT);

    // A disabled channel is no route either.
    let acme = sms_account(&app, "all").await;
    sql_exec(&app.pool, &format!("UPDATE channels SET status = 'disabled' WHERE id = {}", acme.channel.id)).await;
    let g = group_of(&app, acme.key(), "G", [282]).await;
    assert_eq!(create_one(&app, acme.key(), &g, "Hi").await["status"], "cancelled");
}

#[actix_web::test]
async fn a_route_lost_before_a_scheduled_campaign_is_due_cancels_it_when_due() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let g = group_of(&app, acme.key(), "G", [290, 291]).await;
    let at = (app.clock.now() + Duration::hours(1)).format(&Rfc3339).expect("format");
    let body =
        json!({"contact_list_id": g["id"].to_string(), "message": "Hi", "schedule_time": at, "sender_id": "ACME"});
    let c = create(&app, acme.key(), body).await.remove(0);
    assert_eq!(c["status"], "scheduled");
    sql_exec(&app.pool, &format!("UPDATE senders SET status = 'inactive' WHERE tenant_id = {}", acme.tenant().0)).await;
    app.advance(Duration::hours(2)).await;
    let after = view(&app, acme.key(), &c).await;
    assert_eq!(after["status"], "cancelled", "{after}");
    assert!(after["status_reason"].as_str().is_some_and(|r| !r.is_empty()));
    assert_eq!(app.sandbox().calls(), 0);
    let events = campaign_events(&app.pool, acme.tenant()).await;
    assert_eq!(events.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["campaign.failed"]);
}

// --- permissions, legacy keys, tenants --------------------------------------------------------------

#[actix_web::test]
async fn create_and_view_take_any_key_of_the_account_resume_and_cancel_need_communications_send() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let g = group_of(&app, acme.key(), "G", [300, 301]).await;
    let legacy = app.legacy_key(acme.tenant()).await;
    let viewer = app.user(acme.tenant(), "contacts.view").await;
    let viewer_key = app.key(acme.tenant(), viewer).await;
    let sender = app.user(acme.tenant(), "communications.send").await;
    let sender_key = app.key(acme.tenant(), sender).await;

    // Create and view: tenant credential routes, legacy keys included.
    let by_legacy = create_one(&app, &legacy, &g, "From an old key").await;
    let by_viewer = create_one(&app, &viewer_key, &g, "From a viewer").await;
    for key in [legacy.as_str(), viewer_key.as_str(), sender_key.as_str(), acme.key()] {
        assert_eq!(view(&app, key, &by_legacy).await["uid"], by_legacy["uid"]);
    }
    // The message list and resume/cancel are beyond the contract: issuer and permission.
    let list = format!("/api/v3/messages?campaign={}", str_of(&by_legacy, "uid"));
    assert_error(&app.get(&list, &legacy).await, 403);
    assert_error(&app.get(&list, &viewer_key).await, 403);
    for what in ["resume", "cancel"] {
        assert_error(&app.post(&action(&by_viewer, what), &legacy, json!({})).await, 403);
        assert_error(&app.post(&action(&by_viewer, what), &viewer_key, json!({})).await, 403);
    }
    assert_eq!(view(&app, acme.key(), &by_viewer).await["status"], "draft", "refusals change nothing");
    let res = app.post(&action(&by_viewer, "cancel"), &sender_key, json!({})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["status"], "cancelled");
    app.run_jobs().await;
    assert_eq!(view(&app, &legacy, &by_legacy).await["status"], "completed");
    assert_eq!(app.sandbox().calls(), 2, "only the campaign that was not cancelled");
}

#[actix_web::test]
async fn another_accounts_campaigns_and_groups_are_not_found() {
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let other = sms_account(&app, "all").await;
    let g = group_of(&app, acme.key(), "G", [310]).await;
    let c = create_one(&app, acme.key(), &g, "Hi").await;
    let id_path = format!("/api/v3/campaign/{}", c["id"]);
    let uid_path = format!("/api/v3/campaign/{}", str_of(&c, "uid"));
    for path in [&id_path, &uid_path] {
        assert_error(&app.get(&format!("{path}/view"), other.key()).await, 404);
        assert_error(&app.post(&format!("{path}/resume"), other.key(), json!({})).await, 404);
        assert_error(&app.post(&format!("{path}/cancel"), other.key(), json!({})).await, 404);
    }
    let list = app.get(&format!("/api/v3/messages?campaign={}", str_of(&c, "uid")), other.key()).await;
    assert_status(&list, 200);
    assert_eq!(list.data()["items"], json!([]));
    let res = app.post(CAMPAIGN, other.key(), json!({"contact_list_id": g["id"].to_string(), "message": "Hi"})).await;
    assert_error(&res, 404);
    let res = app.post(CAMPAIGN, other.key(), json!({"contact_list_id": g["uid"], "message": "Hi"})).await;
    assert_error(&res, 404);

    // The owner's campaign was untouched by the other account's attempts.
    app.run_jobs().await;
    assert_eq!(counts(&view(&app, acme.key(), &c).await), state("completed", 1, 1, 0));
    assert_eq!(app.sandbox().calls(), 1);
}

#[actix_web::test]
async fn a_campaign_names_only_a_group_of_its_own_account_and_loses_it_with_the_group() {
    // The campaign's group summary is read within the campaign's tenant, and the schema holds
    // the same rule: a campaign cannot be pointed at another account's group; deleting the
    // group clears the reference and nothing else (issue 14, tenancy in the schema).
    let app = spawn().await;
    let acme = sms_account(&app, "all").await;
    let other = sms_account(&app, "all").await;
    let g = group_of(&app, acme.key(), "Ours", [320]).await;
    let foreign = group_of(&app, other.key(), "Theirs", [321]).await;
    let c = create_one(&app, acme.key(), &g, "Hi").await;
    assert_eq!(c["contact_group"]["id"], g["id"]);

    let mut conn = store::connect_system(&app.pool).await.expect("connection");
    let pointed =
        diesel::sql_query(format!("UPDATE campaigns SET contact_group_id = {} WHERE id = {}", foreign["id"], c["id"]))
            .execute(&mut conn)
            .await;
    let error = pointed.expect_err("another account's group is refused").to_string();
    assert!(error.contains("foreign key"), "{error}");
    assert_eq!(view(&app, acme.key(), &c).await["contact_group"], c["contact_group"]);
    assert_error(&app.get(&format!("/api/v3/campaign/{}/view", str_of(&c, "uid")), other.key()).await, 404);

    let res = app.delete(&format!("/api/v3/contact-groups/{}?force=true", g["id"]), acme.key()).await;
    assert_status(&res, 200);
    let after = view(&app, acme.key(), &c).await;
    assert_eq!(after["contact_group"], Value::Null, "{after}");
    assert_eq!(after["uid"], c["uid"]);
    let rows = sql_rows(&app.pool, &format!("SELECT tenant_id FROM campaigns WHERE id = {}", c["id"])).await;
    assert_eq!(rows, [json!({"tenant_id": acme.tenant().0})]);
}
