//! The sandbox voice provider: the default when no voice provider is configured. Like the SMS
//! sandbox, the last four digits of the callee decide how the call plays out, announced up
//! front as a script; every call is recorded so tests can look. Its callbacks and answers are
//! Africa's Talking's, so tests post AT-shaped callbacks to sandbox channels.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::voice::{
    CallEnd, CallScript, CallbackError, OutboundCall, PlaceOutcome, ScriptedAnswer, SendError, VoiceAction,
    VoiceCallback, VoiceGateway,
};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoiceSandboxConfig {
    /// How long after the request the callee answers (or the call fails).
    pub answer_delay: Duration,
    /// How many recent calls the record keeps (a long-running sandbox must not grow without
    /// bound); counts cover every call.
    pub keep: usize,
}

impl Default for VoiceSandboxConfig {
    fn default() -> Self {
        Self { answer_delay: Duration::from_secs(1), keep: crate::sandbox::DEFAULT_KEEP }
    }
}

/// One call the sandbox was asked to place.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxCall {
    pub reference: String,
    pub to: String,
    pub from: Option<String>,
    pub provider_call_id: String,
    pub script: CallScript,
}

#[derive(Default)]
struct Record {
    calls: VecDeque<SandboxCall>,
    /// Every call ever placed, forgotten ones included.
    placed: usize,
    /// Calls ever placed per number: one small entry per distinct number, never trimmed, so
    /// "called twice" stays provable after the calls themselves are forgotten.
    per_number: HashMap<String, usize>,
}

/// The sandbox voice gateway, shared as `Arc<VoiceSandbox>` across the process.
pub struct VoiceSandbox {
    config: VoiceSandboxConfig,
    record: Mutex<Record>,
}

impl VoiceSandbox {
    pub fn new(config: VoiceSandboxConfig) -> Self {
        Self { config, record: Mutex::new(Record::default()) }
    }

    pub fn config(&self) -> &VoiceSandboxConfig {
        &self.config
    }

    /// How a call to `to` plays out, judged on the last four of its digits (ignoring `+` and
    /// separators): `0001` busy, `0002` no answer, `0003` answered and hung up after 4 s,
    /// `0004` answered with `1` pressed at every prompt, any other answered for 42 s without
    /// keys.
    pub fn script_for(to: &str, after: Duration) -> CallScript {
        let digits: Vec<u8> = to.bytes().filter(u8::is_ascii_digit).collect();
        let answer = match digits.len().checked_sub(4).map(|start| &digits[start..]) {
            Some(b"0001") => ScriptedAnswer::NotAnswered(CallEnd::Busy),
            Some(b"0002") => ScriptedAnswer::NotAnswered(CallEnd::NoAnswer),
            Some(b"0003") => ScriptedAnswer::Answered { seconds: 4, digits: None, hangs_up_early: true },
            Some(b"0004") => ScriptedAnswer::Answered { seconds: 42, digits: Some("1".into()), hangs_up_early: false },
            _ => ScriptedAnswer::Answered { seconds: 42, digits: None, hangs_up_early: false },
        };
        CallScript { after, answer }
    }

    /// The calls placed, in order (the most recent `keep` of them).
    pub fn calls(&self) -> Vec<SandboxCall> {
        self.record().calls.iter().cloned().collect()
    }

    /// How many calls were ever placed to `to` (as it was given to `place`).
    pub fn count_to(&self, to: &str) -> usize {
        self.record().per_number.get(to).copied().unwrap_or(0)
    }

    /// How many calls were ever placed.
    pub fn count(&self) -> usize {
        self.record().placed
    }

    /// A panic elsewhere while holding the lock leaves the record usable, so poisoning is ignored.
    fn record(&self) -> MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait::async_trait]
impl VoiceGateway for VoiceSandbox {
    async fn place(&self, call: OutboundCall<'_>) -> Result<PlaceOutcome, SendError> {
        // Not idempotent on the reference, unlike the SMS sandbox: a real provider rings again
        // for a repeated request, and a test must see a call placed twice.
        let script = Self::script_for(call.to, self.config.answer_delay);
        let provider_call_id = format!("SBVId_{}", uuid::Uuid::new_v4().simple());
        let placed = SandboxCall {
            reference: call.reference.to_owned(),
            to: call.to.to_owned(),
            from: call.from.map(str::to_owned),
            provider_call_id: provider_call_id.clone(),
            script: script.clone(),
        };
        let mut record = self.record();
        record.placed += 1;
        *record.per_number.entry(placed.to.clone()).or_default() += 1;
        record.calls.push_back(placed);
        while record.calls.len() > self.config.keep.max(1) {
            record.calls.pop_front();
        }
        drop(record);
        tracing::debug!(reference = call.reference, provider_call_id, answer = ?script.answer, "sandbox call");
        Ok(PlaceOutcome::Placed { provider_call_id, script: Some(script) })
    }

    fn parse_callback(&self, content_type: &str, body: &[u8]) -> Result<VoiceCallback, CallbackError> {
        crate::africastalking_voice::parse_callback(content_type, body)
    }

