//! The WhatsApp Cloud API (Graph API shape): `POST /{version}/{phone_number_id}/messages` with
//! a bearer access token, `GET/POST/DELETE /{version}/{waba_id}/message_templates`, template
//! edits and reads by id, the account and its phone numbers, groups (in `cloud_groups`), flows
//! (in `cloud_flows`); and its webhooks, signed with `X-Hub-Signature-256`.

use std::fmt;
use std::time::Duration;

use reqwest::Url;
use serde_json::{Map, Value, json};

use crate::chat::{
    ChatContent, ChatEvent, ChatGateway, ChatInbound, ChatQuality, ChatStatus, ChatTemplateStatus, ChatWebhook,
    MEDIA_TYPES, OutboundChat, ProviderAccount, ProviderPhoneNumber, ProviderTemplate, TemplateOutcome,
    TemplateSubmission,
};
use crate::chat_flows::{FlowError, FlowValidation};
use crate::chat_groups::{GroupError, GroupPin, GroupRequested, NewGroup, OutboundGroupMessage};
use crate::sms::{CallbackError, SendError, SendOutcome};

/// Where and as whom to reach the Cloud API.
#[derive(Clone)]
pub struct CloudConfig {
    /// Without a trailing path, e.g. `https://graph.facebook.com`.
    pub base_url: String,
    /// The Graph API version path segment, e.g. `v21.0`.
    pub version: String,
    pub access_token: String,
    /// The whole request, answer body included.
    pub timeout: Duration,
}

impl CloudConfig {
    pub const DEFAULT_BASE_URL: &'static str = "https://graph.facebook.com";
    pub const DEFAULT_VERSION: &'static str = "v21.0";
}

/// Hand-written so the access token never reaches a log line through `{:?}`.
impl fmt::Debug for CloudConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloudConfig")
            .field("base_url", &self.base_url)
            .field("version", &self.version)
            .field("access_token", &"<redacted>")
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// The Cloud API client.
#[derive(Debug, Clone)]
pub struct Cloud {
    pub(crate) client: reqwest::Client,
    config: CloudConfig,
}

impl Cloud {
    pub fn new(client: reqwest::Client, config: CloudConfig) -> Self {
        Self { client, config }
    }
}

/// The `fields` a template is read with.
const TEMPLATE_FIELDS: &str = "id,name,language,status,category,components,rejected_reason";
/// The `fields` a phone number is read with.
const PHONE_NUMBER_FIELDS: &str = "id,display_phone_number,verified_name,quality_rating,messaging_limit_tier";
/// Error codes that say "slow down" rather than "no": the send's outcome is unknown to us, so
/// they are status errors, never refusals.
const RATE_LIMIT_CODES: &[i64] = &[4, 80007, 130429, 131056];
/// Graph's "invalid parameter", which is also how it says an object id does not exist.
const INVALID_PARAMETER: i64 = 100;
/// The subcode of a template delete that found no such template.
const TEMPLATE_NOT_FOUND: i64 = 2_593_002;
/// How many pages a listing may take before it is taken for a paging loop.
const MAX_PAGES: usize = 1000;

/// A 2xx or not, and the body as it came.
pub(crate) struct Answer {
    pub(crate) status: u16,
    body: Vec<u8>,
}

impl Answer {
    pub(crate) fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// A 2xx body as JSON.
    pub(crate) fn json(&self, what: &str) -> Result<Value, SendError> {
        serde_json::from_slice(&self.body).map_err(|e| SendError::Malformed(format!("{what}: not JSON: {e}")))
    }
}

/// The Graph API's error object (`{"error":{...}}`), read leniently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GraphError {
    pub(crate) code: Option<i64>,
    pub(crate) subcode: Option<i64>,
    /// `(#code) message: details`.
    pub(crate) reason: String,
    /// The human explanation Graph adds to some errors (template reviews mostly).
    user_msg: Option<String>,
}

