//! API keys: a random 64-character plaintext shown once, only its SHA-256 stored. Every
//! request is authenticated by one indexed lookup that also reads the tenant's status and the
//! issuer's current permissions, so revocation, expiry, suspension and permission changes
//! apply to the very next request.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{ApiKeyId, Caller, CredentialKind, Error, Issuer, TenantId, UserId};
use ring::rand::{SecureRandom, SystemRandom};
use serde::Serialize;
use time::OffsetDateTime;

use crate::schema::{api_keys, tenants, users};
use store::Conn;

/// The contract's limit on a key's name.
pub const MAX_NAME_CHARS: usize = 160;
/// Length of a REST key's plaintext.
pub const KEY_LENGTH: usize = 64;
/// MCP connection credentials start with this and are never REST keys.
pub const MCP_PREFIX: &str = "svc_mcp_";

const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

#[derive(Debug, Clone, Queryable, Selectable, Serialize)]
#[diesel(table_name = api_keys)]
pub struct ApiKey {
    pub id: i64,
    pub tenant_id: i64,
    pub user_id: Option<i64>,
    pub legacy: bool,
    pub name: String,
    pub prefix: String,
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A freshly issued key: the only time its plaintext exists.
#[derive(Debug, Clone, Serialize)]
pub struct IssuedKey {
    #[serde(flatten)]
    pub key: ApiKey,
    #[serde(rename = "key")]
    pub plaintext: String,
}

/// Who a new key answers to.
#[derive(Debug, Clone, Copy)]
pub enum KeyIssuer {
    User(UserId),
    /// A key of the kind made before 7 September 2026, for the original contact paths.
    Legacy,
}

/// A random key drawn uniformly from 62 letters and digits.
pub(crate) fn generate() -> Result<String, Error> {
    let rng = SystemRandom::new();
    let mut key = String::with_capacity(KEY_LENGTH);
    let mut buf = [0u8; 64];
    while key.len() < KEY_LENGTH {
        rng.fill(&mut buf).map_err(|_| Error::internal("system randomness unavailable"))?;
        // 248 = 4 * 62: rejecting bytes above it keeps every character equally likely.
        for byte in buf.iter().filter(|b| **b < 248) {
            if key.len() == KEY_LENGTH {
                break;
            }
            key.push(ALPHABET[(*byte % 62) as usize] as char);
        }
    }
    Ok(key)
}

/// The stored form of a key; also what the rate limiter is keyed by.
pub fn hash(plaintext: &str) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, plaintext.as_bytes()).as_ref().to_vec()
}

fn check_name(name: &str) -> Result<&str, Error> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::field("name", "The name is required."));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(Error::field("name", format!("The name may not be longer than {MAX_NAME_CHARS} characters.")));
    }
    Ok(name)
}

pub async fn create(
    conn: &mut Conn,
    tenant: TenantId,
    issuer: KeyIssuer,
    name: &str,
    expires_at: Option<OffsetDateTime>,
) -> Result<IssuedKey, Error> {
    let name = check_name(name)?;
    crate::tenants::get(conn, tenant).await?;
    let user_id = match issuer {
        KeyIssuer::User(user) => {
            let user = crate::users::get(conn, user).await?;
            if user.tenant_id != tenant.0 {
                return Err(Error::field("issuer", "The issuer belongs to another tenant."));
            }
            Some(user.id)
        }
        KeyIssuer::Legacy => None,
    };
    let plaintext = generate()?;
    let key = diesel::insert_into(api_keys::table)
        .values((
            api_keys::tenant_id.eq(tenant.0),
            api_keys::user_id.eq(user_id),
            api_keys::legacy.eq(user_id.is_none()),
            api_keys::name.eq(name),
            api_keys::key_hash.eq(hash(&plaintext)),
            api_keys::prefix.eq(&plaintext[..8]),
            api_keys::expires_at.eq(expires_at),
        ))
        .returning(ApiKey::as_returning())
        .get_result(conn)
        .await?;
    Ok(IssuedKey { key, plaintext })
}

pub async fn get(conn: &mut Conn, key: ApiKeyId) -> Result<ApiKey, Error> {
    api_keys::table
        .find(key.0)
        .select(ApiKey::as_select())
        .first(conn)
        .await
        .optional()?
        .ok_or_else(|| Error::not_found("API key"))
}

/// Revokes a key; it is refused from the next request on. Revoking twice keeps the first time.
pub async fn revoke(conn: &mut Conn, key: ApiKeyId, now: OffsetDateTime) -> Result<ApiKey, Error> {
    diesel::update(api_keys::table.find(key.0).filter(api_keys::revoked_at.is_null()))
        .set(api_keys::revoked_at.eq(now))
        .execute(conn)
        .await?;
    get(conn, key).await
}

/// Issues a new key with the same tenant and name under `issuer`, and revokes the old one at
/// once. Rotating a legacy key is how it comes under the permission model.
pub async fn rotate(conn: &mut Conn, key: ApiKeyId, issuer: UserId, now: OffsetDateTime) -> Result<IssuedKey, Error> {
    conn.transaction(async |conn| {
        let old = get(conn, key).await?;
        if old.revoked_at.is_some() {
            return Err(Error::conflict("The key is already revoked."));
        }
        let issued = create(conn, TenantId(old.tenant_id), KeyIssuer::User(issuer), &old.name, old.expires_at).await?;
        diesel::update(api_keys::table.find(old.id))
            .set((api_keys::revoked_at.eq(now), api_keys::replaced_by.eq(issued.key.id)))
            .execute(conn)
            .await?;
        Ok(issued)
    })
    .await
}

