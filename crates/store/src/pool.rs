//! The connection pool, and the row-level security every connection of it runs under
//! (docs/operations.md, "Row-level security").
//!
//! Every connection runs as [`SERVICE_ROLE`] and is checked out for a scope: one tenant
//! ([`connect`]), every tenant ([`connect_system`]), or none ([`connect_global`], the global
//! tables only). A tenant table shows a connection the rows of its scope and no others, so a
//! query that forgets its tenant filter finds nothing of another tenant's.

use std::ops::{Deref, DerefMut};

use deadpool::managed::{Metrics, PoolError, RecycleResult};
use diesel_async::pooled_connection::{AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod};
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
use futures_util::FutureExt;

/// One connection; domain services take `&mut Conn` so callers choose the transaction.
pub type Conn = AsyncPgConnection;
/// A connection out of the pool; it derefs to [`Conn`].
pub type PooledConn = deadpool::managed::Object<Manager>;

/// The role every pooled connection runs as (`SET ROLE` when it opens), whatever role
/// `DATABASE_URL` names: no superuser, no `BYPASSRLS`, so the tables' row-level security
/// applies. Made by the migrations (`2026-11-27-000042_row_security`).
pub const SERVICE_ROLE: &str = "svc_app";

/// How long a caller waits for a pooled connection, for a new one to open, and for a returned
/// one to be checked: past these the database counts as unavailable (a 503), never a hang.
const WAIT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
const CREATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
const RECYCLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Whose rows a connection's session settings let it see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    Tenant(kernel::TenantId),
    System,
}

impl Scope {
    /// Both settings every time, so nothing of another scope remains. Session settings rather
    /// than `SET LOCAL`: they hold for every transaction (and single statement) of a checkout.
    fn sql(self) -> String {
        let (tenant, scope) = match self {
            Self::Tenant(tenant) => (tenant.0.to_string(), "tenant"),
            Self::System => (String::new(), "system"),
        };
        format!("SELECT set_config('svc.tenant_id', '{tenant}', false), set_config('svc.scope', '{scope}', false)")
    }
}

/// A pooled connection and the scope its session holds, so that a checkout for the scope the
/// connection already has costs no round trip.
pub struct Scoped {
    conn: AsyncPgConnection,
    scope: Option<Scope>,
}

impl Deref for Scoped {
    type Target = AsyncPgConnection;

    fn deref(&self) -> &AsyncPgConnection {
        &self.conn
    }
}

impl DerefMut for Scoped {
    fn deref_mut(&mut self) -> &mut AsyncPgConnection {
        &mut self.conn
    }
}

/// diesel-async's manager, keeping each connection's scope beside it.
pub struct Manager(AsyncDieselConnectionManager<AsyncPgConnection>);

impl deadpool::managed::Manager for Manager {
    type Type = Scoped;
    type Error = diesel_async::pooled_connection::PoolError;

    async fn create(&self) -> Result<Scoped, Self::Error> {
        Ok(Scoped { conn: self.0.create().await?, scope: None })
    }

    async fn recycle(&self, obj: &mut Scoped, metrics: &Metrics) -> RecycleResult<Self::Error> {
        // a connection dropped inside a transaction is broken, and not handed out again
        self.0.recycle(&mut obj.conn, metrics).await
    }
}

type Inner = deadpool::managed::Pool<Manager>;

/// The service's connections to PostgreSQL: the scoped ones, and a few for the global tables
/// that never take a scope (the key and rate-limit lookups of every request, the job queue),
/// so that a request does not switch a connection between scopes twice.
#[derive(Clone)]
pub struct Pool {
    scoped: Inner,
    global: Inner,
    database_url: std::sync::Arc<str>,
    row_security: RowSecurity,
}

/// Whether connections take on [`SERVICE_ROLE`] and a scope. `Off` only measures what row
/// security costs (`SVC_ROW_SECURITY=off cargo xtask bench`); the service runs `On`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowSecurity {
    On,
    Off,
}

/// Builds a pool of at most `max_size` scoped connections and a quarter as many (at least two)
/// for the global tables, running as [`SERVICE_ROLE`]; connections open lazily.
pub fn pool(database_url: &str, max_size: usize) -> Result<Pool, kernel::Error> {
    pool_with(database_url, max_size, RowSecurity::On)
}

