//! The gateway: the one binary's library. It composes the domain services into the HTTP
//! route trees, runs the background workers, and offers the admin CLI. Handlers stay thin:
//! authenticate, parse, call a service, wrap the answer in the route family's envelope.

pub mod cli;
pub mod config;
pub mod docs;
pub mod engine;
pub mod hooks;
pub mod http;
pub mod mcp;
pub mod oauth;
pub mod ops;
pub mod pay;
pub mod serve;
pub mod shop;
pub mod v3;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::{App, web};
use kernel::Clock;

use http::metrics::Metrics;
use http::rate_limit::RateLimiter;

/// The keyring of `config`: with no key configured, the key this database keeps.
pub async fn keyring(
    pool: &store::Pool,
    config: &store::secrets::SecretsConfig,
) -> Result<store::secrets::Keyring, kernel::Error> {
    let keyring = store::secrets::Keyring::load(&mut *store::connect_global(pool).await?, config).await?;
    if config.current.is_none() {
        tracing::info!(
            key_id = keyring.current_id(),
            "secrets at rest are sealed with a key kept in the database; set {} to keep it elsewhere",
            store::secrets::SecretsConfig::KEY_ENV
        );
    }
    Ok(keyring)
}

/// Every domain service, built in one place from the pool, the clock and the configuration:
/// `serve`, `worker`, the admin CLI and the tests all compose the service through
/// [`Services::new`], so none of them can wire a service differently.
#[derive(Clone)]
pub struct Services {
    pub contacts: contacts::ContactService,
    pub messaging: messaging::MessagingService,
    pub webhooks: webhooks::WebhookService,
    pub leads: leads::LeadService,
    pub commerce: commerce::CommerceService,
    pub data: data_tables::DataService,
    pub payments: payments_read::PaymentService,
    pub automations: automations::AutomationService,
    pub agents: agents::AgentService,
    /// Every domain's MCP tools, over the services above.
    pub mcp: std::sync::Arc<::mcp::Catalog>,
    /// The origin people and clients reach the service at (`SVC_PUBLIC_URL`).
    pub public_url: String,
    /// Fetches OAuth clients' metadata documents through the webhooks' address guard.
    pub client_documents: std::sync::Arc<oauth::Documents>,
    /// Seals secrets at rest (webhook secrets and header values, channel credentials).
    pub keyring: store::secrets::Keyring,
}

impl Services {
    /// Reads of `config`: the public URL, the provider clients' timeout and sandbox, the
    /// messaging and webhooks tunables, and the secrets keys (one keyring for every domain).
    pub async fn new(pool: store::Pool, clock: Clock, config: &config::Config) -> Result<Self, kernel::Error> {
        let keyring = keyring(&pool, &config.secrets).await?;
        let client = providers::http_client().map_err(kernel::Error::internal)?;
        let sandbox = std::sync::Arc::new(providers::Sandbox::new(config.sandbox.clone()));
        // the chat sandbox reads the service's clock, so a test moving it moves template reviews
        let now = {
            let clock = clock.clone();
            std::sync::Arc::new(move || std::time::SystemTime::from(clock.now())) as providers::chat_sandbox::Now
        };
        let chat_sandbox = std::sync::Arc::new(providers::ChatSandbox::new(providers::ChatSandboxConfig {
            delivery_delay: config.sandbox.delivery_delay,
            template_review: config.sandbox_template_review,
            group_delay: config.sandbox_group_delay,
            keep: config.sandbox.keep,
            now,
        }));
        let gateways = messaging::gateways::Gateways::new(client, sandbox, config.provider_timeout, keyring.clone())
            .with_chat_sandbox(chat_sandbox);
        let webhooks = webhooks::WebhookService::new(
            pool.clone(),
            clock.clone(),
            catalogue(),
            config.webhooks.clone(),
            keyring.clone(),
        )?;
        let leads = leads::LeadService::new(pool.clone(), clock.clone(), config.public_url.clone());
        let contacts = contacts::ContactService::new(pool.clone(), clock.clone());
        let commerce = commerce::CommerceService::new(pool.clone(), clock.clone());
        // orders customers place in the chat catalogue go to the shops (taking an order needs
        // no platform, so the shops messaging holds are the ones without)
        // form answers are saved as rows through the data tables' own rules
        let data = data_tables::DataService::new(pool.clone(), clock.clone(), config.public_url.clone());
        let messaging =
            messaging::MessagingService::new(pool.clone(), clock.clone(), gateways, config.messaging.clone())
                .with_chat_orders(std::sync::Arc::new(commerce.clone()))
                .with_form_records(std::sync::Arc::new(FormTables(data.clone())));
        // shops publish through the chat accounts and pull feeds through the webhooks' guard
        let commerce = commerce.with_platforms(messaging.clone(), config.public_url.clone(), config.webhooks.policy)?;
        let payments = payments(&pool, &clock, config)?;
        // callbacks go through the webhooks' address guard, with their timeout
        let automations = automations::AutomationService::new(
            pool.clone(),
            clock.clone(),
            keyring.clone(),
            automations::AutomationsConfig { policy: config.webhooks.policy, timeout: config.webhooks.timeout },
        )?
        // agent runs' events are business events only
        .with_events(&agents::EVENTS)
        // named operations' steps act through the domain services
        .with_steps(automations::operations::Steps {
            leads: leads.clone(),
            data: data.clone(),
            commerce: commerce.clone(),
            messaging: messaging.clone(),
        });
        let agents =
            agents::AgentService::new(pool.clone(), clock.clone(), models(config)?, config.agents.config.clone());
        let mcp = std::sync::Arc::new(::mcp::Catalog::new(::mcp::Domains {
            pool,
            contacts: contacts.clone(),
            messaging: messaging.clone(),
            leads: leads.clone(),
            commerce: commerce.clone(),
            data: data.clone(),
            payments: payments.clone(),
            automations: automations.clone(),
            agents: agents.clone(),
        }));
        // runs call the workspace's MCP tools, in process
        agents.use_tools(&(mcp.clone() as std::sync::Arc<dyn agents::Toolbox>));
        Ok(Self {
            contacts,
            messaging,
            webhooks,
            leads,
            commerce,
            data,
            payments,
            automations,
            agents,
            mcp,
            public_url: config.public_url.clone(),
            client_documents: std::sync::Arc::new(
                oauth::Documents::new(config.webhooks.policy).map_err(kernel::Error::internal)?,
            ),
            keyring,
        })
    }

