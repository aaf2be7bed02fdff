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

pub use deliver::Deliverer;
pub use receivers::{NewWebhook, Webhook, WebhookPatch, WithSecret};
pub use service::{WebhookService, WebhooksConfig};