/// [`pool`], with row security chosen.
///
/// Connections are handed out without a `SELECT 1` check: that check doubled the round trips
/// of a short request. A connection the server closed (a restart) is seen as closed and dropped
/// when it comes back to the pool; one that breaks under a query fails that query with a 503.
pub fn pool_with(database_url: &str, max_size: usize, row_security: RowSecurity) -> Result<Pool, kernel::Error> {
    let build = |size: usize| {
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
        Inner::builder(Manager(manager))
            .max_size(size)
            .runtime(deadpool::Runtime::Tokio1)
            .wait_timeout(Some(WAIT_TIMEOUT))
            .create_timeout(Some(CREATE_TIMEOUT))
            .recycle_timeout(Some(RECYCLE_TIMEOUT))
            .build()
            .map_err(|e| kernel::Error::internal(format!("pool: {e}")))
    };
    Ok(Pool {
        scoped: build(max_size)?,
        global: build(global_size(max_size))?,
        database_url: database_url.into(),
        row_security,
    })
}

/// The connections for the global tables beside `max_size` scoped ones.
pub fn global_size(max_size: usize) -> usize {
    max_size.div_ceil(4).max(2)
}

impl Pool {
    /// Connections open and idle (both parts), for the metrics.
    pub fn status(&self) -> deadpool::Status {
        let (scoped, global) = (self.scoped.status(), self.global.status());
        deadpool::Status {
            max_size: scoped.max_size + global.max_size,
            size: scoped.size + global.size,
            available: scoped.available + global.available,
            waiting: scoped.waiting + global.waiting,
        }
    }

    /// A connection of its own, outside the pool, as the role `DATABASE_URL` names and in the
    /// system scope: for a schema change the service makes at run time (a data table's
    /// index), which only the tables' owner may make.
    pub async fn owner_connection(&self) -> Result<Conn, kernel::Error> {
        let mut conn = AsyncPgConnection::establish(&self.database_url)
            .await
            .map_err(|e| kernel::Error::unavailable(format!("connect: {e}")))?;
        conn.batch_execute(&Scope::System.sql()).await?;
        Ok(conn)
    }

    async fn checkout(&self, scope: Option<Scope>) -> Result<PooledConn, kernel::Error> {
        let part = if scope.is_some() { &self.scoped } else { &self.global };
        let mut conn = part.get().await.map_err(|e| match e {
            PoolError::Timeout(_) | PoolError::Backend(_) => kernel::Error::unavailable(format!("pool: {e}")),
            other => kernel::Error::internal(format!("pool: {other}")),
        })?;
        if self.row_security == RowSecurity::On && conn.scope != scope {
            // forgotten first: a failed switch leaves the connection to be set again
            conn.scope = None;
            if let Some(wanted) = scope {
                conn.conn.batch_execute(&wanted.sql()).await?;
            }
            conn.scope = scope;
        }
        Ok(conn)
    }
}

/// A connection that sees `tenant`'s rows and no other's. A database that cannot be reached or
/// does not hand out a connection in time is unavailable (a 503), not a bug.
pub async fn connect(pool: &Pool, tenant: kernel::TenantId) -> Result<PooledConn, kernel::Error> {
    pool.checkout(Some(Scope::Tenant(tenant))).await
}

/// A connection that sees every tenant's rows: for the work that is not one tenant's (workers
/// claiming webhook deliveries, a callback or a signed link finding out whose it is, the
/// operator's commands). Prefer [`connect`] wherever the tenant is known.
pub async fn connect_system(pool: &Pool) -> Result<PooledConn, kernel::Error> {
    pool.checkout(Some(Scope::System)).await
}

/// A connection for the global tables only (docs/operations.md, "Tenancy and distribution":
/// keys, tenants, the job queue, channels, rate limits, service keys): it has no scope, so a
/// tenant table shows it nothing.
pub async fn connect_global(pool: &Pool) -> Result<PooledConn, kernel::Error> {
    pool.checkout(None).await
}
