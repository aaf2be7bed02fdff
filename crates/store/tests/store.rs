//! Integration tests of the store against a real PostgreSQL database per test
//! (`DATABASE_URL` names the cluster's maintenance database; `cargo xtask test` sets it).

#[path = "store/common.rs"]
mod common;
#[path = "store/harness.rs"]
mod harness;
#[path = "store/idempotency.rs"]
mod idempotency;
#[path = "store/jobs.rs"]
mod jobs;
#[path = "store/outbox.rs"]
mod outbox;
#[path = "store/prepared.rs"]
mod prepared;
#[path = "store/recovery.rs"]
mod recovery;
#[path = "store/row_security.rs"]
mod row_security;
#[path = "store/search.rs"]
mod search;
#[path = "store/tenancy.rs"]
mod tenancy;
