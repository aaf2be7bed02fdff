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
    /// `SVC_ROW_SECURITY=off` only measures what row-level security costs (the bench).
    pub row_security: store::RowSecurity,
    pub rate_limit_per_minute: u32,
    pub rate_limiter: LimiterKind,
    /// How long a gateway keeps a key it has looked up (`SVC_AUTH_CACHE_SECONDS`; 0: none).
    pub auth_cache_ttl: std::time::Duration,
    pub worker_concurrency: usize,
    pub run_migrations: bool,
    pub http_workers: usize,
    pub http: HttpLimits,
    /// How long a worker's claim on a job holds without a heartbeat renewing it (three beats
    /// per lease); also how long a process's heartbeat may be missing before it counts as dead
    /// (its `processing` messages fail then, as "outcome unknown").
    pub job_lease: std::time::Duration,
    /// The origin providers reach the callback routes at (printed by `admin channel add`).
    pub public_url: String,
    /// Timeout of one provider call.
    pub provider_timeout: std::time::Duration,
    pub sandbox: providers::SandboxConfig,
    /// How long the sandbox chat provider keeps a template in review.
    pub sandbox_template_review: std::time::Duration,
    /// How long the sandbox chat provider takes to confirm a group's creation.
    pub sandbox_group_delay: std::time::Duration,
    pub messaging: messaging::MessagingConfig,
    pub webhooks: webhooks::WebhooksConfig,
    /// The mobile-money provider and how long payments wait.
    pub payments: PaymentsSetup,
    /// The language model agent runs reason with, and what runs cost and wait.
    pub agents: AgentsSetup,
    /// The keys that seal secrets at rest (`SVC_SECRETS_KEY`, `SVC_SECRETS_OLD_KEYS`).
    pub secrets: store::secrets::SecretsConfig,
}

/// What one HTTP request may take: its body's size, and its time once its head arrived (the
/// head itself has `client_header_timeout`, enforced by the server before any handler).
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    pub max_body_bytes: usize,
    /// The request line and headers must arrive within this, else 408 and the connection closes.
    pub client_header_timeout: std::time::Duration,
    /// Reading the body and answering must end within this: a body still arriving is a 408, a
    /// handler still working a 503 to try again; either way the connection closes.
    pub request_timeout: std::time::Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 4 * 1024 * 1024,
            client_header_timeout: std::time::Duration::from_secs(5),
            request_timeout: std::time::Duration::from_secs(30),
        }
    }
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
        let row_security = match var("SVC_ROW_SECURITY").as_deref() {
            None | Some("on") => store::RowSecurity::On,
            Some("off") => store::RowSecurity::Off,
            Some(other) => return Err(format!("SVC_ROW_SECURITY={other:?}: use on or off")),
        };
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        let addr: SocketAddr = parsed("SVC_ADDR", SocketAddr::from(([127, 0, 0, 1], 8080)))?;
        let job_lease = std::time::Duration::from_secs(parsed("SVC_JOB_LEASE_SECONDS", 30)?.max(1));
        Ok(Self {
            database_url: var("DATABASE_URL").unwrap_or_else(|| DEFAULT_DATABASE_URL.to_owned()),
            addr,
            log_format,
            pool_size: parsed("SVC_DB_POOL_SIZE", 16)?,
            row_security,
            rate_limit_per_minute: parsed("SVC_RATE_LIMIT_PER_MINUTE", 120)?,
            rate_limiter,
            auth_cache_ttl: seconds("SVC_AUTH_CACHE_SECONDS", 60)?,
            worker_concurrency: parsed("SVC_WORKER_CONCURRENCY", 8)?,
            run_migrations: parsed("SVC_RUN_MIGRATIONS", true)?,
            http_workers: parsed("SVC_HTTP_WORKERS", cpus)?,
            http: http_limits()?,
            job_lease,
            public_url: var("SVC_PUBLIC_URL").unwrap_or_else(|| format!("http://{addr}")),
            provider_timeout: millis("SVC_PROVIDER_TIMEOUT_MS", 10_000)?,
            sandbox: providers::SandboxConfig {
                delivery_delay: millis("SVC_SANDBOX_DELIVERY_DELAY_MS", 1_000)?,
                keep: parsed("SVC_SANDBOX_KEEP", providers::sandbox::DEFAULT_KEEP)?,
            },
            sandbox_template_review: millis("SVC_SANDBOX_TEMPLATE_REVIEW_MS", 2_000)?,
            sandbox_group_delay: millis("SVC_SANDBOX_GROUP_DELAY_MS", 1_000)?,
            messaging: messaging_config(job_lease)?,
            webhooks: webhooks_config(job_lease)?,
            payments: payments_setup()?,
            agents: agents_setup()?,
            secrets: store::secrets::SecretsConfig::from_vars(var)?,
        })
    }
}

