//! Accounts: tenants and their status, users who issue keys and their permissions, API keys and
//! MCP connections, OAuth clients and grants and the sign-in of the consent page, the wallet and its ledger, and per-tenant module switches. The admin CLI and
//! the gateway's authentication both go through here.

pub mod demo;
pub mod key_cache;
pub mod keys;
pub mod mcp_connections;
pub mod modules;
pub mod oauth;
pub mod profile;
pub mod schema;
pub mod sign_in;
pub mod tenants;
pub mod users;
pub mod wallet;

pub use key_cache::KeyCache;
pub use keys::{ApiKey, IssuedKey, KeyRecord};
pub use tenants::{Tenant, TenantStatus};
pub use users::User;
pub use wallet::Wallet;
