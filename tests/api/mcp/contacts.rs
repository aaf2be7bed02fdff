//! The contacts tools (issue 16): contact groups and contacts over `contacts::ContactService`,
//! on the `contacts` server and `/mcp`, through the official SDK's client, against what REST
//! reads of the same records.

use serde_json::Value;

use super::support::*;
use api_tests::json;

/// Reads, creates and edits contacts; no leads permission.
const EDITOR: &str = "contacts.view,contacts.create,contacts.edit";
/// Every scope the contacts tools need.
const SCOPES: &str = "mcp:use mcp:contacts mcp:write";

const READ_TOOLS: [&str; 5] =
    ["list_contact_groups", "get_contact_group", "list_contacts", "search_contacts", "get_contact"];
const CONTACT_TOOLS: [&str; 8] = [
    "list_contact_groups",
    "get_contact_group",
    "create_contact_group",
    "list_contacts",
    "search_contacts",
    "get_contact",
    "create_contact",
    "update_contact",
];

fn text(value: &Value, member: &str) -> String {
    value[member].as_str().unwrap_or_else(|| panic!("{member} in {value}")).to_owned()
}

fn number(value: &Value, member: &str) -> i64 {
    value[member].as_i64().unwrap_or_else(|| panic!("{member} in {value}"))
}

fn total(page: &Value) -> i64 {
    page["pagination"]["total"].as_i64().unwrap_or_else(|| panic!("a page: {page}"))
}

fn uids(page: &Value) -> Vec<String> {
    page["items"].as_array().unwrap_or_else(|| panic!("items in {page}")).iter().map(|c| text(c, "uid")).collect()
}

/// A refusal of `code` whose `errors` name `field`.
/// Every contacts tool with arguments naming `group` and `contact` (those that take ids) or
/// well-formed others.
/// A group and one contact in it, made through REST with `key`: their id and uid.
async fn group_with_contact<S, B>(app: &api_tests::TestApp<S>, key: &str) -> (Value, Value)
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let rest = app.post("/api/v3/contact-groups", key, json!({"name": "Customers"})).await;
    let group = rest.data()["id"].clone();
    let rest = app.post(&format!("/api/v3/contact-groups/{group}/contacts"), key, json!({"PHONE": "0712345678"})).await;
    (group, rest.data()["uid"].clone())
}

fn every_call(group: &Value, contact: &Value) -> Vec<(&'static str, Value)> {
    vec![
        ("list_contact_groups", json!({})),
        ("get_contact_group", json!({"group": group})),
        ("create_contact_group", json!({"name": "Mine"})),
        ("list_contacts", json!({"group": group})),
        ("search_contacts", json!({"group_id": group})),
        ("get_contact", json!({"group": group, "contact": contact})),
        ("create_contact", json!({"group": group, "PHONE": "0713000999"})),
        ("update_contact", json!({"group": group, "contact": contact, "name": "Changed"})),
    ]
}

