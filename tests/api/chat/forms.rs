//! In-chat forms (issue 19; contract: Forms, Form version state, the `form.submitted` payload
//! note): the question types, the create and edit rules with their placed issues, publishing
//! (our issues, the provider's, versions retiring three days after the next), sends inside and
//! outside the 24-hour window, answers read from the provider's signed flow replies (once per
//! message, redacted without `forms.answers.export`, paged), menu forms placing orders, the
//! provider's flow status webhook, deployments to more business accounts, permissions per
//! route, the module switch and tenant isolation.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{TestApp, json, spawn};
use kernel::TenantId;
use messaging::forms::menu::quantity_key;
use providers::chat::ChatContent;
use serde_json::Value;
use time::Duration;

use super::{
    APP_SECRET, BUSINESS, ChatAccount, WABA, add_account, chat_account, chat_id, deliver, delivery, e164, text_from,
};
use crate::framework::assert_error;
use crate::sms::support::{assert_field_error, assert_status, events, str_of, time_of};

const FORMS: &str = "/api/v3/chat/forms";
const TEMPLATES: &str = "/api/v3/chat/templates";
const CATALOGUES: &str = "/api/v3/catalogues";
/// A second business account of the tenant, its number's provider id, and the number.
const WABA2: &str = "102290129340477";
const PHONE2: &str = "106540352242977";
const BUSINESS2: &str = "+255222000177";

/// Every forms permission.
const ALL_FORMS: [&str; 7] = [
    "forms.view",
    "forms.create",
    "forms.edit",
    "forms.publish",
    "forms.send",
    "forms.answers.view",
    "forms.answers.export",
];

/// `{FORMS}/{id}{tail}`.
fn at(form: &Value, tail: &str) -> String {
    format!("{FORMS}/{}{tail}", form["id"])
}

/// A two-page form every rule accepts: one question of most types.
fn good_definition() -> Value {
    json!({
        "pages": [
            {"title": "Kuhusu wewe", "questions": [
                {"key": "name", "type": "short_text", "label": "Jina lako", "required": true},
                {"key": "age", "type": "number", "label": "Umri", "min": 18, "max": 99},
                {"key": "phone", "type": "phone", "label": "Simu"},
                {"key": "email", "type": "email", "label": "Barua pepe"},
            ]},
            {"title": "Oda yako", "questions": [
                {"key": "size", "type": "single_choice", "label": "Ukubwa",
                    "options": [{"key": "s", "label": "Ndogo"}, {"key": "l", "label": "Kubwa"}]},
                {"key": "extras", "type": "multiple_choice", "label": "Ziada",
                    "options": [{"key": "milk", "label": "Maziwa"}, {"key": "sugar", "label": "Sukari"}]},
                {"key": "day", "type": "date", "label": "Siku ya kuleta"},
                {"key": "terms", "type": "agreement", "label": "Nakubali masharti", "required": true},
            ]},
        ],
        "submit_label": "Tuma",
    })
}

/// `(path, code)` of each issue listed.
fn issue_pairs(issues: &Value) -> Vec<(String, String)> {
    issues
        .as_array()
        .unwrap_or_else(|| panic!("issues is a list: {issues}"))
        .iter()
        .map(|i| (str_of(i, "path").to_owned(), str_of(i, "code").to_owned()))
        .collect()
}

/// `POST /chat/forms`, 201 expected: the form.
async fn create<S, B>(app: &TestApp<S>, key: &str, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(FORMS, key, body).await;
    assert_status(&res, 201);
    res.data().clone()
}

/// `GET /chat/forms/{id}`, 200 expected: the form.
async fn read<S, B>(app: &TestApp<S>, key: &str, form: &Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&at(form, ""), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// `POST .../publish`, 200 expected: the form.
async fn publish<S, B>(app: &TestApp<S>, key: &str, form: &Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.request("POST", &at(form, "/publish"), Some(key), None).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// The good form, created and published (version 1).
async fn published_form<S, B>(app: &TestApp<S>, key: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let form = create(app, key, json!({"name": "Usajili", "definition": good_definition()})).await;
    let published = publish(app, key, &form).await;
    assert_eq!(published["version"], 1, "{published}");
    published
}

/// The customer `last4` writes to the business (opening the 24-hour window).
async fn writes<S, B>(app: &TestApp<S>, chat: &ChatAccount, last4: &str, wamid: &str)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = deliver(app, &chat.hook(), Some(APP_SECRET), &text_from(&chat_id(last4), wamid, "Habari")).await;
    assert_status(&res, 200);
}

/// `POST .../send` to the customer `last4`, 202 expected: the answer (`send_token`...).
async fn send_to<S, B>(app: &TestApp<S>, key: &str, form: &Value, last4: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(&at(form, "/send"), key, json!({"to": e164(last4), "reference": "REF-1"})).await;
    assert_status(&res, 202);
    res.data().clone()
}

/// One customer's flow reply message (an `nfm_reply` carrying the send token and `answers`).
fn reply_message(customer: &str, wamid: &str, token: &str, answers: &Value) -> Value {
    let mut response = answers.clone();
    response["flow_token"] = json!(token);
    json!({
        "from": customer, "id": wamid, "timestamp": "1764230400", "type": "interactive",
        "context": {"from": BUSINESS.trim_start_matches('+'), "id": "wamid.FORM"},
        "interactive": {"type": "nfm_reply", "nfm_reply": {
            "name": "flow", "body": "Sent", "response_json": response.to_string(),
        }},
    })
}

/// A delivery of one flow reply of the customer `last4`.
fn reply(last4: &str, wamid: &str, token: &str, answers: &Value) -> Value {
    let customer = chat_id(last4);
    delivery(json!({
        "contacts": [{"profile": {"name": "Amina"}, "wa_id": customer}],
        "messages": [reply_message(&customer, wamid, token, answers)],
    }))
}

/// A delivery as the provider posts it for the second business account's number.
fn to_second(mut body: Value) -> Value {
    body["entry"][0]["id"] = json!(WABA2);
    let metadata = &mut body["entry"][0]["changes"][0]["value"]["metadata"];
    metadata["phone_number_id"] = json!(PHONE2);
    metadata["display_phone_number"] = json!(BUSINESS2.trim_start_matches('+'));
    body
}

/// A signed `flows` delivery: the provider changed a flow's status.
fn flow_status(flow_id: &str, old: &str, new: &str) -> Value {
    json!({"object": "whatsapp_business_account", "entry": [{"id": WABA, "changes": [{"field": "flows", "value": {
        "event": "FLOW_STATUS_CHANGE", "message": format!("Flow changed from {old} to {new}"),
        "flow_id": flow_id, "old_status": old, "new_status": new,
    }}]}]})
}

/// The answers the customer `last4` gives to [`good_definition`], as the provider sends them.
fn good_answers() -> Value {
    json!({
        "name": "  Amina Juma ", "age": "30", "phone": "+255712340000", "email": "amina@example.com",
        "size": "l", "extras": ["sugar", "milk"], "day": "2026-12-01", "terms": true,
    })
}

/// The payloads of the tenant's events `name`, in the order written.
async fn emitted(pool: &store::Pool, tenant: TenantId, name: &str) -> Vec<Value> {
    events(pool, tenant).await.into_iter().filter(|(n, _)| n == name).map(|(_, p)| p).collect()
}

/// Whether a `form.status_changed` payload tells of the form's `status` now and of the
/// provider's `provider_status` (the payload's fields beyond `form` and `version` are not in
/// the contract: either member may carry them).
fn tells(event: &Value, status: &str, provider_status: &str) -> bool {
    let all = event.to_string();
    all.contains(&format!("\"{status}\"")) || all.contains(&format!("\"{provider_status}\""))
}

/// `accounts[]` of a form, by `waba_id`.
fn account<'a>(form: &'a Value, waba: &str) -> &'a Value {
    form["accounts"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["waba_id"] == waba))
        .unwrap_or_else(|| panic!("{waba} in the accounts of {form}"))
}

