//! Chat groups (issue 19; contract: Chat group, Chat group status, Chat groups): creation and
//! the provider's later confirmation (or failure), the create rules, the list and its filters,
//! changes and deletion, what the provider's signed group webhooks do (people joining and
//! leaving, join requests, settings, suspensions), the limit of eight, invitations, the invite
//! link, removals, group messages and their 24-hour window, pins, permissions, tenant
//! isolation, and the Cloud API's shape against a local fake of the Graph API.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{TestApp, json, spawn};
use kernel::TenantId;
use providers::chat::ChatContent;
use serde_json::Value;
use time::Duration;

use super::{
    APP_SECRET, BUSINESS, ChatAccount, PHONE_ID, WABA, add_account, chat_account, chat_id, deliver, delivery, e164,
};
use crate::framework::assert_error;
use crate::sms::support::{assert_field_error, assert_status, events, str_of, time_of};

const GROUPS: &str = "/api/v3/chat/groups";
const TEMPLATES: &str = "/api/v3/chat/templates";

/// `{GROUPS}/{id}{tail}`.
fn at(group: &Value, tail: &str) -> String {
    format!("{GROUPS}/{}{tail}", group["id"])
}

/// `POST /chat/groups`, 201 expected; the group.
async fn create<S, B>(app: &TestApp<S>, key: &str, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(GROUPS, key, body).await;
    assert_status(&res, 201);
    res.data().clone()
}

/// `GET /chat/groups/{id}`, 200 expected; the group.
async fn read<S, B>(app: &TestApp<S>, key: &str, group: &Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&at(group, ""), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// A group created and confirmed by the sandbox (its delay passed); the group, active.
async fn active_group<S, B>(app: &TestApp<S>, chat: &ChatAccount, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let created = create(app, chat.key(), body).await;
    app.advance(Duration::seconds(2)).await;
    let group = read(app, chat.key(), &created).await;
    assert_eq!(group["status"], "active", "{group}");
    group
}

/// The events `name` of one group, payloads in the order written.
async fn emitted(pool: &store::Pool, tenant: TenantId, name: &str, group: &Value) -> Vec<Value> {
    events(pool, tenant)
        .await
        .into_iter()
        .filter(|(n, p)| n == name && p["group"]["id"] == group["id"])
        .map(|(_, p)| p)
        .collect()
}

/// The names of every `group.*` event of the tenant.
async fn group_event_names(pool: &store::Pool, tenant: TenantId) -> Vec<String> {
    events(pool, tenant).await.into_iter().map(|(n, _)| n).filter(|n| n.starts_with("group.")).collect()
}

/// A signed delivery of a group webhook field carrying `groups` updates, as the provider posts it.
fn group_change(field: &str, groups: Value) -> Value {
    json!({"object": "whatsapp_business_account", "entry": [{"id": WABA, "changes": [{"field": field, "value": {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": BUSINESS.trim_start_matches('+'), "phone_number_id": PHONE_ID},
        "groups": groups,
    }}]}]})
}

fn provider_id(group: &Value) -> &str {
    str_of(group, "provider_group_id")
}

/// People joined (by the invite link).
fn joined(group: &Value, wa_ids: &[String]) -> Value {
    let added: Vec<Value> = wa_ids.iter().map(|w| json!({"wa_id": w})).collect();
    group_change(
        "group_participants_update",
        json!([{"timestamp": "1764230400", "group_id": provider_id(group), "type": "group_participants_add",
                "reason": "invite_link", "added_participants": added}]),
    )
}

/// People left (`initiated_by` `participant`) or were removed (`business`).
fn left(group: &Value, wa_ids: &[String], initiated_by: &str) -> Value {
    let removed: Vec<Value> = wa_ids.iter().map(|w| json!({"wa_id": w})).collect();
    group_change(
        "group_participants_update",
        json!([{"timestamp": "1764230401", "group_id": provider_id(group), "type": "group_participants_remove",
                "initiated_by": initiated_by, "removed_participants": removed}]),
    )
}

fn join_request(group: &Value, request_id: &str, wa_id: &str) -> Value {
    group_change(
        "group_participants_update",
        json!([{"timestamp": "1764230402", "group_id": provider_id(group), "type": "group_join_request_created",
                "reason": "invite_link", "join_request_id": request_id, "wa_id": wa_id}]),
    )
}

fn join_request_revoked(group: &Value, request_id: &str, wa_id: &str) -> Value {
    group_change(
        "group_participants_update",
        json!([{"timestamp": "1764230403", "group_id": provider_id(group), "type": "group_join_request_revoked",
                "join_request_id": request_id, "wa_id": wa_id}]),
    )
}

fn status_change(group: &Value, kind: &str) -> Value {
    group_change(
        "group_status_update",
        json!([{"timestamp": "1764230404", "type": kind, "group_id": provider_id(group)}]),
    )
}

/// A participant's text written in the group.
fn group_text(group: &Value, from: &str, wamid: &str, text: &str) -> Value {
    delivery(json!({
        "contacts": [{"profile": {"name": "Asha"}, "wa_id": from}],
        "messages": [{"from": from, "group_id": provider_id(group), "id": wamid, "timestamp": "1764230400",
                      "type": "text", "text": {"body": text}}],
    }))
}

/// Delivers `body` signed with the app secret; 200 expected; the webhook's answer.
async fn hook<S, B>(app: &TestApp<S>, chat: &ChatAccount, body: &Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = deliver(app, &chat.hook(), Some(APP_SECRET), body).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// A stored template `name` (language `sw`); approved by the sandbox's review when `approve`,
/// a draft never submitted otherwise.
async fn template<S, B>(app: &TestApp<S>, key: &str, name: &str, approve: bool) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let body = json!({
        "name": name,
        "language": "sw",
        "category": "UTILITY",
        "body": "Habari {{1}}, jiunge na kikundi chetu: {{2}}",
        "variable_samples": {"1": "Amina", "2": "https://chat.whatsapp.com/abc"},
        "submit": approve,
    });
    let res = app.post(TEMPLATES, key, body).await;
    assert_status(&res, 201);
    let t = res.data().clone();
    if !approve {
        assert_eq!(t["chat_status"], Value::Null, "a draft: {t}");
        return t;
    }
    app.clock.advance(Duration::seconds(3));
    let res = app.post(&format!("{TEMPLATES}/{}/refresh", t["id"]), key, json!({})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["chat_status"], "approved", "{}", res.body);
    assert_eq!(res.data()["sendable"], true, "{}", res.body);
    res.data().clone()
}

fn ids(list: &Value) -> Vec<i64> {
    list["items"].as_array().into_iter().flatten().filter_map(|g| g["id"].as_i64()).collect()
}

fn id(group: &Value) -> i64 {
    group["id"].as_i64().unwrap_or_else(|| panic!("a numeric id in {group}"))
}

#[actix_web::test]
async fn a_group_is_created_then_confirmed_active_with_its_invite_link() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let res = app.post(GROUPS, chat.key(), json!({"subject": "Wateja VIP", "description": "Ofa kwanza"})).await;
    assert_status(&res, 201);
    let g = res.data().clone();
    assert!(g["id"].is_i64(), "{g}");
    assert_eq!(g["status"], "creating", "{g}");
    assert_eq!(g["subject"], "Wateja VIP");
    assert_eq!(g["description"], "Ofa kwanza");
    assert_eq!(g["join_approval_mode"], "auto_approve", "the default: {g}");
    assert_eq!(g["participants_count"], 1, "the business: {g}");
    assert_eq!(g["provider_group_id"], Value::Null, "{g}");
    assert_eq!(g["invite_link"], Value::Null, "{g}");
    assert_eq!(g["sender_id"], PHONE_ID, "the default number: {g}");
    assert_eq!(g["failure"], Value::Null);
    assert_eq!(g["invites"], json!([]));
    assert!(group_event_names(&app.pool, chat.tenant()).await.is_empty(), "nothing at the 201");

    // the provider has not confirmed it yet
    app.advance(Duration::milliseconds(500)).await;
    assert_eq!(read(&app, chat.key(), &g).await["status"], "creating");

    app.advance(Duration::seconds(1)).await;
    let active = read(&app, chat.key(), &g).await;
    assert_eq!(active["status"], "active", "{active}");
    let link = str_of(&active, "invite_link").to_owned();
    let at_provider = app.messaging.gateways().chat_sandbox().group(provider_id(&active)).expect("the sandbox's group");
    assert_eq!(at_provider.subject, "Wateja VIP");
    assert_eq!(at_provider.description.as_deref(), Some("Ofa kwanza"));
    assert_eq!(at_provider.join_approval_mode, "auto_approve");
    assert_eq!(at_provider.phone_number_id, PHONE_ID);
    assert_eq!(at_provider.invite_link.as_deref(), Some(link.as_str()));
    assert_eq!(active["participants_count"], 1);

    let created = emitted(&app.pool, chat.tenant(), "group.created", &g).await;
    assert_eq!(created.len(), 1, "{created:?}");
    let summary = &created[0]["group"];
    assert_eq!(summary["id"], g["id"]);
    assert_eq!(summary["status"], "active");
    assert_eq!(summary["participants_count"], 1);
    assert_eq!(summary["invite_link"], link.as_str());
    assert_eq!(summary["subject"], "Wateja VIP");
    assert_eq!(summary["description"], "Ofa kwanza");
    time_of(summary, "created_at");

    // later jobs change nothing and emit nothing more
    app.advance(Duration::seconds(5)).await;
    assert_eq!(read(&app, chat.key(), &g).await["invite_link"], link.as_str());
    assert_eq!(group_event_names(&app.pool, chat.tenant()).await, ["group.created"]);
}

