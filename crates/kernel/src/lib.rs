//! The shared vocabulary of the workspace. No I/O lives here: ids, the authenticated
//! [`Caller`] and its permissions, the one [`Error`] type every domain returns, page requests
//! and pages, phone numbers and the [`Clock`] that tests can move.

// `id!` names serde by the path `kernel::...`, which must also resolve inside this crate.
extern crate self as kernel;

pub mod body;
pub mod caller;
pub mod clock;
pub mod email;
pub mod error;
pub mod ids;
pub mod money;
pub mod object;
pub mod page;
pub mod patch;
pub mod phone;
pub mod schema;
pub mod state;

pub use caller::{Caller, CredentialKind, Issuer, Permission};
pub use clock::Clock;
pub use error::{Error, ErrorKind, Result};
pub use ids::{ApiKeyId, TenantId, UserId, parse_id};
pub use page::{Page, PageRequest, Pagination};
pub use patch::Patch;