type AuthRow = (
    (i64, i64, String, bool, Option<OffsetDateTime>, Option<OffsetDateTime>),
    (String, String),
    Option<(i64, String, bool, bool, Vec<String>)>,
);

/// What a key's lookup finds: enough to decide every request it makes until something about
/// the key, its issuer or its account changes (the gateways keep it: [`crate::KeyCache`]).
#[derive(Debug, Clone)]
pub struct KeyRecord {
    pub(crate) key_id: i64,
    pub(crate) tenant_id: i64,
    pub(crate) key_name: String,
    pub(crate) legacy: bool,
    pub(crate) expires_at: Option<OffsetDateTime>,
    pub(crate) revoked_at: Option<OffsetDateTime>,
    pub(crate) tenant_status: String,
    pub(crate) calling_code: String,
    pub(crate) user: Option<(i64, String, bool, bool, Vec<String>)>,
}

impl KeyRecord {
    pub fn tenant_id(&self) -> TenantId {
        TenantId(self.tenant_id)
    }

    /// The caller this key is at `now`: 401 for a revoked or expired key; 403 for a
    /// suspended or inactive account.
    pub fn caller(&self, now: OffsetDateTime) -> Result<Caller, Error> {
        if self.revoked_at.is_some() {
            return Err(Error::unauthenticated("This API key has been revoked."));
        }
        if self.expires_at.is_some_and(|at| at <= now) {
            return Err(Error::unauthenticated("This API key has expired."));
        }
        if self.tenant_status != "active" {
            return Err(Error::forbidden(format!("This account is {}.", self.tenant_status)));
        }
        let issuer = match &self.user {
            Some((id, name, active, all, names)) => Issuer::User {
                id: UserId(*id),
                name: name.clone(),
                active: *active,
                permissions: crate::users::permissions_of(*all, names),
            },
            None if self.legacy => Issuer::Legacy,
            None => Issuer::Unknown,
        };
        Ok(Caller {
            tenant_id: TenantId(self.tenant_id),
            calling_code: self.calling_code.clone(),
            key_id: ApiKeyId(self.key_id),
            key_name: self.key_name.clone(),
            credential: CredentialKind::RestKey,
            issuer,
        })
    }
}

/// Finds a Bearer token's key: 401 for a missing, unknown or wrong-kind credential.
pub async fn lookup(conn: &mut Conn, token: &str) -> Result<KeyRecord, Error> {
    if token.starts_with(MCP_PREFIX) {
        return Err(Error::unauthenticated("MCP credentials are not accepted on REST routes; use an API key."));
    }
    if token.len() != KEY_LENGTH {
        return Err(Error::unauthenticated("Invalid API key."));
    }
    let row = record_query().filter(api_keys::key_hash.eq(hash(token))).first(conn).await.optional()?;
    record(row).ok_or_else(|| Error::unauthenticated("Invalid API key."))
}

/// The key `id` as it is now, for work that acts for a key long after its request (an agent
/// run's steps): 401 once it is revoked or expired, 403 once its account is not active.
pub async fn current(conn: &mut Conn, id: ApiKeyId, now: OffsetDateTime) -> Result<Caller, Error> {
    let row = record_query().filter(api_keys::id.eq(id.0)).first(conn).await.optional()?;
    record(row).ok_or_else(|| Error::unauthenticated("This API key no longer exists."))?.caller(now)
}

/// A key with its account and issuer, as [`KeyRecord`] reads them.
#[diesel::dsl::auto_type(no_type_alias)]
fn record_query() -> _ {
    api_keys::table.inner_join(tenants::table).left_join(users::table).select((
        (
            api_keys::id,
            api_keys::tenant_id,
            api_keys::name,
            api_keys::legacy,
            api_keys::expires_at,
            api_keys::revoked_at,
        ),
        (tenants::status, tenants::default_country_code),
        (users::id, users::name, users::active, users::all_permissions, users::permissions).nullable(),
    ))
}

fn record(row: Option<AuthRow>) -> Option<KeyRecord> {
    let ((key_id, tenant_id, key_name, legacy, expires_at, revoked_at), (tenant_status, calling_code), user) = row?;
    Some(KeyRecord { key_id, tenant_id, key_name, legacy, expires_at, revoked_at, tenant_status, calling_code, user })
}

/// Turns a Bearer token into a [`Caller`]: 401 for a missing, unknown, revoked, expired or
/// wrong-kind credential; 403 for a suspended or inactive account.
pub async fn authenticate(conn: &mut Conn, token: &str, now: OffsetDateTime) -> Result<Caller, Error> {
    lookup(conn, token).await?.caller(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_64_letters_and_digits_and_differ() {
        let a = generate().expect("key");
        let b = generate().expect("key");
        assert_eq!(a.len(), KEY_LENGTH);
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, b);
        assert_eq!(hash(&a).len(), 32);
    }
}
