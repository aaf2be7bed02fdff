//! The leads service: what the REST routes (and later MCP) call.

use accounts::modules::Module;
use kernel::{Caller, Clock, Error, Issuer, Permission, UserId};

/// Cheap to clone.
#[derive(Clone)]
pub struct LeadService {
    pub(crate) pool: store::Pool,
    pub(crate) clock: Clock,
    /// The origin of the dashboard links in `url`.
    pub(crate) public_url: String,
}

impl LeadService {
    pub fn new(pool: store::Pool, clock: Clock, public_url: String) -> Self {
        Self { pool, clock, public_url }
    }

    /// A connection that sees `tenant`'s rows only (row-level security).
    pub(crate) async fn conn(&self, tenant: kernel::TenantId) -> Result<store::PooledConn, Error> {
        store::connect(&self.pool, tenant).await
    }

    /// The module is on and the caller holds `permission`; answers who acts.
    pub(crate) async fn access(
        &self,
        conn: &mut store::Conn,
        caller: &Caller,
        permission: Permission,
    ) -> Result<Actor, Error> {
        if !accounts::modules::is_enabled(conn, caller.tenant_id, Module::Leads).await? {
            return Err(Error::forbidden("The leads module is switched off for this account."));
        }
        caller.require(permission)?;
        Ok(Actor::of(caller))
    }
}

/// Who makes a change, as activities and events name them.
#[derive(Debug, Clone)]
pub(crate) struct Actor {
    pub user: Option<UserId>,
    pub label: String,
    /// Sees every lead (`leads.data.all`).
    pub sees_all: bool,
    pub may_create_labels: bool,
}

impl Actor {
    fn of(caller: &Caller) -> Self {
        match &caller.issuer {
            Issuer::User { id, name, permissions, .. } => Self {
                user: Some(*id),
                label: name.clone(),
                sees_all: permissions.allows(Permission::LEADS_DATA_ALL.0),
                may_create_labels: permissions.allows(Permission::LEADS_SETTINGS.0),
            },
            _ => Self { user: None, label: "API key".to_owned(), sees_all: false, may_create_labels: false },
        }
    }

    /// Visibility (contract: Leads): all with `leads.data.all`; otherwise leads assigned to the
    /// issuer, unassigned ones, and the ones the issuer added.
    pub fn sees(&self, assigned_to: Option<i64>, created_by_kind: &str, created_by_id: Option<i64>) -> bool {
        let me = self.user.map(|u| u.0);
        self.sees_all
            || assigned_to.is_none()
            || assigned_to == me
            || (created_by_kind == "api" && created_by_id.is_some() && created_by_id == me)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({ "kind": "api", "id": self.user.map(|u| u.0), "label": self.label })
    }
}
