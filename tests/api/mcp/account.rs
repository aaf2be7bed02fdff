//! The `account` tools (who am I, the balance), the `overview` tool (counts per domain) and the
//! `navigate` tools (which server holds which tool), issue 16, through the official SDK's client
//! against what REST answers.

use serde_json::Value;

use super::support::*;
use api_tests::json;

const OVERVIEW: &str = "mcp:use mcp:overview";
const NAVIGATE: &str = "mcp:use mcp:navigate";
const COUNTS: [&str; 8] =
    ["contact_groups", "contacts", "open_leads", "messages", "shops", "products", "orders", "data_tables"];

async fn credit(pool: &store::Pool, tenant: kernel::TenantId, amount: i64) {
    let mut conn = store::connect_system(pool).await.expect("connection");
    accounts::wallet::credit(&mut conn, tenant, amount, Some("top-up")).await.expect("credit");
}

fn total(page: &Value) -> i64 {
    page["pagination"]["total"].as_i64().unwrap_or_else(|| panic!("a page: {page}"))
}

/// A REST answer's `data`, 2xx expected.
#[track_caller]
fn data(res: &api_tests::Resp) -> Value {
    assert!((200..300).contains(&res.status), "{} {}", res.status, res.body);
    res.data().clone()
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("a list: {list}"))
        .iter()
        .map(|t| t.as_str().map_or_else(|| t["name"].as_str().unwrap_or_default().to_owned(), str::to_owned))
        .collect()
}

#[actix_web::test]
async fn who_am_i_and_get_balance_answer_what_rest_answers() {
    let app = api_tests::spawn().await;
    let (tenant, user, token) = account(&app, "contacts.view,leads.view", OVERVIEW).await;
    let key = app.key(tenant, user).await;
    credit(&app.pool, tenant, 150_050).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/account", &token).await;
    assert_eq!(tool_names(&client).await, sorted(&["get_balance", "who_am_i"]));

    let me = ok(&client, "who_am_i", json!({})).await;
    assert_eq!(
        (me["id"].clone(), me["name"].clone(), me["currency"].clone()),
        (json!(tenant.0), json!("Acme"), json!("TZS"))
    );
    assert_eq!(me["issuer"], json!({"id": user.0, "name": "Test user", "active": true}));
    assert_eq!(me["permissions"], json!(["contacts.view", "leads.view"]));
    // the credential is the connection
    let connection = api_tests::sql_rows(&app.pool, "SELECT id FROM mcp_connections").await[0]["id"].clone();
    assert_eq!(me["key"], json!({"id": connection, "name": "Test connection", "legacy": false}));
    let rest = data(&app.get("/api/v3/me", &key).await);
    for member in ["id", "uid", "name", "status", "currency", "default_country_code", "issuer", "permissions"] {
        assert_eq!(me[member], rest[member], "{member}");
    }

    let balance = ok(&client, "get_balance", json!({})).await;
    assert_eq!(
        balance,
        json!({"balance_minor": 150_050, "balance": "1500.50", "currency": "TZS", "billing_mode": "prepaid"})
    );
    assert_eq!(balance, data(&app.get("/api/v3/balance", &key).await));

    // read afresh on every call
    app.set_permissions(user, "contacts.view").await;
    credit(&app.pool, tenant, 50).await;
    assert_eq!(ok(&client, "who_am_i", json!({})).await["permissions"], json!(["contacts.view"]));
    assert_eq!(ok(&client, "get_balance", json!({})).await["balance"], "1501.00");

    // another tenant's connection answers its own account and wallet
    let (other, _, other_token) = account(&app, "all", OVERVIEW).await;
    let client = connect(&server, "/mcp", &other_token).await;
    let me = ok(&client, "who_am_i", json!({})).await;
    assert_eq!((me["id"].clone(), me["permissions"].clone()), (json!(other.0), json!(["*"])));
    assert_eq!(ok(&client, "get_balance", json!({})).await["balance_minor"], 0);
}

