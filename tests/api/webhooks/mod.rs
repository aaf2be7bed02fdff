//! Webhooks (issue 4): receivers, the catalogue, signed delivery of the outbox, retries,
//! pausing, the delivery log, replay and the address guard, through HTTP against PostgreSQL
//! with real receivers on 127.0.0.1.

mod access;
mod crash;
mod delivery;
mod fan_out;
mod pausing;
mod registration;
mod schedule;
pub(crate) mod support;
mod test_sends;
mod updates;
