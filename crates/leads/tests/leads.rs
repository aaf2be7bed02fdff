//! The leads crate's own rules against a real PostgreSQL database, through `LeadService` (not
//! HTTP): upsert matching and limits, the stage rules, label limits, visibility and
//! permissions, tenant isolation. `DATABASE_URL` names the cluster's maintenance database
//! (`cargo xtask test` sets it).

#[path = "leads/access.rs"]
mod access;
#[path = "leads/common.rs"]
mod common;
#[path = "leads/labels.rs"]
mod labels;
#[path = "leads/stages.rs"]
mod stages;
#[path = "leads/upsert.rs"]
mod upsert;
