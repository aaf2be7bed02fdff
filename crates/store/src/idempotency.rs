//! Idempotency records: the first request with a key does the work; a repeat within 24 hours
//! gets the stored first response; the same key with another request is refused (422), and a
//! repeat that arrives while the first is still working gets a 409.

use diesel::OptionalExtension;
use diesel::sql_types::{BigInt, Jsonb, Nullable, SmallInt, Text, Timestamptz};
use diesel_async::RunQueryDsl;
use kernel::{Error, TenantId};
use time::{Duration, OffsetDateTime};

use crate::Conn;

/// How long a stored response is replayed.
pub const REPLAY_WINDOW: Duration = Duration::hours(24);

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
    // An expired record is taken over as if it were absent. A concurrent first request that
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
             RETURNING fingerprint, status, response, true AS started)
         SELECT * FROM claimed
         UNION ALL
         SELECT fingerprint, status, response, false FROM idempotency_keys
         WHERE tenant_id = $1 AND scope = $2 AND key = $3 AND NOT EXISTS (SELECT 1 FROM claimed)",
        )
        .bind::<BigInt, _>(tenant.0)
        .bind::<Text, _>(scope)
        .bind::<Text, _>(key)
        .bind::<Text, _>(fingerprint)
        .bind::<Timestamptz, _>(now)
        .bind::<Timestamptz, _>(now - REPLAY_WINDOW)
        .get_result::<Stored>(conn)
        .await
        .optional()?;
        if found.is_some() {
            break;
        }
    }
    let Some(stored) = found else {
        return Err(Error::conflict("A request with this Idempotency-Key is still being processed; retry shortly."));
    };
    if stored.started {
        return Ok(Idempotency::Started);
    }
    if stored.fingerprint != fingerprint {
        return Err(Error::validation(
            "This Idempotency-Key was already used with a different request; use a new key.",
        )
        .with_field("Idempotency-Key", "The key was already used with a different request."));
    }
    match (stored.status, stored.response) {
        (Some(status), Some(body)) => Ok(Idempotency::Replay { status: status as u16, body }),
        _ => Err(Error::conflict("A request with this Idempotency-Key is still being processed; retry shortly.")),
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
    .execute(conn)
    .await?;
    Ok(())
}