/// The sandbox's flows on `waba`, `(id, status)` in the order made.
fn flows_on<S>(app: &TestApp<S>, waba: &str) -> Vec<(String, String)> {
    let sandbox = app.messaging.gateways().chat_sandbox();
    sandbox.flows().into_iter().filter(|f| f.waba_id == waba).map(|f| (f.id, f.status)).collect()
}

/// A key of a fresh user of `tenant` holding `permissions` (comma separated).
async fn key_with<S, B>(app: &TestApp<S>, tenant: TenantId, permissions: &str) -> String
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let user = app.user(tenant, permissions).await;
    app.key(tenant, user).await
}

async fn forms_module<S, B>(app: &TestApp<S>, tenant: TenantId, enabled: bool)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let mut conn = app.conn().await;
    accounts::modules::set(&mut conn, tenant, accounts::modules::Module::Forms, enabled).await.expect("module");
}

/// A template `name` approved by the sandbox's review.
async fn approved_template<S, B>(app: &TestApp<S>, key: &str, name: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let body = json!({
        "name": name, "language": "sw", "category": "UTILITY",
        "body": "Habari, tafadhali jaza fomu yetu.",
    });
    let res = app.post(TEMPLATES, key, body).await;
    assert_status(&res, 201);
    let t = res.data().clone();
    app.clock.advance(Duration::seconds(3));
    let res = app.post(&format!("{TEMPLATES}/{}/refresh", t["id"]), key, json!({})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["chat_status"], "approved", "{}", res.body);
    res.data().clone()
}

#[actix_web::test]
async fn the_thirteen_question_types_are_listed_behind_forms_view_and_the_module() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let path = format!("{FORMS}/question-types");
    let res = app.get(&path, chat.key()).await;
    assert_status(&res, 200);
    let items = res.data()["items"].as_array().unwrap_or_else(|| panic!("items in {}", res.body)).clone();
    let keys: Vec<&str> = items.iter().map(|t| str_of(t, "type")).collect();
    assert_eq!(
        keys,
        [
            "short_text",
            "long_text",
            "number",
            "email",
            "phone",
            "date",
            "dropdown",
            "single_choice",
            "multiple_choice",
            "yes_no",
            "agreement",
            "photo",
            "document"
        ]
    );
    for t in &items {
        assert!(t["component"].as_str().is_some_and(|c| !c.is_empty()), "{t}");
        assert!(t["column_fit"].as_str().is_some_and(|c| !c.is_empty()), "{t}");
        assert!(t["limits"]["label_max"].as_u64().is_some_and(|n| n >= 20), "{t}");
    }
    let of = |key: &str| items.iter().find(|t| t["type"] == key).cloned().unwrap_or_default();
    assert_eq!(
        of("number")["limits"],
        json!({"label_max": 20, "options_max": null, "files_max": null, "min_max": true})
    );
    assert_eq!(
        (of("number")["component"].as_str(), of("number")["column_fit"].as_str()),
        (Some("TextInput"), Some("number"))
    );
    assert_eq!(of("dropdown")["limits"]["options_max"], 200);
    assert_eq!(of("single_choice")["limits"]["options_max"], 20);
    assert_eq!(of("photo")["limits"]["files_max"], 10);
    assert_eq!(of("agreement")["component"], "OptIn");
    assert_eq!(of("multiple_choice")["column_fit"], "multi_select");

    // without forms.view
    let others = key_with(&app, chat.tenant(), "forms.create,forms.edit,forms.publish,forms.send").await;
    assert_error(&app.get(&path, &others).await, 403);
    // the module switched off: refused even with every permission
    forms_module(&app, chat.tenant(), false).await;
    assert_error(&app.get(&path, chat.key()).await, 403);
    forms_module(&app, chat.tenant(), true).await;
    assert_status(&app.get(&path, chat.key()).await, 200);
}

