//! Safaricom's M-Pesa API (Daraja): an OAuth token, then the STK push (`processrequest`), its
//! status query (`stkpushquery`), the result callback and the transaction reversal.
//!
//! Daraja moves whole shillings only, so a push or a reversal of an amount with cents is refused
//! here before anything is sent; and it is Kenyan, so only `KES` is pushed.

use std::fmt;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::payments::{
    CallbackError, MobileMoney, PushCallback, PushOutcome, PushRequest, PushResult, RefundOutcome, SendError,
};

/// Daraja's longest account reference (the payer sees it on the prompt).
const ACCOUNT_REFERENCE_CHARS: usize = 12;
/// Daraja's longest transaction description.
const TRANSACTION_DESC_CHARS: usize = 13;
/// Daraja's longest reversal remarks and occasion.
const REMARKS_CHARS: usize = 100;
/// A cached token is dropped this long before Daraja says it expires, so that a request never
/// leaves with a token that dies on the way.
const TOKEN_MARGIN: Duration = Duration::from_secs(60);
/// The query's answer while the payer has not yet answered the prompt (HTTP 500).
const STILL_PROCESSING: &str = "500.001.1001";
/// Daraja's word for a token it does not know, whatever the HTTP status it comes with.
const INVALID_TOKEN: &str = "404.001.03";

/// Where and as whom to reach Daraja.
#[derive(Clone)]
pub struct MpesaConfig {
    /// Without a trailing path (`https://sandbox.safaricom.co.ke` for Safaricom's test system).
    pub base_url: String,
    /// The Daraja app's consumer key and secret, traded for an access token.
    pub consumer_key: String,
    pub consumer_secret: String,
    /// The business short code (paybill) the payer pays, and that reversals come from.
    pub shortcode: String,
    /// The Lipa na M-Pesa Online passkey, part of every STK password.
    pub passkey: String,
    /// The API operator's user name, for reversals.
    pub initiator_name: String,
    /// The operator's password encrypted with Safaricom's certificate, for reversals.
    pub security_credential: String,
    /// Where Daraja posts a reversal's result (and its queue timeout). Empty: the callback URL
    /// of the last push is used, since the trait gives a reversal no callback of its own.
    pub result_url: String,
    /// Each HTTP request, answer body included (a call may make up to three: the token, the
    /// request, and its retry after a refused token).
    pub timeout: Duration,
}

impl MpesaConfig {
    pub const DEFAULT_BASE_URL: &'static str = "https://api.safaricom.co.ke";
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
}

/// Hand-written so the secret, passkey and credential never reach a log line through `{:?}`.
impl fmt::Debug for MpesaConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MpesaConfig")
            .field("base_url", &self.base_url)
            .field("consumer_key", &self.consumer_key)
            .field("consumer_secret", &"<redacted>")
            .field("shortcode", &self.shortcode)
            .field("passkey", &"<redacted>")
            .field("initiator_name", &self.initiator_name)
            .field("security_credential", &"<redacted>")
            .field("result_url", &self.result_url)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// An access token and when to stop using it.
struct Token {
    value: String,
    fresh_until: Instant,
}

/// The M-Pesa client. Clones share the token cache.
#[derive(Clone)]
pub struct Mpesa {
    client: reqwest::Client,
    config: MpesaConfig,
    token_url: String,
    push_url: String,
    query_url: String,
    reversal_url: String,
    /// Held across the token request, so concurrent calls wait for one token instead of each
    /// asking for its own.
    token: Arc<tokio::sync::Mutex<Option<Token>>>,
    /// The callback URL of the last push: where reversal results go when `result_url` is empty.
    last_callback: Arc<StdMutex<Option<String>>>,
}