#[actix_web::test]
async fn a_creation_the_provider_fails_is_failed_with_its_reason() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let g = create(&app, chat.key(), json!({"subject": "fail_kikundi"})).await;
    assert_eq!(g["status"], "creating");
    app.advance(Duration::seconds(2)).await;
    let failed = read(&app, chat.key(), &g).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["failure"], providers::chat_sandbox::GROUP_FAILED_REASON, "{failed}");
    assert_eq!(failed["provider_group_id"], Value::Null);
    assert_eq!(failed["invite_link"], Value::Null);

    let updated = emitted(&app.pool, chat.tenant(), "group.updated", &g).await;
    assert_eq!(updated.len(), 1, "{updated:?}");
    assert_eq!(updated[0]["group"]["status"], "failed");
    assert_eq!(group_event_names(&app.pool, chat.tenant()).await, ["group.updated"], "no group.created");
    // nothing can be done with it but deleting it
    assert_error(&app.patch(&at(&g, ""), chat.key(), json!({"subject": "Tena"})).await, 409);
}

#[actix_web::test]
async fn the_create_rules_refuse_bad_bodies_without_making_a_group() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let key = chat.key();
    let invitees = |n: usize| -> Vec<String> { (0..n).map(|i| e164(&format!("{:04}", 100 + i))).collect() };
    let cases = [
        (json!({}), "subject"),
        (json!({"subject": "   "}), "subject"),
        (json!({"subject": "s".repeat(129)}), "subject"),
        (json!({"subject": "Wateja", "description": "d".repeat(2_049)}), "description"),
        (json!({"subject": "Wateja", "join_approval_mode": "anyone"}), "join_approval_mode"),
        (json!({"subject": "Wateja", "invitees": invitees(8)}), "invitees"),
        (json!({"subject": "Wateja", "invitees": ["not a number"]}), "invitees.0"),
        (json!({"subject": "Wateja", "sender_id": "999000999"}), "sender_id"),
        (json!({"subject": "Wateja", "invite_template": "no_such_template"}), "invite_template"),
    ];
    for (body, field) in cases {
        let res = app.post(GROUPS, key, body.clone()).await;
        assert_field_error(&res, field);
    }
    let all = app.get(&format!("{GROUPS}?status=all"), key).await;
    assert_status(&all, 200);
    assert_eq!(all.data()["pagination"]["total"], 0, "no group was made: {}", all.body);
    assert!(app.messaging.gateways().chat_sandbox().groups().is_empty(), "nothing asked of the provider");

    // the limits themselves are allowed
    let longest = create(&app, key, json!({"subject": "s".repeat(128), "description": "d".repeat(2_048)})).await;
    assert_eq!(longest["subject"].as_str().map(|s| s.chars().count()), Some(128));
    assert_eq!(longest["description"].as_str().map(|s| s.chars().count()), Some(2_048));
    let seven = create(
        &app,
        key,
        json!({"subject": "Saba", "invitees": invitees(7), "join_approval_mode": "approval_required", "sender_id": PHONE_ID}),
    )
    .await;
    assert_eq!(seven["join_approval_mode"], "approval_required");
    assert_eq!(seven["invites"].as_array().map(Vec::len), Some(7), "{seven}");
    assert!(seven["invites"].as_array().into_iter().flatten().all(|i| i["status"] == "pending"), "{seven}");
    // the number itself names the sender too
    let by_number = create(&app, key, json!({"subject": "Kwa namba", "sender_id": BUSINESS})).await;
    assert_eq!(by_number["sender_id"], PHONE_ID);
    let listed = app.get(GROUPS, key).await;
    assert_eq!(listed.data()["pagination"]["total"], 3, "{}", listed.body);
}

#[actix_web::test]
async fn the_list_leaves_out_deleted_groups_unless_asked_and_filters_by_status_and_sender() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let key = chat.key();
    let active = create(&app, key, json!({"subject": "Hai"})).await;
    let failed = create(&app, key, json!({"subject": "fail_hii"})).await;
    let gone = create(&app, key, json!({"subject": "Itafutwa"})).await;
    app.advance(Duration::seconds(2)).await;
    assert_status(&app.delete(&at(&gone, ""), key).await, 200);
    let creating = create(&app, key, json!({"subject": "Bado"})).await;
    // a second number of the tenant, on another business account
    add_account(&app, chat.tenant(), "102290129340399", "106540352242923", "+255222000112").await;
    let other_number = create(&app, key, json!({"subject": "Namba nyingine", "sender_id": "106540352242923"})).await;
    assert_eq!(other_number["sender_id"], "106540352242923");

    let list = |query: &str| {
        let path = format!("{GROUPS}{query}");
        let app = &app;
        async move {
            let res = app.get(&path, key).await;
            assert_status(&res, 200);
            res.data().clone()
        }
    };
    let everyone = [id(&other_number), id(&creating), id(&failed), id(&active)];
    assert_eq!(ids(&list("").await), everyone, "newest first, deleted left out");
    assert_eq!(list("").await["pagination"]["total"], 4);
    assert_eq!(
        ids(&list("?status=all").await),
        [id(&other_number), id(&creating), id(&gone), id(&failed), id(&active)]
    );
    assert_eq!(ids(&list("?status=active").await), [id(&active)]);
    assert_eq!(ids(&list("?status=failed").await), [id(&failed)]);
    assert_eq!(ids(&list("?status=deleted").await), [id(&gone)]);
    assert_eq!(ids(&list("?status=creating").await), [id(&other_number), id(&creating)]);
    let deleted = &list("?status=deleted").await["items"][0];
    assert_eq!(deleted["status"], "deleted");
    time_of(deleted, "deleted_at");
    assert_field_error(&app.get(&format!("{GROUPS}?status=gone"), key).await, "status");

    assert_eq!(ids(&list("?sender_id=106540352242923").await), [id(&other_number)]);
    assert_eq!(ids(&list(&format!("?sender_id={PHONE_ID}")).await), [id(&creating), id(&failed), id(&active)]);
    assert_eq!(ids(&list(&format!("?sender_id={PHONE_ID}&status=all")).await).len(), 4);
    assert_eq!(ids(&list("?sender_id=555").await), Vec::<i64>::new());
}

