//! Leads CRM (contract: Lead, Lead stage, Leads): one lead per person, found again by any of its
//! identities; upserts that fill and change but never blank; stages; the timeline and the lead
//! events. Everything goes through [`LeadService`], which takes the [`kernel::Caller`] first:
//!
//! ```
//! use leads::{LeadService, UpsertLead};
//! use store::idempotency::Answer;
//! use store::testing::TestDb;
//!
//! tokio::runtime::Runtime::new().expect("runtime").block_on(async {
//!     let db = TestDb::new().await;
//!     let pool = db.pool();
//!     let mut conn = store::connect_system(&pool).await.expect("connection");
//!     let tenant = accounts::tenants::create(&mut conn, "Acme", "TZS").await.expect("tenant");
//!     let caller = kernel::Caller::operator(kernel::TenantId(tenant.id), "255");
//!     let leads = LeadService::new(pool, kernel::Clock::system(), "https://app.example.com".into());
//!
//!     let body: UpsertLead = serde_json::from_value(serde_json::json!({
//!         "phone": "0712 345 678", "name": "Amina", "stage": "qualified"
//!     }))
//!     .expect("an upsert body");
//!     let Answer::Done(upserted) = leads.upsert(&caller, body, None).await.expect("upsert") else {
//!         unreachable!("no Idempotency-Key, no replay")
//!     };
//!     assert!(upserted.created);
//!     assert_eq!(upserted.lead.phone.as_deref(), Some("+255712345678"));
//!     assert_eq!(upserted.lead.stage, leads::LeadStage::Qualified);
//! });
//! ```
//!
//! Request bodies are the types the service takes ([`UpsertLead`], [`ops::LeadPatch`],
//! [`stage::StageChange`]...): serde refuses a wrong JSON type, the service checks every rule
//! and names each bad field at once. The stage rules live in [`LeadStage`]; ids are [`LeadId`]
//! and [`LabelId`].

pub mod doc;
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
pub use stage::LeadStage;
pub use upsert::{UpsertLead, Upserted};
pub mod fields;
pub mod labels;

kernel::id!(
    /// A lead (a UUID).
    LeadId: Uuid
);
kernel::id!(
    /// A label of the workspace's leads.
    LabelId: i64
);
