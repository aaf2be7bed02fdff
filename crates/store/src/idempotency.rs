//! Idempotency records, the one `Idempotency-Key` mechanism of every creating write: the first
//! request with a key does the work; a repeat within 24 hours gets the stored first response;
//! the same key with another request is refused (422), and a repeat that arrives while the
//! first is still working gets a 409.
//!
//! Services call [`once`] after they have authorized the caller (permission, module switch,
//! visibility), so a stored answer is never shown to someone who could not make the request
//! now. Keys are scoped by tenant, issuer and operation ([`Request::new`]).

use std::future::Future;

use diesel::OptionalExtension;
use diesel::sql_types::{BigInt, Jsonb, Nullable, SmallInt, Text, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, Issuer, TenantId};
use serde::Serialize;
use serde_json::Value;
use time::{Duration, OffsetDateTime};

use crate::Conn;
use crate::Prepare;

/// How long a stored response is replayed.
pub const REPLAY_WINDOW: Duration = Duration::hours(24);

/// How long a claim whose work never finished holds its key. The work and the stored answer
/// commit together, so a claim without an answer is work that never committed (its process
/// died, say): after this it is taken over.
pub const IN_FLIGHT_LEASE: Duration = Duration::minutes(1);

/// An `Idempotency-Key` as a caller sends it: trimmed, 1 to 255 characters (Stripe's limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key(String);

impl Key {
    pub const MAX_CHARS: usize = 255;

    /// A blank header is no key; a longer one is refused.
    pub fn parse(raw: &str) -> Result<Option<Self>, Error> {
        let key = raw.trim();
        if key.is_empty() {
            return Ok(None);
        }
        if key.chars().count() > Self::MAX_CHARS || key.contains('\0') {
            return Err(Self::refused());
        }
        Ok(Some(Self(key.to_owned())))
    }

    /// The 422 of a header that is no key.
    pub fn refused() -> Error {
        Error::field("Idempotency-Key", "The key must be at most 255 characters of text.")
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A request that carries a key: who asks, for what, and what makes a repeat the same request.
#[derive(Debug, Clone)]
pub struct Request {
    tenant: TenantId,
    scope: String,
    key: Key,
    fingerprint: String,
}

impl Request {
    /// `operation` names what is created and where (`commerce.orders:7`); `same` is what a
    /// repeat must match (the body, as the service read it), compared without regard to the
    /// order of object members.
    pub fn new(caller: &Caller, operation: &str, key: Key, same: &impl Serialize) -> Result<Self, Error> {
        let issuer = match &caller.issuer {
            Issuer::User { id, .. } => format!("user:{}", id.0),
            Issuer::Legacy => "legacy".to_owned(),
            Issuer::Unknown => "unknown".to_owned(),
        };
        let same = canonical(serde_json::to_value(same).map_err(Error::internal)?);
        let fingerprint = fingerprint(&[same.to_string().as_bytes()]);
        Ok(Self { tenant: caller.tenant_id, scope: format!("{operation}|{issuer}"), key, fingerprint })
    }
}

/// Object members in key order, at every depth.
pub fn canonical(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut members: Vec<(String, Value)> = map.into_iter().map(|(k, v)| (k, canonical(v))).collect();
            members.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(members.into_iter().collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

/// A service's answer to a request that may have carried a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer<T> {
    /// This request did the work.
    Done(T),
    /// A repeat: the first request's answer, exactly as it was given.
    Replay(Value),
}

impl<T> Answer<T> {
    pub fn is_replay(&self) -> bool {
        matches!(self, Self::Replay(_))
    }
}

impl<T: Serialize> Serialize for Answer<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Done(value) => value.serialize(serializer),
            Self::Replay(value) => value.serialize(serializer),
        }
    }
}