#[actix_web::test]
async fn the_list_pages_by_twenty_and_at_most_a_hundred() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let mut made = Vec::new();
    for n in 0..21 {
        made.push(id(&create(&app, chat.key(), json!({"subject": format!("Kikundi {n}")})).await));
    }
    made.reverse();
    let first = app.get(GROUPS, chat.key()).await;
    assert_status(&first, 200);
    let pagination = &first.data()["pagination"];
    assert_eq!(pagination["per_page"], 20, "{pagination}");
    assert_eq!(pagination["total"], 21);
    assert_eq!(pagination["last_page"], 2);
    assert_eq!(pagination["has_more_pages"], true);
    assert_eq!(ids(first.data()), made[..20]);
    let second = app.get(&format!("{GROUPS}?page=2"), chat.key()).await;
    assert_eq!(ids(second.data()), made[20..]);
    assert_eq!(second.data()["pagination"]["has_more_pages"], false);
    let capped = app.get(&format!("{GROUPS}?per_page=500"), chat.key()).await;
    assert_eq!(capped.data()["pagination"]["per_page"], 100);
    assert_eq!(ids(capped.data()), made);
    let small = app.get(&format!("{GROUPS}?per_page=5&page=2"), chat.key()).await;
    assert_eq!(ids(small.data()), made[5..10]);
    assert_eq!(small.data()["pagination"]["last_page"], 5);
}

#[actix_web::test]
async fn a_patch_changes_the_subject_and_description_here_and_at_the_provider() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let key = chat.key();
    let g = active_group(&app, &chat, json!({"subject": "Wateja", "description": "Zamani"})).await;
    let sandbox = app.messaging.gateways().chat_sandbox();

    let res = app.patch(&at(&g, ""), key, json!({"subject": "Wateja wa Dhahabu"})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["subject"], "Wateja wa Dhahabu");
    assert_eq!(res.data()["description"], "Zamani", "left as it was");
    assert_eq!(res.data()["status"], "active");
    assert_eq!(sandbox.group(provider_id(&g)).expect("at the provider").subject, "Wateja wa Dhahabu");
    let updated = emitted(&app.pool, chat.tenant(), "group.updated", &g).await;
    assert_eq!(updated.len(), 1, "{updated:?}");
    assert_eq!(updated[0]["group"]["subject"], "Wateja wa Dhahabu");

    let res = app.patch(&at(&g, ""), key, json!({"description": "Ofa kila Ijumaa"})).await;
    assert_status(&res, 200);
    let read_back = read(&app, key, &g).await;
    assert_eq!(
        (read_back["subject"].as_str(), read_back["description"].as_str()),
        (Some("Wateja wa Dhahabu"), Some("Ofa kila Ijumaa"))
    );
    assert_eq!(
        sandbox.group(provider_id(&g)).expect("at the provider").description.as_deref(),
        Some("Ofa kila Ijumaa")
    );
    let updated = emitted(&app.pool, chat.tenant(), "group.updated", &g).await;
    assert_eq!(updated.len(), 2);
    assert_eq!(updated[1]["group"]["description"], "Ofa kila Ijumaa");

    // refused: too long, blank, nothing to change; a group still being created
    assert_field_error(&app.patch(&at(&g, ""), key, json!({"subject": "s".repeat(129)})).await, "subject");
    assert_field_error(&app.patch(&at(&g, ""), key, json!({"subject": " "})).await, "subject");
    assert_field_error(&app.patch(&at(&g, ""), key, json!({"description": "d".repeat(2_049)})).await, "description");
    assert_error(&app.patch(&at(&g, ""), key, json!({})).await, 422);
    let creating = create(&app, key, json!({"subject": "Bado"})).await;
    assert_error(&app.patch(&at(&creating, ""), key, json!({"subject": "Mpya"})).await, 409);
    assert_eq!(read(&app, key, &creating).await["subject"], "Bado");
    assert_eq!(read(&app, key, &g).await["subject"], "Wateja wa Dhahabu", "the refusals changed nothing");
    assert_eq!(emitted(&app.pool, chat.tenant(), "group.updated", &g).await.len(), 2);
}

#[actix_web::test]
async fn a_delete_answers_the_deleted_group_once_and_waits_for_a_creation() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let key = chat.key();
    let g = active_group(&app, &chat, json!({"subject": "Itafutwa"})).await;
    let failed = create(&app, key, json!({"subject": "fail_hii"})).await;
    app.advance(Duration::seconds(2)).await;

    let res = app.delete(&at(&g, ""), key).await;
    assert_status(&res, 200);
    let deleted = res.data().clone();
    assert_eq!(deleted["status"], "deleted", "{deleted}");
    assert_eq!(deleted["id"], g["id"]);
    let deleted_at = time_of(&deleted, "deleted_at");
    assert!(app.messaging.gateways().chat_sandbox().group(provider_id(&g)).expect("recorded").deleted);
    let gone = emitted(&app.pool, chat.tenant(), "group.deleted", &g).await;
    assert_eq!(gone.len(), 1);
    assert_eq!(gone[0]["group"]["status"], "deleted");

    app.clock.advance(Duration::seconds(30));
    let again = app.delete(&at(&g, ""), key).await;
    assert_status(&again, 200);
    assert_eq!(again.data()["status"], "deleted");
    assert_eq!(time_of(again.data(), "deleted_at"), deleted_at, "unchanged");
    assert_eq!(emitted(&app.pool, chat.tenant(), "group.deleted", &g).await.len(), 1, "no second event");
    // a deleted group takes no more changes
    assert_error(&app.patch(&at(&g, ""), key, json!({"subject": "Tena"})).await, 409);

    let creating = create(&app, key, json!({"subject": "Bado"})).await;
    assert_error(&app.delete(&at(&creating, ""), key).await, 409);
    assert_eq!(read(&app, key, &creating).await["status"], "creating");

    assert_eq!(read(&app, key, &failed).await["status"], "failed");
    let res = app.delete(&at(&failed, ""), key).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["status"], "deleted");
    time_of(res.data(), "deleted_at");
    assert_eq!(read(&app, key, &failed).await["status"], "deleted");

    // the provider deletes one on its own: deleted here too, once, its requests gone
    let other = active_group(&app, &chat, json!({"subject": "Yao"})).await;
    hook(&app, &chat, &join_request(&other, "JR9", &chat_id("0099"))).await;
    let gone = group_change(
        "group_lifecycle_update",
        json!([{"timestamp": "1764230400", "group_id": provider_id(&other), "type": "group_delete"}]),
    );
    hook(&app, &chat, &gone).await;
    hook(&app, &chat, &gone).await;
    let now = read(&app, key, &other).await;
    assert_eq!(now["status"], "deleted", "{now}");
    time_of(&now, "deleted_at");
    assert_eq!(emitted(&app.pool, chat.tenant(), "group.deleted", &other).await.len(), 1);
    assert_eq!(app.get(&at(&other, "/join-requests"), key).await.data()["items"], json!([]));
}

