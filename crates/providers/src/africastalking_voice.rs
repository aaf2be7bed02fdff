//! The Africa's Talking Voice API: `POST /call` to place a call, form-encoded callbacks while
//! it is live and when it ends, and an XML answer to each live callback. The callback reader
//! and the XML writer are shared with the voice sandbox, which speaks the same wire format.

use std::fmt::Write as _;

use serde::Deserialize;

use crate::AfricasTalkingConfig;
use crate::africastalking::{callback_fields, post_form, send_error};
use crate::voice::{
    CallEnd, CallbackError, OutboundCall, PlaceOutcome, SendError, VoiceAction, VoiceCallback, VoiceGateway,
};

/// The voice for English text: a Google voice name AT's text to speech takes, the one most
/// AT integrations use (AT's older documentation lists only `man` and `woman`).
const VOICE_EN: &str = "en-US-Standard-C";
/// AT documents no Swahili voice, so Swahili text is read by its documented default voice
/// (`woman`) rather than by a guessed voice name that could silence the prompt.
const VOICE_SW: &str = "woman";

/// The Africa's Talking voice gateway. It takes the same configuration as the SMS gateway;
/// the api key stays out of `{:?}` through the configuration's own Debug.
#[derive(Debug, Clone)]
pub struct AfricasTalkingVoice {
    client: reqwest::Client,
    config: AfricasTalkingConfig,
    call_url: String,
}

impl AfricasTalkingVoice {
    /// Voice has its own host; the SMS host does not take calls.
    pub const DEFAULT_BASE_URL: &'static str = "https://voice.africastalking.com";
    const SANDBOX_BASE_URL: &'static str = "https://voice.sandbox.africastalking.com";

    /// A configuration that names AT's SMS host (production or sandbox, as channels store it
    /// by default) or none is sent to the matching voice host; any other base URL (a fake, a
    /// proxy) is used as given.
    pub fn new(client: reqwest::Client, config: AfricasTalkingConfig) -> Self {
        let base_url = match config.base_url.trim_end_matches('/') {
            "" | "https://api.africastalking.com" => Self::DEFAULT_BASE_URL,
            "https://api.sandbox.africastalking.com" => Self::SANDBOX_BASE_URL,
            other => other,
        };
        let call_url = format!("{base_url}/call");
        Self { client, config, call_url }
    }
}

#[derive(Deserialize)]
struct CallAnswer {
    #[serde(default)]
    entries: Vec<CallEntry>,
    #[serde(rename = "errorMessage", default)]
    error_message: Option<String>,
}

#[derive(Deserialize)]
struct CallEntry {
    #[serde(default)]
    status: Option<String>,
    #[serde(rename = "sessionId", default)]
    session_id: Option<String>,
    #[serde(rename = "errorMessage", default)]
    error_message: Option<String>,
}

/// AT writes the text `"None"` where there is no value.
fn present(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty() && v != "None")
}

/// A refused entry's status in words, keeping AT's word for audit.
fn refusal_reason(status: &str, message: Option<String>) -> String {
    let words = match status {
        "InvalidPhoneNumber" => "the number is not a valid phone number",
        "DestinationNotSupported" => "Africa's Talking cannot call this destination",
        "InsufficientCredit" => "the Africa's Talking account has too little credit",
        _ => "Africa's Talking refused the call",
    };
    match message {
        Some(message) => format!("{words} ({status}): {message}"),
        None => format!("{words} ({status})"),
    }
}

/// Reads an answer body into an outcome.
fn outcome_from_body(body: &[u8]) -> Result<PlaceOutcome, SendError> {
    let answer: CallAnswer = serde_json::from_slice(body).map_err(|e| SendError::Malformed(e.to_string()))?;
    // We call one number, so the first entry is ours; none means the whole request was refused
    // and `errorMessage` says why (e.g. an unknown caller number).
    let Some(entry) = answer.entries.into_iter().next() else {
        return match present(answer.error_message) {
            Some(reason) => Ok(PlaceOutcome::Refused { reason }),
            None => Err(SendError::Malformed("neither entries nor an errorMessage".into())),
        };
    };
    let status = present(entry.status).ok_or_else(|| SendError::Malformed("an entry without a status".into()))?;
    if status != "Queued" {
        return Ok(PlaceOutcome::Refused { reason: refusal_reason(&status, present(entry.error_message)) });
    }
    let provider_call_id =
        present(entry.session_id).ok_or_else(|| SendError::Malformed("queued without a sessionId".into()))?;
    Ok(PlaceOutcome::Placed { provider_call_id, script: None })
}