impl GraphError {
    fn read(body: &[u8]) -> Option<GraphError> {
        let root: Value = serde_json::from_slice(body).ok()?;
        let error = root.get("error")?.as_object()?;
        let code = error.get("code").and_then(integer);
        let subcode = error.get("error_subcode").and_then(integer);
        let message = error.get("message").and_then(text);
        let details = error.get("error_data").and_then(|data| match data {
            Value::Object(data) => data.get("details").and_then(text),
            // Older endpoints send `error_data` as a string
            other => text(other),
        });
        if code.is_none() && message.is_none() {
            return None;
        }
        let mut reason = coded(code, message.as_deref().unwrap_or("error"));
        if let Some(details) = details.filter(|d| !reason.ends_with(d.as_str())) {
            reason.push_str(": ");
            reason.push_str(&details);
        }
        let user_msg = error.get("error_user_msg").and_then(text);
        Some(GraphError { code, subcode, reason, user_msg })
    }

    /// The reason with Graph's human explanation, when it adds one.
    pub(crate) fn reason_for_people(&self) -> String {
        match &self.user_msg {
            Some(user_msg) if !self.reason.contains(user_msg.as_str()) => format!("{}: {user_msg}", self.reason),
            _ => self.reason.clone(),
        }
    }

    fn is_rate_limit(&self) -> bool {
        self.code.is_some_and(|code| RATE_LIMIT_CODES.contains(&code))
    }
}

/// What a non-2xx answer means: the provider stated why (`Ok`), or it is throttling, in trouble
/// or unreadable (`Err(Status)`).
pub(crate) fn stated_error(answer: &Answer) -> Result<GraphError, SendError> {
    let status = answer.status;
    let error = GraphError::read(&answer.body);
    let server_trouble = status == 429 || (500..600).contains(&status);
    match error {
        Some(error) if !server_trouble && !error.is_rate_limit() => Ok(error),
        Some(error) => {
            tracing::warn!(status, reason = error.reason, "the Cloud API is throttling or in trouble");
            Err(SendError::Status { status })
        }
        None => {
            tracing::warn!(status, "the Cloud API answered an error without an error object");
            Err(SendError::Status { status })
        }
    }
}

/// A non-2xx answer of a read or a delete: throttling as a status error, the provider's own
/// words otherwise.
fn read_failure(answer: &Answer, what: &str) -> SendError {
    match stated_error(answer) {
        Ok(error) => {
            tracing::warn!(status = answer.status, reason = error.reason, "the Cloud API refused {what}");
            SendError::Malformed(error.reason)
        }
        Err(error) => error,
    }
}

/// `(#code) words`; Graph sometimes starts its words with the code already.
pub(crate) fn coded(code: Option<i64>, words: &str) -> String {
    match code {
        Some(code) => {
            let prefix = format!("(#{code})");
            let words = words.strip_prefix(prefix.as_str()).map_or(words, str::trim_start);
            format!("{prefix} {words}")
        }
        None => words.to_owned(),
    }
}

/// A string, or a number as text; empty counts as absent.
pub(crate) fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A number, or a string of one.
pub(crate) fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// reqwest's error with its causes, which carry the useful part ("connection refused").
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn send_error(mut error: reqwest::Error) -> SendError {
    if error.is_timeout() {
        return SendError::Timeout;
    }
    // Graph's paging links carry the access token in their query
    if let Some(url) = error.url_mut() {
        url.set_query(None);
    }
    SendError::Transport(describe(&error))
}

/// The message object of a send.
fn message_body(message: &OutboundChat<'_>) -> Value {
    let to: String = message.to.chars().filter(char::is_ascii_digit).collect();
    message_object("individual", &to, message.content, message.reply_to, message.reference)
}

/// The message object of a send to `to` (a customer's digits, or a group id with
/// `recipient_type` `group`), carrying `reference` as its callback data.
pub(crate) fn message_object(
    recipient_type: &str,
    to: &str,
    content: &ChatContent,
    reply_to: Option<&str>,
    reference: &str,
) -> Value {
    let kind = content.kind();
    let payload = match content {
        ChatContent::Text { body } => {
            let lower = body.to_ascii_lowercase();
            json!({ "body": body, "preview_url": lower.contains("http://") || lower.contains("https://") })
        }
        ChatContent::Media { kind, link, caption } => {
            let mut media = Map::new();
            media.insert("link".into(), json!(link));
            if let Some(caption) = caption.as_ref().filter(|_| !matches!(kind.as_str(), "audio" | "sticker")) {
                media.insert("caption".into(), json!(caption));
            }
            Value::Object(media)
        }
        ChatContent::Template { name, language, components } => {
            let mut template = Map::new();
            template.insert("name".into(), json!(name));
            template.insert("language".into(), json!({ "code": language }));
            if !components.is_empty() {
                template.insert("components".into(), json!(components));
            }
            Value::Object(template)
        }
        ChatContent::Interactive { interactive } => interactive.clone(),
        ChatContent::Reaction { message_id, emoji } => json!({ "message_id": message_id, "emoji": emoji }),
    };
    let mut body = Map::new();
    body.insert("messaging_product".into(), json!("whatsapp"));
    body.insert("recipient_type".into(), json!(recipient_type));
    body.insert("to".into(), json!(to));
    body.insert("type".into(), json!(kind));
    body.insert(kind.to_owned(), payload);
    if let Some(reply_to) = reply_to {
        body.insert("context".into(), json!({ "message_id": reply_to }));
    }
    body.insert("biz_opaque_callback_data".into(), json!(reference));
    Value::Object(body)
}