#[actix_web::test]
async fn the_providers_group_webhooks_move_participants_requests_settings_and_status_once() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let key = chat.key();
    let tenant = chat.tenant();
    let g = active_group(&app, &chat, json!({"subject": "Wateja", "join_approval_mode": "approval_required"})).await;
    // a customer who wrote before is known by name
    hook(&app, &chat, &super::text_from(&chat_id("0010"), "wamid.DIRECT1", "Habari")).await;

    // two join by the link
    let add = joined(&g, &[chat_id("0010"), chat_id("0011")]);
    let answer = hook(&app, &chat, &add).await;
    assert_eq!(answer["group_updates"], 1, "{answer}");
    assert_eq!(read(&app, key, &g).await["participants_count"], 3);
    let joins = emitted(&app.pool, tenant, "group.participant_joined", &g).await;
    assert_eq!(joins.len(), 2, "{joins:?}");
    let phones: Vec<&Value> = joins.iter().map(|e| &e["participant"]["phone"]).collect();
    assert_eq!(phones, [&json!(e164("0010")), &json!(e164("0011"))]);
    let amina = joins.iter().find(|e| e["participant"]["phone"] == e164("0010")).cloned().unwrap_or_default();
    assert_eq!(amina["participant"]["name"], "Amina", "{amina}");
    let stranger = joins.iter().find(|e| e["participant"]["phone"] == e164("0011")).cloned().unwrap_or_default();
    assert_eq!(stranger["participant"]["name"], Value::Null, "{stranger}");
    let mut counts: Vec<i64> = joins.iter().filter_map(|e| e["group"]["participants_count"].as_i64()).collect();
    counts.sort_unstable();
    assert_eq!(counts, [2, 3], "each summary as of its event");
    // the same delivery again changes nothing
    hook(&app, &chat, &add).await;
    assert_eq!(read(&app, key, &g).await["participants_count"], 3);
    assert_eq!(emitted(&app.pool, tenant, "group.participant_joined", &g).await.len(), 2);

    // one leaves on their own
    let leave = left(&g, &[chat_id("0011")], "participant");
    hook(&app, &chat, &leave).await;
    hook(&app, &chat, &leave).await;
    assert_eq!(read(&app, key, &g).await["participants_count"], 2);
    let gone = emitted(&app.pool, tenant, "group.participant_left", &g).await;
    assert_eq!(gone.len(), 1, "{gone:?}");
    assert_eq!(gone[0]["participant"]["phone"], e164("0011"));
    assert_eq!(gone[0]["group"]["participants_count"], 2);
    assert!(emitted(&app.pool, tenant, "group.participant_removed", &g).await.is_empty(), "not removed by us");

    // requests to join
    let requests = app.get(&at(&g, "/join-requests"), key).await;
    assert_status(&requests, 200);
    assert_eq!(requests.data()["items"], json!([]));
    let first = join_request(&g, "JR1", &chat_id("0020"));
    hook(&app, &chat, &first).await;
    hook(&app, &chat, &first).await;
    hook(&app, &chat, &join_request(&g, "JR2", &chat_id("0021"))).await;
    hook(&app, &chat, &join_request(&g, "JR3", &chat_id("0022"))).await;
    let received = emitted(&app.pool, tenant, "group.join_request_received", &g).await;
    assert_eq!(received.len(), 3, "one for each request: {received:?}");
    let jr1 = received.iter().find(|e| e["request"]["id"] == "JR1").cloned().unwrap_or_default();
    assert_eq!(jr1["request"], json!({"id": "JR1", "phone": e164("0020")}));
    let pending = app.get(&at(&g, "/join-requests"), key).await.data()["items"].clone();
    let listed: Vec<(&str, &str)> = pending
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| (r["id"].as_str().unwrap_or_default(), r["phone"].as_str().unwrap_or_default()))
        .collect();
    let (p20, p21, p22) = (e164("0020"), e164("0021"), e164("0022"));
    assert_eq!(listed, [("JR1", p20.as_str()), ("JR2", p21.as_str()), ("JR3", p22.as_str())]);

    // one withdraws
    hook(&app, &chat, &join_request_revoked(&g, "JR3", &chat_id("0022"))).await;
    let pending = app.get(&at(&g, "/join-requests"), key).await.data()["items"].clone();
    assert_eq!(pending.as_array().map(Vec::len), Some(2), "{pending}");
    assert!(pending.as_array().into_iter().flatten().all(|r| r["id"] != "JR3"));

    // approve one (and one unknown, and the withdrawn one)
    let res =
        app.post(&at(&g, "/join-requests/approve"), key, json!({"join_requests": ["JR1", "JR-NOPE", "JR3"]})).await;
    assert_status(&res, 200);
    let answer = res.data().clone();
    assert_eq!(answer["successes"], json!([{"id": "JR1", "error": null}]), "{answer}");
    let failures: Vec<&str> =
        answer["failures"].as_array().into_iter().flatten().filter_map(|f| f["id"].as_str()).collect();
    assert_eq!(failures, ["JR-NOPE", "JR3"], "{answer}");
    assert!(answer["failures"].as_array().into_iter().flatten().all(|f| f["error"].is_string()), "{answer}");
    let approved = emitted(&app.pool, tenant, "group.join_request_approved", &g).await;
    assert_eq!(approved.len(), 1);
    assert_eq!(approved[0]["request"], json!({"id": "JR1", "phone": e164("0020")}));
    let joins = emitted(&app.pool, tenant, "group.participant_joined", &g).await;
    assert_eq!(joins.len(), 3);
    assert!(joins.iter().any(|e| e["participant"]["phone"] == e164("0020")), "{joins:?}");
    assert_eq!(read(&app, key, &g).await["participants_count"], 3);
    let sandbox = app.messaging.gateways().chat_sandbox();
    assert_eq!(sandbox.group(provider_id(&g)).expect("at the provider").join_answers, [("JR1".to_owned(), true)]);
    // the provider's own word of the join changes nothing more
    hook(&app, &chat, &joined(&g, &[chat_id("0020")])).await;
    assert_eq!(emitted(&app.pool, tenant, "group.participant_joined", &g).await.len(), 3);

    // reject the other
    let res = app.post(&at(&g, "/join-requests/reject"), key, json!({"join_requests": ["JR2"]})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["successes"], json!([{"id": "JR2", "error": null}]), "{}", res.body);
    assert_eq!(res.data()["failures"], json!([]));
    let rejected = emitted(&app.pool, tenant, "group.join_request_rejected", &g).await;
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["request"], json!({"id": "JR2", "phone": e164("0021")}));
    assert_eq!(app.get(&at(&g, "/join-requests"), key).await.data()["items"], json!([]));
    assert_eq!(read(&app, key, &g).await["participants_count"], 3, "a rejection admits nobody");
    assert_field_error(
        &app.post(&at(&g, "/join-requests/approve"), key, json!({"join_requests": []})).await,
        "join_requests",
    );
    assert_field_error(&app.post(&at(&g, "/join-requests/reject"), key, json!({})).await, "join_requests");

    // the provider reports a changed subject
    let settings = group_change(
        "group_settings_update",
        json!([{"timestamp": "1764230405", "group_id": provider_id(&g), "type": "group_settings_update",
                "group_subject": {"text": "Wateja wa Dhahabu", "update_successful": true}}]),
    );
    hook(&app, &chat, &settings).await;
    hook(&app, &chat, &settings).await;
    let now = read(&app, key, &g).await;
    assert_eq!(now["subject"], "Wateja wa Dhahabu");
    let updated = emitted(&app.pool, tenant, "group.updated", &g).await;
    assert_eq!(updated.len(), 1, "{updated:?}");
    assert_eq!(updated[0]["group"]["subject"], "Wateja wa Dhahabu");

    // a suspension, then its end
    hook(&app, &chat, &status_change(&g, "group_suspend")).await;
    hook(&app, &chat, &status_change(&g, "group_suspend")).await;
    assert_eq!(read(&app, key, &g).await["status"], "suspended");
    let suspended = emitted(&app.pool, tenant, "group.suspended", &g).await;
    assert_eq!(suspended.len(), 1);
    assert_eq!(suspended[0]["group"]["status"], "suspended");
    // nothing goes to a suspended group, whatever its window
    hook(&app, &chat, &group_text(&g, &chat_id("0010"), "wamid.G1", "Habari zenu")).await;
    assert_error(&app.post(&at(&g, "/messages"), key, json!({"message": "Karibuni"})).await, 409);
    hook(&app, &chat, &status_change(&g, "group_suspend_cleared")).await;
    assert_eq!(read(&app, key, &g).await["status"], "active");
    let updated = emitted(&app.pool, tenant, "group.updated", &g).await;
    assert_eq!(updated.len(), 2);
    assert_eq!(updated[1]["group"]["status"], "active");
    assert_status(&app.post(&at(&g, "/messages"), key, json!({"message": "Karibuni"})).await, 201);
}

