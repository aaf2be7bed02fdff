//! The gateway: the one binary's library. It composes the domain services into the HTTP
//! route trees, runs the background workers, and offers the admin CLI. Handlers stay thin:
//! authenticate, parse, call a service, wrap the answer in the route family's envelope.

pub mod cli;
pub mod config;
pub mod docs;
pub mod hooks;
pub mod http;
pub mod ops;
pub mod serve;
pub mod v3;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::{App, web};
use kernel::Clock;

use http::metrics::Metrics;
use http::rate_limit::RateLimiter;

/// Everything a request may need, shared by every worker thread.
pub struct AppState {
    pub pool: store::Pool,
    pub clock: Clock,
    pub limiter: RateLimiter,
    pub metrics: Metrics,
    pub contacts: contacts::ContactService,
    pub messaging: messaging::MessagingService,
    pub webhooks: webhooks::WebhookService,
    pub leads: leads::LeadService,
    pub commerce: commerce::CommerceService,
    pub data: data_tables::DataService,
}

impl AppState {
    pub fn new(
        pool: store::Pool,
        clock: Clock,
        limiter: RateLimiter,
        messaging: messaging::MessagingService,
        webhooks: webhooks::WebhookService,
        public_url: &str,
    ) -> Result<Self, kernel::Error> {
        Ok(Self {
            contacts: contacts::ContactService::new(pool.clone(), clock.clone()),
            leads: leads::LeadService::new(pool.clone(), clock.clone(), public_url.to_owned()),
            commerce: commerce::CommerceService::new(pool.clone(), clock.clone()),
            data: data_tables::DataService::new(pool.clone(), clock.clone(), public_url),
            messaging,
            webhooks,
            metrics: Metrics::new().map_err(kernel::Error::internal)?,
            pool,
            clock,
            limiter,
        })
    }
}

/// The whole HTTP application: used by `serve` and by the black-box tests alike.
pub fn app(
    state: web::Data<AppState>,
    max_body_bytes: usize,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    App::new()
        .app_data(state)
        .app_data(web::PayloadConfig::new(max_body_bytes))
        .wrap(actix_web::middleware::from_fn(http::middleware::observe))
        .route("/health", web::get().to(ops::health))
        .route("/ready", web::get().to(ops::ready))
        .route("/metrics", web::get().to(ops::metrics))
        .route("/api-docs", web::get().to(docs::page))
        .route("/api-docs/openapi.json", web::get().to(docs::openapi))
        .configure(v3::configure)
        .configure(hooks::configure)
        // signed file links from data records carry no key
        .route("/files/{file}", web::get().to(v3::data::download))
        .default_service(web::to(ops::not_found))
}

/// The messaging service as configured: provider clients over one HTTP client, the process's
/// sandbox, and the messaging tunables.
pub fn messaging_service(
    pool: store::Pool,
    clock: Clock,
    config: &config::Config,
) -> Result<messaging::MessagingService, kernel::Error> {
    let client = providers::http_client().map_err(kernel::Error::internal)?;
    let sandbox = std::sync::Arc::new(providers::Sandbox::new(config.sandbox.clone()));
    let gateways = messaging::gateways::Gateways::new(client, sandbox, config.provider_timeout);
    Ok(messaging::MessagingService::new(pool, clock, gateways, config.messaging.clone()))
}

/// The event catalogue with the samples of the domains that exist built by their real payload
/// code, so a sample cannot drift from what is delivered.
pub fn catalogue() -> webhooks::catalogue::Catalogue {
    webhooks::catalogue::Catalogue::standard()
        .with_samples(messaging::events::samples())
        .with_samples(commerce::events::samples())
        .with_samples(webhooks::deliver::samples())
}

/// The webhooks service as configured.
pub async fn webhook_service(
    pool: store::Pool,
    clock: Clock,
    config: &config::Config,
) -> Result<webhooks::WebhookService, kernel::Error> {
    webhooks::WebhookService::new(pool, clock, catalogue(), config.webhooks.clone()).await
}