    /// `gateway admin secrets rotate`: every sealed value re-sealed under the current key.
    /// Answers the receivers and the channels that changed.
    pub async fn reseal(&self) -> Result<(u64, u64), kernel::Error> {
        Ok((self.webhooks.reseal().await?, self.messaging.reseal().await?))
    }

    /// Every domain's job handlers.
    pub fn job_registry(&self) -> store::jobs::Registry {
        let mut registry = store::jobs::Registry::new();
        std::sync::Arc::new(self.messaging.clone()).register_jobs(&mut registry);
        std::sync::Arc::new(self.leads.clone()).register_jobs(&mut registry);
        std::sync::Arc::new(self.commerce.clone()).register_jobs(&mut registry);
        std::sync::Arc::new(self.data.clone()).register_jobs(&mut registry);
        std::sync::Arc::new(self.payments.clone()).register_jobs(&mut registry);
        std::sync::Arc::new(self.automations.clone()).register_jobs(&mut registry);
        std::sync::Arc::new(self.agents.clone()).register_jobs(&mut registry);
        registry
    }
}

/// The payments service over the configured mobile-money provider; the sandbox reads the
/// service's clock, so a test moving it moves the payer's answer.
fn payments(
    pool: &store::Pool,
    clock: &Clock,
    config: &config::Config,
) -> Result<payments_read::PaymentService, kernel::Error> {
    let provider = match &config.payments.provider {
        config::PaymentProvider::Sandbox { delay } => {
            let clock = clock.clone();
            let now = std::sync::Arc::new(move || std::time::SystemTime::from(clock.now()));
            let sandbox = providers::PaymentSandbox::new(providers::PaymentSandboxConfig { delay: *delay, now });
            payments_read::Provider::Sandbox(std::sync::Arc::new(sandbox))
        }
        config::PaymentProvider::Mpesa(mpesa) => {
            let client = providers::http_client().map_err(kernel::Error::internal)?;
            payments_read::Provider::Mpesa(std::sync::Arc::new(providers::Mpesa::new(client, mpesa.clone())))
        }
    };
    Ok(payments_read::PaymentService::new(
        pool.clone(),
        clock.clone(),
        provider,
        config.public_url.clone(),
        config.payments.config.clone(),
    ))
}

