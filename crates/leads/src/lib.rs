//! Leads CRM (contract: Lead, Lead stage, Leads): one lead per person, found again by any of its
//! identities; upserts that fill and change but never blank; stages; the timeline and the lead
//! events.

pub mod events;
pub mod filters;
pub mod fold;
pub mod identity;
pub mod lead;
pub mod list;
pub mod ops;
pub mod read;
mod schema;
mod service;
pub mod stage;
mod timeline;
pub mod upsert;

pub use lead::Lead;
pub use service::LeadService;
pub use upsert::{UpsertLead, Upserted};
pub mod fields;
pub mod labels;