#[actix_web::test]
async fn a_form_is_saved_with_its_issues_placed_and_its_accounts_listed() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let form = create(&app, chat.key(), json!({"name": "Usajili", "definition": good_definition()})).await;
    assert_eq!(form["name"], "Usajili");
    assert_eq!(form["status"], "draft");
    assert_eq!(form["version"], 0);
    assert_eq!(form["issues"], json!([]));
    assert_eq!(form["versions"], json!([]));
    assert_eq!(form["waba_id"], WABA);
    assert_eq!(form["definition"]["pages"][1]["questions"][0]["options"][1], json!({"key": "l", "label": "Kubwa"}));
    assert_eq!(form["accounts"], json!([{"waba_id": WABA, "role": "home", "live_status": null, "error": null}]));
    assert!(form["id"].is_i64());

    // every rule broken is listed with its path; the form is saved all the same
    let choices: Vec<Value> =
        (0..21).map(|i| json!({"key": format!("o{i}"), "label": format!("Chaguo {i}")})).collect();
    let broken = json!({"pages": [
        {"title": "Kwanza", "questions": [
            {"key": "name", "type": "short_text", "label": "Jina lako kamili tafadhali"},
            {"key": "pick", "type": "single_choice", "label": "Chagua", "options": choices},
            {"key": "pic", "type": "photo", "label": "Picha ya kwanza"},
        ]},
        {"title": "Pili", "questions": [
            {"key": "pic2", "type": "photo", "label": "Picha ya pili"},
            {"key": "name", "type": "long_text", "label": "Jina tena"},
        ]},
    ]});
    let res = app.post(FORMS, chat.key(), json!({"name": "Mbovu", "definition": broken})).await;
    assert_status(&res, 201);
    let saved = res.data().clone();
    assert_eq!(saved["status"], "draft");
    let found = issue_pairs(&saved["issues"]);
    for (path, code) in [
        ("pages[0].questions[0].label", "too_long"),
        ("pages[0].questions[1].options", "too_many"),
        ("pages[0].questions[2]", "wrong_page"),
        ("pages[1].questions[0].type", "too_many"),
        ("pages[1].questions[1].key", "duplicate"),
    ] {
        assert!(found.contains(&(path.to_owned(), code.to_owned())), "{path} {code} in {found:?}");
    }
    assert_eq!(found.len(), 5, "nothing else: {found:?}");
    assert!(saved["issues"][0]["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert_eq!(read(&app, chat.key(), &saved).await["issues"], saved["issues"], "read back with the same issues");

    // a label of exactly 20 characters is fine
    let twenty =
        json!({"pages": [{"title": "P", "questions": [{"key": "a", "type": "email", "label": "x".repeat(20)}]}]});
    assert_eq!(create(&app, chat.key(), json!({"name": "Twenty", "definition": twenty})).await["issues"], json!([]));

    // refusals
    assert_field_error(&app.post(FORMS, chat.key(), json!({"definition": good_definition()})).await, "name");
    assert_field_error(
        &app.post(FORMS, chat.key(), json!({"name": "  ", "definition": good_definition()})).await,
        "name",
    );
    assert_field_error(
        &app.post(FORMS, chat.key(), json!({"name": "x".repeat(121), "definition": good_definition()})).await,
        "name",
    );
    assert_field_error(&app.post(FORMS, chat.key(), json!({"name": "Hakuna"})).await, "definition");
    assert_field_error(
        &app.post(FORMS, chat.key(), json!({"name": "Si fomu", "definition": "pages"})).await,
        "definition",
    );
    let unknown = json!({"name": "Usajili", "definition": good_definition(), "waba_id": "999999999"});
    assert_field_error(&app.post(FORMS, chat.key(), unknown).await, "waba_id");
    let bad_language = json!({"name": "Menyu", "menu_shop_id": 1, "menu_language": "fr"});
    assert_field_error(&app.post(FORMS, chat.key(), bad_language).await, "menu_language");

    // more business accounts: the form lists each with its role
    add_account(&app, chat.tenant(), WABA2, PHONE2, BUSINESS2).await;
    add_account(&app, chat.tenant(), "102290129340488", "106540352242988", "+255222000188").await;
    // with several accounts one must be named
    assert_field_error(
        &app.post(FORMS, chat.key(), json!({"name": "Usajili", "definition": good_definition()})).await,
        "waba_id",
    );
    let unknown =
        json!({"name": "Usajili", "definition": good_definition(), "waba_id": WABA, "accounts": ["999999999"]});
    assert_field_error(&app.post(FORMS, chat.key(), unknown).await, "accounts");
    let body =
        json!({"name": "Kila mahali", "definition": good_definition(), "waba_id": WABA2, "accounts": [WABA, WABA2]});
    let wide = create(&app, chat.key(), body).await;
    assert_eq!(wide["waba_id"], WABA2);
    let read_back = read(&app, chat.key(), &wide).await;
    let roles: Vec<(&str, &str)> = read_back["accounts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| (str_of(a, "waba_id"), str_of(a, "role")))
        .collect();
    assert_eq!(roles, [(WABA, "added"), (WABA2, "home"), ("102290129340488", "available")]);
    // the first form keeps its one account
    let first = read(&app, chat.key(), &form).await;
    assert_eq!(account(&first, WABA)["role"], "home");
    assert_eq!(account(&first, WABA2)["role"], "available");
}

#[actix_web::test]
async fn a_patch_changes_the_name_and_working_copy_and_lists_its_issues() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let form = create(&app, chat.key(), json!({"name": "Usajili", "definition": good_definition()})).await;
    let mut changed = good_definition();
    changed["pages"][0]["questions"][0]["label"] = json!("Jina");
    changed["pages"][1]["questions"][3] = json!({"key": "notes", "type": "long_text", "label": "Maelezo"});
    let res = app.patch(&at(&form, ""), chat.key(), json!({"name": "Usajili 2", "definition": changed})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["name"], "Usajili 2");
    assert_eq!(res.data()["definition"]["pages"][0]["questions"][0]["label"], "Jina");
    assert_eq!(res.data()["definition"]["pages"][1]["questions"][3]["key"], "notes");
    assert_eq!(res.data()["issues"], json!([]));
    let now = read(&app, chat.key(), &form).await;
    assert_eq!(now["name"], "Usajili 2");
    assert_eq!(now["definition"], res.data()["definition"]);

    // only the name: the working copy stays
    let res = app.patch(&at(&form, ""), chat.key(), json!({"name": "Usajili 3"})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["definition"], now["definition"]);
    // a working copy with issues is kept, issues listed
    let mut broken = good_definition();
    broken["pages"][0]["questions"][2]["label"] = json!("Namba ya simu ya mkononi");
    let res = app.patch(&at(&form, ""), chat.key(), json!({"definition": broken})).await;
    assert_status(&res, 200);
    assert_eq!(issue_pairs(&res.data()["issues"]), [("pages[0].questions[2].label".to_owned(), "too_long".to_owned())]);
    assert_eq!(res.data()["name"], "Usajili 3");
    // refusals
    assert_field_error(&app.patch(&at(&form, ""), chat.key(), json!({"name": " "})).await, "name");
    assert_field_error(&app.patch(&at(&form, ""), chat.key(), json!({"definition": [1, 2]})).await, "definition");
    assert_error(&app.patch(&format!("{FORMS}/999999"), chat.key(), json!({"name": "X"})).await, 404);
    assert_error(&app.get(&format!("{FORMS}/not-a-number"), chat.key()).await, 404);
    assert_eq!(read(&app, chat.key(), &form).await["name"], "Usajili 3");
}

#[actix_web::test]
async fn publishing_makes_versions_flows_on_the_provider_and_retires_the_previous_after_three_days() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let mut broken = good_definition();
    broken["pages"][0]["questions"][1]["key"] = json!("name");
    let form = create(&app, chat.key(), json!({"name": "Usajili", "definition": broken})).await;
    assert_eq!(issue_pairs(&form["issues"]), [("pages[0].questions[1].key".to_owned(), "duplicate".to_owned())]);

    // our issues: 422 with each under its path, nothing published
    let res = app.request("POST", &at(&form, "/publish"), Some(chat.key()), None).await;
    assert_field_error(&res, "pages[0].questions[1].key");
    let still = read(&app, chat.key(), &form).await;
    assert_eq!((still["version"].as_i64(), still["status"].as_str()), (Some(0), Some("draft")));
    assert_eq!(still["versions"], json!([]));
    assert!(app.messaging.gateways().chat_sandbox().flows().is_empty(), "nothing asked of the provider");

    // fixed, it is version 1 on the provider
    assert_status(&app.patch(&at(&form, ""), chat.key(), json!({"definition": good_definition()})).await, 200);
    let v1 = publish(&app, chat.key(), &form).await;
    assert_eq!(v1["version"], 1);
    assert_eq!(v1["status"], "published");
    assert_eq!(v1["issues"], json!([]));
    let versions = v1["versions"].as_array().cloned().unwrap_or_default();
    assert_eq!(versions.len(), 1, "{v1}");
    assert_eq!(versions[0]["version"], 1);
    assert!(versions[0]["retires_at"].is_null());
    assert_eq!(time_of(&versions[0], "published_at"), app.clock.now());
    assert_eq!(account(&v1, WABA)["live_status"], "PUBLISHED");
    assert!(account(&v1, WABA)["error"].is_null());
    let sandbox = app.messaging.gateways().chat_sandbox();
    let flows = sandbox.flows();
    assert_eq!(flows.len(), 1);
    let first = flows[0].clone();
    assert_eq!((first.status.as_str(), first.waba_id.as_str()), ("PUBLISHED", WABA));
    assert!(first.name.contains("Usajili"), "{}", first.name);
    let flow_json = first.json.clone().expect("the Flow JSON");
    assert!(flow_json["version"].is_string());
    let screens = flow_json["screens"].as_array().cloned().unwrap_or_default();
    assert_eq!(screens.len(), 2, "a screen a page: {flow_json}");
    assert_eq!(screens[0]["title"], "Kuhusu wewe");
    assert_eq!(screens[1]["title"], "Oda yako");
    assert_eq!(screens[1]["terminal"], true);
    let names: Vec<&str> =
        screens[0]["layout"]["children"].as_array().into_iter().flatten().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["name", "age", "phone", "email"]);
    let changes = emitted(&app.pool, chat.tenant(), "form.status_changed").await;
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["form"]["id"], form["id"]);
    assert_eq!(changes[0]["version"], 1);

    // a change, published again: version 2, a flow of its own; version 1 retires in three days
    app.clock.advance(Duration::minutes(5));
    let mut changed = good_definition();
    changed["pages"][0]["questions"][0]["label"] = json!("Jina kamili");
    assert_status(&app.patch(&at(&form, ""), chat.key(), json!({"definition": changed})).await, 200);
    let published_at = app.clock.now();
    let v2 = publish(&app, chat.key(), &form).await;
    assert_eq!(v2["version"], 2);
    assert_eq!(v2["status"], "published");
    let versions = v2["versions"].as_array().cloned().unwrap_or_default();
    let numbers: Vec<i64> = versions.iter().filter_map(|v| v["version"].as_i64()).collect();
    assert_eq!(numbers, [2, 1], "newest first");
    assert!(versions[0]["retires_at"].is_null());
    assert_eq!(time_of(&versions[0], "published_at"), published_at);
    assert_eq!(time_of(&versions[1], "retires_at"), published_at + Duration::days(3));
    assert_eq!(account(&v2, WABA)["live_status"], "PUBLISHED");
    let flows = flows_on(&app, WABA);
    assert_eq!(flows.len(), 2);
    let second = flows[1].0.clone();
    assert_ne!(second, first.id);
    assert_eq!(flows, [(first.id.clone(), "PUBLISHED".into()), (second.clone(), "PUBLISHED".into())]);
    assert_eq!(
        sandbox.flow(&second).and_then(|f| f.json).map(|j| j["screens"][0]["layout"]["children"][0]["label"].clone()),
        Some(json!("Jina kamili"))
    );

    // version 1 keeps opening until its three days are up, then its flow is deprecated
    app.advance(Duration::days(3) - Duration::minutes(1)).await;
    assert_eq!(flows_on(&app, WABA), [(first.id.clone(), "PUBLISHED".into()), (second.clone(), "PUBLISHED".into())]);
    app.advance(Duration::minutes(1)).await;
    assert_eq!(flows_on(&app, WABA), [(first.id.clone(), "DEPRECATED".into()), (second.clone(), "PUBLISHED".into())]);
    let now = read(&app, chat.key(), &form).await;
    assert_eq!((now["version"].as_i64(), now["status"].as_str()), (Some(2), Some("published")));
    assert_eq!(account(&now, WABA)["live_status"], "PUBLISHED");

    // a published key keeps its type
    let mut retyped = good_definition();
    retyped["pages"][0]["questions"][1] = json!({"key": "age", "type": "short_text", "label": "Umri"});
    let res = app.patch(&at(&form, ""), chat.key(), json!({"definition": retyped})).await;
    assert_eq!(
        issue_pairs(&res.data()["issues"]),
        [("pages[0].questions[1].type".to_owned(), "type_changed".to_owned())]
    );
    let res = app.request("POST", &at(&form, "/publish"), Some(chat.key()), None).await;
    assert_field_error(&res, "pages[0].questions[1].type");
    assert_eq!(read(&app, chat.key(), &form).await["version"], 2);
    assert_eq!(app.messaging.gateways().chat_sandbox().flows().len(), 2, "nothing asked of the provider");

    // the provider's refusal of the definition: 422 with its words, the version unchanged
    let mut blocked = good_definition();
    blocked["pages"][1]["title"] = json!("BLOCKED page");
    assert_status(&app.patch(&at(&form, ""), chat.key(), json!({"definition": blocked})).await, 200);
    let res = app.request("POST", &at(&form, "/publish"), Some(chat.key()), None).await;
    assert_field_error(&res, "definition");
    let words = res.body["errors"]["definition"].to_string();
    assert!(words.contains(providers::chat_sandbox::FLOW_BLOCKED_REASON), "{}", res.body);
    let now = read(&app, chat.key(), &form).await;
    assert_eq!((now["version"].as_i64(), now["status"].as_str()), (Some(2), Some("published")));
    assert_eq!(now["versions"].as_array().map(Vec::len), Some(2));
    assert_eq!(account(&now, WABA)["live_status"], "PUBLISHED", "version 2 is still live");
    assert!(account(&now, WABA)["error"].as_str().is_some_and(|e| !e.is_empty()), "{now}");
    let statuses: Vec<String> = flows_on(&app, WABA).into_iter().map(|(_, s)| s).collect();
    assert_eq!(statuses, ["DEPRECATED", "PUBLISHED", "DRAFT"], "the refused flow was never published");
}

