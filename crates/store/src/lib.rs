//! PostgreSQL for every domain: the diesel-async pool (row-level security per checkout), embedded migrations, the job queue,
//! the event outbox, idempotency records, the sealing of secrets at rest and (feature
//! `testing`) a database per test.

pub mod idempotency;
pub mod jobs;
pub mod listen;
pub mod migrate;
pub mod outbox;
mod pool;
mod prepared;
pub mod search;
pub mod secrets;
#[cfg(feature = "testing")]
pub mod testing;
pub mod workers;

pub use pool::{
    Conn, Manager, Pool, PooledConn, RowSecurity, SERVICE_ROLE, Scoped, connect, connect_global, connect_system,
    global_size, pool, pool_with,
};
pub use prepared::{Prepare, Prepared};

/// Runs `write` until it succeeds or `for_up_to` has passed, pausing between tries (250 ms,
/// doubling up to 2 s): how a worker keeps an outcome it could not record while the database
/// was away, so the work resumes as soon as the database is back rather than after a lease.
pub async fn persist<T, F, Fut>(for_up_to: std::time::Duration, mut write: F) -> Result<T, kernel::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kernel::Error>>,
{
    let give_up = tokio::time::Instant::now() + for_up_to;
    let mut pause = std::time::Duration::from_millis(250);
    loop {
        match write().await {
            Err(error) if tokio::time::Instant::now() + pause < give_up => {
                tracing::warn!(%error, "recording failed; trying again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(std::time::Duration::from_secs(2));
            }
            done => return done,
        }
    }
}

/// The 32-byte secret this database keeps under `name` (made on first use, the same for every
/// process sharing the database): webhook header sealing, signed file URLs.
pub async fn service_key(conn: &mut Conn, name: &str) -> Result<Vec<u8>, kernel::Error> {
    use diesel::sql_types::{Bytea, Text};
    use diesel_async::RunQueryDsl;
    use ring::rand::{SecureRandom, SystemRandom};

    #[derive(diesel::QueryableByName)]
    struct Stored {
        #[diesel(sql_type = Bytea)]
        key: Vec<u8>,
    }
    let mut fresh = [0_u8; 32];
    SystemRandom::new().fill(&mut fresh).map_err(|_| kernel::Error::internal("no randomness for a key"))?;
    diesel::sql_query("INSERT INTO service_keys (name, key) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING")
        .bind::<Text, _>(name)
        .bind::<Bytea, _>(fresh.to_vec())
        .execute(conn)
        .await?;
    let stored: Stored = diesel::sql_query("SELECT key FROM service_keys WHERE name = $1")
        .bind::<Text, _>(name)
        .get_result(conn)
        .await?;
    Ok(stored.key)
}

/// Whether a diesel error is a unique violation (optionally of one named constraint).
pub fn is_unique_violation(error: &diesel::result::Error, constraint: Option<&str>) -> bool {
    match error {
        diesel::result::Error::DatabaseError(diesel::result::DatabaseErrorKind::UniqueViolation, info) => {
            constraint.is_none_or(|name| info.constraint_name() == Some(name))
        }
        _ => false,
    }
}
