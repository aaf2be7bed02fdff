//! The MCP server over the [`Catalog`]: `initialize`, `tools/list` and `tools/call` through
//! rmcp's `ServerHandler`. The gateway builds one [`McpServer`] per endpoint (each of the
//! contract's servers, and `/mcp` for all) and hands each request's [`McpCaller`] to it
//! through the transport's request extensions.

use std::sync::Arc;

use kernel::{Error, ErrorKind};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Extensions, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool as McpTool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value};

use crate::servers::Server;
use crate::{Catalog, McpCaller};

/// One endpoint's MCP server: a contract server's tools, or every tool (`/mcp`).
#[derive(Clone)]
pub struct McpServer {
    catalog: Arc<Catalog>,
    server: Option<&'static Server>,
}

impl McpServer {
    pub fn new(catalog: Arc<Catalog>, server: Option<&'static Server>) -> Self {
        Self { catalog, server }
    }

    fn name(&self) -> Option<&'static str> {
        self.server.map(|s| s.name)
    }
}

/// The caller the gateway authenticated, put in the transport's request extensions by its
/// `on_request` hook: request extensions → `http::request::Parts` → the hook's map.
fn caller(ctx: &RequestContext<RoleServer>) -> Result<&McpCaller, ErrorData> {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Extensions>())
        .and_then(|hook| hook.get::<McpCaller>())
        .ok_or_else(|| ErrorData::internal_error("the request reached the MCP server unauthenticated", None))
}

/// A tool as rmcp carries it, read from the same description the manifest shows.
pub fn to_mcp(description: Value) -> Result<McpTool, ErrorData> {
    serde_json::from_value(description)
        .map_err(|e| ErrorData::internal_error(format!("a tool's description: {e}"), None))
}

/// A refusal as a tool result a model can act on: `isError`, and the domain's code, message,
/// field errors and reason as JSON text.
fn refusal(error: &Error) -> CallToolResult {
    let mut body = Map::new();
    body.insert("code".into(), error.kind.code().into());
    let message = if error.kind == ErrorKind::Internal {
        tracing::error!(cause = %error.message, "an MCP tool failed");
        "Something went wrong on our side.".to_owned()
    } else {
        error.message.clone()
    };
    body.insert("message".into(), message.into());
    if error.kind != ErrorKind::Internal {
        if !error.errors.is_empty() {
            body.insert("errors".into(), serde_json::to_value(&error.errors).unwrap_or_default());
        }
        if let Some(reason) = &error.reason {
            body.insert("reason".into(), reason.clone().into());
        }
        body.extend(error.details.clone());
    }
    body.insert("retryable".into(), error.kind.retryable().into());
    let text = Value::Object(Map::from_iter([("error".to_owned(), Value::Object(body))])).to_string();
    CallToolResult::error(vec![ContentBlock::text(text)])
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let (name, instructions) = match self.server {
            Some(server) => (format!("svc-{}", server.name), server.summary.to_owned()),
            None => ("svc".to_owned(), "Every tool this connection may use, across the servers.".to_owned()),
        };
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(name, env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let who = caller(&ctx)?;
        let tools =
            self.catalog.usable(self.name(), who).map(|tool| to_mcp(tool.describe())).collect::<Result<_, _>>()?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<McpTool> {
        self.catalog.find(self.name(), name).and_then(|tool| to_mcp(tool.describe()).ok())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let who = caller(&ctx)?;
        if self.catalog.find(self.name(), &request.name).is_none() {
            // the spec's answer to an unknown tool: a JSON-RPC error, not a tool result
            return Err(ErrorData::invalid_params(format!("Unknown tool: {}", request.name), None));
        }
        let args = request.arguments.unwrap_or_default();
        let result = match self.catalog.call(self.name(), who, &request.name, args).await {
            Ok(value) => CallToolResult::structured(value),
            Err(error) => refusal(&error),
        };
        Ok(result.into())
    }
}