#[actix_web::test]
async fn a_send_inside_the_window_is_a_flow_message_and_outside_needs_an_approved_template() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let form = create(&app, chat.key(), json!({"name": "Usajili", "definition": good_definition()})).await;
    writes(&app, &chat, "0000", "wamid.IN1").await;
    // not published yet
    let res = app.post(&at(&form, "/send"), chat.key(), json!({"to": e164("0000")})).await;
    assert_error(&res, 409);
    assert!(app.messaging.gateways().chat_sandbox().sent_to(&e164("0000")).is_empty());

    publish(&app, chat.key(), &form).await;
    let flow_id = flows_on(&app, WABA)[0].0.clone();
    let body = json!({"to": "0712340000", "body": "Tafadhali jaza fomu hii", "cta": "Fungua", "reference": "REF-1"});
    let res = app.post(&at(&form, "/send"), chat.key(), body).await;
    assert_status(&res, 202);
    let sent = res.data().clone();
    let token = str_of(&sent, "send_token").to_owned();
    assert!(!token.is_empty());
    assert_eq!(sent["version"], 1);
    let uid = str_of(&sent, "message_id").to_owned();
    // the stored message is the provider's flow message carrying the token
    let message = app.get(&format!("/api/v3/chat/{uid}"), chat.key()).await;
    assert_status(&message, 200);
    let message = message.data().clone();
    assert_eq!(message["direction"], "outbound");
    assert_eq!(message["recipient"], e164("0000"));
    assert_eq!(message["status"], sent["status"]);
    assert!(message["conversation_id"].is_i64(), "{message}");
    let interactive = &message["metadata"]["interactive"];
    assert_eq!(interactive["type"], "flow", "{message}");
    assert_eq!(interactive["body"]["text"], "Tafadhali jaza fomu hii");
    let parameters = &interactive["action"]["parameters"];
    assert_eq!(parameters["flow_token"], token.as_str());
    assert_eq!(parameters["flow_id"], flow_id.as_str());
    assert_eq!(parameters["flow_cta"], "Fungua");
    // ... and the provider was asked for exactly that
    let asked = app.messaging.gateways().chat_sandbox().sent_to(&e164("0000"));
    assert_eq!(asked.len(), 1);
    let ChatContent::Interactive { interactive } = &asked[0].content else { panic!("a flow message: {asked:?}") };
    assert_eq!(interactive["type"], "flow");
    assert_eq!(interactive["action"]["parameters"]["flow_token"], token.as_str());
    assert_eq!(interactive["action"]["parameters"]["flow_id"], flow_id.as_str());

    // by conversation, with the defaults (the form's name, `Open`); each send its own token
    let conversation = message["conversation_id"].clone();
    let res = app.post(&at(&form, "/send"), chat.key(), json!({"conversation_id": conversation})).await;
    assert_status(&res, 202);
    assert_ne!(res.data()["send_token"], token.as_str());
    let asked = app.messaging.gateways().chat_sandbox().sent_to(&e164("0000"));
    let ChatContent::Interactive { interactive } = &asked[1].content else { panic!("a flow message: {asked:?}") };
    assert_eq!(interactive["body"]["text"], "Usajili");
    assert_eq!(interactive["action"]["parameters"]["flow_cta"], "Open");
    assert_eq!(interactive["action"]["parameters"]["flow_token"], res.data()["send_token"]);

    // the rules of the body
    let long = json!({"to": e164("0000"), "body": "x".repeat(1_025)});
    assert_field_error(&app.post(&at(&form, "/send"), chat.key(), long).await, "body");
    let exact = json!({"to": e164("0000"), "body": "x".repeat(1_024), "cta": "y".repeat(20)});
    assert_status(&app.post(&at(&form, "/send"), chat.key(), exact).await, 202);
    let cta = json!({"to": e164("0000"), "cta": "y".repeat(21)});
    assert_field_error(&app.post(&at(&form, "/send"), chat.key(), cta).await, "cta");
    assert_field_error(&app.post(&at(&form, "/send"), chat.key(), json!({"body": "Jaza"})).await, "to");
    assert_field_error(&app.post(&at(&form, "/send"), chat.key(), json!({"to": "not a number"})).await, "to");
    assert_error(&app.post(&at(&form, "/send"), chat.key(), json!({"conversation_id": 999_999})).await, 404);
    // a customer who never wrote can only be reached by a template, which needs a conversation
    let res = app.post(&at(&form, "/send"), chat.key(), json!({"to": e164("0011")})).await;
    assert_error(&res, 409);
    assert_eq!(res.body["reason"], "window_closed", "{}", res.body);
    assert_eq!(app.messaging.gateways().chat_sandbox().sent_to(&e164("0000")).len(), 3, "no refused send went out");

    // a day later the window is closed: 409 without a template, 202 with an approved one
    app.advance(Duration::hours(25)).await;
    let res = app.post(&at(&form, "/send"), chat.key(), json!({"to": e164("0000")})).await;
    assert_error(&res, 409);
    assert_eq!(res.body["reason"], "window_closed", "{}", res.body);
    let template = approved_template(&app, chat.key(), "fomu_ya_usajili").await;
    let res =
        app.post(&at(&form, "/send"), chat.key(), json!({"to": e164("0000"), "template_id": template["id"]})).await;
    assert_status(&res, 202);
    let templated = str_of(res.data(), "send_token").to_owned();
    let asked = app.messaging.gateways().chat_sandbox().sent_to(&e164("0000"));
    let last = asked.last().expect("sent");
    let ChatContent::Template { name, components, .. } = &last.content else { panic!("a template: {last:?}") };
    assert_eq!(name, "fomu_ya_usajili");
    assert!(json!(components).to_string().contains(&templated), "the flow button carries the token: {components:?}");
    // a template not approved is refused
    let draft = json!({"name": "rasimu", "language": "sw", "category": "UTILITY", "body": "Habari", "submit": false});
    let draft = app.post(TEMPLATES, chat.key(), draft).await;
    assert_status(&draft, 201);
    let res =
        app.post(&at(&form, "/send"), chat.key(), json!({"to": e164("0000"), "template_id": draft.data()["id"]})).await;
    assert_field_error(&res, "template_id");
    assert_field_error(
        &app.post(&at(&form, "/send"), chat.key(), json!({"to": e164("0000"), "template_id": 999_999})).await,
        "template_id",
    );

    // a customer of another business account of the tenant: the form is not there
    let token2 = add_account(&app, chat.tenant(), WABA2, PHONE2, BUSINESS2).await;
    let res = deliver(
        &app,
        &format!("/hooks/chat/{token2}"),
        Some(APP_SECRET),
        &to_second(text_from(&chat_id("0022"), "wamid.IN2", "Habari")),
    )
    .await;
    assert_status(&res, 200);
    let res = app.post(&at(&form, "/send"), chat.key(), json!({"to": e164("0022")})).await;
    assert_field_error(&res, "to");
    assert_eq!(res.body["reason"], "other_account", "{}", res.body);
    assert!(app.messaging.gateways().chat_sandbox().sent_to(&e164("0022")).is_empty());
}