/// Which mobile-money provider asks payers for money: the sandbox (the default) or M-Pesa.
#[derive(Debug, Clone)]
pub enum PaymentProvider {
    /// Settles by the payer's number after `delay` (docs/operations.md).
    Sandbox {
        delay: std::time::Duration,
    },
    Mpesa(providers::MpesaConfig),
}

#[derive(Debug, Clone)]
pub struct PaymentsSetup {
    pub provider: PaymentProvider,
    pub config: payments_read::PaymentsConfig,
}

fn payments_setup() -> Result<PaymentsSetup, String> {
    let defaults = payments_read::PaymentsConfig::default();
    let config = payments_read::PaymentsConfig {
        push_ttl: seconds("SVC_PAYMENT_PUSH_TTL_SECONDS", defaults.push_ttl.as_secs())?,
        checkout_ttl: seconds("SVC_PAYMENT_CHECKOUT_TTL_SECONDS", defaults.checkout_ttl.as_secs())?,
        check_every: seconds("SVC_PAYMENT_CHECK_SECONDS", defaults.check_every.as_secs())?
            .max(std::time::Duration::from_secs(1)),
    };
    let provider = match var("SVC_PAYMENTS_PROVIDER").as_deref() {
        None | Some("sandbox") => PaymentProvider::Sandbox { delay: millis("SVC_SANDBOX_PAYMENT_DELAY_MS", 1_000)? },
        Some("mpesa") => {
            let required = |name: &str| var(name).ok_or_else(|| format!("SVC_PAYMENTS_PROVIDER=mpesa needs {name}"));
            PaymentProvider::Mpesa(providers::MpesaConfig {
                base_url: var("SVC_MPESA_BASE_URL")
                    .unwrap_or_else(|| providers::MpesaConfig::DEFAULT_BASE_URL.to_owned()),
                consumer_key: required("SVC_MPESA_CONSUMER_KEY")?,
                consumer_secret: required("SVC_MPESA_CONSUMER_SECRET")?,
                shortcode: required("SVC_MPESA_SHORTCODE")?,
                passkey: required("SVC_MPESA_PASSKEY")?,
                initiator_name: var("SVC_MPESA_INITIATOR_NAME").unwrap_or_default(),
                security_credential: var("SVC_MPESA_SECURITY_CREDENTIAL").unwrap_or_default(),
                result_url: var("SVC_MPESA_RESULT_URL").unwrap_or_default(),
                timeout: millis("SVC_PROVIDER_TIMEOUT_MS", providers::MpesaConfig::DEFAULT_TIMEOUT.as_millis() as u64)?,
            })
        }
        Some(other) => return Err(format!("SVC_PAYMENTS_PROVIDER={other:?}: use sandbox or mpesa")),
    };
    Ok(PaymentsSetup { provider, config })
}

/// Which language model agent runs ask: the scripted sandbox (the default) or an
/// OpenAI-compatible chat-completions API.
#[derive(Debug, Clone)]
pub enum AgentExecutor {
    Sandbox,
    OpenAi(providers::OpenAiConfig),
}

#[derive(Debug, Clone)]
pub struct AgentsSetup {
    pub executor: AgentExecutor,
    pub config: agents::AgentsConfig,
}

fn agents_setup() -> Result<AgentsSetup, String> {
    let defaults = agents::AgentsConfig::default();
    let rates = agents::RateCard {
        input_per_million_minor: parsed(
            "SVC_AGENT_PRICE_INPUT_PER_MTOK_MINOR",
            defaults.rates.input_per_million_minor,
        )?,
        output_per_million_minor: parsed(
            "SVC_AGENT_PRICE_OUTPUT_PER_MTOK_MINOR",
            defaults.rates.output_per_million_minor,
        )?,
        tool_call_minor: parsed("SVC_AGENT_PRICE_TOOL_CALL_MINOR", defaults.rates.tool_call_minor)?,
    };
    let config = agents::AgentsConfig {
        rates,
        minimum_balance_minor: parsed("SVC_AGENT_MIN_BALANCE_MINOR", defaults.minimum_balance_minor)?,
        sync_wait: millis("SVC_AGENT_SYNC_WAIT_MS", defaults.sync_wait.as_millis() as u64)?,
        approval_ttl: time::Duration::seconds(parsed(
            "SVC_AGENT_APPROVAL_TTL_SECONDS",
            defaults.approval_ttl.whole_seconds(),
        )?),
    };
    let executor = match var("SVC_AGENT_EXECUTOR").as_deref() {
        None | Some("sandbox") => AgentExecutor::Sandbox,
        Some("openai") => AgentExecutor::OpenAi(providers::OpenAiConfig {
            base_url: var("SVC_AGENT_BASE_URL").unwrap_or_else(|| providers::OpenAiConfig::DEFAULT_BASE_URL.to_owned()),
            api_key: var("SVC_AGENT_API_KEY").ok_or("SVC_AGENT_EXECUTOR=openai needs SVC_AGENT_API_KEY")?,
            model: var("SVC_AGENT_MODEL").unwrap_or_else(|| providers::OpenAiConfig::DEFAULT_MODEL.to_owned()),
            timeout: millis("SVC_AGENT_TIMEOUT_MS", providers::OpenAiConfig::DEFAULT_TIMEOUT.as_millis() as u64)?,
        }),
        Some(other) => return Err(format!("SVC_AGENT_EXECUTOR={other:?}: use sandbox or openai")),
    };
    Ok(AgentsSetup { executor, config })
}