#[actix_web::test]
async fn the_account_tools_need_the_overview_scope_and_no_permission() {
    let app = api_tests::spawn().await;
    let tenant = app.tenant("Acme").await;
    let user = app.user(tenant, "").await;
    let token = app.mcp_connection(tenant, user, OVERVIEW).await;
    let elsewhere = app.mcp_connection(tenant, user, "mcp:use mcp:contacts mcp:navigate mcp:write").await;
    let server = app.listen();

    // like GET /me and GET /balance: the tenant credential is enough, whatever the issuer holds
    let client = connect(&server, "/mcp", &token).await;
    assert_eq!(tool_names(&client).await, sorted(&["get_balance", "who_am_i", "workspace_overview"]));
    assert_eq!(ok(&client, "who_am_i", json!({})).await["permissions"], json!([]));
    assert_eq!(ok(&client, "get_balance", json!({})).await["balance_minor"], 0);
    let manifest: Value =
        reqwest::get(format!("{}/api-docs/mcp.json", server.url)).await.expect("manifest").json().await.expect("json");
    let account =
        manifest["servers"].as_array().and_then(|s| s.iter().find(|s| s["name"] == "account")).expect("account");
    for tool in account["tools"].as_array().expect("tools") {
        assert_eq!(tool["_meta"]["permission"], Value::Null, "{tool}");
        assert_eq!(tool["_meta"]["scopes"], json!(["mcp:use", "mcp:overview"]), "{tool}");
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
    }

    // without mcp:overview: not listed, refused by name
    let client = connect(&server, "/mcp", &elsewhere).await;
    let listed = tool_names(&client).await;
    for tool in ["who_am_i", "get_balance", "workspace_overview"] {
        assert!(!listed.contains(&tool.to_owned()), "{tool}");
        let error = refused(&client, tool, json!({})).await;
        assert_eq!(
            (error["code"].clone(), error["reason"].clone()),
            (json!("permission_denied"), json!("insufficient_scope")),
            "{tool}"
        );
        assert_eq!(error["missing_scopes"], json!(["mcp:overview"]), "{tool}");
    }
    let client = connect(&server, "/mcp/v1/overview", &token).await;
    assert_eq!(tool_names(&client).await, ["workspace_overview"]);
}

#[actix_web::test]
async fn the_overview_counts_each_domain_through_its_service() {
    let app = api_tests::spawn().await;
    let sms = crate::sms::sms_account(&app, "all").await;
    let (tenant, key) = (sms.tenant(), sms.key().to_owned());
    let token = app.mcp_connection(tenant, sms.account.user, OVERVIEW).await;

    for name in ["Customers", "Suppliers"] {
        data(&app.post("/api/v3/contact-groups", &key, json!({"name": name})).await);
    }
    let groups = data(&app.get("/api/v3/contact-groups", &key).await);
    for (i, group) in [0, 0, 1].into_iter().enumerate() {
        let id = &groups["items"][group]["id"];
        data(
            &app.post(
                &format!("/api/v3/contact-groups/{id}/contacts"),
                &key,
                json!({"PHONE": format!("071200000{i}")}),
            )
            .await,
        );
    }
    let mut leads = Vec::new();
    for (i, name) in ["Amina", "Baraka", "Chausiku"].into_iter().enumerate() {
        let upserted =
            data(&app.post("/api/v3/leads", &key, json!({"name": name, "phone": format!("071300000{i}")})).await);
        leads.push(upserted["lead"]["id"].as_str().expect("lead").to_owned());
    }
    data(&app.post(&format!("/api/v3/leads/{}/stage", leads[0]), &key, json!({"stage": "won"})).await);
    for text in ["Hello", "Karibu"] {
        data(&app.post("/api/v3/sms/send", &key, json!({"recipient": "0712345678", "message": text})).await);
    }
    let shop = data(&app.post("/api/v3/catalogues", &key, json!({"name": "Duka Letu"})).await)["id"].clone();
    for sku in ["A", "B", "C"] {
        let product = json!({"name": format!("Product {sku}"), "price": 1000, "inventory": null});
        data(&app.put(&format!("/api/v3/catalogues/{shop}/products/by-sku/{sku}"), &key, product).await);
    }
    data(&app.delete(&format!("/api/v3/catalogues/{shop}/products/by-sku/C"), &key).await);
    let order = json!({"platform": "manual", "customer_handle": "255712345678", "customer_name": "Amina Juma",
                       "lines": [{"sku": "A", "quantity": 2}]});
    data(&app.post(&format!("/api/v3/catalogues/{shop}/orders"), &key, order).await);
    let tables = json!({"group": {"slug": "ops", "name": "Operations"}, "tables": [
        {"slug": "visits", "name": "Visits", "columns": [{"key": "name", "type": "text"}]},
        {"slug": "tasks", "name": "Tasks", "columns": [{"key": "title", "type": "text"}]}]});
    app.data.apply(tenant, tables).await.expect("tables");

    let server = app.listen();
    let client = connect(&server, "/mcp/v1/overview", &token).await;
    let overview = ok(&client, "workspace_overview", json!({})).await;
    assert_eq!(
        overview,
        json!({"counts": {"contact_groups": 2, "contacts": 3, "open_leads": 2, "messages": 2, "shops": 1,
                          "products": 2, "orders": 1, "data_tables": 2},
               "hidden": []})
    );
    // the same numbers REST lists
    let counts = &overview["counts"];
    assert_eq!(counts["contact_groups"], total(&data(&app.get("/api/v3/contact-groups", &key).await)));
    assert_eq!(counts["contacts"], total(&data(&app.get("/api/v3/contacts", &key).await)));
    assert_eq!(counts["open_leads"], total(&data(&app.get("/api/v3/leads", &key).await)));
    assert_eq!(counts["messages"], total(&data(&app.get("/api/v3/messages", &key).await)));
    assert_eq!(counts["shops"], total(&data(&app.get("/api/v3/catalogues", &key).await)));
    assert_eq!(counts["products"], total(&data(&app.get(&format!("/api/v3/catalogues/{shop}/products"), &key).await)));
    assert_eq!(counts["orders"], total(&data(&app.get("/api/v3/catalogues/orders", &key).await)));
    let listed = app.get("/api/v3/data/tables", &key).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let listed = listed.body.get("data").filter(|d| d.is_object()).unwrap_or(&listed.body)["tables"].clone();
    assert_eq!(counts["data_tables"], json!(listed.as_array().map(Vec::len)));

    // another tenant's workspace: its own, empty, counts
    let (_, _, stranger) = account(&app, "all", OVERVIEW).await;
    let client = connect(&server, "/mcp", &stranger).await;
    let overview = ok(&client, "workspace_overview", json!({})).await;
    for name in COUNTS {
        assert_eq!(overview["counts"][name], 0, "{name}: {overview}");
    }
    assert_eq!(overview["hidden"], json!([]));
}