#[actix_web::test]
async fn the_contacts_tools_run_the_contact_service_and_rest_reads_the_same() {
    let app = api_tests::spawn().await;
    let (tenant, user, token) = account(&app, EDITOR, SCOPES).await;
    let key = app.key(tenant, user).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/contacts", &token).await;
    assert_eq!(tool_names(&client).await, sorted(&CONTACT_TOOLS));
    let tools = client.list_all_tools().await.expect("tools");
    let create = tools.iter().find(|t| t.name == "create_contact").expect("create_contact");
    assert_eq!(create.input_schema["required"], json!(["group"]));
    assert!(create.input_schema["properties"].get("idempotency_key").is_none(), "POST has no Idempotency-Key");
    let update = tools.iter().find(|t| t.name == "update_contact").expect("update_contact");
    let hints = update.annotations.as_ref().expect("annotations");
    assert_eq!((hints.read_only_hint, hints.destructive_hint), (Some(false), Some(false)));

    // groups
    let group = ok(
        &client,
        "create_contact_group",
        json!({"name": "Customers", "custom_fields": ["city", {"key": "tier", "type": "number"}]}),
    )
    .await;
    assert_eq!(group["name"], "Customers");
    assert_eq!((group["status"].clone(), group["contacts_count"].clone()), (json!("active"), json!(0)));
    assert_eq!(
        group["custom_fields"],
        json!([{"key": "city", "label": "city", "type": "text"}, {"key": "tier", "label": "tier", "type": "number"}])
    );
    let (group_id, group_uid) = (number(&group, "id"), text(&group, "uid"));
    let suppliers = ok(&client, "create_contact_group", json!({"name": "Suppliers"})).await;
    let suppliers_id = number(&suppliers, "id");

    // contacts: the contract's body, ids as numbers, UUIDs or their text
    let asha = ok(
        &client,
        "create_contact",
        json!({"group": group_id, "PHONE": "0712 345 678", "FIRST_NAME": "Asha", "LAST_NAME": "Juma", "city": "Arusha"}),
    )
    .await;
    assert_eq!(asha["full_phone_number"], "255712345678", "the account's calling code: {asha}");
    assert_eq!((asha["name"].clone(), asha["is_subscribed"].clone()), (json!("Asha Juma"), json!(true)));
    assert_eq!(asha["custom_field_values"], json!({"city": "Arusha"}));
    assert_eq!((asha["group_id"].clone(), asha["group_uid"].clone()), (json!(group_id), json!(group_uid)));
    let asha_uid = text(&asha, "uid");
    assert!(asha_uid.starts_with("ctc_"), "{asha_uid}");
    let baraka = ok(
        &client,
        "create_contact",
        json!({"group": group_uid, "phone_number": 712000111, "country_code": "254", "name": "Baraka", "is_subscribed": false}),
    )
    .await;
    assert_eq!(baraka["full_phone_number"], "254712000111");
    let chausiku = ok(
        &client,
        "create_contact",
        json!({"group": suppliers_id.to_string(), "PHONE": "0755 000 111", "NAME": "Chausiku"}),
    )
    .await;
    assert_eq!(chausiku["group_id"], suppliers_id);

    let read = ok(&client, "get_contact_group", json!({"group": group_uid})).await;
    assert_eq!((read["contacts_count"].clone(), read["subscribed_count"].clone()), (json!(2), json!(1)), "{read}");
    assert_eq!(ok(&client, "get_contact_group", json!({"group": group_id.to_string()})).await["uid"], group_uid);

    let by_uid = ok(&client, "get_contact", json!({"group": group_id, "contact": asha_uid})).await;
    assert_eq!(by_uid, asha);
    let by_id = ok(&client, "get_contact", json!({"group": group_uid, "contact": asha["id"]})).await;
    assert_eq!(by_id["uid"], asha_uid.as_str());

    // a merge: only what is sent changes, null removes a custom field
    let updated = ok(
        &client,
        "update_contact",
        json!({"group": group_id, "contact": asha_uid, "city": null, "tier": 3, "LAST_NAME": null}),
    )
    .await;
    assert_eq!(updated["custom_field_values"], json!({"tier": 3}), "{updated}");
    assert_eq!(
        (updated["name"].clone(), updated["full_phone_number"].clone()),
        (json!("Asha Juma"), asha["full_phone_number"].clone())
    );
    let renumbered =
        ok(&client, "update_contact", json!({"group": group_id, "contact": asha["id"], "PHONE": "0712 345 679"})).await;
    assert_eq!(renumbered["full_phone_number"], "255712345679");

    // lists: newest first, paged, filtered
    let groups = ok(&client, "list_contact_groups", json!({"limit": 1})).await;
    assert_eq!((total(&groups), groups["pagination"]["per_page"].clone()), (2, json!(1)), "{groups}");
    assert_eq!(groups["items"][0]["name"], "Suppliers");
    let all = ok(&client, "list_contacts", json!({"group": group_id})).await;
    assert_eq!(uids(&all), [text(&baraka, "uid"), asha_uid.clone()]);
    let found = ok(&client, "list_contacts", json!({"group": group_uid, "search": "asha"})).await;
    assert_eq!(uids(&found), [asha_uid.as_str()]);
    let subscribed = ok(&client, "list_contacts", json!({"group": group_id, "subscribed": true})).await;
    assert_eq!(uids(&subscribed), [asha_uid.as_str()]);
    let unsubscribed = ok(&client, "list_contacts", json!({"group": group_id, "subscribed": "false"})).await;
    assert_eq!(uids(&unsubscribed), [text(&baraka, "uid")]);
    let paged = ok(&client, "list_contacts", json!({"group": group_id, "limit": 1, "page": 2})).await;
    assert_eq!(uids(&paged), [asha_uid.as_str()]);

    // search: across every group, or in one
    let everywhere = ok(&client, "search_contacts", json!({"q": "0755"})).await;
    assert_eq!(uids(&everywhere), [text(&chausiku, "uid")]);
    assert_eq!(total(&ok(&client, "search_contacts", json!({})).await), 3);
    let in_group = ok(&client, "search_contacts", json!({"group_id": group_id, "limit": 5})).await;
    assert_eq!((total(&in_group), in_group["pagination"]["per_page"].clone()), (2, json!(5)));
    let named = ok(&client, "search_contacts", json!({"q": "baraka", "group_id": group_uid})).await;
    assert_eq!(uids(&named), [text(&baraka, "uid")]);

    // what the tools wrote is what REST reads, and the tools read what REST wrote
    let rest = app.get(&format!("/api/v3/contact-groups/{group_id}/contacts/{asha_uid}"), &key).await;
    assert_eq!(rest.status, 200, "{}", rest.body);
    assert_eq!(rest.data(), &ok(&client, "get_contact", json!({"group": group_id, "contact": asha_uid})).await);
    assert_eq!(rest.data()["custom_field_values"], json!({"tier": 3}));
    let rest = app.get("/api/v3/contact-groups", &key).await;
    assert_eq!(rest.data(), &ok(&client, "list_contact_groups", json!({})).await);
    let rest = app.get(&format!("/api/v3/contacts?q=0755&group_id={suppliers_id}"), &key).await;
    assert_eq!(rest.data(), &ok(&client, "search_contacts", json!({"q": "0755", "group_id": suppliers_id})).await);
    let rest = app.post("/api/v3/contact-groups", &key, json!({"name": "From REST"})).await;
    assert_eq!(rest.status, 201, "{}", rest.body);
    let from_rest = ok(&client, "get_contact_group", json!({"group": rest.data()["id"]})).await;
    assert_eq!(&from_rest, rest.data());
}

