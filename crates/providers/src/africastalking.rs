//! The Africa's Talking SMS API: `POST /version1/messaging` to send, form-encoded callbacks for
//! delivery reports and incoming messages.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;

use crate::sms::{
    CallbackError, DeliveryReceipt, InboundSms, OutboundSms, ReceiptStatus, SendError, SendOutcome, SmsGateway,
};

/// Where and as whom to reach Africa's Talking.
#[derive(Clone)]
pub struct AfricasTalkingConfig {
    /// Without a trailing path; `/version1/messaging` is appended.
    pub base_url: String,
    pub username: String,
    pub api_key: String,
    /// The whole request, answer body included.
    pub timeout: Duration,
}

impl AfricasTalkingConfig {
    pub const DEFAULT_BASE_URL: &'static str = "https://api.africastalking.com";
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

    /// The production base URL and the default timeout.
    pub fn new(username: impl Into<String>, api_key: impl Into<String>) -> Self {
        Self {
            base_url: Self::DEFAULT_BASE_URL.to_owned(),
            username: username.into(),
            api_key: api_key.into(),
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }
}

/// Hand-written so the api key never reaches a log line through `{:?}`.
impl fmt::Debug for AfricasTalkingConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AfricasTalkingConfig")
            .field("base_url", &self.base_url)
            .field("username", &self.username)
            .field("api_key", &"<redacted>")
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// The Africa's Talking SMS gateway.
#[derive(Debug, Clone)]
pub struct AfricasTalking {
    client: reqwest::Client,
    config: AfricasTalkingConfig,
    messaging_url: String,
}

impl AfricasTalking {
    pub fn new(client: reqwest::Client, config: AfricasTalkingConfig) -> Self {
        let messaging_url = format!("{}/version1/messaging", config.base_url.trim_end_matches('/'));
        Self { client, config, messaging_url }
    }
}

#[derive(Deserialize)]
struct SendResponse {
    #[serde(rename = "SMSMessageData")]
    data: SmsMessageData,
}

#[derive(Deserialize)]
struct SmsMessageData {
    #[serde(rename = "Message", default)]
    message: String,
    #[serde(rename = "Recipients")]
    recipients: Vec<Recipient>,
}

#[derive(Deserialize)]
struct Recipient {
    #[serde(rename = "statusCode")]
    status_code: u16,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    cost: Option<String>,
    #[serde(rename = "messageId", default)]
    message_id: Option<String>,
}

/// AT's names for its per-recipient status codes, used when an answer omits the `status` word.
fn status_code_name(code: u16) -> &'static str {
    match code {
        100 => "Processed",
        101 => "Sent",
        102 => "Queued",
        401 => "RiskHold",
        402 => "InvalidSenderId",
        403 => "InvalidPhoneNumber",
        404 => "UnsupportedNumberType",
        405 => "InsufficientBalance",
        406 => "UserInBlacklist",
        407 => "CouldNotRoute",
        409 => "DoNotDisturbRejection",
        500 => "InternalServerError",
        501 => "GatewayError",
        502 => "RejectedByGateway",
        _ => "Unknown",
    }
}

/// Reads a 2xx answer body into an outcome.
fn outcome_from_body(body: &[u8]) -> Result<SendOutcome, SendError> {
    let answer: SendResponse = serde_json::from_slice(body).map_err(|e| SendError::Malformed(e.to_string()))?;
    // We send to one number, so the first recipient is ours; none means the whole request was
    // refused and `Message` says why (e.g. "InvalidSenderId").
    let Some(recipient) = answer.data.recipients.into_iter().next() else {
        let reason = answer.data.message.trim();
        let reason = if reason.is_empty() { "refused without a reason" } else { reason };
        return Ok(SendOutcome::Refused { reason: reason.to_owned() });
    };
    let code = recipient.status_code;
    let word = recipient.status.filter(|s| !s.is_empty()).unwrap_or_else(|| status_code_name(code).to_owned());
    if !matches!(code, 100..=102) {
        return Ok(SendOutcome::Refused { reason: format!("{word} ({code})") });
    }
    let provider_message_id = recipient
        .message_id
        .filter(|id| !id.is_empty() && id != "None")
        .ok_or_else(|| SendError::Malformed(format!("accepted ({code}) without a messageId")))?;
    let cost = recipient.cost.filter(|c| !c.is_empty() && c != "0");
    Ok(SendOutcome::Accepted { provider_message_id, cost, receipts: Vec::new() })
}

/// reqwest's error with its causes, which carry the useful part ("connection refused").
pub(crate) fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A form POST to one of Africa's Talking's APIs as the account (SMS and voice alike).
pub(crate) async fn post_form(
    client: &reqwest::Client,
    url: &str,
    config: &AfricasTalkingConfig,
    form: &[(&str, &str)],
) -> Result<reqwest::Response, SendError> {
    client
        .post(url)
        .header("apiKey", &config.api_key)
        .header(reqwest::header::ACCEPT, "application/json")
        .form(form)
        .timeout(config.timeout)
        .send()
        .await
        .map_err(send_error)
}

pub(crate) fn send_error(error: reqwest::Error) -> SendError {
    if error.is_timeout() { SendError::Timeout } else { SendError::Transport(describe(&error)) }
}