/// A template as the listing and the read by id give it.
fn provider_template(value: &Value) -> Result<ProviderTemplate, SendError> {
    let required = |key: &str| {
        value.get(key).and_then(text).ok_or_else(|| SendError::Malformed(format!("a template without {key}")))
    };
    Ok(ProviderTemplate {
        id: required("id")?,
        name: required("name")?,
        language: required("language")?,
        category: value.get("category").and_then(text).unwrap_or_default(),
        status: required("status")?,
        components: value.get("components").and_then(Value::as_array).cloned().unwrap_or_default(),
        rejected_reason: value.get("rejected_reason").and_then(text).filter(|r| r != "NONE"),
    })
}

fn phone_number(value: &Value) -> Result<ProviderPhoneNumber, SendError> {
    let required = |key: &str| {
        value.get(key).and_then(text).ok_or_else(|| SendError::Malformed(format!("a phone number without {key}")))
    };
    let optional = |key: &str| value.get(key).and_then(text);
    Ok(ProviderPhoneNumber {
        id: required("id")?,
        display_phone_number: required("display_phone_number")?,
        verified_name: optional("verified_name"),
        quality_rating: optional("quality_rating"),
        messaging_limit_tier: optional("messaging_limit_tier"),
    })
}

impl Cloud {
    /// `{base}/{version}/{segments...}?{query}`, each segment escaped.
    pub(crate) fn endpoint(&self, segments: &[&str], query: &[(&str, &str)]) -> Result<Url, SendError> {
        let base = &self.config.base_url;
        let mut url =
            Url::parse(base).map_err(|e| SendError::Transport(format!("the base URL {base:?} is not a URL: {e}")))?;
        {
            let mut path = url
                .path_segments_mut()
                .map_err(|()| SendError::Transport(format!("the base URL {base:?} cannot take a path")))?;
            path.pop_if_empty();
            if !self.config.version.is_empty() {
                path.push(&self.config.version);
            }
            path.extend(segments);
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        Ok(url)
    }

    /// Whether a link the provider gave (a paging `next`) stays on the configured base URL.
    fn is_ours(&self, link: &str) -> bool {
        let base = self.config.base_url.trim_end_matches('/');
        link.strip_prefix(base).is_some_and(|rest| rest.starts_with('/'))
    }

    /// Sends a request as the account and reads the whole answer.
    pub(crate) async fn call(&self, request: reqwest::RequestBuilder) -> Result<Answer, SendError> {
        let response = request
            .bearer_auth(&self.config.access_token)
            .header(reqwest::header::ACCEPT, "application/json")
            .timeout(self.config.timeout)
            .send()
            .await
            .map_err(send_error)?;
        let status = response.status().as_u16();
        let body = response.bytes().await.map_err(send_error)?;
        Ok(Answer { status, body: body.to_vec() })
    }

    /// Every `data[]` item of a listing, following `paging.next` while it stays on our host.
    pub(crate) async fn list(&self, first: Url, what: &str) -> Result<Vec<Value>, SendError> {
        let mut url = first;
        let mut items = Vec::new();
        for _ in 0..MAX_PAGES {
            let answer = self.call(self.client.get(url.clone())).await?;
            if !answer.is_success() {
                return Err(read_failure(&answer, what));
            }
            let mut page = answer.json(what)?;
            let Some(Value::Array(data)) = page.get_mut("data").map(Value::take) else {
                return Err(SendError::Malformed(format!("{what}: a page without a data array")));
            };
            items.extend(data);
            let Some(next) = page.pointer("/paging/next").and_then(Value::as_str) else { return Ok(items) };
            if !self.is_ours(next) {
                // Never carry the token to another host; what we have is what the host gave.
                let host = Url::parse(next).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
                tracing::warn!(host, "{what}: not following a paging link off the configured host");
                return Ok(items);
            }
            url = Url::parse(next).map_err(|e| SendError::Malformed(format!("{what}: a paging link: {e}")))?;
        }
        Err(SendError::Malformed(format!("{what}: more than {MAX_PAGES} pages")))
    }

    /// Posts a message object to `/{phone_number_id}/messages`: the provider's message id, or its
    /// refusal in its own words.
    pub(crate) async fn post_message(
        &self,
        phone_number_id: &str,
        body: &Value,
        reference: &str,
    ) -> Result<SendOutcome, SendError> {
        let url = self.endpoint(&[phone_number_id, "messages"], &[])?;
        let answer = self.call(self.client.post(url).json(body)).await?;
        if !answer.is_success() {
            let error = stated_error(&answer)?;
            tracing::info!(reference, reason = error.reason, "the Cloud API refused the message");
            return Ok(SendOutcome::Refused { reason: error.reason });
        }
        let body = answer.json("the send answer")?;
        let provider_message_id = body
            .pointer("/messages/0/id")
            .and_then(text)
            .ok_or_else(|| SendError::Malformed("accepted without a message id".into()))?;
        tracing::debug!(reference, provider_message_id, "the Cloud API accepted the message");
        Ok(SendOutcome::Accepted { provider_message_id, cost: None, receipts: Vec::new() })
    }

    /// The answer to a template submission or edit; `accepted` reads a 2xx body.
    fn template_outcome(
        answer: &Answer,
        what: &str,
        accepted: impl FnOnce(Value) -> Result<TemplateOutcome, SendError>,
    ) -> Result<TemplateOutcome, SendError> {
        if answer.is_success() {
            return accepted(answer.json(what)?);
        }
        let error = stated_error(answer)?;
        let reason = error.reason_for_people();
        tracing::info!(reason, "the Cloud API rejected {what}");
        Ok(TemplateOutcome::Rejected { reason })
    }
}

#[async_trait::async_trait]
impl ChatGateway for Cloud {
    async fn send(&self, message: OutboundChat<'_>) -> Result<SendOutcome, SendError> {
        let reference = message.reference;
        tracing::debug!(reference, kind = message.content.kind(), "sending a chat message through the Cloud API");
        self.post_message(message.phone_number_id, &message_body(&message), reference).await
    }