#[actix_web::test]
async fn a_flow_reply_is_stored_once_as_an_answer_and_announced() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let form = published_form(&app, chat.key()).await;
    writes(&app, &chat, "0000", "wamid.IN1").await;
    let sent = send_to(&app, chat.key(), &form, "0000").await;
    let token = str_of(&sent, "send_token").to_owned();
    let message = app.get(&format!("/api/v3/chat/{}", str_of(&sent, "message_id")), chat.key()).await;
    let conversation = message.data()["conversation_id"].clone();
    assert!(conversation.is_i64(), "{}", message.body);

    let body = reply("0000", "wamid.REPLY1", &token, &good_answers());
    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &body).await;
    assert_status(&res, 200);
    let answers = app.get(&at(&form, "/answers"), chat.key()).await;
    assert_status(&answers, 200);
    let page = answers.data().clone();
    let items = page["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 1, "{page}");
    assert!(page["next_before"].is_null());
    let answer = &items[0];
    assert_eq!(answer["form_id"], form["id"]);
    assert_eq!(answer["version"], 1);
    assert_eq!(answer["source"], "api");
    assert_eq!(answer["conversation_id"], conversation);
    assert_eq!(answer["customer"], e164("0000"));
    assert_eq!(answer["reference"], "REF-1");
    assert_eq!(answer["issues"], json!([]));
    assert!(answer["record"].is_null());
    assert_eq!(time_of(answer, "created_at"), app.clock.now());
    let expected = json!({
        "name": "Amina Juma", "age": 30, "phone": "+255712340000", "email": "amina@example.com",
        "size": "l", "extras": ["milk", "sugar"], "day": "2026-12-01", "terms": true,
    });
    assert_eq!(answer["answers"], expected, "numbers as numbers, choices as keys, agreements as booleans");

    // the provider delivers it again: still one answer, announced once
    assert_status(&deliver(&app, &chat.hook(), Some(APP_SECRET), &body).await, 200);
    let again = app.get(&at(&form, "/answers"), chat.key()).await;
    assert_eq!(again.data()["items"].as_array().map(Vec::len), Some(1));
    let submitted = emitted(&app.pool, chat.tenant(), "form.submitted").await;
    assert_eq!(submitted.len(), 1, "{submitted:?}");
    let event = &submitted[0];
    assert_eq!(event["form"]["id"], form["id"]);
    assert_eq!(event["form"]["name"], "Usajili");
    assert_eq!(event["version"], 1);
    assert_eq!(event["source"], "api");
    assert_eq!(event["conversation_id"], conversation);
    assert_eq!(event["answers"], expected);

    // phone and email only with forms.answers.export
    let viewer = key_with(&app, chat.tenant(), "forms.answers.view").await;
    let seen = app.get(&at(&form, "/answers"), &viewer).await;
    assert_status(&seen, 200);
    let hidden = &seen.data()["items"][0]["answers"];
    assert!(hidden.get("phone").is_none() && hidden.get("email").is_none(), "{hidden}");
    assert_eq!(hidden["name"], "Amina Juma");
    assert_eq!(hidden["age"], 30);
    let exporter = key_with(&app, chat.tenant(), "forms.answers.view,forms.answers.export").await;
    let shown = app.get(&at(&form, "/answers"), &exporter).await;
    assert_eq!(shown.data()["items"][0]["answers"], expected);
    let nobody = key_with(&app, chat.tenant(), "forms.view,forms.answers.export").await;
    assert_error(&app.get(&at(&form, "/answers"), &nobody).await, 403);

    // a reply the version's rules refuse is kept, beside why
    let mut past_max = good_answers();
    past_max["age"] = json!(150);
    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &reply("0000", "wamid.REPLY2", &token, &past_max)).await;
    assert_status(&res, 200);
    let page = app.get(&at(&form, "/answers"), chat.key()).await.data().clone();
    let items = page["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 2);
    assert!(items[0]["id"].as_i64() > items[1]["id"].as_i64(), "newest first");
    let kept = &items[0];
    assert_eq!(issue_pairs(&kept["issues"]), [("age".to_owned(), "out_of_range".to_owned())]);
    assert_eq!(kept["answers"]["age"], 150);
    assert_eq!(kept["answers"]["size"], "l");
    assert!(kept["answers"].get("flow_token").is_none(), "the token is not an answer: {kept}");
    let submitted = emitted(&app.pool, chat.tenant(), "form.submitted").await;
    assert_eq!(submitted.len(), 2);
    assert_eq!(issue_pairs(&submitted[1]["issues"]), [("age".to_owned(), "out_of_range".to_owned())]);
    // a reply is read against the version that was sent, whatever was published since
    let mut v2 = good_definition();
    v2["pages"][1]["questions"][3] =
        json!({"key": "address", "type": "long_text", "label": "Anwani", "required": true});
    assert_status(&app.patch(&at(&form, ""), chat.key(), json!({"definition": v2})).await, 200);
    assert_eq!(publish(&app, chat.key(), &form).await["version"], 2);
    let res =
        deliver(&app, &chat.hook(), Some(APP_SECRET), &reply("0000", "wamid.REPLY4", &token, &good_answers())).await;
    assert_status(&res, 200);
    let page = app.get(&at(&form, "/answers"), chat.key()).await.data().clone();
    assert_eq!(page["items"].as_array().map(Vec::len), Some(3));
    let late = &page["items"][0];
    assert_eq!(late["version"], 1, "{late}");
    assert_eq!(late["issues"], json!([]));
    assert_eq!(late["answers"], expected);
    // a reply naming no send of this tenant is only a message
    let res =
        deliver(&app, &chat.hook(), Some(APP_SECRET), &reply("0000", "wamid.REPLY3", "ft_unknown", &good_answers()))
            .await;
    assert_status(&res, 200);
    assert_eq!(app.get(&at(&form, "/answers"), chat.key()).await.data()["items"].as_array().map(Vec::len), Some(3));
    assert_eq!(emitted(&app.pool, chat.tenant(), "form.submitted").await.len(), 3);
}

