//! Users: the people who issue keys. A key may never do more than its issuer may do now.

use std::collections::{BTreeMap, BTreeSet};

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::caller::Permissions;
use kernel::{Error, Permission, TenantId, UserId};
use serde::Serialize;

use crate::schema::users;
use store::Conn;

#[derive(Debug, Clone, Queryable, Selectable, Serialize)]
#[diesel(table_name = users)]
pub struct User {
    pub id: i64,
    pub tenant_id: i64,
    pub name: String,
    pub active: bool,
    pub all_permissions: bool,
    pub permissions: Vec<String>,
}

impl User {
    pub fn permissions(&self) -> Permissions {
        permissions_of(self.all_permissions, &self.permissions)
    }
}

pub(crate) fn permissions_of(all: bool, names: &[String]) -> Permissions {
    if all { Permissions::All } else { Permissions::Only(names.iter().cloned().collect()) }
}

/// Parses `all` or a comma-separated list of permission names, refusing unknown names.
pub fn parse_permissions(spec: &str) -> Result<Permissions, Error> {
    if spec.trim() == "all" {
        return Ok(Permissions::All);
    }
    let mut names = BTreeSet::new();
    for name in spec.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !Permission::is_grantable(name) {
            return Err(Error::field("permissions", format!("Unknown permission {name:?}.")));
        }
        names.insert(name.to_owned());
    }
    Ok(Permissions::Only(names))
}

fn columns(permissions: &Permissions) -> (bool, Vec<String>) {
    match permissions {
        Permissions::All => (true, Vec::new()),
        Permissions::Only(names) => (false, names.iter().cloned().collect()),
    }
}

pub async fn create(conn: &mut Conn, tenant: TenantId, name: &str, permissions: &Permissions) -> Result<User, Error> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::field("name", "The name is required."));
    }
    crate::tenants::get(conn, tenant).await?;
    let (all, names) = columns(permissions);
    Ok(diesel::insert_into(users::table)
        .values((
            users::tenant_id.eq(tenant.0),
            users::name.eq(name),
            users::all_permissions.eq(all),
            users::permissions.eq(names),
        ))
        .returning(User::as_returning())
        .get_result(conn)
        .await?)
}

pub async fn get(conn: &mut Conn, user: UserId) -> Result<User, Error> {
    users::table
        .find(user.0)
        .select(User::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("User"))
}

/// The user `user` of `tenant`; another tenant's user is not found.
pub async fn of_tenant(conn: &mut Conn, tenant: TenantId, user: UserId) -> Result<User, Error> {
    users::table
        .filter(users::tenant_id.eq(tenant.0))
        .filter(users::id.eq(user.0))
        .select(User::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("User"))
}

/// The names of the users of `tenant` among `ids` (for showing who a record names).
pub async fn names(conn: &mut Conn, tenant: TenantId, ids: &[i64]) -> Result<BTreeMap<i64, String>, Error> {
    if ids.is_empty() {
        return Ok(BTreeMap::new());
    }
    Ok(users::table
        .filter(users::tenant_id.eq(tenant.0))
        .filter(users::id.eq_any(ids))
        .select((users::id, users::name))
        .load::<(i64, String)>(conn)
        .await?
        .into_iter()
        .collect())
}

/// Takes effect on the issuer's keys at their next request.
pub async fn set_permissions(conn: &mut Conn, user: UserId, permissions: &Permissions) -> Result<User, Error> {
    let (all, names) = columns(permissions);
    diesel::update(users::table.find(user.0))
        .set((users::all_permissions.eq(all), users::permissions.eq(names), users::updated_at.eq(diesel::dsl::now)))
        .returning(User::as_returning())
        .get_result(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("User"))
}

/// A deactivated issuer's keys are refused wherever a permission or an issuer is checked.
pub async fn deactivate(conn: &mut Conn, user: UserId) -> Result<User, Error> {
    diesel::update(users::table.find(user.0))
        .set((users::active.eq(false), users::updated_at.eq(diesel::dsl::now)))
        .returning(User::as_returning())
        .get_result(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("User"))
}