#[actix_web::test]
async fn a_group_holds_at_most_eight_people_with_the_business() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let key = chat.key();
    let tenant = chat.tenant();
    let g = active_group(&app, &chat, json!({"subject": "Nane", "join_approval_mode": "approval_required"})).await;
    let six: Vec<String> = (30..36).map(|n| chat_id(&format!("00{n}"))).collect();
    hook(&app, &chat, &joined(&g, &six)).await;
    assert_eq!(read(&app, key, &g).await["participants_count"], 7);
    // room for one more: an invitation still goes
    let res = app.post(&at(&g, "/invites"), key, json!({"recipients": [e164("0040")]})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["successes"].as_array().map(Vec::len), Some(1), "{}", res.body);

    hook(&app, &chat, &join_request(&g, "JR-A", &chat_id("0041"))).await;
    hook(&app, &chat, &join_request(&g, "JR-B", &chat_id("0042"))).await;
    let res = app.post(&at(&g, "/join-requests/approve"), key, json!({"join_requests": ["JR-A", "JR-B"]})).await;
    assert_status(&res, 200);
    let answer = res.data().clone();
    assert_eq!(answer["successes"].as_array().map(Vec::len), Some(1), "room for one: {answer}");
    let failures = answer["failures"].as_array().cloned().unwrap_or_default();
    assert_eq!(failures.len(), 1, "{answer}");
    assert!(str_of(&failures[0], "error").contains("eight"), "{answer}");
    let full = read(&app, key, &g).await;
    assert_eq!(full["participants_count"], 8);
    assert_eq!(emitted(&app.pool, tenant, "group.join_request_approved", &g).await.len(), 1);
    // the one left out is still pending, and only the one let in was asked of the provider
    let left_out = str_of(&failures[0], "id").to_owned();
    let pending = app.get(&at(&g, "/join-requests"), key).await.data()["items"].clone();
    assert_eq!(pending.as_array().map(Vec::len), Some(1), "{pending}");
    assert_eq!(pending[0]["id"], left_out.as_str());
    let answers = app.messaging.gateways().chat_sandbox().group(provider_id(&g)).expect("recorded").join_answers;
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_ne!(answers[0].0, left_out);

    // full: no invitations, no more approvals
    let res = app.post(&at(&g, "/invites"), key, json!({"recipients": [e164("0043")]})).await;
    assert_field_error(&res, "recipients");
    assert!(app.messaging.gateways().chat_sandbox().sent_to(&e164("0043")).is_empty(), "not sent");
    let res = app.post(&at(&g, "/join-requests/approve"), key, json!({"join_requests": [left_out]})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["successes"], json!([]), "{}", res.body);
    assert_eq!(res.data()["failures"][0]["id"], left_out.as_str());
    assert_eq!(read(&app, key, &g).await["participants_count"], 8);
    // a rejection needs no room
    let res = app.post(&at(&g, "/join-requests/reject"), key, json!({"join_requests": [left_out]})).await;
    assert_eq!(res.data()["successes"].as_array().map(Vec::len), Some(1), "{}", res.body);
}

#[actix_web::test]
async fn invitations_go_to_each_recipient_and_creation_invitees_once_the_group_is_active() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let key = chat.key();
    let tenant = chat.tenant();
    let sandbox = app.messaging.gateways().chat_sandbox().clone();

    let creating = create(&app, key, json!({"subject": "Bado"})).await;
    assert_error(&app.post(&at(&creating, "/invites"), key, json!({"recipients": [e164("0040")]})).await, 409);
    app.advance(Duration::seconds(2)).await;
    let g = read(&app, key, &creating).await;
    let link = str_of(&g, "invite_link").to_owned();

    let eight: Vec<String> = (0..8).map(|i| e164(&format!("{:04}", 200 + i))).collect();
    assert_field_error(&app.post(&at(&g, "/invites"), key, json!({"recipients": []})).await, "recipients");
    assert_field_error(&app.post(&at(&g, "/invites"), key, json!({})).await, "recipients");
    assert_field_error(&app.post(&at(&g, "/invites"), key, json!({"recipients": eight})).await, "recipients");
    assert_field_error(
        &app.post(&at(&g, "/invites"), key, json!({"recipients": [e164("0040")], "template": "no_such"})).await,
        "template",
    );
    assert!(sandbox.sent().is_empty(), "nothing sent for the refusals");

    let res =
        app.post(&at(&g, "/invites"), key, json!({"recipients": [e164("0040"), e164("0001"), "0712340041"]})).await;
    assert_status(&res, 200);
    let answer = res.data().clone();
    let sent: Vec<&str> =
        answer["successes"].as_array().into_iter().flatten().filter_map(|s| s["phone"].as_str()).collect();
    assert_eq!(sent, [e164("0040"), e164("0041")], "{answer}");
    assert!(answer["successes"].as_array().into_iter().flatten().all(|s| s["message_id"].is_string()), "{answer}");
    let failures = answer["failures"].as_array().cloned().unwrap_or_default();
    assert_eq!(failures.len(), 1, "{answer}");
    assert_eq!(failures[0]["phone"], e164("0001"));
    assert!(str_of(&failures[0], "error").contains("0001"), "the provider's words: {answer}");
    let invited = emitted(&app.pool, tenant, "group.participant_invited", &g).await;
    let phones: Vec<&Value> = invited.iter().map(|e| &e["participant"]).collect();
    assert_eq!(
        phones,
        [&json!({"phone": e164("0040"), "name": null}), &json!({"phone": e164("0041"), "name": null})],
        "one event per invitation sent"
    );
    let to_0040 = sandbox.sent_to(&e164("0040"));
    assert_eq!(to_0040.len(), 1);
    let ChatContent::Text { body } = &to_0040[0].content else { panic!("a text: {:?}", to_0040[0].content) };
    assert!(body.contains(&link), "the invite link in {body}");
    assert_eq!(to_0040[0].phone_number_id, PHONE_ID);
    assert_eq!(read(&app, key, &g).await["participants_count"], 1, "an invitation is not a join");

    // the first invitations of a creation go when the provider confirms it, with its template
    let invite_template = template(&app, key, "group_invite", true).await;
    let first = create(
        &app,
        key,
        json!({"subject": "Wapya", "invitees": [e164("0050"), e164("0001")], "invite_template": "group_invite"}),
    )
    .await;
    assert_eq!(first["invite_template"], "group_invite");
    assert_eq!(
        first["invites"],
        json!([{"phone": e164("0050"), "status": "pending", "error": null},
               {"phone": e164("0001"), "status": "pending", "error": null}])
    );
    assert!(sandbox.sent_to(&e164("0050")).is_empty(), "not before the group exists");
    app.advance(Duration::seconds(2)).await;
    let first = read(&app, key, &first).await;
    assert_eq!(first["status"], "active");
    let invites = first["invites"].as_array().cloned().unwrap_or_default();
    assert_eq!(invites.len(), 2, "{first}");
    let to_0050 = invites.iter().find(|i| i["phone"] == e164("0050")).cloned().unwrap_or_default();
    assert_eq!((to_0050["status"].as_str(), to_0050["error"].is_null()), (Some("sent"), true), "{first}");
    let to_0001 = invites.iter().find(|i| i["phone"] == e164("0001")).cloned().unwrap_or_default();
    assert_eq!(to_0001["status"], "failed", "{first}");
    assert!(str_of(&to_0001, "error").contains("0001"), "{first}");
    let sent = sandbox.sent_to(&e164("0050"));
    assert_eq!(sent.len(), 1);
    let ChatContent::Template { name, language, components } = &sent[0].content else {
        panic!("a template: {:?}", sent[0].content)
    };
    assert_eq!(
        (name.as_str(), language.as_str()),
        ("group_invite", invite_template["language"].as_str().unwrap_or(""))
    );
    assert!(json!(components).to_string().contains(str_of(&first, "invite_link")), "{components:?}");
    assert_eq!(emitted(&app.pool, tenant, "group.participant_invited", &first).await.len(), 1);
    // sent once: later jobs send nothing more
    app.advance(Duration::minutes(5)).await;
    assert_eq!(sandbox.sent_to(&e164("0050")).len(), 1);
    assert_eq!(emitted(&app.pool, tenant, "group.participant_invited", &first).await.len(), 1);
}

