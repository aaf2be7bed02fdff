//! Webhooks against a real database, through the service and the delivery loop: the address
//! guard, the lead filters, pausing and resuming, and tenant isolation.

mod webhooks {
    pub mod rules;
    pub mod support;
}
