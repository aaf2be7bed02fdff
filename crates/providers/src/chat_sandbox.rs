//! The sandbox chat provider: the default when a chat account names no real provider. Like the
//! SMS sandbox, the recipient's last four digits decide what happens to a message, and a
//! template's name decides its review, a group's subject whether it is created, and a flow's
//! screen titles whether it can be published; everything it was asked is recorded so tests can
//! look.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::chat::{
    ChatContent, ChatGateway, OutboundChat, ProviderAccount, ProviderTemplate, TemplateOutcome, TemplateSubmission,
};
use crate::chat_flows::{FlowError, FlowValidation};
use crate::chat_groups::{GroupError, GroupPin, GroupRequested, GroupUpdate, NewGroup, OutboundGroupMessage};
use crate::sms::{ReceiptStatus, ScheduledReceipt, SendError, SendOutcome};

const REFUSED_REASON: &str = "(#131026) Sandbox: numbers ending in 0001 are refused: message undeliverable";
const FAILED_REASON: &str = "(#131000) Sandbox: numbers ending in 0003 fail after they are sent";
/// The Cloud API's refusal of a free-form message outside the customer window.
pub const WINDOW_REASON: &str = "(#131047) Re-engagement message: more than 24 hours have passed since the \
                                 recipient last replied to the sender number";
const REJECTED_REASON: &str = "INVALID_FORMAT: Sandbox: template names starting with reject_ are rejected";
/// Why a group whose subject starts with `fail_` is not created.
pub const GROUP_FAILED_REASON: &str = "Sandbox: groups whose subject starts with fail_ are not created";
/// The validation error of a Flow JSON with a screen whose title contains `BLOCKED` (so that a
/// publish can be refused on purpose).
pub const FLOW_BLOCKED_REASON: &str = "Sandbox: screens titled BLOCKED are refused";

/// Where the sandbox reads the time of day (the service's clock, so tests can move it).
pub type Now = Arc<dyn Fn() -> SystemTime + Send + Sync>;

#[derive(Clone)]
pub struct ChatSandboxConfig {
    /// After acceptance: the delivered receipt after this long, the read receipt after twice.
    pub delivery_delay: Duration,
    /// How long a submitted template stays in review.
    pub template_review: Duration,
    /// After a group creation is taken: when its outcome (created, or failed) is reported.
    pub group_delay: Duration,
    /// How many recent messages the record keeps.
    pub keep: usize,
    pub now: Now,
}

impl Default for ChatSandboxConfig {
    fn default() -> Self {
        Self {
            delivery_delay: Duration::from_millis(1000),
            template_review: Duration::from_millis(2000),
            group_delay: Duration::from_millis(1000),
            keep: crate::sandbox::DEFAULT_KEEP,
            now: Arc::new(SystemTime::now),
        }
    }
}

impl std::fmt::Debug for ChatSandboxConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatSandboxConfig")
            .field("delivery_delay", &self.delivery_delay)
            .field("template_review", &self.template_review)
            .field("group_delay", &self.group_delay)
            .field("keep", &self.keep)
            .finish_non_exhaustive()
    }
}

/// What the sandbox decided for a message, from the recipient's last four digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatOutcome {
    /// `...0001`: refused at send.
    Refused,
    /// `...0002`: accepted, never receipted.
    NoReceipt,
    /// `...0003`: accepted, then a failed status.
    FailsDelivery,
    /// `...0004`: delivered, never read.
    DeliveredUnread,
    /// `...0005`: refused as outside the 24-hour window (131047), unless it is a template.
    OutsideWindow,
    /// Any other number: delivered, then read.
    Read,
}

impl ChatOutcome {
    pub fn for_number(to: &str) -> ChatOutcome {
        let digits: Vec<u8> = to.bytes().filter(u8::is_ascii_digit).collect();
        match digits.len().checked_sub(4).map(|start| &digits[start..]) {
            Some(b"0001") => ChatOutcome::Refused,
            Some(b"0002") => ChatOutcome::NoReceipt,
            Some(b"0003") => ChatOutcome::FailsDelivery,
            Some(b"0004") => ChatOutcome::DeliveredUnread,
            Some(b"0005") => ChatOutcome::OutsideWindow,
            _ => ChatOutcome::Read,
        }
    }
}

/// One message the sandbox was asked to send (the first call for its reference).
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxChat {
    pub reference: String,
    pub phone_number_id: String,
    pub to: String,
    pub content: ChatContent,
    pub reply_to: Option<String>,
    /// `None` when refused.
    pub provider_message_id: Option<String>,
    pub outcome: ChatOutcome,
}

/// A group the sandbox was asked to create, as it stands now.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxGroup {
    pub phone_number_id: String,
    /// `sbx-greq-<n>`.
    pub request_id: String,
    /// `sbx-grp-<n>`; `None` when its creation fails (a subject starting with `fail_`).
    pub group_id: Option<String>,
    pub subject: String,
    pub description: Option<String>,
    pub join_approval_mode: String,
    /// The current invite link; a reset replaces it.
    pub invite_link: Option<String>,
    pub deleted: bool,
    /// The join request ids answered, in order, with `true` for approved.
    pub join_answers: Vec<(String, bool)>,
    /// The chat ids asked to be removed, in order.
    pub removed: Vec<String>,
    /// The pins and unpins asked, in order.
    pub pins: Vec<SandboxPin>,
}