/// Runs `work` once per key: without a key it just runs; with one, the first request runs it
/// in a transaction that also stores its answer (so a crash can never leave work done and no
/// answer), and a repeat gets that answer. A refused request does not keep the key, so it may
/// be sent again corrected. Transactions inside `work` become savepoints of this one.
pub async fn once<T, F>(
    conn: &mut Conn,
    now: OffsetDateTime,
    request: Option<Request>,
    work: F,
) -> Result<Answer<T>, Error>
where
    T: Serialize + Send,
    F: for<'r> Work<'r, T> + Send,
{
    let Some(request) = request else {
        return work(conn).await.map(Answer::Done);
    };
    let Request { tenant, scope, key, fingerprint } = &request;
    let claimed_at = match begin_claim(conn, *tenant, scope, key.as_str(), fingerprint, now).await? {
        Claim::Replay { body, .. } => return Ok(Answer::Replay(body)),
        Claim::Started { claimed_at } => claimed_at,
    };
    let done = conn
        .transaction::<_, Error, _>(async |conn| {
            let value = work(conn).await?;
            let body = serde_json::to_value(&value).map_err(Error::internal)?;
            finish(conn, &request, claimed_at, &body).await?;
            Ok(value)
        })
        .await;
    if done.is_err() {
        // only our own claim: one taken over is left to its new owner
        diesel::sql_query(
            "DELETE FROM idempotency_keys
             WHERE tenant_id = $1 AND scope = $2 AND key = $3 AND created_at = $4 AND response IS NULL",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<Text, _>(scope)
        .bind::<Text, _>(key.as_str())
        .bind::<Timestamptz, _>(claimed_at)
        .prepared()
        .execute(conn)
        .await?;
    }
    done.map(Answer::Done)
}

/// Work on a connection whose future is `Send` (what a transaction needs); every
/// `async |conn| ...` closure that holds only `Send` values is one. Stable Rust cannot name an
/// async closure's future, hence the same trick as diesel-async's own `transaction`.
pub trait Work<'r, T>:
    AsyncFnOnce(&'r mut Conn) -> Result<T, Error> + FnOnce(&'r mut Conn) -> <Self as Work<'r, T>>::Fut
{
    type Fut: Future<Output = Result<T, Error>> + Send;
}

impl<'r, T, F, Fut> Work<'r, T> for F
where
    F: AsyncFnOnce(&'r mut Conn) -> Result<T, Error> + FnOnce(&'r mut Conn) -> Fut,
    Fut: Future<Output = Result<T, Error>> + Send,
{
    type Fut = Fut;
}

/// Stores the answer on this request's own claim, in the work's transaction. A claim taken
/// over meanwhile (this request outlived [`IN_FLIGHT_LEASE`]) is someone else's now: then the
/// work is rolled back, so the key's work commits once whoever wins.
async fn finish(conn: &mut Conn, request: &Request, claimed_at: OffsetDateTime, body: &Value) -> Result<(), Error> {
    let stored = diesel::sql_query(
        "UPDATE idempotency_keys SET status = 0, response = $5
         WHERE tenant_id = $1 AND scope = $2 AND key = $3 AND created_at = $4 AND response IS NULL",
    )
    .bind::<BigInt, _>(request.tenant.0)
    .bind::<Text, _>(&request.scope)
    .bind::<Text, _>(request.key.as_str())
    .bind::<Timestamptz, _>(claimed_at)
    .bind::<Jsonb, _>(body)
    .prepared()
    .execute(conn)
    .await?;
    if stored == 0 {
        return Err(in_flight());
    }
    Ok(())
}

fn in_flight() -> Error {
    Error::conflict("A request with this Idempotency-Key is still being processed; retry shortly.")
}

#[derive(Debug, Clone, PartialEq)]
pub enum Idempotency {
    /// This request owns the key: do the work, then [`complete`] (or [`abandon`] on failure).
    Started,
    /// The key's first request already answered this.
    Replay { status: u16, body: serde_json::Value },
}

/// A fingerprint of the parts that make two requests "the same" (method, path, body...).
pub fn fingerprint(parts: &[&[u8]]) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for part in parts {
        ctx.update(&(part.len() as u64).to_be_bytes());
        ctx.update(part);
    }
    hex::encode(ctx.finish())
}

enum Claim {
    Started { claimed_at: OffsetDateTime },
    Replay { status: u16, body: Value },
}

#[derive(diesel::QueryableByName)]
struct Stored {
    #[diesel(sql_type = Text)]
    fingerprint: String,
    #[diesel(sql_type = Nullable<SmallInt>)]
    status: Option<i16>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    response: Option<serde_json::Value>,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    started: bool,
    #[diesel(sql_type = Timestamptz)]
    created_at: OffsetDateTime,
}