fn http_limits() -> Result<HttpLimits, String> {
    let defaults = HttpLimits::default();
    Ok(HttpLimits {
        max_body_bytes: parsed("SVC_MAX_BODY_BYTES", defaults.max_body_bytes)?,
        client_header_timeout: millis(
            "SVC_CLIENT_HEADER_TIMEOUT_MS",
            defaults.client_header_timeout.as_millis() as u64,
        )?,
        request_timeout: millis("SVC_REQUEST_TIMEOUT_MS", defaults.request_timeout.as_millis() as u64)?,
    })
}

fn millis(name: &str, default: u64) -> Result<std::time::Duration, String> {
    parsed(name, default).map(std::time::Duration::from_millis)
}

fn seconds(name: &str, default: u64) -> Result<std::time::Duration, String> {
    parsed(name, default).map(std::time::Duration::from_secs)
}

/// Comma-separated words, upper-cased.
fn words(name: &str, default: &[String]) -> Vec<String> {
    match var(name) {
        None => default.to_vec(),
        Some(raw) => raw.split(',').map(|w| w.trim().to_uppercase()).filter(|w| !w.is_empty()).collect(),
    }
}

fn messaging_config(job_lease: std::time::Duration) -> Result<messaging::MessagingConfig, String> {
    let defaults = messaging::MessagingConfig::default();
    Ok(messaging::MessagingConfig {
        default_price_minor: parsed("SVC_SMS_DEFAULT_PRICE_MINOR", defaults.default_price_minor)?,
        inline_max: parsed("SVC_SMS_INLINE_MAX", defaults.inline_max)?,
        inline_timeout: millis("SVC_SMS_INLINE_TIMEOUT_MS", 3_000)?,
        receipt_wait: seconds("SVC_SMS_RECEIPT_WAIT_SECONDS", defaults.receipt_wait.as_secs())?,
        campaign_batch: parsed("SVC_CAMPAIGN_BATCH_SIZE", defaults.campaign_batch)?.max(1),
        send_chunk: parsed("SVC_SMS_SEND_CHUNK", defaults.send_chunk)?.max(1),
        send_concurrency: parsed("SVC_SMS_SEND_CONCURRENCY", defaults.send_concurrency)?.max(1),
        paused_recheck: seconds("SVC_CAMPAIGN_RECHECK_SECONDS", defaults.paused_recheck.as_secs())?,
        // Whoever holds it, a message this long in `processing` is in doubt (a sender alive but
        // unable to record the answer); a dead sender's are in doubt after one lease.
        stale_after: defaults.stale_after.max(job_lease),
        process: None,
        dead_after: job_lease,
        opt_out_keywords: words("SVC_SMS_OPT_OUT_KEYWORDS", &defaults.opt_out_keywords),
        opt_in_keywords: words("SVC_SMS_OPT_IN_KEYWORDS", &defaults.opt_in_keywords),
        chat_billing: match var("SVC_CHAT_BILLING") {
            None => defaults.chat_billing,
            Some(raw) => messaging::chat::send::ChatBilling::parse(&raw)
                .ok_or_else(|| format!("SVC_CHAT_BILLING={raw:?}: use message or conversation"))?,
        },
        chat_price_minor: parsed("SVC_CHAT_PRICE_MINOR", defaults.chat_price_minor)?,
        voice_price_minor: parsed("SVC_VOICE_PRICE_MINOR", defaults.voice_price_minor)?,
    })
}

fn webhooks_config(job_lease: std::time::Duration) -> Result<webhooks::WebhooksConfig, String> {
    let defaults = webhooks::WebhooksConfig::default();
    Ok(webhooks::WebhooksConfig {
        policy: webhooks::guard::Policy::from_env(),
        timeout: seconds("SVC_WEBHOOKS_TIMEOUT_SECONDS", defaults.timeout.as_secs())?,
        concurrency: parsed("SVC_WEBHOOKS_CONCURRENCY", defaults.concurrency)?.max(1),
        per_receiver: parsed("SVC_WEBHOOKS_PER_RECEIVER", defaults.per_receiver)?.max(1),
        // claims of a dead process come back within one lease, as its jobs do
        lease: time::Duration::try_from(job_lease).unwrap_or(defaults.lease),
        ..defaults
    })
}
