//! The `content` server's template tools through the SDK's client: list, read, create, submit
//! and refresh chat message templates over the same messaging service as `/chat/templates`,
//! with a sandbox chat account (see `crate::chat::chat_account`), whose review approves a
//! submission after 2 s of the service's clock.

use api_tests::json;
use serde_json::Value;

use super::support::*;
use crate::chat::{WABA, chat_account};

/// Every scope the template tools need.
const SCOPES: &str = "mcp:use mcp:posts mcp:publish";
const TEMPLATES: &str = "/api/v3/chat/templates";

const TOOLS: [&str; 5] = ["list_templates", "get_template", "create_template", "submit_template", "refresh_template"];
const READS: [&str; 3] = ["list_templates", "get_template", "refresh_template"];

fn order_update(name: &str) -> Value {
    json!({
        "name": name,
        "language": "sw",
        "category": "UTILITY",
        "body": "Habari {{1}}, oda {{2}} iko tayari.",
        "footer": "Duka la Mama",
        "variable_samples": {"1": "Amina", "2": "DK-1042"},
    })
}

fn id_of(template: &Value) -> i64 {
    template["id"].as_i64().unwrap_or_else(|| panic!("an id in {template}"))
}

/// What the sandbox provider holds for the test account.
async fn at_provider<S>(app: &api_tests::TestApp<S>) -> usize {
    let sandbox = app.messaging.gateways().chat_sandbox();
    providers::ChatGateway::templates(&**sandbox, WABA).await.expect("the sandbox's templates").len()
}

#[track_caller]
fn assert_scope_refused(error: &Value, missing: &[&str]) {
    assert_eq!(
        (error["code"].clone(), error["reason"].clone()),
        (json!("permission_denied"), json!("insufficient_scope")),
        "{error}"
    );
    assert_eq!(error["missing_scopes"], json!(missing), "{error}");
}

