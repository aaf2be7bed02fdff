//! Support for the black-box tests: the composed gateway in process, on a database of its own,
//! with a manual clock, and helpers that make tenants, users and keys the way an operator would.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::header::HeaderMap;
use actix_web::{test, web};
use gateway::config::Config;
use gateway::http::rate_limit::{MemoryLimiter, PostgresLimiter, RateLimiter};
use gateway::{AppState, Services};
use kernel::caller::Permissions;
use kernel::{Clock, TenantId, UserId};
use messaging::MessagingConfig;
use serde_json::Value;
use std::sync::Arc;
use store::jobs::{Worker, WorkerConfig};
use store::testing::TestDb;
use time::OffsetDateTime;

pub mod browser;

pub use serde_json::json;

/// Which rate limiter the app runs with.
#[derive(Debug, Clone, Copy)]
pub enum Limiter {
    Memory(u32),
    Postgres(u32),
}

/// A response, read whole.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `body.data`, for success envelopes.
    pub fn data(&self) -> &Value {
        &self.body["data"]
    }
}

/// A tenant with a user holding the given permissions and a key the user issued.
#[derive(Debug, Clone)]
pub struct Account {
    pub tenant: TenantId,
    pub user: UserId,
    pub key: String,
}

pub struct TestApp<S> {
    pub db: TestDb,
    pub pool: store::Pool,
    pub clock: Clock,
    /// The domain services the app runs on, as the gateway composes them (`app.messaging`,
    /// `app.data`... for what the API cannot do: channels, table definitions, files).
    pub services: Services,
    /// What the services were built from.
    settings: Config,
    worker: Worker,
    deliverer: Arc<webhooks::Deliverer>,
    service: S,
    /// The port [`spawn_public`] reserved, which the public URL names, for [`TestApp::listen`].
    reserved: std::sync::Mutex<Option<std::net::TcpListener>>,
}

/// The app with the contract's default limit of 120 requests a minute, in memory.
pub async fn spawn()
-> TestApp<impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>> {
    spawn_with(Limiter::Memory(120)).await
}

pub async fn spawn_with(
    limiter: Limiter,
) -> TestApp<impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>>
{
    build(limiter, MessagingConfig::default()).await
}

/// The app with the default limiter and other messaging tunables (a small campaign batch).
pub async fn spawn_with_messaging(
    config: MessagingConfig,
) -> TestApp<impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>>
{
    build(Limiter::Memory(120), config).await
}

/// The app with other webhook settings (the address guard's policy, the pause threshold...).
pub async fn spawn_with_webhooks(
    config: webhooks::WebhooksConfig,
) -> TestApp<impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>>
{
    build_with(Limiter::Memory(120), MessagingConfig::default(), config, None, None).await
}

/// The app with agent runs asking another language model (a fake chat-completions server),
/// or priced and bounded otherwise.
pub async fn spawn_with_agents(
    agents: gateway::config::AgentsSetup,
) -> TestApp<impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>>
{
    build_with(Limiter::Memory(120), MessagingConfig::default(), webhooks_config(), None, Some(agents)).await
}

/// An app whose public URL is the address [`TestApp::listen`] will serve it at, for clients
/// that follow the URLs the service publishes (OAuth discovery).
pub async fn spawn_public()
-> TestApp<impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("a loopback port");
    build_with(Limiter::Memory(120), MessagingConfig::default(), webhooks_config(), Some(listener), None).await
}

async fn build(
    limiter: Limiter,
    config: MessagingConfig,
) -> TestApp<impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>>
{
    build_with(limiter, config, webhooks_config(), None, None).await
}

async fn build_with(
    limiter: Limiter,
    config: MessagingConfig,
    webhooks_config: webhooks::WebhooksConfig,
    reserved: Option<std::net::TcpListener>,
    agents: Option<gateway::config::AgentsSetup>,
) -> TestApp<impl Service<actix_http::Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>>
{
    let public_url = match &reserved {
        Some(listener) => format!("http://{}", listener.local_addr().expect("address")),
        None => "http://127.0.0.1:8080".to_owned(),
    };
    let db = TestDb::new().await;
    let pool = db.pool();
    // Whole seconds, so rate-limit reset times are exact.
    let now = OffsetDateTime::now_utc().replace_nanosecond(0).expect("valid time");
    let clock = Clock::manual(now);
    let limiter = match limiter {
        Limiter::Memory(limit) => RateLimiter::Memory(MemoryLimiter::new(limit)),
        Limiter::Postgres(limit) => RateLimiter::Postgres(PostgresLimiter::new(limit, pool.clone())),
    };
    let defaults = Config::from_env().expect("the gateway's configuration");
    let settings = Config {
        agents: agents.unwrap_or(defaults.agents.clone()),
        public_url,
        provider_timeout: std::time::Duration::from_secs(2),
        sandbox: providers::SandboxConfig::default(),
        messaging: config,
        webhooks: webhooks_config,
        ..defaults
    };
    let services = Services::new(pool.clone(), clock.clone(), &settings).await.expect("services");
    let worker = Worker::new(pool.clone(), clock.clone(), services.job_registry(), WorkerConfig::default());
    let deliverer = webhooks::Deliverer::new(services.webhooks.clone());
    let state = web::Data::new(AppState::new(pool.clone(), clock.clone(), limiter, services.clone()).expect("state"));
    let service = test::init_service(gateway::app(state, gateway::config::HttpLimits::default())).await;
    let reserved = std::sync::Mutex::new(reserved);
    TestApp { db, pool, clock, services, settings, worker, deliverer, service, reserved }
}

