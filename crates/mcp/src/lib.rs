//! The MCP tools of every domain (contract: MCP transport) over the same domain services the
//! REST routes call: the same permission checks, validation, tenant scoping, idempotency and
//! events. No HTTP here: the gateway authenticates the credential and serves [`McpServer`]
//! at `/mcp` and `/mcp/v1/{server}` (apps/gateway/src/mcp.rs).
//!
//! A tool is a [`tool::Tool`]: its JSON Schemas come from the same utoipa types as the REST
//! description, its call reads its arguments through REST's body reader
//! (`kernel::body::parse`) and runs the service method of the REST route.

pub mod account;
pub mod agents;
pub mod automations;
pub mod calls;
pub mod contacts;
pub mod content;
pub mod data;
pub mod groups;
pub mod handler;
pub mod inbox;
pub mod ivr;
pub mod leads;
pub mod messaging;
pub mod navigate;
pub mod operations;
pub mod orders;
pub mod payments;
pub mod routing;
pub mod scopes;
pub mod servers;
pub mod shop;
pub mod studio;
pub mod tool;

use std::sync::Arc;

use kernel::caller::Permissions;
use kernel::{Caller, Error};
use serde_json::{Value, json};

pub use handler::McpServer;
pub use scopes::{Elevation, Grant};
pub use servers::{SERVERS, Server};
pub use tool::Tool;

/// The domain services the tools call, built by the gateway's composition root.
#[derive(Clone)]
pub struct Domains {
    /// For the account reads, which are functions over a tenant's connection.
    pub pool: store::Pool,
    pub contacts: ::contacts::ContactService,
    pub messaging: ::messaging::MessagingService,
    pub leads: ::leads::LeadService,
    pub commerce: ::commerce::CommerceService,
    pub data: data_tables::DataService,
    pub payments: payments_read::PaymentService,
    pub automations: ::automations::AutomationService,
    pub agents: ::agents::AgentService,
}

