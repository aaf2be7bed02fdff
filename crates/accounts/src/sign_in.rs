//! Signing in to the consent page (issue 16): a tenant user's email and password, the password
//! kept only as an argon2id hash (memory-hard, OWASP's parameters), and failures in a row
//! slowed down. A successful sign-in opens a browser session of [`SESSION_TTL`], stored hashed
//! like every other credential.

use std::sync::OnceLock;

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use kernel::{Error, ErrorKind, TenantId, UserId};
use ring::rand::{SecureRandom, SystemRandom};
use time::{Duration, OffsetDateTime};

use crate::keys::{generate, hash};
use crate::schema::{sign_ins, tenants, users};
use crate::users::User;
use store::Conn;

/// How long a browser stays signed in to the consent page.
pub const SESSION_TTL: Duration = Duration::hours(1);
/// Passwords: at least this long (NIST SP 800-63B asks for 8; a little more here).
pub const MIN_PASSWORD_CHARS: usize = 10;
/// ...and at most this long, so hashing stays bounded.
pub const MAX_PASSWORD_CHARS: usize = 1024;
/// Failures in a row allowed before each next attempt must wait.
pub const FREE_FAILURES: i32 = 5;
/// The wait after [`FREE_FAILURES`], doubling with each further failure up to [`MAX_WAIT`].
const FIRST_WAIT: Duration = Duration::seconds(30);
const MAX_WAIT: Duration = Duration::minutes(15);

/// Gives `user` of `tenant` a sign-in: `email` (unique across the service, compared without
/// case) and `password`, which replaces any earlier one and clears the failure count.
pub async fn set_login(
    conn: &mut Conn,
    tenant: TenantId,
    user: UserId,
    email: &str,
    password: &str,
) -> Result<User, Error> {
    let email = email.trim().to_lowercase();
    if email.len() > 254 || !email.contains('@') || email.starts_with('@') || email.ends_with('@') {
        return Err(Error::field("email", "The email must be an address like name@example.com."));
    }
    let chars = password.chars().count();
    if !(MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&chars) {
        return Err(Error::field(
            "password",
            format!("The password must be {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters long."),
        ));
    }
    crate::users::of_tenant(conn, tenant, user).await?;
    let taken: Option<i64> = users::table
        .filter(users::email.eq(&email))
        .filter(users::id.ne(user.0))
        .select(users::id)
        .first(conn)
        .await
        .optional()?;
    if taken.is_some() {
        return Err(Error::field("email", "Another user signs in with this email."));
    }
    let password_hash = hash_password(password.to_owned()).await?;
    Ok(diesel::update(users::table.find(user.0))
        .set((
            users::email.eq(&email),
            users::password_hash.eq(password_hash),
            users::failed_sign_ins.eq(0),
            users::last_failed_sign_in_at.eq(None::<OffsetDateTime>),
            users::updated_at.eq(diesel::dsl::now),
        ))
        .returning(User::as_returning())
        .get_result(conn)
        .await?)
}

/// Who is signed in.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub user: User,
    /// The browser session's token (the cookie's value), only right after signing in.
    pub session: Option<String>,
}

/// Checks `email` and `password`: 401 for a wrong pair (the same answer for an unknown email,
/// after the same work), 429 with `retry_after` while failures in a row are being slowed down,
/// 403 for a deactivated user or an account that is not active. Opens a session on success.
pub async fn sign_in(conn: &mut Conn, email: &str, password: &str, now: OffsetDateTime) -> Result<SignedIn, Error> {
    let email = email.trim().to_lowercase();
    // the user, their password hash, failures in a row and the last one, the account's status
    type Row = (User, Option<String>, i32, Option<OffsetDateTime>, String);
    let row: Option<Row> = users::table
        .inner_join(tenants::table)
        .filter(users::email.eq(&email))
        .select((
            User::as_select(),
            users::password_hash,
            users::failed_sign_ins,
            users::last_failed_sign_in_at,
            tenants::status,
        ))
        .first(conn)
        .await
        .optional()?;
    let Some((user, Some(stored), failures, last_failure, tenant_status)) = row else {
        // as slow as a wrong password, so the answer's time tells nothing about the email
        verify_password(password.to_owned(), None).await?;
        return Err(wrong_pair());
    };
    if let Some(wait) = wait_after(failures, last_failure, now) {
        return Err(Error::new(
            ErrorKind::RateLimited,
            format!("Too many failed sign-ins. Try again in {} seconds.", wait.whole_seconds()),
        )
        .with_detail("retry_after", wait.whole_seconds()));
    }
    if !verify_password(password.to_owned(), Some(stored)).await? {
        diesel::update(users::table.find(user.id))
            .set((users::failed_sign_ins.eq(users::failed_sign_ins + 1), users::last_failed_sign_in_at.eq(now)))
            .execute(conn)
            .await?;
        return Err(wrong_pair());
    }
    if tenant_status != "active" {
        return Err(Error::forbidden(format!("This account is {tenant_status}.")));
    }
    if !user.active {
        return Err(Error::forbidden("This user is deactivated."));
    }
    if failures > 0 {
        diesel::update(users::table.find(user.id))
            .set((users::failed_sign_ins.eq(0), users::last_failed_sign_in_at.eq(None::<OffsetDateTime>)))
            .execute(conn)
            .await?;
    }
    diesel::delete(sign_ins::table.filter(sign_ins::user_id.eq(user.id)).filter(sign_ins::expires_at.lt(now)))
        .execute(conn)
        .await?;
    let session = generate()?;
    diesel::insert_into(sign_ins::table)
        .values((
            sign_ins::token_hash.eq(hash(&session)),
            sign_ins::user_id.eq(user.id),
            sign_ins::expires_at.eq(now + SESSION_TTL),
        ))
        .execute(conn)
        .await?;
    Ok(SignedIn { user, session: Some(session) })
}

