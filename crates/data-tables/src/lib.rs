//! Data tables (contract: Data table, column and record; Data record status fields; Data
//! tables). Apply a definition for a tenant, then write and read its records as a caller:
//!
//! ```
//! use data_tables::{DataService, RecordWrite, TableId};
//! use kernel::{Caller, Clock, TenantId};
//! use serde_json::json;
//!
//! tokio::runtime::Runtime::new().unwrap().block_on(async {
//!     let db = store::testing::TestDb::new().await;
//!     let pool = db.pool();
//!     let mut conn = store::connect_system(&pool).await.unwrap();
//!     let tenant = TenantId(accounts::tenants::create(&mut conn, "Duka", "TZS").await.unwrap().id);
//!     let data = DataService::new(pool, Clock::system(), "https://api.example.com");
//!     let definition = json!({
//!         "group": {"slug": "crm", "name": "CRM"},
//!         "tables": [{"slug": "customers", "name": "Customers",
//!                     "columns": [{"key": "name", "type": "text", "required": true}]}],
//!     });
//!     let table = TableId(data.apply(tenant, definition).await.unwrap().tables[0].id);
//!
//!     let caller = Caller::operator(tenant, "255");
//!     let record = data.create_record(&caller, table, &RecordWrite::of(json!({"name": "Amina"}))).await.unwrap();
//!     assert_eq!(record.data["name"], "Amina");
//! });
//! ```
//!
//! Tables a workspace defines for itself, with typed columns, unique values, state
//! machines, filter trees over keyset pages, and a history of every change.
//!
//! Records live in one table as JSONB keyed by column key; what makes them behave like a real
//! database's rows is here: values read by type into one stored form, unique keys in their own
//! table, and per-table partial indexes built in the background.

pub mod apply;
pub mod definition;
pub mod describe;
pub mod files;
pub mod filter;
pub mod groups;
pub mod history;
pub mod records;
mod service;
mod sql;
pub mod states;
pub mod values;

pub use apply::Applied;
pub use records::Record;
pub use records::write::RecordWrite;
pub use service::{DataService, View};

kernel::id!(
    /// An account-defined table (`/data/tables/{table}`).
    TableId: Uuid
);
kernel::id!(
    /// A record of a table (`/data/tables/{table}/records/{record}`).
    RecordId: Uuid
);

/// A serialized record's `data` fits in this many bytes (contract: Limits).
pub const RECORD_BYTES: usize = 8_192;
/// `q` searches at most this many columns (contract: Limits).
pub const SEARCH_COLUMNS: usize = 6;
/// Record pages (contract: Limits).
pub const PAGE_DEFAULT: i64 = 50;
pub const PAGE_MAX: i64 = 200;
/// History entries per page unless `limit` says otherwise.
pub const HISTORY_PAGE: i64 = kernel::page::Timeline::DEFAULT_LIMIT;