#[async_trait::async_trait]
impl SmsGateway for AfricasTalking {
    async fn send(&self, sms: OutboundSms<'_>) -> Result<SendOutcome, SendError> {
        // AT has no client-reference field, so the reference only ties our log to its answer.
        tracing::debug!(reference = sms.reference, "sending an SMS through Africa's Talking");
        let mut form = vec![("username", self.config.username.as_str()), ("to", sms.to), ("message", sms.body)];
        if let Some(from) = sms.from {
            form.push(("from", from));
        }
        let response = post_form(&self.client, &self.messaging_url, &self.config, &form).await?;
        let status = response.status();
        if !status.is_success() {
            tracing::warn!(reference = sms.reference, status = status.as_u16(), "Africa's Talking refused the request");
            return Err(SendError::Status { status: status.as_u16() });
        }
        let body = response.bytes().await.map_err(send_error)?;
        let outcome = outcome_from_body(&body);
        match &outcome {
            Ok(SendOutcome::Accepted { provider_message_id, .. }) => {
                tracing::debug!(reference = sms.reference, provider_message_id, "Africa's Talking accepted the SMS");
            }
            Ok(SendOutcome::Refused { reason }) => {
                tracing::info!(reference = sms.reference, reason, "Africa's Talking refused the SMS");
            }
            Err(error) => tracing::warn!(reference = sms.reference, %error, "Africa's Talking answer unreadable"),
        }
        outcome
    }

    async fn status(&self, _provider_message_id: &str) -> Result<ReceiptStatus, SendError> {
        // AT has no per-message status query; only the delivery-report callback tells.
        Ok(ReceiptStatus::Pending)
    }

    fn parse_receipt(&self, content_type: &str, body: &[u8]) -> Result<DeliveryReceipt, CallbackError> {
        let mut fields = callback_fields(content_type, body)?;
        let id = fields.remove("id").ok_or_else(|| CallbackError("delivery report without an id".into()))?;
        let word = fields.remove("status").ok_or_else(|| CallbackError("delivery report without a status".into()))?;
        let status = match word.as_str() {
            "Success" => ReceiptStatus::Delivered,
            "Failed" | "Rejected" | "AbsentSubscriber" | "Expired" => {
                ReceiptStatus::Failed { reason: fields.remove("failureReason").unwrap_or_else(|| word.clone()) }
            }
            "Sent" | "Submitted" | "Buffered" => ReceiptStatus::Pending,
            other => {
                // A word AT added later: keep it for audit, change nothing.
                tracing::warn!(provider_message_id = id, status = other, "unknown Africa's Talking delivery status");
                ReceiptStatus::Pending
            }
        };
        Ok(DeliveryReceipt { provider_message_id: id, status, provider_status: word })
    }

    fn parse_inbound(&self, content_type: &str, body: &[u8]) -> Result<InboundSms, CallbackError> {
        let mut fields = callback_fields(content_type, body)?;
        let from = fields.remove("from").ok_or_else(|| CallbackError("incoming message without a from".into()))?;
        let to = fields.remove("to").ok_or_else(|| CallbackError("incoming message without a to".into()))?;
        Ok(InboundSms {
            provider_message_id: fields.remove("id"),
            from,
            to,
            text: fields.remove("text").unwrap_or_default(),
        })
    }
}

/// A callback's fields as text, from a form body or (when the content type says json) a JSON
/// object with the same keys. Empty values count as absent.
pub(crate) fn callback_fields(content_type: &str, body: &[u8]) -> Result<HashMap<String, String>, CallbackError> {
    let fields: HashMap<String, String> = if content_type.to_ascii_lowercase().contains("json") {
        let object: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(body).map_err(|e| CallbackError(format!("not a JSON object: {e}")))?;
        object
            .into_iter()
            .filter_map(|(key, value)| match value {
                serde_json::Value::String(text) => Some((key, text)),
                serde_json::Value::Number(number) => Some((key, number.to_string())),
                serde_json::Value::Bool(flag) => Some((key, flag.to_string())),
                _ => None,
            })
            .collect()
    } else {
        serde_urlencoded::from_bytes(body).map_err(|e| CallbackError(format!("not a form body: {e}")))?
    };
    Ok(fields.into_iter().filter(|(_, value)| !value.trim().is_empty()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_api_key() {
        let config = AfricasTalkingConfig::new("sandbox", "atsk_secret");
        assert!(!format!("{config:?}").contains("atsk_secret"));
    }

    #[test]
    fn a_missing_status_word_is_named_from_the_code() {
        let body = br#"{"SMSMessageData":{"Message":"x","Recipients":[{"statusCode":405,"number":"+2547","cost":"0","messageId":"None"}]}}"#;
        assert_eq!(outcome_from_body(body), Ok(SendOutcome::Refused { reason: "InsufficientBalance (405)".into() }));
    }

    #[test]
    fn accepted_without_a_message_id_is_malformed() {
        let body = br#"{"SMSMessageData":{"Message":"x","Recipients":[{"statusCode":101,"status":"Success"}]}}"#;
        assert!(matches!(outcome_from_body(body), Err(SendError::Malformed(_))));
    }

    #[test]
    fn a_zero_cost_is_no_cost() {
        let body = br#"{"SMSMessageData":{"Message":"x","Recipients":[{"statusCode":102,"status":"Queued","cost":"0","messageId":"ATXid_1"}]}}"#;
        assert_eq!(
            outcome_from_body(body),
            Ok(SendOutcome::Accepted { provider_message_id: "ATXid_1".into(), cost: None, receipts: Vec::new() })
        );
    }
}