    async fn templates(&self, waba_id: &str) -> Result<Vec<ProviderTemplate>, SendError> {
        let url = self.endpoint(&[waba_id, "message_templates"], &[("fields", TEMPLATE_FIELDS), ("limit", "100")])?;
        self.list(url, "the template listing").await?.iter().map(provider_template).collect()
    }

    async fn template(&self, template_id: &str) -> Result<Option<ProviderTemplate>, SendError> {
        let url = self.endpoint(&[template_id], &[("fields", TEMPLATE_FIELDS)])?;
        let answer = self.call(self.client.get(url)).await?;
        if answer.is_success() {
            return provider_template(&answer.json("the template")?).map(Some);
        }
        if answer.status == 404 {
            return Ok(None);
        }
        match stated_error(&answer)? {
            error if error.code == Some(INVALID_PARAMETER) => Ok(None),
            error => {
                tracing::warn!(status = answer.status, reason = error.reason, "the Cloud API refused a template read");
                Err(SendError::Malformed(error.reason))
            }
        }
    }

    async fn create_template(
        &self,
        waba_id: &str,
        template: &TemplateSubmission,
    ) -> Result<TemplateOutcome, SendError> {
        let url = self.endpoint(&[waba_id, "message_templates"], &[])?;
        let body = json!({
            "name": template.name,
            "language": template.language,
            "category": template.category,
            "components": template.components,
        });
        let answer = self.call(self.client.post(url).json(&body)).await?;
        Cloud::template_outcome(&answer, "the template submission", |body| {
            let id = body
                .get("id")
                .and_then(text)
                .ok_or_else(|| SendError::Malformed("a template taken without an id".into()))?;
            let status = body.get("status").and_then(text).unwrap_or_else(|| "PENDING".to_owned());
            Ok(TemplateOutcome::Accepted { id, status })
        })
    }

