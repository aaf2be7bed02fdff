//! Embedded migrations, run by `gateway migrate`, by `serve` at start, and by the test harness.

use diesel_async::{AsyncConnection, AsyncMigrationHarness, AsyncPgConnection};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations");

/// Runs every pending migration and returns how many ran.
///
/// `AsyncMigrationHarness` blocks in place, which panics on a current-thread runtime, so the
/// work runs on a thread of its own with a small multi-thread runtime.
pub async fn run(database_url: &str) -> Result<usize, kernel::Error> {
    let url = database_url.to_owned();
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let result = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| kernel::Error::internal(format!("migrations runtime: {e}")))
            .and_then(|runtime| runtime.block_on(run_here(&url)));
        let _ = tx.send(result);
    });
    rx.await.map_err(|_| kernel::Error::internal("migrations thread died"))?
}

async fn run_here(url: &str) -> Result<usize, kernel::Error> {
    let conn = AsyncPgConnection::establish(url)
        .await
        .map_err(|e| kernel::Error::internal(format!("migrations: connect: {e}")))?;
    let mut harness = AsyncMigrationHarness::new(conn);
    let ran =
        harness.run_pending_migrations(MIGRATIONS).map_err(|e| kernel::Error::internal(format!("migrations: {e}")))?;
    Ok(ran.len())
}
