//! The sandbox SMS provider: the default when no aggregator is configured. Like Twilio's test
//! numbers, the last four digits of the recipient decide what happens, and everything it was
//! asked to send is recorded so tests can look.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde::Deserialize;

use crate::sms::{
    CallbackError, DeliveryReceipt, InboundSms, OutboundSms, ReceiptStatus, ScheduledReceipt, SendError, SendOutcome,
    SmsGateway,
};

const REFUSED_REASON: &str = "Sandbox: numbers ending in 0001 are refused by the provider";
const FAILED_REASON: &str = "Sandbox: numbers ending in 0003 fail delivery";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxConfig {
    /// How long after acceptance the announced receipt arrives.
    pub delivery_delay: Duration,
    /// How many recent messages the record keeps (a long-running sandbox must not grow
    /// without bound); counts cover every message.
    pub keep: usize,
}

/// Messages the record keeps by default: a few megabytes.
pub const DEFAULT_KEEP: usize = 10_000;

impl Default for SandboxConfig {
    fn default() -> Self {
        Self { delivery_delay: Duration::from_millis(1000), keep: DEFAULT_KEEP }
    }
}

/// What the sandbox decided for a message, from the recipient's last four digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxOutcome {
    /// `...0001`: refused at send.
    Refused,
    /// `...0002`: accepted, never receipted.
    NoReceipt,
    /// `...0003`: accepted, then a failed receipt.
    FailsDelivery,
    /// Any other number: accepted, then a delivered receipt.
    Delivered,
}

impl SandboxOutcome {
    /// Judges a number on the last four of its digits, ignoring `+` and separators.
    pub fn for_number(to: &str) -> SandboxOutcome {
        let digits: Vec<u8> = to.bytes().filter(u8::is_ascii_digit).collect();
        match digits.len().checked_sub(4).map(|start| &digits[start..]) {
            Some(b"0001") => SandboxOutcome::Refused,
            Some(b"0002") => SandboxOutcome::NoReceipt,
            Some(b"0003") => SandboxOutcome::FailsDelivery,
            _ => SandboxOutcome::Delivered,
        }
    }

    /// What a status query says about an accepted message.
    fn receipt_status(self) -> ReceiptStatus {
        match self {
            SandboxOutcome::Delivered => ReceiptStatus::Delivered,
            SandboxOutcome::FailsDelivery => ReceiptStatus::Failed { reason: FAILED_REASON.to_owned() },
            SandboxOutcome::NoReceipt | SandboxOutcome::Refused => ReceiptStatus::Pending,
        }
    }
}

/// One message the sandbox was asked to send (the first call for its reference).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSms {
    pub reference: String,
    pub to: String,
    pub from: Option<String>,
    pub body: String,
    /// `None` when refused.
    pub provider_message_id: Option<String>,
    pub outcome: SandboxOutcome,
}

/// Messages are numbered from 0 in the order asked; `messages[0]` is number `first`.
#[derive(Default)]
struct Record {
    messages: VecDeque<SandboxSms>,
    first: usize,
    by_reference: HashMap<String, usize>,
    by_id: HashMap<String, usize>,
    calls: usize,
}

impl Record {
    fn get(&self, number: usize) -> Option<&SandboxSms> {
        number.checked_sub(self.first).and_then(|i| self.messages.get(i))
    }

    /// Forgets the oldest messages beyond `keep`.
    fn trim(&mut self, keep: usize) {
        while self.messages.len() > keep.max(1) {
            if let Some(old) = self.messages.pop_front() {
                self.by_reference.remove(&old.reference);
                if let Some(id) = &old.provider_message_id {
                    self.by_id.remove(id);
                }
                self.first += 1;
            }
        }
    }
}

/// The sandbox gateway, shared as `Arc<Sandbox>` across the process.
pub struct Sandbox {
    config: SandboxConfig,
    record: Mutex<Record>,
}

impl Sandbox {
    pub fn new(config: SandboxConfig) -> Self {
        Self { config, record: Mutex::new(Record::default()) }
    }

    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// The distinct messages asked for, in order (the most recent `keep` of them).
    pub fn sent(&self) -> Vec<SandboxSms> {
        self.record().messages.iter().cloned().collect()
    }

    /// The messages asked for to one number (as it was given to `send`).
    pub fn sent_to(&self, to: &str) -> Vec<SandboxSms> {
        self.record().messages.iter().filter(|m| m.to == to).cloned().collect()
    }

    /// Distinct messages (by reference) ever asked for, refused ones included.
    pub fn count(&self) -> usize {
        let record = self.record();
        record.first + record.messages.len()
    }

