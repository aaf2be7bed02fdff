//! Leads (issue 5): the Lead record, the upsert that finds a person by any phone form or email
//! and never blanks a field, labels, idempotent replay, stages and their refusals, the single
//! read, permissions, the module switch, visibility, tenant isolation and the lead events,
//! through HTTP against PostgreSQL.

mod access;
mod events;
mod idempotency;
mod read;
mod refusals;
mod stages;
mod support;
mod upsert;