/// Hand-written: the cached token is a secret too.
impl fmt::Debug for Mpesa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mpesa").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Mpesa {
    pub fn new(client: reqwest::Client, config: MpesaConfig) -> Self {
        let base = config.base_url.trim_end_matches('/').to_owned();
        Self {
            client,
            token_url: format!("{base}/oauth/v1/generate?grant_type=client_credentials"),
            push_url: format!("{base}/mpesa/stkpush/v1/processrequest"),
            query_url: format!("{base}/mpesa/stkpushquery/v1/query"),
            reversal_url: format!("{base}/mpesa/reversal/v1/request"),
            config,
            token: Arc::default(),
            last_callback: Arc::default(),
        }
    }

    pub fn config(&self) -> &MpesaConfig {
        &self.config
    }

    /// The STK password: base64 of short code, passkey and timestamp.
    fn password(&self, timestamp: &str) -> String {
        stk_password(&self.config.shortcode, &self.config.passkey, timestamp)
    }

    /// The cached token, or a new one when there is none or it is about to expire.
    async fn token(&self) -> Result<String, SendError> {
        let mut cached = self.token.lock().await;
        if let Some(token) = cached.as_ref().filter(|t| Instant::now() < t.fresh_until) {
            return Ok(token.value.clone());
        }
        let token = self.fetch_token().await?;
        let value = token.value.clone();
        *cached = Some(token);
        Ok(value)
    }

    /// Forgets `used` after Daraja refused it (unless another call already replaced it).
    async fn forget_token(&self, used: &str) {
        let mut cached = self.token.lock().await;
        if cached.as_ref().is_some_and(|t| t.value == used) {
            *cached = None;
        }
    }

    async fn fetch_token(&self) -> Result<Token, SendError> {
        tracing::debug!("asking Daraja for an access token");
        let asked_at = Instant::now();
        let response = self
            .client
            .get(&self.token_url)
            .basic_auth(&self.config.consumer_key, Some(&self.config.consumer_secret))
            .header(reqwest::header::ACCEPT, "application/json")
            .timeout(self.config.timeout)
            .send()
            .await
            .map_err(send_error)?;
        let status = response.status();
        if !status.is_success() {
            tracing::warn!(status = status.as_u16(), "Daraja refused the consumer key and secret");
            return Err(SendError::Status { status: status.as_u16() });
        }
        let body = response.bytes().await.map_err(send_error)?;
        let answer: TokenAnswer =
            serde_json::from_slice(&body).map_err(|e| SendError::Malformed(format!("token answer: {e}")))?;
        if answer.access_token.is_empty() {
            return Err(SendError::Malformed("token answer with an empty access_token".into()));
        }
        let lifetime = answer.expires_in.seconds().map_err(SendError::Malformed)?;
        Ok(Token {
            value: answer.access_token,
            fresh_until: asked_at + Duration::from_secs(lifetime).saturating_sub(TOKEN_MARGIN),
        })
    }

    /// Posts `body` with the bearer token and returns the answer whatever its status; a token
    /// Daraja refuses is replaced and the request sent once more.
    async fn post(&self, url: &str, body: &Value) -> Result<Answer, SendError> {
        let mut token = self.token().await?;
        let mut retried = false;
        loop {
            let response = self
                .client
                .post(url)
                .bearer_auth(&token)
                .header(reqwest::header::ACCEPT, "application/json")
                .json(body)
                .timeout(self.config.timeout)
                .send()
                .await
                .map_err(send_error)?;
            let status = response.status().as_u16();
            let body = response.bytes().await.map_err(send_error)?;
            let answer = Answer { status, body: body.to_vec() };
            if !retried && answer.token_refused() {
                tracing::info!(status, "Daraja refused the access token; asking for a new one");
                self.forget_token(&token).await;
                token = self.token().await?;
                retried = true;
                continue;
            }
            return Ok(answer);
        }
    }
}

/// An answer from a Daraja API call.
struct Answer {
    status: u16,
    body: Vec<u8>,
}

impl Answer {
    fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// Daraja's error shape (`{requestId, errorCode, errorMessage}`), when the body has it.
    fn error(&self) -> Option<DarajaError> {
        serde_json::from_slice(&self.body).ok()
    }

    fn token_refused(&self) -> bool {
        self.status == 401 || self.error().is_some_and(|e| e.error_code == INVALID_TOKEN)
    }

