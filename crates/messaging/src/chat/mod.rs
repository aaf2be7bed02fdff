//! Chat messaging on the WhatsApp Cloud API shape (contract: Chat messages, Message status):
//! business accounts and their numbers, sends of every message type, conversations with the
//! 24-hour customer window, and the provider's signed webhook (receipts, inbound messages,
//! echoes). Chat messages are `messages` rows like SMS ones (`channel_type` `chat`), sent by
//! the same dispatch (claims, throughput, receipts, billing, events) on the account's channel.

pub mod accounts;
pub mod catalogue;
pub mod content;
pub mod conversations;
pub mod forms;
pub mod groups;
pub mod orders;
pub mod send;
pub mod templates;
pub mod webhook;

pub use accounts::{ChatAccount, ChatAccounts, ChatPhoneNumber, NewChatAccount, NewPhoneNumber};
pub use conversations::{Conversation, ConversationFilter, ConversationWithMessages};
pub use send::{ChatSendRequest, ChatSendResult};
pub use templates::{Template, TemplateCreate, TemplateFilter, TemplatePatch};

/// How long an inbound message keeps the customer window open (the Cloud API's rule).
pub const WINDOW: time::Duration = time::Duration::hours(24);
