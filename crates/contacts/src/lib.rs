//! Contacts: contact groups and the contacts in them, exactly as the contract's "Contact
//! group", "Contact" and "Contact groups and contacts" sections describe. [`ContactService`]
//! carries every rule; the gateway only parses and wraps.
//!
//! ```
//! use contacts::{ContactInput, ContactService, GroupId, GroupRef, NewGroup};
//! use kernel::{Caller, Clock, TenantId};
//! use store::testing::TestDb;
//!
//! tokio::runtime::Runtime::new().unwrap().block_on(async {
//!     let db = TestDb::new().await; // a fresh, migrated database, dropped at the end
//!     let pool = db.pool();
//!     let mut conn = store::connect_system(&pool).await.unwrap();
//!     let tenant = accounts::tenants::create(&mut conn, "Acme", "TZS").await.unwrap();
//!     let caller = Caller::operator(TenantId(tenant.id), "255");
//!     let service = ContactService::new(pool, Clock::system());
//!
//!     let group = NewGroup { name: "Customers".into(), custom_fields: None };
//!     let group = service.create_group(&caller, group).await.unwrap();
//!     // The body a client sends, as the gateway's reader parses it.
//!     let body: ContactInput = serde_json::from_str(r#"{"PHONE": "0712 345 678", "city": "Arusha"}"#).unwrap();
//!     let contact = service.create_contact(&caller, GroupRef::Id(GroupId(group.id)), body).await.unwrap();
//!
//!     // A national number takes the account's calling code; other members are custom fields.
//!     assert_eq!(contact.full_phone_number, "255712345678");
//!     assert_eq!(contact.custom_field_values["city"], "Arusha");
//!     assert!(contact.uid.starts_with("ctc_"));
//! });
//! ```
//!
//! Paths name a group by [`GroupRef`] (numeric id or UUID) and a contact by [`ContactRef`]
//! (numeric id or `ctc_` uid), both read with [`kernel::parse_id`]: a malformed id is the
//! resource's 404. Bodies are [`NewGroup`], [`GroupPatch`], [`ContactInput`] and
//! [`NewContacts`]; a change sends only the members it changes, and `null` removes a custom
//! field (or, on a group, every custom field definition).

pub mod batch;
pub mod body;
pub mod contact;
pub mod group;
pub mod ids;
pub mod recipients;
pub mod schema;
pub mod service;

pub use batch::{BatchReport, BatchRow, NewContacts};
pub use body::{ContactCreate, ContactInput};
pub use contact::{Contact, ContactFilter, ContactSearch, ListBody, ListQuery};
pub use group::{ContactGroup, DeletedGroup, FieldInput, GroupPatch, GroupStatus, NewGroup};
pub use ids::{ContactId, ContactRef, ContactUid, GroupId, GroupRef};
pub use service::{ContactService, GROUPS_PER_PAGE};