impl<S> std::ops::Deref for TestApp<S> {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.services
    }
}

/// Webhooks as tests need them: receivers on this machine's loopback are allowed (the one
/// setting for local development), and a short timeout.
pub fn webhooks_config() -> webhooks::WebhooksConfig {
    webhooks::WebhooksConfig {
        policy: webhooks::guard::Policy { allow_loopback: true },
        timeout: std::time::Duration::from_secs(2),
        ..webhooks::WebhooksConfig::default()
    }
}

impl<S, B> TestApp<S>
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    /// Sends a request; `body` as JSON when given.
    pub async fn request(&self, method: &str, path: &str, key: Option<&str>, body: Option<Value>) -> Resp {
        let method = actix_web::http::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = test::TestRequest::default().method(method).uri(path);
        if let Some(key) = key {
            req = req.insert_header(("Authorization", format!("Bearer {key}")));
        }
        if let Some(body) = body {
            req = req.set_json(body);
        }
        self.send(req).await
    }

    /// Sends a prepared request (custom headers, raw bodies).
    pub async fn send(&self, req: test::TestRequest) -> Resp {
        // Handlers' errors are already responses here; an Err would be a bug in the app itself.
        let res = self.service.call(req.to_request()).await.unwrap_or_else(|e| panic!("service failed: {e}"));
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let bytes = test::read_body(res).await;
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        Resp { status, headers, body }
    }

    pub async fn get(&self, path: &str, key: &str) -> Resp {
        self.request("GET", path, Some(key), None).await
    }

    pub async fn post(&self, path: &str, key: &str, body: Value) -> Resp {
        self.request("POST", path, Some(key), Some(body)).await
    }

    pub async fn put(&self, path: &str, key: &str, body: Value) -> Resp {
        self.request("PUT", path, Some(key), Some(body)).await
    }

    pub async fn patch(&self, path: &str, key: &str, body: Value) -> Resp {
        self.request("PATCH", path, Some(key), Some(body)).await
    }

    pub async fn delete(&self, path: &str, key: &str) -> Resp {
        self.request("DELETE", path, Some(key), None).await
    }

    /// Runs due jobs and due webhook deliveries until neither has anything left to do now.
    pub async fn run_jobs(&self) -> usize {
        let mut total = 0;
        loop {
            let ran = self.worker.work_once().await.expect("jobs");
            let delivered = self.deliverer.deliver_due().await.expect("deliveries");
            if ran + delivered == 0 {
                return total;
            }
            total += ran + delivered;
        }
    }

    /// Moves the clock forward, then runs what became due.
    pub async fn advance(&self, by: time::Duration) -> usize {
        self.clock.advance(by);
        self.run_jobs().await
    }

    /// The services again, composed as this app's but on another pool (a test of many
    /// connections at once).
    pub async fn services_on(&self, pool: store::Pool) -> Services {
        Services::new(pool, self.clock.clone(), &self.settings).await.expect("services")
    }

    /// The sandbox mobile-money provider payments go through.
    pub fn payment_sandbox(&self) -> &providers::PaymentSandbox {
        self.payments.sandbox().expect("the payments sandbox")
    }

    /// The sandbox every sandbox channel of this app shares.
    pub fn sandbox(&self) -> &providers::Sandbox {
        self.messaging.gateways().sandbox()
    }

    /// Gives `tenant` an Africa's Talking SMS channel `code` whose calls go to `base_url` (a
    /// fake provider on 127.0.0.1), with the sender id `sender` on it.
    pub async fn africastalking_route(
        &self,
        tenant: TenantId,
        code: &str,
        base_url: &str,
        sender: &str,
        throughput_per_second: Option<i32>,
    ) {
        use messaging::channels::{NewChannel, NewSender};
        let mut conn = self.conn().await;
        let channel = NewChannel {
            kind: "sms".into(),
            provider: "africastalking".into(),
            code: Some(code.into()),
            base_url: Some(base_url.into()),
            username: Some("sandbox".into()),
            api_key: Some(format!("atsk_{code}")),
            throughput_per_second,
        };
        messaging::channels::add(&mut conn, &self.keyring, tenant, channel).await.expect("channel");
        let sender = NewSender {
            channel: code.into(),
            kind: "sender_id".into(),
            value: sender.into(),
            label: None,
            status: None,
        };
        messaging::channels::add_sender(&mut conn, tenant, sender).await.expect("sender");
    }

    /// The voice sandbox every sandbox voice channel of this app shares.
    pub fn voice_sandbox(&self) -> &providers::VoiceSandbox {
        self.messaging.gateways().voice_sandbox()
    }

    /// Gives `tenant` a voice channel `code` calling from `number`: the sandbox, or Africa's
    /// Talking at `base_url` (a fake provider on 127.0.0.1).
    pub async fn voice_route(
        &self,
        tenant: TenantId,
        code: &str,
        base_url: Option<&str>,
        number: &str,
    ) -> messaging::channels::Channel {
        use messaging::channels::{NewChannel, NewSender};
        let mut conn = self.conn().await;
        let channel = NewChannel {
            kind: "voice".into(),
            provider: if base_url.is_some() { "africastalking" } else { "sandbox" }.into(),
            code: Some(code.into()),
            base_url: base_url.map(Into::into),
            username: base_url.map(|_| "sandbox".into()),
            api_key: base_url.map(|_| format!("atsk_{code}")),
            throughput_per_second: None,
        };
        let channel = messaging::channels::add(&mut conn, &self.keyring, tenant, channel).await.expect("channel");
        let sender = NewSender {
            channel: code.into(),
            kind: "phone_number".into(),
            value: number.into(),
            label: None,
            status: None,
        };
        messaging::channels::add_sender(&mut conn, tenant, sender).await.expect("number");
        channel
    }

    pub async fn conn(&self) -> store::PooledConn {
        store::connect_system(&self.pool).await.expect("connection")
    }

    pub async fn tenant(&self, name: &str) -> TenantId {
        let mut conn = self.conn().await;
        TenantId(accounts::tenants::create(&mut conn, name, "TZS").await.expect("tenant").id)
    }

    /// A user with `all` or a comma-separated list of permissions.
    pub async fn user(&self, tenant: TenantId, permissions: &str) -> UserId {
        let mut conn = self.conn().await;
        let permissions = accounts::users::parse_permissions(permissions).expect("permissions");
        UserId(accounts::users::create(&mut conn, tenant, "Test user", &permissions).await.expect("user").id)
    }

    pub async fn key(&self, tenant: TenantId, issuer: UserId) -> String {
        let mut conn = self.conn().await;
        accounts::keys::create(&mut conn, tenant, accounts::keys::KeyIssuer::User(issuer), "Test key", None)
            .await
            .expect("key")
            .plaintext
    }

    /// A key from before the permission model: no issuer.
    pub async fn legacy_key(&self, tenant: TenantId) -> String {
        let mut conn = self.conn().await;
        accounts::keys::create(&mut conn, tenant, accounts::keys::KeyIssuer::Legacy, "Legacy key", None)
            .await
            .expect("key")
            .plaintext
    }

    /// A fresh tenant, a user with `permissions`, and their key.
    pub async fn account(&self, permissions: &str) -> Account {
        let tenant = self.tenant("Acme").await;
        let user = self.user(tenant, permissions).await;
        let key = self.key(tenant, user).await;
        Account { tenant, user, key }
    }

    /// An MCP connection (`svc_mcp_` token) of `tenant` issued by `issuer` with `scopes`.
    pub async fn mcp_connection(&self, tenant: TenantId, issuer: UserId, scopes: &str) -> String {
        let mut conn = self.conn().await;
        let scopes = ::mcp::Grant::parse(scopes).expect("scopes").scopes();
        accounts::mcp_connections::create(&mut conn, tenant, issuer, "Test connection", &scopes)
            .await
            .expect("connection")
            .token
    }

    /// The same app on a real listener on this machine's loopback, for clients that speak HTTP
    /// themselves (the MCP SDK's); it stops when the answer is dropped.
    pub fn listen(&self) -> Listening {
        self.listen_limited(10_000)
    }

    /// [`TestApp::listen`] with a rate limit of `per_minute` requests per credential.
    pub fn listen_limited(&self, per_minute: u32) -> Listening {
        let limiter = RateLimiter::Memory(MemoryLimiter::new(per_minute));
        let state = web::Data::new(
            AppState::new(self.pool.clone(), self.clock.clone(), limiter, self.services.clone()).expect("state"),
        );
        let server =
            actix_web::HttpServer::new(move || gateway::app(state.clone(), gateway::config::HttpLimits::default()))
                .workers(1)
                .disable_signals();
        let reserved = self.reserved.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
        let server = match reserved {
            Some(listener) => server.listen(listener),
            None => server.bind(("127.0.0.1", 0)),
        }
        .expect("listen on a loopback port");
        let addr = server.addrs()[0];
        let server = server.run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        Listening { url: format!("http://{addr}"), handle }
    }

    pub async fn set_permissions(&self, user: UserId, permissions: &str) {
        let mut conn = self.conn().await;
        let permissions: Permissions = accounts::users::parse_permissions(permissions).expect("permissions");
        accounts::users::set_permissions(&mut conn, user, &permissions).await.expect("set permissions");
    }
}