#[async_trait::async_trait]
impl VoiceGateway for AfricasTalkingVoice {
    async fn place(&self, call: OutboundCall<'_>) -> Result<PlaceOutcome, SendError> {
        tracing::debug!(reference = call.reference, "placing a call through Africa's Talking");
        let mut form =
            vec![("username", self.config.username.as_str()), ("to", call.to), ("clientRequestId", call.reference)];
        // AT documents `from` as required; without one we let AT answer for the account.
        if let Some(from) = call.from {
            form.push(("from", from));
        }
        let response = post_form(&self.client, &self.call_url, &self.config, &form).await?;
        let status = response.status();
        if !status.is_success() {
            // A plain 4xx that explains itself is a refusal (the call will never ring); bad
            // credentials, throttling and server errors are not about this call.
            let explains = status.is_client_error() && !matches!(status.as_u16(), 401 | 403 | 408 | 429);
            if explains
                && let Ok(body) = response.bytes().await
                && let Ok(PlaceOutcome::Refused { reason }) = outcome_from_body(&body)
            {
                tracing::info!(
                    reference = call.reference,
                    status = status.as_u16(),
                    reason,
                    "Africa's Talking refused the call"
                );
                return Ok(PlaceOutcome::Refused { reason });
            }
            tracing::warn!(
                reference = call.reference,
                status = status.as_u16(),
                "Africa's Talking refused the request"
            );
            return Err(SendError::Status { status: status.as_u16() });
        }
        let body = response.bytes().await.map_err(send_error)?;
        let outcome = outcome_from_body(&body);
        match &outcome {
            Ok(PlaceOutcome::Placed { provider_call_id, .. }) => {
                tracing::debug!(reference = call.reference, provider_call_id, "Africa's Talking queued the call");
            }
            Ok(PlaceOutcome::Refused { reason }) => {
                tracing::info!(reference = call.reference, reason, "Africa's Talking refused the call");
            }
            Err(error) => tracing::warn!(reference = call.reference, %error, "Africa's Talking answer unreadable"),
        }
        outcome
    }

    fn parse_callback(&self, content_type: &str, body: &[u8]) -> Result<VoiceCallback, CallbackError> {
        parse_callback(content_type, body)
    }

    fn render(&self, actions: &[VoiceAction]) -> (&'static str, String) {
        render(actions)
    }
}

/// Whole seconds; AT writes integers, a fraction is rounded rather than refused.
fn seconds(text: Option<&str>) -> Result<u32, CallbackError> {
    let Some(text) = text.map(str::trim) else { return Ok(0) };
    if let Ok(whole) = text.parse::<u32>() {
        return Ok(whole);
    }
    match text.parse::<f64>() {
        // saturating: `as` clamps to u32's range
        Ok(value) if value.is_finite() && value >= 0.0 => Ok(value.round() as u32),
        _ => Err(CallbackError(format!("durationInSeconds is not a number of seconds: {text:?}"))),
    }
}

/// A hangup cause in words, keeping AT's (SIP) code for audit.
fn hangup_words(cause: &str) -> String {
    let words = match cause {
        "NORMAL_CLEARING" => "the call was cleared before it was answered",
        "USER_BUSY" => "the callee was busy",
        "NO_ANSWER" => "nobody answered",
        "NO_USER_RESPONSE" => "the callee's phone did not respond",
        "ORIGINATOR_CANCEL" => "the call was cancelled",
        "CALL_REJECTED" => "the callee rejected the call",
        "UNALLOCATED_NUMBER" => "the number is not in service",
        "SUBSCRIBER_ABSENT" => "the callee's phone is off or out of reach",
        "INVALID_NUMBER_FORMAT" => "the number is not valid",
        "NORMAL_TEMPORARY_FAILURE" => "a temporary network failure",
        "RECOVERY_ON_TIMER_EXPIRE" => "the network did not answer in time",
        "DESTINATION_OUT_OF_ORDER" => "the callee's line is out of order",
        "NETWORK_OUT_OF_ORDER" => "the network is out of order",
        "SERVICE_UNAVAILABLE" => "the service is unavailable",
        "INCOMPATIBLE_DESTINATION" => "the destination cannot take this call",
        "MEDIA_TIMEOUT" => "the call's audio stopped",
        _ => return format!("{} ({cause})", cause.to_ascii_lowercase().replace('_', " ")),
    };
    format!("{words} ({cause})")
}

