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
use diesel_async::pooled_connection::deadpool as diesel_deadpool;
use diesel_async::pooled_connection::{AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod};

/// One connection; domain services take `&mut Conn` so callers choose the transaction.
pub type Conn = AsyncPgConnection;
pub type PooledConn = diesel_deadpool::Object<AsyncPgConnection>;

/// The role every pooled connection runs as (`SET ROLE` when it opens), whatever role
/// `DATABASE_URL` names: no superuser, no `BYPASSRLS`, so the tables' row-level security
/// applies. Made by the migrations (`2026-11-27-000042_row_security`).
pub const SERVICE_ROLE: &str = "svc_app";

/// How long a caller waits for a pooled connection, for a new one to open, and for a returned
/// one to be checked: past these the database counts as unavailable (a 503), never a hang.
const WAIT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
const CREATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
const RECYCLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

const SYSTEM_SCOPE: &str = "SELECT set_config('svc.tenant_id', '', false), set_config('svc.scope', 'system', false)";

/// The service's connections to PostgreSQL. Each one runs as [`SERVICE_ROLE`] and sees the
/// rows of the scope it was taken for ([`connect`] for a tenant, [`connect_system`] for work
/// across tenants): a query that forgets its tenant filter finds nothing of another tenant.
#[derive(Clone)]
pub struct Pool {
    inner: diesel_deadpool::Pool<AsyncPgConnection>,
    database_url: std::sync::Arc<str>,
    row_security: RowSecurity,
}

/// Whether connections take on [`SERVICE_ROLE`] and a scope. `Off` only measures what row
/// security costs (`cargo xtask bench` runs each workload both ways); the service runs `On`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowSecurity {
    On,
    Off,
}

/// Builds a pool of at most `max_size` connections, running as [`SERVICE_ROLE`]; connections
/// open lazily.
pub fn pool(database_url: &str, max_size: usize) -> Result<Pool, kernel::Error> {
    pool_with(database_url, max_size, RowSecurity::On)
}

/// [`pool`], with row security chosen.
///
/// Connections are handed out without a `SELECT 1` check: that check doubled the round trips
/// of a short request. A connection the server closed (a restart) is seen as closed and dropped
/// when it comes back to the pool; one that breaks under a query fails that query with a 503.
pub fn pool_with(database_url: &str, max_size: usize, row_security: RowSecurity) -> Result<Pool, kernel::Error> {
    use diesel_async::{AsyncConnection, SimpleAsyncConnection};
    use futures_util::FutureExt;

    let mut config = ManagerConfig::default();
    config.recycling_method = RecyclingMethod::Fast;
    if row_security == RowSecurity::On {
        config.custom_setup = Box::new(|url| {
            let url = url.to_owned();
            async move {
                let mut conn = AsyncPgConnection::establish(&url).await?;
                conn.batch_execute(&format!("SET ROLE {SERVICE_ROLE}"))
                    .await
                    .map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
                Ok(conn)
            }
            .boxed()
        });
    }
    let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(database_url, config);
    let inner = diesel_deadpool::Pool::builder(manager)
        .max_size(max_size)
        .runtime(deadpool::Runtime::Tokio1)
        .wait_timeout(Some(WAIT_TIMEOUT))
        .create_timeout(Some(CREATE_TIMEOUT))
        .recycle_timeout(Some(RECYCLE_TIMEOUT))
        .build()
        .map_err(|e| kernel::Error::internal(format!("pool: {e}")))?;
    Ok(Pool { inner, database_url: database_url.into(), row_security })
}

impl Pool {
    /// Connections open and idle, for the metrics.
    pub fn status(&self) -> deadpool::Status {
        self.inner.status()
    }

    /// A connection of its own, outside the pool, as the role `DATABASE_URL` names and in the
    /// system scope: for a schema change the service makes at run time (a data table's
    /// index), which only the tables' owner may make.
    pub async fn owner_connection(&self) -> Result<Conn, kernel::Error> {
        use diesel_async::{AsyncConnection, SimpleAsyncConnection};
        let mut conn = AsyncPgConnection::establish(&self.database_url)
            .await
            .map_err(|e| kernel::Error::unavailable(format!("connect: {e}")))?;
        conn.batch_execute(SYSTEM_SCOPE).await?;
        Ok(conn)
    }

    async fn checkout(&self, tenant: Option<kernel::TenantId>) -> Result<PooledConn, kernel::Error> {
        use deadpool::managed::PoolError;
        use diesel_async::SimpleAsyncConnection;

        let mut conn = self.inner.get().await.map_err(|e| match e {
            PoolError::Timeout(_) | PoolError::Backend(_) => kernel::Error::unavailable(format!("pool: {e}")),
            other => kernel::Error::internal(format!("pool: {other}")),
        })?;
        if self.row_security == RowSecurity::On {
            // Both settings every time, so nothing of the connection's last scope remains.
            // Session settings rather than `SET LOCAL`: they hold for every transaction (and
            // every single statement) the caller runs on this checkout.
            let scope = match tenant {
                Some(tenant) => format!(
                    "SELECT set_config('svc.tenant_id', '{}', false), set_config('svc.scope', 'tenant', false)",
                    tenant.0
                ),
                None => SYSTEM_SCOPE.to_owned(),
            };
            conn.batch_execute(&scope).await?;
        }
        Ok(conn)
    }
}

/// A connection that sees `tenant`'s rows and no other's. A database that cannot be reached or
/// does not hand out a connection in time is unavailable (a 503), not a bug.
pub async fn connect(pool: &Pool, tenant: kernel::TenantId) -> Result<PooledConn, kernel::Error> {
    pool.checkout(Some(tenant)).await
}

/// A connection that sees every tenant's rows: for the work that is not one tenant's (workers
/// claiming jobs and deliveries, callbacks and signed links resolving whose they are, the
/// global tables, the operator's commands). Prefer [`connect`] wherever the tenant is known.
pub async fn connect_system(pool: &Pool) -> Result<PooledConn, kernel::Error> {
    pool.checkout(None).await
}

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