/// The person a session cookie belongs to, while the session lasts and they may still sign in.
pub async fn session(conn: &mut Conn, token: &str, now: OffsetDateTime) -> Result<Option<SignedIn>, Error> {
    let user: Option<User> = sign_ins::table
        .inner_join(users::table.inner_join(tenants::table))
        .filter(sign_ins::token_hash.eq(hash(token)))
        .filter(sign_ins::expires_at.gt(now))
        .filter(users::active.eq(true))
        .filter(tenants::status.eq("active"))
        .select(User::as_select())
        .first(conn)
        .await
        .optional()?;
    Ok(user.map(|user| SignedIn { user, session: None }))
}

fn wrong_pair() -> Error {
    Error::unauthenticated("Wrong email or password.")
}

/// How long the next attempt must still wait, if it must.
fn wait_after(failures: i32, last: Option<OffsetDateTime>, now: OffsetDateTime) -> Option<Duration> {
    let last = last?;
    if failures < FREE_FAILURES {
        return None;
    }
    let doublings = (failures - FREE_FAILURES).min(10) as u32;
    let wait = (FIRST_WAIT * 2_i32.pow(doublings)).min(MAX_WAIT);
    let left = last + wait - now;
    (left > Duration::ZERO).then(|| Duration::seconds(left.whole_seconds().max(1)))
}

fn hasher() -> Argon2<'static> {
    // argon2id, 19 MiB, 2 passes, 1 lane: OWASP's first recommendation
    Argon2::default()
}

/// Hashing takes tens of milliseconds of one core on purpose: off the request threads.
async fn hash_password(password: String) -> Result<String, Error> {
    let mut salt = [0u8; 16];
    SystemRandom::new().fill(&mut salt).map_err(|_| Error::internal("system randomness unavailable"))?;
    tokio::task::spawn_blocking(move || {
        let salt = SaltString::encode_b64(&salt).map_err(Error::internal)?;
        Ok(hasher().hash_password(password.as_bytes(), &salt).map_err(Error::internal)?.to_string())
    })
    .await
    .map_err(Error::internal)?
}

/// `None` checks against no one's hash: the same work as a wrong password.
async fn verify_password(password: String, stored: Option<String>) -> Result<bool, Error> {
    tokio::task::spawn_blocking(move || {
        let parsed = PasswordHash::new(stored.as_deref().unwrap_or_else(|| dummy_hash())).map_err(Error::internal)?;
        Ok(hasher().verify_password(password.as_bytes(), &parsed).is_ok())
    })
    .await
    .map_err(Error::internal)?
}

/// A hash of no one's password, made once, for unknown emails.
fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| {
        let salt = SaltString::encode_b64(b"svc-unknown-user").expect("a 16-byte salt encodes");
        hasher().hash_password(b"no one's password", &salt).map(|h| h.to_string()).unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_past_the_free_ones_wait_longer_each_time() {
        let now = OffsetDateTime::UNIX_EPOCH + Duration::days(1);
        assert_eq!(wait_after(4, Some(now), now), None);
        assert_eq!(wait_after(5, Some(now), now), Some(Duration::seconds(30)));
        assert_eq!(wait_after(6, Some(now), now), Some(Duration::seconds(60)));
        assert_eq!(wait_after(30, Some(now), now), Some(MAX_WAIT));
        assert_eq!(wait_after(5, Some(now - Duration::seconds(31)), now), None);
    }
}