#[actix_web::test]
async fn the_template_tools_are_listed_on_content_with_their_annotations() {
    let app = api_tests::spawn().await;
    let chat = chat_account(&app, "all").await;
    let token = app.mcp_connection(chat.tenant(), chat.account.user, SCOPES).await;
    let server = app.listen();

    let client = connect(&server, "/mcp/v1/content", &token).await;
    assert_eq!(tool_names(&client).await, sorted(&TOOLS));
    let listed: Vec<Value> = client
        .list_all_tools()
        .await
        .expect("tools")
        .into_iter()
        .map(|tool| serde_json::to_value(tool).expect("tool json"))
        .collect();
    let find = |name: &str| listed.iter().find(|t| t["name"] == name).cloned().expect("listed");
    for name in TOOLS {
        let tool = find(name);
        let reads = READS.contains(&name);
        let hints = &tool["annotations"];
        // create makes a new template each call; submit again has nothing more to submit
        let idempotent = name != "create_template";
        assert_eq!(
            (&hints["readOnlyHint"], &hints["destructiveHint"], &hints["idempotentHint"], &hints["openWorldHint"]),
            (&json!(reads), &json!(false), &json!(idempotent), &json!(false)),
            "{name}: {hints}"
        );
        let (scopes, permission) = if reads {
            (json!(["mcp:use", "mcp:posts"]), json!("communications.templates.view"))
        } else {
            (json!(["mcp:use", "mcp:posts", "mcp:publish"]), json!("communications.templates.manage"))
        };
        assert_eq!(
            (&tool["_meta"]["scopes"], &tool["_meta"]["permission"], &tool["_meta"]["server"]),
            (&scopes, &permission, &json!("content")),
            "{name}"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{name}");
    }
    for name in ["get_template", "submit_template", "refresh_template"] {
        assert_eq!(find(name)["inputSchema"]["required"], json!(["template"]), "{name}");
    }
    assert!(find("list_templates")["inputSchema"]["properties"].get("updated_since").is_some());
    assert!(find("list_templates")["outputSchema"]["properties"].get("items").is_some());
    let create = &find("create_template")["inputSchema"]["properties"];
    for member in ["name", "language", "category", "waba_id", "submit", "body", "buttons", "components"] {
        assert!(create.get(member).is_some(), "{member} in {create}");
    }
    let refreshed = &find("refresh_template")["outputSchema"];
    assert!(refreshed["properties"]["refresh"]["properties"].get("found_on_chat").is_some(), "{refreshed}");
    assert!(refreshed["properties"].get("chat_status").is_some(), "{refreshed}");

    // the server says what it offers now
    let info = client.peer_info().expect("server info");
    assert!(info.instructions.as_deref().is_some_and(|i| i.contains("templates")), "{info:?}");

    // without mcp:publish (mcp:write is not it) only the reads are listed; /mcp lists them all
    let writer = app.mcp_connection(chat.tenant(), chat.account.user, "mcp:use mcp:posts mcp:write").await;
    let client = connect(&server, "/mcp/v1/content", &writer).await;
    assert_eq!(tool_names(&client).await, sorted(&READS));
    let client = connect(&server, "/mcp", &token).await;
    let names = tool_names(&client).await;
    for name in TOOLS {
        assert!(names.contains(&name.to_owned()), "{name} in {names:?}");
    }
    // the posts capability opens them; no other does
    let elsewhere = app.mcp_connection(chat.tenant(), chat.account.user, "mcp:use mcp:messaging mcp:publish").await;
    assert!(tool_names(&connect(&server, "/mcp/v1/content", &elsewhere).await).await.is_empty());
}

#[actix_web::test]
async fn create_template_needs_mcp_publish_and_goes_to_review_as_post_chat_templates() {
    let app = api_tests::spawn().await;
    let chat = chat_account(&app, "all").await;
    let token = app.mcp_connection(chat.tenant(), chat.account.user, SCOPES).await;
    let writer = app.mcp_connection(chat.tenant(), chat.account.user, "mcp:use mcp:posts mcp:write").await;
    let server = app.listen();

    // without the elevation: refused by name, nothing written or submitted
    let client = connect(&server, "/mcp/v1/content", &writer).await;
    assert_scope_refused(&refused(&client, "create_template", order_update("order_update")).await, &["mcp:publish"]);
    assert_eq!(rest_data(&app, chat.key(), TEMPLATES).await, json!({"items": []}));
    assert_eq!(at_provider(&app).await, 0);

    // with it: created and submitted, in review at the sandbox
    let client = connect(&server, "/mcp/v1/content", &token).await;
    let created = ok(&client, "create_template", order_update("order_update")).await;
    assert_eq!(
        (created["name"].clone(), created["language"].clone(), created["category"].clone()),
        (json!("order_update"), json!("sw"), json!("utility")),
        "{created}"
    );
    assert_eq!(
        (created["chat_status"].clone(), created["approved"].clone(), created["sendable"].clone()),
        (json!("in_review"), json!(false), json!(false)),
        "{created}"
    );
    assert_eq!(created["submission"], json!({"submitted": true, "queued": false, "message": "Submitted for review."}));
    assert!(created["chat_template_id"].is_string(), "{created}");
    assert_eq!(created["chat_business_account_id"], WABA);
    assert_eq!(created["variables"], json!(["1", "2"]));
    assert_eq!(at_provider(&app).await, 1);

    // the reads are REST's
    let id = id_of(&created);
    let read = ok(&client, "get_template", json!({"template": id})).await;
    assert_eq!(read, created);
    assert_eq!(read, rest_data(&app, chat.key(), &format!("{TEMPLATES}/{id}")).await);
    assert_eq!(ok(&client, "get_template", json!({"template": id.to_string()})).await, read);
    let listed = ok(&client, "list_templates", json!({})).await;
    assert_eq!(listed, rest_data(&app, chat.key(), TEMPLATES).await);
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1), "{listed}");
    let rfc3339 = |at: time::OffsetDateTime| at.format(&time::format_description::well_known::Rfc3339).expect("time");
    let hour = time::Duration::hours(1);
    let since = ok(&client, "list_templates", json!({"updated_since": rfc3339(app.clock.now() - hour)})).await;
    assert_eq!(since, listed);
    let later = ok(&client, "list_templates", json!({"updated_since": rfc3339(app.clock.now() + hour)})).await;
    assert_eq!(later, json!({"items": []}));
    assert_field(&refused(&client, "list_templates", json!({"updated_since": "yesterday"})).await, "updated_since");
    assert_field(&refused(&client, "list_templates", json!({"status": "approved"})).await, "status");

    // the same name and language again is a conflict, nothing more submitted
    assert_code(&refused(&client, "create_template", order_update("order_update")).await, "conflict");
    assert_eq!(at_provider(&app).await, 1);
}