#[actix_web::test]
async fn refusals_are_the_contact_services_own_and_name_the_argument() {
    let app = api_tests::spawn().await;
    let (tenant, user, token) = account(&app, EDITOR, SCOPES).await;
    let key = app.key(tenant, user).await;
    let server = app.listen();
    let client = connect(&server, "/mcp", &token).await;
    let group = ok(&client, "create_contact_group", json!({"name": "Customers"})).await;
    let group_id = number(&group, "id");
    let asha = ok(&client, "create_contact", json!({"group": group_id, "PHONE": "0712345678"})).await;
    let asha_uid = text(&asha, "uid");

    // the same rule, the same message as REST
    let error = refused(&client, "create_contact_group", json!({"name": "   "})).await;
    assert_field(&error, "name");
    let rest = app.post("/api/v3/contact-groups", &key, json!({"name": "   "})).await;
    assert_eq!(rest.status, 422);
    assert_eq!(error["errors"]["name"], rest.body["errors"]["name"]);
    assert_field(&refused(&client, "create_contact_group", json!({})).await, "name");
    assert_field(
        &refused(&client, "create_contact_group", json!({"name": "X", "custom_fields": ["city", "city"]})).await,
        "custom_fields[1].key",
    );
    assert_field(&refused(&client, "create_contact", json!({"group": group_id, "PHONE": "12"})).await, "PHONE");
    assert_field(&refused(&client, "create_contact", json!({"group": group_id, "name": "No number"})).await, "PHONE");
    assert_field(&refused(&client, "create_contact", json!({"PHONE": "0712345670"})).await, "group");
    assert_field(&refused(&client, "create_contact", json!({"group": true, "PHONE": "0712345670"})).await, "group");
    // a number the group has: a conflict naming the field and the contact that has it
    let error = refused(&client, "create_contact", json!({"group": group_id, "PHONE": "0712 345 678"})).await;
    assert_eq!(error["code"], "conflict", "{error}");
    assert!(error["errors"]["PHONE"].is_array(), "{error}");
    assert_eq!(error["contact_uid"], asha_uid.as_str());
    assert_field(
        &refused(&client, "update_contact", json!({"group": group_id, "contact": asha_uid, "name": 5})).await,
        "name",
    );
    assert_field(
        &refused(&client, "update_contact", json!({"group": group_id, "contact": asha_uid, "bad key": 1})).await,
        "bad key",
    );
    assert_field(&refused(&client, "update_contact", json!({"group": group_id, "name": "x"})).await, "contact");
    assert_field(
        &refused(&client, "list_contacts", json!({"group": group_id, "subscribed": "maybe"})).await,
        "subscribed",
    );
    assert_field(&refused(&client, "list_contacts", json!({"group": group_id, "colour": "red"})).await, "colour");
    assert_field(&refused(&client, "list_contacts", json!({"group": group_id, "page": "two"})).await, "page");
    assert_field(&refused(&client, "list_contacts", json!({})).await, "group");
    assert_field(&refused(&client, "search_contacts", json!({"limit": "ten"})).await, "limit");
    assert_field(&refused(&client, "search_contacts", json!({"colour": "red"})).await, "colour");
    assert_field(&refused(&client, "list_contact_groups", json!({"per_page": "x"})).await, "per_page");
    assert_field(&refused(&client, "get_contact_group", json!({})).await, "group");

    // what names nothing is not found, as a malformed path is
    let missing = uuid::Uuid::new_v4().to_string();
    for (tool, args) in [
        ("get_contact_group", json!({"group": "abc"})),
        ("get_contact_group", json!({"group": 999_999_999})),
        ("get_contact_group", json!({"group": missing})),
        ("list_contacts", json!({"group": 0})),
        ("search_contacts", json!({"group_id": "nope"})),
        ("get_contact", json!({"group": group_id, "contact": "ctc_missing"})),
        ("get_contact", json!({"group": group_id, "contact": "msg_1"})),
        ("create_contact", json!({"group": missing, "PHONE": "0712345670"})),
        ("update_contact", json!({"group": group_id, "contact": 999_999_999, "name": "x"})),
    ] {
        let error = refused(&client, tool, args.clone()).await;
        assert_eq!(error["code"], "not_found", "{tool} {args}: {error}");
    }
    let error = refused(&client, "get_contact", json!({"group": group_id, "contact": "ctc_missing"})).await;
    let rest = app.get(&format!("/api/v3/contact-groups/{group_id}/contacts/ctc_missing"), &key).await;
    assert_eq!((rest.status, rest.body["message"].clone()), (404, error["message"].clone()));
    // nothing was written by the refused calls
    assert_eq!(total(&ok(&client, "search_contacts", json!({})).await), 1);
    assert_eq!(total(&ok(&client, "list_contact_groups", json!({})).await), 1);
}

