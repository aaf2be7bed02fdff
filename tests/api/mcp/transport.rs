//! The transport, the connections and the leads tools (issue 16), through the official SDK's
//! client against the gateway on a loopback port, on PostgreSQL.

use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::Value;

use super::support::*;
use api_tests::json;

#[actix_web::test]
async fn every_contract_server_answers_and_the_contacts_server_lists_the_leads_tools() {
    let app = api_tests::spawn().await;
    let (_, _, token) = account(&app, MANAGER, LEADS_SCOPES).await;
    let server = app.listen();

    let contacts = connect(&server, "/mcp/v1/contacts", &token).await;
    let info = contacts.peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("svc-contacts"));
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    assert!(info.capabilities.tools.is_some());
    assert_eq!(tool_names(&contacts).await, sorted(&LEADS_TOOLS));
    let tools = contacts.list_all_tools().await.expect("tools");
    let upsert = tools.iter().find(|t| t.name == "upsert_lead").expect("upsert_lead");
    let hints = upsert.annotations.as_ref().expect("annotations");
    assert_eq!((hints.read_only_hint, hints.destructive_hint), (Some(false), Some(false)));
    assert!(upsert.output_schema.is_some() && upsert.input_schema.get("properties").is_some());
    assert!(upsert.input_schema["properties"].get("idempotency_key").is_some());
    let get = tools.iter().find(|t| t.name == "get_lead").expect("get_lead");
    assert_eq!(get.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
    assert_eq!(get.input_schema["required"], json!(["lead"]));

    // a server with none of this connection's tools (calls, ivr) or none built yet (meetings, flows):
    // a handshake and no tools, never a transport error
    for name in ["ivr", "meetings", "flows", "calls"] {
        let other = connect(&server, &format!("/mcp/v1/{name}"), &token).await;
        let info = other.peer_info().expect("info");
        assert_eq!(info.server_info.as_ref().map(|i| i.name.clone()), Some(format!("svc-{name}")));
        assert!(tool_names(&other).await.is_empty(), "{name}");
    }
    // `/mcp` offers every tool the connection may use
    let all = connect(&server, "/mcp", &token).await;
    assert_eq!(tool_names(&all).await, sorted(&LEADS_TOOLS));
}

#[actix_web::test]
async fn every_protocol_revision_of_the_sdk_is_negotiated() {
    let app = api_tests::spawn().await;
    let (_, _, token) = account(&app, MANAGER, LEADS_SCOPES).await;
    let server = app.listen();
    for version in [ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25] {
        let client = connect_as(&server, "/mcp/v1/contacts", &token, version.clone()).await;
        assert_eq!(client.peer_info().expect("info").protocol_version, version);
        assert_eq!(tool_names(&client).await.len(), LEADS_TOOLS.len());
    }
    // the stateless revision: no initialize, `server/discover` and the version on every request
    let client = ClientConfig::default()
        .serve_with_lifecycle(
            transport(&server, "/mcp/v1/contacts", &token),
            ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] },
        )
        .await
        .expect("server/discover");
    assert_eq!(tool_names(&client).await.len(), LEADS_TOOLS.len());
    let lead = new_lead(&client, "+255712000001").await;
    assert_eq!(ok(&client, "get_lead", json!({"lead": lead})).await["id"], lead.as_str());
}

