//! The contract's MCP servers, one endpoint each at `/mcp/v1/{server}`, and the capability
//! scope that opens each. A server whose domain is not built yet still answers `initialize`
//! and an empty `tools/list`.

/// One MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Server {
    pub name: &'static str,
    /// Its endpoint, `/mcp/v1/{name}`.
    pub path: &'static str,
    /// The capability scope its tools need.
    pub capability: &'static str,
    /// What it offers, for `initialize`'s instructions and the manifest.
    pub summary: &'static str,
}

macro_rules! server {
    ($name:literal, $capability:literal, $summary:literal) => {
        Server { name: $name, path: concat!("/mcp/v1/", $name), capability: $capability, summary: $summary }
    };
}

/// Every server of the contract, in its order.
pub const SERVERS: &[Server] = &[
    server!("ivr", "mcp:calls", "Voice menus."),
    server!("flows", "mcp:builders", "Conversation flows: read, publish, sessions."),
    server!("data", "mcp:data", "Data tables: schema, records, states, history, overviews."),
    server!("approvals", "mcp:approvals", "Approvals waiting on a person."),
    server!("payments", "mcp:payments", "Payments of orders: list and read them (read only)."),
    server!(
        "automations",
        "mcp:automations",
        "Automations: the business-event log, event types, callback subscriptions and cron schedules."
    ),
    server!("alerts", "mcp:alerts", "Alerts."),
    server!(
        "operations",
        "mcp:operations",
        "Named operations the workspace defines: list them, describe one's input, run one (its steps undone when one fails), read a run."
    ),
    server!("studio", "mcp:studio", "Studio."),
    server!("numbers", "mcp:numbers", "Phone numbers."),
    server!("groups", "mcp:groups", "Chat groups."),
    server!(
        "agents",
        "mcp:agents",
        "Agent tasks: start a run of a language model with some of the workspace's tools, read it with its steps, list runs, cancel one."
    ),
    server!("orders", "mcp:commerce", "Orders."),
    server!("shop", "mcp:commerce", "Shops, products, stock and product batches."),
    server!("tickets", "mcp:support", "Support tickets."),
    server!("kb", "mcp:support", "Knowledge base."),
    server!("content", "mcp:posts", "Content: chat message templates: list, read, create, submit for review, refresh."),
    server!("calls", "mcp:calls", "Calls and call campaigns."),
    server!("routing", "mcp:routing", "Call routing."),
    server!("meetings", "mcp:meetings", "Meetings."),
    server!("messaging", "mcp:messaging", "SMS and chat: send, messages, campaigns, blacklist, chat accounts."),
    server!("inbox", "mcp:inbox", "The shared inbox: chat conversations, their 24-hour windows, replies."),
    server!("comments", "mcp:comments", "Comments."),
    server!("posts", "mcp:posts", "Posts: drafts, scheduling, publishing."),
    server!("contacts", "mcp:contacts", "Contacts and the leads CRM: find, read, upsert, stage, label, note, assign."),
    server!("overview", "mcp:overview", "Counts across the workspace."),
    server!("accounts", "mcp:accounts", "Accounts."),
    server!("navigate", "mcp:navigate", "Which server holds which tool."),
    server!("account", "mcp:overview", "Who am I, the balance."),
];

/// The server named `name`, if the contract has one.
pub fn find(name: &str) -> Option<&'static Server> {
    SERVERS.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_lists_29_servers_once_each() {
        assert_eq!(SERVERS.len(), 29);
        let names: std::collections::BTreeSet<&str> = SERVERS.iter().map(|s| s.name).collect();
        assert_eq!(names.len(), 29);
        for server in SERVERS {
            assert!(crate::scopes::CAPABILITIES.contains(&server.capability), "{}", server.name);
            assert_eq!(server.path, format!("/mcp/v1/{}", server.name));
        }
    }
}
