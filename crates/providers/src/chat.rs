//! The chat provider interface, shaped like the WhatsApp Cloud API: send one message from a
//! business phone number, manage the account's message templates, read the account and its
//! numbers, and read the provider's signed webhooks.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::chat_flows::{FlowError, FlowStatus, FlowValidation};
use crate::chat_groups::{GroupError, GroupPin, GroupRequested, GroupUpdate, NewGroup, OutboundGroupMessage};
use crate::sms::{CallbackError, SendError, SendOutcome};

/// The media a chat message can carry by link (contract: `media_type`).
pub const MEDIA_TYPES: &[&str] = &["image", "video", "audio", "document", "sticker"];

/// What one chat message says, in the Cloud API's own terms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChatContent {
    Text {
        body: String,
    },
    /// `kind` is one of [`MEDIA_TYPES`]; audio and stickers carry no caption.
    Media {
        kind: String,
        link: String,
        caption: Option<String>,
    },
    Template {
        name: String,
        language: String,
        /// Forwarded as given (contract: `template.components[]`).
        components: Vec<Value>,
    },
    /// The `interactive` object as the Cloud API takes it (`type`, `body`, `action`...).
    Interactive {
        interactive: Value,
    },
    Reaction {
        message_id: String,
        emoji: String,
    },
}

impl ChatContent {
    /// The `type` member of the Cloud API's message object.
    pub fn kind(&self) -> &str {
        match self {
            ChatContent::Text { .. } => "text",
            ChatContent::Media { kind, .. } => kind,
            ChatContent::Template { .. } => "template",
            ChatContent::Interactive { .. } => "interactive",
            ChatContent::Reaction { .. } => "reaction",
        }
    }

    /// Whether the provider takes it only inside the 24-hour customer window (everything but
    /// an approved template).
    pub fn needs_window(&self) -> bool {
        !matches!(self, ChatContent::Template { .. })
    }
}

/// One message to send.
#[derive(Debug, Clone, Copy)]
pub struct OutboundChat<'a> {
    /// Our message uid, so that a repeated send of the same message can be recognised.
    pub reference: &'a str,
    /// The business phone number's provider id.
    pub phone_number_id: &'a str,
    /// E.164 with the leading `+`.
    pub to: &'a str,
    pub content: &'a ChatContent,
    /// A provider message id this message replies to (the Cloud API's `context.message_id`).
    pub reply_to: Option<&'a str>,
}

/// A template as the provider holds it (Cloud API `message_templates`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderTemplate {
    pub id: String,
    pub name: String,
    pub language: String,
    /// `MARKETING`, `UTILITY` or `AUTHENTICATION`.
    pub category: String,
    /// The provider's word: `APPROVED`, `PENDING`, `REJECTED`, `PAUSED`, `DISABLED`...
    pub status: String,
    pub components: Vec<Value>,
    pub rejected_reason: Option<String>,
}

/// A template to submit for review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateSubmission {
    pub name: String,
    pub language: String,
    /// `MARKETING`, `UTILITY` or `AUTHENTICATION`.
    pub category: String,
    pub components: Vec<Value>,
}

/// The provider's answer to a template submission or edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateOutcome {
    /// Taken for review: the provider's template id and its status word (usually `PENDING`).
    Accepted { id: String, status: String },
    /// The provider refused the payload; the reason is the provider's own words.
    Rejected { reason: String },
}

/// A business phone number as the provider describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderPhoneNumber {
    pub id: String,
    pub display_phone_number: String,
    pub verified_name: Option<String>,
    /// `GREEN`, `YELLOW`, `RED` or `UNKNOWN`.
    pub quality_rating: Option<String>,
    /// `TIER_250`, `TIER_1K`, `TIER_10K`, `TIER_100K`, `TIER_UNLIMITED`.
    pub messaging_limit_tier: Option<String>,
}

/// A business account as the provider describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderAccount {
    pub id: String,
    pub name: Option<String>,
    pub phone_numbers: Vec<ProviderPhoneNumber>,
}