#[actix_web::test]
async fn an_invite_link_reset_gives_a_new_link_and_keeps_it() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let key = chat.key();
    let g = active_group(&app, &chat, json!({"subject": "Kiungo"})).await;
    let old = str_of(&g, "invite_link").to_owned();
    let res = app.post(&at(&g, "/invite-link/reset"), key, json!({})).await;
    assert_status(&res, 200);
    let new = str_of(res.data(), "invite_link").to_owned();
    assert_ne!(new, old);
    assert_eq!(read(&app, key, &g).await["invite_link"], new.as_str());
    let at_provider = app.messaging.gateways().chat_sandbox().group(provider_id(&g)).expect("recorded");
    assert_eq!(at_provider.invite_link.as_deref(), Some(new.as_str()));
    let reset = emitted(&app.pool, chat.tenant(), "group.invite_link_reset", &g).await;
    assert_eq!(reset.len(), 1);
    assert_eq!(reset[0]["group"]["invite_link"], new.as_str());

    let creating = create(&app, key, json!({"subject": "Bado"})).await;
    assert_error(&app.post(&at(&creating, "/invite-link/reset"), key, json!({})).await, 409);
}

#[actix_web::test]
async fn participants_are_removed_here_and_at_the_provider() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let key = chat.key();
    let tenant = chat.tenant();
    let g = active_group(&app, &chat, json!({"subject": "Ondoa"})).await;
    hook(&app, &chat, &joined(&g, &[chat_id("0060"), chat_id("0061"), chat_id("0062")])).await;
    assert_eq!(read(&app, key, &g).await["participants_count"], 4);
    let (app_ref, path) = (&app, at(&g, "/participants"));
    let path = path.as_str();
    let remove = move |body: Value| app_ref.request("DELETE", path, Some(key), Some(body));

    let nine: Vec<String> = (0..9).map(|i| e164(&format!("{:04}", 300 + i))).collect();
    assert_field_error(&remove(json!({"participants": []})).await, "participants");
    assert_field_error(&remove(json!({})).await, "participants");
    assert_field_error(&remove(json!({"participants": nine})).await, "participants");
    assert_field_error(&remove(json!({"participants": ["nobody"]})).await, "participants.0");
    assert_eq!(read(&app, key, &g).await["participants_count"], 4);

    let res = remove(json!({"participants": [e164("0060"), chat_id("0061")]})).await;
    assert_status(&res, 200);
    let answer = res.data().clone();
    let done: Vec<&str> =
        answer["successes"].as_array().into_iter().flatten().filter_map(|s| s["id"].as_str()).collect();
    assert_eq!(done, [chat_id("0060"), chat_id("0061")], "{answer}");
    assert_eq!(answer["failures"], json!([]));
    assert_eq!(answer["group"]["participants_count"], 2, "{answer}");
    assert_eq!(read(&app, key, &g).await["participants_count"], 2);
    let removed = emitted(&app.pool, tenant, "group.participant_removed", &g).await;
    let phones: Vec<&Value> = removed.iter().map(|e| &e["participant"]["phone"]).collect();
    assert_eq!(phones, [&json!(e164("0060")), &json!(e164("0061"))]);
    assert!(emitted(&app.pool, tenant, "group.participant_left", &g).await.is_empty());
    let at_provider = app.messaging.gateways().chat_sandbox().group(provider_id(&g)).expect("recorded");
    assert_eq!(at_provider.removed, [chat_id("0060"), chat_id("0061")]);

    // the provider's report of the same removal changes nothing more
    hook(&app, &chat, &left(&g, &[chat_id("0060"), chat_id("0061")], "business")).await;
    assert_eq!(read(&app, key, &g).await["participants_count"], 2);
    assert_eq!(emitted(&app.pool, tenant, "group.participant_removed", &g).await.len(), 2);
}

#[actix_web::test]
async fn group_messages_need_a_participants_message_within_a_day_or_an_approved_template() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let key = chat.key();
    let approved = template(&app, key, "group_offer", true).await;
    template(&app, key, "draft_offer", false).await;
    let g = active_group(&app, &chat, json!({"subject": "Soko"})).await;
    let messages = at(&g, "/messages");
    let sandbox = app.messaging.gateways().chat_sandbox().clone();

    let res = app.post(&messages, key, json!({"message": "Karibuni"})).await;
    assert_field_error(&res, "message");
    assert_eq!(res.body["reason"], "window_closed", "{}", res.body);
    assert!(sandbox.group_messages().is_empty(), "nothing sent");

    // a participant writes in the group: stored once, and the window opens
    let written = group_text(&g, &chat_id("0070"), "wamid.GIN1", "Bei ya kanga?");
    let answer = hook(&app, &chat, &written).await;
    assert_eq!(answer["group_messages"], 1, "{answer}");
    let again = hook(&app, &chat, &written).await;
    assert_eq!((again["group_messages"].as_i64(), again["duplicates"].as_i64()), (Some(0), Some(1)), "{again}");
    let stored = api_tests::sql_rows(
        &app.pool,
        &format!(
            "SELECT participant, body, status FROM chat_group_messages WHERE group_id = {} AND direction = 'inbound'",
            g["id"]
        ),
    )
    .await;
    assert_eq!(stored, [json!({"participant": chat_id("0070"), "body": "Bei ya kanga?", "status": "received"})]);
    assert_eq!(
        app.get("/api/v3/messages?direction=inbound", key).await.data()["pagination"]["total"],
        0,
        "not a one-to-one message"
    );
    let g_now = read(&app, key, &g).await;
    assert_eq!(g_now["participants_count"], 2, "whoever writes is in: {g_now}");
    time_of(&g_now, "last_participant_message_at");

    let res = app.post(&messages, key, json!({"message": "Karibuni, kanga ni 12,000"})).await;
    assert_status(&res, 201);
    let sent = res.data().clone();
    assert_eq!(sent["status"], "sent", "{sent}");
    assert_eq!(sent["type"], "text");
    assert_eq!(sent["direction"], "outbound");
    assert_eq!(sent["body"], "Karibuni, kanga ni 12,000");
    assert_eq!(sent["group_id"], g["id"]);
    assert!(str_of(&sent, "message_id").starts_with("wamid."), "{sent}");
    assert!(str_of(&sent, "uid").len() > 4);
    let at_provider = sandbox.group_messages();
    assert_eq!(at_provider.len(), 1);
    assert_eq!(at_provider[0].group_id, provider_id(&g));
    assert_eq!(at_provider[0].provider_message_id, str_of(&sent, "message_id"));
    // the longest text goes, a longer one does not
    assert_status(&app.post(&messages, key, json!({"body": "k".repeat(4_096)})).await, 201);
    assert_field_error(&app.post(&messages, key, json!({"message": "k".repeat(4_097)})).await, "message");
    assert_field_error(&app.post(&messages, key, json!({})).await, "message");
    // media by link, its text the caption
    let res = app
        .post(
            &messages,
            key,
            json!({"media_url": "https://duka.example/kanga.jpg", "media_type": "image", "message": "Kanga mpya"}),
        )
        .await;
    assert_status(&res, 201);
    assert_eq!(
        (res.data()["type"].as_str(), res.data()["body"].as_str(), res.data()["media_url"].as_str()),
        (Some("image"), Some("Kanga mpya"), Some("https://duka.example/kanga.jpg")),
        "{}",
        res.body
    );
    let media = json!({"media_url": "https://duka.example/kanga.jpg", "media_type": "hologram"});
    assert_field_error(&app.post(&messages, key, media).await, "media_type");
    // a message in a group this service does not know is neither stored nor a one-to-one message
    let mut elsewhere = group_text(&g, &chat_id("0071"), "wamid.GIN9", "Habari");
    elsewhere["entry"][0]["changes"][0]["value"]["messages"][0]["group_id"] = json!("UNKNOWN-GROUP");
    let answer = hook(&app, &chat, &elsewhere).await;
    assert_eq!(
        (answer["group_messages"].as_i64(), answer["messages_received"].as_i64()),
        (Some(0), Some(0)),
        "{answer}"
    );
    let inbound =
        api_tests::sql_rows(&app.pool, "SELECT id FROM chat_group_messages WHERE direction = 'inbound'").await;
    assert_eq!(inbound.len(), 1);

    // a day and an hour later the window is closed again
    app.advance(Duration::hours(25)).await;
    let res = app.post(&messages, key, json!({"message": "Bado mpo?"})).await;
    assert_field_error(&res, "message");
    assert_eq!(res.body["reason"], "window_closed", "{}", res.body);
    // an approved template needs no window; a draft is refused
    let res = app.post(&messages, key, json!({"name": "group_offer", "language": "sw"})).await;
    assert_status(&res, 201);
    assert_eq!(res.data()["status"], "sent", "{}", res.body);
    assert_eq!(res.data()["type"], "template");
    let last = sandbox.group_messages().pop().expect("sent");
    let ChatContent::Template { name, language, .. } = &last.content else { panic!("a template: {:?}", last.content) };
    assert_eq!((name.as_str(), language.as_str()), ("group_offer", approved["language"].as_str().unwrap_or("")));
    let res = app
        .post(&messages, key, json!({"template": {"name": "group_offer", "language": "sw", "components": []}}))
        .await;
    assert_status(&res, 201);
    assert_field_error(&app.post(&messages, key, json!({"name": "draft_offer", "language": "sw"})).await, "name");
    assert_field_error(&app.post(&messages, key, json!({"name": "no_such", "language": "sw"})).await, "name");
    assert_eq!(sandbox.group_messages().len(), 5, "two texts, an image and two templates");
}