/// How an ended call ended, from AT's `status`, `hangupCause` and duration.
fn call_end(status: Option<&str>, cause: Option<&str>, duration: u32) -> CallEnd {
    match (status, cause) {
        (_, Some("USER_BUSY")) => CallEnd::Busy,
        (Some("Success"), _) | (_, Some("NORMAL_CLEARING")) if duration > 0 => CallEnd::Completed,
        (_, Some("NO_ANSWER" | "NO_USER_RESPONSE" | "ORIGINATOR_CANCEL")) if duration == 0 => CallEnd::NoAnswer,
        (_, Some(cause)) => CallEnd::Failed { reason: hangup_words(cause) },
        (Some(status), None) => CallEnd::Failed { reason: format!("the call ended with status {status}") },
        (None, None) => CallEnd::Failed { reason: "the call ended without a status or a hangup cause".into() },
    }
}

/// Reads an Africa's Talking voice callback (also the voice sandbox's).
pub(crate) fn parse_callback(content_type: &str, body: &[u8]) -> Result<VoiceCallback, CallbackError> {
    let mut fields = callback_fields(content_type, body)?;
    let provider_call_id =
        fields.remove("sessionId").ok_or_else(|| CallbackError("voice callback without a sessionId".into()))?;
    let active = fields.remove("isActive").ok_or_else(|| CallbackError("voice callback without isActive".into()))?;
    let reference = fields.remove("clientRequestId");
    let recording_url = fields.remove("recordingUrl");
    match active.trim() {
        "1" | "true" => Ok(VoiceCallback::Active {
            provider_call_id,
            reference,
            digits: fields.remove("dtmfDigits"),
            recording_url,
        }),
        "0" | "false" => {
            let duration_seconds = seconds(fields.get("durationInSeconds").map(String::as_str))?;
            let end = call_end(
                fields.get("status").map(String::as_str),
                fields.get("hangupCause").map(String::as_str),
                duration_seconds,
            );
            let cost = match (fields.remove("currencyCode"), fields.remove("amount")) {
                (Some(currency), Some(amount)) => Some(format!("{currency} {amount}")),
                _ => None,
            };
            Ok(VoiceCallback::Ended { provider_call_id, reference, end, duration_seconds, cost, recording_url })
        }
        other => Err(CallbackError(format!("isActive is neither 1 nor 0: {other:?}"))),
    }
}

/// Text fit for an XML element or a double-quoted attribute.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

fn voice_for(language: &str) -> &'static str {
    let primary = language.split(['-', '_']).next().unwrap_or_default();
    if primary.eq_ignore_ascii_case("sw") { VOICE_SW } else { VOICE_EN }
}