    fn read<'a, T: Deserialize<'a>>(&'a self) -> Result<T, SendError> {
        serde_json::from_slice(&self.body).map_err(|e| SendError::Malformed(e.to_string()))
    }

    /// A request Daraja turned down in its own words (HTTP 400), or else the HTTP status.
    fn refused_or_status(&self) -> Result<String, SendError> {
        match self.error() {
            Some(error) if self.status == 400 => Ok(error.describe()),
            error => {
                let words = error.map(|e| e.describe()).unwrap_or_default();
                tracing::warn!(status = self.status, words, "Daraja answered with an error");
                Err(SendError::Status { status: self.status })
            }
        }
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    expires_in: Code,
}

#[derive(Deserialize)]
struct DarajaError {
    #[serde(rename = "requestId", default)]
    request_id: String,
    #[serde(rename = "errorCode")]
    error_code: String,
    #[serde(rename = "errorMessage", default)]
    error_message: String,
}

impl DarajaError {
    fn describe(&self) -> String {
        let message = self.error_message.trim();
        let message = if message.is_empty() { "refused without a reason" } else { message };
        if self.request_id.is_empty() {
            format!("{message} ({})", self.error_code)
        } else {
            format!("{message} ({}, request {})", self.error_code, self.request_id)
        }
    }
}

/// Daraja writes its codes as text in answers (`"0"`) and as numbers in callbacks (`0`); both
/// read.
#[derive(Deserialize)]
#[serde(untagged)]
enum Code {
    Text(String),
    Number(serde_json::Number),
}

impl Code {
    fn text(&self) -> String {
        match self {
            Code::Text(text) => text.trim().to_owned(),
            Code::Number(number) => number.to_string(),
        }
    }

