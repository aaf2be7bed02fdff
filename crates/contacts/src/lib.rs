//! Contacts: contact groups and the contacts in them, exactly as the contract's "Contact
//! group", "Contact" and "Contact groups and contacts" sections describe. [`ContactService`]
//! carries every rule; the gateway only parses and wraps.

pub mod batch;
pub mod body;
pub mod contact;
pub mod group;
pub mod ids;
pub mod schema;
pub mod service;

pub use batch::{BatchReport, NewContacts};
pub use body::ContactInput;
pub use contact::{Contact, ContactFilter, ContactSearch, ListBody, ListQuery};
pub use group::{ContactGroup, DeletedGroup, FieldInput, GroupPatch, NewGroup};
pub use ids::{ContactId, ContactRef, ContactUid, GroupId, GroupRef};
pub use service::{ContactService, GROUPS_PER_PAGE};
