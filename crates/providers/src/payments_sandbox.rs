//! The sandbox mobile-money provider: the default when no M-Pesa account is configured. Like the
//! SMS sandbox, the payer's last four digits decide what becomes of a push; it posts no callback,
//! but announces when [`MobileMoney::query`] will know (`answer_after`). Everything it was asked
//! is recorded so tests can look.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use crate::chat_sandbox::Now;
use crate::payments::{
    CallbackError, MobileMoney, PushCallback, PushOutcome, PushRequest, PushResult, RefundOutcome, SendError,
};

const INSUFFICIENT_REASON: &str = "Sandbox: numbers ending in 0001 have insufficient funds";
const CANCELLED_REASON: &str = "Sandbox: numbers ending in 0003 cancel the prompt (Request cancelled by user)";
/// How many recent pushes the record keeps (a long-running sandbox must not grow without bound).
const KEEP: usize = crate::sandbox::DEFAULT_KEEP;

#[derive(Clone)]
pub struct PaymentSandboxConfig {
    /// How long after a push its result can be read by `query` (the payer "answering").
    pub delay: Duration,
    /// Where the sandbox reads the time (the service's clock, so tests can move it).
    pub now: Now,
}

impl Default for PaymentSandboxConfig {
    fn default() -> Self {
        Self { delay: Duration::from_millis(1000), now: Arc::new(SystemTime::now) }
    }
}

impl std::fmt::Debug for PaymentSandboxConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PaymentSandboxConfig").field("delay", &self.delay).finish_non_exhaustive()
    }
}

/// What the sandbox decided for a push, from the payer's last four digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentOutcome {
    /// `...0001`: fails with M-Pesa's code 1 (insufficient funds).
    InsufficientFunds,
    /// `...0002`: pending forever (the payer never answers).
    NeverAnswered,
    /// `...0003`: cancelled with M-Pesa's code 1032.
    Cancelled,
    /// Any other number: paid in full.
    Paid,
}

impl PaymentOutcome {
    /// Judges a number on the last four of its digits, ignoring `+` and separators.
    pub fn for_number(phone: &str) -> PaymentOutcome {
        let digits: Vec<u8> = phone.bytes().filter(u8::is_ascii_digit).collect();
        match digits.len().checked_sub(4).map(|start| &digits[start..]) {
            Some(b"0001") => PaymentOutcome::InsufficientFunds,
            Some(b"0002") => PaymentOutcome::NeverAnswered,
            Some(b"0003") => PaymentOutcome::Cancelled,
            _ => PaymentOutcome::Paid,
        }
    }
}

/// One push the sandbox was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPush {
    pub reference: String,
    /// As given to `push` (E.164).
    pub phone: String,
    pub amount_minor: i64,
    /// `ws_CO_<32 hex digits>`.
    pub checkout_request_id: String,
}

struct Entry {
    push: SandboxPush,
    outcome: PaymentOutcome,
    pushed_at: SystemTime,
    /// Set for a push that will be paid; handed out once the delay has passed.
    receipt: Option<String>,
    refunded_minor: i64,
}

/// Pushes are numbered from 0 in the order asked; `entries[0]` is number `first`.
#[derive(Default)]
struct Record {
    entries: VecDeque<Entry>,
    first: usize,
    by_checkout: HashMap<String, usize>,
    by_receipt: HashMap<String, usize>,
}

impl Record {
    fn get_mut(&mut self, number: usize) -> Option<&mut Entry> {
        number.checked_sub(self.first).and_then(|i| self.entries.get_mut(i))
    }

    /// Forgets the oldest pushes beyond `KEEP`.
    fn trim(&mut self) {
        while self.entries.len() > KEEP {
            if let Some(old) = self.entries.pop_front() {
                self.by_checkout.remove(&old.push.checkout_request_id);
                if let Some(receipt) = &old.receipt {
                    self.by_receipt.remove(receipt);
                }
                self.first += 1;
            }
        }
    }
}

/// The sandbox mobile-money provider, shared as `Arc<PaymentSandbox>` across the process.
pub struct PaymentSandbox {
    config: PaymentSandboxConfig,
    record: Mutex<Record>,
}

impl PaymentSandbox {
    pub fn new(config: PaymentSandboxConfig) -> Self {
        Self { config, record: Mutex::new(Record::default()) }
    }