#[actix_web::test]
async fn refusals_of_the_create_rules_are_tool_errors_naming_the_field() {
    let app = api_tests::spawn().await;
    let chat = chat_account(&app, "all").await;
    let token = app.mcp_connection(chat.tenant(), chat.account.user, SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/content", &token).await;

    let error = refused(&client, "create_template", order_update("Order Update")).await;
    assert_field(&error, "name");
    assert!(error["errors"]["name"][0].as_str().is_some_and(|m| m.contains("lowercase")), "{error}");
    let mut no_category = order_update("order_update");
    no_category.as_object_mut().map(|o| o.remove("category"));
    for (args, field) in [
        (no_category, "category"),
        (json!({"name": "order_update", "category": "gossip", "body": "Hi"}), "category"),
        (json!({"name": "order_update", "category": "utility"}), "body"),
        (json!({"name": "order_update", "category": "utility", "body": "Hi {{1}}"}), "variable_samples.1"),
        (json!({"name": 7, "category": "utility", "body": "Hi"}), "name"),
    ] {
        assert_field(&refused(&client, "create_template", args.clone()).await, field);
    }
    assert_eq!(rest_data(&app, chat.key(), TEMPLATES).await, json!({"items": []}));
    assert_eq!(at_provider(&app).await, 0, "nothing reached the provider");
}

#[actix_web::test]
async fn refresh_template_reads_the_providers_approval_now() {
    let app = api_tests::spawn().await;
    let chat = chat_account(&app, "all").await;
    let token = app.mcp_connection(chat.tenant(), chat.account.user, SCOPES).await;
    let reader = app.mcp_connection(chat.tenant(), chat.account.user, "mcp:use mcp:posts").await;
    let server = app.listen();
    let created =
        ok(&connect(&server, "/mcp/v1/content", &token).await, "create_template", order_update("hello")).await;
    let id = id_of(&created);

    // a read: no elevation needed; still in review at first
    let client = connect(&server, "/mcp/v1/content", &reader).await;
    let early = ok(&client, "refresh_template", json!({"template": id})).await;
    assert_eq!(
        (early["chat_status"].clone(), early["refresh"].clone()),
        (json!("in_review"), json!({"found_on_chat": true}))
    );

    app.clock.advance(time::Duration::seconds(2));
    let refreshed = ok(&client, "refresh_template", json!({"template": id})).await;
    assert_eq!(
        (refreshed["chat_status"].clone(), refreshed["approved"].clone(), refreshed["sendable"].clone()),
        (json!("approved"), json!(true), json!(true)),
        "{refreshed}"
    );
    assert_eq!(refreshed["refresh"]["found_on_chat"], true, "{refreshed}");
    // the answer is the template as stored now, with the refresh beside it, as REST answers it
    let mut stored = ok(&client, "get_template", json!({"template": id})).await;
    stored["refresh"] = json!({"found_on_chat": true});
    assert_eq!(refreshed, stored);
    let res = app.post(&format!("{TEMPLATES}/{id}/refresh"), chat.key(), json!({})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data(), &refreshed);
}

#[actix_web::test]
async fn a_template_viewer_may_list_and_refresh_but_not_create_or_submit() {
    let app = api_tests::spawn().await;
    let chat = chat_account(&app, "all").await;
    let res = app.post(TEMPLATES, chat.key(), order_update("order_update")).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let id = id_of(res.data());
    let viewer = app.user(chat.tenant(), "communications.templates.view").await;
    let token = app.mcp_connection(chat.tenant(), viewer, SCOPES).await;
    let server = app.listen();

    // the writes are not theirs: not listed, and refused by the service if called
    let client = connect(&server, "/mcp/v1/content", &token).await;
    assert_eq!(tool_names(&client).await, sorted(&READS));
    for (tool, args) in [("create_template", order_update("another_one")), ("submit_template", json!({"template": id}))]
    {
        let error = refused(&client, tool, args).await;
        assert_code(&error, "permission_denied");
        assert!(error.get("reason").is_none(), "a permission, not a scope: {error}");
    }
    assert_eq!(at_provider(&app).await, 1, "nothing more reached the provider");
    // the reads are
    let listed = ok(&client, "list_templates", json!({})).await;
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed["items"][0]["id"], id);
    assert_eq!(ok(&client, "refresh_template", json!({"template": id})).await["refresh"]["found_on_chat"], true);

    // without the view permission nothing is
    let stranger = app.user(chat.tenant(), "contacts.view").await;
    let token = app.mcp_connection(chat.tenant(), stranger, SCOPES).await;
    let client = connect(&server, "/mcp/v1/content", &token).await;
    assert!(tool_names(&client).await.is_empty());
    assert_code(&refused(&client, "list_templates", json!({})).await, "permission_denied");
    // and the permissions are read again on every call
    app.set_permissions(stranger, "communications.templates.view,communications.templates.manage").await;
    let client = connect(&server, "/mcp/v1/content", &token).await;
    assert_eq!(tool_names(&client).await, sorted(&TOOLS));
    assert_eq!(ok(&client, "create_template", order_update("another_one")).await["chat_status"], "in_review");
}

