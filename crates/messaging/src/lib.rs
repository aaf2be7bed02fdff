//! SMS messaging and campaigns (contract: Message, Campaign, Message status, Campaign status,
//! SMS): recipients and segments, routing through the account's channels, billing from the
//! wallet, dispatch as jobs, receipts, inbound messages and opt-out.

pub mod blacklist;
pub mod campaigns;
pub mod channels;
pub mod dispatch;
pub mod events;
pub mod gateways;
pub mod ids;
pub mod messages;
pub mod personalize;
pub mod receipts;
pub mod recipients;
mod schema;
pub mod segments;
pub mod send;
mod service;
pub mod status;

pub use messages::{Message, MessageFilter, MessageRef};
pub use send::{SendRequest, SendResult};
pub use service::{MessagingConfig, MessagingService};
