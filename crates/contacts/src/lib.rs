//! Contacts: contact groups and the contacts in them, exactly as the contract's "Contact
//! group", "Contact" and "Contact groups and contacts" sections describe. [`ContactService`]
//! carries every rule; the gateway only parses and wraps.

pub mod batch;
pub mod body;
pub mod contact;
pub mod group;
pub mod recipients;
pub mod schema;
pub mod service;

pub use batch::BatchReport;
pub use contact::{Contact, ContactFilter, ContactRef, ContactSearch, ListQuery};
pub use group::{ContactGroup, DeletedGroup, GroupPatch, GroupRef, NewGroup};
pub use service::{ContactService, GROUPS_PER_PAGE};