    /// A count of seconds (the token's `expires_in`, text in practice).
    fn seconds(&self) -> Result<u64, String> {
        let text = self.text();
        text.parse().map_err(|_| format!("expires_in is not a count of seconds: {text:?}"))
    }
}

/// The answer to a push or a reversal request.
#[derive(Deserialize)]
struct RequestAnswer {
    #[serde(rename = "ResponseCode")]
    response_code: Code,
    #[serde(rename = "ResponseDescription", default)]
    response_description: String,
    #[serde(rename = "CheckoutRequestID", default)]
    checkout_request_id: String,
    #[serde(rename = "ConversationID", default)]
    conversation_id: String,
}

impl RequestAnswer {
    /// The provider's id when the request was taken, or why it was not.
    fn taken(&self, id: &str, id_name: &str) -> Result<Result<String, String>, SendError> {
        let code = self.response_code.text();
        if code != "0" {
            let words = self.response_description.trim();
            let words = if words.is_empty() { "refused without a reason" } else { words };
            return Ok(Err(format!("{words} ({code})")));
        }
        if id.trim().is_empty() {
            return Err(SendError::Malformed(format!("accepted without a {id_name}")));
        }
        Ok(Ok(id.trim().to_owned()))
    }
}

#[derive(Deserialize)]
struct QueryAnswer {
    #[serde(rename = "ResponseCode", default)]
    response_code: Option<Code>,
    #[serde(rename = "ResponseDescription", default)]
    response_description: String,
    #[serde(rename = "ResultCode", default)]
    result_code: Option<Code>,
    #[serde(rename = "ResultDesc", default)]
    result_desc: String,
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

fn send_error(error: reqwest::Error) -> SendError {
    if error.is_timeout() { SendError::Timeout } else { SendError::Transport(describe(&error)) }
}

/// The first `max` characters of `text` (Daraja counts characters and refuses longer fields).
fn cut(text: &str, max: usize) -> &str {
    let text = text.trim();
    text.char_indices().nth(max).map_or(text, |(end, _)| text[..end].trim_end())
}

/// The digits of a number: E.164 without the `+` (`254712345678`), as Daraja wants it.
fn digits(phone: &str) -> String {
    phone.chars().filter(char::is_ascii_digit).collect()
}

/// Whole shillings from minor units, or why Daraja cannot move the amount.
fn whole_units(amount_minor: i64) -> Result<i64, String> {
    if amount_minor <= 0 {
        return Err(format!("M-Pesa moves positive amounts only, not {amount_minor} minor units"));
    }
    if amount_minor % 100 != 0 {
        return Err(format!("M-Pesa moves whole shillings only: {amount_minor} minor units is not a whole amount"));
    }
    Ok(amount_minor / 100)
}

/// Daraja's timestamp: `YYYYMMDDHHmmss` on Nairobi's clock (UTC+3, no daylight saving).
pub(crate) fn daraja_timestamp(at: SystemTime) -> String {
    let t = time::OffsetDateTime::from(at).to_offset(time::macros::offset!(+3));
    format!("{:04}{:02}{:02}{:02}{:02}{:02}", t.year(), u8::from(t.month()), t.day(), t.hour(), t.minute(), t.second())
}

/// The STK password: base64 of short code, passkey and timestamp, run together.
pub(crate) fn stk_password(shortcode: &str, passkey: &str, timestamp: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("{shortcode}{passkey}{timestamp}"))
}

/// What a result code means (from a query answer or a callback), for every code but the
/// payment's `0`, whose receipt the caller reads where it is.
fn unpaid_result(code: &str, desc: &str) -> PushResult {
    let reason = |fallback: &str| {
        let desc = desc.trim();
        if desc.is_empty() { fallback.to_owned() } else { desc.to_owned() }
    };
    let code_text = code.to_owned();
    match code {
        "1" => PushResult::Failed { code: code_text, reason: reason("insufficient funds") },
        "2001" => PushResult::Failed { code: code_text, reason: reason("wrong PIN") },
        "1032" => PushResult::Cancelled { code: code_text, reason: reason("Request cancelled by user") },
        "1037" => PushResult::Expired { code: code_text, reason: reason("the payer's phone could not be reached") },
        "1019" => PushResult::Expired { code: code_text, reason: reason("Transaction has expired") },
        // "The transaction is still under processing": the payer may yet pay, so calling it a
        // failure could refuse money that then arrives.
        "4999" => PushResult::Pending,
        _ => PushResult::Failed { code: code_text, reason: reason("M-Pesa gave no reason") },
    }
}

#[derive(Deserialize)]
struct CallbackEnvelope {
    #[serde(rename = "Body")]
    body: CallbackBody,
}

#[derive(Deserialize)]
struct CallbackBody {
    #[serde(rename = "stkCallback")]
    stk_callback: StkCallback,
}

#[derive(Deserialize)]
struct StkCallback {
    #[serde(rename = "CheckoutRequestID")]
    checkout_request_id: String,
    #[serde(rename = "ResultCode")]
    result_code: Code,
    #[serde(rename = "ResultDesc", default)]
    result_desc: String,
    #[serde(rename = "CallbackMetadata", default)]
    metadata: Option<CallbackMetadata>,
}

#[derive(Deserialize)]
struct CallbackMetadata {
    #[serde(rename = "Item", default)]
    items: Vec<CallbackItem>,
}

#[derive(Deserialize)]
struct CallbackItem {
    #[serde(rename = "Name")]
    name: String,
    /// Absent on some items (`Balance`).
    #[serde(rename = "Value", default)]
    value: Option<Value>,
}

/// Reads Daraja's STK result callback (`{"Body":{"stkCallback":{...}}}`). A paid result must
/// carry its `MpesaReceiptNumber`; `Amount` (major units) and `PhoneNumber` are read when
/// present. Shared with the payment sandbox, which reads the same shape.
pub(crate) fn parse_stk_callback(body: &[u8]) -> Result<PushCallback, CallbackError> {
    let envelope: CallbackEnvelope =
        serde_json::from_slice(body).map_err(|e| CallbackError(format!("not an STK callback: {e}")))?;
    let callback = envelope.body.stk_callback;
    let checkout_request_id = callback.checkout_request_id.trim().to_owned();
    if checkout_request_id.is_empty() {
        return Err(CallbackError("STK callback without a CheckoutRequestID".into()));
    }
    let code = callback.result_code.text();
    if code != "0" {
        return Ok(PushCallback { checkout_request_id, result: unpaid_result(&code, &callback.result_desc) });
    }
    let items = callback.metadata.map(|m| m.items).unwrap_or_default();
    let item = |name: &str| items.iter().find(|i| i.name == name).and_then(|i| i.value.as_ref());
    let receipt = match item("MpesaReceiptNumber") {
        Some(Value::String(receipt)) if !receipt.trim().is_empty() => receipt.trim().to_owned(),
        _ => {
            return Err(CallbackError(format!(
                "paid STK callback {checkout_request_id} without an MpesaReceiptNumber"
            )));
        }
    };
    let amount_minor = item("Amount").map(minor_units).transpose()?;
    let phone = match item("PhoneNumber") {
        None | Some(Value::Null) => None,
        Some(Value::Number(number)) => Some(number.to_string()),
        Some(Value::String(text)) if !text.trim().is_empty() => Some(text.trim().to_owned()),
        Some(other) => return Err(CallbackError(format!("unreadable PhoneNumber {other}"))),
    };
    Ok(PushCallback { checkout_request_id, result: PushResult::Paid { receipt, amount_minor, phone } })
}

/// A callback's `Amount` (major units, `1.00`) in minor units.
fn minor_units(value: &Value) -> Result<i64, CallbackError> {
    let major = match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.trim().parse::<f64>().ok(),
        _ => None,
    };
    let minor = major.map(|m| (m * 100.0).round()).filter(|m| m.is_finite() && *m >= 0.0 && *m < 9.0e15);
    // In range (checked above), so the cast loses nothing.
    minor.map(|m| m as i64).ok_or_else(|| CallbackError(format!("unreadable Amount {value}")))
}