#[actix_web::test]
async fn scopes_decide_which_contacts_tools_a_connection_may_use() {
    let app = api_tests::spawn().await;
    let tenant = app.tenant("Acme").await;
    let user = app.user(tenant, EDITOR).await;
    let key = app.key(tenant, user).await;
    let reader = app.mcp_connection(tenant, user, "mcp:use mcp:contacts").await;
    let elsewhere = app.mcp_connection(tenant, user, "mcp:use mcp:messaging mcp:write").await;
    let server = app.listen();
    let (group, contact) = group_with_contact(&app, &key).await;

    // without mcp:write only the reading tools are listed, and a write is refused
    let client = connect(&server, "/mcp/v1/contacts", &reader).await;
    assert_eq!(tool_names(&client).await, sorted(&READ_TOOLS));
    for (tool, args) in every_call(&group, &contact) {
        if READ_TOOLS.contains(&tool) {
            ok(&client, tool, args).await;
            continue;
        }
        let error = refused(&client, tool, args).await;
        assert_eq!(
            (error["code"].clone(), error["reason"].clone()),
            (json!("permission_denied"), json!("insufficient_scope")),
            "{tool}"
        );
        assert_eq!(error["missing_scopes"], json!(["mcp:write"]), "{tool}");
    }
    // an elevation without the capability opens nothing
    let client = connect(&server, "/mcp/v1/contacts", &elsewhere).await;
    assert!(tool_names(&client).await.is_empty());
    for (tool, args) in every_call(&group, &contact) {
        let error = refused(&client, tool, args).await;
        assert_eq!(error["reason"], "insufficient_scope", "{tool}");
        assert_eq!(error["missing_scopes"], json!(["mcp:contacts"]), "{tool}");
    }
    // nothing changed
    let groups = app.get("/api/v3/contact-groups", &key).await;
    assert_eq!(groups.data()["pagination"]["total"], 1);
    let read =
        app.get(&format!("/api/v3/contact-groups/{group}/contacts/{}", contact.as_str().unwrap_or("")), &key).await;
    assert_eq!(read.data()["name"], "255712345678", "{}", read.body);
}