/// The app on a loopback port ([`TestApp::listen`]).
pub struct Listening {
    /// `http://127.0.0.1:<port>`
    pub url: String,
    handle: actix_web::dev::ServerHandle,
}

impl Drop for Listening {
    fn drop(&mut self) {
        // stop accepting at once; the server task ends with the test's runtime
        drop(self.handle.stop(false));
    }
}

/// A fake of Africa's Talking's `POST /version1/messaging` (mount it on a wiremock server):
/// accepts every message after `delay` with a fresh `messageId`, and remembers `(to,
/// messageId)` of each answer. A delay of minutes is a provider that hangs.
#[derive(Clone)]
pub struct FakeAfricasTalking {
    next: Arc<std::sync::atomic::AtomicU64>,
    pub answered: Arc<std::sync::Mutex<Vec<(String, String)>>>,
    delay: std::time::Duration,
}

impl FakeAfricasTalking {
    pub fn new(delay: std::time::Duration) -> Self {
        Self { next: Arc::default(), answered: Arc::default(), delay }
    }

    /// The numbers answered, in order.
    pub fn numbers(&self) -> Vec<String> {
        self.answered.lock().unwrap_or_else(|p| p.into_inner()).iter().map(|(to, _)| to.clone()).collect()
    }
}

impl wiremock::Respond for FakeAfricasTalking {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let form: std::collections::HashMap<String, String> =
            serde_urlencoded::from_bytes(&request.body).unwrap_or_default();
        let to = form.get("to").cloned().unwrap_or_default();
        let id = format!("ATXid_{}", self.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
        self.answered.lock().unwrap_or_else(|p| p.into_inner()).push((to.clone(), id.clone()));
        wiremock::ResponseTemplate::new(201)
            .set_body_json(json!({"SMSMessageData": {
                "Message": "Sent to 1/1 Total Cost: TZS 20.0000",
                "Recipients": [{"statusCode": 101, "number": to, "status": "Success",
                                "cost": "TZS 20.0000", "messageId": id}]
            }}))
            .set_delay(self.delay)
    }
}