    fn render(&self, actions: &[VoiceAction]) -> (&'static str, String) {
        crate::africastalking_voice::render(actions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn sandbox() -> VoiceSandbox {
        VoiceSandbox::new(VoiceSandboxConfig {
            answer_delay: Duration::from_millis(5),
            ..VoiceSandboxConfig::default()
        })
    }

    fn call<'a>(reference: &'a str, to: &'a str) -> OutboundCall<'a> {
        OutboundCall { reference, to, from: Some("+254711082000") }
    }

    #[test]
    fn the_default_answers_after_a_second() {
        let config = VoiceSandboxConfig::default();
        assert_eq!(config.answer_delay, SECOND);
        assert_eq!(config.keep, crate::sandbox::DEFAULT_KEEP);
    }

    #[test]
    fn the_last_four_digits_decide() {
        let answer = |to: &str| VoiceSandbox::script_for(to, SECOND).answer;
        assert_eq!(answer("+254700000001"), ScriptedAnswer::NotAnswered(CallEnd::Busy));
        assert_eq!(answer("+254 700 000 002"), ScriptedAnswer::NotAnswered(CallEnd::NoAnswer));
        assert_eq!(
            answer("+254700000003"),
            ScriptedAnswer::Answered { seconds: 4, digits: None, hangs_up_early: true }
        );
        assert_eq!(
            answer("+254-700-00-0004"),
            ScriptedAnswer::Answered { seconds: 42, digits: Some("1".into()), hangs_up_early: false }
        );
        let ordinary = ScriptedAnswer::Answered { seconds: 42, digits: None, hangs_up_early: false };
        assert_eq!(answer("+254711000111"), ordinary);
        // fewer than four digits is an ordinary number
        assert_eq!(answer("001"), ordinary);
        assert_eq!(VoiceSandbox::script_for("+254700000001", Duration::from_millis(7)).after, Duration::from_millis(7));
    }

    #[tokio::test]
    async fn place_announces_the_script_and_records_the_call() {
        let sandbox = sandbox();
        let outcome = sandbox.place(call("call_1", "+254700000004")).await.expect("placed");
        let PlaceOutcome::Placed { provider_call_id, script } = outcome else {
            panic!("expected Placed, got {outcome:?}")
        };
        assert!(provider_call_id.starts_with("SBVId_"), "{provider_call_id}");
        assert_eq!(provider_call_id.len(), 6 + 32);
        let expected = VoiceSandbox::script_for("+254700000004", Duration::from_millis(5));
        assert_eq!(script.as_ref(), Some(&expected));

        sandbox.place(OutboundCall { reference: "call_2", to: "+254711000111", from: None }).await.expect("placed");
        let calls = sandbox.calls();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            calls[0],
            SandboxCall {
                reference: "call_1".into(),
                to: "+254700000004".into(),
                from: Some("+254711082000".into()),
                provider_call_id,
                script: expected,
            }
        );
        assert_eq!((calls[1].reference.as_str(), calls[1].from.as_deref()), ("call_2", None));
    }

    #[tokio::test]
    async fn every_call_counts_even_with_a_repeated_reference() {
        let sandbox = sandbox();
        let first = sandbox.place(call("call_1", "+254711000111")).await.expect("placed");
        let second = sandbox.place(call("call_1", "+254711000111")).await.expect("placed");
        assert_ne!(first, second, "each call is a new call with its own id");
        sandbox.place(call("call_2", "+254711000222")).await.expect("placed");
        assert_eq!(sandbox.count_to("+254711000111"), 2);
        assert_eq!(sandbox.count_to("+254711000222"), 1);
        assert_eq!(sandbox.count_to("+254711000333"), 0);
        assert_eq!(sandbox.count(), 3);
    }

    #[tokio::test]
    async fn the_record_keeps_the_most_recent_calls_and_counts_them_all() {
        let sandbox = VoiceSandbox::new(VoiceSandboxConfig { keep: 2, ..VoiceSandboxConfig::default() });
        for (i, to) in ["+254711000011", "+254711000012", "+254711000011"].into_iter().enumerate() {
            let reference = format!("call_{i}");
            sandbox.place(OutboundCall { reference: &reference, to, from: None }).await.expect("placed");
        }
        let kept: Vec<String> = sandbox.calls().into_iter().map(|c| c.reference).collect();
        assert_eq!(kept, ["call_1", "call_2"]);
        assert_eq!(sandbox.count(), 3);
        // the forgotten call still counts
        assert_eq!(sandbox.count_to("+254711000011"), 2);
    }

    #[test]
    fn callbacks_and_answers_are_africas_talking_s() {
        let sandbox = sandbox();
        let callback = sandbox
            .parse_callback("application/x-www-form-urlencoded", b"isActive=1&sessionId=SBVId_1&dtmfDigits=1")
            .expect("a callback");
        assert_eq!(
            callback,
            VoiceCallback::Active {
                provider_call_id: "SBVId_1".into(),
                reference: None,
                digits: Some("1".into()),
                recording_url: None,
            }
        );
        assert!(sandbox.parse_callback("application/x-www-form-urlencoded", b"isActive=1").is_err());
        let (content_type, body) = sandbox.render(&[VoiceAction::Hangup]);
        assert_eq!(content_type, "application/xml");
        assert_eq!(body, r#"<?xml version="1.0" encoding="UTF-8"?><Response><Reject/></Response>"#);
    }
}