#[actix_web::test]
async fn the_overview_hides_what_the_issuer_may_not_see() {
    let app = api_tests::spawn().await;
    let tenant = app.tenant("Acme").await;
    let owner = app.user(tenant, "all").await;
    let key = app.key(tenant, owner).await;
    let user = app.user(tenant, "contacts.view,data.view").await;
    let token = app.mcp_connection(tenant, user, OVERVIEW).await;
    data(&app.post("/api/v3/contact-groups", &key, json!({"name": "Customers"})).await);
    data(&app.post("/api/v3/leads", &key, json!({"name": "Amina", "phone": "0713000001"})).await);
    data(&app.post("/api/v3/catalogues", &key, json!({"name": "Duka Letu"})).await);
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/overview", &token).await;

    let overview = ok(&client, "workspace_overview", json!({})).await;
    assert_eq!(
        overview["counts"],
        json!({"contact_groups": 1, "contacts": 0, "open_leads": null, "messages": null, "shops": null,
               "products": null, "orders": null, "data_tables": 0})
    );
    assert_eq!(
        overview["hidden"],
        json!([{"count": "open_leads", "permission": "leads.view"},
               {"count": "messages", "permission": "communications.messages.view"},
               {"count": "shops", "permission": "communications.catalogue.view"},
               {"count": "products", "permission": "communications.catalogue.view"},
               {"count": "orders", "permission": "communications.catalogue.view"}])
    );

    // evaluated on every call; with no permission at all every count is hidden, not refused
    app.set_permissions(user, "leads.view,communications.catalogue.view").await;
    let overview = ok(&client, "workspace_overview", json!({})).await;
    assert_eq!((overview["counts"]["open_leads"].clone(), overview["counts"]["shops"].clone()), (json!(1), json!(1)));
    assert_eq!(overview["counts"]["contact_groups"], Value::Null);
    // a service's own refusal beyond the permission hides the count too, with its message
    let mut conn = store::connect_system(&app.pool).await.expect("connection");
    accounts::modules::set(&mut conn, tenant, accounts::modules::Module::Leads, false).await.expect("module");
    let overview = ok(&client, "workspace_overview", json!({})).await;
    assert_eq!(overview["counts"]["open_leads"], Value::Null);
    let rest = app.get("/api/v3/leads", &key).await;
    assert_eq!(rest.status, 403, "{}", rest.body);
    let leads = overview["hidden"].as_array().and_then(|h| h.iter().find(|e| e["count"] == "open_leads"));
    assert_eq!(
        leads,
        Some(&json!({"count": "open_leads", "permission": "leads.view", "message": rest.body["message"]})),
        "{overview}"
    );
    app.set_permissions(user, "").await;
    let overview = ok(&client, "workspace_overview", json!({})).await;
    assert!(COUNTS.iter().all(|name| overview["counts"][name].is_null()), "{overview}");
    assert_eq!(overview["hidden"].as_array().map(Vec::len), Some(COUNTS.len()));
}