#[actix_web::test]
async fn a_sent_group_message_is_pinned_and_unpinned() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let key = chat.key();
    let g = active_group(&app, &chat, json!({"subject": "Bango"})).await;
    hook(&app, &chat, &group_text(&g, &chat_id("0080"), "wamid.GIN2", "Habari")).await;
    let sent = app.post(&at(&g, "/messages"), key, json!({"message": "Ofa ya leo"})).await;
    assert_status(&sent, 201);
    let uid = str_of(sent.data(), "uid").to_owned();
    let wamid = str_of(sent.data(), "message_id").to_owned();
    let pin = at(&g, "/pin");

    assert_field_error(&app.post(&pin, key, json!({"message_uid": uid})).await, "pin");
    assert_field_error(
        &app.post(&pin, key, json!({"message_uid": uid, "pin": true, "expiration_days": 0})).await,
        "expiration_days",
    );
    assert_field_error(
        &app.post(&pin, key, json!({"message_uid": uid, "pin": true, "expiration_days": 31})).await,
        "expiration_days",
    );
    assert_field_error(&app.post(&pin, key, json!({"pin": true})).await, "message_uid");
    assert_field_error(&app.post(&pin, key, json!({"message_uid": "msg_nope", "pin": true})).await, "message_uid");
    let sandbox = app.messaging.gateways().chat_sandbox().clone();
    assert!(sandbox.group(provider_id(&g)).expect("recorded").pins.is_empty(), "nothing asked");

    let res = app.post(&pin, key, json!({"message_uid": uid, "pin": true, "expiration_days": 30})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["uid"], uid.as_str());
    assert_eq!(time_of(res.data(), "pinned_until"), app.clock.now() + Duration::days(30), "{}", res.body);

    let res = app.post(&pin, key, json!({"message_uid": uid, "pin": false})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["pinned_until"], Value::Null, "{}", res.body);

    let res = app.post(&pin, key, json!({"message_uid": uid, "pin": true})).await;
    assert_status(&res, 200);
    assert_eq!(time_of(res.data(), "pinned_until"), app.clock.now() + Duration::days(7), "the default: {}", res.body);

    let pins: Vec<(String, bool, Option<u8>)> = sandbox
        .group(provider_id(&g))
        .expect("recorded")
        .pins
        .into_iter()
        .map(|p| (p.message_id, p.pin, p.expiration_days))
        .collect();
    assert_eq!(pins, [(wamid.clone(), true, Some(30)), (wamid.clone(), false, None), (wamid, true, None)]);
}

#[actix_web::test]
async fn reads_need_view_changes_need_manage_and_messages_need_send_too() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let g = active_group(&app, &chat, json!({"subject": "Ruhusa"})).await;
    let tenant = chat.tenant();
    let key_with = |permissions: &'static str| {
        let app = &app;
        async move {
            let user = app.user(tenant, permissions).await;
            app.key(tenant, user).await
        }
    };
    let nobody = key_with("contacts.view").await;
    for path in [GROUPS.to_owned(), at(&g, ""), at(&g, "/join-requests")] {
        assert_error(&app.get(&path, &nobody).await, 403);
    }

    let viewer = key_with("communications.groups.view").await;
    assert_status(&app.get(GROUPS, &viewer).await, 200);
    assert_status(&app.get(&at(&g, ""), &viewer).await, 200);
    assert_status(&app.get(&at(&g, "/join-requests"), &viewer).await, 200);
    let participants = json!({"participants": [e164("0090")]});
    for res in [
        app.post(GROUPS, &viewer, json!({"subject": "Mpya"})).await,
        app.patch(&at(&g, ""), &viewer, json!({"subject": "Mpya"})).await,
        app.delete(&at(&g, ""), &viewer).await,
        app.post(&at(&g, "/invites"), &viewer, json!({"recipients": [e164("0090")]})).await,
        app.post(&at(&g, "/invite-link/reset"), &viewer, json!({})).await,
        app.post(&at(&g, "/join-requests/approve"), &viewer, json!({"join_requests": ["JR1"]})).await,
        app.post(&at(&g, "/join-requests/reject"), &viewer, json!({"join_requests": ["JR1"]})).await,
        app.request("DELETE", &at(&g, "/participants"), Some(&viewer), Some(participants.clone())).await,
        app.post(&at(&g, "/messages"), &viewer, json!({"message": "Habari"})).await,
        app.post(&at(&g, "/pin"), &viewer, json!({"message_uid": "msg_x", "pin": true})).await,
    ] {
        assert_error(&res, 403);
    }
    let manager = key_with("communications.groups.view,communications.groups.manage").await;
    assert_error(&app.post(&at(&g, "/messages"), &manager, json!({"message": "Habari"})).await, 403);
    let res = app.patch(&at(&g, ""), &manager, json!({"subject": "Mpya"})).await;
    assert_status(&res, 200);
    let sender = key_with("communications.groups.view,communications.groups.manage,communications.send").await;
    // past the permissions: the window is what refuses it now
    let res = app.post(&at(&g, "/messages"), &sender, json!({"message": "Habari"})).await;
    assert_field_error(&res, "message");
    assert_eq!(res.body["reason"], "window_closed");
    let sender_only = key_with("communications.send").await;
    assert_error(&app.post(&at(&g, "/messages"), &sender_only, json!({"message": "Habari"})).await, 403);

    assert_eq!(app.get(&format!("{GROUPS}?status=all"), chat.key()).await.data()["pagination"]["total"], 1);
    let now = read(&app, chat.key(), &g).await;
    assert_eq!((now["status"].as_str(), now["subject"].as_str()), (Some("active"), Some("Mpya")));
}