#[actix_web::test]
async fn answers_page_newest_first_with_before_and_since() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let form = published_form(&app, chat.key()).await;
    writes(&app, &chat, "0000", "wamid.IN1").await;
    let token = str_of(&send_to(&app, chat.key(), &form, "0000").await, "send_token").to_owned();
    let customer = chat_id("0000");
    let batch = |from: usize, to: usize| {
        let messages: Vec<Value> =
            (from..to).map(|i| reply_message(&customer, &format!("wamid.R{i}"), &token, &good_answers())).collect();
        delivery(json!({"contacts": [{"profile": {"name": "Amina"}, "wa_id": customer}], "messages": messages}))
    };
    // three early answers, then 52 an hour later, each delivery a batch of replies
    assert_status(&deliver(&app, &chat.hook(), Some(APP_SECRET), &batch(0, 3)).await, 200);
    app.clock.advance(Duration::hours(1));
    let later = app.clock.now();
    assert_status(&deliver(&app, &chat.hook(), Some(APP_SECRET), &batch(3, 55)).await, 200);

    let key = chat.key();
    let page = |query: String| {
        let app = &app;
        let path = format!("{}{query}", at(&form, "/answers"));
        async move {
            let res = app.get(&path, key).await;
            assert_status(&res, 200);
            res.data().clone()
        }
    };
    let ids = |page: &Value| -> Vec<i64> {
        page["items"].as_array().into_iter().flatten().filter_map(|a| a["id"].as_i64()).collect()
    };
    let first = page(String::new()).await;
    let first_ids = ids(&first);
    assert_eq!(first_ids.len(), 50);
    assert!(first_ids.windows(2).all(|w| w[0] > w[1]), "newest first: {first_ids:?}");
    let next = first["next_before"].as_i64().expect("a next page");
    assert_eq!(next, first_ids[49]);
    let second = page(format!("?before={next}")).await;
    let second_ids = ids(&second);
    assert_eq!(second_ids.len(), 5);
    assert!(second_ids.windows(2).all(|w| w[0] > w[1]));
    assert!(second_ids[0] < next);
    assert!(second["next_before"].is_null(), "the last page");

    // since: only the later ones, paged the same way
    let since = later.format(&time::format_description::well_known::Rfc3339).expect("rfc 3339");
    let recent = page(format!("?since={since}")).await;
    assert_eq!(ids(&recent), first_ids);
    let rest = page(format!("?since={since}&before={}", recent["next_before"])).await;
    assert_eq!(ids(&rest).len(), 2, "52 answers since then");
    assert!(rest["next_before"].is_null());
    let after = (later + Duration::seconds(1)).format(&time::format_description::well_known::Rfc3339).expect("rfc");
    assert_eq!(ids(&page(format!("?since={after}")).await), Vec::<i64>::new());
    assert_field_error(&app.get(&format!("{}?since=yesterday", at(&form, "/answers")), chat.key()).await, "since");
}

#[actix_web::test]
async fn a_menu_form_lists_the_shop_s_products_and_its_answer_places_the_order() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let res = app.post(CATALOGUES, chat.key(), json!({"name": "Duka Letu", "source_of_truth": "api"})).await;
    assert_status(&res, 201);
    let shop = res.data()["id"].as_i64().expect("a shop id");
    let res = app
        .patch(
            &format!("{CATALOGUES}/{shop}"),
            chat.key(),
            json!({"waba_id": WABA, "channels": ["chat", "storefront"]}),
        )
        .await;
    assert_status(&res, 200);
    let products = [
        ("KAHAWA-1", "Kahawa 500g", 1_800_000),
        ("MANDAZI", "Mandazi", 50_000),
        ("CHAI", "Chai ya tangawizi", 650_000),
    ];
    for (sku, name, price) in products {
        let res = app
            .put(
                &format!("{CATALOGUES}/{shop}/products/by-sku/{sku}"),
                chat.key(),
                json!({"name": name, "price": price}),
            )
            .await;
        assert!(res.status == 200 || res.status == 201, "{}", res.body);
    }

    // a product taken off the shelf is not on the menu
    let res = app.delete(&format!("{CATALOGUES}/{shop}/products/by-sku/MANDAZI"), chat.key()).await;
    assert_status(&res, 200);

    // refusals
    let both = json!({"name": "Menyu", "menu_shop_id": shop, "definition": good_definition()});
    assert_field_error(&app.post(FORMS, chat.key(), both).await, "definition");
    assert_field_error(
        &app.post(FORMS, chat.key(), json!({"name": "Menyu", "menu_shop_id": 999_999})).await,
        "menu_shop_id",
    );

    let form = create(&app, chat.key(), json!({"name": "Menyu", "menu_shop_id": shop, "menu_language": "en"})).await;
    assert_eq!(form["menu_shop_id"], shop);
    assert_eq!(form["menu_language"], "en");
    assert_eq!(form["issues"], json!([]));
    let pages = form["definition"]["pages"].as_array().cloned().unwrap_or_default();
    assert_eq!(pages.len(), 3, "three fixed screens: {form}");
    let quantities: Vec<(&str, &str)> =
        pages[0]["questions"].as_array().into_iter().flatten().map(|q| (str_of(q, "key"), str_of(q, "type"))).collect();
    let kahawa = quantity_key("KAHAWA-1");
    let chai = quantity_key("CHAI");
    assert_eq!(quantities, [(kahawa.as_str(), "number"), (chai.as_str(), "number")]);
    assert_eq!(pages[1]["questions"][0]["key"], "note");
    assert_eq!(pages[2]["questions"][0]["key"], "confirm");
    assert_eq!(pages[2]["questions"][0]["type"], "agreement");
    // its definition is the shop's: fixed; its name is not
    let res = app.patch(&at(&form, ""), chat.key(), json!({"definition": good_definition()})).await;
    assert_error(&res, 409);
    let res = app.patch(&at(&form, ""), chat.key(), json!({"name": "Menyu ya leo"})).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["definition"], form["definition"]);

    publish(&app, chat.key(), &form).await;
    writes(&app, &chat, "0000", "wamid.IN1").await;
    let token = str_of(&send_to(&app, chat.key(), &form, "0000").await, "send_token").to_owned();
    let mut picked = json!({"note": " Leteni kesho ", "confirm": true});
    picked[kahawa.as_str()] = json!("2");
    picked[chai.as_str()] = json!(1);
    let body = reply("0000", "wamid.MENU1", &token, &picked);
    assert_status(&deliver(&app, &chat.hook(), Some(APP_SECRET), &body).await, 200);
    // delivered again: one order, one answer
    assert_status(&deliver(&app, &chat.hook(), Some(APP_SECRET), &body).await, 200);
    app.run_jobs().await;

    let orders = emitted(&app.pool, chat.tenant(), "order.received").await;
    assert_eq!(orders.len(), 1, "{orders:?}");
    let order = &orders[0]["order"];
    let order_id = order["id"].as_i64().expect("an order id");
    let answers = app.get(&at(&form, "/answers"), chat.key()).await.data().clone();
    let items = answers["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 1, "{answers}");
    let record = &items[0]["record"];
    assert_eq!(record["order_id"], order_id);
    assert_eq!(record["order_reference"], format!("ORD-{order_id}"));
    assert_eq!(record["order_total"], 2 * 1_800_000 + 650_000, "the shop's prices: {record}");
    assert_eq!(record["currency"], "TZS");
    assert_eq!(record["items"], json!([{"sku": "KAHAWA-1", "quantity": 2}, {"sku": "CHAI", "quantity": 1}]));
    assert_eq!(record["note"], "Leteni kesho");
    assert_eq!(items[0]["answers"][kahawa.as_str()], 2);
    assert_eq!(items[0]["answers"]["confirm"], true);
    assert_eq!(order["lines"].as_array().map(Vec::len), Some(2), "{order}");
    assert_eq!(order["total_minor"], record["order_total"]);
    assert_eq!(order["platform"], "chat");
    assert_eq!(order["conversation_id"], items[0]["conversation_id"]);
    let submitted = emitted(&app.pool, chat.tenant(), "form.submitted").await;
    assert_eq!(submitted.len(), 1);
    assert_eq!(submitted[0]["record"], *record);

    // an unconfirmed order places nothing; the answer says why
    let mut unconfirmed = json!({"confirm": false});
    unconfirmed[kahawa.as_str()] = json!(1);
    let body = reply("0000", "wamid.MENU2", &token, &unconfirmed);
    assert_status(&deliver(&app, &chat.hook(), Some(APP_SECRET), &body).await, 200);
    app.run_jobs().await;
    assert_eq!(emitted(&app.pool, chat.tenant(), "order.received").await.len(), 1);
    let answers = app.get(&at(&form, "/answers"), chat.key()).await.data().clone();
    assert_eq!(answers["items"].as_array().map(Vec::len), Some(2));
    assert!(answers["items"][0]["record"]["order_id"].is_null(), "{answers}");
}