#[async_trait::async_trait]
impl MobileMoney for Mpesa {
    async fn push(&self, request: PushRequest<'_>) -> Result<PushOutcome, SendError> {
        let reference = request.reference;
        let amount = match whole_units(request.amount_minor) {
            Ok(amount) => amount,
            Err(reason) => return Ok(PushOutcome::Refused { reason }),
        };
        if !request.currency.eq_ignore_ascii_case("KES") {
            // Daraja has no currency field: any amount it is given is taken as shillings.
            let reason = format!("M-Pesa (Daraja) takes Kenyan shillings only, not {}", request.currency);
            return Ok(PushOutcome::Refused { reason });
        }
        let payer = digits(request.phone);
        if payer.is_empty() {
            return Ok(PushOutcome::Refused { reason: format!("no phone number in {:?}", request.phone) });
        }
        let description = match cut(request.description, TRANSACTION_DESC_CHARS) {
            "" => cut(reference, TRANSACTION_DESC_CHARS),
            description => description,
        };
        if let Ok(mut last) = self.last_callback.lock() {
            *last = Some(request.callback_url.to_owned());
        }
        let timestamp = daraja_timestamp(SystemTime::now());
        let body = json!({
            "BusinessShortCode": self.config.shortcode,
            "Password": self.password(&timestamp),
            "Timestamp": timestamp,
            "TransactionType": "CustomerPayBillOnline",
            "Amount": amount,
            "PartyA": payer,
            "PartyB": self.config.shortcode,
            "PhoneNumber": payer,
            "CallBackURL": request.callback_url,
            "AccountReference": cut(reference, ACCOUNT_REFERENCE_CHARS),
            "TransactionDesc": description,
        });
        tracing::debug!(reference, "sending an M-Pesa STK push");
        let answer = self.post(&self.push_url, &body).await?;
        let outcome = if answer.is_success() {
            let read: RequestAnswer = answer.read()?;
            match read.taken(&read.checkout_request_id, "CheckoutRequestID")? {
                Ok(checkout_request_id) => PushOutcome::Accepted { checkout_request_id, answer_after: None },
                Err(reason) => PushOutcome::Refused { reason },
            }
        } else {
            PushOutcome::Refused { reason: answer.refused_or_status()? }
        };
        match &outcome {
            PushOutcome::Accepted { checkout_request_id, .. } => {
                tracing::debug!(reference, checkout_request_id, "M-Pesa accepted the STK push");
            }
            PushOutcome::Refused { reason } => tracing::info!(reference, reason, "M-Pesa refused the STK push"),
        }
        Ok(outcome)
    }