/// A pin or unpin the sandbox was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPin {
    pub message_id: String,
    /// `false` unpins.
    pub pin: bool,
    pub expiration_days: Option<u8>,
}

/// One message the sandbox was asked to send to a group (the first call for its reference).
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxGroupChat {
    pub reference: String,
    pub phone_number_id: String,
    pub group_id: String,
    pub content: ChatContent,
    pub provider_message_id: String,
}

/// A flow the sandbox was asked to make, as it stands now.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxFlow {
    /// `sbx-flow-<n>`.
    pub id: String,
    pub waba_id: String,
    pub name: String,
    /// The last Flow JSON it was given, valid or not.
    pub json: Option<Value>,
    /// The validation errors of that JSON (what the upload answered).
    pub validation_errors: FlowValidation,
    /// `DRAFT`, `PUBLISHED` or `DEPRECATED`.
    pub status: String,
}

#[derive(Debug, Clone)]
struct Template {
    waba_id: String,
    template: ProviderTemplate,
    submitted_at: SystemTime,
}

#[derive(Default)]
struct Record {
    messages: std::collections::VecDeque<SandboxChat>,
    by_reference: HashMap<String, usize>,
    first: usize,
    templates: Vec<Template>,
    next_template: u64,
    groups: Vec<SandboxGroup>,
    next_group: u64,
    group_messages: std::collections::VecDeque<SandboxGroupChat>,
    flows: Vec<SandboxFlow>,
    next_flow: u64,
}

impl Record {
    /// A group it created and has not deleted.
    fn live_group(&mut self, group_id: &str) -> Option<&mut SandboxGroup> {
        self.groups.iter_mut().find(|g| !g.deleted && g.group_id.as_deref() == Some(group_id))
    }

    /// A flow it made, or the refusal of a call about one it did not.
    fn flow(&mut self, flow_id: &str) -> Result<&mut SandboxFlow, FlowError> {
        self.flows
            .iter_mut()
            .find(|f| f.id == flow_id)
            .ok_or_else(|| FlowError::Refused { reason: format!("(#100) Sandbox: flow {flow_id} does not exist") })
    }
}

const DRAFT: &str = "DRAFT";
const PUBLISHED: &str = "PUBLISHED";
const DEPRECATED: &str = "DEPRECATED";

/// A little of what the provider checks in a Flow JSON: an object with a `version` string and
/// a non-empty `screens` array, each screen with an `id`; and the sandbox's own rule, that no
/// screen's title contains `BLOCKED`.
fn validate_flow_json(json: &Value) -> FlowValidation {
    let Some(flow) = json.as_object() else {
        return vec!["Sandbox: the Flow JSON must be an object".to_owned()];
    };
    let mut errors = Vec::new();
    if flow.get("version").and_then(Value::as_str).is_none_or(str::is_empty) {
        errors.push("Sandbox: the Flow JSON needs a version (a string, e.g. \"7.1\")".to_owned());
    }
    match flow.get("screens").and_then(Value::as_array) {
        Some(screens) if !screens.is_empty() => {
            for (s, screen) in screens.iter().enumerate() {
                if screen.get("id").and_then(Value::as_str).is_none_or(str::is_empty) {
                    errors.push(format!("Sandbox: screens[{s}] has no id"));
                }
                if screen.get("title").and_then(Value::as_str).is_some_and(|title| title.contains("BLOCKED")) {
                    errors.push(FLOW_BLOCKED_REASON.to_owned());
                }
            }
        }
        _ => errors.push("Sandbox: the Flow JSON needs a non-empty screens array".to_owned()),
    }
    errors
}

fn flow_refused(reason: String) -> FlowError {
    FlowError::Refused { reason }
}

/// The refusal of a call about a group the sandbox does not have.
fn no_such_group(group_id: &str) -> GroupError {
    GroupError::Refused { reason: format!("(#100) Sandbox: group {group_id} does not exist") }
}

fn invite_link() -> String {
    format!("https://chat.whatsapp.com/sbx{}", uuid::Uuid::new_v4().simple())
}

/// The sandbox chat provider, shared as `Arc<ChatSandbox>` across the process.
pub struct ChatSandbox {
    config: ChatSandboxConfig,
    record: Mutex<Record>,
}

impl ChatSandbox {
    pub fn new(config: ChatSandboxConfig) -> Self {
        Self { config, record: Mutex::new(Record::default()) }
    }

    pub fn config(&self) -> &ChatSandboxConfig {
        &self.config
    }

    /// The distinct messages asked for, in order (the most recent `keep` of them).
    pub fn sent(&self) -> Vec<SandboxChat> {
        self.record().messages.iter().cloned().collect()
    }

    /// The messages asked for to one number (E.164, as given to `send`).
    pub fn sent_to(&self, to: &str) -> Vec<SandboxChat> {
        self.record().messages.iter().filter(|m| m.to == to).cloned().collect()
    }

    /// The groups asked for, in order, as they stand now (deleted ones too).
    pub fn groups(&self) -> Vec<SandboxGroup> {
        self.record().groups.clone()
    }

    /// One group by the id it was given.
    pub fn group(&self, group_id: &str) -> Option<SandboxGroup> {
        self.record().groups.iter().find(|g| g.group_id.as_deref() == Some(group_id)).cloned()
    }