/// Claims `key` for this request, or answers with what the first request stored. Run it
/// outside the work's transaction so a concurrent duplicate sees the claim at once.
pub async fn begin(
    conn: &mut Conn,
    tenant: TenantId,
    scope: &str,
    key: &str,
    fingerprint: &str,
    now: OffsetDateTime,
) -> Result<Idempotency, Error> {
    Ok(match begin_claim(conn, tenant, scope, key, fingerprint, now).await? {
        Claim::Started { .. } => Idempotency::Started,
        Claim::Replay { status, body } => Idempotency::Replay { status, body },
    })
}

async fn begin_claim(
    conn: &mut Conn,
    tenant: TenantId,
    scope: &str,
    key: &str,
    fingerprint: &str,
    now: OffsetDateTime,
) -> Result<Claim, Error> {
    // An expired record, or a claim whose work never finished, is taken over as if it were
    // absent. A concurrent first request that
    // commits while this statement waits is invisible to its snapshot, so a second statement
    // (with a fresh snapshot) looks again; still nothing means the key is busy.
    let mut found = None;
    for _ in 0..2 {
        found = diesel::sql_query(
            "WITH claimed AS (
             INSERT INTO idempotency_keys (tenant_id, scope, key, fingerprint, created_at)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (tenant_id, scope, key) DO UPDATE
                 SET fingerprint = EXCLUDED.fingerprint, created_at = EXCLUDED.created_at,
                     status = NULL, response = NULL
                 WHERE idempotency_keys.created_at <= $6
                    OR (idempotency_keys.response IS NULL AND idempotency_keys.created_at <= $7)
             RETURNING fingerprint, status, response, true AS started, created_at)
         SELECT * FROM claimed
         UNION ALL
         SELECT fingerprint, status, response, false, created_at FROM idempotency_keys
         WHERE tenant_id = $1 AND scope = $2 AND key = $3 AND NOT EXISTS (SELECT 1 FROM claimed)",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<Text, _>(scope)
        .bind::<Text, _>(key)
        .bind::<Text, _>(fingerprint)
        .bind::<Timestamptz, _>(now)
        .bind::<Timestamptz, _>(now - REPLAY_WINDOW)
        .bind::<Timestamptz, _>(now - IN_FLIGHT_LEASE)
        .get_result::<Stored>(conn)
        .await
        .optional()?;
        if found.is_some() {
            break;
        }
    }
    let Some(stored) = found else {
        return Err(in_flight());
    };
    if stored.started {
        return Ok(Claim::Started { claimed_at: stored.created_at });
    }
    if stored.fingerprint != fingerprint {
        return Err(Error::validation(
            "This Idempotency-Key was already used with a different request; use a new key.",
        )
        .with_field("Idempotency-Key", "The key was already used with a different request."));
    }
    match (stored.status, stored.response) {
        (Some(status), Some(body)) => Ok(Claim::Replay { status: status as u16, body }),
        _ => Err(in_flight()),
    }
}

/// Stores the first response, to be replayed for the rest of the window.
pub async fn complete(
    conn: &mut Conn,
    tenant: TenantId,
    scope: &str,
    key: &str,
    status: u16,
    body: &serde_json::Value,
) -> Result<(), Error> {
    diesel::sql_query(
        "UPDATE idempotency_keys SET status = $4, response = $5
         WHERE tenant_id = $1 AND scope = $2 AND key = $3",
    )
    .bind::<BigInt, _>(tenant.0)
    .bind::<Text, _>(scope)
    .bind::<Text, _>(key)
    .bind::<SmallInt, _>(status as i16)
    .bind::<Jsonb, _>(body)
    .prepared()
    .execute(conn)
    .await?;
    Ok(())
}

/// Releases a key whose work failed, so the client may retry with it.
pub async fn abandon(conn: &mut Conn, tenant: TenantId, scope: &str, key: &str) -> Result<(), Error> {
    diesel::sql_query(
        "DELETE FROM idempotency_keys
         WHERE tenant_id = $1 AND scope = $2 AND key = $3 AND response IS NULL",
    )
    .bind::<BigInt, _>(tenant.0)
    .bind::<Text, _>(scope)
    .bind::<Text, _>(key)
    .prepared()
    .execute(conn)
    .await?;
    Ok(())
}
