//! Who is calling: the tenant a credential belongs to, and the issuer whose *current*
//! permissions bound what the credential may do (contract: Authentication).

use std::collections::BTreeSet;

use crate::{ApiKeyId, Error, Result, TenantId, UserId};

/// A permission name of the contract (`contacts.view`) or one a data table defines (`data.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Permission(pub &'static str);

impl Permission {
    pub const API_KEYS_VIEW: Self = Self("api-keys.view");
    pub const API_KEYS_MANAGE: Self = Self("api-keys.manage");
    pub const AUTOMATIONS_VIEW: Self = Self("automations.view");
    pub const CATALOGUE_VIEW: Self = Self("communications.catalogue.view");
    pub const CATALOGUE_MANAGE: Self = Self("communications.catalogue.manage");
    pub const GROUPS_VIEW: Self = Self("communications.groups.view");
    pub const GROUPS_MANAGE: Self = Self("communications.groups.manage");
    pub const SEND: Self = Self("communications.send");
    pub const MESSAGES_VIEW: Self = Self("communications.messages.view");
    pub const TEMPLATES_VIEW: Self = Self("communications.templates.view");
    pub const TEMPLATES_MANAGE: Self = Self("communications.templates.manage");
    pub const CONTACTS_VIEW: Self = Self("contacts.view");
    pub const CONTACTS_CREATE: Self = Self("contacts.create");
    pub const CONTACTS_EDIT: Self = Self("contacts.edit");
    pub const CONTACTS_DELETE: Self = Self("contacts.delete");
    pub const CONTACTS_IMPORT: Self = Self("contacts.import");
    pub const DATA_VIEW: Self = Self("data.view");
    pub const DATA_RECORDS_EDIT: Self = Self("data.records.edit");
    pub const FORMS_VIEW: Self = Self("forms.view");
    pub const FORMS_CREATE: Self = Self("forms.create");
    pub const FORMS_EDIT: Self = Self("forms.edit");
    pub const FORMS_PUBLISH: Self = Self("forms.publish");
    pub const FORMS_SEND: Self = Self("forms.send");
    pub const FORMS_ANSWERS_VIEW: Self = Self("forms.answers.view");
    pub const FORMS_ANSWERS_EXPORT: Self = Self("forms.answers.export");
    pub const LEADS_VIEW: Self = Self("leads.view");
    pub const LEADS_EDIT: Self = Self("leads.edit");
    pub const LEADS_ASSIGN: Self = Self("leads.assign");
    pub const LEADS_DELETE: Self = Self("leads.delete");
    pub const LEADS_SETTINGS: Self = Self("leads.settings");
    pub const LEADS_DATA_ALL: Self = Self("leads.data.all");
    /// Runs the workspace's named operations and reads their runs (the contract leaves it
    /// unnamed; each step needs its own route's permission too).
    pub const OPERATIONS_RUN: Self = Self("operations.run");
    pub const PAYMENTS_VIEW: Self = Self("payments.view");
    pub const POSTS_VIEW: Self = Self("posts.view");
    pub const POSTS_MANAGE: Self = Self("posts.manage");
    pub const WEBHOOKS_VIEW: Self = Self("webhooks.view");
    pub const WEBHOOKS_MANAGE: Self = Self("webhooks.manage");

    /// Every permission the contract names.
    pub const ALL: &'static [Self] = &[
        Self::API_KEYS_VIEW,
        Self::API_KEYS_MANAGE,
        Self::AUTOMATIONS_VIEW,
        Self::CATALOGUE_VIEW,
        Self::CATALOGUE_MANAGE,
        Self::GROUPS_VIEW,
        Self::GROUPS_MANAGE,
        Self::SEND,
        Self::MESSAGES_VIEW,
        Self::TEMPLATES_VIEW,
        Self::TEMPLATES_MANAGE,
        Self::CONTACTS_VIEW,
        Self::CONTACTS_CREATE,
        Self::CONTACTS_EDIT,
        Self::CONTACTS_DELETE,
        Self::CONTACTS_IMPORT,
        Self::DATA_VIEW,
        Self::DATA_RECORDS_EDIT,
        Self::FORMS_VIEW,
        Self::FORMS_CREATE,
        Self::FORMS_EDIT,
        Self::FORMS_PUBLISH,
        Self::FORMS_SEND,
        Self::FORMS_ANSWERS_VIEW,
        Self::FORMS_ANSWERS_EXPORT,
        Self::LEADS_VIEW,
        Self::LEADS_EDIT,
        Self::LEADS_ASSIGN,
        Self::LEADS_DELETE,
        Self::LEADS_SETTINGS,
        Self::LEADS_DATA_ALL,
        Self::OPERATIONS_RUN,
        Self::PAYMENTS_VIEW,
        Self::POSTS_VIEW,
        Self::POSTS_MANAGE,
        Self::WEBHOOKS_VIEW,
        Self::WEBHOOKS_MANAGE,
    ];

    pub fn as_str(&self) -> &'static str {
        self.0
    }

    /// A name a user may be granted: one of the contract's, or any `data.`-prefixed name a
    /// data table defines (`data.customers.pii`).
    pub fn is_grantable(name: &str) -> bool {
        Self::ALL.iter().any(|p| p.0 == name)
            || name.strip_prefix("data.").is_some_and(|rest| {
                !rest.is_empty()
                    && rest.split('.').all(|part| {
                        !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    })
            })
    }
}

