//! MCP connections (contract: Authentication, point 5): `svc_mcp_<token>` credentials of one
//! tenant, issued by one user and limited to a set of scopes. Like REST keys, only a hash is
//! stored, the plaintext is shown once, and every request reads the connection, its tenant and
//! its issuer afresh, so a revocation or a permission change applies to the very next call.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{ApiKeyId, Caller, CredentialKind, Error, Issuer, TenantId, UserId};
use serde::Serialize;
use time::OffsetDateTime;

use crate::keys::{MAX_NAME_CHARS, MCP_PREFIX, generate, hash};
use crate::schema::{mcp_connections, tenants, users};
use store::Conn;

#[derive(Debug, Clone, Queryable, Selectable, Serialize)]
#[diesel(table_name = mcp_connections)]
pub struct McpConnection {
    pub id: i64,
    pub tenant_id: i64,
    pub user_id: i64,
    pub name: String,
    pub prefix: String,
    pub scopes: Vec<String>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A freshly issued connection: the only time its token exists.
#[derive(Debug, Clone, Serialize)]
pub struct IssuedConnection {
    #[serde(flatten)]
    pub connection: McpConnection,
    pub token: String,
}

/// Issues a connection for `user` of `tenant`. The scopes are stored as given: the MCP crate
/// owns their vocabulary and checks them before this is called.
pub async fn create(
    conn: &mut Conn,
    tenant: TenantId,
    user: UserId,
    name: &str,
    scopes: &[String],
) -> Result<IssuedConnection, Error> {
    let name = name.trim();
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(Error::field("name", format!("The name may not be longer than {MAX_NAME_CHARS} characters.")));
    }
    crate::tenants::get(conn, tenant).await?;
    let issuer = crate::users::get(conn, user).await?;
    if issuer.tenant_id != tenant.0 {
        return Err(Error::field("issuer", "The issuer belongs to another tenant."));
    }
    let token = format!("{MCP_PREFIX}{}", generate()?);
    let connection = diesel::insert_into(mcp_connections::table)
        .values((
            mcp_connections::tenant_id.eq(tenant.0),
            mcp_connections::user_id.eq(issuer.id),
            mcp_connections::name.eq(if name.is_empty() { "MCP connection" } else { name }),
            mcp_connections::token_hash.eq(hash(&token)),
            mcp_connections::prefix.eq(&token[..MCP_PREFIX.len() + 6]),
            mcp_connections::scopes.eq(scopes),
        ))
        .returning(McpConnection::as_returning())
        .get_result(conn)
        .await?;
    Ok(IssuedConnection { connection, token })
}

/// Revokes a connection; it is refused from the next call on. Revoking twice keeps the first time.
pub async fn revoke(conn: &mut Conn, id: i64, now: OffsetDateTime) -> Result<McpConnection, Error> {
    diesel::update(mcp_connections::table.find(id).filter(mcp_connections::revoked_at.is_null()))
        .set(mcp_connections::revoked_at.eq(now))
        .execute(conn)
        .await?;
    mcp_connections::table
        .find(id)
        .select(McpConnection::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("MCP connection"))
}

/// Who an MCP credential acts as, and the scopes it was granted.
#[derive(Debug, Clone)]
pub struct McpCaller {
    pub caller: Caller,
    pub scopes: Vec<String>,
    /// An OAuth token's resource (RFC 8707): the MCP paths it may be used on. A connection
    /// may be used on every MCP path (`None`).
    pub resource: Option<String>,
    /// What its requests are counted under by the rate limiter.
    pub rate_key: Vec<u8>,
}

/// An MCP credential's person as its lookup reads them: id, name, active, every permission,
/// the permissions.
pub(crate) type Person = (i64, String, bool, bool, Vec<String>);

/// The caller of an MCP credential found good (`key`: its id and name; `tenant`: id, status
/// and calling code): 403 for an account that is not active, and for a deactivated person (a
/// credential does only what its person may do; a deactivated person, nothing).
pub(crate) fn caller_of(
    credential: CredentialKind,
    (key_id, key_name): (i64, String),
    (tenant_id, tenant_status, calling_code): (i64, String, String),
    (user_id, user_name, active, all, names): Person,
) -> Result<Caller, Error> {
    if tenant_status != "active" {
        return Err(Error::forbidden(format!("This account is {tenant_status}.")));
    }
    if !active {
        return Err(Error::forbidden("The person this credential acts for is deactivated."));
    }
    Ok(Caller {
        tenant_id: TenantId(tenant_id),
        calling_code,
        key_id: ApiKeyId(key_id),
        key_name,
        credential,
        issuer: Issuer::User {
            id: UserId(user_id),
            name: user_name,
            active,
            permissions: crate::users::permissions_of(all, &names),
        },
    })
}

