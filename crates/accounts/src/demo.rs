//! The demo account `cargo xtask run` serves: one tenant, one user with every permission and a
//! key, made once and reused on every later run.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::caller::Permissions;
use kernel::{Error, Issuer, TenantId, UserId};
use serde::Serialize;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::keys::KeyIssuer;
use crate::schema::{tenants, users};
use store::Conn;

/// The demo tenant's fixed uid is what makes `ensure` idempotent.
pub const DEMO_TENANT_UID: Uuid = Uuid::from_u128(0xde70_0000_0000_4000_8000_0000_0000_0001);

#[derive(Debug, Clone, Serialize)]
pub struct DemoAccount {
    pub tenant_id: i64,
    pub user_id: i64,
    pub key: String,
    /// Whether the key was issued by this call (a reused key is not shown again by the store).
    pub new_key: bool,
}

/// Finds or makes the demo tenant and user; reuses `key` when it still authenticates as the
/// demo user, else issues a new one.
pub async fn ensure(conn: &mut Conn, key: Option<&str>, now: OffsetDateTime) -> Result<DemoAccount, Error> {
    let tenant_id: Option<i64> =
        tenants::table.filter(tenants::uid.eq(DEMO_TENANT_UID)).select(tenants::id).first(conn).await.optional()?;
    let tenant = match tenant_id {
        Some(id) => TenantId(id),
        None => TenantId(crate::tenants::create_with_uid(conn, DEMO_TENANT_UID, "Demo", "TZS").await?.id),
    };
    let user_id: Option<i64> = users::table
        .filter(users::tenant_id.eq(tenant.0).and(users::name.eq("Demo user")))
        .select(users::id)
        .first(conn)
        .await
        .optional()?;
    let user = match user_id {
        Some(id) => UserId(id),
        None => UserId(crate::users::create(conn, tenant, "Demo user", &Permissions::All).await?.id),
    };
    if let Some(key) = key
        && let Ok(caller) = crate::keys::authenticate(conn, key, now).await
        && caller.tenant_id == tenant
        && matches!(caller.issuer, Issuer::User { id, .. } if id == user)
    {
        return Ok(DemoAccount { tenant_id: tenant.0, user_id: user.0, key: key.to_owned(), new_key: false });
    }
    let issued = crate::keys::create(conn, tenant, KeyIssuer::User(user), "Demo key", None).await?;
    Ok(DemoAccount { tenant_id: tenant.0, user_id: user.0, key: issued.plaintext, new_key: true })
}