    /// Every call of `send`, repeats of a reference included.
    pub fn calls(&self) -> usize {
        self.record().calls
    }

    /// A panic elsewhere while holding the lock leaves the record usable, so poisoning is ignored.
    fn record(&self) -> MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The answer to a send, rebuilt from the record so a repeat gets the same one.
    fn send_outcome(&self, message: &SandboxSms) -> SendOutcome {
        let (outcome, Some(id)) = (message.outcome, &message.provider_message_id) else {
            return SendOutcome::Refused { reason: REFUSED_REASON.to_owned() };
        };
        let receipts = match outcome {
            SandboxOutcome::Delivered | SandboxOutcome::FailsDelivery => {
                vec![ScheduledReceipt { after: self.config.delivery_delay, status: outcome.receipt_status() }]
            }
            SandboxOutcome::NoReceipt | SandboxOutcome::Refused => Vec::new(),
        };
        SendOutcome::Accepted { provider_message_id: id.clone(), cost: None, receipts }
    }
}

#[derive(Deserialize)]
struct ReceiptBody {
    id: String,
    status: String,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct InboundBody {
    from: String,
    to: String,
    text: String,
    #[serde(default)]
    id: Option<String>,
}

/// The sandbox's simulated callbacks are JSON only.
fn json_body<'a, T: Deserialize<'a>>(content_type: &str, body: &'a [u8]) -> Result<T, CallbackError> {
    if !content_type.to_ascii_lowercase().contains("json") {
        return Err(CallbackError(format!("the sandbox reads JSON callbacks, not {content_type:?}")));
    }
    serde_json::from_slice(body).map_err(|e| CallbackError(format!("not a sandbox callback: {e}")))
}

#[async_trait::async_trait]
impl SmsGateway for Sandbox {
    async fn send(&self, sms: OutboundSms<'_>) -> Result<SendOutcome, SendError> {
        let mut record = self.record();
        record.calls += 1;
        // Idempotent on the reference: a repeat gets the first answer and records nothing new.
        if let Some(message) = record.by_reference.get(sms.reference).and_then(|&n| record.get(n)) {
            return Ok(self.send_outcome(message));
        }
        let outcome = SandboxOutcome::for_number(sms.to);
        let provider_message_id =
            (outcome != SandboxOutcome::Refused).then(|| format!("sbx_{}", uuid::Uuid::new_v4().simple()));
        let message = SandboxSms {
            reference: sms.reference.to_owned(),
            to: sms.to.to_owned(),
            from: sms.from.map(str::to_owned),
            body: sms.body.to_owned(),
            provider_message_id,
            outcome,
        };
        let number = record.first + record.messages.len();
        record.by_reference.insert(message.reference.clone(), number);
        if let Some(id) = &message.provider_message_id {
            record.by_id.insert(id.clone(), number);
        }
        let answer = self.send_outcome(&message);
        record.messages.push_back(message);
        record.trim(self.config.keep);
        tracing::debug!(reference = sms.reference, ?outcome, "sandbox SMS");
        Ok(answer)
    }

    async fn status(&self, provider_message_id: &str) -> Result<ReceiptStatus, SendError> {
        let record = self.record();
        // An unknown id (or one forgotten beyond `keep`) has nothing to say.
        Ok(match record.by_id.get(provider_message_id).and_then(|&n| record.get(n)) {
            Some(message) => message.outcome.receipt_status(),
            None => ReceiptStatus::Pending,
        })
    }

    fn parse_receipt(&self, content_type: &str, body: &[u8]) -> Result<DeliveryReceipt, CallbackError> {
        let receipt: ReceiptBody = json_body(content_type, body)?;
        let status = if receipt.status.eq_ignore_ascii_case("delivered") {
            ReceiptStatus::Delivered
        } else if receipt.status.eq_ignore_ascii_case("failed") {
            ReceiptStatus::Failed { reason: receipt.reason.unwrap_or_else(|| "Sandbox: delivery failed".to_owned()) }
        } else {
            return Err(CallbackError(format!("unknown sandbox status {:?}", receipt.status)));
        };
        Ok(DeliveryReceipt { provider_message_id: receipt.id, status, provider_status: receipt.status })
    }

