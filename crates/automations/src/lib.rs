//! The workspace's automation layer (contract: Automations; Automation subscription callbacks):
//!
//! - the outbox read as the business-event log ([`events`], `GET /automations/events`);
//! - subscriptions that post matching events to a callback, signed the Standard Webhooks way
//!   and retried on a bounded schedule ([`subscriptions`], [`deliver`]);
//! - schedules that emit a business event on a cron expression, at most once per due time
//!   across any number of workers ([`schedules`]);
//! - named operations: a workspace's own definitions of steps over the domain services, run
//!   as a compensating transaction and recorded ([`operations`]).
//!
//! Keys only read them (`automations.view`, from a known and active issuer); the operator's
//! command line and MCP tools make and remove subscriptions and schedules.

pub mod deliver;
pub mod events;
pub mod operations;
pub mod schedules;
mod service;
pub mod subscriptions;

pub use service::{AutomationService, AutomationsConfig};