#[derive(diesel::QueryableByName)]
struct Rows {
    #[diesel(sql_type = diesel::sql_types::Jsonb)]
    rows: Value,
}

/// The rows of a query the API has no route for, each as a JSON object.
pub async fn sql_rows(pool: &store::Pool, sql: &str) -> Vec<Value> {
    use diesel_async::RunQueryDsl;
    let mut conn = store::connect_system(pool).await.expect("connection");
    let query = format!("SELECT coalesce(jsonb_agg(to_jsonb(t)), '[]'::jsonb) AS rows FROM ({sql}) t");
    let found: Rows = diesel::sql_query(query).get_result(&mut conn).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    found.rows.as_array().cloned().unwrap_or_default()
}

/// A statement the API has no route for.
pub async fn sql_exec(pool: &store::Pool, sql: &str) {
    use diesel_async::RunQueryDsl;
    let mut conn = store::connect_system(pool).await.expect("connection");
    diesel::sql_query(sql).execute(&mut conn).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Polls every future on this thread until all are done (the tests crate has no futures crate).
pub async fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut pending: Vec<std::pin::Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut done = true;
        for (future, output) in pending.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => *output = Some(value),
                    std::task::Poll::Pending => done = false,
                }
            }
        }
        if done { std::task::Poll::Ready(()) } else { std::task::Poll::Pending }
    })
    .await;
    outputs.into_iter().map(|o| o.expect("every future finished")).collect()
}