#[actix_web::test]
async fn another_tenants_group_is_not_found_on_any_route_and_stays_as_it_was() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let g = active_group(&app, &chat, json!({"subject": "Yetu"})).await;
    hook(&app, &chat, &joined(&g, &[chat_id("0095")])).await;
    hook(&app, &chat, &join_request(&g, "JR1", &chat_id("0096"))).await;
    hook(&app, &chat, &group_text(&g, &chat_id("0095"), "wamid.GIN3", "Habari")).await;
    let sent = app.post(&at(&g, "/messages"), chat.key(), json!({"message": "Karibu"})).await;
    assert_status(&sent, 201);
    let uid = str_of(sent.data(), "uid").to_owned();
    let before = read(&app, chat.key(), &g).await;
    let events_before = group_event_names(&app.pool, chat.tenant()).await;

    let other = chat_account(&app, "all").await;
    let key = other.key();
    let participants = json!({"participants": [e164("0095")]});
    for res in [
        app.get(&at(&g, ""), key).await,
        app.patch(&at(&g, ""), key, json!({"subject": "Yao"})).await,
        app.delete(&at(&g, ""), key).await,
        app.post(&at(&g, "/invites"), key, json!({"recipients": [e164("0097")]})).await,
        app.post(&at(&g, "/invite-link/reset"), key, json!({})).await,
        app.get(&at(&g, "/join-requests"), key).await,
        app.post(&at(&g, "/join-requests/approve"), key, json!({"join_requests": ["JR1"]})).await,
        app.post(&at(&g, "/join-requests/reject"), key, json!({"join_requests": ["JR1"]})).await,
        app.request("DELETE", &at(&g, "/participants"), Some(key), Some(participants.clone())).await,
        app.post(&at(&g, "/messages"), key, json!({"message": "Habari"})).await,
        app.post(&at(&g, "/pin"), key, json!({"message_uid": uid, "pin": true})).await,
        app.get(&format!("{GROUPS}/not-a-number"), key).await,
    ] {
        assert_error(&res, 404);
    }
    assert_eq!(app.get(&format!("{GROUPS}?status=all"), key).await.data()["pagination"]["total"], 0);

    let after = read(&app, chat.key(), &g).await;
    assert_eq!(after, before, "unchanged");
    assert_eq!(after["participants_count"], 2);
    let pending = app.get(&at(&g, "/join-requests"), chat.key()).await.data()["items"].clone();
    assert_eq!(pending.as_array().map(Vec::len), Some(1));
    assert_eq!(group_event_names(&app.pool, chat.tenant()).await, events_before);
    assert!(group_event_names(&app.pool, other.tenant()).await.is_empty());
    let sandbox = app.messaging.gateways().chat_sandbox().clone();
    let at_provider = sandbox.group(provider_id(&g)).expect("recorded");
    assert!(!at_provider.deleted);
    assert_eq!(at_provider.subject, "Yetu");
    assert!(at_provider.join_answers.is_empty() && at_provider.removed.is_empty() && at_provider.pins.is_empty());
    assert_eq!(sandbox.group_messages().len(), 1, "only the owner's message");
    assert!(sandbox.sent_to(&e164("0097")).is_empty());

    // the other tenant's webhook naming this group's provider id changes nothing here
    for body in [
        joined(&g, &[chat_id("0098")]),
        left(&g, &[chat_id("0095")], "participant"),
        status_change(&g, "group_suspend"),
        group_text(&g, &chat_id("0095"), "wamid.GIN4", "Habari"),
    ] {
        hook(&app, &other, &body).await;
    }
    assert_eq!(read(&app, chat.key(), &g).await, before, "unchanged by another tenant's deliveries");
    assert_eq!(group_event_names(&app.pool, chat.tenant()).await, events_before);
    assert!(group_event_names(&app.pool, other.tenant()).await.is_empty());
}

mod cloud_api {
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::super::cloud::{ACCESS_TOKEN, VERSION, cloud_account};
    use super::*;

    const GROUP_ID: &str = "Y2FwaV9ncm91cDoxMjM0";
    const LINK: &str = "https://chat.whatsapp.com/LinkFromGraph";

    #[actix_web::test]
    async fn a_cloud_creation_waits_for_the_lifecycle_webhook_and_a_refusal_is_a_502_in_the_providers_words() {
        let app = spawn().await;
        let server = MockServer::start().await;
        let bearer = format!("Bearer {ACCESS_TOKEN}");
        Mock::given(method("POST"))
            .and(path(format!("/{VERSION}/{PHONE_ID}/groups")))
            .and(header("authorization", bearer.as_str()))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"request_id": "REQ-77"})))
            .mount(&server)
            .await;
        let refusal = json!({"error": {
            "message": "Invalid parameter", "type": "OAuthException", "code": 100, "error_subcode": 2494010,
            "error_user_msg": "The group subject is too long for this group.",
            "fbtrace_id": "AbCdEf",
        }});
        Mock::given(method("POST"))
            .and(path(format!("/{VERSION}/{GROUP_ID}")))
            .respond_with(ResponseTemplate::new(400).set_body_json(refusal))
            .mount(&server)
            .await;
        let chat = cloud_account(&app, "all", &server.uri()).await;
        let key = chat.key();

        let body =
            json!({"subject": "Wateja VIP", "description": "Ofa kwanza", "join_approval_mode": "approval_required"});
        let g = create(&app, key, body).await;
        assert_eq!(g["status"], "creating");
        let requests = server.received_requests().await.expect("recorded");
        assert_eq!(requests.len(), 1, "one call");
        assert_eq!(requests[0].url.path(), format!("/{VERSION}/{PHONE_ID}/groups"));
        let asked: Value = requests[0].body_json().expect("a JSON body");
        assert_eq!(asked["messaging_product"], "whatsapp", "{asked}");
        assert_eq!(asked["subject"], "Wateja VIP", "{asked}");
        assert_eq!(asked["description"], "Ofa kwanza", "{asked}");
        assert_eq!(asked["join_approval_mode"], "approval_required", "{asked}");

        // no time makes it active: only the provider's word
        app.advance(Duration::seconds(30)).await;
        assert_eq!(read(&app, key, &g).await["status"], "creating");
        let confirm = group_change(
            "group_lifecycle_update",
            json!([{"timestamp": "1764230400", "group_id": GROUP_ID, "type": "group_create", "request_id": "REQ-77",
                    "subject": "Wateja VIP", "invite_link": LINK, "join_approval_mode": "approval_required"}]),
        );
        assert_error(&deliver(&app, &chat.hook(), Some("not-the-secret"), &confirm).await, 401);
        assert_eq!(read(&app, key, &g).await["status"], "creating", "an unsigned word is not the provider's");
        let answer = hook(&app, &chat, &confirm).await;
        assert_eq!(answer["group_updates"], 1, "{answer}");
        hook(&app, &chat, &confirm).await;
        let active = read(&app, key, &g).await;
        assert_eq!(active["status"], "active", "{active}");
        assert_eq!(active["provider_group_id"], GROUP_ID);
        assert_eq!(active["invite_link"], LINK);
        let created = emitted(&app.pool, chat.tenant(), "group.created", &g).await;
        assert_eq!(created.len(), 1, "{created:?}");
        assert_eq!(created[0]["group"]["invite_link"], LINK);

        let res = app.patch(&at(&g, ""), key, json!({"subject": "Wateja wa Dhahabu sana"})).await;
        assert_error(&res, 502);
        let message = str_of(&res.body, "message");
        assert!(message.contains("The group subject is too long for this group."), "{}", res.body);
        assert!(message.contains("Invalid parameter"), "{}", res.body);
        let requests = server.received_requests().await.expect("recorded");
        assert_eq!(requests.len(), 2);
        let asked: Value = requests[1].body_json().expect("a JSON body");
        assert_eq!(asked["subject"], "Wateja wa Dhahabu sana", "{asked}");
        assert_eq!(read(&app, key, &g).await["subject"], "Wateja VIP", "unchanged");
        assert!(emitted(&app.pool, chat.tenant(), "group.updated", &g).await.is_empty());
    }
}
