//! MCP (issue 16): the transport at `/mcp/v1/{server}` and `/mcp`, `svc_mcp_` connections, scopes
//! and elevations, and every domain's tools, driven end to end by the official SDK's client
//! (`rmcp`, streamable HTTP) against the gateway on a loopback port, on PostgreSQL.

mod account;
mod agents;
mod automations;
mod calls;
mod chat;
mod consent_page;
mod contacts;
mod content;
mod data;
mod groups_forms;
mod messaging;
mod oauth;
mod operations;
mod orders;
mod payments;
mod publishing;
mod shop;
mod support;
mod transport;
