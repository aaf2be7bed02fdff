//! A database per test (feature `testing`): a migrated template is made once per schema and
//! cluster, and every test gets a fresh copy of it, dropped when the test ends. Tests run in
//! parallel and never share rows.
//!
//! `DATABASE_URL` names a maintenance database of the cluster (`cargo xtask test` sets it).

use std::sync::OnceLock;

use crate::Pool;

const TEMPLATE: &str = concat!("svc_template_", env!("MIGRATIONS_HASH"));

pub struct TestDb {
    name: String,
    url: String,
    admin_url: String,
}

impl TestDb {
    /// A fresh, migrated, empty database.
    pub async fn new() -> Self {
        let admin_url = std::env::var("DATABASE_URL")
            .expect("DATABASE_URL must name a PostgreSQL maintenance database; `cargo xtask test` sets it");
        ensure_template(&admin_url);
        let name = format!("test_{}", uuid::Uuid::new_v4().simple());
        admin(&admin_url, &format!("CREATE DATABASE {name} TEMPLATE {TEMPLATE}")).await;
        Self { url: with_database(&admin_url, &name), name, admin_url }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// A small pool, so many tests can run side by side.
    pub fn pool(&self) -> Pool {
        crate::pool(&self.url, 8).expect("test pool")
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // Drop runs outside any runtime we may block, so the DROP gets a thread of its own.
        let (url, sql) = (self.admin_url.clone(), format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name));
        let dropped = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(admin(&url, &sql));
        })
        .join();
        if dropped.is_err() {
            eprintln!("could not drop test database {}", self.name);
        }
    }
}

/// Makes the template once per process; an advisory lock keeps parallel test binaries from
/// building it twice.
fn ensure_template(admin_url: &str) {
    static READY: OnceLock<()> = OnceLock::new();
    READY.get_or_init(|| {
        let admin_url = admin_url.to_owned();
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(build_template(&admin_url));
        })
        .join()
        .expect("building the template database failed");
    });
}

async fn build_template(admin_url: &str) {
    let (client, connection) =
        tokio_postgres::connect(admin_url, tokio_postgres::NoTls).await.expect("connect to DATABASE_URL");
    tokio::spawn(connection);
    client.execute("SELECT pg_advisory_lock(4242)", &[]).await.expect("advisory lock");
    let exists =
        client.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&TEMPLATE]).await.expect("look up template");
    if exists.is_none() {
        let building = format!("{TEMPLATE}_building");
        client.batch_execute(&format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)")).await.expect("drop");
        client.batch_execute(&format!("CREATE DATABASE {building}")).await.expect("create template");
        crate::migrate::run(&with_database(admin_url, &building)).await.expect("migrate template");
        client
            .batch_execute(&format!("ALTER DATABASE {building} RENAME TO {TEMPLATE}"))
            .await
            .expect("rename template");
    }
    client.execute("SELECT pg_advisory_unlock(4242)", &[]).await.expect("advisory unlock");
}

async fn admin(admin_url: &str, sql: &str) {
    let (client, connection) =
        tokio_postgres::connect(admin_url, tokio_postgres::NoTls).await.expect("connect to DATABASE_URL");
    let driver = tokio::spawn(connection);
    client.batch_execute(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    drop(client);
    let _ = driver.await;
}

/// The same server URL with another database name.
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let server = match base.rfind('/') {
        Some(slash) if base[..slash].ends_with('/') => base, // no database part: "postgres://host"
        Some(slash) => &base[..slash],
        None => base,
    };
    match query {
        Some(query) => format!("{server}/{database}?{query}"),
        None => format!("{server}/{database}"),
    }
}