#[actix_web::test]
async fn navigate_lists_every_server_with_its_tools_and_finds_tools_by_words() {
    let app = api_tests::spawn().await;
    let tenant = app.tenant("Acme").await;
    let user = app.user(tenant, "").await;
    let token = app.mcp_connection(tenant, user, NAVIGATE).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/navigate", &token).await;
    assert_eq!(tool_names(&client).await, sorted(&["find_tool", "list_servers"]));

    let listed = ok(&client, "list_servers", json!({})).await;
    let servers = listed["servers"].as_array().expect("servers");
    let manifest: Value =
        reqwest::get(format!("{}/api-docs/mcp.json", server.url)).await.expect("manifest").json().await.expect("json");
    let described = manifest["servers"].as_array().expect("servers");
    assert_eq!(servers.len(), 29);
    for (entry, described) in servers.iter().zip(described) {
        for member in ["name", "path", "capability", "summary"] {
            assert_eq!(entry[member], described[member], "{member}");
        }
        assert_eq!(names(&entry["tools"]), names(&described["tools"]), "{}", entry["name"]);
    }
    let on = |name: &str| servers.iter().find(|s| s["name"] == name).cloned().expect("server");
    let contacts = on("contacts");
    assert_eq!(
        (contacts["path"].clone(), contacts["capability"].clone()),
        (json!("/mcp/v1/contacts"), json!("mcp:contacts"))
    );
    let tools = names(&contacts["tools"]);
    for tool in ["list_contact_groups", "create_contact", "update_contact", "find_leads", "assign_lead"] {
        assert!(tools.contains(&tool.to_owned()), "{tool} in {tools:?}");
    }
    assert_eq!(on("account")["tools"], json!(["who_am_i", "get_balance"]));
    assert_eq!(on("overview")["tools"], json!(["workspace_overview"]));
    assert_eq!(
        (on("navigate")["tools"].clone(), on("navigate")["capability"].clone()),
        (json!(["list_servers", "find_tool"]), json!("mcp:navigate"))
    );
    assert_eq!(on("ivr")["tools"], json!(["check_ivr_menu", "run_ivr_menu"]));
    assert_eq!(on("meetings")["tools"], json!([]), "a server with no tools yet is listed");

    // words in the name, the title or the description, any case
    let found = ok(&client, "find_tool", json!({"query": "CONTACT GROUP"})).await;
    let tools = found["tools"].as_array().expect("tools");
    let found_names = names(&found["tools"]);
    for tool in ["list_contact_groups", "get_contact_group", "create_contact_group"] {
        assert!(found_names.contains(&tool.to_owned()), "{tool} in {found_names:?}");
    }
    let create = tools.iter().find(|t| t["name"] == "create_contact_group").expect("create_contact_group");
    assert_eq!(
        *create,
        json!({"name": "create_contact_group", "title": "Create a contact group", "description": create["description"],
               "server": "contacts", "path": "/mcp/v1/contacts", "scopes": ["mcp:use", "mcp:contacts", "mcp:write"],
               "permission": "contacts.create", "read_only": false})
    );
    for tool in tools {
        let text = format!("{} {} {}", tool["name"], tool["title"], tool["description"]).to_lowercase();
        assert!(text.contains("contact group"), "{tool}");
    }
    let found = ok(&client, "find_tool", json!({"query": "wallet"})).await;
    let balance =
        found["tools"].as_array().and_then(|t| t.iter().find(|t| t["name"] == "get_balance")).expect("get_balance");
    assert_eq!(
        (balance["scopes"].clone(), balance["permission"].clone()),
        (json!(["mcp:use", "mcp:overview"]), Value::Null)
    );
    assert_eq!(ok(&client, "find_tool", json!({"query": "zzz no such tool"})).await, json!({"tools": []}));
    for args in [json!({"query": "   "}), json!({}), json!({"query": 3})] {
        let error = refused(&client, "find_tool", args.clone()).await;
        assert_eq!(error["code"], "validation_error", "{args}");
        assert!(error["errors"]["query"].is_array(), "{args}: {error}");
    }

    // without mcp:navigate: not listed, refused
    let other = app.mcp_connection(tenant, user, OVERVIEW).await;
    let client = connect(&server, "/mcp", &other).await;
    assert!(!tool_names(&client).await.iter().any(|t| t == "list_servers" || t == "find_tool"));
    for tool in ["list_servers", "find_tool"] {
        let error = refused(&client, tool, json!({"query": "contact"})).await;
        assert_eq!(error["missing_scopes"], json!(["mcp:navigate"]), "{tool}");
    }
}
