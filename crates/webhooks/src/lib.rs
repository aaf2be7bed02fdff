//! Webhooks (contract: Webhook receiver, Webhooks management, Events): receivers, signed
//! delivery of the outbox's events, and the address guard that keeps deliveries off private
//! networks. Issue 4 builds on these pieces.

pub mod guard;
pub mod signing;