impl std::fmt::Display for Permission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// What a user may do: every permission (present and future), or a named set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permissions {
    All,
    Only(BTreeSet<String>),
}

impl Permissions {
    pub fn allows(&self, permission: &str) -> bool {
        match self {
            Self::All => true,
            Self::Only(set) => set.contains(permission),
        }
    }

    /// The names, `["*"]` standing for all.
    pub fn names(&self) -> Vec<String> {
        match self {
            Self::All => vec!["*".to_owned()],
            Self::Only(set) => set.iter().cloned().collect(),
        }
    }
}

/// The kind of credential that authenticated the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialKind {
    /// An account REST key (`/api/v3`, `/api/engine`).
    RestKey,
    /// An MCP connection (`svc_mcp_`, `/mcp`): `key_id` is the connection's id.
    McpConnection,
    /// An OAuth access token of an MCP client (`/mcp`): `key_id` is the grant's id.
    OAuthToken,
}

impl CredentialKind {
    /// How histories and audit trails name the credential (`{"kind": "api_key", "id": ...}`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RestKey => "api_key",
            Self::McpConnection => "mcp_connection",
            Self::OAuthToken => "oauth_token",
        }
    }
}

/// Who issued the key, read fresh on every request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Issuer {
    /// A key created before 7 September 2026: no recorded issuer. The gateway admits it only
    /// on the routes the contract keeps for it, where no per-action check applies.
    Legacy,
    User {
        id: UserId,
        name: String,
        active: bool,
        permissions: Permissions,
    },
    /// A key whose issuer was removed: it keeps no permission.
    Unknown,
}

#[derive(Debug, Clone)]
pub struct Caller {
    pub tenant_id: TenantId,
    /// The account's default calling code (digits, `255`): numbers written without one are
    /// read in it.
    pub calling_code: String,
    pub key_id: ApiKeyId,
    pub key_name: String,
    pub credential: CredentialKind,
    pub issuer: Issuer,
}

impl Caller {
    /// The operator of the admin command line, who may do everything in a tenant.
    pub fn operator(tenant: TenantId, calling_code: impl Into<String>) -> Self {
        Self {
            tenant_id: tenant,
            calling_code: calling_code.into(),
            key_id: ApiKeyId(0),
            key_name: "operator".into(),
            credential: CredentialKind::RestKey,
            issuer: Issuer::User {
                id: UserId(0),
                name: "operator".into(),
                active: true,
                permissions: Permissions::All,
            },
        }
    }

    /// Checks one permission against the issuer's current permissions.
    pub fn require(&self, permission: Permission) -> Result<()> {
        match &self.issuer {
            // contract: legacy keys keep the original contact paths, where contacts.* checks
            // do not apply; the gateway refuses them everywhere else.
            Issuer::Legacy => Ok(()),
            Issuer::User { active: false, .. } => Err(Error::forbidden("The key's issuer is deactivated.")),
            Issuer::User { permissions, .. } if permissions.allows(permission.0) => Ok(()),
            Issuer::User { .. } => {
                Err(Error::forbidden(format!("This key is not allowed to do this (missing permission {permission}).")))
            }
            Issuer::Unknown => Err(Error::forbidden("The key's issuer is unknown.")),
        }
    }

    /// Data, chat group, payment and automation endpoints refuse a key whose issuer is
    /// unknown or deactivated (contract: Authentication, rule 4).
    pub fn require_issuer(&self) -> Result<UserId> {
        match &self.issuer {
            Issuer::User { id, active: true, .. } => Ok(*id),
            Issuer::User { .. } => Err(Error::forbidden("The key's issuer is deactivated.")),
            Issuer::Legacy => Err(Error::forbidden("This key has no recorded issuer; rotate it to use this endpoint.")),
            Issuer::Unknown => Err(Error::forbidden("The key's issuer is unknown.")),
        }
    }

    /// Whether an active issuer holds a permission named at run time (a data table's
    /// `data.customers.pii`); legacy, unknown and deactivated issuers hold none.
    pub fn allows(&self, permission: &str) -> bool {
        matches!(&self.issuer, Issuer::User { active: true, permissions, .. } if permissions.allows(permission))
    }

    pub fn is_legacy(&self) -> bool {
        matches!(self.issuer, Issuer::Legacy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(issuer: Issuer) -> Caller {
        Caller {
            tenant_id: TenantId(1),
            calling_code: "255".into(),
            key_id: ApiKeyId(1),
            key_name: "k".into(),
            credential: CredentialKind::RestKey,
            issuer,
        }
    }

    #[test]
    fn permissions_are_checked_against_the_issuer() {
        let only = Permissions::Only(["contacts.view".to_owned()].into());
        let user = |active| Issuer::User { id: UserId(1), name: "u".into(), active, permissions: only.clone() };
        assert!(caller(user(true)).require(Permission::CONTACTS_VIEW).is_ok());
        assert!(caller(user(true)).require(Permission::CONTACTS_EDIT).is_err());
        assert!(caller(user(false)).require(Permission::CONTACTS_VIEW).is_err());
        assert!(caller(user(false)).require_issuer().is_err());
        assert!(caller(Issuer::Legacy).require_issuer().is_err());
    }

    #[test]
    fn grantable_names() {
        assert!(Permission::is_grantable("contacts.view"));
        assert!(Permission::is_grantable("data.customers.pii"));
        assert!(!Permission::is_grantable("data."));
        assert!(!Permission::is_grantable("contacts.fly"));
        assert!(!Permission::is_grantable("data.a..b"));
    }
}