    /// The distinct group messages asked for, in order (the most recent `keep` of them).
    pub fn group_messages(&self) -> Vec<SandboxGroupChat> {
        self.record().group_messages.iter().cloned().collect()
    }

    /// The flows it made, in order, as they stand now.
    pub fn flows(&self) -> Vec<SandboxFlow> {
        self.record().flows.clone()
    }

    /// One flow by the id it was given.
    pub fn flow(&self, flow_id: &str) -> Option<SandboxFlow> {
        self.record().flows.iter().find(|f| f.id == flow_id).cloned()
    }

    /// A panic elsewhere while holding the lock leaves the record usable.
    fn record(&self) -> MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn answer(&self, message: &SandboxChat) -> SendOutcome {
        let Some(id) = &message.provider_message_id else {
            let reason = match message.outcome {
                ChatOutcome::OutsideWindow => WINDOW_REASON,
                _ => REFUSED_REASON,
            };
            return SendOutcome::Refused { reason: reason.to_owned() };
        };
        let delay = self.config.delivery_delay;
        let receipt = |after, status| ScheduledReceipt { after, status };
        let receipts = match message.outcome {
            ChatOutcome::NoReceipt | ChatOutcome::Refused => Vec::new(),
            ChatOutcome::FailsDelivery => {
                vec![receipt(delay, ReceiptStatus::Failed { reason: FAILED_REASON.to_owned() })]
            }
            ChatOutcome::DeliveredUnread => vec![receipt(delay, ReceiptStatus::Delivered)],
            // a template may open a conversation outside the window
            ChatOutcome::OutsideWindow | ChatOutcome::Read => {
                vec![receipt(delay, ReceiptStatus::Delivered), receipt(delay * 2, ReceiptStatus::Read)]
            }
        };
        SendOutcome::Accepted { provider_message_id: id.clone(), cost: None, receipts }
    }

    /// A template as it stands now: its review ends `template_review` after submission.
    fn reviewed(&self, template: &Template) -> ProviderTemplate {
        let mut current = template.template.clone();
        let elapsed = (self.config.now)().duration_since(template.submitted_at).unwrap_or_default();
        if current.status == "PENDING" && elapsed >= self.config.template_review {
            if current.name.starts_with("reject_") {
                current.status = "REJECTED".to_owned();
                current.rejected_reason = Some(REJECTED_REASON.to_owned());
            } else {
                current.status = "APPROVED".to_owned();
            }
        }
        current
    }