    /// A paid answer carries no receipt: the receipt given is the `CheckoutRequestID` itself,
    /// and the callback's `MpesaReceiptNumber` (with amount and number) is to be preferred.
    async fn query(&self, checkout_request_id: &str) -> Result<PushResult, SendError> {
        let timestamp = daraja_timestamp(SystemTime::now());
        let body = json!({
            "BusinessShortCode": self.config.shortcode,
            "Password": self.password(&timestamp),
            "Timestamp": timestamp,
            "CheckoutRequestID": checkout_request_id,
        });
        let answer = self.post(&self.query_url, &body).await?;
        if !answer.is_success() {
            if answer.status == 500 && answer.error().is_some_and(|e| e.error_code == STILL_PROCESSING) {
                return Ok(PushResult::Pending);
            }
            // A query has no refusal to give: an id Daraja does not know is an error, not a
            // failed payment.
            let words = answer.error().map(|e| e.describe()).unwrap_or_default();
            tracing::warn!(checkout_request_id, status = answer.status, words, "M-Pesa query answered an error");
            return Err(SendError::Status { status: answer.status });
        }
        let read: QueryAnswer = answer.read()?;
        let Some(code) = read.result_code.map(|c| c.text()) else {
            let response = read.response_code.map(|c| c.text()).unwrap_or_default();
            return Err(SendError::Malformed(format!(
                "query answer without a ResultCode (ResponseCode {response:?}: {})",
                read.response_description
            )));
        };
        let result = if code == "0" {
            PushResult::Paid { receipt: checkout_request_id.to_owned(), amount_minor: None, phone: None }
        } else {
            unpaid_result(&code, &read.result_desc)
        };
        tracing::debug!(checkout_request_id, result_code = code, "M-Pesa query answered");
        Ok(result)
    }

    async fn refund(&self, receipt: &str, amount_minor: i64, reference: &str) -> Result<RefundOutcome, SendError> {
        let amount = match whole_units(amount_minor) {
            Ok(amount) => amount,
            Err(reason) => return Ok(RefundOutcome::Refused { reason }),
        };
        if receipt.trim().is_empty() {
            return Ok(RefundOutcome::Refused { reason: "no M-Pesa receipt to reverse".into() });
        }
        let result_url = if self.config.result_url.is_empty() {
            self.last_callback.lock().ok().and_then(|last| last.clone())
        } else {
            Some(self.config.result_url.clone())
        };
        let Some(result_url) = result_url else {
            let reason = "no result_url is configured and no push has given a callback URL yet".to_owned();
            return Ok(RefundOutcome::Refused { reason });
        };
        let body = json!({
            "Initiator": self.config.initiator_name,
            "SecurityCredential": self.config.security_credential,
            "CommandID": "TransactionReversal",
            "TransactionID": receipt.trim(),
            "Amount": amount,
            "ReceiverParty": self.config.shortcode,
            // sic: Daraja's spelling; "11" says the receiver is an organisation (the short code)
            "RecieverIdentifierType": "11",
            "ResultURL": result_url,
            "QueueTimeOutURL": result_url,
            "Remarks": cut(&format!("Refund {reference}"), REMARKS_CHARS),
            "Occasion": cut(reference, REMARKS_CHARS),
        });
        tracing::debug!(reference, receipt, "asking M-Pesa for a reversal");
        let answer = self.post(&self.reversal_url, &body).await?;
        let outcome = if answer.is_success() {
            let read: RequestAnswer = answer.read()?;
            match read.taken(&read.conversation_id, "ConversationID")? {
                Ok(provider_reference) => RefundOutcome::Accepted { provider_reference },
                Err(reason) => RefundOutcome::Refused { reason },
            }
        } else {
            RefundOutcome::Refused { reason: answer.refused_or_status()? }
        };
        if let RefundOutcome::Refused { reason } = &outcome {
            tracing::info!(reference, receipt, reason, "M-Pesa refused the reversal");
        }
        Ok(outcome)
    }