    pub fn config(&self) -> &PaymentSandboxConfig {
        &self.config
    }

    /// The pushes asked for, in order (the most recent 10,000 of them).
    pub fn pushes(&self) -> Vec<SandboxPush> {
        self.record().entries.iter().map(|e| e.push.clone()).collect()
    }

    /// A panic elsewhere while holding the lock leaves the record usable, so poisoning is ignored.
    fn record(&self) -> MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether the payer has "answered" a push by now.
    fn answered(&self, entry: &Entry) -> bool {
        (self.config.now)().duration_since(entry.pushed_at).is_ok_and(|waited| waited >= self.config.delay)
    }
}

/// A receipt in M-Pesa's shape (`NLJ7RT61SV`): ten upper-case letters and digits, a letter
/// first, drawn from the push's id, so every process's sandbox names the same receipt.
fn receipt_of(checkout_request_id: &str) -> String {
    const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const ALPHANUMERIC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let digest = ring::digest::digest(&ring::digest::SHA256, checkout_request_id.as_bytes());
    let bytes = digest.as_ref();
    let mut receipt = String::with_capacity(10);
    receipt.push(char::from(LETTERS[usize::from(bytes[0]) % LETTERS.len()]));
    for &byte in &bytes[1..10] {
        receipt.push(char::from(ALPHANUMERIC[usize::from(byte) % ALPHANUMERIC.len()]));
    }
    receipt
}

/// A push's id says what the sandbox decided (`ws_CO_<millis>_<amount>_<last four>_<random>`),
/// so the sandbox of another process (a worker beside the one that pushed, the admin command
/// line) answers a query for it the same way.
fn checkout_id(pushed_at: SystemTime, amount_minor: i64, phone: &str) -> String {
    let millis = pushed_at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let digits: String = phone.chars().filter(char::is_ascii_digit).collect();
    let last4 = &digits[digits.len().saturating_sub(4)..];
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("ws_CO_{millis}_{amount_minor}_{last4}_{}", &random[..12])
}

/// What [`checkout_id`] wrote: when, how much, and the outcome the number decides.
fn described(checkout_request_id: &str) -> Option<(SystemTime, i64, PaymentOutcome)> {
    let mut parts = checkout_request_id.strip_prefix("ws_CO_")?.split('_');
    let millis: u64 = parts.next()?.parse().ok()?;
    let amount_minor: i64 = parts.next()?.parse().ok()?;
    let last4 = parts.next()?;
    let at = SystemTime::UNIX_EPOCH + Duration::from_millis(millis);
    Some((at, amount_minor, PaymentOutcome::for_number(last4)))
}

