//! The messaging crate's own rules against a real PostgreSQL database per test, through
//! [`messaging::MessagingService`] (not HTTP): recipient limits, calling codes, billing,
//! campaign states and tenant isolation. `DATABASE_URL` names the cluster's maintenance
//! database; `cargo xtask test` sets it.

#[path = "messaging/campaigns.rs"]
mod campaigns;
#[path = "messaging/common.rs"]
mod common;
#[path = "messaging/send.rs"]
mod send;
#[path = "messaging/tenancy.rs"]
mod tenancy;