    fn parse_inbound(&self, content_type: &str, body: &[u8]) -> Result<InboundSms, CallbackError> {
        let inbound: InboundBody = json_body(content_type, body)?;
        Ok(InboundSms { provider_message_id: inbound.id, from: inbound.from, to: inbound.to, text: inbound.text })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sms<'a>(reference: &'a str, to: &'a str) -> OutboundSms<'a> {
        OutboundSms { reference, to, from: Some("SANDBOX"), body: "hello" }
    }

    fn sandbox() -> Sandbox {
        Sandbox::new(SandboxConfig { delivery_delay: Duration::from_millis(5), ..SandboxConfig::default() })
    }

    fn accepted_id(outcome: &SendOutcome) -> String {
        match outcome {
            SendOutcome::Accepted { provider_message_id, .. } => provider_message_id.clone(),
            other => panic!("expected Accepted, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn an_ordinary_number_is_delivered_after_the_delay() {
        let sandbox = sandbox();
        let outcome = sandbox.send(sms("m1", "+255712345678")).await.expect("send");
        let SendOutcome::Accepted { provider_message_id, cost, receipts } = outcome else {
            panic!("expected Accepted, got {outcome:?}");
        };
        assert!(provider_message_id.starts_with("sbx_"));
        assert_eq!(provider_message_id.len(), 4 + 32);
        assert_eq!(cost, None);
        assert_eq!(receipts, [ScheduledReceipt { after: Duration::from_millis(5), status: ReceiptStatus::Delivered }]);
        assert_eq!(sandbox.status(&provider_message_id).await, Ok(ReceiptStatus::Delivered));
    }

    #[tokio::test]
    async fn numbers_ending_0001_are_refused_without_an_id() {
        let sandbox = sandbox();
        let outcome = sandbox.send(sms("m1", "+255 700 000 001")).await.expect("send");
        let SendOutcome::Refused { reason } = outcome else { panic!("expected Refused, got {outcome:?}") };
        assert!(reason.contains("0001"), "{reason}");
        let sent = sandbox.sent();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].provider_message_id, None);
        assert_eq!(sent[0].outcome, SandboxOutcome::Refused);
        assert_eq!(sandbox.count(), 1);
    }

    #[tokio::test]
    async fn numbers_ending_0002_never_get_a_receipt() {
        let sandbox = sandbox();
        let outcome = sandbox.send(sms("m1", "+255700000002")).await.expect("send");
        let SendOutcome::Accepted { ref receipts, ref provider_message_id, .. } = outcome else {
            panic!("expected Accepted, got {outcome:?}");
        };
        assert!(receipts.is_empty());
        assert_eq!(sandbox.status(provider_message_id).await, Ok(ReceiptStatus::Pending));
    }

    #[tokio::test]
    async fn numbers_ending_0003_fail_delivery() {
        let sandbox = sandbox();
        let outcome = sandbox.send(sms("m1", "+255700000003")).await.expect("send");
        let SendOutcome::Accepted { receipts, provider_message_id, .. } = &outcome else {
            panic!("expected Accepted with a receipt, got {outcome:?}");
        };
        let [receipt] = &receipts[..] else { panic!("one receipt, got {receipts:?}") };
        assert_eq!(receipt.after, Duration::from_millis(5));
        let ReceiptStatus::Failed { reason } = &receipt.status else { panic!("expected Failed, got {receipt:?}") };
        assert!(reason.contains("0003"), "{reason}");
        assert_eq!(sandbox.status(provider_message_id).await, Ok(receipt.status.clone()));
    }

    #[tokio::test]
    async fn a_repeated_reference_returns_the_first_answer_and_records_once() {
        let sandbox = sandbox();
        let first = sandbox.send(sms("m1", "+255712345678")).await.expect("send");
        let second = sandbox.send(sms("m1", "+255712345678")).await.expect("send");
        assert_eq!(first, second);
        assert_eq!(sandbox.calls(), 2);
        assert_eq!(sandbox.count(), 1);

        let refused = sandbox.send(sms("m2", "+255700000001")).await.expect("send");
        assert_eq!(sandbox.send(sms("m2", "+255700000001")).await.expect("send"), refused);
        assert_eq!((sandbox.calls(), sandbox.count()), (4, 2));
    }

    #[tokio::test]
    async fn it_records_what_it_was_asked_to_send() {
        let sandbox = sandbox();
        let id = accepted_id(&sandbox.send(sms("m1", "+255712345678")).await.expect("send"));
        sandbox
            .send(OutboundSms { reference: "m2", to: "+255799999999", from: None, body: "other" })
            .await
            .expect("send");
        sandbox.send(sms("m3", "+255712345678")).await.expect("send");
        let to_first = sandbox.sent_to("+255712345678");
        assert_eq!(to_first.len(), 2);
        assert_eq!(
            to_first[0],
            SandboxSms {
                reference: "m1".into(),
                to: "+255712345678".into(),
                from: Some("SANDBOX".into()),
                body: "hello".into(),
                provider_message_id: Some(id),
                outcome: SandboxOutcome::Delivered,
            }
        );
        assert_eq!(sandbox.sent_to("+255799999999")[0].from, None);
        assert_eq!(sandbox.sent().iter().map(|m| m.reference.as_str()).collect::<Vec<_>>(), ["m1", "m2", "m3"]);
    }

    #[tokio::test]
    async fn an_unknown_id_is_pending() {
        assert_eq!(sandbox().status("sbx_unknown").await, Ok(ReceiptStatus::Pending));
    }

    #[test]
    fn short_numbers_are_ordinary() {
        assert_eq!(SandboxOutcome::for_number("001"), SandboxOutcome::Delivered);
        assert_eq!(SandboxOutcome::for_number("0001"), SandboxOutcome::Refused);
    }

    #[tokio::test]
    async fn the_record_keeps_the_most_recent_messages_and_counts_them_all() {
        let sandbox = Sandbox::new(SandboxConfig { keep: 2, ..SandboxConfig::default() });
        let mut ids = Vec::new();
        for (i, to) in ["+255712340011", "+255712340012", "+255712340013"].into_iter().enumerate() {
            let reference = format!("msg_{i}");
            let sms = OutboundSms { reference: &reference, to, from: None, body: "hi" };
            match sandbox.send(sms).await {
                Ok(SendOutcome::Accepted { provider_message_id, .. }) => ids.push(provider_message_id),
                other => panic!("accepted, got {other:?}"),
            }
        }
        assert_eq!(sandbox.count(), 3);
        let kept: Vec<String> = sandbox.sent().into_iter().map(|m| m.to).collect();
        assert_eq!(kept, ["+255712340012", "+255712340013"]);
        // the forgotten one has nothing to say; the kept ones still answer
        assert_eq!(sandbox.status(&ids[0]).await, Ok(ReceiptStatus::Pending));
        assert_eq!(sandbox.status(&ids[2]).await, Ok(ReceiptStatus::Delivered));
        // a repeat of a kept reference is still recognised
        let again = OutboundSms { reference: "msg_2", to: "+255712340013", from: None, body: "hi" };
        assert!(
            matches!(sandbox.send(again).await, Ok(SendOutcome::Accepted { provider_message_id, .. }) if provider_message_id == ids[2])
        );
        assert_eq!((sandbox.count(), sandbox.calls()), (3, 4));
    }

    #[test]
    fn json_receipts_are_read() {
        let sandbox = sandbox();
        let delivered = sandbox
            .parse_receipt("application/json", br#"{"id":"sbx_1","status":"delivered"}"#)
            .expect("delivered receipt");
        assert_eq!(
            delivered,
            DeliveryReceipt {
                provider_message_id: "sbx_1".into(),
                status: ReceiptStatus::Delivered,
                provider_status: "delivered".into(),
            }
        );
        let failed = sandbox
            .parse_receipt("application/json; charset=utf-8", br#"{"id":"sbx_2","status":"failed","reason":"off"}"#)
            .expect("failed receipt");
        assert_eq!(failed.status, ReceiptStatus::Failed { reason: "off".into() });

        for (content_type, body) in [
            ("application/json", &br#"{"id":"sbx_1","status":"lost"}"#[..]),
            ("application/json", br#"{"status":"delivered"}"#),
            ("application/json", b"not json"),
            ("application/x-www-form-urlencoded", b"id=sbx_1&status=delivered"),
        ] {
            assert!(sandbox.parse_receipt(content_type, body).is_err(), "{content_type} {body:?}");
        }
    }

    #[test]
    fn json_inbound_messages_are_read() {
        let sandbox = sandbox();
        let inbound = sandbox
            .parse_inbound("application/json", br#"{"from":"+255712345678","to":"15000","text":"STOP","id":"in1"}"#)
            .expect("inbound");
        assert_eq!(
            inbound,
            InboundSms {
                provider_message_id: Some("in1".into()),
                from: "+255712345678".into(),
                to: "15000".into(),
                text: "STOP".into(),
            }
        );
        let without_id =
            sandbox.parse_inbound("application/json", br#"{"from":"+1","to":"2","text":""}"#).expect("inbound");
        assert_eq!(without_id.provider_message_id, None);

        assert!(sandbox.parse_inbound("application/json", br#"{"to":"2","text":"hi"}"#).is_err());
        assert!(sandbox.parse_inbound("text/plain", br#"{"from":"+1","to":"2","text":"hi"}"#).is_err());
    }
}