/// Every domain's tools, in the order `tools/list` shows them.
pub fn all_tools() -> Vec<Tool> {
    [
        contacts::tools(),
        leads::tools(),
        messaging::tools(),
        calls::tools(),
        ivr::tools(),
        routing::tools(),
        inbox::tools(),
        groups::tools(),
        studio::tools(),
        content::tools(),
        orders::tools(),
        shop::tools(),
        data::tools(),
        payments::tools(),
        automations::tools(),
        operations::tools(),
        agents::tools(),
        account::tools(),
        navigate::tools(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Who calls a tool: the credential's caller (tenant, issuer and the issuer's current
/// permissions, read on every request) and the scopes it was granted.
#[derive(Debug, Clone)]
pub struct McpCaller {
    pub caller: Caller,
    pub grant: Grant,
}

/// Every tool, each on its server, and the services they call.
pub struct Catalog {
    tools: Vec<Tool>,
    domains: Arc<Domains>,
}

impl Catalog {
    pub fn new(domains: Domains) -> Self {
        Self { tools: all_tools(), domains: Arc::new(domains) }
    }

    /// The tools of `server` (every server's on `/mcp`, `None`).
    pub fn on(&self, server: Option<&str>) -> impl Iterator<Item = &Tool> {
        self.tools.iter().filter(move |tool| server.is_none_or(|name| tool.server == name))
    }

    /// The tools of `server` that `who` may call now: granted the scopes, and the issuer holds
    /// the permission (a tool that needs none, only the tenant credential, is always usable).
    pub fn usable<'a>(&'a self, server: Option<&'a str>, who: &'a McpCaller) -> impl Iterator<Item = &'a Tool> {
        self.on(server).filter(move |tool| {
            who.grant.admits(tool.capability(), tool.elevation).is_ok()
                && tool.permission.is_none_or(|permission| who.caller.allows(permission.0))
        })
    }

    /// What consenting to `asked` actually grants a person holding `permissions` (contract:
    /// "Granted scopes are intersected with what the consenting person may do"): `mcp:use`; a
    /// capability when the person may call at least one of its tools; an elevation when they
    /// may call at least one tool needing it among the granted capabilities. A capability or an
    /// elevation that no tool needs yet is granted as asked: its tools, when they come, check the
    /// person's permissions on every call, as all tools do.
    pub fn grantable(&self, asked: &Grant, permissions: &Permissions) -> Grant {
        grantable(&self.tools, asked, permissions)
    }

    pub fn find(&self, server: Option<&str>, name: &str) -> Option<&Tool> {
        self.on(server).find(|tool| tool.name == name)
    }

    /// `/api-docs/mcp.json`: every server with its tools, as `tools/list` shows them.
    pub fn manifest(&self) -> Value {
        let servers: Vec<Value> = SERVERS
            .iter()
            .map(|server| {
                let tools: Vec<Value> = self.on(Some(server.name)).map(Tool::describe).collect();
                json!({
                    "name": server.name,
                    "path": server.path,
                    "summary": server.summary,
                    "capability": server.capability,
                    "tools": tools,
                })
            })
            .collect();
        json!({
            "endpoints": {"all": "/mcp", "server": "/mcp/v1/{server}"},
            "scopes": {
                "base": scopes::USE,
                "capabilities": scopes::CAPABILITIES,
                "elevations": Elevation::ALL.iter().map(|e| e.scope()).collect::<Vec<_>>(),
            },
            "servers": servers,
        })
    }

    /// Runs `name` for `who`: the grant and the issuer's current permission are checked on
    /// every call, then the domain service checks everything the REST route does.
    pub async fn call(
        &self,
        server: Option<&str>,
        who: &McpCaller,
        name: &str,
        args: serde_json::Map<String, Value>,
    ) -> Result<Value, Error> {
        let tool = self.find(server, name).ok_or_else(|| Error::not_found(format!("Tool {name}")))?;
        who.grant.admits(tool.capability(), tool.elevation)?;
        let scopes = who.grant.scopes();
        (tool.call)(tool::Call { domains: self.domains.clone(), caller: who.caller.clone(), scopes, args }).await
    }
}

/// [`Catalog::grantable`] over `tools`.
fn grantable(tools: &[Tool], asked: &Grant, permissions: &Permissions) -> Grant {
    let may = |tool: &&Tool| tool.permission.is_none_or(|p| permissions.allows(p.0));
    let capabilities: Vec<&str> = scopes::CAPABILITIES
        .iter()
        .copied()
        .filter(|capability| asked.holds(capability))
        .filter(|capability| {
            let mut tools = tools.iter().filter(|t| t.capability() == *capability).peekable();
            tools.peek().is_none() || tools.any(|t| may(&t))
        })
        .collect();
    let elevations = Elevation::ALL.into_iter().filter(|e| asked.holds(e.scope())).filter(|elevation| {
        let mut needing = tools.iter().filter(|t| t.elevation == Some(*elevation)).peekable();
        needing.peek().is_none() || needing.any(|t| capabilities.contains(&t.capability()) && may(&t))
    });
    let granted: Vec<String> = std::iter::once(scopes::USE)
        .chain(capabilities.iter().copied())
        .chain(elevations.map(Elevation::scope))
        .map(str::to_owned)
        .collect();
    Grant::stored(&granted)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tool's description is an MCP `Tool` the SDK reads, with object schemas in and out
    /// (what clients of revisions before 2026-07-28 need) and its server among the contract's.
    #[test]
    fn every_tool_is_a_well_formed_mcp_tool() {
        let tools = all_tools();
        let mut names = std::collections::BTreeSet::new();
        for tool in &tools {
            assert!(names.insert(tool.name), "{} twice", tool.name);
            assert!(servers::find(tool.server).is_some(), "{}", tool.name);
            let described = tool.describe();
            assert_eq!(described["inputSchema"]["type"], "object", "{}", tool.name);
            assert_eq!(described["outputSchema"]["type"], "object", "{}", tool.name);
            let read = handler::to_mcp(described.clone()).unwrap_or_else(|e| panic!("{}: {e:?}", tool.name));
            assert_eq!(read.name, tool.name);
            let again = serde_json::to_value(&read).expect("json");
            for member in ["inputSchema", "outputSchema", "annotations", "title"] {
                assert_eq!(again[member], described[member], "{}: {member}", tool.name);
            }
            // a tool that acts needs an elevation; one that reads needs none
            assert_eq!(tool.effect == tool::Effect::Read, tool.elevation.is_none(), "{}", tool.name);
        }
    }

    /// Consent grants only what the person may do: a capability of tools they cannot call, and
    /// an elevation none of their granted tools needs, are dropped; a capability with no tools
    /// yet stays.
    #[test]
    fn consent_grants_what_the_person_may_do() {
        let tools = all_tools();
        let asked =
            Grant::parse("mcp:use mcp:contacts mcp:data mcp:calls mcp:meetings mcp:write mcp:send").expect("grant");
        let leads_viewer = Permissions::Only(["leads.view".to_owned()].into());
        let granted = grantable(&tools, &asked, &leads_viewer);
        // no data-table or calls tool is theirs, none of their contacts tools writes; meetings
        // has no tools yet
        assert_eq!(granted.scopes(), ["mcp:contacts", "mcp:meetings", "mcp:use"]);
        let editor = Permissions::Only(["leads.view".to_owned(), "leads.edit".to_owned()].into());
        assert_eq!(
            grantable(&tools, &asked, &editor).scopes(),
            ["mcp:contacts", "mcp:meetings", "mcp:use", "mcp:write"]
        );
        // sending is the messaging server's, which was not asked for (placing calls spends)
        let everything = grantable(&tools, &asked, &Permissions::All);
        assert_eq!(
            everything.scopes(),
            ["mcp:calls", "mcp:contacts", "mcp:data", "mcp:meetings", "mcp:use", "mcp:write"]
        );
    }

    /// A schema's references all point into its own `$defs`.
    #[test]
    fn schemas_are_self_contained() {
        fn refs(value: &Value, found: &mut Vec<String>) {
            match value {
                Value::Object(members) => {
                    if let Some(Value::String(target)) = members.get("$ref") {
                        found.push(target.clone());
                    }
                    members.values().for_each(|v| refs(v, found));
                }
                Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
                _ => {}
            }
        }
        for tool in all_tools() {
            for schema in [(tool.input)(), (tool.output)()] {
                let mut found = Vec::new();
                refs(&schema, &mut found);
                for target in found {
                    let name = target.strip_prefix("#/$defs/").unwrap_or_else(|| panic!("{}: {target}", tool.name));
                    assert!(schema["$defs"].get(name).is_some(), "{}: {target} is not defined", tool.name);
                }
            }
        }
    }
}