    async fn edit_template(
        &self,
        template_id: &str,
        template: &TemplateSubmission,
    ) -> Result<TemplateOutcome, SendError> {
        let url = self.endpoint(&[template_id], &[])?;
        let body = json!({ "components": template.components, "category": template.category });
        let answer = self.call(self.client.post(url).json(&body)).await?;
        Cloud::template_outcome(&answer, "the template edit", |body| {
            if body.get("success") != Some(&Value::Bool(true)) {
                return Err(SendError::Malformed("a template edit answered without success".into()));
            }
            Ok(TemplateOutcome::Accepted { id: template_id.to_owned(), status: "PENDING".into() })
        })
    }

    async fn delete_template(&self, waba_id: &str, name: &str, template_id: Option<&str>) -> Result<(), SendError> {
        let mut query = vec![("name", name)];
        if let Some(id) = template_id {
            query.push(("hsm_id", id));
        }
        let url = self.endpoint(&[waba_id, "message_templates"], &query)?;
        let answer = self.call(self.client.delete(url)).await?;
        if answer.is_success() {
            let body = answer.json("the template delete")?;
            return match body.get("success") {
                Some(Value::Bool(true)) => Ok(()),
                _ => Err(SendError::Malformed("a template delete answered without success".into())),
            };
        }
        if answer.status == 404 {
            return Ok(());
        }
        match stated_error(&answer)? {
            error if error.code == Some(INVALID_PARAMETER) && error.subcode == Some(TEMPLATE_NOT_FOUND) => Ok(()),
            error => {
                tracing::warn!(
                    status = answer.status,
                    reason = error.reason,
                    "the Cloud API refused a template delete"
                );
                Err(SendError::Malformed(error.reason))
            }
        }
    }

    async fn account(&self, waba_id: &str) -> Result<ProviderAccount, SendError> {
        let url = self.endpoint(&[waba_id], &[("fields", "id,name")])?;
        let answer = self.call(self.client.get(url)).await?;
        if !answer.is_success() {
            return Err(read_failure(&answer, "the account read"));
        }
        let body = answer.json("the account")?;
        let id = body.get("id").and_then(text).unwrap_or_else(|| waba_id.to_owned());
        let name = body.get("name").and_then(text);
        let url = self.endpoint(&[waba_id, "phone_numbers"], &[("fields", PHONE_NUMBER_FIELDS)])?;
        let phone_numbers =
            self.list(url, "the phone number listing").await?.iter().map(phone_number).collect::<Result<_, _>>()?;
        Ok(ProviderAccount { id, name, phone_numbers })
    }

    async fn create_group(&self, group: NewGroup<'_>) -> Result<GroupRequested, GroupError> {
        self.groups_create(group).await
    }

    async fn update_group(
        &self,
        group_id: &str,
        subject: Option<&str>,
        description: Option<&str>,
    ) -> Result<(), GroupError> {
        self.groups_update(group_id, subject, description).await
    }

    async fn delete_group(&self, group_id: &str) -> Result<(), GroupError> {
        self.groups_delete(group_id).await
    }

    async fn group_invite_link(&self, group_id: &str) -> Result<String, GroupError> {
        self.groups_invite_link(group_id).await
    }

    async fn reset_group_invite_link(&self, group_id: &str) -> Result<String, GroupError> {
        self.groups_reset_invite_link(group_id).await
    }

    async fn answer_join_requests(
        &self,
        group_id: &str,
        join_request_ids: &[String],
        approve: bool,
    ) -> Result<Vec<(String, String)>, GroupError> {
        self.groups_answer_join_requests(group_id, join_request_ids, approve).await
    }

    async fn remove_group_participants(
        &self,
        group_id: &str,
        wa_ids: &[String],
    ) -> Result<Vec<(String, String)>, GroupError> {
        self.groups_remove_participants(group_id, wa_ids).await
    }

    async fn send_group(&self, message: OutboundGroupMessage<'_>) -> Result<SendOutcome, SendError> {
        self.groups_send(message).await
    }

    async fn pin_group_message(&self, pin: GroupPin<'_>) -> Result<(), GroupError> {
        self.groups_pin(pin).await
    }

