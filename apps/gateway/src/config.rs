//! Configuration from the environment, with defaults that work on a laptop
//! (docs/operations.md lists every variable).

use std::net::SocketAddr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimiterKind {
    /// Per process: exact for one gateway.
    Memory,
    /// Shared through PostgreSQL: exact across any number of gateways.
    Postgres,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub database_url: String,
    pub addr: SocketAddr,
    pub log_format: LogFormat,
    pub pool_size: usize,
    pub rate_limit_per_minute: u32,
    pub rate_limiter: LimiterKind,
    pub worker_concurrency: usize,
    pub run_migrations: bool,
    pub http_workers: usize,
    pub max_body_bytes: usize,
}

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:54329/svc";

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

fn parsed<T: std::str::FromStr>(name: &str, default: T) -> Result<T, String> {
    match var(name) {
        None => Ok(default),
        Some(raw) => raw.parse().map_err(|_| format!("{name}={raw:?} is not valid")),
    }
}

impl Config {
    pub fn from_env() -> Result<Self, String> {
        let log_format = match var("SVC_LOG_FORMAT").as_deref() {
            None | Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            Some(other) => return Err(format!("SVC_LOG_FORMAT={other:?}: use text or json")),
        };
        let rate_limiter = match var("SVC_RATE_LIMITER").as_deref() {
            None | Some("memory") => LimiterKind::Memory,
            Some("postgres") => LimiterKind::Postgres,
            Some(other) => return Err(format!("SVC_RATE_LIMITER={other:?}: use memory or postgres")),
        };
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        Ok(Self {
            database_url: var("DATABASE_URL").unwrap_or_else(|| DEFAULT_DATABASE_URL.to_owned()),
            addr: parsed("SVC_ADDR", SocketAddr::from(([127, 0, 0, 1], 8080)))?,
            log_format,
            pool_size: parsed("SVC_DB_POOL_SIZE", 16)?,
            rate_limit_per_minute: parsed("SVC_RATE_LIMIT_PER_MINUTE", 120)?,
            rate_limiter,
            worker_concurrency: parsed("SVC_WORKER_CONCURRENCY", 8)?,
            run_migrations: parsed("SVC_RUN_MIGRATIONS", true)?,
            http_workers: parsed("SVC_HTTP_WORKERS", cpus)?,
            max_body_bytes: parsed("SVC_MAX_BODY_BYTES", 4 * 1024 * 1024)?,
        })
    }
}
