//! Leads (issue 5): the Lead record, the upsert that finds a person by any phone form or email
//! and never blanks a field, labels, idempotent replay, stages and their refusals, the single
//! read, the list and its filters, PATCH, notes, assignment, deletion, the timeline, label
//! management, custom fields, permissions, the module switch, visibility, tenant isolation,
//! the lead events and their burst folding, through HTTP against PostgreSQL.

mod access;
mod activities;
mod changes;
mod events;
mod folding;
mod idempotency;
mod isolation;
mod labels;
mod listing;
mod operations;
mod read;
mod refusals;
mod schema_rules;
mod stages;
pub(crate) mod support;
mod upsert;