    fn review(&self, template: &TemplateSubmission) -> Result<(), SendError> {
        if template.name.starts_with("unreachable_") {
            return Err(SendError::Transport(
                "Sandbox: template names starting with unreachable_ cannot be sent".into(),
            ));
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl ChatGateway for ChatSandbox {
    async fn send(&self, message: OutboundChat<'_>) -> Result<SendOutcome, SendError> {
        let mut record = self.record();
        // Idempotent on the reference: a repeat gets the first answer and records nothing new.
        if let Some(sent) = record
            .by_reference
            .get(message.reference)
            .and_then(|&n| n.checked_sub(record.first))
            .and_then(|i| record.messages.get(i))
        {
            return Ok(self.answer(sent));
        }
        let outcome = match ChatOutcome::for_number(message.to) {
            ChatOutcome::OutsideWindow if !message.content.needs_window() => ChatOutcome::Read,
            outcome => outcome,
        };
        let refused = matches!(outcome, ChatOutcome::Refused | ChatOutcome::OutsideWindow);
        let sent = SandboxChat {
            reference: message.reference.to_owned(),
            phone_number_id: message.phone_number_id.to_owned(),
            to: message.to.to_owned(),
            content: message.content.clone(),
            reply_to: message.reply_to.map(str::to_owned),
            provider_message_id: (!refused).then(|| format!("wamid.sbx{}", uuid::Uuid::new_v4().simple())),
            outcome,
        };
        let number = record.first + record.messages.len();
        record.by_reference.insert(sent.reference.clone(), number);
        let answer = self.answer(&sent);
        record.messages.push_back(sent);
        while record.messages.len() > self.config.keep.max(1) {
            if let Some(old) = record.messages.pop_front() {
                record.by_reference.remove(&old.reference);
                record.first += 1;
            }
        }
        Ok(answer)
    }

    async fn templates(&self, waba_id: &str) -> Result<Vec<ProviderTemplate>, SendError> {
        let record = self.record();
        Ok(record.templates.iter().filter(|t| t.waba_id == waba_id).map(|t| self.reviewed(t)).collect())
    }

    async fn template(&self, template_id: &str) -> Result<Option<ProviderTemplate>, SendError> {
        let record = self.record();
        Ok(record.templates.iter().find(|t| t.template.id == template_id).map(|t| self.reviewed(t)))
    }

    async fn create_template(
        &self,
        waba_id: &str,
        template: &TemplateSubmission,
    ) -> Result<TemplateOutcome, SendError> {
        self.review(template)?;
        let mut record = self.record();
        let taken = record.templates.iter().any(|t| {
            t.waba_id == waba_id && t.template.name == template.name && t.template.language == template.language
        });
        if taken {
            return Ok(TemplateOutcome::Rejected {
                reason: format!(
                    "(#2388024) Content in this language already exists: {} ({})",
                    template.name, template.language
                ),
            });
        }
        record.next_template += 1;
        let id = format!("{}", 9_000_000_000_u64 + record.next_template);
        record.templates.push(Template {
            waba_id: waba_id.to_owned(),
            template: ProviderTemplate {
                id: id.clone(),
                name: template.name.clone(),
                language: template.language.clone(),
                category: template.category.clone(),
                status: "PENDING".to_owned(),
                components: template.components.clone(),
                rejected_reason: None,
            },
            submitted_at: (self.config.now)(),
        });
        Ok(TemplateOutcome::Accepted { id, status: "PENDING".to_owned() })
    }

    async fn edit_template(
        &self,
        template_id: &str,
        template: &TemplateSubmission,
    ) -> Result<TemplateOutcome, SendError> {
        self.review(template)?;
        let now = (self.config.now)();
        let mut record = self.record();
        let Some(stored) = record.templates.iter_mut().find(|t| t.template.id == template_id) else {
            return Ok(TemplateOutcome::Rejected { reason: format!("(#100) Template {template_id} does not exist") });
        };
        stored.template.components = template.components.clone();
        stored.template.category = template.category.clone();
        stored.template.status = "PENDING".to_owned();
        stored.template.rejected_reason = None;
        stored.submitted_at = now;
        Ok(TemplateOutcome::Accepted { id: template_id.to_owned(), status: "PENDING".to_owned() })
    }

    async fn delete_template(&self, waba_id: &str, name: &str, template_id: Option<&str>) -> Result<(), SendError> {
        self.record().templates.retain(|t| {
            !(t.waba_id == waba_id && t.template.name == name && template_id.is_none_or(|id| t.template.id == id))
        });
        Ok(())
    }

    async fn account(&self, waba_id: &str) -> Result<ProviderAccount, SendError> {
        // The sandbox knows no numbers of its own; the service keeps the ones it was given.
        Ok(ProviderAccount { id: waba_id.to_owned(), name: None, phone_numbers: Vec::new() })
    }

    async fn create_group(&self, group: NewGroup<'_>) -> Result<GroupRequested, GroupError> {
        let mut record = self.record();
        record.next_group += 1;
        let n = record.next_group;
        let request_id = format!("sbx-greq-{n}");
        let fails = group.subject.starts_with("fail_");
        let group_id = (!fails).then(|| format!("sbx-grp-{n}"));
        let invite_link = group_id.as_ref().map(|_| invite_link());
        let update = match &group_id {
            Some(group_id) => GroupUpdate::Created {
                request_id: request_id.clone(),
                group_id: group_id.clone(),
                invite_link: invite_link.clone(),
            },
            None => {
                GroupUpdate::CreateFailed { request_id: request_id.clone(), reason: GROUP_FAILED_REASON.to_owned() }
            }
        };
        record.groups.push(SandboxGroup {
            phone_number_id: group.phone_number_id.to_owned(),
            request_id: request_id.clone(),
            group_id,
            subject: group.subject.to_owned(),
            description: group.description.map(str::to_owned),
            join_approval_mode: group.join_approval_mode.to_owned(),
            invite_link,
            deleted: false,
            join_answers: Vec::new(),
            removed: Vec::new(),
            pins: Vec::new(),
        });
        Ok(GroupRequested { request_id, scheduled: Some((self.config.group_delay, update)) })
    }

    async fn update_group(
        &self,
        group_id: &str,
        subject: Option<&str>,
        description: Option<&str>,
    ) -> Result<(), GroupError> {
        let mut record = self.record();
        let group = record.live_group(group_id).ok_or_else(|| no_such_group(group_id))?;
        if let Some(subject) = subject {
            group.subject = subject.to_owned();
        }
        if let Some(description) = description {
            group.description = Some(description.to_owned());
        }
        Ok(())
    }

    async fn delete_group(&self, group_id: &str) -> Result<(), GroupError> {
        if let Some(group) = self.record().live_group(group_id) {
            group.deleted = true;
        }
        Ok(())
    }

    async fn group_invite_link(&self, group_id: &str) -> Result<String, GroupError> {
        let mut record = self.record();
        let group = record.live_group(group_id).ok_or_else(|| no_such_group(group_id))?;
        Ok(group.invite_link.get_or_insert_with(invite_link).clone())
    }

    async fn reset_group_invite_link(&self, group_id: &str) -> Result<String, GroupError> {
        let mut record = self.record();
        let group = record.live_group(group_id).ok_or_else(|| no_such_group(group_id))?;
        let link = invite_link();
        group.invite_link = Some(link.clone());
        Ok(link)
    }

    async fn answer_join_requests(
        &self,
        group_id: &str,
        join_request_ids: &[String],
        approve: bool,
    ) -> Result<Vec<(String, String)>, GroupError> {
        if let Some(group) = self.record().live_group(group_id) {
            group.join_answers.extend(join_request_ids.iter().map(|id| (id.clone(), approve)));
        }
        Ok(Vec::new())
    }

    async fn remove_group_participants(
        &self,
        group_id: &str,
        wa_ids: &[String],
    ) -> Result<Vec<(String, String)>, GroupError> {
        if let Some(group) = self.record().live_group(group_id) {
            group.removed.extend(wa_ids.iter().cloned());
        }
        Ok(Vec::new())
    }

    async fn send_group(&self, message: OutboundGroupMessage<'_>) -> Result<SendOutcome, SendError> {
        let mut record = self.record();
        // Idempotent on the reference, like `send`
        let provider_message_id = match record.group_messages.iter().find(|m| m.reference == message.reference) {
            Some(sent) => sent.provider_message_id.clone(),
            None => {
                let provider_message_id = format!("wamid.sbx{}", uuid::Uuid::new_v4().simple());
                record.group_messages.push_back(SandboxGroupChat {
                    reference: message.reference.to_owned(),
                    phone_number_id: message.phone_number_id.to_owned(),
                    group_id: message.group_id.to_owned(),
                    content: message.content.clone(),
                    provider_message_id: provider_message_id.clone(),
                });
                while record.group_messages.len() > self.config.keep.max(1) {
                    record.group_messages.pop_front();
                }
                provider_message_id
            }
        };
        let delay = self.config.delivery_delay;
        let receipts = vec![
            ScheduledReceipt { after: delay, status: ReceiptStatus::Delivered },
            ScheduledReceipt { after: delay * 2, status: ReceiptStatus::Read },
        ];
        Ok(SendOutcome::Accepted { provider_message_id, cost: None, receipts })
    }

    async fn pin_group_message(&self, pin: GroupPin<'_>) -> Result<(), GroupError> {
        let mut record = self.record();
        let group = record.live_group(pin.group_id).ok_or_else(|| no_such_group(pin.group_id))?;
        group.pins.push(SandboxPin {
            message_id: pin.message_id.to_owned(),
            pin: pin.pin,
            expiration_days: pin.expiration_days.filter(|_| pin.pin),
        });
        Ok(())
    }

    async fn create_flow(&self, waba_id: &str, name: &str) -> Result<String, FlowError> {
        if name.trim().is_empty() {
            return Err(flow_refused("(#100) Sandbox: a flow needs a name".to_owned()));
        }
        let mut record = self.record();
        record.next_flow += 1;
        let id = format!("sbx-flow-{}", record.next_flow);
        record.flows.push(SandboxFlow {
            id: id.clone(),
            waba_id: waba_id.to_owned(),
            name: name.to_owned(),
            json: None,
            validation_errors: Vec::new(),
            status: DRAFT.to_owned(),
        });
        Ok(id)
    }

    /// Kept even when invalid, as the provider does; only a draft takes one.
    async fn upload_flow_json(&self, flow_id: &str, flow_json: &Value) -> Result<FlowValidation, FlowError> {
        let mut record = self.record();
        let flow = record.flow(flow_id)?;
        if flow.status != DRAFT {
            return Err(flow_refused(format!(
                "Sandbox: flow {flow_id} is {}: only a draft takes a new Flow JSON",
                flow.status
            )));
        }
        let errors = validate_flow_json(flow_json);
        flow.json = Some(flow_json.clone());
        flow.validation_errors = errors.clone();
        Ok(errors)
    }

    /// Publishing a published flow again changes nothing.
    async fn publish_flow(&self, flow_id: &str) -> Result<(), FlowError> {
        let mut record = self.record();
        let flow = record.flow(flow_id)?;
        match flow.status.as_str() {
            PUBLISHED => return Ok(()),
            DRAFT => {}
            other => {
                return Err(flow_refused(format!("Sandbox: flow {flow_id} is {other}: only a draft can be published")));
            }
        }
        if flow.json.is_none() {
            return Err(flow_refused(format!("Sandbox: flow {flow_id} has no Flow JSON to publish")));
        }
        if !flow.validation_errors.is_empty() {
            let errors = flow.validation_errors.join("; ");
            return Err(flow_refused(format!("Sandbox: flow {flow_id} has validation errors: {errors}")));
        }
        flow.status = PUBLISHED.to_owned();
        Ok(())
    }

    /// Deprecating a deprecated flow again changes nothing.
    async fn deprecate_flow(&self, flow_id: &str) -> Result<(), FlowError> {
        let mut record = self.record();
        let flow = record.flow(flow_id)?;
        match flow.status.as_str() {
            PUBLISHED => flow.status = DEPRECATED.to_owned(),
            DEPRECATED => {}
            other => {
                return Err(flow_refused(format!(
                    "Sandbox: flow {flow_id} is {other}: only a published flow can be deprecated"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox(now: Now) -> ChatSandbox {
        ChatSandbox::new(ChatSandboxConfig { delivery_delay: Duration::from_millis(5), now, ..Default::default() })
    }

    fn text() -> ChatContent {
        ChatContent::Text { body: "hi".into() }
    }

    async fn send(sandbox: &ChatSandbox, reference: &str, to: &str, content: &ChatContent) -> SendOutcome {
        let message = OutboundChat { reference, phone_number_id: "pn1", to, content, reply_to: None };
        sandbox.send(message).await.expect("send")
    }

    fn statuses(outcome: &SendOutcome) -> Vec<(u128, ReceiptStatus)> {
        match outcome {
            SendOutcome::Accepted { receipts, .. } => {
                receipts.iter().map(|r| (r.after.as_millis(), r.status.clone())).collect()
            }
            other => panic!("accepted, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn number_endings_decide_each_message() {
        let sandbox = sandbox(Arc::new(SystemTime::now));
        let read = send(&sandbox, "m0", "+255712340000", &text()).await;
        assert_eq!(statuses(&read), [(5, ReceiptStatus::Delivered), (10, ReceiptStatus::Read)]);
        let SendOutcome::Refused { reason } = send(&sandbox, "m1", "+255712340001", &text()).await else {
            panic!("refused")
        };
        assert!(reason.contains("0001"));
        assert_eq!(statuses(&send(&sandbox, "m2", "+255712340002", &text()).await), []);
        let failed = statuses(&send(&sandbox, "m3", "+255712340003", &text()).await);
        assert!(matches!(&failed[..], [(5, ReceiptStatus::Failed { reason })] if reason.contains("0003")));
        assert_eq!(statuses(&send(&sandbox, "m4", "+255712340004", &text()).await), [(5, ReceiptStatus::Delivered)]);
        let outside = send(&sandbox, "m5", "+255712340005", &text()).await;
        assert_eq!(outside, SendOutcome::Refused { reason: WINDOW_REASON.to_owned() });
        // a template may start a conversation: the window does not apply to it
        let template = ChatContent::Template { name: "hello".into(), language: "en".into(), components: vec![] };
        assert_eq!(statuses(&send(&sandbox, "m6", "+255712340005", &template).await).len(), 2);
        assert_eq!(sandbox.sent().len(), 7);
        assert_eq!(sandbox.sent_to("+255712340005")[1].content, template);
    }

    #[tokio::test]
    async fn a_repeated_reference_gets_the_first_answer() {
        let sandbox = sandbox(Arc::new(SystemTime::now));
        let first = send(&sandbox, "m0", "+255712340000", &text()).await;
        assert_eq!(send(&sandbox, "m0", "+255712340000", &text()).await, first);
        assert_eq!(sandbox.sent().len(), 1);
    }

    #[tokio::test]
    async fn templates_are_reviewed_by_name_after_the_review_time() {
        let clock = Arc::new(Mutex::new(SystemTime::UNIX_EPOCH));
        let now = {
            let clock = clock.clone();
            Arc::new(move || *clock.lock().expect("clock")) as Now
        };
        let sandbox = sandbox(now);
        let submission = |name: &str| TemplateSubmission {
            name: name.into(),
            language: "en".into(),
            category: "UTILITY".into(),
            components: vec![serde_json::json!({"type": "BODY", "text": "Hi"})],
        };
        let TemplateOutcome::Accepted { id, status } =
            sandbox.create_template("waba", &submission("order_update")).await.expect("create")
        else {
            panic!("accepted")
        };
        assert_eq!(status, "PENDING");
        sandbox.create_template("waba", &submission("reject_me")).await.expect("create");
        assert!(matches!(
            sandbox.create_template("waba", &submission("order_update")).await,
            Ok(TemplateOutcome::Rejected { .. })
        ));
        assert!(matches!(
            sandbox.create_template("waba", &submission("unreachable_x")).await,
            Err(SendError::Transport(_))
        ));
        assert_eq!(sandbox.template(&id).await.expect("read").map(|t| t.status).as_deref(), Some("PENDING"));

        *clock.lock().expect("clock") += Duration::from_secs(2);
        let all = sandbox.templates("waba").await.expect("list");
        let states: Vec<(&str, &str)> = all.iter().map(|t| (t.name.as_str(), t.status.as_str())).collect();
        assert_eq!(states, [("order_update", "APPROVED"), ("reject_me", "REJECTED")]);
        assert!(all[1].rejected_reason.is_some());
        assert!(sandbox.templates("other").await.expect("list").is_empty());

        sandbox.delete_template("waba", "order_update", None).await.expect("delete");
        assert_eq!(sandbox.template(&id).await.expect("read"), None);
    }

    fn new_group(subject: &str) -> NewGroup<'_> {
        NewGroup { phone_number_id: "pn1", subject, description: Some("VIP"), join_approval_mode: "auto_approve" }
    }

    #[tokio::test]
    async fn a_group_is_announced_after_the_group_delay_unless_its_subject_starts_with_fail() {
        let sandbox =
            ChatSandbox::new(ChatSandboxConfig { group_delay: Duration::from_millis(7), ..Default::default() });
        assert_eq!(ChatSandboxConfig::default().group_delay, Duration::from_millis(1000));
        assert!(format!("{:?}", sandbox.config()).contains("group_delay: 7ms"));

        let created = sandbox.create_group(new_group("Duka VIP")).await.expect("requested");
        assert_eq!(created.request_id, "sbx-greq-1");
        let Some((after, GroupUpdate::Created { request_id, group_id, invite_link: Some(link) })) = created.scheduled
        else {
            panic!("a creation scheduled: {created:?}")
        };
        assert_eq!(
            (after, request_id.as_str(), group_id.as_str()),
            (Duration::from_millis(7), "sbx-greq-1", "sbx-grp-1")
        );
        assert!(link.starts_with("https://chat.whatsapp.com/sbx"), "{link}");

        let failed = sandbox.create_group(new_group("fail_this")).await.expect("requested");
        assert_eq!(
            failed,
            GroupRequested {
                request_id: "sbx-greq-2".into(),
                scheduled: Some((
                    Duration::from_millis(7),
                    GroupUpdate::CreateFailed { request_id: "sbx-greq-2".into(), reason: GROUP_FAILED_REASON.into() }
                )),
            }
        );

        let groups = sandbox.groups();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].group_id.as_deref(), Some("sbx-grp-1"));
        assert_eq!(groups[0].invite_link.as_deref(), Some(link.as_str()));
        assert_eq!((groups[0].subject.as_str(), groups[0].description.as_deref()), ("Duka VIP", Some("VIP")));
        assert_eq!(groups[1].group_id, None);
        // a group that failed is not one it knows
        assert!(matches!(sandbox.update_group("sbx-grp-2", Some("x"), None).await, Err(GroupError::Refused { .. })));
    }

    #[tokio::test]
    async fn a_known_group_is_managed_and_an_unknown_one_refused() {
        let sandbox = sandbox(Arc::new(SystemTime::now));
        sandbox.create_group(new_group("Duka VIP")).await.expect("requested");
        let group_id = "sbx-grp-1";

        let first = sandbox.group_invite_link(group_id).await.expect("a link");
        let reset = sandbox.reset_group_invite_link(group_id).await.expect("a new link");
        assert_ne!(first, reset);
        assert!(reset.starts_with("https://chat.whatsapp.com/sbx"));
        assert_eq!(sandbox.group_invite_link(group_id).await.expect("a link"), reset);

        sandbox.update_group(group_id, Some("VIP customers"), None).await.expect("updated");
        let ids = vec!["jr1".to_owned(), "jr2".to_owned()];
        assert_eq!(sandbox.answer_join_requests(group_id, &ids, true).await, Ok(vec![]));
        assert_eq!(sandbox.answer_join_requests(group_id, &ids[..1], false).await, Ok(vec![]));
        assert_eq!(sandbox.remove_group_participants(group_id, &["255712340000".to_owned()]).await, Ok(vec![]));
        let pin =
            GroupPin { phone_number_id: "pn1", group_id, message_id: "wamid.x", pin: true, expiration_days: Some(7) };
        sandbox.pin_group_message(pin).await.expect("pinned");
        sandbox.pin_group_message(GroupPin { pin: false, ..pin }).await.expect("unpinned");

        let group = sandbox.group(group_id).expect("recorded");
        assert_eq!(group.subject, "VIP customers");
        assert_eq!(group.description.as_deref(), Some("VIP"));
        assert_eq!(group.join_answers, [("jr1".into(), true), ("jr2".into(), true), ("jr1".into(), false)]);
        assert_eq!(group.removed, ["255712340000"]);
        assert_eq!(
            group.pins,
            [
                SandboxPin { message_id: "wamid.x".into(), pin: true, expiration_days: Some(7) },
                SandboxPin { message_id: "wamid.x".into(), pin: false, expiration_days: None },
            ]
        );

        for unknown in ["sbx-grp-9", "elsewhere"] {
            assert!(matches!(sandbox.update_group(unknown, Some("x"), None).await, Err(GroupError::Refused { .. })));
            assert!(matches!(sandbox.group_invite_link(unknown).await, Err(GroupError::Refused { .. })));
            assert!(matches!(sandbox.reset_group_invite_link(unknown).await, Err(GroupError::Refused { .. })));
            let pin = GroupPin { group_id: unknown, ..pin };
            assert!(matches!(sandbox.pin_group_message(pin).await, Err(GroupError::Refused { .. })));
            assert_eq!(sandbox.delete_group(unknown).await, Ok(()));
        }

        sandbox.delete_group(group_id).await.expect("deleted");
        assert!(sandbox.group(group_id).expect("still recorded").deleted);
        assert_eq!(sandbox.delete_group(group_id).await, Ok(()), "deleting it again");
        assert!(matches!(sandbox.update_group(group_id, Some("x"), None).await, Err(GroupError::Refused { .. })));
    }

    #[tokio::test]
    async fn a_group_message_is_delivered_then_read_and_recorded_once() {
        let sandbox = sandbox(Arc::new(SystemTime::now));
        let content = text();
        let message =
            OutboundGroupMessage { reference: "g0", phone_number_id: "pn1", group_id: "sbx-grp-1", content: &content };
        let outcome = sandbox.send_group(message).await.expect("send");
        assert_eq!(statuses(&outcome), [(5, ReceiptStatus::Delivered), (10, ReceiptStatus::Read)]);
        let SendOutcome::Accepted { provider_message_id, .. } = &outcome else { panic!("accepted") };
        assert!(provider_message_id.starts_with("wamid.sbx"));
        assert_eq!(sandbox.send_group(message).await.expect("send"), outcome, "a repeat gets the first answer");

        let sent = sandbox.group_messages();
        assert_eq!(sent.len(), 1);
        assert_eq!((sent[0].group_id.as_str(), &sent[0].content), ("sbx-grp-1", &content));
        assert_eq!(&sent[0].provider_message_id, provider_message_id);
        assert!(sandbox.sent().is_empty(), "one-to-one messages are recorded apart");
    }

    fn flow_json(titles: &[&str]) -> Value {
        let screens: Vec<Value> = titles
            .iter()
            .enumerate()
            .map(|(s, title)| serde_json::json!({"id": format!("SCREEN_{s}"), "title": title, "layout": {}}))
            .collect();
        serde_json::json!({"version": "7.1", "screens": screens})
    }

    fn refusal(outcome: Result<impl std::fmt::Debug, FlowError>) -> String {
        match outcome {
            Err(FlowError::Refused { reason }) => reason,
            other => panic!("refused, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_flow_is_made_given_its_json_published_then_deprecated() {
        let sandbox = sandbox(Arc::new(SystemTime::now));
        let id = sandbox.create_flow("waba", "Order form v1").await.expect("made");
        assert_eq!(id, "sbx-flow-1");
        assert_eq!(sandbox.create_flow("waba", "Order form v2").await.as_deref(), Ok("sbx-flow-2"));
        let made = sandbox.flow(&id).expect("recorded");
        assert_eq!(
            made,
            SandboxFlow {
                id: id.clone(),
                waba_id: "waba".into(),
                name: "Order form v1".into(),
                json: None,
                validation_errors: vec![],
                status: "DRAFT".into(),
            }
        );
        assert!(refusal(sandbox.publish_flow(&id).await).contains("no Flow JSON"));

        let json = flow_json(&["Your order", "Delivery"]);
        assert_eq!(sandbox.upload_flow_json(&id, &json).await, Ok(vec![]));
        assert!(refusal(sandbox.deprecate_flow(&id).await).contains("only a published flow"));
        sandbox.publish_flow(&id).await.expect("published");
        assert_eq!(sandbox.publish_flow(&id).await, Ok(()), "publishing it again changes nothing");
        let published = sandbox.flow(&id).expect("recorded");
        assert_eq!((published.status.as_str(), published.json.as_ref()), ("PUBLISHED", Some(&json)));
        assert!(refusal(sandbox.upload_flow_json(&id, &json).await).contains("only a draft"));

        sandbox.deprecate_flow(&id).await.expect("deprecated");
        assert_eq!(sandbox.deprecate_flow(&id).await, Ok(()), "deprecating it again changes nothing");
        assert_eq!(sandbox.flow(&id).map(|f| f.status).as_deref(), Some("DEPRECATED"));
        assert!(refusal(sandbox.publish_flow(&id).await).contains("only a draft"));

        let states: Vec<(String, String)> = sandbox.flows().into_iter().map(|f| (f.id, f.status)).collect();
        assert_eq!(states, [("sbx-flow-1".into(), "DEPRECATED".into()), ("sbx-flow-2".into(), "DRAFT".into())]);
    }

    #[tokio::test]
    async fn a_flow_json_is_validated_and_one_with_a_blocked_screen_is_not_published() {
        let sandbox = sandbox(Arc::new(SystemTime::now));
        let id = sandbox.create_flow("waba", "Survey").await.expect("made");

        let blocked = flow_json(&["Welcome", "BLOCKED on purpose"]);
        assert_eq!(sandbox.upload_flow_json(&id, &blocked).await, Ok(vec![FLOW_BLOCKED_REASON.to_owned()]));
        let flow = sandbox.flow(&id).expect("recorded");
        assert_eq!(flow.json.as_ref(), Some(&blocked), "an invalid JSON is kept, as the provider keeps it");
        assert_eq!(flow.validation_errors, [FLOW_BLOCKED_REASON]);
        let reason = refusal(sandbox.publish_flow(&id).await);
        assert!(reason.contains(FLOW_BLOCKED_REASON), "{reason}");
        assert_eq!(sandbox.flow(&id).map(|f| f.status).as_deref(), Some("DRAFT"));

        let invalid = [
            (serde_json::json!(["not", "an", "object"]), vec!["Sandbox: the Flow JSON must be an object"]),
            (
                serde_json::json!({"screens": []}),
                vec![
                    "Sandbox: the Flow JSON needs a version (a string, e.g. \"7.1\")",
                    "Sandbox: the Flow JSON needs a non-empty screens array",
                ],
            ),
            (
                serde_json::json!({"version": "7.1", "screens": [{"id": "A"}, {"title": "B"}, "C"]}),
                vec!["Sandbox: screens[1] has no id", "Sandbox: screens[2] has no id"],
            ),
        ];
        for (json, errors) in invalid {
            assert_eq!(
                sandbox.upload_flow_json(&id, &json).await,
                Ok(errors.iter().map(|e| (*e).to_owned()).collect())
            );
            assert!(matches!(sandbox.publish_flow(&id).await, Err(FlowError::Refused { .. })));
        }

        // a corrected JSON replaces the last one, and the flow can be published
        assert_eq!(sandbox.upload_flow_json(&id, &flow_json(&["Welcome"])).await, Ok(vec![]));
        sandbox.publish_flow(&id).await.expect("published");
    }

    #[tokio::test]
    async fn an_unknown_flow_or_a_nameless_one_is_refused() {
        let sandbox = sandbox(Arc::new(SystemTime::now));
        assert!(refusal(sandbox.create_flow("waba", " ").await).contains("needs a name"));
        for unknown in ["sbx-flow-1", "1234567890"] {
            let reason = refusal(sandbox.upload_flow_json(unknown, &flow_json(&["A"])).await);
            assert_eq!(reason, format!("(#100) Sandbox: flow {unknown} does not exist"));
            assert!(matches!(sandbox.publish_flow(unknown).await, Err(FlowError::Refused { .. })));
            assert!(matches!(sandbox.deprecate_flow(unknown).await, Err(FlowError::Refused { .. })));
        }
        assert!(sandbox.flows().is_empty());
        assert_eq!(sandbox.flow("sbx-flow-1"), None);
    }
}