#[actix_web::test]
async fn another_tenants_template_is_not_found() {
    let app = api_tests::spawn().await;
    let owner = chat_account(&app, "all").await;
    let stranger = chat_account(&app, "all").await;
    let owner_token = app.mcp_connection(owner.tenant(), owner.account.user, SCOPES).await;
    let stranger_token = app.mcp_connection(stranger.tenant(), stranger.account.user, SCOPES).await;
    let server = app.listen();
    let mut draft = order_update("order_update");
    draft["submit"] = json!(false);
    let created = ok(&connect(&server, "/mcp", &owner_token).await, "create_template", draft).await;
    let id = id_of(&created);

    let client = connect(&server, "/mcp", &stranger_token).await;
    for (tool, args) in [
        ("get_template", json!({"template": id})),
        ("get_template", json!({"template": id.to_string()})),
        ("submit_template", json!({"template": id})),
        ("refresh_template", json!({"template": id})),
        // ids that name nothing
        ("get_template", json!({"template": 999_999})),
        ("get_template", json!({"template": "abc"})),
        ("submit_template", json!({"template": "0"})),
    ] {
        assert_code(&refused(&client, tool, args.clone()).await, "not_found");
    }
    assert_field(&refused(&client, "get_template", json!({})).await, "template");
    assert_eq!(ok(&client, "list_templates", json!({})).await, json!({"items": []}));
    // the owner's draft is untouched: never submitted
    let read = rest_data(&app, owner.key(), &format!("{TEMPLATES}/{id}")).await;
    assert_eq!((read["chat_status"].clone(), read["submission"]["submitted"].clone()), (Value::Null, json!(false)));
}

#[actix_web::test]
async fn submit_template_sends_a_draft_to_review() {
    let app = api_tests::spawn().await;
    let chat = chat_account(&app, "all").await;
    let token = app.mcp_connection(chat.tenant(), chat.account.user, SCOPES).await;
    let writer = app.mcp_connection(chat.tenant(), chat.account.user, "mcp:use mcp:posts mcp:write").await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/content", &token).await;

    // submit false saves a draft: nothing goes to the provider
    let mut draft = order_update("order_update");
    draft["submit"] = json!(false);
    let saved = ok(&client, "create_template", draft).await;
    assert_eq!(
        (saved["chat_status"].clone(), saved["submission"]["submitted"].clone(), saved["chat_template_id"].clone()),
        (Value::Null, json!(false), Value::Null),
        "{saved}"
    );
    assert_eq!(at_provider(&app).await, 0);
    let id = id_of(&saved);

    // submitting needs the elevation too
    let error =
        refused(&connect(&server, "/mcp/v1/content", &writer).await, "submit_template", json!({"template": id})).await;
    assert_scope_refused(&error, &["mcp:publish"]);
    assert_eq!(at_provider(&app).await, 0);

    let submitted = ok(&client, "submit_template", json!({"template": id})).await;
    assert_eq!(
        (submitted["id"].clone(), submitted["chat_status"].clone(), submitted["submission"]["submitted"].clone()),
        (json!(id), json!("in_review"), json!(true)),
        "{submitted}"
    );
    assert!(submitted["chat_template_id"].is_string(), "{submitted}");
    assert_eq!(at_provider(&app).await, 1);
    assert_eq!(submitted, rest_data(&app, chat.key(), &format!("{TEMPLATES}/{id}")).await);
    // nothing left to submit: the service's 409 is the tool's conflict
    assert_code(&refused(&client, "submit_template", json!({"template": id})).await, "conflict");
    assert_eq!(at_provider(&app).await, 1);
}
