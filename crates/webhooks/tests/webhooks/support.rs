//! A tenant, the webhooks service as the gateway composes it (with the leads crate's filter),
//! and receivers on this machine's loopback.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use kernel::{Caller, Clock, PageRequest, TenantId};
use serde_json::{Value, json};
use store::testing::TestDb;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use webhooks::catalogue::Catalogue;
use webhooks::log::{Delivery, DeliveryFilter};
use webhooks::{NewWebhook, WebhookId, WebhookService, WebhooksConfig};

pub struct Setup {
    pub _db: TestDb,
    pub pool: store::Pool,
    pub service: WebhookService,
    pub tenant: TenantId,
    pub caller: Caller,
}

pub async fn tenant(pool: &store::Pool, name: &str) -> TenantId {
    let mut conn = store::connect_system(pool).await.expect("connection");
    TenantId(accounts::tenants::create(&mut conn, name, "TZS").await.expect("tenant").id)
}

/// Loopback receivers allowed, a short timeout, and a pause after `pause_after` failures.
pub async fn setup(pause_after: i32) -> Setup {
    let db = TestDb::new().await;
    let pool = db.pool();
    let tenant = tenant(&pool, "Duka").await;
    let config = WebhooksConfig {
        policy: webhooks::guard::Policy { allow_loopback: true },
        timeout: std::time::Duration::from_secs(2),
        pause_after,
        ..WebhooksConfig::default()
    };
    let catalogue = Catalogue::standard().with_filter("leads", leads::filters::matches);
    let keyring = {
        let mut conn = store::connect_system(&pool).await.expect("connection");
        store::secrets::Keyring::load(&mut conn, &Default::default()).await.expect("keyring")
    };
    let service = WebhookService::new(pool.clone(), Clock::system(), catalogue, config, keyring).expect("service");
    Setup { _db: db, pool, service, tenant, caller: Caller::operator(tenant, "255") }
}

pub fn new_webhook(url: &str, events: &[&str], filters: Option<Value>) -> NewWebhook {
    NewWebhook {
        url: Some(url.to_owned()),
        events: Some(events.iter().map(|e| (*e).to_owned()).collect()),
        filters,
        headers: None,
    }
}

/// A lead event's payload, as far as the filters read it.
pub fn lead(stage: &str) -> Value {
    json!({"lead": {"id": uuid::Uuid::new_v4(), "stage": stage, "labels": [], "source_channel": "api"}})
}

pub async fn emit(s: &Setup, tenant: TenantId, name: &str, payload: Value) {
    let mut conn = store::connect_system(&s.pool).await.expect("connection");
    store::outbox::emit(&mut conn, tenant, name, payload, s.service_now()).await.expect("event");
}

impl Setup {
    pub fn service_now(&self) -> time::OffsetDateTime {
        time::OffsetDateTime::now_utc()
    }

    pub async fn log(&self, webhook: WebhookId) -> Vec<Delivery> {
        let page = PageRequest { page: 1, per_page: 100 };
        self.service.deliveries(&self.caller, webhook, &DeliveryFilter::default(), page).await.expect("log").items
    }
}

/// An HTTP/1.1 listener on loopback answering every request with one status, counting them.
pub struct Receiver {
    pub url: String,
    pub hits: Arc<AtomicUsize>,
}

impl Receiver {
    pub async fn answering(status: u16) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/hooks", listener.local_addr().expect("address"));
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let counted = counted.clone();
                tokio::spawn(async move {
                    if read_request(&mut stream).await {
                        counted.fetch_add(1, Ordering::SeqCst);
                        let answer = format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                        let _ = stream.write_all(answer.as_bytes()).await;
                        let _ = stream.shutdown().await;
                    }
                });
            }
        });
        Self { url, hits }
    }

    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// Reads one request: the head, then as many bytes as its `content-length`.
async fn read_request(stream: &mut tokio::net::TcpStream) -> bool {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let Ok(n) = stream.read(&mut chunk).await else { return false };
        if n == 0 {
            return false;
        }
        buffer.extend_from_slice(&chunk[..n]);
        let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
        let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
        let length = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap_or(0)))
            .unwrap_or(0);
        if buffer.len() >= end + 4 + length {
            return true;
        }
    }
}
