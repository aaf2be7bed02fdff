//! `GET /me`: the account a key belongs to, the key, and its issuer's current permissions.

use kernel::caller::Permissions;
use kernel::{Caller, Error, Issuer};
use serde::Serialize;
use utoipa::ToSchema;

use store::Conn;

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Me {
    /// The account (tenant) id.
    pub id: i64,
    pub uid: uuid::Uuid,
    /// The account's name.
    pub name: String,
    pub status: String,
    pub currency: String,
    /// The calling code used for contacts sent without `country_code`.
    pub default_country_code: String,
    pub key: MeKey,
    /// Null for a key from before the permission model.
    pub issuer: Option<MeIssuer>,
    /// The permissions the key may use now (`["*"]` for all).
    pub permissions: Vec<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MeKey {
    pub id: i64,
    pub name: String,
    /// True for a key created before 7 September 2026, limited to the original contact paths.
    pub legacy: bool,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MeIssuer {
    pub id: Option<i64>,
    pub name: Option<String>,
    pub active: bool,
}

pub async fn me(conn: &mut Conn, caller: &Caller) -> Result<Me, Error> {
    let tenant = crate::tenants::get(conn, caller.tenant_id).await?;
    let (issuer, permissions) = match &caller.issuer {
        Issuer::Legacy => (None, Vec::new()),
        Issuer::Unknown => (Some(MeIssuer { id: None, name: None, active: false }), Vec::new()),
        Issuer::User { id, name, active, permissions } => (
            Some(MeIssuer { id: Some(id.0), name: Some(name.clone()), active: *active }),
            if *active { permissions.names() } else { Permissions::Only(Default::default()).names() },
        ),
    };
    Ok(Me {
        id: tenant.id,
        uid: tenant.uid,
        name: tenant.name,
        status: tenant.status,
        currency: tenant.currency,
        default_country_code: tenant.default_country_code,
        key: MeKey { id: caller.key_id.0, name: caller.key_name.clone(), legacy: caller.is_legacy() },
        issuer,
        permissions,
    })
}