#[actix_web::test]
async fn the_issuers_contacts_permissions_decide_every_call() {
    let app = api_tests::spawn().await;
    let tenant = app.tenant("Acme").await;
    let owner = app.user(tenant, "all").await;
    let key = app.key(tenant, owner).await;
    let user = app.user(tenant, "leads.view").await;
    let token = app.mcp_connection(tenant, user, SCOPES).await;
    let server = app.listen();
    let (group, contact) = group_with_contact(&app, &key).await;
    let client = connect(&server, "/mcp/v1/contacts", &token).await;

    // no contacts permission: no contacts tool listed (the leads reads are), each call refused
    assert_eq!(tool_names(&client).await, sorted(&["find_leads", "get_lead", "list_lead_labels"]));
    for (tool, args) in every_call(&group, &contact) {
        let error = refused(&client, tool, args).await;
        assert_eq!(error["code"], "permission_denied", "{tool}: {error}");
        assert!(error.get("missing_scopes").is_none(), "the grant holds the scopes: {error}");
    }

    // reading only
    app.set_permissions(user, "contacts.view").await;
    let mut expected: Vec<&str> = READ_TOOLS.to_vec();
    assert_eq!(tool_names(&client).await, sorted(&expected));
    assert_eq!(total(&ok(&client, "list_contacts", json!({"group": group})).await), 1);
    let error = refused(&client, "create_contact_group", json!({"name": "Mine"})).await;
    assert_eq!(error["code"], "permission_denied");
    assert!(error["message"].as_str().is_some_and(|m| m.contains("contacts.create")), "{error}");

    // creating, not editing: evaluated again on every call
    app.set_permissions(user, "contacts.view,contacts.create").await;
    expected.extend(["create_contact_group", "create_contact"]);
    assert_eq!(tool_names(&client).await, sorted(&expected));
    ok(&client, "create_contact", json!({"group": group, "PHONE": "0712345679"})).await;
    let error = refused(&client, "update_contact", json!({"group": group, "contact": contact, "name": "x"})).await;
    assert!(error["message"].as_str().is_some_and(|m| m.contains("contacts.edit")), "{error}");

    // editing, not creating
    app.set_permissions(user, "contacts.view,contacts.edit").await;
    assert!(!tool_names(&client).await.contains(&"create_contact".to_owned()));
    assert_eq!(
        ok(&client, "update_contact", json!({"group": group, "contact": contact, "name": "Amina"})).await["name"],
        "Amina"
    );
    let error = refused(&client, "create_contact", json!({"group": group, "PHONE": "0712345670"})).await;
    assert_eq!(error["code"], "permission_denied");
    let groups = app.get(&format!("/api/v3/contact-groups/{group}"), &key).await;
    assert_eq!(groups.data()["contacts_count"], 2, "one create was allowed: {}", groups.body);
}

#[actix_web::test]
async fn another_tenants_groups_and_contacts_are_not_found_through_every_tool() {
    let app = api_tests::spawn().await;
    let (owner_tenant, owner_user, owner) = account(&app, EDITOR, SCOPES).await;
    let key = app.key(owner_tenant, owner_user).await;
    let (_, _, stranger) = account(&app, EDITOR, SCOPES).await;
    let server = app.listen();
    let owners = connect(&server, "/mcp/v1/contacts", &owner).await;
    let group = ok(&owners, "create_contact_group", json!({"name": "Customers"})).await;
    let contact =
        ok(&owners, "create_contact", json!({"group": group["id"], "PHONE": "0712345678", "name": "Asha"})).await;

    let client = connect(&server, "/mcp", &stranger).await;
    let own = ok(&client, "create_contact_group", json!({"name": "Mine"})).await;
    for ids in [(&group["id"], &contact["uid"]), (&group["uid"], &contact["id"])] {
        for (tool, args) in every_call(ids.0, ids.1) {
            if matches!(tool, "list_contact_groups" | "create_contact_group") {
                continue; // they take no id
            }
            let error = refused(&client, tool, args.clone()).await;
            assert_eq!(error["code"], "not_found", "{tool} {args}: {error}");
        }
    }
    // a contact is found only within its own group: the stranger's group does not reach it
    for (tool, args) in [
        ("get_contact", json!({"group": own["id"], "contact": contact["uid"]})),
        ("get_contact", json!({"group": own["id"], "contact": contact["id"]})),
        ("update_contact", json!({"group": own["id"], "contact": contact["uid"], "name": "Mine"})),
    ] {
        assert_eq!(refused(&client, tool, args).await["code"], "not_found", "{tool}");
    }
    assert_eq!(total(&ok(&client, "list_contact_groups", json!({})).await), 1);
    assert_eq!(total(&ok(&client, "search_contacts", json!({"q": "0712345678"})).await), 0);
    assert_eq!(total(&ok(&client, "search_contacts", json!({"q": "Asha"})).await), 0);

    // the owner's records are as they were
    let read =
        app.get(&format!("/api/v3/contact-groups/{}/contacts/{}", group["id"], text(&contact, "uid")), &key).await;
    assert_eq!(read.data()["name"], "Asha", "{}", read.body);
    let read = app.get(&format!("/api/v3/contact-groups/{}", group["id"]), &key).await;
    assert_eq!(read.data()["contacts_count"], 1, "{}", read.body);
}
