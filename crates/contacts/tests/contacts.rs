//! The contacts crate's own rules against a real PostgreSQL database per test, through
//! [`contacts::ContactService`] (not HTTP). `DATABASE_URL` names the cluster's maintenance
//! database; `cargo xtask test` sets it.

#[path = "contacts/common.rs"]
mod common;
#[path = "contacts/groups.rs"]
mod groups;
#[path = "contacts/numbers.rs"]
mod numbers;
#[path = "contacts/tenancy.rs"]
mod tenancy;
#[path = "contacts/writes.rs"]
mod writes;