    async fn create_flow(&self, waba_id: &str, name: &str) -> Result<String, FlowError> {
        self.flows_create(waba_id, name).await
    }

    async fn upload_flow_json(&self, flow_id: &str, flow_json: &Value) -> Result<FlowValidation, FlowError> {
        self.flows_upload_json(flow_id, flow_json).await
    }

    async fn publish_flow(&self, flow_id: &str) -> Result<(), FlowError> {
        self.flows_publish(flow_id).await
    }

    async fn deprecate_flow(&self, flow_id: &str) -> Result<(), FlowError> {
        self.flows_deprecate(flow_id).await
    }
}

/// A required member of a webhook object, as text.
pub(crate) fn member(value: &Value, key: &str, at: &str) -> Result<String, CallbackError> {
    value.get(key).and_then(text).ok_or_else(|| CallbackError(format!("{at}: no {key}")))
}

/// An array member; absent is empty, anything else than an array is malformed.
pub(crate) fn items<'a>(value: &'a Value, key: &str, at: &str) -> Result<&'a [Value], CallbackError> {
    match value.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(CallbackError(format!("{at}: {key} is not an array"))),
    }
}

pub(crate) fn parse_webhook(body: &[u8]) -> Result<ChatWebhook, CallbackError> {
    let root: Value = serde_json::from_slice(body).map_err(|e| CallbackError(format!("not JSON: {e}")))?;
    match root.get("object").and_then(Value::as_str) {
        Some("whatsapp_business_account") => {}
        other => return Err(CallbackError(format!("not a WhatsApp Business Account delivery (object {other:?})"))),
    }
    let Some(entries) = root.get("entry").and_then(Value::as_array) else {
        return Err(CallbackError("a delivery without an entry array".into()));
    };
    let mut webhook = ChatWebhook::default();
    for (e, entry) in entries.iter().enumerate() {
        let Some(changes) = entry.get("changes").and_then(Value::as_array) else {
            return Err(CallbackError(format!("entry[{e}]: no changes array")));
        };
        for (c, change) in changes.iter().enumerate() {
            let at = format!("entry[{e}].changes[{c}]");
            let field = member(change, "field", &at)?;
            let value = change.get("value").filter(|v| v.is_object());
            let value = || value.ok_or_else(|| CallbackError(format!("{at}: {field} without a value object")));
            match field.as_str() {
                "messages" => read_messages(value()?, &format!("{at}.value"), false, &mut webhook.events)?,
                "smb_message_echoes" => read_messages(value()?, &format!("{at}.value"), true, &mut webhook.events)?,
                "message_template_status_update" => {
                    let value = value()?;
                    let at = format!("{at}.value");
                    webhook.events.push(ChatEvent::TemplateStatus(ChatTemplateStatus {
                        waba_id: member(entry, "id", &format!("entry[{e}]"))?,
                        template_id: member(value, "message_template_id", &at)?,
                        name: member(value, "message_template_name", &at)?,
                        language: member(value, "message_template_language", &at)?,
                        event: member(value, "event", &at)?,
                        reason: value.get("reason").and_then(text).filter(|r| r != "NONE"),
                    }));
                }
                "phone_number_quality_update" => {
                    let value = value()?;
                    let at = format!("{at}.value");
                    webhook.events.push(ChatEvent::Quality(ChatQuality {
                        display_phone_number: member(value, "display_phone_number", &at)?,
                        event: member(value, "event", &at)?,
                        current_limit: value.get("current_limit").and_then(text),
                    }));
                }
                "group_lifecycle_update"
                | "group_participants_update"
                | "group_settings_update"
                | "group_status_update" => {
                    crate::cloud_groups::read_group_change(&field, value()?, &format!("{at}.value"), &mut webhook)?;
                }
                "flows" => crate::cloud_flows::read_flow_change(value()?, &format!("{at}.value"), &mut webhook)?,
                _ => webhook.ignored.push(field),
            }
        }
    }
    Ok(webhook)
}