fn write_say(xml: &mut String, text: &str, language: &str) {
    let _ = write!(xml, r#"<Say voice="{}" playBeep="false">{}</Say>"#, voice_for(language), escape(text));
}

/// AT plays only `Say` and `Play` inside `GetDigits` and `Record`; anything else there would
/// make AT drop the whole answer, so it is left out (and logged).
fn write_prompt(xml: &mut String, prompt: &[VoiceAction]) {
    for action in prompt {
        match action {
            VoiceAction::Say { text, language } => write_say(xml, text, language),
            VoiceAction::Play { url } => {
                let _ = write!(xml, r#"<Play url="{}"/>"#, escape(url));
            }
            other => tracing::warn!(action = ?other, "only Say and Play can prompt; the action is left out"),
        }
    }
}

/// Writes the XML answer to a live callback (also the voice sandbox's).
pub(crate) fn render(actions: &[VoiceAction]) -> (&'static str, String) {
    let mut xml = String::from(r#"<?xml version="1.0" encoding="UTF-8"?><Response>"#);
    for action in actions {
        match action {
            VoiceAction::Say { .. } | VoiceAction::Play { .. } => write_prompt(&mut xml, std::slice::from_ref(action)),
            VoiceAction::GetDigits { prompt, num_digits, finish_on_key, timeout_seconds } => {
                // No callbackUrl: AT then posts the keys to the number's own callback, ours.
                let _ = write!(xml, r#"<GetDigits timeout="{timeout_seconds}""#);
                if let Some(count) = num_digits {
                    let _ = write!(xml, r#" numDigits="{count}""#);
                }
                if let Some(key) = finish_on_key {
                    let _ = write!(xml, r#" finishOnKey="{}""#, escape(&key.to_string()));
                }
                xml.push('>');
                write_prompt(&mut xml, prompt);
                xml.push_str("</GetDigits>");
            }
            VoiceAction::Record { prompt, max_seconds, finish_on_key } => {
                xml.push_str("<Record");
                if let Some(key) = finish_on_key {
                    let _ = write!(xml, r#" finishOnKey="{}""#, escape(&key.to_string()));
                }
                let _ = write!(xml, r#" maxLength="{max_seconds}" trimSilence="true" playBeep="true">"#);
                write_prompt(&mut xml, prompt);
                xml.push_str("</Record>");
            }
            VoiceAction::Dial { numbers, record, caller_id } => {
                let numbers = numbers.iter().map(|n| escape(n.trim())).collect::<Vec<_>>().join(",");
                let _ = write!(xml, r#"<Dial phoneNumbers="{numbers}" record="{record}" sequential="true""#);
                if let Some(caller_id) = caller_id {
                    let _ = write!(xml, r#" callerId="{}""#, escape(caller_id));
                }
                xml.push_str("/>");
            }
            VoiceAction::Hangup => {
                // Nothing after a hangup would play.
                xml.push_str("<Reject/>");
                break;
            }
        }
    }
    xml.push_str("</Response>");
    ("application/xml", xml)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use std::time::Duration;

    use serde_json::json;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::*;

    const API_KEY: &str = "atsk_voice_test_0123456789";
    const FORM: &str = "application/x-www-form-urlencoded";

    fn config(base_url: &str, timeout: Duration) -> AfricasTalkingConfig {
        AfricasTalkingConfig { base_url: base_url.into(), username: "sandbox".into(), api_key: API_KEY.into(), timeout }
    }

    fn gateway(server: &MockServer, timeout: Duration) -> AfricasTalkingVoice {
        AfricasTalkingVoice::new(crate::http_client().expect("http client"), config(&server.uri(), timeout))
    }

    fn offline() -> AfricasTalkingVoice {
        AfricasTalkingVoice::new(crate::http_client().expect("http client"), config("", Duration::from_secs(1)))
    }

    fn call(from: Option<&str>) -> OutboundCall<'_> {
        OutboundCall { reference: "call_01", to: "+254711000111", from }
    }

    async fn server_answering(response: ResponseTemplate) -> MockServer {
        let server = MockServer::start().await;
        Mock::given(method("POST")).and(path("/call")).respond_with(response).mount(&server).await;
        server
    }

    async fn place_with(response: ResponseTemplate) -> Result<PlaceOutcome, SendError> {
        let server = server_answering(response).await;
        gateway(&server, Duration::from_secs(5)).place(call(Some("+254711082000"))).await
    }

    fn entry(status: &str, session_id: &str) -> ResponseTemplate {
        ResponseTemplate::new(200).set_body_json(json!({
            "entries": [{ "phoneNumber": "+254711000111", "status": status, "sessionId": session_id }],
            "errorMessage": "None"
        }))
    }

    #[test]
    fn debug_hides_the_api_key() {
        let text = format!("{:?}", offline());
        assert!(!text.contains(API_KEY), "{text}");
        assert!(text.contains("voice.africastalking.com/call"), "{text}");
    }

    #[test]
    fn the_sms_hosts_are_sent_to_the_voice_hosts() {
        let client = crate::http_client().expect("http client");
        let url = |base: &str| AfricasTalkingVoice::new(client.clone(), config(base, Duration::from_secs(1))).call_url;
        assert_eq!(url(AfricasTalkingConfig::DEFAULT_BASE_URL), "https://voice.africastalking.com/call");
        assert_eq!(url(""), "https://voice.africastalking.com/call");
        assert_eq!(url("https://api.sandbox.africastalking.com/"), "https://voice.sandbox.africastalking.com/call");
        assert_eq!(url(AfricasTalkingVoice::DEFAULT_BASE_URL), "https://voice.africastalking.com/call");
        assert_eq!(url("http://127.0.0.1:8080/"), "http://127.0.0.1:8080/call");
    }

    #[tokio::test]
    async fn a_queued_call_posts_the_form_and_reads_the_session_id() {
        let server = server_answering(entry("Queued", "ATVId_abc123")).await;
        let outcome = gateway(&server, Duration::from_secs(5)).place(call(Some("+254711082000"))).await;
        assert_eq!(outcome, Ok(PlaceOutcome::Placed { provider_call_id: "ATVId_abc123".into(), script: None }));

        let requests = server.received_requests().await.expect("requests are recorded");
        assert_eq!(requests.len(), 1);
        let request = &requests[0];
        assert_eq!(request.method.as_str(), "POST");
        assert_eq!(request.url.path(), "/call");
        let header = |name: &str| request.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        assert_eq!(header("apiKey").as_deref(), Some(API_KEY));
        assert_eq!(header("accept").as_deref(), Some("application/json"));
        assert!(header("content-type").is_some_and(|c| c.starts_with(FORM)));
        let form: HashMap<String, String> = serde_urlencoded::from_bytes(&request.body).expect("a form body");
        let expected: HashMap<String, String> = [
            ("username", "sandbox"),
            ("to", "+254711000111"),
            ("from", "+254711082000"),
            ("clientRequestId", "call_01"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(form, expected);
    }

    #[tokio::test]
    async fn without_a_caller_number_from_is_not_sent() {
        let server = server_answering(entry("Queued", "ATVId_abc123")).await;
        gateway(&server, Duration::from_secs(5)).place(call(None)).await.expect("placed");
        let requests = server.received_requests().await.expect("requests are recorded");
        let form: HashMap<String, String> = serde_urlencoded::from_bytes(&requests[0].body).expect("a form body");
        assert!(!form.contains_key("from"), "{form:?}");
        assert_eq!(form.get("clientRequestId").map(String::as_str), Some("call_01"));
    }

    #[tokio::test]
    async fn a_refused_entry_is_refused_in_words() {
        let outcome = place_with(entry("InvalidPhoneNumber", "None")).await;
        let Ok(PlaceOutcome::Refused { reason }) = outcome else { panic!("expected Refused, got {outcome:?}") };
        assert_eq!(reason, "the number is not a valid phone number (InvalidPhoneNumber)");

        let outcome = place_with(entry("SomethingNew", "None")).await;
        assert_eq!(
            outcome,
            Ok(PlaceOutcome::Refused { reason: "Africa's Talking refused the call (SomethingNew)".into() })
        );

        let with_message = ResponseTemplate::new(200).set_body_json(json!({
            "entries": [{ "status": "InsufficientCredit", "errorMessage": "Balance is KES 0.00" }],
            "errorMessage": "None"
        }));
        let Ok(PlaceOutcome::Refused { reason }) = place_with(with_message).await else { panic!("expected Refused") };
        assert!(reason.contains("InsufficientCredit") && reason.ends_with("Balance is KES 0.00"), "{reason}");
    }

    #[tokio::test]
    async fn an_error_message_without_entries_is_refused_with_it() {
        let body = json!({ "entries": [], "errorMessage": "Invalid callerId: +254711082000" });
        let outcome = place_with(ResponseTemplate::new(200).set_body_json(body)).await;
        assert_eq!(outcome, Ok(PlaceOutcome::Refused { reason: "Invalid callerId: +254711082000".into() }));
    }

    #[tokio::test]
    async fn a_client_error_that_explains_itself_is_refused() {
        let body = json!({ "errorMessage": "Invalid phone number: 0711" });
        let outcome = place_with(ResponseTemplate::new(400).set_body_json(body)).await;
        assert_eq!(outcome, Ok(PlaceOutcome::Refused { reason: "Invalid phone number: 0711".into() }));
        let outcome = place_with(ResponseTemplate::new(400).set_body_string("Bad Request")).await;
        assert_eq!(outcome, Err(SendError::Status { status: 400 }));
    }

    #[tokio::test]
    async fn server_errors_and_bad_credentials_are_status_errors() {
        for status in [500, 503, 401, 403] {
            let body = json!({ "entries": [], "errorMessage": "The supplied authentication is invalid" });
            let outcome = place_with(ResponseTemplate::new(status).set_body_json(body)).await;
            assert_eq!(outcome, Err(SendError::Status { status }));
        }
    }

    #[tokio::test]
    async fn a_slow_answer_is_a_timeout() {
        let server = server_answering(entry("Queued", "ATVId_late").set_delay(Duration::from_millis(500))).await;
        let outcome = gateway(&server, Duration::from_millis(50)).place(call(None)).await;
        assert_eq!(outcome, Err(SendError::Timeout));
    }

    #[tokio::test]
    async fn a_closed_port_is_a_transport_error() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let voice = AfricasTalkingVoice::new(
            crate::http_client().expect("http client"),
            config(&format!("http://127.0.0.1:{port}"), Duration::from_secs(2)),
        );
        let outcome = voice.place(call(None)).await;
        let Err(SendError::Transport(text)) = outcome else { panic!("expected Transport, got {outcome:?}") };
        assert!(!text.contains(API_KEY));
    }

    #[tokio::test]
    async fn an_unreadable_answer_is_malformed() {
        for response in [
            ResponseTemplate::new(200).set_body_string("<html>gateway</html>"),
            ResponseTemplate::new(200).set_body_json(json!({ "status": "ok" })),
            ResponseTemplate::new(200).set_body_json(json!({ "entries": [], "errorMessage": "None" })),
            entry("Queued", "None"),
            ResponseTemplate::new(200).set_body_json(json!({ "entries": [{ "sessionId": "ATVId_1" }] })),
        ] {
            let outcome = place_with(response).await;
            assert!(matches!(outcome, Err(SendError::Malformed(_))), "{outcome:?}");
        }
    }

    fn parse(body: &str) -> Result<VoiceCallback, CallbackError> {
        offline().parse_callback(FORM, body.as_bytes())
    }

    fn ended(body: &str) -> (CallEnd, u32) {
        match parse(body) {
            Ok(VoiceCallback::Ended { end, duration_seconds, .. }) => (end, duration_seconds),
            other => panic!("expected Ended, got {other:?}"),
        }
    }

    #[test]
    fn an_active_callback_carries_the_digits_and_the_reference() {
        let callback = parse(
            "isActive=1&sessionId=ATVId_1&clientRequestId=call_01&direction=Outbound&dtmfDigits=1%23\
             &callerNumber=%2B254711082000&destinationNumber=%2B254711000111&callSessionState=Active",
        );
        assert_eq!(
            callback,
            Ok(VoiceCallback::Active {
                provider_call_id: "ATVId_1".into(),
                reference: Some("call_01".into()),
                digits: Some("1#".into()),
                recording_url: None,
            })
        );
        // the first callback of an answered call: no keys yet, no reference sent, empty fields
        let first = parse("isActive=1&sessionId=ATVId_2&dtmfDigits=&recordingUrl=&clientRequestId=");
        assert_eq!(
            first,
            Ok(VoiceCallback::Active {
                provider_call_id: "ATVId_2".into(),
                reference: None,
                digits: None,
                recording_url: None,
            })
        );
        let recorded = parse("isActive=1&sessionId=ATVId_3&recordingUrl=https%3A%2F%2Fat.example%2Fr.mp3");
        assert!(
            matches!(&recorded, Ok(VoiceCallback::Active { recording_url: Some(url), .. }) if url == "https://at.example/r.mp3"),
            "{recorded:?}"
        );
    }

    #[test]
    fn a_completed_call_carries_its_duration_cost_and_recording() {
        let callback = parse(
            "isActive=0&sessionId=ATVId_1&clientRequestId=call_01&status=Success&hangupCause=NORMAL_CLEARING\
             &durationInSeconds=42&currencyCode=KES&amount=2.5000&recordingUrl=https%3A%2F%2Fat.example%2Fr.mp3\
             &callSessionState=Completed",
        );
        assert_eq!(
            callback,
            Ok(VoiceCallback::Ended {
                provider_call_id: "ATVId_1".into(),
                reference: Some("call_01".into()),
                end: CallEnd::Completed,
                duration_seconds: 42,
                cost: Some("KES 2.5000".into()),
                recording_url: Some("https://at.example/r.mp3".into()),
            })
        );
        assert_eq!(ended("isActive=0&sessionId=s&status=Success&durationInSeconds=3"), (CallEnd::Completed, 3));
        assert_eq!(
            ended("isActive=0&sessionId=s&hangupCause=NORMAL_CLEARING&durationInSeconds=7.6"),
            (CallEnd::Completed, 8)
        );
    }

    #[test]
    fn busy_and_unanswered_calls_are_told_apart() {
        assert_eq!(
            ended("isActive=0&sessionId=s&status=Failed&hangupCause=USER_BUSY&durationInSeconds=0"),
            (CallEnd::Busy, 0)
        );
        for cause in ["NO_ANSWER", "NO_USER_RESPONSE", "ORIGINATOR_CANCEL"] {
            let body = format!("isActive=0&sessionId=s&status=Failed&hangupCause={cause}&durationInSeconds=0");
            assert_eq!(ended(&body), (CallEnd::NoAnswer, 0), "{cause}");
        }
        // no duration at all counts as 0 s
        assert_eq!(ended("isActive=0&sessionId=s&status=Failed&hangupCause=NO_ANSWER"), (CallEnd::NoAnswer, 0));
    }

    #[test]
    fn other_ends_are_failures_in_words() {
        let failed = |body: &str| match ended(body).0 {
            CallEnd::Failed { reason } => reason,
            other => panic!("expected Failed, got {other:?}"),
        };
        assert_eq!(
            failed("isActive=0&sessionId=s&status=Failed&hangupCause=CALL_REJECTED&durationInSeconds=0"),
            "the callee rejected the call (CALL_REJECTED)"
        );
        assert_eq!(
            failed("isActive=0&sessionId=s&status=Failed&hangupCause=UNALLOCATED_NUMBER"),
            "the number is not in service (UNALLOCATED_NUMBER)"
        );
        assert_eq!(
            failed("isActive=0&sessionId=s&hangupCause=BEARERCAPABILITY_NOTAUTH"),
            "bearercapability notauth (BEARERCAPABILITY_NOTAUTH)"
        );
        // cleared without ever being on the line
        assert_eq!(
            failed("isActive=0&sessionId=s&status=Success&hangupCause=NORMAL_CLEARING&durationInSeconds=0"),
            "the call was cleared before it was answered (NORMAL_CLEARING)"
        );
        assert_eq!(failed("isActive=0&sessionId=s&status=Aborted"), "the call ended with status Aborted");
        assert!(failed("isActive=0&sessionId=s").contains("without a status"));
    }

    #[test]
    fn a_cost_needs_both_its_currency_and_amount() {
        let cost = |body: &str| match parse(body) {
            Ok(VoiceCallback::Ended { cost, .. }) => cost,
            other => panic!("expected Ended, got {other:?}"),
        };
        assert_eq!(cost("isActive=0&sessionId=s&amount=2.5"), None);
        assert_eq!(cost("isActive=0&sessionId=s&currencyCode=KES&amount="), None);
        assert_eq!(cost("isActive=0&sessionId=s&currencyCode=UGX&amount=150"), Some("UGX 150".into()));
    }

    #[test]
    fn a_json_callback_is_read_too() {
        let voice = offline();
        let callback = voice
            .parse_callback(
                "application/json",
                br#"{"isActive":"0","sessionId":"s","hangupCause":"USER_BUSY","durationInSeconds":0}"#,
            )
            .expect("a callback");
        assert!(matches!(callback, VoiceCallback::Ended { end: CallEnd::Busy, .. }), "{callback:?}");
    }

    #[test]
    fn malformed_callbacks_are_refused() {
        for body in [
            "isActive=1",
            "sessionId=ATVId_1&dtmfDigits=1",
            "isActive=&sessionId=ATVId_1",
            "isActive=2&sessionId=ATVId_1",
            "isActive=0&sessionId=ATVId_1&durationInSeconds=ten",
            "isActive=0&sessionId=ATVId_1&durationInSeconds=-3",
            "",
        ] {
            assert!(parse(body).is_err(), "{body}");
        }
        assert!(offline().parse_callback("application/json", b"isActive=1&sessionId=s").is_err());
        assert!(offline().parse_callback("application/json", b"[1]").is_err());
    }

    const HEAD: &str = r#"<?xml version="1.0" encoding="UTF-8"?><Response>"#;

    fn rendered(actions: &[VoiceAction]) -> String {
        let (content_type, body) = offline().render(actions);
        assert_eq!(content_type, "application/xml");
        let inner = body.strip_prefix(HEAD).and_then(|b| b.strip_suffix("</Response>"));
        inner.unwrap_or_else(|| panic!("not a Response: {body}")).to_owned()
    }

    fn say(text: &str, language: &str) -> VoiceAction {
        VoiceAction::Say { text: text.into(), language: language.into() }
    }

    #[test]
    fn say_and_play_are_rendered_with_escaping() {
        assert_eq!(
            rendered(&[say(r#"Tom & "Jerry" <3 it's"#, "en")]),
            r#"<Say voice="en-US-Standard-C" playBeep="false">Tom &amp; &quot;Jerry&quot; &lt;3 it&apos;s</Say>"#
        );
        assert_eq!(rendered(&[say("Habari", "sw")]), r#"<Say voice="woman" playBeep="false">Habari</Say>"#);
        assert_eq!(
            rendered(&[VoiceAction::Play { url: "https://cdn.example/a.mp3?x=1&y=\"2\"".into() }]),
            r#"<Play url="https://cdn.example/a.mp3?x=1&amp;y=&quot;2&quot;"/>"#
        );
        assert_eq!(rendered(&[]), "");
    }

    #[test]
    fn get_digits_is_rendered_without_absent_attributes() {
        let full = VoiceAction::GetDigits {
            prompt: vec![say("Press 1", "en"), VoiceAction::Play { url: "https://x/b.mp3".into() }],
            num_digits: Some(1),
            finish_on_key: Some('#'),
            timeout_seconds: 10,
        };
        assert_eq!(
            rendered(&[full]),
            r##"<GetDigits timeout="10" numDigits="1" finishOnKey="#"><Say voice="en-US-Standard-C" playBeep="false">Press 1</Say><Play url="https://x/b.mp3"/></GetDigits>"##
        );
        let bare = VoiceAction::GetDigits { prompt: vec![], num_digits: None, finish_on_key: None, timeout_seconds: 5 };
        assert_eq!(rendered(&[bare]), r#"<GetDigits timeout="5"></GetDigits>"#);
        // only Say and Play can prompt
        let nested = VoiceAction::GetDigits {
            prompt: vec![VoiceAction::Hangup, say("Hi", "en")],
            num_digits: None,
            finish_on_key: None,
            timeout_seconds: 5,
        };
        assert_eq!(
            rendered(&[nested]),
            r#"<GetDigits timeout="5"><Say voice="en-US-Standard-C" playBeep="false">Hi</Say></GetDigits>"#
        );
    }

    #[test]
    fn record_is_rendered() {
        let record = VoiceAction::Record {
            prompt: vec![say("After the beep", "en")],
            max_seconds: 60,
            finish_on_key: Some('#'),
        };
        assert_eq!(
            rendered(&[record]),
            r##"<Record finishOnKey="#" maxLength="60" trimSilence="true" playBeep="true"><Say voice="en-US-Standard-C" playBeep="false">After the beep</Say></Record>"##
        );
        let bare = VoiceAction::Record { prompt: vec![], max_seconds: 30, finish_on_key: None };
        assert_eq!(rendered(&[bare]), r#"<Record maxLength="30" trimSilence="true" playBeep="true"></Record>"#);
    }

    #[test]
    fn dial_is_rendered() {
        let dial = VoiceAction::Dial {
            numbers: vec!["+254711000111".into(), "+254711000222".into()],
            record: true,
            caller_id: Some("+254711082000".into()),
        };
        assert_eq!(
            rendered(&[dial]),
            r#"<Dial phoneNumbers="+254711000111,+254711000222" record="true" sequential="true" callerId="+254711082000"/>"#
        );
        let plain = VoiceAction::Dial { numbers: vec!["+254711000111".into()], record: false, caller_id: None };
        assert_eq!(rendered(&[plain]), r#"<Dial phoneNumbers="+254711000111" record="false" sequential="true"/>"#);
    }

    #[test]
    fn hangup_is_a_reject_and_ends_the_answer() {
        assert_eq!(rendered(&[VoiceAction::Hangup]), "<Reject/>");
        assert_eq!(
            rendered(&[say("Bye", "en"), VoiceAction::Hangup, say("never", "en")]),
            r#"<Say voice="en-US-Standard-C" playBeep="false">Bye</Say><Reject/>"#
        );
    }
}