/// Ten upper-case letters and digits, a letter first.
fn is_receipt(text: &str) -> bool {
    text.len() == 10
        && text.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
        && text.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

#[async_trait::async_trait]
impl MobileMoney for PaymentSandbox {
    async fn push(&self, request: PushRequest<'_>) -> Result<PushOutcome, SendError> {
        if request.amount_minor <= 0 {
            let reason = format!("Sandbox: amounts must be positive, not {}", request.amount_minor);
            return Ok(PushOutcome::Refused { reason });
        }
        let outcome = PaymentOutcome::for_number(request.phone);
        let pushed_at = (self.config.now)();
        let checkout_request_id = checkout_id(pushed_at, request.amount_minor, request.phone);
        let mut record = self.record();
        let receipt = (outcome == PaymentOutcome::Paid).then(|| receipt_of(&checkout_request_id));
        let number = record.first + record.entries.len();
        record.by_checkout.insert(checkout_request_id.clone(), number);
        if let Some(receipt) = &receipt {
            record.by_receipt.insert(receipt.clone(), number);
        }
        record.entries.push_back(Entry {
            push: SandboxPush {
                reference: request.reference.to_owned(),
                phone: request.phone.to_owned(),
                amount_minor: request.amount_minor,
                checkout_request_id: checkout_request_id.clone(),
            },
            outcome,
            pushed_at,
            receipt,
            refunded_minor: 0,
        });
        record.trim();
        tracing::debug!(reference = request.reference, ?outcome, checkout_request_id, "sandbox STK push");
        Ok(PushOutcome::Accepted { checkout_request_id, answer_after: Some(self.config.delay) })
    }

    /// `Pending` until `delay` has passed on the clock, and for an id that is not a sandbox
    /// push's. A push this process did not make (or has forgotten beyond 10,000) is answered
    /// from what its id says.
    async fn query(&self, checkout_request_id: &str) -> Result<PushResult, SendError> {
        let mut record = self.record();
        let Some(entry) = record.by_checkout.get(checkout_request_id).copied().and_then(|n| record.get_mut(n)) else {
            let Some((pushed_at, amount_minor, outcome)) = described(checkout_request_id) else {
                return Ok(PushResult::Pending);
            };
            let waited = (self.config.now)().duration_since(pushed_at).unwrap_or_default();
            if waited < self.config.delay {
                return Ok(PushResult::Pending);
            }
            return Ok(match outcome {
                PaymentOutcome::InsufficientFunds => {
                    PushResult::Failed { code: "1".into(), reason: INSUFFICIENT_REASON.into() }
                }
                PaymentOutcome::Cancelled => {
                    PushResult::Cancelled { code: "1032".into(), reason: CANCELLED_REASON.into() }
                }
                PaymentOutcome::Paid => PushResult::Paid {
                    receipt: receipt_of(checkout_request_id),
                    amount_minor: Some(amount_minor),
                    phone: None,
                },
                PaymentOutcome::NeverAnswered => PushResult::Pending,
            });
        };
        if !self.answered(entry) {
            return Ok(PushResult::Pending);
        }
        Ok(match (entry.outcome, &entry.receipt) {
            (PaymentOutcome::InsufficientFunds, _) => {
                PushResult::Failed { code: "1".into(), reason: INSUFFICIENT_REASON.into() }
            }
            (PaymentOutcome::Cancelled, _) => {
                PushResult::Cancelled { code: "1032".into(), reason: CANCELLED_REASON.into() }
            }
            (PaymentOutcome::Paid, Some(receipt)) => PushResult::Paid {
                receipt: receipt.clone(),
                amount_minor: Some(entry.push.amount_minor),
                phone: Some(entry.push.phone.chars().filter(char::is_ascii_digit).collect()),
            },
            (PaymentOutcome::NeverAnswered | PaymentOutcome::Paid, _) => PushResult::Pending,
        })
    }

    /// Accepts a refund of a receipt it handed out while the refunds of that receipt stay
    /// within what was paid.
    async fn refund(&self, receipt: &str, amount_minor: i64, reference: &str) -> Result<RefundOutcome, SendError> {
        if amount_minor <= 0 {
            let reason = format!("Sandbox: refunds must be positive, not {amount_minor}");
            return Ok(RefundOutcome::Refused { reason });
        }
        let mut record = self.record();
        let number = record.by_receipt.get(receipt).copied();
        let Some(number) = number else {
            // a receipt of another process's push: taken as the service bounds it (it never
            // refunds more than was paid)
            if is_receipt(receipt) {
                return Ok(RefundOutcome::Accepted {
                    provider_reference: format!("AG_{}", uuid::Uuid::new_v4().simple()),
                });
            }
            return Ok(RefundOutcome::Refused { reason: format!("Sandbox: no payment has the receipt {receipt:?}") });
        };
        let entry = record.get_mut(number);
        let Some(entry) = entry.filter(|entry| self.answered(entry)) else {
            return Ok(RefundOutcome::Refused { reason: format!("Sandbox: no payment has the receipt {receipt:?}") });
        };
        let paid = entry.push.amount_minor;
        let refunded = entry.refunded_minor;
        if amount_minor > paid - refunded {
            let reason =
                format!("Sandbox: cannot refund {amount_minor} of {receipt}: {paid} paid, {refunded} already refunded");
            return Ok(RefundOutcome::Refused { reason });
        }
        entry.refunded_minor += amount_minor;
        let provider_reference = format!("AG_{}", uuid::Uuid::new_v4().simple());
        tracing::debug!(reference, receipt, amount_minor, provider_reference, "sandbox reversal");
        Ok(RefundOutcome::Accepted { provider_reference })
    }

    fn parse_callback(&self, body: &[u8]) -> Result<PushCallback, CallbackError> {
        crate::mpesa::parse_stk_callback(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock that stands still until the test moves it.
    fn clock() -> (Arc<Mutex<SystemTime>>, Now) {
        let clock = Arc::new(Mutex::new(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)));
        let now = {
            let clock = clock.clone();
            Arc::new(move || *clock.lock().expect("clock")) as Now
        };
        (clock, now)
    }

    fn advance(clock: &Mutex<SystemTime>, by: Duration) {
        *clock.lock().expect("clock") += by;
    }

    fn sandbox(now: Now) -> PaymentSandbox {
        PaymentSandbox::new(PaymentSandboxConfig { delay: Duration::from_secs(5), now })
    }

    fn request<'a>(reference: &'a str, phone: &'a str, amount_minor: i64) -> PushRequest<'a> {
        PushRequest {
            reference,
            phone,
            amount_minor,
            currency: "KES",
            description: "Order 42",
            callback_url: "https://example.test/mpesa/callback",
        }
    }

    async fn push(sandbox: &PaymentSandbox, phone: &str, amount_minor: i64) -> String {
        match sandbox.push(request("PAY-1", phone, amount_minor)).await {
            Ok(PushOutcome::Accepted { checkout_request_id, answer_after }) => {
                assert_eq!(answer_after, Some(Duration::from_secs(5)));
                checkout_request_id
            }
            other => panic!("accepted, got {other:?}"),
        }
    }

    async fn paid_receipt(sandbox: &PaymentSandbox, checkout_request_id: &str) -> String {
        match sandbox.query(checkout_request_id).await {
            Ok(PushResult::Paid { receipt, .. }) => receipt,
            other => panic!("paid, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn number_endings_decide_each_push_once_the_delay_has_passed() {
        let (clock, now) = clock();
        let sandbox = sandbox(now);
        let paid = push(&sandbox, "+254712345678", 12_345).await;
        let poor = push(&sandbox, "+254700000001", 100).await;
        let silent = push(&sandbox, "+254700000002", 100).await;
        let cancels = push(&sandbox, "+254 700 000 003", 100).await;
        assert!(paid.starts_with("ws_CO_") && paid.contains("_12345_5678_"), "{paid}");

        advance(&clock, Duration::from_millis(4_999));
        for id in [&paid, &poor, &silent, &cancels] {
            assert_eq!(sandbox.query(id).await, Ok(PushResult::Pending), "{id} before the delay");
        }

        advance(&clock, Duration::from_millis(1));
        let Ok(PushResult::Paid { receipt, amount_minor, phone }) = sandbox.query(&paid).await else { panic!("paid") };
        assert_eq!(receipt.len(), 10);
        assert!(receipt.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()), "{receipt}");
        assert!(receipt.as_bytes()[0].is_ascii_uppercase());
        assert_eq!(amount_minor, Some(12_345), "any minor-unit amount is taken");
        assert_eq!(phone.as_deref(), Some("254712345678"));
        assert!(matches!(
            sandbox.query(&poor).await,
            Ok(PushResult::Failed { code, reason }) if code == "1" && reason.contains("insufficient funds")
        ));
        assert!(matches!(sandbox.query(&cancels).await, Ok(PushResult::Cancelled { code, .. }) if code == "1032"));

        advance(&clock, Duration::from_secs(3600));
        assert_eq!(sandbox.query(&silent).await, Ok(PushResult::Pending), "0002 never answers");
        assert_eq!(sandbox.query("ws_CO_unknown").await, Ok(PushResult::Pending));
    }

    #[tokio::test]
    async fn the_receipt_is_the_same_on_every_query_and_differs_between_pushes() {
        let (clock, now) = clock();
        let sandbox = sandbox(now);
        let first = push(&sandbox, "+254712345678", 100).await;
        let second = push(&sandbox, "+254712345678", 100).await;
        advance(&clock, Duration::from_secs(5));
        let receipt = paid_receipt(&sandbox, &first).await;
        assert_eq!(paid_receipt(&sandbox, &first).await, receipt);
        assert_ne!(paid_receipt(&sandbox, &second).await, receipt);
    }

    #[tokio::test]
    async fn refunds_stay_within_what_was_paid() {
        let (clock, now) = clock();
        let sandbox = sandbox(now);
        let id = push(&sandbox, "+254712345678", 10_000).await;
        advance(&clock, Duration::from_secs(5));
        let receipt = paid_receipt(&sandbox, &id).await;

        let Ok(RefundOutcome::Accepted { provider_reference }) = sandbox.refund(&receipt, 6_000, "RF-1").await else {
            panic!("accepted")
        };
        assert!(provider_reference.starts_with("AG_"));
        let over = sandbox.refund(&receipt, 4_001, "RF-2").await;
        assert!(matches!(over, Ok(RefundOutcome::Refused { reason }) if reason.contains("6000 already refunded")));
        assert!(matches!(sandbox.refund(&receipt, 4_000, "RF-3").await, Ok(RefundOutcome::Accepted { .. })));
        assert!(matches!(sandbox.refund(&receipt, 1, "RF-4").await, Ok(RefundOutcome::Refused { .. })));

        assert!(matches!(sandbox.refund("not-a-receipt", 100, "RF-5").await, Ok(RefundOutcome::Refused { .. })));
        assert!(matches!(sandbox.refund(&receipt, 0, "RF-6").await, Ok(RefundOutcome::Refused { .. })));
    }

    #[tokio::test]
    async fn only_paid_pushes_get_a_receipt() {
        let (clock, now) = clock();
        let sandbox = sandbox(now);
        push(&sandbox, "+254700000001", 100).await;
        advance(&clock, Duration::from_secs(5));
        assert!(sandbox.record().by_receipt.is_empty(), "only paid pushes get a receipt");
    }

    #[tokio::test]
    async fn it_records_what_it_was_asked_and_keeps_the_latest() {
        let (_, now) = clock();
        let sandbox = sandbox(now);
        let id = push(&sandbox, "+254712345678", 250).await;
        assert_eq!(
            sandbox.pushes(),
            [SandboxPush {
                reference: "PAY-1".into(),
                phone: "+254712345678".into(),
                amount_minor: 250,
                checkout_request_id: id.clone(),
            }]
        );
        assert!(matches!(sandbox.push(request("PAY-0", "+254712345678", 0)).await, Ok(PushOutcome::Refused { .. })));
        assert_eq!(sandbox.pushes().len(), 1, "a refused push is not recorded");

        for _ in 0..KEEP {
            push(&sandbox, "+254712345679", 100).await;
        }
        let pushes = sandbox.pushes();
        assert_eq!(pushes.len(), KEEP);
        assert_ne!(pushes[0].checkout_request_id, id, "the oldest is dropped");
        assert_eq!(sandbox.record().by_checkout.len(), KEEP);
        assert_eq!(sandbox.query(&id).await, Ok(PushResult::Pending), "a forgotten push, before its delay");
    }

    #[tokio::test]
    async fn another_processs_sandbox_answers_a_push_from_its_id() {
        let (clock, now) = clock();
        let pushing = sandbox(now.clone());
        let asking = sandbox(now);
        let paid = push(&pushing, "+254712345678", 12_300).await;
        let poor = push(&pushing, "+254700000001", 100).await;
        assert_eq!(asking.query(&paid).await, Ok(PushResult::Pending), "before the delay");
        advance(&clock, Duration::from_secs(5));
        let Ok(PushResult::Paid { receipt, amount_minor, .. }) = asking.query(&paid).await else {
            panic!("paid from its id");
        };
        assert_eq!(amount_minor, Some(12_300));
        let Ok(PushResult::Paid { receipt: same, .. }) = pushing.query(&paid).await else { panic!("paid") };
        assert_eq!(receipt, same, "the same receipt in every process");
        assert!(matches!(asking.query(&poor).await, Ok(PushResult::Failed { .. })));
        let refund = asking.refund(&receipt, 100, "RF-1").await;
        assert!(matches!(refund, Ok(RefundOutcome::Accepted { .. })), "{refund:?}");
    }

    #[test]
    fn callbacks_are_read_like_darajas() {
        let (_, now) = clock();
        let body = br#"{"Body":{"stkCallback":{"MerchantRequestID":"29115-34620561-1","CheckoutRequestID":"ws_CO_191220191020363925","ResultCode":1032,"ResultDesc":"Request cancelled by user"}}}"#;
        let callback = sandbox(now).parse_callback(body).expect("a callback");
        assert_eq!(callback.checkout_request_id, "ws_CO_191220191020363925");
        assert!(matches!(callback.result, PushResult::Cancelled { code, .. } if code == "1032"));
        let (_, now) = clock();
        assert!(sandbox(now).parse_callback(b"{}").is_err());
    }
}