#[actix_web::test]
async fn the_provider_blocking_the_live_flow_puts_the_form_in_attention_until_it_is_lifted() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let form = published_form(&app, chat.key()).await;
    let flow = flows_on(&app, WABA)[0].0.clone();
    writes(&app, &chat, "0000", "wamid.IN1").await;
    let before = emitted(&app.pool, chat.tenant(), "form.status_changed").await.len();

    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &flow_status(&flow, "PUBLISHED", "BLOCKED")).await;
    assert_status(&res, 200);
    let now = read(&app, chat.key(), &form).await;
    assert_eq!(now["status"], "attention");
    assert_eq!(account(&now, WABA)["live_status"], "BLOCKED");
    let changes = emitted(&app.pool, chat.tenant(), "form.status_changed").await;
    assert_eq!(changes.len(), before + 1);
    let last = changes.last().cloned().unwrap_or_default();
    assert_eq!(last["form"]["id"], form["id"]);
    assert_eq!(last["version"], 1);
    assert!(tells(&last, "attention", "BLOCKED"), "{last}");
    // a blocked form is not sent
    assert_error(&app.post(&at(&form, "/send"), chat.key(), json!({"to": e164("0000")})).await, 409);
    // an unsigned delivery is refused and changes nothing
    let res = deliver(&app, &chat.hook(), None, &flow_status(&flow, "BLOCKED", "PUBLISHED")).await;
    assert_eq!(res.status, 401, "{}", res.body);
    assert_eq!(read(&app, chat.key(), &form).await["status"], "attention");

    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &flow_status(&flow, "BLOCKED", "PUBLISHED")).await;
    assert_status(&res, 200);
    let now = read(&app, chat.key(), &form).await;
    assert_eq!(now["status"], "published");
    assert_eq!(account(&now, WABA)["live_status"], "PUBLISHED");
    let changes = emitted(&app.pool, chat.tenant(), "form.status_changed").await;
    assert_eq!(changes.len(), before + 2);
    let last = changes.last().cloned().unwrap_or_default();
    assert_eq!(last["form"]["id"], form["id"]);
    assert!(tells(&last, "published", "PUBLISHED"), "{last}");

    // throttled: ten sends an hour
    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &flow_status(&flow, "PUBLISHED", "THROTTLED")).await;
    assert_status(&res, 200);
    let now = read(&app, chat.key(), &form).await;
    assert_eq!(
        (now["status"].as_str(), account(&now, WABA)["live_status"].as_str()),
        (Some("published"), Some("THROTTLED"))
    );
    for _ in 0..10 {
        send_to(&app, chat.key(), &form, "0000").await;
    }
    let res = app.post(&at(&form, "/send"), chat.key(), json!({"to": e164("0000")})).await;
    assert_error(&res, 429);
    app.clock.advance(Duration::minutes(61));
    writes(&app, &chat, "0000", "wamid.IN2").await;
    send_to(&app, chat.key(), &form, "0000").await;

    // a flow this service did not make is ignored
    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &flow_status("9999999", "PUBLISHED", "BLOCKED")).await;
    assert_status(&res, 200);
    assert_eq!(read(&app, chat.key(), &form).await["status"], "published");
}

#[actix_web::test]
async fn deployments_put_the_live_version_on_more_accounts_and_take_it_off() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let token2 = add_account(&app, chat.tenant(), WABA2, PHONE2, BUSINESS2).await;
    let hook2 = format!("/hooks/chat/{token2}");
    let body = json!({"name": "Usajili", "definition": good_definition(), "waba_id": WABA});
    let form = create(&app, chat.key(), body).await;
    let form = publish(&app, chat.key(), &form).await;
    assert_eq!(account(&form, WABA2)["role"], "available");
    assert!(account(&form, WABA2)["live_status"].is_null());
    assert!(flows_on(&app, WABA2).is_empty());

    // refusals
    let deployments = at(&form, "/deployments");
    assert_field_error(&app.post(&deployments, chat.key(), json!({"waba_ids": []})).await, "waba_ids");
    assert_field_error(&app.post(&deployments, chat.key(), json!({})).await, "waba_ids");
    assert_field_error(&app.post(&deployments, chat.key(), json!({"waba_ids": ["999999999"]})).await, "waba_ids");

    let res = app.post(&deployments, chat.key(), json!({"waba_ids": [WABA2]})).await;
    assert_status(&res, 200);
    let deployed = res.data().clone();
    assert_eq!(account(&deployed, WABA)["role"], "home");
    assert_eq!(account(&deployed, WABA2)["role"], "added");
    assert_eq!(account(&deployed, WABA2)["live_status"], "PUBLISHED");
    let on_second = flows_on(&app, WABA2);
    assert_eq!(on_second.len(), 1);
    assert_eq!(on_second[0].1, "PUBLISHED");
    assert_eq!(read(&app, chat.key(), &form).await["accounts"], deployed["accounts"]);
    // deploying again changes nothing
    let res = app.post(&deployments, chat.key(), json!({"waba_ids": [WABA2, WABA]})).await;
    assert_status(&res, 200);
    assert_eq!(flows_on(&app, WABA2).len(), 1);
    assert_eq!(flows_on(&app, WABA).len(), 1);

    // a customer of the second account gets the form from its number, with its flow
    let res =
        deliver(&app, &hook2, Some(APP_SECRET), &to_second(text_from(&chat_id("0022"), "wamid.IN2", "Habari"))).await;
    assert_status(&res, 200);
    let sent = send_to(&app, chat.key(), &form, "0022").await;
    let asked = app.messaging.gateways().chat_sandbox().sent_to(&e164("0022"));
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].phone_number_id, PHONE2);
    let ChatContent::Interactive { interactive } = &asked[0].content else { panic!("a flow message: {asked:?}") };
    assert_eq!(interactive["action"]["parameters"]["flow_id"], on_second[0].0.as_str());
    // the second account's reply is an answer of the form
    let token = str_of(&sent, "send_token").to_owned();
    let res =
        deliver(&app, &hook2, Some(APP_SECRET), &to_second(reply("0022", "wamid.R2", &token, &good_answers()))).await;
    assert_status(&res, 200);
    let answers = app.get(&at(&form, "/answers"), chat.key()).await.data().clone();
    assert_eq!(answers["items"][0]["customer"], e164("0022"), "{answers}");

    // a new version goes to both accounts
    let mut changed = good_definition();
    changed["pages"][0]["questions"][0]["label"] = json!("Jina kamili");
    assert_status(&app.patch(&at(&form, ""), chat.key(), json!({"definition": changed})).await, 200);
    let v2 = publish(&app, chat.key(), &form).await;
    assert_eq!(account(&v2, WABA2)["live_status"], "PUBLISHED");
    assert_eq!(flows_on(&app, WABA).len(), 2);
    assert_eq!(flows_on(&app, WABA2).len(), 2);

    // taken off the second account: its flows deprecated, the account available again
    let res = app.delete(&format!("{deployments}/{WABA2}"), chat.key()).await;
    assert_status(&res, 200);
    assert_eq!(account(res.data(), WABA2)["role"], "available");
    assert!(account(res.data(), WABA2)["live_status"].is_null());
    assert!(flows_on(&app, WABA2).iter().all(|(_, s)| s == "DEPRECATED"), "{:?}", flows_on(&app, WABA2));
    assert_eq!(account(res.data(), WABA)["live_status"], "PUBLISHED");
    let res = app.post(&at(&form, "/send"), chat.key(), json!({"to": e164("0022")})).await;
    assert_field_error(&res, "to");
    assert_eq!(res.body["reason"], "other_account");
    // the home account cannot be removed
    let res = app.delete(&format!("{deployments}/{WABA}"), chat.key()).await;
    assert_error(&res, 409);
    assert_eq!(account(&read(&app, chat.key(), &form).await, WABA)["role"], "home");
    assert!(flows_on(&app, WABA).iter().any(|(_, s)| s == "PUBLISHED"));
    assert_error(&app.delete(&format!("{deployments}/999999999"), chat.key()).await, 404);

    // a draft deployed has nothing live; its first publish goes to both accounts
    let draft =
        create(&app, chat.key(), json!({"name": "Rasimu", "definition": good_definition(), "waba_id": WABA})).await;
    let res = app.post(&at(&draft, "/deployments"), chat.key(), json!({"waba_ids": [WABA2]})).await;
    assert_status(&res, 200);
    assert_eq!(account(res.data(), WABA2)["role"], "added");
    assert!(account(res.data(), WABA2)["live_status"].is_null());
    assert_eq!(flows_on(&app, WABA2).len(), 2, "nothing published for a draft");
    let published = publish(&app, chat.key(), &draft).await;
    assert_eq!(account(&published, WABA)["live_status"], "PUBLISHED");
    assert_eq!(account(&published, WABA2)["live_status"], "PUBLISHED");
}

