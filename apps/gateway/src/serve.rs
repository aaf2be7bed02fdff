//! `gateway serve` (HTTP and workers) and `gateway worker` (workers only).

use actix_web::{HttpServer, web};
use kernel::Clock;
use store::jobs::{Worker, WorkerConfig};
use tokio::sync::watch;

use crate::config::{Config, LimiterKind, LogFormat};
use crate::http::rate_limit::{MemoryLimiter, PostgresLimiter, RateLimiter};
use crate::{AppState, Services, app};

/// `RUST_LOG`-style filtering (default `info`), as text or JSON lines.
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // tokio-postgres logs every statement's parameters at debug: secrets on their way to be
    // sealed, a fresh key, message bodies. Only a RUST_LOG that names it turns that on.
    let named = std::env::var("RUST_LOG").is_ok_and(|v| v.contains("tokio_postgres"));
    let filter = match "tokio_postgres=info".parse() {
        Ok(quiet) if !named => filter.add_directive(quiet),
        _ => filter,
    };
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

async fn prepare(config: &Config) -> Result<store::Pool, String> {
    if config.run_migrations {
        let ran = store::migrate::run(&config.database_url).await.map_err(|e| e.message.clone())?;
        if ran > 0 {
            tracing::info!(ran, "migrations applied");
        }
    }
    store::pool_with(&config.database_url, config.pool_size, config.row_security).map_err(|e| e.message.clone())
}

/// This process's identity in `workers`: its job worker runs under it and messaging marks the
/// messages it claims with it, so both are taken back within a lease once it dies.
fn with_process(config: Config) -> (Config, uuid::Uuid) {
    let process = uuid::Uuid::new_v4();
    let mut config = config;
    config.messaging.process = Some(process);
    (config, process)
}

/// The job worker and the webhook delivery loop, stopped together. The worker's heartbeat row
/// is written before this returns, so nothing this process marks as its own looks orphaned.
async fn start_worker(
    config: &Config,
    process: uuid::Uuid,
    pool: store::Pool,
    clock: Clock,
    services: &Services,
) -> Result<(watch::Sender<bool>, tokio::task::JoinHandle<()>), String> {
    let lease = time::Duration::try_from(config.job_lease).unwrap_or(time::Duration::seconds(30));
    let worker = Worker::with_id(
        process,
        pool,
        clock,
        services.job_registry(),
        WorkerConfig { concurrency: config.worker_concurrency, lease, ..WorkerConfig::default() },
    );
    worker.register().await.map_err(|e| format!("writing the worker's heartbeat: {}", e.message))?;
    let deliverer = webhooks::Deliverer::new(services.webhooks.clone());
    let (stop, stopped) = watch::channel(false);
    let url = config.database_url.clone();
    let handle = tokio::spawn(async move {
        tokio::join!(worker.run(Some(url.clone()), stopped.clone()), deliverer.run(Some(url), stopped));
    });
    Ok((stop, handle))
}

/// Serves HTTP and runs the workers until SIGINT/SIGTERM: in-flight requests finish, then the
/// workers get their grace period and release what they still hold.
pub async fn serve(config: Config) -> Result<(), String> {
    let (config, process) = with_process(config);
    let pool = prepare(&config).await?;
    let clock = Clock::system();
    let limit = config.rate_limit_per_minute;
    let limiter = match config.rate_limiter {
        LimiterKind::Memory => RateLimiter::Memory(MemoryLimiter::new(limit)),
        LimiterKind::Postgres => RateLimiter::Postgres(PostgresLimiter::new(limit, pool.clone())),
    };
    let services = Services::new(pool.clone(), clock.clone(), &config).await.map_err(|e| e.message.clone())?;
    let (stop, worker) = start_worker(&config, process, pool.clone(), clock.clone(), &services).await?;
    let keys = std::sync::Arc::new(accounts::KeyCache::new(config.auth_cache_ttl));
    let listener = (!config.auth_cache_ttl.is_zero()).then(|| {
        let keys = keys.clone();
        store::listen::listen(config.database_url.clone(), accounts::key_cache::CHANNEL, move |heard| keys.hear(heard))
    });
    let state = AppState::new(pool, clock, limiter, services).map_err(|e| e.message.clone())?.with_key_cache(keys);
    let state = web::Data::new(state);
    let limits = config.http;
    let server = HttpServer::new(move || app(state.clone(), limits))
        .workers(config.http_workers)
        // a head that trickles is cut off with 408 (a body that does: `observe`)
        .client_request_timeout(limits.client_header_timeout)
        .bind(config.addr)
        .map_err(|e| format!("cannot listen on {}: {e}", config.addr))?
        .run();
    tracing::info!(addr = %config.addr, "serving");
    let served = server.await.map_err(|e| e.to_string());
    if let Some(listener) = listener {
        listener.abort();
    }
    let _ = stop.send(true);
    let _ = worker.await;
    served
}

/// Runs only the workers, until SIGINT/SIGTERM.
pub async fn work(config: Config) -> Result<(), String> {
    let (config, process) = with_process(config);
    let pool = prepare(&config).await?;
    let clock = Clock::system();
    let services = Services::new(pool.clone(), clock.clone(), &config).await.map_err(|e| e.message.clone())?;
    let (stop, worker) = start_worker(&config, process, pool, clock, &services).await?;
    shutdown_signal().await;
    tracing::info!("stopping workers");
    let _ = stop.send(true);
    let _ = worker.await;
    Ok(())
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(term) => term,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}
