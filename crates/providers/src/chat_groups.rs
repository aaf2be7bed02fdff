//! Chat groups in the Cloud API's shape: a business number creates a group (the provider
//! confirms it later, by webhook), shares its invite link, answers join requests, removes
//! participants, writes to the group and pins its messages. Customers' side (joining, leaving,
//! asking to join, writing) arrives on the chat webhook as [`GroupUpdate`]s and group messages.

use std::time::Duration;

use crate::chat::ChatContent;
use crate::sms::SendError;

/// The two ways a group admits people (the Cloud API's `join_approval_mode`).
pub const JOIN_APPROVAL_MODES: &[&str] = &["auto_approve", "approval_required"];

/// A group to create.
#[derive(Debug, Clone, Copy)]
pub struct NewGroup<'a> {
    /// The business phone number's provider id that owns the group.
    pub phone_number_id: &'a str,
    pub subject: &'a str,
    pub description: Option<&'a str>,
    /// One of [`JOIN_APPROVAL_MODES`].
    pub join_approval_mode: &'a str,
}

/// The provider took a creation request; it reports the outcome later under `request_id`.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupRequested {
    pub request_id: String,
    /// Set only by the sandbox, which announces its confirmation up front: what it will
    /// report, and after how long (the Cloud API reports by webhook instead).
    pub scheduled: Option<(Duration, GroupUpdate)>,
}

/// A pending request to join a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinRequest {
    pub join_request_id: String,
    /// The customer's chat id (digits).
    pub wa_id: String,
}

/// What the provider reports about a group (webhook fields `group_lifecycle_update`,
/// `group_participants_update`, `group_settings_update` and `group_status_update`).
#[derive(Debug, Clone, PartialEq)]
pub enum GroupUpdate {
    /// A creation succeeded: the provider's group id and its invite link.
    Created { request_id: String, group_id: String, invite_link: Option<String> },
    /// A creation failed, in the provider's words.
    CreateFailed { request_id: String, reason: String },
    /// The group was deleted.
    Deleted { group_id: String },
    /// People joined (by the invite link, or approved).
    Joined { group_id: String, wa_ids: Vec<String> },
    /// People left; `removed` when the business removed them.
    Left { group_id: String, wa_ids: Vec<String>, removed: bool },
    /// A customer asked to join a group whose mode is `approval_required`.
    JoinRequested { group_id: String, request: JoinRequest },
    /// A customer withdrew their request.
    JoinRequestRevoked { group_id: String, join_request_id: String },
    /// The subject or description changed (on the provider's side too).
    Settings { group_id: String, subject: Option<String>, description: Option<String> },
    /// The provider suspended the group: nothing can be sent to it.
    Suspended { group_id: String },
    /// The provider lifted a suspension.
    SuspensionCleared { group_id: String },
}

impl GroupUpdate {
    /// The provider's group id, when the update names one (a creation outcome names its
    /// request instead, and the group id only on success).
    pub fn group_id(&self) -> Option<&str> {
        match self {
            GroupUpdate::CreateFailed { .. } => None,
            GroupUpdate::Created { group_id, .. }
            | GroupUpdate::Deleted { group_id }
            | GroupUpdate::Joined { group_id, .. }
            | GroupUpdate::Left { group_id, .. }
            | GroupUpdate::JoinRequested { group_id, .. }
            | GroupUpdate::JoinRequestRevoked { group_id, .. }
            | GroupUpdate::Settings { group_id, .. }
            | GroupUpdate::Suspended { group_id }
            | GroupUpdate::SuspensionCleared { group_id } => Some(group_id),
        }
    }
}

/// One message to a group.
#[derive(Debug, Clone, Copy)]
pub struct OutboundGroupMessage<'a> {
    /// Our message uid.
    pub reference: &'a str,
    pub phone_number_id: &'a str,
    pub group_id: &'a str,
    pub content: &'a ChatContent,
}

/// A message to pin or unpin in a group.
#[derive(Debug, Clone, Copy)]
pub struct GroupPin<'a> {
    pub phone_number_id: &'a str,
    pub group_id: &'a str,
    /// The provider's id of the message.
    pub message_id: &'a str,
    /// `false` unpins.
    pub pin: bool,
    /// 1 to 30; `None` leaves the provider's default.
    pub expiration_days: Option<u8>,
}

/// A group call the provider did not carry out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    /// The provider answered with its error object: its words (and code) for why.
    #[error("{reason}")]
    Refused { reason: String },
    /// The provider could not be reached or its answer could not be read.
    #[error(transparent)]
    Failed(#[from] SendError),
}