/// The language model of `config`: the scripted sandbox, or an OpenAI-compatible API.
fn models(config: &config::Config) -> Result<std::sync::Arc<dyn providers::ModelGateway>, kernel::Error> {
    Ok(match &config.agents.executor {
        config::AgentExecutor::Sandbox => std::sync::Arc::new(providers::ModelSandbox::new()),
        config::AgentExecutor::OpenAi(openai) => {
            let client = providers::http_client().map_err(kernel::Error::internal)?;
            std::sync::Arc::new(providers::OpenAi::new(client, openai.clone()))
        }
    })
}

/// Everything a request may need, shared by every worker thread; the services are reached as
/// `state.leads`, `state.commerce`...
pub struct AppState {
    pub pool: store::Pool,
    pub clock: Clock,
    pub limiter: RateLimiter,
    pub metrics: Metrics,
    pub services: Services,
    /// Keys recently seen (off until [`AppState::with_key_cache`]).
    pub keys: std::sync::Arc<accounts::KeyCache>,
}

impl std::ops::Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.services
    }
}

impl AppState {
    pub fn new(
        pool: store::Pool,
        clock: Clock,
        limiter: RateLimiter,
        services: Services,
    ) -> Result<Self, kernel::Error> {
        let keys = std::sync::Arc::new(accounts::KeyCache::new(std::time::Duration::ZERO));
        Ok(Self { metrics: Metrics::new().map_err(kernel::Error::internal)?, pool, clock, limiter, services, keys })
    }

    /// Authenticates through `keys` (docs/operations.md, "Authentication cache").
    pub fn with_key_cache(self, keys: std::sync::Arc<accounts::KeyCache>) -> Self {
        Self { keys, ..self }
    }
}

/// The whole HTTP application: used by `serve` and by the black-box tests alike.
pub fn app(
    state: web::Data<AppState>,
    limits: config::HttpLimits,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let (catalog, public_url) = (state.mcp.clone(), state.public_url.clone());
    App::new()
        .app_data(state)
        .app_data(web::PayloadConfig::new(limits.max_body_bytes))
        .app_data(limits)
        .app_data(web::QueryConfig::default().error_handler(http::json::query_error))
        .wrap(actix_web::middleware::from_fn(http::middleware::observe))
        // resources, not `App::route`s: another method on these paths is a 405 naming GET
        .service(web::resource("/health").route(web::get().to(ops::health)))
        .service(web::resource("/ready").route(web::get().to(ops::ready)))
        .service(web::resource("/metrics").route(web::get().to(ops::metrics)))
        .service(web::resource("/api-docs").route(web::get().to(docs::page)))
        .service(web::resource("/api-docs/openapi.json").route(web::get().to(docs::openapi)))
        .service(web::resource("/api-docs/mcp.json").route(web::get().to(mcp::manifest)))
        .configure(|cfg| mcp::configure(cfg, &catalog, &public_url))
        .configure(oauth::configure)
        .configure(v3::configure)
        .configure(engine::configure)
        .configure(hooks::configure)
        .configure(shop::configure)
        .configure(pay::configure)
        // signed file links from data records carry no key
        .service(web::resource("/files/{file}").route(web::get().to(v3::data::download)))
        .default_service(web::to(ops::not_found))
}

/// The event catalogue with the samples of the domains that exist built by their real payload
/// code, so a sample cannot drift from what is delivered, and the receiver filters of the groups
/// that have them, written by the domain that owns the events (the lead filters are the leads
/// crate's rule; the webhooks crate only applies them).
pub fn catalogue() -> webhooks::catalogue::Catalogue {
    webhooks::catalogue::Catalogue::standard()
        .with_samples(messaging::events::samples())
        .with_samples(leads::events::samples())
        .with_samples(commerce::events::samples())
        .with_samples(webhooks::deliver::samples())
        .with_filter("leads", leads::filters::matches)
}

/// Form answers saved as data-table rows, as the operator writes them (the table's rules and
/// uniqueness apply; its read and write access is the people's, not a form's).
struct FormTables(data_tables::DataService);

#[async_trait::async_trait]
impl messaging::chat::forms::answers::FormRecords for FormTables {
    async fn save(
        &self,
        tenant: kernel::TenantId,
        slug: &str,
        answers: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<String, kernel::Error> {
        let operator = kernel::Caller::operator(tenant, "");
        let tables = self.0.tables(&operator).await?;
        let table = tables
            .tables
            .iter()
            .find(|t| t.slug == slug)
            .ok_or_else(|| kernel::Error::not_found(format!("Data table {slug}")))?;
        let row = data_tables::RecordWrite::of(serde_json::Value::Object(answers.clone()));
        let record = self.0.create_record(&operator, data_tables::TableId(table.id), &row).await?;
        Ok(record.id.to_string())
    }
}
