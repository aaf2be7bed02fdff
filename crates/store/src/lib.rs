//! PostgreSQL for every domain: the diesel-async pool, embedded migrations, the job queue,
//! the event outbox, idempotency records, the sealing of secrets at rest and (feature
//! `testing`) a database per test.

pub mod idempotency;
pub mod jobs;
pub mod migrate;
pub mod outbox;
pub mod secrets;
#[cfg(feature = "testing")]
pub mod testing;
pub mod workers;

use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::deadpool;
use diesel_async::pooled_connection::{AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod};

/// One connection; domain services take `&mut Conn` so callers choose the transaction.
pub type Conn = AsyncPgConnection;
pub type Pool = deadpool::Pool<AsyncPgConnection>;
pub type PooledConn = deadpool::Object<AsyncPgConnection>;

/// Builds a pool of at most `max_size` connections; connections open lazily.
///
/// Connections are handed out without a `SELECT 1` check: that check doubled the round trips
/// of a short request, and a connection that did break fails its one query with an internal
/// error and is dropped from the pool.
pub fn pool(database_url: &str, max_size: usize) -> Result<Pool, kernel::Error> {
    let mut config = ManagerConfig::default();
    config.recycling_method = RecyclingMethod::Fast;
    let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(database_url, config);
    Pool::builder(manager).max_size(max_size).build().map_err(|e| kernel::Error::internal(format!("pool: {e}")))
}

/// Takes a connection from the pool; failing to get one is an internal error.
pub async fn connect(pool: &Pool) -> Result<PooledConn, kernel::Error> {
    pool.get().await.map_err(|e| kernel::Error::internal(format!("pool: {e}")))
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