#[actix_web::test]
async fn the_leads_tools_run_the_lead_service() {
    let app = api_tests::spawn().await;
    let (tenant, user, token) = account(&app, MANAGER, LEADS_SCOPES).await;
    let key = app.key(tenant, user).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/contacts", &token).await;

    let lead = new_lead(&client, "0712000002").await;
    // the same person by another phone form: the same lead, updated
    let again = ok(&client, "upsert_lead", json!({"phone": "+255 712 000 002", "company": "Juma Traders"})).await;
    assert_eq!((again["created"].clone(), again["lead"]["id"].clone()), (json!(false), json!(lead)));

    let read = ok(&client, "get_lead", json!({"lead": lead})).await;
    assert_eq!(read["company"], "Juma Traders");
    let staged = ok(&client, "set_lead_stage", json!({"lead": lead, "stage": "qualified"})).await;
    assert_eq!(staged["stage"], "qualified");
    let labelled = ok(&client, "add_lead_labels", json!({"lead": lead, "labels": ["VIP", "Wholesale"]})).await;
    assert_eq!(labelled["added"].as_array().map(Vec::len), Some(2), "{labelled}");
    let labels = ok(&client, "list_lead_labels", json!({})).await;
    assert_eq!(labels["labels"].as_array().map(Vec::len), Some(2), "{labels}");
    let unlabelled = ok(&client, "remove_lead_labels", json!({"lead": lead, "labels": ["vip"]})).await;
    assert_eq!(unlabelled["removed"].as_array().map(Vec::len), Some(1), "{unlabelled}");
    let note = ok(&client, "add_lead_note", json!({"lead": lead, "body": "Asked for a quote."})).await;
    assert_eq!(note["body"], "Asked for a quote.");
    let assigned = ok(&client, "assign_lead", json!({"lead": lead, "user_id": user.0})).await;
    assert_eq!(assigned["assigned_to"]["id"], user.0, "{assigned}");
    let updated = ok(&client, "update_lead", json!({"lead": lead, "name": "Amina J."})).await;
    assert_eq!(updated["name"], "Amina J.");
    let found = ok(&client, "find_leads", json!({"q": "Amina", "limit": 5})).await;
    assert_eq!(found["items"].as_array().map(Vec::len), Some(1), "{found}");
    assert_eq!(found["pagination"]["per_page"], 5);

    // what the tools did is what REST reads
    let rest = app.get(&format!("/api/v3/leads/{lead}"), &key).await;
    assert_eq!(rest.status, 200, "{}", rest.body);
    assert_eq!((rest.data()["name"].clone(), rest.data()["stage"].clone()), (json!("Amina J."), json!("qualified")));
}