/// The `messages` field (statuses and customer messages) or, with `echoes`, the
/// `smb_message_echoes` field (messages the business sent from its own app).
fn read_messages(value: &Value, at: &str, echoes: bool, events: &mut Vec<ChatEvent>) -> Result<(), CallbackError> {
    let metadata = value.get("metadata").ok_or_else(|| CallbackError(format!("{at}: no metadata")))?;
    let phone_number_id = member(metadata, "phone_number_id", &format!("{at}.metadata"))?;
    let display_phone_number = member(metadata, "display_phone_number", &format!("{at}.metadata"))?;
    let contacts = items(value, "contacts", at)?;
    let profile_name = |wa_id: &str| {
        contacts
            .iter()
            .find(|contact| contact.get("wa_id").and_then(text).as_deref() == Some(wa_id))
            .and_then(|contact| contact.pointer("/profile/name").and_then(text))
    };

    for (s, status) in items(value, "statuses", at)?.iter().enumerate() {
        let at = format!("{at}.statuses[{s}]");
        events.push(ChatEvent::Status(ChatStatus {
            phone_number_id: phone_number_id.clone(),
            provider_message_id: member(status, "id", &at)?,
            status: member(status, "status", &at)?,
            recipient_id: status.get("recipient_id").and_then(text),
            error: items(status, "errors", &at)?.first().and_then(status_error),
        }));
    }

    let key = if echoes { "message_echoes" } else { "messages" };
    for (m, message) in items(value, key, at)?.iter().enumerate() {
        let at = format!("{at}.{key}[{m}]");
        let customer = member(message, if echoes { "to" } else { "from" }, &at)?;
        let kind = member(message, "type", &at)?;
        let media = if MEDIA_TYPES.contains(&kind.as_str()) {
            let object = message.get(&kind).ok_or_else(|| CallbackError(format!("{at}: a {kind} without {kind}")))?;
            Some((member(object, "id", &format!("{at}.{kind}"))?, object.get("mime_type").and_then(text)))
        } else {
            None
        };
        let inbound = ChatInbound {
            phone_number_id: phone_number_id.clone(),
            display_phone_number: display_phone_number.clone(),
            provider_message_id: member(message, "id", &at)?,
            profile_name: profile_name(&customer),
            customer,
            text: readable_text(message, &kind),
            media,
            reply_to: message.pointer("/context/id").and_then(text),
            group_id: message.get("group_id").and_then(text),
            raw: message.clone(),
            kind,
        };
        events.push(if echoes { ChatEvent::Echo(inbound) } else { ChatEvent::Inbound(inbound) });
    }
    Ok(())
}

/// The first of a status's `errors[]` in one line: `(#code) title: details`.
fn status_error(error: &Value) -> Option<String> {
    let code = error.get("code").and_then(integer);
    let title = error.get("title").and_then(text).or_else(|| error.get("message").and_then(text));
    let details = error.pointer("/error_data/details").and_then(text);
    let mut line = match (code, title) {
        (code, Some(title)) => coded(code, &title),
        (Some(code), None) => format!("(#{code})"),
        (None, None) => return details,
    };
    if let Some(details) = details {
        line.push_str(": ");
        line.push_str(&details);
    }
    Some(line)
}

/// The text a person would read in a message of this type.
fn readable_text(message: &Value, kind: &str) -> Option<String> {
    let at = |pointer: &str| message.pointer(pointer).and_then(text);
    match kind {
        "text" => at("/text/body"),
        "image" | "video" | "audio" | "document" | "sticker" => at(&format!("/{kind}/caption")),
        "interactive" => at("/interactive/button_reply/title").or_else(|| at("/interactive/list_reply/title")),
        "button" => at("/button/text"),
        "reaction" => at("/reaction/emoji"),
        "location" => {
            let parts: Vec<String> = [at("/location/name"), at("/location/address")].into_iter().flatten().collect();
            (!parts.is_empty()).then(|| parts.join(", "))
        }
        _ => None,
    }
}

pub(crate) fn sign(app_secret: &str, body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, app_secret.as_bytes());
    format!("sha256={}", hex::encode(ring::hmac::sign(&key, body).as_ref()))
}

pub(crate) fn signature_holds(app_secret: &str, body: &[u8], header: Option<&str>) -> bool {
    let Some(hex_mac) = header.and_then(|h| h.trim().strip_prefix("sha256=")) else { return false };
    let Ok(mac) = hex::decode(hex_mac.trim()) else { return false };
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, app_secret.as_bytes());
    // `verify` compares in constant time
    ring::hmac::verify(&key, body, &mac).is_ok()
}
