//! In-chat forms in the Cloud API's shape (WhatsApp Flows): a flow is made on a business
//! account, given its Flow JSON, then published; a published flow cannot change, so each form
//! version is a flow of its own, and the previous one is deprecated when it retires. Replies
//! arrive as inbound `interactive` messages of type `nfm_reply` (read by the messaging crate);
//! status changes (`PUBLISHED`, `THROTTLED`, `BLOCKED`...) arrive on the `flows` webhook field.

use crate::chat_groups::GroupError;

/// A flow call the provider did not carry out: its words, or a failure to reach it (the same
/// two cases as a group call).
pub type FlowError = GroupError;

/// What the provider said of a Flow JSON it was given: its validation errors (none when the
/// JSON is valid), each in the provider's words with where it applies.
pub type FlowValidation = Vec<String>;

/// A flow's status change (the `flows` webhook field, event `FLOW_STATUS_CHANGE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowStatus {
    pub flow_id: String,
    /// `DRAFT`, `PUBLISHED`, `THROTTLED`, `BLOCKED`, `DEPRECATED`.
    pub new_status: String,
    pub old_status: Option<String>,
}
