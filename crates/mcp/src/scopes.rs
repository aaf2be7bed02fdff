//! Scopes (contract: Authentication, point 5): `mcp:use` is the base grant; a capability
//! (`mcp:contacts`...) opens a server's tools; an elevation (`mcp:send`, `mcp:write`...) applies
//! across every granted capability and opens the tools that act rather than read.

use std::collections::BTreeSet;

use kernel::Error;

/// The base grant every call needs.
pub const USE: &str = "mcp:use";

/// The contract's capabilities.
pub const CAPABILITIES: &[&str] = &[
    "mcp:overview",
    "mcp:calls",
    "mcp:routing",
    "mcp:numbers",
    "mcp:meetings",
    "mcp:builders",
    "mcp:data",
    "mcp:studio",
    "mcp:contacts",
    "mcp:agents",
    "mcp:commerce",
    "mcp:support",
    "mcp:accounts",
    "mcp:approvals",
    "mcp:payments",
    "mcp:automations",
    "mcp:alerts",
    "mcp:operations",
    "mcp:navigate",
    "mcp:messaging",
    "mcp:inbox",
    "mcp:comments",
    "mcp:posts",
    "mcp:groups",
];

/// What a tool does beyond reading; each needs its elevation on top of the capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Elevation {
    Publish,
    Send,
    Spend,
    Delete,
    Write,
    Shape,
    Automate,
    Approve,
}

impl Elevation {
    pub const ALL: [Self; 8] =
        [Self::Publish, Self::Send, Self::Spend, Self::Delete, Self::Write, Self::Shape, Self::Automate, Self::Approve];

    /// What the elevation lets a client do, in the consent page's words.
    pub fn description(self) -> &'static str {
        match self {
            Self::Publish => "Publish: make drafts and products public",
            Self::Send => "Send: send messages and campaigns to your customers",
            Self::Spend => "Spend: do what costs money from your balance, agent runs included",
            Self::Delete => "Delete: remove records",
            Self::Write => "Write: create and change records",
            Self::Shape => "Shape: change data tables' columns and states",
            Self::Automate => "Automate: set up automations (event subscriptions and schedules)",
            Self::Approve => "Approve: decide approvals waiting on a person",
        }
    }

    pub fn scope(self) -> &'static str {
        match self {
            Self::Publish => "mcp:publish",
            Self::Send => "mcp:send",
            Self::Spend => "mcp:spend",
            Self::Delete => "mcp:delete",
            Self::Write => "mcp:write",
            Self::Shape => "mcp:shape",
            Self::Automate => "mcp:automate",
            Self::Approve => "mcp:approve",
        }
    }
}

/// Every scope, base first: what the authorization server supports.
pub fn all() -> Vec<String> {
    std::iter::once(USE)
        .chain(CAPABILITIES.iter().copied())
        .chain(Elevation::ALL.iter().map(|e| e.scope()))
        .map(str::to_owned)
        .collect()
}

/// The scopes one server's tools may need: the base, its capability and the elevations.
pub fn for_server(server: &crate::Server) -> Vec<String> {
    [USE, server.capability].into_iter().chain(Elevation::ALL.iter().map(|e| e.scope())).map(str::to_owned).collect()
}

/// What people read on the consent page for each scope.
pub fn describe(scope: &str) -> String {
    if scope == USE {
        return "Connect to your workspace's MCP servers".into();
    }
    if let Some(elevation) = Elevation::ALL.iter().find(|e| e.scope() == scope) {
        return elevation.description().into();
    }
    let servers: Vec<&str> =
        crate::SERVERS.iter().filter(|s| s.capability == scope).map(|s| s.summary.trim_end_matches('.')).collect();
    if servers.is_empty() { scope.to_owned() } else { format!("Read: {}", servers.join("; ")) }
}

/// Whether `scope` is one the service knows.
pub fn is_known(scope: &str) -> bool {
    scope == USE || CAPABILITIES.contains(&scope) || Elevation::ALL.iter().any(|e| e.scope() == scope)
}

/// The scopes a credential holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grant(BTreeSet<String>);

impl Grant {
    /// Reads a space- or comma-separated list (`"mcp:use mcp:contacts"`), refusing unknown
    /// scopes by name and a list without `mcp:use`.
    pub fn parse(list: &str) -> Result<Self, Error> {
        let mut scopes = BTreeSet::new();
        for scope in list.split([' ', ',']).map(str::trim).filter(|s| !s.is_empty()) {
            if !is_known(scope) {
                return Err(Error::field("scopes", format!("Unknown scope {scope:?}.")));
            }
            scopes.insert(scope.to_owned());
        }
        if !scopes.contains(USE) {
            return Err(Error::field("scopes", format!("The base scope {USE} is required.")));
        }
        Ok(Self(scopes))
    }

    /// What a client gets that asks for no scope: the base and every capability, reading only.
    pub fn default_request() -> Self {
        Self(std::iter::once(USE).chain(CAPABILITIES.iter().copied()).map(str::to_owned).collect())
    }

    /// The stored scopes of a credential, as they are (unknown ones grant nothing).
    pub fn stored(scopes: &[String]) -> Self {
        Self(scopes.iter().cloned().collect())
    }

    pub fn holds(&self, scope: &str) -> bool {
        self.0.contains(scope)
    }

    /// The scopes, sorted.
    pub fn scopes(&self) -> Vec<String> {
        self.0.iter().cloned().collect()
    }

    /// Whether the grant opens a tool that needs `capability` and maybe `elevation`; the refusal
    /// names the scopes missing.
    pub fn admits(&self, capability: &str, elevation: Option<Elevation>) -> Result<(), Error> {
        let missing: Vec<&str> = [Some(USE), Some(capability), elevation.map(Elevation::scope)]
            .into_iter()
            .flatten()
            .filter(|scope| !self.holds(scope))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(Error::forbidden(format!("This connection was not granted {}.", missing.join(" and ")))
            .with_reason("insufficient_scope")
            .with_detail("missing_scopes", missing))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_needs_the_base_scope_and_known_names() {
        assert!(Grant::parse("mcp:use mcp:contacts,mcp:write").is_ok());
        let refused = Grant::parse("mcp:contacts").expect_err("no mcp:use");
        assert!(refused.message.contains("mcp:use"), "{refused:?}");
        let refused = Grant::parse("mcp:use mcp:everything").expect_err("unknown");
        assert_eq!(refused.errors["scopes"], ["Unknown scope \"mcp:everything\"."]);
    }

    #[test]
    fn elevations_apply_across_capabilities() {
        let grant = Grant::parse("mcp:use mcp:contacts mcp:data mcp:write").expect("grant");
        assert!(grant.admits("mcp:contacts", Some(Elevation::Write)).is_ok());
        assert!(grant.admits("mcp:data", Some(Elevation::Write)).is_ok());
        assert!(grant.admits("mcp:messaging", None).is_err());
        let refused = grant.admits("mcp:contacts", Some(Elevation::Delete)).expect_err("no mcp:delete");
        assert_eq!(refused.reason.as_deref(), Some("insufficient_scope"));
        assert_eq!(refused.details["missing_scopes"], serde_json::json!(["mcp:delete"]));
    }
}
