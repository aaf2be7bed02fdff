//! The `navigate` tools: which server holds which tool. They read the catalogue itself
//! ([`crate::SERVERS`], [`crate::all_tools`]), not the workspace, so they need no permission:
//! every tool is shown with the scopes and the permission it needs, whether or not this
//! connection may call it.

use kernel::Error;
use serde_json::{Value, json};

use crate::servers::SERVERS;
use crate::tool::{Call, Effect, Tool, list_of, object};

const SERVER: &str = "navigate";

/// The `navigate` tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_servers",
            title: "List the MCP servers",
            description: "Every MCP server of the service: its name, endpoint path, the capability scope that opens it, what it offers and the names of its tools (an empty list for a server whose domain has no tools yet).",
            server: SERVER,
            elevation: None,
            permission: None,
            effect: Effect::Read,
            input: || object(&[]),
            output: || list_of("servers", server_schema()),
            call: |call| Box::pin(list_servers(call)),
        },
        Tool {
            name: "find_tool",
            title: "Find a tool",
            description: "The tools whose name, title or description contains query (any case), each with its server, the endpoint that offers it, the scopes and the permission it needs.",
            server: SERVER,
            elevation: None,
            permission: None,
            effect: Effect::Read,
            input: || {
                object(&[(
                    "query",
                    json!({"type": "string", "minLength": 1, "pattern": "\\S",
                           "description": "Words to look for, e.g. \"contact\" or \"balance\"."}),
                    true,
                )])
            },
            output: || list_of("tools", found_schema()),
            call: |call| Box::pin(find_tool(call)),
        },
    ]
}

fn text(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn names(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": description})
}

fn server_schema() -> Value {
    object(&[
        ("name", text("The server's name."), true),
        ("path", text("Its endpoint, /mcp/v1/{name}."), true),
        ("capability", text("The capability scope that opens its tools."), true),
        ("summary", text("What it offers."), true),
        ("tools", names("The names of its tools."), true),
    ])
}

fn found_schema() -> Value {
    object(&[
        ("name", text("The tool's name."), true),
        ("title", text("Its title."), true),
        ("description", text("What it does."), true),
        ("server", text("The server that offers it (also offered on /mcp)."), true),
        ("path", text("That server's endpoint."), true),
        ("scopes", names("The scopes a connection needs to call it."), true),
        (
            "permission",
            json!({"type": ["string", "null"],
                   "description": "The permission its issuer needs; null when the tenant credential is enough."}),
            true,
        ),
        ("read_only", json!({"type": "boolean", "description": "Whether it only reads."}), true),
    ])
}

async fn list_servers(_call: Call) -> Result<Value, Error> {
    let tools = crate::all_tools();
    let servers: Vec<Value> = SERVERS
        .iter()
        .map(|server| {
            let names: Vec<&str> = tools.iter().filter(|t| t.server == server.name).map(|t| t.name).collect();
            json!({
                "name": server.name,
                "path": server.path,
                "capability": server.capability,
                "summary": server.summary,
                "tools": names,
            })
        })
        .collect();
    Ok(json!({"servers": servers}))
}

async fn find_tool(mut call: Call) -> Result<Value, Error> {
    let query = call.take_text("query")?;
    let needle = query.trim().to_lowercase();
    if needle.is_empty() {
        return Err(Error::field("query", "The query must name something to look for."));
    }
    let found: Vec<Value> = crate::all_tools()
        .iter()
        .filter(|tool| {
            [tool.name, tool.title, tool.description].iter().any(|text| text.to_lowercase().contains(&needle))
        })
        .map(|tool| {
            json!({
                "name": tool.name,
                "title": tool.title,
                "description": tool.description,
                "server": tool.server,
                "path": crate::servers::find(tool.server).map(|s| s.path),
                "scopes": tool.scopes(),
                "permission": tool.permission.map(|p| p.0),
                "read_only": tool.effect == Effect::Read,
            })
        })
        .collect();
    Ok(json!({"tools": found}))
}