    fn parse_callback(&self, body: &[u8]) -> Result<PushCallback, CallbackError> {
        parse_stk_callback(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> MpesaConfig {
        MpesaConfig {
            base_url: MpesaConfig::DEFAULT_BASE_URL.into(),
            consumer_key: "key".into(),
            consumer_secret: "the_consumer_secret".into(),
            shortcode: "174379".into(),
            passkey: "the_passkey".into(),
            initiator_name: "testapi".into(),
            security_credential: "the_credential".into(),
            result_url: String::new(),
            timeout: MpesaConfig::DEFAULT_TIMEOUT,
        }
    }

    #[test]
    fn debug_hides_the_secrets() {
        let text = format!("{:?}", config());
        for secret in ["the_consumer_secret", "the_passkey", "the_credential"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(text.contains("174379"));
        let client = Mpesa::new(crate::http_client().expect("http client"), config());
        assert!(!format!("{client:?}").contains("the_passkey"));
    }

    #[test]
    fn the_password_is_darajas_documented_example() {
        let passkey = "bfb279f9aa9bdbcf158e97dd71a467cd2e0c893059b10f78e6b72ada1ed2c919";
        assert_eq!(
            stk_password("174379", passkey, "20160216165627"),
            "MTc0Mzc5YmZiMjc5ZjlhYTliZGJjZjE1OGU5N2RkNzFhNDY3Y2QyZTBjODkzMDU5YjEwZjc4ZTZiNzJhZGExZWQyYzkxOTIwMTYwMjE2MTY1NjI3"
        );
    }

    #[test]
    fn the_timestamp_is_on_nairobis_clock() {
        // 2019-12-19 21:30:05 UTC is 00:30:05 the next day in Nairobi.
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_576_791_005);
        assert_eq!(daraja_timestamp(at), "20191220003005");
    }

    #[test]
    fn fields_are_cut_by_characters() {
        assert_eq!(cut("PAY-20261207-000042", 12), "PAY-20261207");
        assert_eq!(cut("  short ", 12), "short");
        assert_eq!(cut("Mazao ya shamba", 13), "Mazao ya sham");
        assert_eq!(cut("ééééééééééééééé", 13).chars().count(), 13);
    }

    #[test]
    fn only_whole_positive_amounts_move() {
        assert_eq!(whole_units(150_000), Ok(1500));
        assert!(whole_units(150_050).is_err_and(|r| r.contains("whole")));
        assert!(whole_units(0).is_err());
        assert!(whole_units(-100).is_err());
    }

    #[test]
    fn result_codes_are_mapped() {
        assert!(
            matches!(unpaid_result("1", ""), PushResult::Failed { code, reason } if code == "1" && reason == "insufficient funds")
        );
        assert!(
            matches!(unpaid_result("2001", "The initiator information is invalid."), PushResult::Failed { code, .. } if code == "2001")
        );
        assert!(matches!(unpaid_result("1032", "Request cancelled by user"), PushResult::Cancelled { .. }));
        assert!(matches!(unpaid_result("1037", "DS timeout user cannot be reached"), PushResult::Expired { .. }));
        assert!(matches!(unpaid_result("1019", ""), PushResult::Expired { .. }));
        assert_eq!(unpaid_result("4999", "The transaction is still under processing"), PushResult::Pending);
        assert_eq!(
            unpaid_result("1025", "An error occurred"),
            PushResult::Failed { code: "1025".into(), reason: "An error occurred".into() }
        );
    }

    #[test]
    fn callback_amounts_round_to_minor_units() {
        assert_eq!(minor_units(&json!(1.00)), Ok(100));
        assert_eq!(minor_units(&json!(10.1)), Ok(1010));
        assert_eq!(minor_units(&json!(1500)), Ok(150_000));
        assert_eq!(minor_units(&json!("2.50")), Ok(250));
        assert!(minor_units(&json!(-1)).is_err());
        assert!(minor_units(&json!(true)).is_err());
    }
}