/// The MCP credential `id` (a connection's id, or an OAuth grant's) as it is now, for work that
/// acts for it long after its request (an agent run's steps): 401 once it is revoked, 403 once
/// its account is not active or its person is deactivated.
pub async fn current(conn: &mut Conn, kind: CredentialKind, id: i64) -> Result<Caller, Error> {
    use crate::schema::{oauth_clients, oauth_grants};
    type Row = ((i64, String, Option<OffsetDateTime>), (String, String), Person);
    let row: Option<(i64, Row)> = match kind {
        CredentialKind::McpConnection => mcp_connections::table
            .inner_join(tenants::table)
            .inner_join(users::table)
            .filter(mcp_connections::id.eq(id))
            .select((
                mcp_connections::tenant_id,
                (
                    (mcp_connections::id, mcp_connections::name, mcp_connections::revoked_at),
                    (tenants::status, tenants::default_country_code),
                    (users::id, users::name, users::active, users::all_permissions, users::permissions),
                ),
            ))
            .first(conn)
            .await
            .optional()?,
        CredentialKind::OAuthToken => oauth_grants::table
            .inner_join(oauth_clients::table)
            .inner_join(tenants::table)
            .inner_join(users::table)
            .filter(oauth_grants::id.eq(id))
            .select((
                oauth_grants::tenant_id,
                (
                    (oauth_grants::id, oauth_clients::client_name, oauth_grants::revoked_at),
                    (tenants::status, tenants::default_country_code),
                    (users::id, users::name, users::active, users::all_permissions, users::permissions),
                ),
            ))
            .first(conn)
            .await
            .optional()?,
        CredentialKind::RestKey => return Err(Error::internal("a REST key is read by keys::current")),
    };
    let Some((tenant_id, ((id, name, revoked_at), (tenant_status, calling_code), user))) = row else {
        return Err(Error::unauthenticated("This MCP credential no longer exists."));
    };
    if revoked_at.is_some() {
        return Err(Error::unauthenticated("This MCP credential has been revoked."));
    }
    caller_of(kind, (id, name), (tenant_id, tenant_status, calling_code), user)
}

/// Turns an MCP bearer credential into its caller: an `svc_mcp_` connection or an OAuth access
/// token. 401 for a missing, unknown, revoked, expired or wrong-kind credential (a REST key
/// or a refresh token included); 403 for a suspended or inactive account or a deactivated
/// issuer.
pub async fn authenticate(conn: &mut Conn, token: &str, now: OffsetDateTime) -> Result<McpCaller, Error> {
    if token.starts_with(crate::oauth::ACCESS_PREFIX) {
        return crate::oauth::authenticate(conn, token, now).await;
    }
    if token.starts_with(crate::oauth::REFRESH_PREFIX) {
        return Err(Error::unauthenticated("A refresh token is not an access token: exchange it at /oauth/token."));
    }
    if !token.starts_with(MCP_PREFIX) {
        return Err(Error::unauthenticated("REST API keys are not accepted by MCP servers; use an MCP connection."));
    }
    type Row = ((i64, i64, String, Vec<String>, Option<OffsetDateTime>), (String, String), Person);
    let row: Option<Row> = mcp_connections::table
        .inner_join(tenants::table)
        .inner_join(users::table)
        .filter(mcp_connections::token_hash.eq(hash(token)))
        .select((
            (
                mcp_connections::id,
                mcp_connections::tenant_id,
                mcp_connections::name,
                mcp_connections::scopes,
                mcp_connections::revoked_at,
            ),
            (tenants::status, tenants::default_country_code),
            (users::id, users::name, users::active, users::all_permissions, users::permissions),
        ))
        .first(conn)
        .await
        .optional()?;
    let Some(((id, tenant_id, name, scopes, revoked_at), (tenant_status, calling_code), user)) = row else {
        return Err(Error::unauthenticated("Invalid MCP credential."));
    };
    if revoked_at.is_some() {
        return Err(Error::unauthenticated("This MCP connection has been revoked."));
    }
    let caller = caller_of(CredentialKind::McpConnection, (id, name), (tenant_id, tenant_status, calling_code), user)?;
    Ok(McpCaller { caller, scopes, resource: None, rate_key: hash(token) })
}