#[actix_web::test]
async fn refusals_are_tool_results_with_the_domain_code_and_malformed_calls_are_json_rpc_errors() {
    let app = api_tests::spawn().await;
    let (_, _, token) = account(&app, MANAGER, LEADS_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/contacts", &token).await;
    let lead = new_lead(&client, "0712000003").await;

    let error = refused(&client, "set_lead_stage", json!({"lead": lead, "stage": "lost"})).await;
    assert_eq!((error["code"].clone(), error["reason"].clone()), (json!("validation_error"), json!("reason_required")));
    let error = refused(&client, "get_lead", json!({"lead": uuid::Uuid::new_v4()})).await;
    assert_eq!(error["code"], "not_found");
    let error = refused(&client, "get_lead", json!({})).await;
    assert!(error["errors"]["lead"].is_array(), "{error}");
    let error = refused(&client, "add_lead_note", json!({"lead": lead, "body": 7})).await;
    assert!(error["errors"]["body"].is_array(), "{error}");
    let error = refused(&client, "find_leads", json!({"stage": "qualified", "colour": "red"})).await;
    assert!(error["errors"]["colour"].is_array(), "{error}");

    // an unknown tool is the protocol's error, not a tool result
    let unknown = client
        .call_tool(
            CallToolRequestParams::new("delete_lead")
                .with_arguments(json!({}).as_object().cloned().unwrap_or_default()),
        )
        .await;
    assert!(unknown.is_err(), "{unknown:?}");
}

#[actix_web::test]
async fn scopes_and_the_issuers_current_permissions_decide_every_call() {
    let app = api_tests::spawn().await;
    let tenant = app.tenant("Acme").await;
    let user = app.user(tenant, "leads.view,leads.edit").await;
    let reader = app.mcp_connection(tenant, user, "mcp:use mcp:contacts").await;
    let writer = app.mcp_connection(tenant, user, LEADS_SCOPES).await;
    let elsewhere = app.mcp_connection(tenant, user, "mcp:use mcp:messaging mcp:write").await;
    let server = app.listen();

    // without the elevation only the reading tools are listed, and a write is refused
    let client = connect(&server, "/mcp/v1/contacts", &reader).await;
    assert_eq!(tool_names(&client).await, sorted(&["find_leads", "get_lead", "list_lead_labels"]));
    let error = refused(&client, "upsert_lead", json!({"phone": "0712000004"})).await;
    assert_eq!(
        (error["code"].clone(), error["reason"].clone()),
        (json!("permission_denied"), json!("insufficient_scope"))
    );
    assert_eq!(error["missing_scopes"], json!(["mcp:write"]));
    // an elevation without the capability opens nothing
    let client = connect(&server, "/mcp/v1/contacts", &elsewhere).await;
    assert!(tool_names(&client).await.is_empty());
    assert_eq!(
        refused(&client, "get_lead", json!({"lead": uuid::Uuid::new_v4()})).await["missing_scopes"],
        json!(["mcp:contacts"])
    );

    // the grant is intersected with what the person may do: no leads.assign, no assign_lead
    let client = connect(&server, "/mcp/v1/contacts", &writer).await;
    assert!(!tool_names(&client).await.contains(&"assign_lead".to_owned()));
    let lead = new_lead(&client, "0712000005").await;
    assert_eq!(
        refused(&client, "assign_lead", json!({"lead": lead, "user_id": null})).await["code"],
        "permission_denied"
    );
    // and evaluated again on every call: the permission taken away refuses the next call
    app.set_permissions(user, "leads.view").await;
    let error = refused(&client, "update_lead", json!({"lead": lead, "name": "Changed"})).await;
    assert_eq!(error["code"], "permission_denied", "{error}");
    assert!(!tool_names(&client).await.contains(&"update_lead".to_owned()));
}

#[actix_web::test]
async fn an_idempotency_key_replays_the_first_upsert() {
    let app = api_tests::spawn().await;
    let (_, _, token) = account(&app, MANAGER, LEADS_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/contacts", &token).await;
    let body = json!({"name": "Baraka", "phone": "0712000006", "idempotency_key": "order-77"});
    let first = ok(&client, "upsert_lead", body.clone()).await;
    let second = ok(&client, "upsert_lead", body).await;
    assert_eq!(first, second);
    assert_eq!(ok(&client, "find_leads", json!({})).await["pagination"]["total"], 1);
    let error = refused(&client, "upsert_lead", json!({"phone": "0712000007", "idempotency_key": "order-77"})).await;
    assert_eq!(error["code"], "validation_error", "a key reused with another body: {error}");
    assert!(error["errors"]["idempotency_key"].is_array(), "{error}");
}

#[actix_web::test]
async fn another_tenants_lead_is_not_found_through_every_tool() {
    let app = api_tests::spawn().await;
    let (_, _, owner) = account(&app, MANAGER, LEADS_SCOPES).await;
    let (_, _, stranger) = account(&app, MANAGER, LEADS_SCOPES).await;
    let server = app.listen();
    let lead = new_lead(&connect(&server, "/mcp/v1/contacts", &owner).await, "0712000008").await;

    let client = connect(&server, "/mcp", &stranger).await;
    for (tool, args) in [
        ("get_lead", json!({"lead": lead})),
        ("update_lead", json!({"lead": lead, "name": "Mine"})),
        ("set_lead_stage", json!({"lead": lead, "stage": "won"})),
        ("add_lead_labels", json!({"lead": lead, "labels": ["x"]})),
        ("remove_lead_labels", json!({"lead": lead, "labels": ["x"]})),
        ("add_lead_note", json!({"lead": lead, "body": "hello"})),
        ("assign_lead", json!({"lead": lead, "user_id": null})),
    ] {
        assert_eq!(refused(&client, tool, args).await["code"], "not_found", "{tool}");
    }
    assert_eq!(ok(&client, "find_leads", json!({"status": "all"})).await["pagination"]["total"], 0);
    // the same person upserted by the stranger is the stranger's own new lead
    assert_ne!(new_lead(&client, "0712000008").await, lead);
}

#[actix_web::test]
async fn credentials_other_than_a_live_connection_are_refused_before_any_json_rpc() {
    let app = api_tests::spawn().await;
    let (tenant, user, token) = account(&app, MANAGER, LEADS_SCOPES).await;
    let key = app.key(tenant, user).await;
    let server = app.listen();

    for credential in [None, Some(key.as_str()), Some("svc_mcp_unknown")] {
        let res = post(&server, "/mcp/v1/contacts", credential, initialize()).await;
        assert_eq!(res.status(), 401, "{credential:?}");
        let challenge = res.headers()["www-authenticate"].to_str().expect("header").to_owned();
        // where to sign in (RFC 9728) and what this server's tools need; an error only when a
        // credential was sent (RFC 6750 §3.1)
        assert!(challenge.starts_with("Bearer "), "{challenge}");
        let metadata =
            r#"resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp/v1/contacts""#;
        assert!(challenge.contains(metadata), "{challenge}");
        assert!(challenge.contains(r#"scope="mcp:use mcp:contacts""#), "{challenge}");
        assert_eq!(challenge.contains(r#"error="invalid_token""#), credential.is_some(), "{challenge}");
        let body: Value = res.json().await.expect("json");
        assert_eq!(body["error"], "invalid_token");
    }
    // the MCP credential is no REST key either
    assert_eq!(app.get("/api/v3/me", &token).await.status, 401);

    let res = post(&server, "/mcp/v1/contacts", Some(&token), initialize()).await;
    assert_eq!(res.status(), 200);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["result"]["serverInfo"]["name"], "svc-contacts");
    // a notification is accepted without an answer
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&server, "/mcp/v1/contacts", Some(&token), note).await.status(), 202);
    // a path that is no contract server is not found
    assert_eq!(post(&server, "/mcp/v1/leads", Some(&token), initialize()).await.status(), 404);

    // revoked: refused from the next request on
    let id: i64 = api_tests::sql_rows(&app.pool, "SELECT id FROM mcp_connections")
        .await
        .first()
        .and_then(|row| row["id"].as_i64())
        .expect("the connection");
    accounts::mcp_connections::revoke(&mut *app.conn().await, id, app.clock.now()).await.expect("revoke");
    let res = post(&server, "/mcp/v1/contacts", Some(&token), initialize()).await;
    assert_eq!(res.status(), 401);
    // a suspended account is a 403
    let (other_tenant, _, other) = account(&app, MANAGER, LEADS_SCOPES).await;
    api_tests::sql_exec(&app.pool, &format!("UPDATE tenants SET status = 'suspended' WHERE id = {}", other_tenant.0))
        .await;
    assert_eq!(post(&server, "/mcp", Some(&other), initialize()).await.status(), 403);
    // and so is a deactivated issuer, even for the tools that need no permission
    let (_, issuer, third) = account(&app, MANAGER, "mcp:use mcp:overview").await;
    assert_eq!(post(&server, "/mcp/v1/account", Some(&third), initialize()).await.status(), 200);
    accounts::users::deactivate(&mut *app.conn().await, issuer).await.expect("deactivate");
    let res = post(&server, "/mcp/v1/account", Some(&third), initialize()).await;
    assert_eq!(res.status(), 403);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["error"], "access_denied");
}

#[actix_web::test]
async fn the_manifest_is_what_tools_list_shows() {
    let app = api_tests::spawn().await;
    let tenant = app.tenant("Acme").await;
    let user = app.user(tenant, "all").await;
    let everything = format!(
        "{} {} {}",
        ::mcp::scopes::USE,
        ::mcp::scopes::CAPABILITIES.join(" "),
        ::mcp::Elevation::ALL.iter().map(|e| e.scope()).collect::<Vec<_>>().join(" ")
    );
    let token = app.mcp_connection(tenant, user, &everything).await;
    let server = app.listen();
    let manifest: Value =
        reqwest::get(format!("{}/api-docs/mcp.json", server.url)).await.expect("get").json().await.expect("json");
    let servers = manifest["servers"].as_array().expect("servers");
    assert_eq!(servers.len(), 29);
    for entry in servers {
        let name = entry["name"].as_str().expect("name");
        let client = connect(&server, &format!("/mcp/v1/{name}"), &token).await;
        let listed: Vec<Value> = client
            .list_all_tools()
            .await
            .expect("tools")
            .into_iter()
            .map(|tool| serde_json::to_value(tool).expect("tool json"))
            .collect();
        let described = entry["tools"].as_array().expect("tools");
        assert_eq!(listed.len(), described.len(), "{name}");
        for (listed, described) in listed.iter().zip(described) {
            for member in ["name", "description", "inputSchema", "outputSchema", "annotations"] {
                assert_eq!(listed[member], described[member], "{name}: {member}");
            }
        }
    }
}

#[actix_web::test]
async fn host_and_origin_are_checked_and_only_post_is_served() {
    let app = api_tests::spawn().await;
    let (_, _, token) = account(&app, MANAGER, LEADS_SCOPES).await;
    let server = app.listen();
    let client = reqwest::Client::new();
    let send = |headers: &[(&str, &str)]| {
        let mut request = client
            .post(format!("{}/mcp/v1/contacts", server.url))
            .header("accept", "application/json, text/event-stream")
            .bearer_auth(&token)
            .json(&initialize());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send()
    };
    // a browser page elsewhere (DNS rebinding) is refused; the public URL's origin is served
    assert_eq!(send(&[("origin", "https://evil.example")]).await.expect("send").status(), 403);
    assert_eq!(send(&[("origin", "http://127.0.0.1:8080")]).await.expect("send").status(), 200);
    assert_eq!(send(&[("host", "evil.example")]).await.expect("send").status(), 403);

    // ping stands alone (stateless), with the revision in its header
    let ping = client
        .post(format!("{}/mcp/v1/contacts", server.url))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .bearer_auth(&token)
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}))
        .send()
        .await
        .expect("ping");
    assert_eq!(ping.status(), 200);
    let answer: Value = ping.json().await.expect("json");
    assert_eq!((answer["id"].clone(), answer["result"].clone()), (json!(7), json!({})));

    // no sessions: no event stream to open, no session to end
    let get = client.get(format!("{}/mcp", server.url)).bearer_auth(&token).send().await.expect("get");
    assert_eq!(get.status(), 405);
    // a client that accepts JSON only is told what the transport needs
    let json_only = client
        .post(format!("{}/mcp", server.url))
        .header("accept", "application/json")
        .bearer_auth(&token)
        .json(&initialize())
        .send()
        .await
        .expect("post");
    assert_eq!(json_only.status(), 406);
}

