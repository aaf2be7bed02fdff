//! What the MCP tests share: the official SDK's client (`rmcp`, streamable HTTP) connected to
//! the gateway on a loopback port, calls that expect an answer or a refusal, accounts with an
//! MCP connection, and raw HTTP for what a client other than the SDK sends.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Listening, TestApp, json};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;

pub(crate) type Client = RunningService<RoleClient, ClientConfig>;

/// Every leads permission.
pub(crate) const MANAGER: &str = "leads.view,leads.edit,leads.assign,leads.delete,leads.settings,leads.data.all";
/// Every scope the leads tools need.
pub(crate) const LEADS_SCOPES: &str = "mcp:use mcp:contacts mcp:write";

pub(crate) const LEADS_TOOLS: [&str; 10] = [
    "find_leads",
    "get_lead",
    "list_lead_labels",
    "upsert_lead",
    "update_lead",
    "set_lead_stage",
    "add_lead_labels",
    "remove_lead_labels",
    "add_lead_note",
    "assign_lead",
];

pub(crate) fn transport(server: &Listening, path: &str, token: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}{path}", server.url)).auth_header(token);
    StreamableHttpClientTransport::from_config(config)
}

/// A client that negotiated `version` through `initialize` with the server at `path`.
pub(crate) async fn connect_as(server: &Listening, path: &str, token: &str, version: ProtocolVersion) -> Client {
    ClientConfig::new(ClientCapabilities::default(), Implementation::new("svc-tests", "0.0.0"))
        .with_protocol_version(version)
        .serve(transport(server, path, token))
        .await
        .expect("the MCP handshake")
}

pub(crate) async fn connect(server: &Listening, path: &str, token: &str) -> Client {
    connect_as(server, path, token, ProtocolVersion::V_2025_11_25).await
}

pub(crate) async fn tool_names(client: &Client) -> Vec<String> {
    let mut names: Vec<String> =
        client.list_all_tools().await.expect("tools/list").into_iter().map(|t| t.name.to_string()).collect();
    names.sort();
    names
}

pub(crate) fn sorted(names: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    names.sort();
    names
}

pub(crate) async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let args = args.as_object().cloned().expect("arguments are an object");
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool}: {e}"))
}

/// A successful call's structured content.
pub(crate) async fn ok(client: &Client, tool: &str, args: Value) -> Value {
    let result = call(client, tool, args).await;
    assert_ne!(result.is_error, Some(true), "{tool} refused: {result:?}");
    result.structured_content.unwrap_or_else(|| panic!("{tool} answered no structured content"))
}

/// A refused call's `error` object (code, message, errors, reason).
pub(crate) async fn refused(client: &Client, tool: &str, args: Value) -> Value {
    let result = call(client, tool, args).await;
    assert_eq!(result.is_error, Some(true), "{tool} was not refused: {result:?}");
    let text = result.content.iter().find_map(|c| c.as_text()).map(|t| t.text.clone()).expect("a text content");
    let body: Value = serde_json::from_str(&text).expect("the refusal is JSON");
    body["error"].clone()
}

/// A tenant whose user holds `permissions`, and a connection of theirs with `scopes`.
pub(crate) async fn account<S, B>(
    app: &TestApp<S>,
    permissions: &str,
    scopes: &str,
) -> (kernel::TenantId, kernel::UserId, String)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let tenant = app.tenant("Acme").await;
    let user = app.user(tenant, permissions).await;
    let token = app.mcp_connection(tenant, user, scopes).await;
    (tenant, user, token)
}

pub(crate) async fn new_lead(client: &Client, phone: &str) -> String {
    let upserted = ok(client, "upsert_lead", json!({"name": "Amina Juma", "phone": phone})).await;
    assert_eq!(upserted["created"], true, "{upserted}");
    upserted["lead"]["id"].as_str().expect("lead id").to_owned()
}

/// Raw HTTP, as a client that is not the SDK would send it.
pub(crate) async fn post(server: &Listening, path: &str, token: Option<&str>, body: Value) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("{}{path}", server.url))
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.expect("request")
}

pub(crate) fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
}

/// Reads and writes of the catalogue.
pub(crate) const CATALOGUE_MANAGER: &str = "communications.catalogue.view,communications.catalogue.manage";
/// Every scope the orders and shop tools need.
pub(crate) const COMMERCE_SCOPES: &str = "mcp:use mcp:commerce mcp:write";

/// A tenant with a catalogue manager, their REST key, and a shop (policy `svc`, TZS) made
/// through REST.
pub(crate) struct Shop {
    pub(crate) tenant: kernel::TenantId,
    pub(crate) user: kernel::UserId,
    pub(crate) key: String,
    pub(crate) id: i64,
}

/// [`Shop`] holding `products`: `(sku, price in minor units, inventory or null for untracked)`.
pub(crate) async fn shop<S, B>(app: &TestApp<S>, products: &[(&str, i64, Value)]) -> Shop
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let tenant = app.tenant("Duka").await;
    let user = app.user(tenant, CATALOGUE_MANAGER).await;
    let key = app.key(tenant, user).await;
    let body = json!({"name": "Duka Letu", "stock_policy": "svc", "default_currency": "TZS"});
    let res = app.post("/api/v3/catalogues", &key, body).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let id = res.data()["id"].as_i64().expect("shop id");
    for (sku, price, inventory) in products {
        let body = json!({"name": format!("Product {sku}"), "price": price, "inventory": inventory});
        let res = app.put(&format!("/api/v3/catalogues/{id}/products/by-sku/{sku}"), &key, body).await;
        assert_eq!(res.status, 201, "{}", res.body);
    }
    Shop { tenant, user, key, id }
}

/// `GET {path}` through REST, 200 expected: `data`.
pub(crate) async fn rest_data<S, B>(app: &TestApp<S>, key: &str, path: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(path, key).await;
    assert_eq!(res.status, 200, "{path}: {}", res.body);
    res.data().clone()
}

/// `GET {path}` through REST, 200 expected: the whole body (for envelopes without `data`).
pub(crate) async fn rest_body<S, B>(app: &TestApp<S>, key: &str, path: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(path, key).await;
    assert_eq!(res.status, 200, "{path}: {}", res.body);
    res.body
}

/// A refusal's `code`.
#[track_caller]
pub(crate) fn assert_code(error: &Value, code: &str) {
    assert_eq!(error["code"], code, "{error}");
}

/// A `permission_denied` of the service (the issuer's permission), not of the grant.
#[track_caller]
pub(crate) fn assert_denied(error: &Value) {
    assert_code(error, "permission_denied");
    assert!(error.get("reason").is_none(), "a permission, not a scope: {error}");
}

/// A `validation_error` whose field errors name `field`.
#[track_caller]
pub(crate) fn assert_field(error: &Value, field: &str) {
    assert_eq!(error["code"], "validation_error", "{error}");
    assert!(error["errors"][field].as_array().is_some_and(|m| !m.is_empty()), "errors should name {field}: {error}");
}