/// A chat provider (the WhatsApp Cloud API, or the sandbox that behaves like it).
#[async_trait::async_trait]
pub trait ChatGateway: Send + Sync {
    /// Sends one message. A refusal the provider states (its error object, e.g. 131047
    /// outside the 24-hour window) is `Refused` with the provider's code and words.
    async fn send(&self, message: OutboundChat<'_>) -> Result<SendOutcome, SendError>;

    /// The account's templates, every page.
    async fn templates(&self, waba_id: &str) -> Result<Vec<ProviderTemplate>, SendError>;

    /// One template by the provider's id; `None` when the provider no longer has it.
    async fn template(&self, template_id: &str) -> Result<Option<ProviderTemplate>, SendError>;

    /// Submits a new template for review.
    async fn create_template(&self, waba_id: &str, template: &TemplateSubmission)
    -> Result<TemplateOutcome, SendError>;

    /// Submits an edit of a template (its components and category) for review.
    async fn edit_template(
        &self,
        template_id: &str,
        template: &TemplateSubmission,
    ) -> Result<TemplateOutcome, SendError>;

    /// Deletes one language of a template (by name and the provider's id); deleting a
    /// template the provider no longer has is not an error.
    async fn delete_template(&self, waba_id: &str, name: &str, template_id: Option<&str>) -> Result<(), SendError>;

    /// The account's name and phone numbers with their quality rating and messaging tier.
    async fn account(&self, waba_id: &str) -> Result<ProviderAccount, SendError>;

    /// Asks for a group; the provider confirms (or fails) it later under the request id.
    async fn create_group(&self, group: NewGroup<'_>) -> Result<GroupRequested, GroupError>;

    /// Changes a group's subject and/or description.
    async fn update_group(
        &self,
        group_id: &str,
        subject: Option<&str>,
        description: Option<&str>,
    ) -> Result<(), GroupError>;

    /// Deletes a group; deleting one the provider no longer has is not an error.
    async fn delete_group(&self, group_id: &str) -> Result<(), GroupError>;

    /// The group's current invite link.
    async fn group_invite_link(&self, group_id: &str) -> Result<String, GroupError>;

    /// Revokes the invite link and answers the new one.
    async fn reset_group_invite_link(&self, group_id: &str) -> Result<String, GroupError>;

    /// Approves (or, with `approve` false, rejects) join requests by their provider ids;
    /// answers the ids the provider refused, with its words.
    async fn answer_join_requests(
        &self,
        group_id: &str,
        join_request_ids: &[String],
        approve: bool,
    ) -> Result<Vec<(String, String)>, GroupError>;

    /// Removes participants by their chat ids; answers the ids the provider refused, with its
    /// words.
    async fn remove_group_participants(
        &self,
        group_id: &str,
        wa_ids: &[String],
    ) -> Result<Vec<(String, String)>, GroupError>;

    /// Sends one message to a group (`recipient_type: group`).
    async fn send_group(&self, message: OutboundGroupMessage<'_>) -> Result<SendOutcome, SendError>;

    /// Pins or unpins one of the group's messages.
    async fn pin_group_message(&self, pin: GroupPin<'_>) -> Result<(), GroupError>;

    /// Makes a draft flow on the business account; answers the provider's flow id.
    async fn create_flow(&self, waba_id: &str, name: &str) -> Result<String, FlowError>;

    /// Gives a draft flow its Flow JSON; answers the provider's validation errors (empty when
    /// the JSON is valid).
    async fn upload_flow_json(&self, flow_id: &str, flow_json: &Value) -> Result<FlowValidation, FlowError>;

    /// Publishes a draft flow (it can no longer change).
    async fn publish_flow(&self, flow_id: &str) -> Result<(), FlowError>;

    /// Deprecates a published flow: customers who have it can no longer open it.
    async fn deprecate_flow(&self, flow_id: &str) -> Result<(), FlowError>;
}

/// A delivery status of one sent message (the webhook's `statuses[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatStatus {
    pub phone_number_id: String,
    pub provider_message_id: String,
    /// `sent`, `delivered`, `read` or `failed`.
    pub status: String,
    /// The customer's chat id.
    pub recipient_id: Option<String>,
    /// For `failed`: the provider's code, title and details in one line.
    pub error: Option<String>,
}

/// A message a customer sent (the webhook's `messages[]`), or one the business sent from its
/// own app (`message_echoes[]`, where `from` is the business and `to` the customer).
#[derive(Debug, Clone, PartialEq)]
pub struct ChatInbound {
    pub phone_number_id: String,
    /// The business number as the provider displays it.
    pub display_phone_number: String,
    pub provider_message_id: String,
    /// The customer's chat id (digits).
    pub customer: String,
    /// The customer's profile name, when the provider gave it.
    pub profile_name: Option<String>,
    /// The message `type`: text, image, video, audio, document, sticker, interactive, button,
    /// reaction, location, contacts, order...
    pub kind: String,
    /// The text a person would read: the text body, a caption, a reply's title, an emoji.
    pub text: Option<String>,
    /// The provider's media id and MIME type of a media message.
    pub media: Option<(String, Option<String>)>,
    /// The provider id of the message this one answers (`context.id`).
    pub reply_to: Option<String>,
    /// The provider's group id when the message was written in a group (`group_id`).
    pub group_id: Option<String>,
    /// The whole message object as the provider sent it.
    pub raw: Value,
}

/// A template review change (`message_template_status_update`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatTemplateStatus {
    pub waba_id: String,
    pub template_id: String,
    pub name: String,
    pub language: String,
    /// `APPROVED`, `REJECTED`, `PAUSED`, `DISABLED`, `PENDING_DELETION`...
    pub event: String,
    /// The provider's reason (`NONE` is read as none).
    pub reason: Option<String>,
}

/// A quality or tier change of a business number (`phone_number_quality_update`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatQuality {
    pub display_phone_number: String,
    /// `FLAGGED`, `UNFLAGGED`, `UPGRADE`, `DOWNGRADE`...
    pub event: String,
    pub current_limit: Option<String>,
}

/// One thing a webhook delivery reports.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatEvent {
    Status(ChatStatus),
    Inbound(ChatInbound),
    Echo(ChatInbound),
    TemplateStatus(ChatTemplateStatus),
    Quality(ChatQuality),
    /// A group's lifecycle, participants, settings or status changed (the business number's
    /// provider id, and what changed).
    Group {
        phone_number_id: String,
        update: GroupUpdate,
    },
    /// A flow's status changed (`flows` field).
    Flow(FlowStatus),
}

/// A webhook delivery read: what it reports, in order, and the fields it carried that this
/// service does not act on (kept for the log).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatWebhook {
    pub events: Vec<ChatEvent>,
    pub ignored: Vec<String>,
}

/// Reads a Cloud API webhook body (`{"object":"whatsapp_business_account","entry":[...]}`).
pub fn parse_webhook(body: &[u8]) -> Result<ChatWebhook, CallbackError> {
    crate::cloud::parse_webhook(body)
}

/// Checks `X-Hub-Signature-256` (`sha256=` and the hex HMAC-SHA256 of the raw body under the
/// app secret) in constant time.
pub fn signature_holds(app_secret: &str, body: &[u8], header: Option<&str>) -> bool {
    crate::cloud::signature_holds(app_secret, body, header)
}

/// The header value a provider would send for `body` (tests, the sandbox's own deliveries).
pub fn sign(app_secret: &str, body: &[u8]) -> String {
    crate::cloud::sign(app_secret, body)
}