/// JSON answers by default; an event stream for a client that ranks it first in `Accept`.
#[actix_web::test]
async fn a_client_that_asks_for_an_event_stream_gets_one() {
    let app = api_tests::spawn().await;
    let (_, _, token) = account(&app, MANAGER, LEADS_SCOPES).await;
    let server = app.listen();
    for (accept, stream) in [
        ("application/json, text/event-stream", false),
        ("text/event-stream, application/json", true),
        ("application/json;q=0.5, text/event-stream", true),
        ("text/event-stream;q=0.1, application/json", false),
    ] {
        let res = reqwest::Client::new()
            .post(format!("{}/mcp/v1/contacts", server.url))
            .header("accept", accept)
            .bearer_auth(&token)
            .json(&initialize())
            .send()
            .await
            .expect("request");
        assert_eq!(res.status(), 200, "{accept}");
        let kind = res.headers()["content-type"].to_str().expect("ascii").to_owned();
        let body = res.text().await.expect("body");
        let answer: Value = if stream {
            assert!(kind.starts_with("text/event-stream"), "{accept}: {kind}");
            let data = body.lines().find_map(|l| l.strip_prefix("data:")).filter(|d| !d.trim().is_empty());
            serde_json::from_str(data.unwrap_or_else(|| panic!("a data line in {body:?}")).trim()).expect("json")
        } else {
            assert!(kind.starts_with("application/json"), "{accept}: {kind}");
            serde_json::from_str(&body).expect("json")
        };
        assert_eq!(answer["result"]["serverInfo"]["name"], "svc-contacts", "{accept}");
    }
}
