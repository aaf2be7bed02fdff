//! Webhooks (contract: Webhook receiver, Webhooks management, Events). Register a receiver for
//! a tenant; every event the tenant's domains write to the outbox then becomes a delivery:
//!
//! ```
//! use kernel::{Caller, Clock, TenantId};
//! use webhooks::catalogue::Catalogue;
//! use webhooks::{NewWebhook, WebhookService, WebhookStatus, WebhooksConfig};
//!
//! tokio::runtime::Runtime::new().unwrap().block_on(async {
//!     let db = store::testing::TestDb::new().await;
//!     let pool = db.pool();
//!     let mut conn = store::connect_system(&pool).await.unwrap();
//!     let tenant = TenantId(accounts::tenants::create(&mut conn, "Duka", "TZS").await.unwrap().id);
//!     // with nothing configured, a key this database keeps seals the secrets
//!     let keyring = store::secrets::Keyring::load(&mut conn, &Default::default()).await.unwrap();
//!     let service =
//!         WebhookService::new(pool, Clock::system(), Catalogue::standard(), WebhooksConfig::default(), keyring)
//!             .unwrap();
//!
//!     let caller = Caller::operator(tenant, "255");
//!     let input = NewWebhook {
//!         url: Some("https://hooks.example.com/duka".into()),
//!         events: Some(vec!["order.received".into()]),
//!         ..NewWebhook::default()
//!     };
//!     let made = service.create(&caller, input).await.unwrap();
//!     assert_eq!(made.webhook.status, WebhookStatus::Active);
//!     assert_eq!(made.webhook.url, "https://hooks.example.com/duka");
//! });
//! ```
//!
//! Receivers, the event
//! catalogue, the fan-out of the outbox into deliveries (a trigger on `events`, so a delivery
//! exists exactly when its event committed), signed delivery with retries and pausing, the
//! delivery log with replay, and the address guard that keeps deliveries off private networks.

pub mod attempt;
pub mod catalogue;
pub mod deliver;
pub mod doc;
pub mod guard;
pub mod headers;
pub mod log;
pub mod receivers;
mod schema;
pub mod secrets;
mod service;
pub mod signing;
pub mod status;

kernel::id!(
    /// A webhook receiver (`/webhooks/{webhook}`).
    WebhookId: i64
);
kernel::id!(
    /// One delivery of one event to one receiver: its `X-Delivery-Id`.
    DeliveryId: Uuid
);

pub use deliver::Deliverer;
pub use receivers::{NewWebhook, Webhook, WebhookPatch, WithSecret};
pub use service::{WebhookService, WebhooksConfig};
pub use status::{DeliveryState, WebhookStatus};
