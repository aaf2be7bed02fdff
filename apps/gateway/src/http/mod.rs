//! HTTP plumbing shared by every route tree: envelopes, the JSON extractor, authentication,
//! the rate limiter, the request middleware and metrics.

pub mod auth;
pub mod data;
pub mod envelope;
pub mod html;
pub mod idempotency;
pub mod json;
pub mod metrics;
pub mod middleware;
pub mod rate_limit;

pub use auth::{Auth, LegacyRoute};
pub use envelope::{ApiError, created, ok};
pub use json::{BodyRefusal, Json};