/// `(permission, method, path, body, success status)` of every forms route, about `form`.
fn routes(form: &Value) -> Vec<(&'static str, &'static str, String, Option<Value>, u16)> {
    vec![
        ("forms.view", "GET", format!("{FORMS}/question-types"), None, 200),
        (
            "forms.create",
            "POST",
            FORMS.to_owned(),
            Some(json!({"name": "Nyingine", "definition": good_definition(), "waba_id": WABA})),
            201,
        ),
        ("forms.view", "GET", at(form, ""), None, 200),
        ("forms.edit", "PATCH", at(form, ""), Some(json!({"name": "Jina jipya"})), 200),
        ("forms.publish", "POST", at(form, "/publish"), None, 200),
        ("forms.send", "POST", at(form, "/send"), Some(json!({"to": e164("0000")})), 202),
        ("forms.answers.view", "GET", at(form, "/answers"), None, 200),
        ("forms.publish", "POST", at(form, "/deployments"), Some(json!({"waba_ids": [WABA2]})), 200),
        ("forms.publish", "DELETE", at(form, &format!("/deployments/{WABA2}")), None, 200),
    ]
}

#[actix_web::test]
async fn every_route_needs_its_permission_and_the_module() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    add_account(&app, chat.tenant(), WABA2, PHONE2, BUSINESS2).await;
    let body = json!({"name": "Usajili", "definition": good_definition(), "waba_id": WABA});
    let form = create(&app, chat.key(), body).await;
    let form = publish(&app, chat.key(), &form).await;
    writes(&app, &chat, "0000", "wamid.IN1").await;

    for (permission, method, path, body, success) in routes(&form) {
        let without: Vec<&str> = ALL_FORMS.iter().copied().filter(|p| *p != permission).collect();
        let key = key_with(&app, chat.tenant(), &without.join(",")).await;
        let res = app.request(method, &path, Some(&key), body.clone()).await;
        assert_error(&res, 403);
        let key = key_with(&app, chat.tenant(), permission).await;
        let res = app.request(method, &path, Some(&key), body.clone()).await;
        assert_eq!(res.status, success, "{method} {path} with {permission} only: {}", res.body);
    }
    let now = read(&app, chat.key(), &form).await;
    assert_eq!(now["name"], "Jina jipya");
    assert_eq!(now["version"], 2, "published once more by the publish permission alone");

    // the module switched off: every route refused, nothing changed
    forms_module(&app, chat.tenant(), false).await;
    let sent = app.messaging.gateways().chat_sandbox().sent().len();
    for (_, method, path, body, _) in routes(&form) {
        let res = app.request(method, &path, Some(chat.key()), body).await;
        assert_error(&res, 403);
    }
    forms_module(&app, chat.tenant(), true).await;
    let after = read(&app, chat.key(), &form).await;
    assert_eq!((after["name"].as_str(), after["version"].as_i64()), (Some("Jina jipya"), Some(2)));
    assert_eq!(account(&after, WABA2)["role"], "available");
    assert_eq!(app.messaging.gateways().chat_sandbox().sent().len(), sent, "nothing sent");
}

#[actix_web::test]
async fn another_tenant_s_form_is_not_found_on_any_route_and_left_alone() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    add_account(&app, chat.tenant(), WABA2, PHONE2, BUSINESS2).await;
    let body = json!({"name": "Usajili", "definition": good_definition(), "waba_id": WABA});
    let form = create(&app, chat.key(), body).await;
    let form = publish(&app, chat.key(), &form).await;
    writes(&app, &chat, "0000", "wamid.IN1").await;
    let token = str_of(&send_to(&app, chat.key(), &form, "0000").await, "send_token").to_owned();
    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &reply("0000", "wamid.R1", &token, &good_answers())).await;
    assert_status(&res, 200);
    let before = read(&app, chat.key(), &form).await;
    let sent = app.messaging.gateways().chat_sandbox().sent().len();

    let other = app.account("all").await;
    for (_, method, path, body, _) in routes(&form).into_iter().skip(2) {
        let res = app.request(method, &path, Some(&other.key), body).await;
        assert_error(&res, 404);
    }
    let after = read(&app, chat.key(), &form).await;
    assert_eq!(after, before, "unchanged");
    assert_eq!(app.messaging.gateways().chat_sandbox().sent().len(), sent, "nothing sent");
    assert_eq!(app.get(&at(&form, "/answers"), chat.key()).await.data()["items"].as_array().map(Vec::len), Some(1));
}

#[actix_web::test]
async fn a_form_naming_a_data_table_saves_each_answer_as_a_row_through_the_table_s_rules() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let table = json!({"group": {"slug": "forms", "name": "Forms"}, "tables": [{"slug": "signups", "name": "Signups",
        "columns": [{"key": "name", "type": "text", "required": true}, {"key": "age", "type": "number",
            "config": {"max": 60}}]}]});
    app.data.apply(chat.tenant(), table).await.expect("the table");
    let definition = json!({"pages": [{"title": "Usajili", "questions": [
        {"key": "name", "type": "short_text", "label": "Jina", "required": true},
        {"key": "age", "type": "number", "label": "Umri"},
    ]}]});
    let form =
        create(&app, chat.key(), json!({"name": "Signup", "definition": definition, "save_to_table": "signups"})).await;
    assert_eq!(form["save_to_table"], "signups");
    let form = publish(&app, chat.key(), &form).await;
    writes(&app, &chat, "0000", "wamid.IN1").await;
    let rows =
        async || api_tests::sql_rows(&app.pool, "SELECT id::text, data FROM data_records ORDER BY created_at").await;

    // an answer the table takes: a row, and its id in `record`
    let token = str_of(&send_to(&app, chat.key(), &form, "0000").await, "send_token").to_owned();
    let body = reply("0000", "wamid.R1", &token, &json!({"name": "Amina", "age": "30"}));
    assert_status(&deliver(&app, &chat.hook(), Some(APP_SECRET), &body).await, 200);
    let saved = rows().await;
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert_eq!((saved[0]["data"]["name"].clone(), saved[0]["data"]["age"].clone()), (json!("Amina"), json!(30)));
    let answers = app.get(&at(&form, "/answers"), chat.key()).await;
    let record = answers.data()["items"][0]["record"].clone();
    assert_eq!(record, json!({"id": saved[0]["id"], "status": "created", "error": null}));
    let submitted = emitted(&app.pool, chat.tenant(), "form.submitted").await;
    assert_eq!(submitted[0]["record"], record);
    // the same delivery again makes no second row
    assert_status(&deliver(&app, &chat.hook(), Some(APP_SECRET), &body).await, 200);
    assert_eq!(rows().await.len(), 1);

    // an answer the table refuses (its column's max): kept, the refusal in `record`
    let token = str_of(&send_to(&app, chat.key(), &form, "0000").await, "send_token").to_owned();
    let body = reply("0000", "wamid.R2", &token, &json!({"name": "Baraka", "age": "75"}));
    assert_status(&deliver(&app, &chat.hook(), Some(APP_SECRET), &body).await, 200);
    assert_eq!(rows().await.len(), 1, "no row for the refused answer");
    let answers = app.get(&at(&form, "/answers"), chat.key()).await;
    let newest = &answers.data()["items"][0];
    assert_eq!(newest["answers"], json!({"name": "Baraka", "age": 75}), "the answer is kept");
    assert_eq!((newest["record"]["status"].clone(), newest["record"]["id"].clone()), (json!("failed"), json!(null)));
    assert!(newest["record"]["error"].as_str().is_some_and(|e| e.contains("age")), "{newest}");
}
