//! Webhooks (contract: Webhook receiver, Webhooks management, Events): receivers, the event
//! catalogue, the fan-out of the outbox into deliveries (a trigger on `events`, so a delivery
//! exists exactly when its event committed), signed delivery with retries and pausing, the
//! delivery log with replay, and the address guard that keeps deliveries off private networks.

pub mod attempt;
pub mod catalogue;
pub mod deliver;
pub mod guard;
pub mod headers;
pub mod log;
pub mod receivers;
mod schema;
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
